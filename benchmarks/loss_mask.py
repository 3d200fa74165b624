#!/usr/bin/env python3
"""Cost of loss masks: the same build with and without source.train_on, medians of alternating runs.

    python benchmarks/loss_mask.py --data FILE.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --train-on response --tokenizer tokenizer.json --cores 2 --runs 3

Prints wall and user+sys CPU (the whole process tree) of each variant, the
ratio with/without and each one's spread (min-max); the two alternate which
runs first in each round. Offsets for masks: byte-level BPE on MintDim's exact
engine computes them from the ids; other tokenizer.json files use encode_batch
instead of encode_batch_fast; SentencePiece returns them from the same call.
--tokenizer may be a model directory (the hf_dir kind; --pad-token if it names none).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml


def one_run(workdir: str, config: dict, cores: int) -> tuple[float, float]:
    shutil.rmtree(os.path.join(workdir, "out"), ignore_errors=True)
    shutil.rmtree(os.path.join(workdir, ".mintdim"), ignore_errors=True)
    path = os.path.join(workdir, "cfg.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mintdim", "build", path, "--cores", str(cores)],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True, help="comma-separated JSON keys")
    p.add_argument("--template", required=True, help="backslash escapes are decoded ('{a}\\n{b}')")
    p.add_argument("--train-on", required=True, help="comma-separated trained fields")
    p.add_argument(
        "--tokenizer",
        required=True,
        help=".model (SentencePiece), .json (tokenizer.json) or a model directory (hf_dir)",
    )
    p.add_argument("--pad-token", default=None, help="hf_dir: the pad_token, when the directory names none")
    p.add_argument("--sizes", default="128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    kind = "sentencepiece" if args.tokenizer.endswith(".model") else "hf_json"
    kind = "hf_dir" if os.path.isdir(args.tokenizer) else kind
    options = {"pad_token": args.pad_token} if kind == "hf_dir" and args.pad_token else {}
    base = {
        "source": {
            "files": [os.path.abspath(args.data)],
            "fields": [args.fields.split(",")],
            "templates": [args.template.encode().decode("unicode_escape")],
        },
        "tokenizer": {kind: {"path": os.path.abspath(args.tokenizer), **options}},
        "units": {"sizes": [[int(s) for s in args.sizes.split(",")]], "build_batch": [4096]},
        "output": {"dir": "out", "samples_per_shard": [10000]},
    }
    masked = yaml.safe_load(yaml.safe_dump(base))
    masked["source"]["train_on"] = [args.train_on.split(",")]
    results = {"without": [], "with": []}
    with tempfile.TemporaryDirectory(prefix="mintdim-mask-bench-") as work:
        for r in range(args.runs):
            order = (("without", base), ("with", masked))
            for name, cfg in order if r % 2 == 0 else order[::-1]:  # alternate: the load drifts
                wall, cpu = one_run(work, cfg, args.cores)
                results[name].append((wall, cpu))
                print(f"run {r + 1} {name:7s} train_on: wall {wall:6.2f} s  cpu {cpu:6.2f} s", flush=True)
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in results.items()
    }
    print(f"\nmedian without train_on: wall {med['without'][0]:.2f} s, cpu {med['without'][1]:.2f} s")
    print(f"median with    train_on: wall {med['with'][0]:.2f} s, cpu {med['with'][1]:.2f} s")
    print(
        f"ratio with/without: wall {med['with'][0] / med['without'][0]:.3f}x, "
        f"cpu {med['with'][1] / med['without'][1]:.3f}x"
    )
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        print(f"spread {name:7s} train_on: wall {min(walls):.2f}-{max(walls):.2f} s")


if __name__ == "__main__":
    main()
