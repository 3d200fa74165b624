#!/usr/bin/env python3
"""`mintdim export` against the same build's own write stage, medians of interleaved rounds.

    python benchmarks/export.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/minilm/tokenizer.json --cores 2 --runs 5

Each round builds the output afresh (`mintdim build --keep-intermediates`; the write stage is the sum of
the `s` column of its write jobs' timing records, .mintdim/<build id>/benchmarks/write_*.tsv, as the
jobs write them), then exports it with `mintdim export` to hf and to megatron, each timed as a command
(wall, user+sys CPU of the process) and, in a second process, in-process after the imports (as the
write jobs' records count: the fork server has imported their modules before a job starts), with the
verification it begins with timed apart. Prints every round and the medians.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

IN_PROCESS = """
import json, sys, time
import pyarrow  # noqa: F401  (imports first, as the write jobs' records exclude theirs)
from mintdim.reading import export as X
out, fmt, dest = sys.argv[1:4]
c0, t0 = time.process_time(), time.perf_counter()
X.verified(out, lambda line: None)
c1, t1 = time.process_time(), time.perf_counter()
X.export(out, fmt, dest)
c2, t2 = time.process_time(), time.perf_counter()
print(json.dumps({"verify": t1 - t0, "verify_cpu": c1 - c0, "export": t2 - t1, "export_cpu": c2 - c1}))
"""


def timed(cmd: list[str], cwd: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stdout}{res.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), res.stdout


def write_stage(workdir: str) -> tuple[float, float, int]:
    """Wall seconds and CPU seconds of every write job together, and the number of write jobs."""
    wall, cpu, jobs = 0.0, 0.0, 0
    for path in glob.glob(os.path.join(workdir, ".mintdim", "*", "benchmarks", "write_*.tsv")):
        with open(path, encoding="utf-8") as f:
            record = next(csv.DictReader(f, delimiter="\t"))
        wall, cpu, jobs = wall + float(record["s"]), cpu + float(record["cpu_time"]), jobs + 1
    return wall, cpu, jobs


def one_round(workdir: str, cfg_path: str, cores: int) -> dict:
    for name in ("out", ".mintdim", "exports"):
        shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
    mintdim = [sys.executable, "-m", "mintdim"]
    build_wall, _cpu, _ = timed(mintdim + ["build", cfg_path, "--cores", str(cores), "--keep-intermediates"], workdir)
    write_s, write_cpu, jobs = write_stage(workdir)
    row = {"build_wall": build_wall, "write_stage": write_s, "write_cpu": write_cpu, "write_jobs": jobs}
    for fmt in ("hf", "megatron"):
        wall, cpu, _ = timed(mintdim + ["export", "out", "--format", fmt, "--to", f"exports/cli_{fmt}"], workdir)
        _w, _c, text = timed([sys.executable, "-c", IN_PROCESS, "out", fmt, f"exports/inproc_{fmt}"], workdir)
        inproc = json.loads(text)
        row.update({f"{fmt}_cli_wall": wall, f"{fmt}_cli_cpu": cpu, f"{fmt}_in_process": inproc["export"],
                    f"{fmt}_in_process_cpu": inproc["export_cpu"], f"{fmt}_verify": inproc["verify"],
                    f"{fmt}_verify_cpu": inproc["verify_cpu"]})
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True, help="comma-separated JSON keys")
    p.add_argument("--template", required=True, help="backslash escapes decoded as typed in a shell")
    p.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer.json")
    p.add_argument("--sizes", default="128,256,512,1024,2048,4096,8192,16384,32768,262144")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
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
            rows.append(one_round(workdir, cfg_path, args.cores))
            print(f"round {k + 1}: " + ", ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                                                for key, value in rows[-1].items()), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    print(f"\nmedians of {args.runs} rounds (--cores {args.cores}, {int(med['write_jobs'])} write job(s)):")
    w, wc = med["write_stage"], med["write_cpu"]
    print(f"  write stage (write jobs' records, summed): wall {w:.3f} s, CPU {wc:.3f} s")
    for fmt in ("hf", "megatron"):
        print(f"  export {fmt}: command wall {med[f'{fmt}_cli_wall']:.3f} s ({med[f'{fmt}_cli_wall'] / w:.1f}x), "
              f"CPU {med[f'{fmt}_cli_cpu']:.3f} s ({med[f'{fmt}_cli_cpu'] / wc:.1f}x); after the imports: wall "
              f"{med[f'{fmt}_in_process']:.3f} s ({med[f'{fmt}_in_process'] / w:.1f}x), CPU "
              f"{med[f'{fmt}_in_process_cpu']:.3f} s ({med[f'{fmt}_in_process_cpu'] / wc:.1f}x), of which verify "
              f"{med[f'{fmt}_verify']:.3f} s (CPU {med[f'{fmt}_verify_cpu']:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
