"""One whole build through the stage functions, wired as scripts/*.py and the rules wire them, without
Snakemake: every chunk tokenized, the plan, one write job for every unit size (with the plan table, as
workflow/rules/write.smk passes it), aggregate (with the write job's summary) and finalize."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from mintdim.formats.layout import Layout
from mintdim.sources import inputs
from mintdim.stages.aggregate import aggregate_output
from mintdim.stages.finalize import finalize_output
from mintdim.stages.plan import plan_output
from mintdim.stages.preflight import preflight
from mintdim.stages.to_build import input_digests
from mintdim.stages.tokenize import tokenize_chunk
from mintdim.stages.write import write_slots


@dataclass
class Built:
    build: object
    metas: dict
    logs: list = field(default_factory=list)


def drive(raw: dict, before_finalize=None) -> Built:
    """before_finalize(written paths): a test's change to the write job's summary before finalize."""
    build, metas = preflight(raw)
    # what each output is built from, as the build starts (the validate job records it; finalize keeps it)
    made_from = {o.index: {"inputs": input_digests(build, o), "config": build.raw} for o in build.outputs}
    lay = Layout(build.work_dir, build.build_id)
    logs: list[str] = []
    log = logs.append
    for out in build.outputs:
        o = out.index
        dirs = []
        for i in out.files:
            f = build.files[i]
            for k in range(len(inputs.chunk_bounds(f.abspath, build.chunk_mb))):
                d = lay.tok_dir(i, k)
                tokenize_chunk(build, metas, i, k, d, log=log)
                dirs.append(d)
        for p in (lay.plan(o), lay.written(o, 0), lay.aggregated(o), lay.done(o)):
            os.makedirs(os.path.dirname(p), exist_ok=True)
        plan_output(build, o, dirs, lay.plan(o), lay.plan_units(o), log=log)
        with open(lay.plan_units(o), encoding="utf-8") as f:
            slots = list(range(len(json.load(f)["sizes"])))
        write_slots(
            build,
            metas,
            o,
            slots,
            dirs,
            lay.plan_units(o),
            lay.stage_part(o, 0),
            lay.written(o, 0),
            log=log,
            plan_table=lay.plan(o),
        )
        aggregate_output(
            build,
            metas,
            o,
            lay.plan(o),
            dirs,
            [lay.written(o, 0)],
            lay.stage_agg(o),
            lay.aggregated(o),
            log=log,
        )
        if before_finalize is not None:
            before_finalize([lay.written(o, 0)])
        finalize_output(
            build,
            o,
            lay.aggregated(o),
            [lay.stage_part(o, 0), lay.stage_agg(o)],
            lay.tree(o),
            lay.done(o),
            0,
            log=log,
            written_paths=[lay.written(o, 0)],
            built_from=made_from[o],
        )
    return Built(build, metas, logs)
