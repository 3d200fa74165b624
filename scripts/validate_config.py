#!/usr/bin/env python3
"""Rule validate: run every pre-flight check and record the resolved build (validated.json)."""

import _door  # noqa: F401
from mintdim import fastexit
from mintdim.stages import job, validate


def add_args(p):
    p.add_argument("--out", required=True, help="where to write validated.json")


def body(args, raw, log):
    validate.run(raw, args.out)


fastexit.exit(job.config_entry("validate", __doc__, add_args, body))
