"""Reliability, end to end, as a user meets it: `kill -9` at any stage and the same command again,
two builds at once, a full disk or a file size limit, inputs that cannot be read.

A build is held at a named point (MINTDIM_TEST_SLEEP_AT=POINT=SECONDS, mintdim/faults.py) and killed from
outside, as a user or a scheduler kills it: the whole build (`kill -9` of a terminal session or a batch
job), the `mintdim build` process alone, or only Snakemake (tests/buildkit.py: Launch). Builds use 40
GSM8K rows, so each takes a few seconds; independent scenarios run side by side.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from buildkit import (
    SIZES,
    Launch,
    build,
    cli,
    config,
    out_tree,
    project,
    reference,  # noqa: F401  (a fixture)
    rows,
    snakemake_cmd,
    write_rows,
)
from conftest import SNAKEFILE, tree_bytes

from mintdim import errors as E
from mintdim.formats import records
from mintdim.formats.layout import Layout
from mintdim.progress import BENCH_COLUMNS, JobLog
from mintdim.reading.verify import verify
from mintdim.run import guard

FAILED = records.FAILED_MARKER


def msgpack_left(root) -> list[str]:
    return [
        os.path.join(b, f)
        for b, _d, fs in os.walk(os.path.join(str(root), ".mintdim"))
        for f in fs
        if f.endswith(".msgpack")
    ]


def snakemake_locks(root) -> list[str]:
    d = os.path.join(str(root), ".snakemake", "locks")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def assert_nothing_looks_complete(out, reference: dict) -> str:
    """No output directory holding stats.json or a shard without UNIT_BUILD_FAILED.md, unless it is
    the finished output (a kill after the final rename: the output is complete). Returns what it saw."""
    if not os.path.exists(out):
        return "absent"
    tree = tree_bytes(out)
    looks = sorted(rel for rel in tree if rel == "stats.json" or rel.endswith(".bin"))
    marked = any(os.path.basename(rel) == FAILED for rel in tree)
    if tree == reference:
        assert verify(str(out)).ok
        return "complete"
    assert not looks or marked, f"{out} looks complete but is not: {looks[:5]} without {FAILED}"
    return "markers" if marked else ("empty" if not tree else f"partial {sorted(tree)}")


# ---------------------------------------------------------------------------------------------
# 1. crash and rerun
# ---------------------------------------------------------------------------------------------

CHAIN = ["tokenize:start", "plan:end", "write:shard", "aggregate:end", "finalize:moved"]
# Write and aggregate run side by side after plan: held together, so that the next run of the chain still
# has its job to be killed in
HELD = {
    "write:shard": ["aggregate:start"],
    "aggregate:end": ["write:start"],
    "write:start": ["aggregate:start"],
    "aggregate:start": ["write:start"],
}


def _held(root: str, point: str, *args, out: str = "out", how: str = "all") -> dict:
    """`mintdim build` held at `point` (and the points run beside it), then killed: the whole build (`all`),
    or the launcher alone (`launcher`, or a signal to it). What was left, and what still ran 10 s later."""
    holds = ",".join(f"{p}=60" for p in [point] + HELD.get(point, []))
    run = Launch(root, *args, env={"MINTDIM_TEST_SLEEP_AT": holds})
    try:
        assert run.wait_until(lambda: bool(run.held())), run.output()[-3000:]
        time.sleep(0.3)
        if how == "all":
            run.kill_all()
        elif how == "launcher":
            run.kill_launcher()
        else:
            os.kill(run.proc.pid, how)
            run.proc.wait(timeout=60)
        survivors = run.gone_within(10)
    finally:
        run.close()
    out = os.path.join(root, out)
    return {
        "point": point,
        "rc": run.proc.returncode,
        "text": run.output(),
        "survivors": survivors,
        "stale": snakemake_locks(root),
        "tree": tree_bytes(out) if os.path.isdir(out) else {},
        "seen": assert_nothing_looks_complete(out, _REFERENCE[0]) if _REFERENCE else None,
    }


_REFERENCE: list[dict] = []


def _finish(root: str, out: str = "out") -> dict:
    again = build(root)  # the same command, nothing else done in between
    out = os.path.join(root, out)
    return {
        "again": again,
        "tree": tree_bytes(out) if os.path.isdir(out) else {},
        "locks": snakemake_locks(root),
        "msgpack": msgpack_left(root),
        "text": again.stderr + again.stdout,
    }


def _assert_finished(what, done: dict, reference: dict) -> None:
    assert done["again"].returncode == 0, (what, done["text"][-3000:])
    assert "Traceback" not in done["text"]
    assert done["tree"] == reference, what
    assert done["locks"] == [] and done["msgpack"] == [], what


def _chain(root: str) -> list[dict]:
    """Killed at each stage in turn: every run resumes what the killed one left, and is killed later on."""
    project(root)
    return [_held(root, point) for point in CHAIN] + [_finish(root)]


def _job_dies(root: str) -> list[dict]:
    """Only the job dies (SIGKILL of the write job): Snakemake fails the build, the markers go in."""
    project(root)
    failed = build(root, env={"MINTDIM_TEST_KILL_AT": "write:shard"})
    seen = assert_nothing_looks_complete(os.path.join(root, "out"), _REFERENCE[0])
    return [{"rc": failed.returncode, "text": failed.stderr, "seen": seen}, _finish(root)]


def _across_file_systems(root: str, other: str) -> list[dict]:
    """Work directory and output on different file systems: the tree is copied beside the output first (a
    hidden directory), then renamed into place. A kill during the copy leaves the output as it was."""
    out = os.path.join(other, "out")
    project(root, dir=out)
    return [_held(root, "finalize:copied", out=out), _finish(root, out)]


def _orphan(root: str) -> list[dict]:
    """Only the main Snakemake process of a direct `snakemake` run (with the workflow profile, as a user runs
    it) is killed: its running job lives on (held 15 s). A rerun started at once waits for that job before its
    first job, then completes."""
    project(root)
    env = dict(os.environ, MINTDIM_TEST_SLEEP_AT="tokenize:start=15")
    as_a_user = [c for c in snakemake_cmd(root) if c not in ("--workflow-profile", "none")]
    with open(os.path.join(root, "first.log"), "w") as log:
        # no pipe: the orphan does not hold us up
        first = subprocess.Popen(
            as_a_user, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        t0 = time.monotonic()
        while not _running(root, "tokenize_chunk.py"):
            assert first.poll() is None and time.monotonic() - t0 < 120
            time.sleep(0.05)
        first.kill()
        rc = first.wait()
    again = subprocess.run(as_a_user, cwd=root, capture_output=True, text=True, timeout=300)
    return [
        {"rc": rc, "stale": snakemake_locks(root)},
        {
            "again": again,
            "text": again.stdout + again.stderr,
            "locks": snakemake_locks(root),
            "msgpack": msgpack_left(root),
            "tree": tree_bytes(os.path.join(root, "out")),
        },
    ]


def test_sigkill_at_every_stage_then_the_same_command_completes_byte_identical(tmp_path, reference):
    _REFERENCE[:] = [reference]
    shm = "/dev/shm"
    other_fs = os.path.isdir(shm) and os.stat(shm).st_dev != os.stat(str(tmp_path)).st_dev
    other = os.path.join(shm, f"mintdim-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            chain = pool.submit(_chain, str(tmp_path / "chain"))
            dies = pool.submit(_job_dies, str(tmp_path / "dies"))
            orphan = pool.submit(_orphan, str(tmp_path / "orphan"))
            if other_fs:
                os.makedirs(other)
                copy = pool.submit(_across_file_systems, str(tmp_path / "copy"), other)
            chain, dies, orphan = chain.result(), dies.result(), orphan.result()
            copy = copy.result() if other_fs else None
            left_beside = sorted(os.listdir(other)) if other_fs else []
    finally:
        shutil.rmtree(other, ignore_errors=True)

    *kills, done = chain
    for k in kills:
        assert k["survivors"] == [] and k["stale"] == [], (k["point"], k["survivors"], k["stale"])
    assert [k["seen"] for k in kills] == ["empty"] * 4 + ["complete"]  # empty: claimed, nothing in it yet
    _assert_finished("chain", done, reference)

    k, done = dies
    assert k["rc"] == 1 and k["seen"] == "markers" and "BuildError" in k["text"] and "killed" in k["text"], k
    _assert_finished("job dies", done, reference)

    k, done = orphan
    assert k["rc"] == -signal.SIGKILL
    _assert_finished("orphan", done, reference)
    assert "waiting for jobs of an earlier, killed run of this build" in done["text"]
    assert k["stale"] == []  # the workflow profile runs Snakemake without its lock files too

    if copy is None:
        pytest.skip("the copy across file systems needs /dev/shm on another file system (the rest passed)")
    k, done = copy
    assert k["survivors"] == [] and k["seen"] == "empty", k  # the copy beside it was cut short
    _assert_finished("copy", done, reference)
    assert left_beside == ["out"]  # the hidden copy became the output: nothing else beside it


# --- the launcher alone is stopped (kill PID, timeout, a closed terminal, kill -9 of `mintdim build`) ---

STAGES = ["validate", "tokenize", "plan", "write", "aggregate", "finalize"]


def _launcher_chain(root: str, how) -> list[dict]:
    project(root)
    return [_held(root, f"{stage}:start", how=how) for stage in STAGES] + [_finish(root)]


def test_stopping_only_the_launcher_stops_snakemake_and_its_jobs_and_the_rerun_completes(tmp_path, reference):
    """`kill -TERM` or `kill -9` of the `mintdim build` process alone, at every stage.
    Within 10 s nothing of the build runs (Snakemake used to run on, hang on a broken pipe, or deadlock in
    its own SIGTERM handler), and the same command afterwards completes (it used to say `This build is
    already running`)."""
    _REFERENCE[:] = [reference]
    with ThreadPoolExecutor(max_workers=2) as pool:
        chains = {
            how: pool.submit(_launcher_chain, str(tmp_path / str(how)), how)
            for how in (signal.SIGTERM, "launcher")
        }
        chains = {how: f.result() for how, f in chains.items()}
    for how, (*kills, done) in chains.items():
        for k in kills:
            assert k["survivors"] == [], (how, k["point"], k["survivors"], k["text"][-2000:])
            if how == signal.SIGTERM:  # the launcher stops the build and says so
                assert k["rc"] == 128 + signal.SIGTERM, (k["point"], k["text"][-2000:])
                assert "The build was stopped (SIGTERM)" in k["text"] and "Traceback" not in k["text"]
            else:
                assert k["rc"] == -signal.SIGKILL
        _assert_finished(how, done, reference)
        assert "already running" not in done["text"]


# kills of the random-moment test below (default 3; the long form: 20) and the seed of their moments (_SEED,
# default 35); tests/README.md
GROUP_KILLS_ENV = "MINTDIM_TEST_GROUP_KILLS"
STOPPING = "waiting for an earlier run of this build to stop"


def _group_killed_then_rerun(root: str, delay: float | None) -> dict:
    """`mintdim build` started in a session of its own (a terminal, a batch job), `kill -9` of its process
    group (Snakemake runs in a session of its own and lives on, stopping) `delay` seconds after the start;
    then the same command at once. What the rerun said and left.

    delay None: the kill comes once the build is held inside write, with Snakemake paused (SIGSTOP) until
    the rerun says it waits, then let go (SIGCONT): the rerun meets a Snakemake still stopping whatever
    the machine's load (unpaused, it stops within about a second, which a loaded machine can spend
    starting the rerun)."""
    run = Launch(root, env={"MINTDIM_TEST_SLEEP_AT": "write:start=60"} if delay is None else None)
    snakemake = None
    try:
        if delay is None:
            assert run.wait_until(lambda: bool(run.held())), run.output()[-3000:]
            snakemake = next(pid for pid, cmd in run.alive() if " -m snakemake " in cmd)
            os.kill(snakemake, signal.SIGSTOP)
        else:
            time.sleep(delay)
        landed = run.proc.poll() is None
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        run.proc.wait()
        with open(os.path.join(root, "rerun.log"), "w+") as log:
            again = subprocess.Popen(
                [sys.executable, "-m", "mintdim", "build", "c.yaml", "--cores", "2"],
                cwd=root,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
            if snakemake is not None:
                t0 = time.monotonic()
                while (
                    STOPPING not in open(log.name).read()
                    and again.poll() is None
                    and time.monotonic() - t0 < 120
                ):
                    time.sleep(0.05)
                os.kill(snakemake, signal.SIGCONT)
            again.wait(timeout=300)
            log.seek(0)
            text = log.read()
        survivors = run.gone_within(10)
    finally:
        if snakemake is not None:
            try:
                os.kill(snakemake, signal.SIGCONT)
            except OSError:
                pass
        run.close()
    return {
        "landed": landed,
        "rc": again.returncode,
        "text": text,
        "tree": out_tree(root),
        "survivors": survivors,
    }


def _assert_rerun_went_on(what, k: dict, reference: dict) -> None:
    assert k["rc"] == 0 and "already running" not in k["text"], (what, k["text"][-3000:])
    assert "Traceback" not in k["text"], (what, k["text"][-3000:])
    assert k["tree"] == reference, what
    assert k["survivors"] == [], (what, k["survivors"])
    assert k["text"].count(STOPPING) <= 1, (what, k["text"][-3000:])


def test_kill_9_of_the_launchers_group_then_the_same_command_at_once_waits_and_completes(tmp_path, reference):
    """A closed terminal or a batch system kills the process group of `mintdim build`; Snakemake, in its
    own session, is still stopping its jobs when the same command runs again at once. The rerun says once
    that it waits for that run to stop, then builds the bytes of an uninterrupted build (it used to refuse:
    `This build is already running (process N)`, exit 1)."""
    k = _group_killed_then_rerun(project(tmp_path), None)
    _assert_rerun_went_on("held in write", k, reference)
    assert k["landed"] and k["text"].count(STOPPING) == 1, k["text"][-3000:]


def test_kill_9_of_the_launchers_group_at_random_moments_then_the_same_command_at_once_completes(
    tmp_path, reference
):
    """The same, at uniformly random moments of a build (MINTDIM_TEST_GROUP_KILLS kills, default 3; the long
    form is 20): every rerun exits 0 with the bytes of an uninterrupted build."""
    import random

    kills = int(os.environ.get(GROUP_KILLS_ENV, "3"))
    t0 = time.monotonic()
    assert build(project(tmp_path / "timed")).returncode == 0
    took = time.monotonic() - t0
    rng = random.Random(int(os.environ.get(GROUP_KILLS_ENV + "_SEED", "35")))
    results = []
    for n in range(kills):
        delay = rng.uniform(0, 0.9 * took)
        results.append((round(delay, 2), _group_killed_then_rerun(project(tmp_path / f"k{n}"), delay)))
    for delay, k in results:
        _assert_rerun_went_on(f"killed at {delay} s of a {took:.1f} s build", k, reference)
    assert sum(k["landed"] for _d, k in results) >= kills // 2, [d for d, _k in results]


def test_ctrl_c_at_mintdim_build_stops_snakemake_in_its_own_group(tmp_path, reference):
    """Snakemake runs in a process group of its own, so a terminal's Ctrl-C (SIGINT to the launcher's
    group) reaches only the launcher: it stops the build and ends with `interrupted` (exit 130)."""
    _REFERENCE[:] = [reference]
    root = project(tmp_path)
    k = _held(root, "write:start", how=signal.SIGINT)
    assert k["survivors"] == [], k
    assert k["rc"] == 130 and k["text"].rstrip().endswith("interrupted") and "Traceback" not in k["text"], k[
        "text"
    ]
    _assert_finished("ctrl-c at mintdim build", _finish(root), reference)


def test_a_closed_terminal_sighup_to_the_launcher_stops_the_build(tmp_path, reference):
    _REFERENCE[:] = [reference]
    root = project(tmp_path)
    k = _held(root, "tokenize:start", how=signal.SIGHUP)
    assert k["survivors"] == [], k
    assert k["rc"] == 128 + signal.SIGHUP and "The build was stopped (SIGHUP)" in k["text"], k["text"][-2000:]
    _assert_finished("sighup", _finish(root), reference)


def test_ctrl_c_under_a_direct_snakemake_run_says_interrupted_without_a_traceback(tmp_path, reference):
    """SIGINT to the whole process group (Ctrl-C in a terminal) while a job runs."""
    root = project(tmp_path)
    env = dict(os.environ, MINTDIM_TEST_SLEEP_AT="plan:start=60")
    proc = subprocess.Popen(
        snakemake_cmd(root),
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    t0 = time.monotonic()
    while not _running(root, "plan_units.py", held=True):  # inside the job's body
        assert proc.poll() is None and time.monotonic() - t0 < 120
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "KeyboardInterrupt" not in text and "Traceback" not in text, text[-4000:]
    assert "A job stopped without a MintDim error" not in text
    assert "The build was interrupted (Ctrl-C) during plan_o0." in text, text[-3000:]
    _assert_finished("ctrl-c", _finish(root), reference)


def test_a_stop_while_a_job_starts_leaves_no_traceback():
    """A SIGINT to the build's group (Ctrl-C, the launcher stopping it) that lands while a job's interpreter
    starts up: without the Snakefile's shell prefix (SIGINT ignored until the script takes it again),
    Python ends with "Fatal Python error ... KeyboardInterrupt" or a traceback in the log (seen for 11 of
    40 delays between 0 and 120 ms here); with it, never."""
    import re

    with open(SNAKEFILE, encoding="utf-8") as f:
        prefix = re.search(r'shell\.prefix\("(.*)"\)', f.read()).group(1)
    script = os.path.join(os.path.dirname(SNAKEFILE), "scripts", "plan_units.py")
    for delay_ms in range(0, 120, 3):
        proc = subprocess.Popen(
            ["bash", "-c", f"{prefix}{sys.executable} {script} --help"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        time.sleep(delay_ms / 1000)
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except OSError:
            pass
        err = proc.communicate(timeout=60)[1]
        assert b"Traceback" not in err and b"Fatal Python error" not in err, (delay_ms, err[-2000:])


def _running(root: str, script: str, held: bool = False) -> bool:
    """A job running `script` (scripts/<script>) in the project `root` (a stage job's working directory);
    held: and asleep in its test hold (MINTDIM_TEST_SLEEP_AT), inside the job's body."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if script.encode() not in f.read() or os.path.realpath(
                    f"/proc/{pid}/cwd"
                ) != os.path.realpath(root):
                    continue
            with open(f"/proc/{pid}/wchan") as f:
                if not held or "nanosleep" in f.read():
                    return True
        except OSError:
            continue
    return False


