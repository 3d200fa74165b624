#!/usr/bin/env python3
"""Rule finalize: move one finished output into place."""

import _door  # noqa: F401
from mintdim.run import fastexit
from mintdim.run import job
from mintdim.stages.finalize import finalize_output
from mintdim.stages.validate import recorded_inputs


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--agg", required=True)
    p.add_argument("--stage", required=True)
    p.add_argument("--done", required=True, help="completion record to write (JSON)")
    p.add_argument("--written", nargs="+", required=True, help="the write jobs' shard summaries")


def body(args, build, metas, log, stop):
    finalize_output(build, args.out_index, args.agg, args.stage, args.done, log=log,
                    inputs=recorded_inputs(args.validated, args.out_index), written_paths=args.written)


fastexit.exit(job.entry("finalize_o{out_index}", __doc__, add_args, body))
