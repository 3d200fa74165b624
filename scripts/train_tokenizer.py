#!/usr/bin/env python3
"""Rule train_tokenizer: train one BPE tokenizer (tokenizer.train_bpe) on the build's rendered samples."""
import argparse
import json
import os

import _door  # noqa: F401
from mintdim import fastexit
from mintdim.config import lang_of
from mintdim.stages import job, train

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--config", required=True, help="the build config as one JSON string")
parser.add_argument("--index", type=int, required=True, help="which trained tokenizer (0-based, in file order)")
parser.add_argument("--out", required=True, help="the marker file to write when the model is in place")
parser.add_argument("--threads", type=int, default=1, help="threads for counting and training")
parser.add_argument("--log", default=None)
args = parser.parse_args()
raw = json.loads(args.config)
root = os.path.dirname(os.path.dirname(os.path.abspath(args.out)))
log = job.JobLog(args.log)
fastexit.exit(job.run(f"train_t{args.index}", lambda: train.run(raw, args.index, args.out, log=log, threads=args.threads),
                 log=log, errors_dir=os.path.join(root, "errors"), failed_flag=os.path.join(root, "FAILED"),
                 lang=lang_of(raw), writes=[args.out]))
