"""Finalize one output: link the jobs' parts into one tree and place it in the user's output directory.

The write and aggregate jobs each wrote a directory of their own (Snakemake's outputs of those jobs);
finalize links them (hard links: no byte is copied, and those directories stay as they were, so finalize
can run again) into one tree, checks the shard counts, writes checksums.sha256 (the SHA-256 of every
other file of the tree, formats/checksums.py), and places the tree by the one state rule of
mintdim/formats/records.py: a new, empty or failed directory gets it by one rename(2); this config's
finished output is compared byte for byte (stages forced again must give the same bytes); a finished
output is replaced only with --rebuild (`replace`), in one step.
"""

from __future__ import annotations

import json
import os
import shutil

from .. import errors as E
from ..formats import checksums, records
from ..formats.layout import older_done
from ..formats.records import atomic_write_text
from ..progress import Progress, samples_said
from .to_build import check_unrecorded
from .written import check_shard_counts


def finalize_output(
    build,
    out_index: int,
    agg_path: str,
    parts: list[str],
    tree: str,
    done_path: str,
    gen: int,
    log=print,
    built_from: dict | None = None,
    written_paths: list[str] | None = None,
    replace: bool = False,
) -> dict:
    """parts: the write jobs' directories and the aggregate job's, in that order. built_from: what the
    output is built from (validated.json: inputs, config), kept in its record: a later build of the same
    config is "already built" only while they are unchanged (stages/to_build.py outputs_to_build).
    replace: --rebuild; a finished output at the directory may be replaced (only one exactly as MintDim
    wrote it)."""
    out = build.outputs[out_index]
    with open(agg_path, encoding="utf-8") as f:
        stats = json.load(f)["stats"]
    if written_paths:
        check_shard_counts(stats, written_paths)
    st = records.state(build.work_dir, out.absdir)
    mine = st.finished and st.entry.get("build_id") == build.build_id
    if st.kind == "placing" and mine:
        # a finalize of this build placed it and was stopped before recording it: a finished output, then
        # like any other (pre-flight let this build run only with the same inputs, or with --rebuild)
        records.finish_placing(build.work_dir, out.absdir)
        st = records.state(build.work_dir, out.absdir)
    records.link_tree(parts, tree)
    checksums.write(tree, Progress(log, f"[unit-build] checksums {out.dir}", 0, "files"))
    if st.kind == "placed" and mine and not replace:
        # stages forced again (snakemake --forcerun / -R) on this config's finished output: the same
        # inputs give the same bytes; the finished output stays, the new tree goes
        first = records.same_tree(tree, out.absdir)
        if first is not None:
            raise E.OutputValidationError.rebuilt_differs(out.dir, first)
        shutil.rmtree(tree)
        log(f"[unit-build] {out.dir} is already built: the stages run again gave the same bytes")
    else:
        _check_replaceable(build, out, st, replace)
        entry = {"build_id": build.build_id, "gen": gen, "files": records.listing(tree), **(built_from or {})}
        records.write_record(build.work_dir, out.absdir, dir=out.dir)
        records.place(tree, out.absdir, build.work_dir, entry)
    try:  # the build's stage/ parents, once empty
        os.rmdir(os.path.dirname(tree))
        os.rmdir(os.path.dirname(os.path.dirname(tree)))
    except OSError:
        pass
    result = {"output": out.dir, "path": out.absdir, "stats": stats}
    atomic_write_text(done_path, json.dumps(result, indent=1))
    for older in older_done(done_path):  # records of earlier placements (the output was deleted since)
        try:
            os.unlink(older)
        except OSError:
            pass
    log(f"[unit-build] done {out.dir}: {samples_said(stats)}, {stats['total_tokens']} tokens")
    return result


def _check_replaceable(build, out, st, replace: bool) -> None:
    """The output directory may take the new tree: new, empty or only our markers; or, with --rebuild, a
    finished output exactly as MintDim wrote it. Checked in pre-flight too; again here, just before."""
    if st.kind in ("absent", "empty", "failed"):
        return
    if st.kind == "file":
        raise E.OutputValidationError.not_a_directory(out.dir)
    if st.kind == "unrecorded" and replace:
        return check_unrecorded(out)
    if not st.finished:
        raise E.OutputValidationError.not_empty(out.dir)
    if not replace:
        raise E.OutputValidationError.other_config(out.dir, st.entry.get("build_id", "?"), [], None)
    changed = records.not_as_written(out.absdir, st.entry)
    if changed:
        raise E.OutputValidationError.not_only_ours(out.dir, changed[:5])


def summary_lines(build, layout) -> list[str]:
    lines = []
    for out in build.outputs:
        path = layout.latest_done(out.index)
        try:
            with open(path or "", encoding="utf-8") as f:
                stats = json.load(f)["stats"]
        except (OSError, ValueError, KeyError):
            continue
        dist = ", ".join(f"{k}: {v}" for k, v in stats["unit_distribution"].items())
        # source.on_bad_record: skip
        lines.append(
            f"[unit-build] output {out.dir}: {samples_said(stats)}, "
            f"{stats['total_tokens']} tokens ({dist})"
            + (
                f"; {stats['skipped_records']} bad records skipped (skipped_index.jsonl)"
                if "skipped_records" in stats
                else ""
            )
        )
    return lines
