"""A small project and ways to run it as a user does: `mintdim build` in a subprocess, killed or not.

Shared by the run-layer tests (test_reliability.py, test_run_cases.py, test_run_states.py). Builds use
40 GSM8K rows and the shipped SentencePiece model, so each takes a few seconds.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
import yaml
from conftest import SNAKEFILE, SP_MODEL, gsm8k_rows, tree_bytes

from mintdim.reading.verify import verify

SIZES = [256, 512]
TAG_ENV = "MINTDIM_TEST_RUN_TAG"  # set for a launcher in a test: every process of its build inherits it


def rows(n: int = 40) -> list[dict]:
    return gsm8k_rows(0, n)


def config(**over) -> dict:
    cfg = {
        "source": {
            "files": ["d.jsonl"],
            "fields": [["prompt", "response"]],
            "templates": ["{prompt}\n{response}"],
        },
        "tokenizer": {"sentencepiece": {"path": SP_MODEL}},
        "units": {"sizes": [SIZES], "build_batch": [16]},
        "output": {"dir": "out", "samples_per_shard": [10]},
    }
    for key, value in over.items():
        if key in ("dir", "samples_per_shard"):
            cfg["output"][key] = value
        elif key == "sizes":
            cfg["units"]["sizes"] = value
        else:
            cfg[key] = value
    return cfg


def write_rows(root, data: list[dict], name: str = "d.jsonl") -> str:
    path = os.path.join(str(root), name)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in data)
    return path


def project(root, name: str = "c.yaml", **over) -> str:
    root = str(root)
    os.makedirs(root, exist_ok=True)
    if not os.path.exists(os.path.join(root, "d.jsonl")):
        write_rows(root, rows())
    with open(os.path.join(root, name), "w", encoding="utf-8") as f:
        yaml.safe_dump(config(**over), f)
    return root


def cli(root, *args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mintdim", *args],
        cwd=str(root),
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
        timeout=300,
        **kw,
    )


def build(root, name: str = "c.yaml", *args, env=None, **kw) -> subprocess.CompletedProcess:
    return cli(root, "build", name, "--cores", "2", *args, env=env, **kw)


def snakemake_cmd(root, name: str = "c.yaml") -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        str(root),
        "--configfile",
        os.path.join(str(root), name),
        "--cores",
        "2",
        "--workflow-profile",
        "none",
        "--rerun-incomplete",
    ]


def logs_text(root) -> str:
    """Every log MintDim and Snakemake wrote for builds in root, as one text (to look for tracebacks)."""
    text = []
    for path in glob.glob(os.path.join(str(root), ".mintdim", "*", "logs", "*.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            text.append(f.read())
    return "\n".join(text)


def out_tree(root, out: str = "out") -> dict:
    path = os.path.join(str(root), out)
    return tree_bytes(path) if os.path.isdir(path) else {}


def clean_build(tmp_path_factory) -> dict:
    """The output of one clean, uninterrupted build of project()'s defaults."""
    root = project(tmp_path_factory.mktemp("clean"))
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert verify(os.path.join(root, "out")).ok
    return out_tree(root)


@pytest.fixture(scope="module")
def reference(clean_reference) -> dict:
    """The output of one clean, uninterrupted build: every other build must give these bytes (built once
    per session: conftest.py's clean_reference)."""
    return clean_reference


class Launch:
    """`mintdim build` started in the background, in a session of its own (as a terminal runs it), with a tag
    in its environment that every process of the build inherits: `alive()` finds them all."""

    def __init__(self, root, *args, name: str = "c.yaml", env=None):
        self.root = str(root)
        self.tag = uuid.uuid4().hex
        self.log = open(os.path.join(self.root, f"launch-{self.tag[:8]}.out"), "w+")
        env = dict(os.environ, **(env or {}), **{TAG_ENV: self.tag})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mintdim", "build", name, "--cores", "2", *args],
            cwd=self.root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> list[tuple[int, str]]:
        return processes_tagged(self.tag)

    def wait_until(self, condition, timeout: float = 120) -> bool:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if condition():
                return True
            if self.proc.poll() is not None:
                return bool(condition())
            time.sleep(0.02)
        return False

    def held(self) -> list[tuple[int, str]]:
        """The processes of the build asleep in a test hold (MINTDIM_TEST_SLEEP_AT): the jobs held there."""
        return [
            (pid, cmd)
            for pid, cmd in self.alive()
            if pid != self.proc.pid and "snakemake" not in cmd and asleep(pid)
        ]

    def kill_launcher(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def kill_all(self) -> None:
        """kill -9 of everything of the build at once (a batch job's limit, a killed session)."""
        for pid, _ in self.alive():
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        for pid, _ in self.alive():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()

    def gone_within(self, seconds: float = 10.0) -> list[tuple[int, str]]:
        """What of the build is still running `seconds` after now (nothing, when all is well)."""
        t0 = time.monotonic()
        while self.alive() and time.monotonic() - t0 < seconds:
            time.sleep(0.1)
        return self.alive()

    def output(self) -> str:
        if self.log.closed:
            return self.text
        self.log.seek(0)
        return self.log.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill_all()
        self.text = self.output()
        self.log.close()


def processes_tagged(tag: str) -> list[tuple[int, str]]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"{TAG_ENV}={tag}".encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie runs nothing: it waits for its parent to reap it
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")[:160]))
        except OSError:
            pass
    return found


def asleep(pid: int) -> bool:
    """In a timed sleep (time.sleep: the kernel's nanosleep), as a job held by MINTDIM_TEST_SLEEP_AT is."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return "nanosleep" in f.read()
    except OSError:
        return False


def job_log_started(root, job: str):
    """A condition: the job's log (`.mintdim/<id>/logs/<job>*.log`) exists, i.e. the job has started."""
    return lambda: bool(glob.glob(os.path.join(str(root), ".mintdim", "*", "logs", f"{job}*.log")))
