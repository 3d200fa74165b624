#!/usr/bin/env python3
"""Rule train_tokenizer: train one BPE tokenizer (tokenizer.train_bpe) on the build's rendered samples."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages import train


def add_args(p):
    p.add_argument(
        "--index", type=int, required=True, help="which trained tokenizer (0-based, in file order)"
    )
    p.add_argument("--out", required=True, help="the marker file to write when the model is in place")
    p.add_argument("--threads", type=int, default=1, help="threads for counting and training")


def body(args, raw, log):
    train.run(raw, args.index, args.out, log=log, threads=args.threads)


sys.exit(job.config_entry("train_t{index}", __doc__, add_args, body))
