#!/usr/bin/env python3
"""`mintdim export` as a command against the same build's own write stage, medians of interleaved rounds.

    python benchmarks/export.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/minilm/tokenizer.json --cores 2 --runs 5

Each round builds the output afresh (`mintdim build --keep-intermediates`). Every stage job is a fresh
process, and its timing record's `s` column (.mintdim/<build id>/benchmarks/write_*.tsv) is its whole
life, interpreter start and imports included: the write stage is the sum of `s` (and of `cpu_time`)
over the write jobs of the output. Then `mintdim export OUT --format hf` and `--format megatron` are
timed as commands from start to end (wall, user+sys CPU of the process, and the kernel's part of it),
and so is `mintdim verify OUT`, which every export begins with. The order of the commands alternates from round
to round (the machine's load drifts). `--baseline PYTHON` also times another MintDim's commands (its
interpreter, e.g. a virtualenv of an earlier commit) on the same build in every round: before/after.
Prints every round with the load average, then the medians and the medians of each round's ratios.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMATS = ("hf", "megatron")


def timed(cmd: list[str], cwd: str, env: dict | None = None) -> tuple[float, float, float]:
    """Wall seconds, user+sys CPU seconds and sys (kernel) CPU seconds of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stdout}{res.stderr}")
    kernel = after.ru_stime - before.ru_stime
    return wall, (after.ru_utime - before.ru_utime) + kernel, kernel


def write_stage(workdir: str) -> tuple[float, float, int]:
    """Wall seconds and CPU seconds of the write jobs, summed, and their number."""
    wall, cpu, jobs = 0.0, 0.0, 0
    for path in glob.glob(os.path.join(workdir, ".mintdim", "*", "benchmarks", "write_*.tsv")):
        with open(path, encoding="utf-8") as f:
            record = next(csv.DictReader(f, delimiter="\t"))
        wall, cpu, jobs = wall + float(record["s"]), cpu + float(record["cpu_time"]), jobs + 1
    if not jobs:
        raise SystemExit("no write job timing record (.mintdim/*/benchmarks/write_*.tsv)")
    return wall, cpu, jobs


def one_round(k: int, workdir: str, cfg_path: str, cores: int, baseline: str | None) -> dict:
    for name in ("out", ".mintdim", "exports"):
        shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pythons = [("", sys.executable, env)] + ([("baseline ", baseline, None)] if baseline else [])
    build_wall, _cpu, _sys = timed([sys.executable, "-m", "mintdim", "build", cfg_path, "--cores", str(cores),
                              "--keep-intermediates"], workdir, env)
    write_s, write_cpu, jobs = write_stage(workdir)
    row = {"load": os.getloadavg()[0], "build": build_wall, "write": write_s, "write_cpu": write_cpu, "write_jobs": jobs}
    commands = []
    for tag, python, penv in pythons:
        for what in FORMATS + ("verify",):
            dest = ["--format", what, "--to", f"exports/{tag.strip() or 'this'}_{what}"] if what in FORMATS else []
            commands.append((f"{tag}{what}", [python, "-m", "mintdim", "export" if dest else "verify", "out"] + dest,
                             penv))
    for name, cmd, penv in commands if k % 2 == 0 else commands[::-1]:
        row[name], row[name + "_cpu"], row[name + "_sys"] = timed(cmd, workdir, penv)
    row["load_end"] = os.getloadavg()[0]
    return row


def report(rows: list[dict], cores: int, baseline: bool) -> None:
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    loads = sorted(r[k] for r in rows for k in ("load", "load_end"))
    print(f"\nmedians of {len(rows)} rounds (--cores {cores}, {int(med['write_jobs'])} write job(s); "
          f"1-minute load average {loads[0]:.1f} to {loads[-1]:.1f}):")
    print(f"  write stage (write jobs' s and cpu_time, summed): wall {med['write']:.3f} s, CPU {med['write_cpu']:.3f} s")
    for tag in [""] + (["baseline "] if baseline else []):
        for what in FORMATS + ("verify",):
            name = tag + what
            ratio = statistics.median(r[name] / r["write"] for r in rows)
            ratio_cpu = statistics.median(r[name + "_cpu"] / r["write_cpu"] for r in rows)
            label = f"mintdim {'export ' + what if what in FORMATS else 'verify'}"
            print(f"  {tag}{label:24s} wall {med[name]:.3f} s ({med[name] / med['write']:.2f}x the write stage; "
                  f"per round {ratio:.2f}x), CPU {med[name + '_cpu']:.3f} s ({ratio_cpu:.2f}x per round; "
                  f"kernel {med[name + '_sys']:.3f} s, {min(r[name + '_sys'] for r in rows):.2f} to "
                  f"{max(r[name + '_sys'] for r in rows):.2f} s)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True, help="comma-separated JSON keys")
    p.add_argument("--template", required=True, help="backslash escapes decoded as typed in a shell")
    p.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer.json")
    p.add_argument("--sizes", default="128,256,512,1024,2048,4096,8192,16384,32768,262144")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--baseline", default=None, metavar="PYTHON",
                   help="also time another MintDim's commands (its interpreter) on the same build: before/after")
    p.add_argument("--work", default=None, help="where the builds go (default: a temporary directory)")
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="mintdim-export-bench-", dir=args.work)
    config = {"source": {"files": [os.path.abspath(args.data)], "fields": [args.fields.split(",")],
                         "templates": [args.template.encode().decode("unicode_escape")]},
              "tokenizer": {"hf_json": {"path": os.path.abspath(args.tokenizer)}},
              "units": {"sizes": [[int(s) for s in args.sizes.split(",")]], "build_batch": [4096]},
              "output": {"dir": "out", "samples_per_shard": [10000]}}
    cfg_path = os.path.join(workdir, "cfg.yaml")
    with open(cfg_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f)
    rows = []
    try:
        for k in range(args.runs):
            rows.append(one_round(k, workdir, cfg_path, args.cores, args.baseline))
            print(f"round {k + 1}: " + ", ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                                                for key, value in rows[-1].items()), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(rows, args.cores, bool(args.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
