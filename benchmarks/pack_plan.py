#!/usr/bin/env python3
"""Packing plan (units.pack) speed, memory and quality: synthetic lengths, and optionally real ones.

    python benchmarks/pack_plan.py                                   # 10M synthetic lengths, rows 4096, 8192
    python benchmarks/pack_plan.py --samples 1000000 --rows 2048 4096
    python benchmarks/pack_plan.py --output artifacts/sharegpt_units # the token counts of a finished output

Synthetic lengths are lognormal (mu 5.3, sigma 1.1, plus 1; seed 0), close to ShareGPT pairs'
shape, with samples longer than a row truncated to it (overflow: truncate). Each plan runs in a
fresh process, so peak RSS (VmHWM) is the plan's own, the lengths array included. Prints
per row length: rows, the lower bound ceil(tokens / row), rows above it, efficiency
(tokens / slots), seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _one(spec: dict) -> dict:
    import numpy as np

    sys.path.insert(0, ROOT)
    from mintdim.formats import output as fmt
    from mintdim.progress import peak_rss_mb
    from mintdim.units import packing

    if spec.get("output"):
        lengths = fmt.token_counts(spec["output"])
    else:
        rng = np.random.default_rng(0)
        lengths = np.round(rng.lognormal(5.3, 1.1, spec["samples"])).astype(np.int64) + 1
    t0 = time.perf_counter()
    p = packing.plan(lengths, spec["row"], spec["overflow"])
    seconds = time.perf_counter() - t0
    return {
        "samples": int(len(lengths)),
        "row": spec["row"],
        "rows": p.n_rows,
        "lower_bound": p.lower_bound,
        "efficiency": p.efficiency,
        "seconds": seconds,
        "over_row": int(np.count_nonzero(p.status != 0)),
        "peak_rss_mb": peak_rss_mb() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--rows", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--overflow", choices=["drop", "truncate"], default="truncate")
    ap.add_argument("--output", help="a finished output directory: pack its token counts instead")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(json.loads(args.one))))
        return 0
    print(
        f"{'samples':>10} {'row':>6} {'rows':>9} {'lower bd':>9} {'excess':>8} {'efficiency':>10} "
        f"{'over row':>8} {'seconds':>8} {'peak RSS':>9}"
    )
    for row in args.rows:
        spec = {"samples": args.samples, "row": row, "overflow": args.overflow, "output": args.output}
        got = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--one", json.dumps(spec)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        excess = got["rows"] / got["lower_bound"] - 1 if got["lower_bound"] else 0.0
        print(
            f"{got['samples']:>10,} {row:>6} {got['rows']:>9,} {got['lower_bound']:>9,} {excess:>8.4%} "
            f"{got['efficiency']:>10.4%} {got['over_row']:>8,} {got['seconds']:>7.2f}s "
            f"{got['peak_rss_mb']:>7.0f}MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
