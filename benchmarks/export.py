#!/usr/bin/env python3
"""`mintdim export` as a command against the same build's own write stage, medians of interleaved rounds.

    python benchmarks/export.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/minilm/tokenizer.json --cores 2 --runs 5

Every command is timed right after its own build of the output (`mintdim build --keep-intermediates`), as a
user runs it: where the host takes free memory back, the memory one export's output took (196 MB of page
cache for hf on the ShareGPT build) changes what the next command pays. With one build per round, an hf
export timed after another hf export of the same round took 0.80 to 0.98 s, where the first hf export of a
round took 0.42 to 0.76 s. Every stage job is a fresh process, and its timing record's `s` column
(.mintdim/<build id>/benchmarks/write_*.tsv) is its life up to the end of its work, interpreter start and
imports included (the record is written then, before the exit): the write stage is the sum of `s` (and of
`cpu_time`) over the write jobs of the output. Each command (`mintdim export OUT --format hf`, `--format
megatron`, and `mintdim verify OUT`, which every export begins with) is timed from start to end (wall,
user+sys CPU of the process, and the kernel's part of it) and divided by its own build's write stage. So is
the floor under any hf export: a Python that imports nothing writing as many bytes as the hf export's Arrow
files (an untimed export first measures them) to a new file, 1 MB per write() (WRITE_ONLY), what the page
cache costs there. The order of the commands alternates from round to round (the machine's load drifts).
`--baseline PYTHON` also times another MintDim's commands (its interpreter, e.g. a virtualenv of an earlier
commit) in every round, each after a build of its own: before/after. Prints every round with the load
average, then the medians and the medians of each round's ratios.
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
# The floor under any hf export: its Arrow files' bytes written to a new file, 1 MB per write(), by a
# Python that imports nothing (no MintDim): what the kernel's page cache alone costs in the same place.
WRITE_ONLY = (
    "import os, sys\n"
    "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)\n"
    "piece, left = memoryview(bytes(1 << 20)), int(sys.argv[2])\n"
    "while left > 0:\n"
    "    left -= os.write(fd, piece[:left])\n"
    "os.close(fd)\n"
)


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


def this_env() -> dict:
    """The environment that runs this checkout's MintDim."""
    return dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


def fresh_build(workdir: str, cfg_path: str, cores: int, env: dict) -> tuple[float, float, int]:
    """Build the output afresh; the write stage of that build (write_stage)."""
    for name in ("out", ".mintdim", "exports"):
        shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
    if os.path.exists(os.path.join(workdir, "write_only.bin")):
        os.remove(os.path.join(workdir, "write_only.bin"))
    timed(
        [sys.executable, "-m", "mintdim", "build", cfg_path, "--cores", str(cores), "--keep-intermediates"],
        workdir,
        env,
    )
    return write_stage(workdir)


def hf_bytes(workdir: str, cfg_path: str, cores: int, env: dict) -> int:
    """The size of the hf export's Arrow files (an export that is not timed)."""
    fresh_build(workdir, cfg_path, cores, env)
    timed(
        [sys.executable, "-m", "mintdim", "export", "out", "--format", "hf", "--to", "exports/size"],
        workdir,
        env,
    )
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(workdir, "exports", "size", "*.arrow")))


def one_round(k: int, workdir: str, cfg_path: str, cores: int, baseline: str | None, nbytes: int) -> dict:
    env = this_env()
    pythons = [("", sys.executable, env)] + ([("baseline ", baseline, None)] if baseline else [])
    commands = [
        ("write_only", [sys.executable, "-I", "-S", "-c", WRITE_ONLY, "write_only.bin", str(nbytes)], None)
    ]
    for tag, python, penv in pythons:
        for what in FORMATS + ("verify",):
            dest = (
                ["--format", what, "--to", f"exports/{tag.strip() or 'this'}_{what}"]
                if what in FORMATS
                else []
            )
            commands.append(
                (
                    f"{tag}{what}",
                    [python, "-m", "mintdim", "export" if dest else "verify", "out"] + dest,
                    penv,
                )
            )
    row = {"load": os.getloadavg()[0]}
    for name, cmd, penv in commands if k % 2 == 0 else commands[::-1]:
        row[name + "_write"], row[name + "_write_cpu"], row["write_jobs"] = fresh_build(
            workdir, cfg_path, cores, env
        )
        row[name], row[name + "_cpu"], row[name + "_sys"] = timed(cmd, workdir, penv)
    row["write_only_bytes"] = nbytes
    builds = [name for name, _cmd, _env in commands]
    row["write"] = statistics.median(row[name + "_write"] for name in builds)
    row["write_cpu"] = statistics.median(row[name + "_write_cpu"] for name in builds)
    row["load_end"] = os.getloadavg()[0]
    return row


