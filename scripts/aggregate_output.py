#!/usr/bin/env python3
"""Rule aggregate: sample/duplicate/UNK indexes, histogram, stats and manifest of one output."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages.aggregate import aggregate_output


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--table", required=True)
    p.add_argument(
        "--stage", required=True, help="directory to write the indexes, stats and manifest into (made anew)"
    )
    p.add_argument("--agg", required=True, help="summary to write (JSON)")
    p.add_argument("--written", nargs="*", default=[], help="the write jobs' shard summaries (packed rows)")
    p.add_argument("--chunks", nargs="+", required=True, help="the output's chunk directories, in order")


def body(args, build, metas, log, stop):
    aggregate_output(
        build,
        metas,
        args.out_index,
        args.table,
        args.chunks,
        args.written or None,
        args.stage,
        args.agg,
        log=log,
    )


sys.exit(job.entry("aggregate_o{out_index}", __doc__, add_args, body))
