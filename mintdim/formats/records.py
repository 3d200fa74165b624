"""Output directory safety: new-or-empty checks, failure markers, ownership records, the final move.

MintDim never deletes or overwrites what it did not create. It records in
the work directory each output directory it created or put markers into, so
a rerun of a failed or killed build can tell its own markers from a user's
files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

from .. import errors as E
from ..faults import kill_point

FAILED_MARKER = "UNIT_BUILD_FAILED.md"
EMPTY_MARKER = "EMPTY_UNIT.md"


def _record_path(work_dir: str, absdir: str) -> str:
    key = hashlib.sha256(absdir.encode()).hexdigest()[:16]
    return os.path.join(work_dir, "outputs", f"{key}.json")


def read_record(work_dir: str, absdir: str) -> dict | None:
    try:
        with open(_record_path(work_dir, absdir), encoding="utf-8") as f:
            record = json.load(f)
        return record if record.get("absdir") == absdir else None
    except (OSError, ValueError):
        return None


def write_record(work_dir: str, absdir: str, **data) -> None:
    path = _record_path(work_dir, absdir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = read_record(work_dir, absdir) or {"absdir": absdir}
    record.update(data)
    text = json.dumps(record, indent=1)
    try:
        atomic_write_text(path, text)
    except OSError:
        if not os.path.isfile(path):
            raise
        # a full disk has no room for a new file: rewrite the existing record in place (its
        # blocks are already allocated), so failure markers can still be recognised as ours
        with open(path, "r+", encoding="utf-8") as f:
            f.write(text)
            f.truncate()


def atomic_write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def holds_only_markers(absdir: str) -> bool:
    """True when every entry is a unit_* directory holding nothing but a failure marker
    (or the top-level marker of a build whose unit sizes were not planned yet)."""
    try:
        entries = list(os.scandir(absdir))
    except OSError:
        return False
    for entry in entries:
        if entry.name == FAILED_MARKER and entry.is_file(follow_symlinks=False):
            continue  # sizes planned from the data: the marker sits at the top
        if not (entry.is_dir(follow_symlinks=False) and entry.name.startswith("unit_")):
            return False
        inner = os.listdir(entry.path)
        if any(name != FAILED_MARKER for name in inner):
            return False
    return True


def state(work_dir: str, absdir: str, build_id: str) -> str:
    """absent | empty | ours-failed | ours-complete | foreign (anything else: never touched)."""
    if not os.path.lexists(absdir):
        return "absent"
    if not os.path.isdir(absdir) or os.path.islink(absdir):
        return "foreign"
    if not os.listdir(absdir):
        return "empty"
    record = read_record(work_dir, absdir)
    if record is None:
        return "foreign"
    if holds_only_markers(absdir) and record.get("state") in ("failed", "finalizing", "claimed"):
        return "ours-failed"
    if record.get("state") in ("complete", "finalizing") and record.get("build_id") == build_id:
        if record.get("ident") not in (None, identity(absdir)):
            return "foreign"  # not the directory this build placed (another build's, or replaced since)
        return "ours-complete"  # finished, or placed by a finalize that was killed before recording it
    return "foreign"


def identity(path: str) -> int | None:
    """What tells the directory a finalize placed from any other at the same path: its inode
    (a rename keeps it; a copy records the new directory's before copying into it)."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        return None


def check_outputs(build) -> None:
    """Pre-flight, before anything is tokenized: each output directory is new, empty, MintDim's own
    failed attempt, or this config's own finished output from unchanged inputs ("already built").
    Anything else is refused here, never after a whole build (docs/reliability.md)."""
    for out in build.outputs:
        st = state(build.work_dir, out.absdir, build.build_id)
        if st == "ours-complete":
            changed = changed_inputs((read_record(build.work_dir, out.absdir) or {}).get("inputs"),
                                     input_keys(build, out))
            if changed:
                raise E.OutputValidationError.inputs_changed(out.dir, changed)
        elif st == "foreign":
            if os.path.lexists(out.absdir) and not os.path.isdir(out.absdir):
                raise E.OutputValidationError.not_a_directory(out.dir)
            record = finished_record(build.work_dir, out.absdir)
            if record is not None:  # MintDim's finished output of another config (this work directory)
                raise E.OutputValidationError.other_config(out.dir, record.get("build_id", "?"))
            raise E.OutputValidationError.not_empty(out.dir)


# --- what a finished output was built from (recorded at finalize; docs/reliability.md) -------------


def input_keys(build, out) -> dict[str, str]:
    """What defines an output besides its config (the build id): each source file's and the
    tokenizer's size and modification time (a model directory: its files'). Cheap: no file is read."""
    from ..tokenizers.kinds import stat_key

    keys = {}
    for i in out.files:
        f = build.files[i]
        try:
            st = os.stat(f.abspath)
            keys[f"source {f.path}"] = f"{st.st_size}|{st.st_mtime_ns}"
        except OSError:
            keys[f"source {f.path}"] = "missing"
    try:
        keys[f"tokenizer {out.tokenizer_path}"] = stat_key(out.tokenizer_kind, out.tokenizer_abspath)
    except OSError:
        keys[f"tokenizer {out.tokenizer_path}"] = "missing"
    return keys


def changed_inputs(recorded: dict | None, current: dict) -> list[str]:
    """The inputs (as "source d.jsonl") whose size or modification time differ from the record.
    A record without inputs (an older MintDim's) is taken as unchanged."""
    if not recorded:
        return []
    return [k for k in sorted(set(recorded) | set(current)) if recorded.get(k) != current.get(k)]


def finished_record(work_dir: str, absdir: str) -> dict | None:
    """The record of a finished output MintDim placed at absdir (any config of this work dir), if the
    directory there is still the one it placed."""
    record = read_record(work_dir, absdir)
    if (record is None or record.get("state") != "complete" or record.get("ident") is None
            or record.get("ident") != identity(absdir) or os.path.islink(absdir)):
        return None
    return record


def listing(absdir: str) -> dict[str, int]:
    """Every file under absdir (relative path -> size)."""
    found = {}
    for base, _dirs, files in os.walk(absdir):
        for name in files:
            path = os.path.join(base, name)
            found[os.path.relpath(path, absdir)] = os.path.getsize(path)
    return found


def same_tree(a: str, b: str) -> str | None:
    """None when the two directories hold the same files with the same bytes; else the first difference."""
    import filecmp

    la, lb = listing(a), listing(b)
    if la.keys() != lb.keys():
        return sorted(set(la) ^ set(lb))[0]
    for rel in sorted(la):
        if la[rel] != lb[rel] or not filecmp.cmp(os.path.join(a, rel), os.path.join(b, rel), shallow=False):
            return rel
    return None


def remove_finished(work_dir: str, absdir: str, shown: str) -> bool:
    """`mintdim build --rebuild`: delete the finished output MintDim recorded at absdir, only when it
    holds exactly the files MintDim wrote there (same names and sizes). False when there is none."""
    record = finished_record(work_dir, absdir)
    if record is None:
        return False
    wrote = record.get("files")
    now = listing(absdir)
    if wrote is None or now != wrote:
        extra = sorted(set(now) - set(wrote or {})) or sorted(k for k in now if now[k] != (wrote or {}).get(k))
        raise E.OutputValidationError.not_only_ours(shown, extra[:5])
    for rel in sorted(now):
        os.unlink(os.path.join(absdir, rel))
    for base, _dirs, _files in sorted(os.walk(absdir), key=lambda t: -len(t[0])):
        os.rmdir(base)
    try:
        os.unlink(_record_path(work_dir, absdir))
    except OSError:
        pass
    return True


def marker_text(err: E.MintDimError) -> str:
    return ("# Unit build failed\n\n"
            "This unit of the MintDim build was not finalized because the build failed.\n"
            "Nothing here is a usable shard. Fix the cause and rerun the same command;\n"
            "MintDim replaces this marker with the finished output.\n\n" + E.markdown_sections(err))


def write_failure_markers(build, err: E.MintDimError, only=None) -> list[str]:
    """Put UNIT_BUILD_FAILED.md into every declared unit directory of every output not yet complete.

    only: the output directories (absolute) this run claimed (see guard); others are left alone."""
    written = []
    text = marker_text(err)
    for out in build.outputs:
        if only is not None and out.absdir not in only:
            continue
        st = state(build.work_dir, out.absdir, build.build_id)
        if st in ("foreign", "ours-complete"):
            continue
        created = st == "absent"
        previous = read_record(build.work_dir, out.absdir) or {}
        write_record(build.work_dir, out.absdir, dir=out.dir, build_id=build.build_id, state="failed",
                     created_dir=created or previous.get("created_dir", False))
        if out.sizes is None:  # units.sizes: auto: no unit directory is declared
            os.makedirs(out.absdir, exist_ok=True)
            atomic_write_text(os.path.join(out.absdir, FAILED_MARKER), text)
            written.append(out.absdir)
        for size in out.sizes or []:
            unit_dir = os.path.join(out.absdir, f"unit_{size}")
            os.makedirs(unit_dir, exist_ok=True)
            atomic_write_text(os.path.join(unit_dir, FAILED_MARKER), text)
            written.append(unit_dir)
    return written


def clear_failure_markers(absdir: str) -> None:
    if not holds_only_markers(absdir):
        return
    for entry in os.scandir(absdir):
        if entry.name == FAILED_MARKER:
            os.unlink(entry.path)
            continue
        marker = os.path.join(entry.path, FAILED_MARKER)
        if os.path.exists(marker):
            os.unlink(marker)
        os.rmdir(entry.path)


def remove_partial_copy(stage_dir: str, absdir: str) -> None:
    """Undo an interrupted cross-device copy: remove from absdir only what the staging tree holds."""
    for base, _dirs, files in os.walk(stage_dir):
        rel = os.path.relpath(base, stage_dir)
        for name in files + [FAILED_MARKER]:
            target = os.path.normpath(os.path.join(absdir, rel, name))
            if os.path.isfile(target):
                os.unlink(target)
    for entry in sorted(os.listdir(stage_dir)):
        target = os.path.join(absdir, entry)
        if os.path.isdir(target) and not os.listdir(target):
            os.rmdir(target)


def place(stage_dir: str, absdir: str, before_copy=None) -> None:
    """Move a finished staging tree into place: one rename when it can be, a careful copy otherwise.

    rename(2) onto a missing or empty directory is atomic. Across file systems the
    tree is copied with a failure marker in every unit directory, stats.json last,
    and the markers removed at the end, so no moment looks complete too early.
    """
    parent = os.path.dirname(absdir)
    os.makedirs(parent, exist_ok=True)
    try:
        os.rename(stage_dir, absdir)
        return
    except OSError as exc:
        import errno

        if exc.errno != errno.EXDEV:
            raise
    os.makedirs(absdir, exist_ok=True)
    if before_copy:
        before_copy()
    units = sorted(e.name for e in os.scandir(stage_dir) if e.is_dir())
    note = "# Unit build failed\n\nThe output was being copied into place and the copy did not finish.\n"
    for name in units:
        os.makedirs(os.path.join(absdir, name), exist_ok=True)
        atomic_write_text(os.path.join(absdir, name, FAILED_MARKER), note)
    for name in units:
        for f in sorted(os.listdir(os.path.join(stage_dir, name))):
            shutil.copyfile(os.path.join(stage_dir, name, f), os.path.join(absdir, name, f))
        kill_point("finalize:copying")
    files = sorted(e.name for e in os.scandir(stage_dir) if e.is_file() and e.name != "stats.json")
    for f in files + ["stats.json"]:
        shutil.copyfile(os.path.join(stage_dir, f), os.path.join(absdir, f))
    for name in units:
        os.unlink(os.path.join(absdir, name, FAILED_MARKER))
    shutil.rmtree(stage_dir)
