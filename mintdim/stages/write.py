"""Write the shards of one unit size of one output directory into the build's staging tree."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

from ..formats import intermediate as inter
from ..formats.shards import ShardWriter, shard_line, shard_warning
from ..outputs import EMPTY_MARKER, atomic_write_text


def empty_unit_text(unit: int) -> str:
    return (f"# Empty unit\n\nNo sample of this build was assigned to unit size {unit}.\n"
            "The unit is declared in the config, so its directory exists; it holds no shard.\n")


def write_unit(build, metas, out_index: int, unit: int, chunk_dirs: list[str], units_plan: str,
               stage_dir: str, written_path: str, log=print, stop_check=lambda: None) -> dict:
    out = build.outputs[out_index]
    meta = metas[out.tokenizer_abspath]
    with open(units_plan, encoding="utf-8") as f:
        plan = json.load(f)
    expected = plan["counts"][plan["sizes"].index(unit)]
    unit_dir = os.path.join(stage_dir, f"unit_{unit}")
    shutil.rmtree(unit_dir, ignore_errors=True)  # a killed earlier attempt's leftovers (ours)
    os.makedirs(unit_dir)
    suffix = out.dir if len(build.outputs) > 1 else None

    def closed(index: int, info: dict) -> None:
        log(shard_line(index, info["records"], info["bytes"], unit, suffix))
        warning = shard_warning(index, info["bytes"])
        if warning:
            log(warning)

    writer = ShardWriter(unit_dir, unit, out.samples_per_shard, meta.pad_id, meta.dtype, on_close=closed)
    total = 0
    for d in chunk_dirs:
        stop_check()
        part = inter.read(os.path.join(d, f"u{unit}.msgpack"))
        lengths = inter.unarr(part["lengths"]).astype(np.int64)
        if len(lengths):
            writer.write(lengths, inter.unarr(part["tokens"]))
            total += len(lengths)
    shards = writer.close()
    if total != expected:
        raise RuntimeError(f"unit {unit}: wrote {total} records but the plan counted {expected}")
    if total == 0:
        atomic_write_text(os.path.join(unit_dir, EMPTY_MARKER), empty_unit_text(unit))
    summary = {"output": out_index, "unit": unit, "records": total, "shards": shards}
    atomic_write_text(written_path, json.dumps(summary))
    return summary