def report(rows: list[dict], cores: int, baseline: bool) -> None:
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    loads = sorted(r[k] for r in rows for k in ("load", "load_end"))
    print(
        f"\nmedians of {len(rows)} rounds (--cores {cores}, {int(med['write_jobs'])} write job(s); "
        f"1-minute load average {loads[0]:.1f} to {loads[-1]:.1f}):"
    )
    print(
        f"  write stage (write jobs' s and cpu_time, summed; the median of each round's builds): "
        f"wall {med['write']:.3f} s, CPU {med['write_cpu']:.3f} s"
    )
    for tag, what in [("", "write_only")] + [
        (t, w) for t in [""] + (["baseline "] if baseline else []) for w in FORMATS + ("verify",)
    ]:
        name = tag + what
        ratio = statistics.median(r[name] / r[name + "_write"] for r in rows)  # its own build's write stage
        ratio_cpu = statistics.median(r[name + "_cpu"] / r[name + "_write_cpu"] for r in rows)
        label = (
            f"{rows[0]['write_only_bytes'] / 1e6:.0f} MB, 1 MB per write()"
            if what == "write_only"
            else f"mintdim {'export ' + what if what in FORMATS else 'verify'}"
        )
        print(
            f"  {tag}{label:24s} wall {med[name]:.3f} s ({med[name] / med['write']:.2f}x the write stage; "
            f"per round {ratio:.2f}x), CPU {med[name + '_cpu']:.3f} s ({ratio_cpu:.2f}x per round; "
            f"kernel {med[name + '_sys']:.3f} s, {min(r[name + '_sys'] for r in rows):.2f} to "
            f"{max(r[name + '_sys'] for r in rows):.2f} s)"
        )


def build_arguments(p: argparse.ArgumentParser) -> None:
    """The build every command here is timed on: its data, template, tokenizer, sizes, cores, rounds."""
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True, help="comma-separated JSON keys")
    p.add_argument("--template", required=True, help="backslash escapes decoded as typed in a shell")
    p.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer.json")
    p.add_argument("--sizes", default="128,256,512,1024,2048,4096,8192,16384,32768,262144")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)


def write_config(args, workdir: str) -> str:
    """The build's config as workdir/cfg.yaml (its path)."""
    config = {
        "source": {
            "files": [os.path.abspath(args.data)],
            "fields": [args.fields.split(",")],
            "templates": [args.template.encode().decode("unicode_escape")],
        },
        "tokenizer": {"hf_json": {"path": os.path.abspath(args.tokenizer)}},
        "units": {"sizes": [[int(s) for s in args.sizes.split(",")]], "build_batch": [4096]},
        "output": {"dir": "out", "samples_per_shard": [10000]},
    }
    cfg_path = os.path.join(workdir, "cfg.yaml")
    with open(cfg_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f)
    return cfg_path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build_arguments(p)
    p.add_argument(
        "--baseline",
        default=None,
        metavar="PYTHON",
        help="also time another MintDim's commands (its interpreter) on the same build: before/after",
    )
    p.add_argument("--work", default=None, help="where the builds go (default: a temporary directory)")
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="mintdim-export-bench-", dir=args.work)
    cfg_path = write_config(args, workdir)
    rows = []
    try:
        nbytes = hf_bytes(workdir, cfg_path, args.cores, this_env())
        for k in range(args.runs):
            rows.append(one_round(k, workdir, cfg_path, args.cores, args.baseline, nbytes))
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
    report(rows, args.cores, bool(args.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
