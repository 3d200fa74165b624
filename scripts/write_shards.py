#!/usr/bin/env python3
"""Rule write: the padded shards of one unit size (the slot-th of the output's sizes) of one output."""
import sys

import _door  # noqa: F401
from mintdim.stages import job
from mintdim.stages.write import write_slot


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--slot", type=int, required=True, help="which of the output's unit sizes (0 = smallest)")
    p.add_argument("--units-plan", required=True)
    p.add_argument("--stage", required=True, help="staging directory of the output")
    p.add_argument("--written", required=True, help="shard summary to write (JSON)")
    p.add_argument("--chunks", nargs="+", required=True, help="chunk directories, in input order")


def body(args, build, metas, log, stop):
    write_slot(build, metas, args.out_index, args.slot, args.chunks, args.units_plan, args.stage, args.written,
               log=log, stop_check=stop)


sys.exit(job.entry("write_o{out_index}_s{slot}", __doc__, add_args, body))
