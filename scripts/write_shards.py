#!/usr/bin/env python3
"""Rule write: the padded shards of some unit sizes (slots: 0 =
smallest of the output's sizes) of one output."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages.write import write_slots


def slot_list(text):
    return [int(s) for s in text.split(",")]


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--part", type=int, required=True, help="which write job of the output (names its log)")
    p.add_argument("--slots", type=slot_list, required=True, help="unit sizes to write, by position: 0,2,4")
    p.add_argument("--units-plan", required=True)
    p.add_argument(
        "--table", default=None, help="the plan table (msgpack): where packed rows put each sample"
    )
    p.add_argument(
        "--stage", required=True, help="directory this job writes its unit directories into (made anew)"
    )
    p.add_argument("--written", required=True, help="shard summaries to write (JSON)")
    p.add_argument("--chunks", nargs="+", required=True, help="chunk directories, in input order")


def body(args, build, metas, log, stop):
    write_slots(
        build,
        metas,
        args.out_index,
        args.slots,
        args.chunks,
        args.units_plan,
        args.stage,
        args.written,
        log=log,
        stop_check=stop,
        plan_table=args.table,
    )


sys.exit(job.entry("write_o{out_index}_p{part}", __doc__, add_args, body))
