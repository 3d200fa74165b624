#!/usr/bin/env python
"""Wall time of the shipped example (`mintdim build config/config.yaml --cores 2`), this MintDim against
another one, in interleaved rounds, medians.

    python benchmarks/example.py --baseline OTHER_VENV/bin/python [--rounds 8] [--cores 2]

Each build runs in a fresh directory holding a copy of config/ and data/ (nothing built before), as a
new user's first build does; the tokenizer-facts cache (MINTDIM_CACHE_DIR) is shared and warmed by one
untimed build of each first. Without --baseline only this MintDim is timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one(python: str, work: str, cores: int, env: dict) -> float:
    d = tempfile.mkdtemp(dir=work)
    for name in ("config", "data"):
        shutil.copytree(os.path.join(REPO, name), os.path.join(d, name))
    t0 = time.perf_counter()
    done = subprocess.run(
        [python, "-m", "mintdim", "build", "config/config.yaml", "--cores", str(cores)],
        cwd=d,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{python}: the build failed:\n{done.stderr[-2000:]}")
    shutil.rmtree(d, ignore_errors=True)
    return wall


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--baseline", default=None, metavar="PYTHON", help="another MintDim's interpreter (its venv)"
    )
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--cores", type=int, default=2)
    args = p.parse_args(argv)
    pythons = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    work = tempfile.mkdtemp(prefix="mintdim-example-")
    env = dict(os.environ, MINTDIM_CACHE_DIR=os.path.join(work, "cache"))
    try:
        for python in pythons.values():
            one(python, work, args.cores, env)  # warms the tokenizer-facts cache, the page cache
        times = {name: [] for name in pythons}
        for r in range(args.rounds):
            for name, python in pythons.items():
                times[name].append(one(python, work, args.cores, env))
            print(
                f"round {r + 1}: " + ", ".join(f"{n} {ts[-1]:.2f} s" for n, ts in times.items()), flush=True
            )
        for name, ts in times.items():
            print(
                f"{name}: median {statistics.median(ts):.2f} s (min {min(ts):.2f}, max {max(ts):.2f}) "
                f"of {len(ts)} builds, {pythons[name]}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
