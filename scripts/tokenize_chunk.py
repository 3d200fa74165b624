#!/usr/bin/env python3
"""Rule tokenize: parse, render, hash and encode one chunk of one input file."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages.tokenize import tokenize_chunk


def add_args(p):
    p.add_argument("--file", type=int, required=True, help="input file index")
    p.add_argument("--chunk", type=int, required=True, help="chunk index inside the file")
    p.add_argument("--out", required=True, help="chunk directory to write")
    p.add_argument("--threads", type=int, default=1, help="tokenizer threads")
    p.add_argument("--start", type=int, default=None, help="first byte of the chunk (with --end)")
    p.add_argument("--end", type=int, default=None, help="end byte of the chunk (exclusive)")


def body(args, build, metas, log, stop):
    bounds = (args.start, args.end) if args.start is not None and args.end is not None else None
    tokenize_chunk(
        build,
        metas,
        args.file,
        args.chunk,
        args.out,
        threads=args.threads,
        log=log,
        stop_check=stop,
        bounds=bounds,
    )


sys.exit(job.entry("tokenize_f{file}_c{chunk}", __doc__, add_args, body))