def test_a_run_lock_left_by_a_killed_run_is_taken_over_with_a_line_saying_so(tmp_path, monkeypatch):
    from mintdim.config import resolve

    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    b = resolve(config())
    lay = Layout(b.work_dir, b.build_id)
    os.makedirs(lay.root)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(guard.run_lock_path(lay), "w") as f:  # what a killed run leaves: its pid, no flock
        f.write(f"{dead.pid}\n")
    said = []
    g = guard.BuildGuard(b, lay, echo=said.append).start()
    try:
        assert any(f"taking over the run lock of process {dead.pid}" in line for line in said), said
    finally:
        g.release()
    assert open(guard.run_lock_path(lay)).read() == ""  # a run that ends clears its pid
    said.clear()
    g = guard.BuildGuard(b, lay, echo=said.append).start()
    g.release()
    assert not any("taking over" in line for line in said)


def test_orphan_wait_has_a_limit_and_names_the_process(tmp_path, monkeypatch):
    from mintdim.config import resolve
    from mintdim.formats.layout import Layout

    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    b = resolve(config())
    lay = Layout(b.work_dir, b.build_id)
    os.makedirs(lay.root)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from mintdim.run.guard import job_lock; "
            f"lock = job_lock({lay.root!r}); print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(guard.ORPHAN_WAIT_ENV, "0.5")
        said = []
        with pytest.raises(E.BuildError) as info:
            guard.BuildGuard(b, lay, echo=said.append).wait_for_orphans()
        assert str(holder.pid) in str(info.value) and "still running" in str(info.value)
        assert said and str(holder.pid) in said[0]
    finally:
        holder.kill()
        holder.wait()
    guard.BuildGuard(b, lay).wait_for_orphans()  # gone: no wait


