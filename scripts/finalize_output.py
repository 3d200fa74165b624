#!/usr/bin/env python3
"""Rule finalize: link one output's parts into its tree and place it in the output directory."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages.finalize import finalize_output
from mintdim.stages.validate import built_from


def add_args(p):
    p.add_argument("--out-index", type=int, required=True)
    p.add_argument("--gen", type=int, required=True, help="generation of the completion record")
    p.add_argument("--agg", required=True)
    p.add_argument(
        "--tree", required=True, help="where the output's tree is linked together before it is placed"
    )
    p.add_argument("--done", required=True, help="completion record to write (JSON)")
    p.add_argument("--written", nargs="+", required=True, help="the write jobs' shard summaries")
    p.add_argument("--parts", nargs="+", required=True, help="the write jobs' directories, then aggregate's")
    p.add_argument(
        "--replace", action="store_true", help="--rebuild: a finished output there may be replaced"
    )


def body(args, build, metas, log, stop):
    finalize_output(
        build,
        args.out_index,
        args.agg,
        args.parts,
        args.tree,
        args.done,
        args.gen,
        log=log,
        built_from=built_from(args.validated, args.out_index),
        written_paths=args.written,
        replace=args.replace,
    )


sys.exit(job.entry("finalize_o{out_index}", __doc__, add_args, body))
