#!/usr/bin/env python3
"""Rule report: stats table and token-length plot of one finished output (for snakemake --report)."""

import argparse
import os
import sys
import traceback

import _door  # noqa: F401

from mintdim.progress import JobLog, write_timing
from mintdim.stages.report import write_report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--done", required=True, help="completion record of the output (finalize)")
    p.add_argument("--out", required=True, help="report directory to write")
    p.add_argument("--log", default=None)
    p.add_argument("--bench", default=None, help="timing record to write (TSV)")
    args = p.parse_args(argv)
    log = JobLog(args.log)
    try:
        write_report(args.done, args.out, log=log)
    except Exception as exc:  # the output is already in place: a report problem never fails the build
        log.detail(traceback.format_exc())
        log(f"[unit-build:warning] report could not be made: {type(exc).__name__}: {exc}")
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "stats.html"), "w", encoding="utf-8") as f:
            f.write(f"<p>The report could not be made: {type(exc).__name__}. See {args.log}.</p>\n")
    write_timing(args.bench, log)
    return 0


sys.exit(main())
