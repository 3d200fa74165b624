#!/usr/bin/env python3
"""Rule validate: the build's pre-flight, from its record or run again when the config or an input changed
since (mintdim/stages/preflight.py), and the resolved build recorded for the later stages (validated.json)."""

import sys

import _door  # noqa: F401

from mintdim.run import job
from mintdim.stages import validate


def add_args(p):
    p.add_argument("--out", required=True, help="where to write validated.json")


def body(args, raw, log):
    validate.run(raw, args.out)


sys.exit(job.config_entry("validate", __doc__, add_args, body))
