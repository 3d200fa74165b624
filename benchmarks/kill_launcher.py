#!/usr/bin/env python
"""Kill `mintdim build` with kill -9 at random moments of a real build, and check what a user would.

    python benchmarks/kill_launcher.py --data ASSETS/data/sharegpt_pairs.jsonl \
        --tokenizer ASSETS/hf/minilm/tokenizer.json --kills 30 --in-finalize 10 [--work DIR] [--seed 1]

One clean build gives the reference bytes. Then, --kills times, in a fresh project directory: start
`mintdim build --cores 2`, `kill -9` only the launcher (the `mintdim build` process) at a random moment,
and check that 10 s later no process of that build runs any more (every process started for it carries
a tag in its environment), then that the next `mintdim build` gives the reference bytes. --in-finalize of
the kills land inside the finalize job: its run is stretched by --stretch seconds at its start and again
right after the output was placed (the test hold MINTDIM_TEST_SLEEP_AT, mintdim/faults.py), and the kill
comes at a uniformly random moment of that stretched run, from the moment its process appears; the
others at a uniformly random moment of the build. Each line says which stage scripts ran at the kill.
Prints one line per kill and the counts (the figures of docs/reliability.md).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import yaml

TAG = "MINTDIM_KILL_TAG"
SIZES = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 262144]  # the README table's ten unit sizes


def tagged(tag: str) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes started for the build with this tag."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"{TAG}={tag}".encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")[:120]))
        except OSError:
            pass
    return found


def jobs_of(tag: str) -> list[str]:
    """The stage scripts running for the build (scripts/<name>.py)."""
    return sorted(
        {
            part.split("/")[-1]
            for _pid, cmd in tagged(tag)
            for part in cmd.split()
            if part.endswith(".py") and "/scripts/" in part
        }
    )


def digest(out: str) -> dict[str, str]:
    tree = {}
    for base, _dirs, files in os.walk(out):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                tree[os.path.relpath(path, out)] = hashlib.file_digest(f, "sha256").hexdigest()
    return tree


def project(root: str, args) -> str:
    os.makedirs(root, exist_ok=True)
    cfg = {
        "source": {
            "files": [os.path.abspath(args.data)],
            "fields": [args.fields.split(",")],
            "templates": [args.template.encode("latin-1", "backslashreplace").decode("unicode_escape")],
        },
        "tokenizer": {
            "hf_json" if args.tokenizer.endswith(".json") else "sentencepiece": {
                "path": os.path.abspath(args.tokenizer)
            }
        },
        "units": {"sizes": [SIZES], "build_batch": [4096]},
        "output": {"dir": "out", "samples_per_shard": [10000]},
    }
    with open(os.path.join(root, "c.yaml"), "w") as f:
        yaml.safe_dump(cfg, f)
    return root


def build(root: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mintdim", "build", "c.yaml", "--cores", "2"],
        cwd=root,
        capture_output=True,
        text=True,
    )


def launch(root: str, tag: str, hold: float = 0.0) -> subprocess.Popen:
    env = dict(os.environ, **{TAG: tag})
    if hold:
        env["MINTDIM_TEST_SLEEP_AT"] = f"finalize:start={hold},finalize:moved={hold}"
    return subprocess.Popen(
        [sys.executable, "-m", "mintdim", "build", "c.yaml", "--cores", "2"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def timed_clean(root: str) -> tuple[dict, float, float]:
    """The reference bytes, the build's wall time, and how long its finalize job ran (its process)."""
    tag = uuid.uuid4().hex
    t0 = time.monotonic()
    proc = launch(root, tag)
    seen = None
    while proc.poll() is None:
        if "finalize_output.py" in jobs_of(tag):
            seen = seen or time.monotonic()
        elif seen and not isinstance(seen, tuple):
            seen = (seen, time.monotonic())
        time.sleep(0.005)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the clean build failed: see {root}/.mintdim/*/logs")
    final = seen[1] - seen[0] if isinstance(seen, tuple) else 0.2
    return digest(os.path.join(root, "out")), wall, final


def one_kill(root: str, at: str, wall: float, final: float, rng: random.Random, stretch: float) -> dict:
    tag = uuid.uuid4().hex
    proc = launch(root, tag, stretch if at == "finalize" else 0.0)
    t0 = time.monotonic()
    if at == "finalize":
        while "finalize_output.py" not in jobs_of(tag):
            if proc.poll() is not None:
                break
            time.sleep(0.002)
        time.sleep(rng.uniform(0, final + 2 * stretch))
    else:
        time.sleep(rng.uniform(0.2, wall))
    running = jobs_of(tag)
    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.monotonic() - t0
    proc.wait()
    t1 = time.monotonic()
    while tagged(tag) and time.monotonic() - t1 < 10:
        time.sleep(0.1)
    left = tagged(tag)
    for pid, _cmd in left:  # leave nothing behind whatever the outcome
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return {
        "at": at,
        "killed_at": killed_at,
        "running": running,
        "left": [cmd for _pid, cmd in left],
        "gone_after": time.monotonic() - t1,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--fields", default="prompt,response")
    p.add_argument("--template", default=r"{prompt}\n{response}")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--in-finalize", type=int, default=10)
    p.add_argument(
        "--stretch",
        type=float,
        default=0.5,
        help="seconds a finalize job to be killed is held at its start and after placing the output",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--work", default=None, help="where the project directories go (default: the system temp dir)"
    )
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="mintdim-kills-", dir=args.work)
    try:
        reference, wall, final = timed_clean(project(os.path.join(work, "clean"), args))
        print(
            f"clean build: {wall:.1f} s, its finalize job {final:.3f} s; {len(reference)} files", flush=True
        )
        plan = ["finalize"] * args.in_finalize + ["anywhere"] * (args.kills - args.in_finalize)
        rng.shuffle(plan)
        gone = same = in_finalize = 0
        for i, at in enumerate(plan, 1):
            root = project(os.path.join(work, f"k{i}"), args)
            k = one_kill(root, at, wall, final, rng, args.stretch)
            again = build(root)
            ok = again.returncode == 0 and digest(os.path.join(root, "out")) == reference
            gone += not k["left"]
            same += ok
            in_finalize += "finalize_output.py" in k["running"]
            print(
                f"kill {i:2d} ({at}): at {k['killed_at']:5.1f} s during {','.join(k['running']) or '-'}; "
                f"{'nothing running' if not k['left'] else 'STILL RUNNING: ' + '; '.join(k['left'])} "
                f"after {k['gone_after']:.1f} s; next build "
                f"{'byte-identical' if ok else f'DIFFERS rc={again.returncode}'}",
                flush=True,
            )
            if not ok:
                print(again.stderr[-2000:], flush=True)
            shutil.rmtree(root, ignore_errors=True)
        print(
            f"\n{gone}/{len(plan)} nothing left running after 10 s; {same}/{len(plan)} next build "
            f"byte-identical; {in_finalize} kills while the finalize job ran"
        )
        return 0 if gone == same == len(plan) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
