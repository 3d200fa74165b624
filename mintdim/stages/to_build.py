"""What to build and what changed: which outputs a build must (re)build, refused before anything is
tokenized when their directories hold something else, and what a finished output was built from (its
inputs' content, its config) to tell whether it changed since.
"""

from __future__ import annotations

import hashlib
import json
import os

from .. import errors as E
from ..config import BuildConfig
from ..formats import records
from ..sources import inputs
from ..tokenizers.engines import file_digest
from .tokenizer_facts import model_files


def outputs_to_build(build: BuildConfig, rebuild: bool = False, how: str | None = None) -> list[int]:
    """The outputs this build must (re)build; the others are already built: this config's finished output,
    from inputs with the same content. Refused here, before anything is tokenized, by the one state rule
    (formats/records.py): a directory that is not new, empty or MintDim's own failed attempt; a finished
    output of another config, or built from inputs that changed since (unless `rebuild`: it is replaced once
    the new output is complete); one whose files changed since MintDim wrote them. how: the command that
    rebuilds (`mintdim build my.yaml --rebuild`), named in the refusals."""
    todo = []
    for out in build.outputs:
        st = records.state(build.work_dir, out.absdir)
        if st.kind in ("absent", "empty", "failed"):
            todo.append(out.index)
        elif st.kind == "file":
            raise E.OutputValidationError.not_a_directory(out.dir)
        elif st.kind == "unrecorded":
            if not rebuild:
                raise E.OutputValidationError.unrecorded(out.dir, how)
            check_unrecorded(out)
            todo.append(out.index)
        elif not st.finished:
            raise E.OutputValidationError.not_empty(out.dir)
        elif records.not_as_written(out.absdir, st.entry):
            changed = records.not_as_written(out.absdir, st.entry)[:5]
            raise E.OutputValidationError.not_only_ours(out.dir, changed)
        elif st.entry.get("build_id") != build.build_id:
            if not rebuild:
                other = st.entry.get("build_id", "?")
                changes = config_changes(st.entry.get("config"), build.raw)
                raise E.OutputValidationError.other_config(out.dir, other, changes, how)
            todo.append(out.index)
        elif rebuild:
            todo.append(out.index)
        else:
            # placing (its finalize was stopped before recording it) is a finished output like placed: built
            # from inputs that changed since, it is replaced only with --rebuild
            changed = changed_inputs(st.entry.get("inputs"), build, out)
            if changed:
                raise E.OutputValidationError.inputs_changed(out.dir, changed, how)
            if st.kind == "placing":
                todo.append(out.index)  # its finalize records the placement
    return todo


def check_unrecorded(out) -> None:
    """--rebuild over a MintDim output with no record here: only one `mintdim verify` finds complete, with
    nothing else in it (a stray or changed file is a problem there), may be replaced."""
    from ..reading.verify import verify

    report = verify(out.absdir)
    if not report.ok:
        problems = [f"{p.file}: {p.message}" for p in report.problems[:5]]
        raise E.OutputValidationError.not_only_ours(out.dir, problems)


def input_files(build: BuildConfig, out) -> dict[str, list[str]]:
    """What an output is built from besides its config, by name: each source file, and the tokenizer's
    model files."""
    names = {f"source {build.files[i].path}": inputs.files_of(build.files[i].abspath) for i in out.files}
    names[f"tokenizer {out.tokenizer_path}"] = model_files(out.tokenizer_kind, out.tokenizer_abspath)
    return names


def stat_identity(paths: list[str]) -> str:
    """A file's identity for the file system: size, times and inode. Any write changes ctime, which no
    tool sets back, so an equal key means the same bytes; a different key is checked by content."""
    keys = []
    for p in paths:
        try:
            st = os.stat(p)
            keys.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
        except OSError:
            keys.append("-")
    return ",".join(keys)


def _content(paths: list[str]) -> str | None:
    try:
        digests = [file_digest(p) for p in paths]
    except OSError:
        return None
    return digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()


def input_digests(build: BuildConfig, out) -> dict[str, dict]:
    """Each input's SHA-256 (of its bytes; a model directory: of its files') and file-system identity,
    recorded when the validate job runs and kept with the finished output. SHA-256 reads 1.27 GB/s on one
    core here (hashlib, file in the page cache): 0.08 s for the 107 MB ShareGPT file, once per build."""
    return {
        name: {"sha256": _content(paths), "stat": stat_identity(paths)}
        for name, paths in input_files(build, out).items()
    }


def changed_inputs(recorded: dict | None, build: BuildConfig, out) -> list[str]:
    """The inputs whose content differs from what the finished output was built from ("source d.jsonl").
    Decided by content: an input with the recorded file-system identity is not read again; any other
    is hashed (a copy with the same bytes, a touch: unchanged)."""
    current = input_files(build, out)
    if not isinstance(recorded, dict):
        return sorted(current)
    changed = []
    for name in sorted(set(recorded) | set(current)):
        was, paths = recorded.get(name), current.get(name)
        if not isinstance(was, dict) or paths is None:
            changed.append(name)
        elif was.get("stat") != stat_identity(paths):
            if was.get("sha256") is None or was.get("sha256") != _content(paths):
                changed.append(name)
    return changed


def config_changes(before, after: dict, limit: int = 8) -> list[str]:
    """What differs between two configs, key by key (`units.sizes: [[256, 512]] -> [[256, 1024]]`)."""
    if not isinstance(before, dict):
        return []
    a, b = _flat(before), _flat(after)
    lines = [
        f"{k}: {json.dumps(a.get(k), ensure_ascii=False)} -> {json.dumps(b.get(k), ensure_ascii=False)}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    return lines[:limit] + ([f"... {len(lines) - limit} more"] if len(lines) > limit else [])


def _flat(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