# ---------------------------------------------------------------------------------------------
# 2. concurrency
# ---------------------------------------------------------------------------------------------


def _wait_for(cond, proc, timeout=60.0):
    t0 = time.monotonic()
    while not cond():
        assert proc.poll() is None, "the first build ended too early"
        assert time.monotonic() - t0 < timeout
        time.sleep(0.1)


def test_concurrent_builds_one_wins_the_other_fails_clearly_neither_is_harmed(tmp_path, reference):
    """A runs (held 25 s inside tokenize). Meanwhile: the same build again (mintdim build, and a direct
    snakemake run), and another build into A's output directory from another work directory: each fails
    at once with a clear error. A third build sharing A's work directory, into its own output, completes.
    A completes with the clean build's bytes."""
    root = project(tmp_path)
    project(tmp_path, "other.yaml", samples_per_shard=[5], work_dir="wd2")
    project(tmp_path, "third.yaml", dir="out_c")
    first = subprocess.Popen(
        [sys.executable, "-m", "mintdim", "build", "c.yaml", "--cores", "2"],
        cwd=root,
        env=dict(os.environ, MINTDIM_TEST_SLEEP_AT="tokenize:start=25"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = os.path.join(root, "out")
    _wait_for(lambda: os.path.isdir(out), first)  # A holds its output (onstart)
    build_id = next(d for d in os.listdir(os.path.join(root, ".mintdim")) if len(d) == 16)
    run_lock = guard.run_lock_path(Layout(os.path.join(root, ".mintdim"), build_id))
    with ThreadPoolExecutor(max_workers=5) as pool:  # all of them while A runs
        same = pool.submit(build, root)  # the runner's own check
        same_smk = pool.submit(
            subprocess.run, snakemake_cmd(root), cwd=root, capture_output=True, text=True, timeout=120
        )
        other = pool.submit(build, root, "other.yaml")
        other_smk = pool.submit(
            subprocess.run,
            snakemake_cmd(root, "other.yaml"),
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        third = pool.submit(cli, root, "build", "third.yaml", "--cores", "1")
        same, same_smk, other, other_smk = (
            same.result(),
            same_smk.result(),
            other.result(),
            other_smk.result(),
        )
        assert first.poll() is None, "A must still be running"
        assert guard.holders(run_lock)  # A still holds its run lock
        third = third.result()
    assert same.returncode == 1
    assert "BuildError" in same.stderr and "This build is already running (process" in same.stderr
    assert same_smk.returncode != 0
    assert "This build is already running" in same_smk.stderr + same_smk.stdout
    assert other.returncode == 1
    assert (
        "OutputValidationError" in other.stderr
        and "being built right now by another MintDim build" in other.stderr
    )
    assert other_smk.returncode != 0
    assert "being built right now" in other_smk.stderr + other_smk.stdout
    assert msgpack_left(os.path.join(root, "wd2")) == []  # the refused build ran no job
    assert third.returncode == 0, third.stderr[-3000:]
    assert tree_bytes(os.path.join(root, "out_c")) == reference

    _stdout, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-3000:]
    assert tree_bytes(out) == reference
    # afterwards, the other build is refused as before any build: the directory is A's
    late = build(root, "other.yaml")
    assert late.returncode == 1 and "Output directory already exists and is not empty." in late.stderr
    assert tree_bytes(out) == reference


# ---------------------------------------------------------------------------------------------
# 3. resource faults
# ---------------------------------------------------------------------------------------------


def _user_files(root) -> dict:
    """Files of the user beside and above the output: they must never change."""
    os.makedirs(os.path.join(str(root), "notes"), exist_ok=True)
    with open(os.path.join(str(root), "notes", "keep.txt"), "w") as f:
        f.write("the user's own file\n")
    return {p: tree_bytes(os.path.join(str(root), p)) for p in ("notes",)}


def _file_size_limit(root: str) -> dict:
    """RLIMIT_FSIZE (16 KiB) on the whole build: the first 20 KiB shard cannot be written."""
    project(root, sizes=[[1024, 2048]])
    mine = _user_files(root)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    failed = build(root, preexec_fn=limit)
    return {
        "failed": failed,
        "mine": mine,
        "after": _failed_state(root, "out", [1024, 2048]),
        "mine_after": _user_files_now(root, mine),
        "done": _finish(root),
    }


def _work_dir_full(root: str, mnt: str) -> dict:
    project(root, work_dir=os.path.join(mnt, "wd"))
    mine = _user_files(root)
    filler = _fill(mnt, 24 * 1024)
    failed = build(root)
    state = _failed_state(root, "out", SIZES)
    os.unlink(filler)  # the user frees space, then runs the same command
    return {
        "failed": failed,
        "mine": mine,
        "after": state,
        "mine_after": _user_files_now(root, mine),
        "done": _finish(root),
    }


def _output_full(root: str, mnt: str) -> dict:
    """The output's file system (not the work dir's) fills up during the final copy."""
    out = os.path.join(mnt, "out")
    project(root, dir=out)
    filler = _fill(mnt, 32 * 1024)  # 8 pages: room for the markers (a page or two each), not the output
    failed = build(root)
    state = _failed_state(root, out, SIZES)
    os.unlink(filler)
    return {"failed": failed, "after": state, "done": _finish(root, out), "out": out}


def _user_files_now(root, mine: dict) -> dict:
    return {p: tree_bytes(os.path.join(str(root), p)) for p in mine}


def _failed_state(root, out, sizes) -> dict:
    out = os.path.join(str(root), out)
    tree = tree_bytes(out) if os.path.isdir(out) else {}
    return {
        "markers": all(f"unit_{s}/{FAILED}" in tree for s in sizes),
        "stats": any(os.path.basename(rel) == "stats.json" for rel in tree),
        "tree": sorted(tree),
    }


def _mount_tmpfs(path: str) -> bool:
    os.makedirs(path)
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path], capture_output=True
        ).returncode
        == 0
    )


