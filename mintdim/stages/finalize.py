"""Finalize one output: move the finished staging tree into the user's output directory.

The output directory is checked again (it may have changed since pre-flight),
MintDim's own failure markers from an earlier attempt are cleared, and the
tree is renamed into place in one step. The ownership record is written
before and after the move, so an interrupted finalize is recognised on rerun.
"""

from __future__ import annotations

import json
import os
import shutil

from .. import errors as E
from ..formats import records
from ..faults import kill_point
from ..formats.layout import older_done
from ..formats.records import atomic_write_text
from .written import check_shard_counts


def finalize_output(build, out_index: int, agg_path: str, stage_dir: str, done_path: str, log=print,
                    inputs: dict | None = None, written_paths: list[str] | None = None) -> dict:
    """inputs: what the output was built from (validated.json), kept in its record: a later build
    of the same config finds it "already built" only while they are unchanged (records.check_outputs).
    written_paths: the write jobs' summaries; the shards they wrote must be those the stats count."""
    out = build.outputs[out_index]
    with open(agg_path, encoding="utf-8") as f:
        stats = json.load(f)["stats"]
    if written_paths:
        check_shard_counts(stats, written_paths)
    st = records.state(build.work_dir, out.absdir, build.build_id)
    record = records.read_record(build.work_dir, out.absdir) or {}
    interrupted = st == "ours-complete" and record.get("state") == "finalizing"
    if st == "foreign":
        raise E.OutputValidationError.not_empty(out.dir)
    if st == "ours-complete" and not interrupted:
        # this config's finished output, and stages were run again (snakemake --forcerun / -R): the
        # same inputs give the same bytes; the finished output stays, the new copy goes
        first = records.same_tree(stage_dir, out.absdir)
        if first is not None:
            raise E.OutputValidationError.rebuilt_differs(out.dir, first)
        shutil.rmtree(stage_dir)
        log(f"[unit-build] {out.dir} is already built: the stages run again gave the same bytes")
    else:
        if st == "ours-failed":
            records.clear_failure_markers(out.absdir)
        if interrupted and os.path.isdir(stage_dir):
            records.remove_partial_copy(stage_dir, out.absdir)  # a cross-device copy that was cut short
            interrupted = False
        if not interrupted:
            # the record names the directory about to be placed (its inode), so a rerun after a kill
            # recognises it, and never another build's directory that took the same path meanwhile
            records.write_record(build.work_dir, out.absdir, dir=out.dir, build_id=build.build_id,
                                 state="finalizing", created_dir=st == "absent" or record.get("created_dir", False),
                                 ident=records.identity(stage_dir))
            records.place(stage_dir, out.absdir, before_copy=lambda: records.write_record(
                build.work_dir, out.absdir, ident=records.identity(out.absdir)))
            kill_point("finalize:moved")
    try:
        os.rmdir(os.path.dirname(os.path.abspath(stage_dir)))  # the build's stage/ parent, once empty
    except OSError:
        pass
    # the files MintDim wrote there: `mintdim build --rebuild` deletes exactly these, nothing else
    records.write_record(build.work_dir, out.absdir, state="complete", files=records.listing(out.absdir),
                         **({"inputs": inputs} if inputs is not None else {}))
    result = {"output": out.dir, "path": out.absdir, "stats": stats}
    atomic_write_text(done_path, json.dumps(result, indent=1))
    for older in older_done(done_path):  # records of earlier placements (the output was deleted since)
        try:
            os.unlink(older)
        except OSError:
            pass
    log(f"[unit-build] done {out.dir}: {stats['total_samples']} samples, {stats['total_tokens']} tokens")
    return result


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
        lines.append(f"[unit-build] output {out.dir}: {stats['total_samples']} samples, "
                     f"{stats['total_tokens']} tokens ({dist})")
    return lines
