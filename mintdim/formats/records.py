"""Output directories MintDim writes: what state each one is in, its record, its markers, its placement.

MintDim never deletes or overwrites what it did not create. It keeps one record per output directory in
the work directory (WORK/outputs/<key>.json), so a later run can tell its own output and markers from a
user's files:

    placed     the finished output in place: the directory's inode ("ident": a rename keeps it, a copy or
               anything else at that path has another), the build and generation that placed it, the
               files it wrote (names and sizes), what it was built from (inputs, config)
    placing    what a finalize is placing right now (the same keys): when its ident is the directory's, the
               placement happened and the finalize was stopped before it said so
    leftovers  directories to remove once a placement is complete, each with the inode it must still
               have (a replaced output, moved aside): nothing else is ever removed
    marked     the build that holds (claimed) the directory and may put failure markers into it

The one state rule (docs/reliability.md): a directory is `absent`, `empty`, `failed` (only MintDim's
failure markers), `placed` or `placing` (a finished output, by inode), or `foreign` (anything else,
never touched). A finished output is only ever replaced by a complete one, in one step (renameat2's
RENAME_EXCHANGE), and only with `--rebuild`.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
from dataclasses import dataclass

from .. import errors as E
from ..faults import kill_point
from ..files import atomic_write_text  # noqa: F401  (the stages import it from here)

FAILED_MARKER = "UNIT_BUILD_FAILED.md"
EMPTY_MARKER = "EMPTY_UNIT.md"
SNAKEMAKE_STAMP = ".snakemake_timestamp"  # Snakemake's own file in every directory() output of a job


def _record_path(work_dir: str, absdir: str) -> str:
    key = hashlib.sha256(absdir.encode()).hexdigest()[:16]
    return os.path.join(work_dir, "outputs", f"{key}.json")


def read_record(work_dir: str, absdir: str) -> dict:
    """The record of absdir ({} when there is none, or an unreadable one)."""
    try:
        with open(_record_path(work_dir, absdir), encoding="utf-8") as f:
            record = json.load(f)
        return record if isinstance(record, dict) and record.get("absdir") == absdir else {}
    except (OSError, ValueError):
        return {}


def write_record(work_dir: str, absdir: str, **updates) -> dict:
    """Change keys of absdir's record (a value None removes the key); returns the new record."""
    path = _record_path(work_dir, absdir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = read_record(work_dir, absdir) or {"absdir": absdir}
    for key, value in updates.items():
        if value is None:
            record.pop(key, None)
        else:
            record[key] = value
    text = json.dumps(record, indent=1, ensure_ascii=False)
    try:
        atomic_write_text(path, text)
    except OSError:
        if not os.path.isfile(path):
            raise
        # a full disk has no room for a new file: rewrite the existing record in place (its blocks are
        # allocated already), so failure markers can still be recognised as ours
        with open(path, "r+", encoding="utf-8") as f:
            f.write(text)
            f.truncate()
    return record


def identity(path: str) -> int | None:
    """What tells the directory a finalize placed from any other at the same path: its inode."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        return None


# --- the state of an output directory ----------------------------------------------------------------


@dataclass
class State:
    kind: str  # absent | empty | failed | placed | placing | unrecorded | foreign | file
    entry: dict | None = None  # placed / placing: the record's entry (build_id, gen, files, inputs, config)

    @property
    def finished(self) -> bool:
        """A finished output is in place (`placing`: its finalize was stopped before recording it)."""
        return self.kind in ("placed", "placing")


def state(work_dir: str, absdir: str) -> State:
    if not os.path.lexists(absdir):
        return State("absent")
    if os.path.islink(absdir) or not os.path.isdir(absdir):
        return State("file")
    if not os.listdir(absdir):
        return State("empty")
    record = read_record(work_dir, absdir)
    ident = identity(absdir)
    for kind in ("placing", "placed"):
        entry = record.get(kind)
        if isinstance(entry, dict) and entry.get("ident") == ident:
            return State(kind, entry)
    if holds_only_markers(absdir) and (record or _markers_are_ours(absdir)):
        return State("failed")
    if _has_manifest(absdir):  # a MintDim output this work directory has no record of (it was deleted, say)
        return State("unrecorded")
    return State("foreign")


_MARKER_HEAD = "# Unit build failed\n\nThis unit of the MintDim build was not finalized"


def _markers_are_ours(absdir: str) -> bool:
    """Every marker is one MintDim wrote (its own words): a failed attempt whose record went with its work
    directory is still recognised. (Empty directories alone are not ours: there is no marker.)"""
    found = False
    for base, _dirs, files in os.walk(absdir):
        for name in files:
            try:
                with open(os.path.join(base, name), encoding="utf-8") as f:
                    if not f.read(len(_MARKER_HEAD)) == _MARKER_HEAD:
                        return False
            except (OSError, UnicodeDecodeError):
                return False
            found = True
    return found


def _has_manifest(absdir: str) -> bool:
    try:
        with open(os.path.join(absdir, "manifest.json"), encoding="utf-8") as f:
            return json.load(f).get("pipeline") == "unit-build"
    except (OSError, ValueError, AttributeError):
        return False


def holds_only_markers(absdir: str) -> bool:
    """Every entry is a unit_* directory holding nothing but a failure marker (or the top-level marker
    of a build whose unit sizes were not planned yet)."""
    try:
        entries = list(os.scandir(absdir))
    except OSError:
        return False
    for entry in entries:
        if entry.name == FAILED_MARKER and entry.is_file(follow_symlinks=False):
            continue
        if not (entry.is_dir(follow_symlinks=False) and entry.name.startswith("unit_")):
            return False
        if any(name != FAILED_MARKER for name in os.listdir(entry.path)):
            return False
    return True


def listing(absdir: str) -> dict[str, int]:
    """Every file under absdir (relative path -> size)."""
    found = {}
    for base, _dirs, files in os.walk(absdir):
        for name in files:
            path = os.path.join(base, name)
            found[os.path.relpath(path, absdir)] = os.path.getsize(path)
    return found


def not_as_written(absdir: str, entry: dict) -> list[str]:
    """The files of a finished output that differ from what MintDim wrote there (added, removed, resized)."""
    wrote, now = entry.get("files") or {}, listing(absdir)
    return sorted(k for k in set(wrote) | set(now) if wrote.get(k) != now.get(k))


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


# --- failure markers -----------------------------------------------------------------------------------


def marker_text(err) -> str:
    """UNIT_BUILD_FAILED.md: what the marker is, then the error in both languages (the catalogue's text)."""
    return E.MintDimError.texts("failure_marker", en=err.render("en"), vi=err.render("vi")).en


def write_failure_markers(build, err, only=None) -> list[str]:
    """UNIT_BUILD_FAILED.md into every declared unit directory of every output that holds no finished
    output. only: the output directories (absolute) this run holds (guard.py); others are left alone."""
    written = []
    text = marker_text(err)
    for out in build.outputs:
        if only is not None and out.absdir not in only:
            continue
        if state(build.work_dir, out.absdir).kind not in ("absent", "empty", "failed"):
            continue
        write_record(build.work_dir, out.absdir, dir=out.dir, marked=build.build_id)
        for unit_dir in [os.path.join(out.absdir, f"unit_{s}") for s in out.sizes or []] or [out.absdir]:
            # units.sizes: auto: no unit is declared, the marker sits on top
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


# --- placing a finished output ------------------------------------------------------------------------


def link_tree(parts: list[str], tree: str) -> None:
    """The output's tree from the directories its write and aggregate jobs wrote, as hard links: the jobs'
    directories stay as they are (Snakemake's outputs), and no byte is copied."""
    shutil.rmtree(tree, ignore_errors=True)  # a stopped finalize's (ours)
    os.makedirs(tree)
    for part in parts:
        for name in sorted(os.listdir(part)):
            if name == SNAKEMAKE_STAMP:
                continue
            src, dst = os.path.join(part, name), os.path.join(tree, name)
            if os.path.isdir(src):
                shutil.copytree(src, dst, copy_function=_link)
            else:
                _link(src, dst)


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links
        shutil.copyfile(src, dst)


def place(tree: str, absdir: str, work_dir: str, entry: dict) -> None:
    """Put the finished tree at absdir and record it as placed (entry: build_id, gen, files, inputs, config).

    A missing or empty directory (or one holding only our failure markers) is replaced by one rename(2).
    A finished output (the caller checked it may be replaced: --rebuild) is exchanged with the tree in one
    step (renameat2 RENAME_EXCHANGE), then removed: at every moment absdir holds a whole output. Across
    file systems the tree is first copied beside absdir (a hidden directory of this build), then the same.
    """
    if state(work_dir, absdir).kind == "failed":
        clear_failure_markers(absdir)
    parent = os.path.dirname(absdir)
    os.makedirs(parent, exist_ok=True)
    source = tree
    if os.stat(tree).st_dev != os.stat(parent).st_dev:
        source = os.path.join(parent, f".{os.path.basename(absdir)}.mintdim-{entry['build_id'][:12]}")
        shutil.rmtree(source, ignore_errors=True)  # a stopped copy of this build's (its name is ours)
        try:
            shutil.copytree(tree, source)
        except OSError:  # e.g. that file system is full: nothing half-copied stays beside the output
            shutil.rmtree(source, ignore_errors=True)
            raise
        kill_point("finalize:copied")
    record = read_record(work_dir, absdir)
    leftovers = list(record.get("leftovers", []))
    occupied = os.path.isdir(absdir) and bool(os.listdir(absdir))
    if occupied:  # the old output ends up at `source`, or aside where RENAME_EXCHANGE is not supported
        old = identity(absdir)
        leftovers += [{"path": source, "ident": old}, {"path": _aside(absdir), "ident": old}]
    write_record(
        work_dir,
        absdir,
        dir=record.get("dir"),
        placing=dict(entry, ident=identity(source)),
        leftovers=leftovers,
    )
    if occupied:
        _exchange(source, absdir)
    else:
        os.rename(source, absdir)
    kill_point("finalize:moved")
    finish_placing(work_dir, absdir)


def finish_placing(work_dir: str, absdir: str) -> None:
    """Record a placement as done, then remove what it replaced (only directories with the recorded inode)."""
    record = read_record(work_dir, absdir)
    if record.get("placing"):
        record = write_record(work_dir, absdir, placed=record["placing"], placing=None)
    for left in record.get("leftovers", []):
        if (
            left.get("ident") is not None
            and identity(left["path"]) == left["ident"]
            and left["path"] != absdir
        ):
            shutil.rmtree(left["path"], ignore_errors=True)
    write_record(work_dir, absdir, leftovers=None)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> None:
    """Swap two directories in one step (Linux renameat2). Where the file system or the C library cannot,
    b is moved aside first (recorded as a leftover), then a takes its place."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), b)
    except AttributeError:  # no renameat2 in this C library
        pass
    os.rename(b, _aside(b))
    os.rename(a, b)


def _aside(absdir: str) -> str:
    return os.path.join(os.path.dirname(absdir), f".{os.path.basename(absdir)}.mintdim-old")
