#!/usr/bin/env python3
"""What checksums.sha256 costs: `mintdim verify OUT` with and without its checksum pass, and the finalize job.

    python benchmarks/checksums.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/minilm/tokenizer.json \\
        --cores 2 --runs 5 [--baseline-tree DIR]

Each round builds the output afresh (`mintdim build`, as export.py does), then times `mintdim verify OUT`
and `mintdim verify` of the same files without checksums.sha256 (a copy of hard links: the same bytes, the
same page cache; verify then skips the pass and says so), in an order that alternates from round to round.
The finalize job's timing record (`s` and `cpu_time` of .mintdim/<build id>/benchmarks/finalize_*.tsv:
its life up to the end of its work, interpreter start included) is read from that build. With
--baseline-tree, a checkout of an earlier commit (run with PYTHONPATH=DIR) builds the same output in
every round too, and its finalize record is read beside: the difference is what writing the checksums
adds. Prints every round with the load average, then the medians and the spread.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from export import build_arguments, this_env, timed, write_config


def finalize_record(workdir: str) -> tuple[float, float]:
    """Wall and CPU seconds of the finalize job of the build in workdir."""
    paths = glob.glob(os.path.join(workdir, ".mintdim", "*", "benchmarks", "finalize_*.tsv"))
    if len(paths) != 1:
        raise SystemExit(f"expected one finalize timing record, found {paths}")
    with open(paths[0], encoding="utf-8") as f:
        record = next(csv.DictReader(f, delimiter="\t"))
    return float(record["s"]), float(record["cpu_time"])


def fresh_build(workdir: str, cfg_path: str, cores: int, env: dict) -> tuple[float, float]:
    for name in ("out", "nosums", ".mintdim"):
        shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
    timed([sys.executable, "-m", "mintdim", "build", cfg_path, "--cores", str(cores)], workdir, env)
    return finalize_record(workdir)


def one_round(k: int, workdir: str, cfg_path: str, cores: int, baseline: str | None) -> dict:
    row = {"load": os.getloadavg()[0]}
    env = this_env()
    if baseline and k % 2:
        row["base_finalize"], row["base_finalize_cpu"] = fresh_build(
            workdir, cfg_path, cores, dict(os.environ, PYTHONPATH=baseline)
        )
    row["finalize"], row["finalize_cpu"] = fresh_build(workdir, cfg_path, cores, env)
    subprocess.run(["cp", "-al", "out", "nosums"], cwd=workdir, check=True)
    os.remove(os.path.join(workdir, "nosums", "checksums.sha256"))
    runs = [("verify", "out"), ("verify_nosums", "nosums")]
    for name, out in runs if k % 2 == 0 else runs[::-1]:
        row[name], row[name + "_cpu"], _sys = timed(
            [sys.executable, "-m", "mintdim", "verify", out], workdir, env
        )
    if baseline and not k % 2:
        row["base_finalize"], row["base_finalize_cpu"] = fresh_build(
            workdir, cfg_path, cores, dict(os.environ, PYTHONPATH=baseline)
        )
    row["bytes"] = sum(
        os.path.getsize(p)
        for p in glob.glob(os.path.join(workdir, "out", "**"), recursive=True)
        if os.path.isfile(p)
    )
    row["load_end"] = os.getloadavg()[0]
    return row


def report(rows: list[dict]) -> None:
    loads = sorted(r[k] for r in rows for k in ("load", "load_end"))
    print(
        f"\nmedians of {len(rows)} rounds (1-minute load average {loads[0]:.1f} to {loads[-1]:.1f}; "
        f"output {rows[0]['bytes'] / 1e6:.0f} MB):"
    )
    for key in [k for k in rows[0] if k not in ("load", "load_end", "bytes") and not k.endswith("_cpu")]:
        values = [r[key] for r in rows]
        print(
            f"  {key:14s} wall {statistics.median(values):.3f} s ({min(values):.3f} to {max(values):.3f}), "
            f"CPU {statistics.median(r[key + '_cpu'] for r in rows):.3f} s"
        )
    added = [r["verify"] - r["verify_nosums"] for r in rows]
    print(
        f"  checksum pass in verify: {statistics.median(added):+.3f} s ({min(added):+.3f} to "
        f"{max(added):+.3f})"
    )
    if "base_finalize" in rows[0]:
        added = [r["finalize"] - r["base_finalize"] for r in rows]
        print(
            f"  finalize vs baseline: {statistics.median(added):+.3f} s ({min(added):+.3f} to "
            f"{max(added):+.3f})"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build_arguments(p)
    p.add_argument(
        "--baseline-tree",
        default=None,
        metavar="DIR",
        help="a checkout of another MintDim (run with PYTHONPATH=DIR): its finalize job beside",
    )
    p.add_argument("--work", default=None, help="where the builds go (default: a temporary directory)")
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="mintdim-checksums-bench-", dir=args.work)
    cfg_path = write_config(args, workdir)
    baseline = os.path.abspath(args.baseline_tree) if args.baseline_tree else None
    rows = []
    try:
        for k in range(args.runs):
            rows.append(one_round(k, workdir, cfg_path, args.cores, baseline))
            print(
                f"round {k + 1}: "
                + ", ".join(
                    f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                    for key, value in rows[-1].items()
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
