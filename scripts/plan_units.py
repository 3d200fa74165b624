#!/usr/bin/env python3
"""Rule plan: sample ids, line numbers, unit rows and shard numbers of one output directory."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages.plan import plan_output


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--table", required=True, help="plan table to write (msgpack)")
    p.add_argument("--units", required=True, help="per-unit counts to write (JSON)")
    p.add_argument("--chunks", nargs="+", required=True, help="chunk directories, in input order")


def body(args, build, metas, log, stop):
    plan_output(build, args.out_index, args.chunks, args.table, args.units, log=log)


sys.exit(job.entry("plan_o{out_index}", __doc__, add_args, body))