def _fill(mnt: str, leave: int) -> str:
    """A filler file leaving about `leave` bytes free."""
    path = os.path.join(mnt, "filler")
    free = shutil.disk_usage(mnt).free
    with open(path, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return path


def test_disk_full_and_file_size_limit_are_clear_errors_and_the_rerun_completes(tmp_path, reference):
    """Three faults side by side: a file size limit (RLIMIT_FSIZE) while shards are written; a full
    work directory (a 1 MiB tmpfs); a full output file system during the final copy. Each: a clear
    error naming the path, failure markers, no stats.json, the user's files untouched, and after the
    cause is gone the same command completes."""
    mounts = [str(tmp_path / "wd_fs"), str(tmp_path / "out_fs")]
    mounted = [_mount_tmpfs(m) for m in mounts]
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            fsize = pool.submit(_file_size_limit, str(tmp_path / "fsize"))
            work = pool.submit(_work_dir_full, str(tmp_path / "work"), mounts[0]) if mounted[0] else None
            outf = pool.submit(_output_full, str(tmp_path / "outf"), mounts[1]) if mounted[1] else None
            fsize, work, outf = fsize.result(), work and work.result(), outf and outf.result()
    finally:
        for m, ok in zip(mounts, mounted):
            if ok:
                subprocess.run(["umount", "-l", m], capture_output=True)

    r = fsize
    err = r["failed"].stderr
    assert r["failed"].returncode == 1 and "Traceback" not in err
    assert "BuildError: The build failed." in err and "Stage: write_" in err
    assert (
        "Path: .mintdim/" in err and "unit_1024/shard_000000.bin" in err and "file size or quota limit" in err
    )
    assert r["after"]["markers"] and not r["after"]["stats"], r["after"]
    assert r["mine_after"] == r["mine"]
    assert r["done"]["again"].returncode == 0, r["done"]["text"][-3000:]
    assert verify(str(tmp_path / "fsize" / "out")).ok

    if work is None or outf is None:
        pytest.skip("cannot mount a tmpfs here (needs root): the full-disk cases did not run")
    r = work
    err = r["failed"].stderr
    assert r["failed"].returncode == 1 and "Traceback" not in err, err[-3000:]
    assert "BuildError: The build failed." in err and mounts[0] in err
    assert "full" in err or "No space left on device" in err
    assert r["after"]["markers"] and not r["after"]["stats"], r["after"]
    assert r["mine_after"] == r["mine"]
    _assert_finished("work dir full", r["done"], reference)

    r = outf
    err = r["failed"].stderr
    assert r["failed"].returncode == 1 and "Traceback" not in err, err[-3000:]
    assert "BuildError" in err and "Stage: finalize_o0" in err
    assert "No space left on device" in err and mounts[1] in err
    assert r["after"]["markers"] and not r["after"]["stats"], r["after"]
    _assert_finished("output full", r["done"], reference)


# ---------------------------------------------------------------------------------------------
# 3b. inputs that cannot be read
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_source_that_is_not_a_regular_file_fails_preflight_and_creates_nothing(tmp_path, kind):
    root = project(tmp_path)
    path = os.path.join(root, "d.jsonl")
    os.unlink(path)
    if kind == "directory":
        os.mkdir(path)
    else:
        os.mkfifo(path)  # reading it would block forever: pre-flight must not open it
    proc = build(root)
    assert proc.returncode == 1
    assert "MintDimFileNotFoundError: Required file was not found." in proc.stderr
    assert "Context: source" in proc.stderr and "Missing file: d.jsonl" in proc.stderr
    assert not os.path.exists(os.path.join(root, "out")) and not os.path.exists(
        os.path.join(root, ".mintdim")
    )


def test_tokenizer_that_is_a_directory_fails_preflight(tmp_path):
    root = project(tmp_path, tokenizer={"sentencepiece": {"path": "tok.model"}})
    os.mkdir(os.path.join(root, "tok.model"))
    proc = build(root)
    assert proc.returncode == 1
    assert "Context: tokenizer" in proc.stderr and "tok.model" in proc.stderr
    assert not os.path.exists(os.path.join(root, "out"))


def test_source_removed_after_preflight_is_a_clear_error_naming_it(tmp_path, monkeypatch):
    """The file vanishes between pre-flight and its tokenize job (stage called as the job calls it)."""
    from mintdim.formats.layout import Layout
    from mintdim.run import job
    from mintdim.stages.preflight import preflight
    from mintdim.stages.tokenize import tokenize_chunk

    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    b, metas = preflight(config())
    lay = Layout(b.work_dir, b.build_id)
    os.unlink("d.jsonl")
    rc = job.run(
        "tokenize_f0_c0",
        lambda: tokenize_chunk(b, metas, 0, 0, lay.tok_dir(0, 0), bounds=(0, 10)),
        log=JobLog(None, console=False),
        errors_dir=lay.errors_dir,
        failed_flag=lay.failed_flag,
    )
    assert rc == 1
    err = E.MintDimError.from_dict(json.load(open(os.path.join(lay.errors_dir, "tokenize_f0_c0.json"))))
    text = err.render("en")
    assert isinstance(err, E.BuildError) and "FileNotFoundError" in text
    assert f"Path: {os.path.abspath('d.jsonl')}" in text
    assert os.path.exists(lay.failed_flag)


# ---------------------------------------------------------------------------------------------
# 4. a finished output met again (docs/reliability.md)
# ---------------------------------------------------------------------------------------------


def _smk(root, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        snakemake_cmd(root) + list(extra), cwd=str(root), capture_output=True, text=True, timeout=300
    )


def test_forced_stages_after_success_find_the_same_bytes_and_nothing_is_poisoned(tmp_path, reference):
    """The README's debugging recipe after a successful build (`snakemake --forcerun plan`, `-R aggregate`,
    `mintdim build --forcerun`, `--touch`): each ends with the same finished output, and every later run
    says it is already built (they used to fail at finalize, and every run after that too)."""
    root = project(tmp_path)
    assert build(root).returncode == 0
    out = os.path.join(root, "out")
    for extra in (["--forcerun", "plan"], ["-R", "aggregate"], ["--touch"]):
        proc = _smk(root, *extra)
        text = proc.stdout + proc.stderr
        assert proc.returncode == 0, (extra, text[-3000:])
        assert tree_bytes(out) == reference, extra
        if extra != ["--touch"]:
            assert "out is already built: the stages run again gave the same bytes" in text, extra
    forced = cli(root, "build", "c.yaml", "--cores", "2", "--forcerun", "write")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert "the stages run again gave the same bytes" in forced.stderr
    again = build(root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (
        "[unit-build] already built (same config and inputs; nothing to do) out: 40 samples" in again.stdout
    )
    assert tree_bytes(out) == reference and verify(out).ok
    assert msgpack_left(root) == []


def test_an_input_changed_after_success_is_said_before_any_tokenizing_and_rebuild_replaces_only_ours(
    tmp_path,
):
    root = project(tmp_path)
    assert build(root).returncode == 0
    out = os.path.join(root, "out")
    before = tree_bytes(out)
    logs = os.path.join(
        root, ".mintdim", next(d for d in os.listdir(os.path.join(root, ".mintdim")) if len(d) == 16), "logs"
    )
    stamp = {n: os.stat(os.path.join(logs, n)).st_mtime_ns for n in os.listdir(logs)}
    with open(os.path.join(root, "d.jsonl"), "a") as f:
        f.write(json.dumps({"prompt": "one more", "response": "row"}) + "\n")
    for proc in (build(root), _smk(root)):
        text = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert (
            "OutputValidationError: Output directory holds this config's finished output, built from inputs "
            "that have changed since." in text
        )
        assert "• source d.jsonl" in text and "--rebuild" in text and "Traceback" not in text
        # said at once: no job ran (the job logs are untouched) and the output is as it was
        assert {n: os.stat(os.path.join(logs, n)).st_mtime_ns for n in os.listdir(logs)} == stamp
        assert tree_bytes(out) == before
    # --rebuild never deletes what MintDim did not write
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("mine\n")
    refused = cli(root, "build", "c.yaml", "--cores", "2", "--rebuild")
    assert refused.returncode == 1 and "holds files MintDim did not write" in refused.stderr
    assert "notes.txt" in refused.stderr and os.path.exists(os.path.join(out, "notes.txt"))
    os.unlink(os.path.join(out, "notes.txt"))
    rebuilt = cli(root, "build", "c.yaml", "--cores", "2", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert "built out: 41 samples" in rebuilt.stdout and verify(out).ok
    assert sorted(os.listdir(root)).count("out") == 1 and not [
        n for n in os.listdir(root) if "mintdim-old" in n
    ]
    assert build(root).returncode == 0  # and it is "already built" from then on


def test_another_configs_output_and_a_file_in_the_way_get_their_own_text(tmp_path):
    root = project(tmp_path)
    assert build(root).returncode == 0
    project(tmp_path, "other.yaml", samples_per_shard=[5])  # same output dir, another config
    proc = build(root, "other.yaml")
    assert proc.returncode == 1
    assert "holds the finished output of another MintDim config (build " in proc.stderr
    assert "--rebuild" in proc.stderr
    project(tmp_path, "file.yaml", dir="taken")
    with open(os.path.join(root, "taken"), "w") as f:
        f.write("a user's file\n")
    proc = build(root, "file.yaml")
    assert proc.returncode == 1 and "Output path exists and is not a directory." in proc.stderr
    assert "not empty" not in proc.stderr
    assert open(os.path.join(root, "taken")).read() == "a user's file\n"
    proc = cli(root, "build", "other.yaml", "--cores", "2", "--rebuild")  # replaces the other config's output
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert verify(os.path.join(root, "out")).ok


def test_a_job_log_honours_lang_vi(tmp_path, monkeypatch):
    """The job entry read the config's `lang` before the config was read: always English."""
    from mintdim.run import job
    from mintdim.stages import validate

    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    path = str(tmp_path / "validated.json")
    validate.run(config(lang="vi"), path)

    def body(args, build, metas, log, stop):
        raise E.UnitOverflowError.make("d.jsonl", 3, 900, 512)

    log_path = str(tmp_path / "job.log")
    rc = job.entry("plan_o0", "test", lambda p: None, body, argv=["--validated", path, "--log", log_path])
    assert rc == 1
    text = open(log_path, encoding="utf-8").read()
    assert "Độ dài token của mẫu vượt quá unit lớn nhất." in text and "exceeds max unit size" not in text


def test_a_job_writes_its_timing_record_only_when_it_ends_well(tmp_path, monkeypatch):
    """The per-job timing record (<build>/benchmarks/<job>.tsv) is the job's own, with the columns of
    Snakemake's benchmark TSV: CPU time and peak RSS from the kernel, written when the job ends well;
    a failed job leaves none (as a failed Snakemake benchmark file is removed)."""
    from mintdim.run import job
    from mintdim.stages import validate

    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    path = str(tmp_path / "validated.json")
    validate.run(config(), path)

    def busy(args, build, metas, log, stop):
        t = time.process_time()
        while time.process_time() - t < 0.3:  # 0.3 s of CPU
            pass

    def fails(args, build, metas, log, stop):
        raise E.UnitOverflowError.make("d.jsonl", 3, 900, 512)

    good, bad = str(tmp_path / "b" / "plan_o0.tsv"), str(tmp_path / "b" / "plan_o1.tsv")
    assert (
        job.entry("plan_o0", "test", lambda p: None, busy, argv=["--validated", path, "--bench", good]) == 0
    )
    assert (
        job.entry("plan_o1", "test", lambda p: None, fails, argv=["--validated", path, "--bench", bad]) == 1
    )
    assert not os.path.exists(bad) and os.listdir(tmp_path / "b") == ["plan_o0.tsv"]
    head, row = open(good, encoding="utf-8").read().splitlines()
    assert (
        head.split("\t")
        == list(BENCH_COLUMNS)
        == [
            "s",
            "h:m:s",
            "max_rss",
            "max_vms",
            "max_uss",
            "max_pss",
            "io_in",
            "io_out",
            "mean_load",
            "cpu_time",
        ]
    )
    cells = dict(zip(BENCH_COLUMNS, row.split("\t")))
    # this test's process (and the children it waited for, as a job's): at least the 0.3 s just spent
    assert float(cells["cpu_time"]) >= 0.3 and float(cells["s"]) > 0.3
    assert float(cells["max_rss"]) > 10 and cells["max_pss"] == "NA"
    assert cells["h:m:s"].count(":") == 2


# ---------------------------------------------------------------------------------------------
# 5. the speed hacks change no byte
# ---------------------------------------------------------------------------------------------

PLAIN = """
import os, sys
import mintdim.run.dag
mintdim.run.dag.cancel_pending_timers = lambda: None  # Snakemake's Timer is waited for
with open(os.environ["MINTDIM_TEST_PLAIN_LOG"], "a") as f:
    f.write(" ".join(sys.argv[:2]) + "\\n")
"""


def test_plain_snakemake_without_the_speed_hacks_builds_the_same_bytes(tmp_path, reference):
    """`python -m snakemake` with Snakemake's own locks and defaults (no --nolock, no workflow profile:
    no greedy scheduler, metadata recorded), and with the Timer cancel switched off in every process
    (a sitecustomize), gives the reference bytes."""
    root = project(tmp_path / "p")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PLAIN)
    log = tmp_path / "plain.log"
    env = dict(
        os.environ,
        MINTDIM_TEST_PLAIN_LOG=str(log),
        PYTHONPATH=os.pathsep.join(
            [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        root,
        "--configfile",
        os.path.join(root, "c.yaml"),
        "--cores",
        "2",
        "--workflow-profile",
        "none",
    ]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert tree_bytes(os.path.join(root, "out")) == reference
    ran = log.read_text()
    assert ran.splitlines()[0] == "-m --snakefile"  # Snakemake itself (sys.argv of `python -m` at startup)
    assert "tokenize_chunk.py" in ran and "write_shards.py" in ran  # the jobs ran without the hacks too


def test_parsing_the_snakefile_writes_nothing_the_jobs_read_and_sniffs_no_argv(tmp_path, monkeypatch):
    """A dry run (or --report, --lint) must not replace what a running build's jobs read
    (jobs.json, config.json: written when a run starts executing), nor clear its recorded errors."""
    from mintdim.config import resolve

    root = project(tmp_path)
    proc = _smk(root, "-n")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert not os.path.exists(os.path.join(root, ".mintdim"))  # the dry run created nothing at all
    monkeypatch.chdir(root)
    b = resolve(config())
    lay_root = os.path.join(root, ".mintdim", b.build_id)
    os.makedirs(os.path.join(lay_root, "errors"))
    with open(os.path.join(lay_root, "errors", "keep.json"), "w") as f:
        f.write("{}")
    assert _smk(root, "-n").returncode == 0
    assert os.path.exists(os.path.join(lay_root, "errors", "keep.json"))
    with open(SNAKEFILE, encoding="utf-8") as f:
        assert "sys.argv" not in f.read()
    assert build(root).returncode == 0  # a run that executes writes them, and clears old errors
    assert os.path.exists(os.path.join(lay_root, "jobs.json")) and not os.path.exists(
        os.path.join(lay_root, "errors")
    )


def _snapshot(*dirs) -> dict:
    """Every file and directory under dirs with its size, mtime
    and content hash (what a parse could change)."""
    import hashlib

    seen = {}
    for top in dirs:
        for base, _subdirs, files in os.walk(top):
            seen[base] = "dir"
            for name in files:
                path = os.path.join(base, name)
                if "iocache" in path:  # Snakemake's own cache, written by every --dry-run: not the parse
                    continue
                st = os.stat(path)
                with open(path, "rb") as f:
                    seen[path] = (st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return seen


def test_parsing_the_snakefile_changes_no_file_and_a_deleted_output_is_still_rebuilt(tmp_path, reference):
    """Parsing validates and wires, nothing else. After a build whose output the user then
    deleted, a dry run lists the finalize job yet changes no file of the work directory or of Snakemake's
    (no run-lock pid written, no completion record removed); the real run rebuilds the same bytes."""
    root = project(tmp_path)
    assert build(root).returncode == 0
    out = os.path.join(root, "out")
    shutil.rmtree(out)
    before = _snapshot(os.path.join(root, ".mintdim"), os.path.join(root, ".snakemake"))
    for extra in (["-n"], ["-n", "--workflow-profile", "default"]):
        dry = _smk(root, *extra)
        assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
        assert "finalize" in dry.stdout + dry.stderr, extra
        assert _snapshot(os.path.join(root, ".mintdim"), os.path.join(root, ".snakemake")) == before, extra
    assert not os.path.exists(out)
    proc = _smk(root)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert tree_bytes(out) == reference
    again = build(root)  # and the record of that rebuild is the one `mintdim build` finds
    assert again.returncode == 0 and "already built" in again.stdout, again.stderr[-3000:]
    shutil.rmtree(out)
    rebuilt = build(root)  # the same through mintdim build
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert tree_bytes(out) == reference and "already built" not in rebuilt.stdout


def test_an_input_edited_after_a_finalize_stopped_once_it_placed_the_output_is_not_taken_as_built(tmp_path):
    """The finalize job is killed right after it placed the output (its record still says `placing`), then
    the input is edited. The next build must not finish that placement as if it were this input's output:
    it refuses, naming --rebuild (as for any finished output built from other inputs), and --rebuild gives
    the bytes of a clean build of the edited input. Found by the state machine's long run: the next build
    exited 0 and left the output of the input before the edit."""
    root = project(tmp_path / "p")
    killed = build(root, env={"MINTDIM_TEST_KILL_AT": "finalize:moved"})
    assert killed.returncode != 0
    write_rows(root, rows(41))  # the edit
    again = build(root)
    assert again.returncode == 1 and "--rebuild" in again.stderr, (again.returncode, again.stderr[-2000:])
    rebuilt = build(root, "c.yaml", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    fresh = project(tmp_path / "fresh")
    write_rows(fresh, rows(41))
    assert build(fresh).returncode == 0
    assert out_tree(root) == out_tree(fresh)
