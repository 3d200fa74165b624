#!/usr/bin/env python3
"""Rule validate: run every pre-flight check and record the resolved build (validated.json)."""
import argparse
import json
import os

import _door  # noqa: F401
from mintdim import fastexit
from mintdim.config import lang_of
from mintdim.stages import job, validate

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--config", required=True, help="the build config as one JSON string")
parser.add_argument("--out", required=True, help="where to write validated.json")
parser.add_argument("--log", default=None)
args = parser.parse_args()
raw = json.loads(args.config)
root = os.path.dirname(os.path.abspath(args.out))
fastexit.exit(job.run("validate", lambda: validate.run(raw, args.out), log=job.JobLog(args.log),
                 errors_dir=os.path.join(root, "errors"), failed_flag=os.path.join(root, "FAILED"),
                 lang=lang_of(raw)))
