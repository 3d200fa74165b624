"""Fault injection for tests: SIGKILL at a named point of a build.

    MINTDIM_TEST_KILL_AT=POINT[@TARGET]

POINT is where: `<stage>:start` and `<stage>:end` of every stage job (stage = validate,
tokenize, plan, write, aggregate, finalize; `end` is after the job wrote its outputs and
before Snakemake recorded them), `write:shard` (after the first shard of a unit was
closed), `finalize:moved` (the output was moved into place, its completion not yet
recorded), `finalize:copying` (half-way through a copy across file systems).

TARGET is what dies:
  self       the job only (default): Snakemake sees a failed job
  snakemake  the main Snakemake process only; the job lives on as an orphan
             (MINTDIM_TEST_KILL_LINGER=SECONDS keeps it alive that long first)
  group      the whole process group: the job, Snakemake and the command that started
             it, as `kill -9` of a terminal session or a batch job does

    MINTDIM_TEST_SLEEP_AT=POINT=SECONDS[,POINT=SECONDS ...]

holds the build that long at each POINT (to start a second build while the first one runs, or
to hold jobs that run side by side, such as write and aggregate, at the same time).
Unset in normal use: then `kill_point` is a function that does nothing (decided once, when this
module is imported), so the hooks cost a production build nothing.
"""

from __future__ import annotations

import os
import signal
import time

KILL_ENV = "MINTDIM_TEST_KILL_AT"
LINGER_ENV = "MINTDIM_TEST_KILL_LINGER"
SLEEP_ENV = "MINTDIM_TEST_SLEEP_AT"
SNAKEMAKE_PID_ENV = "MINTDIM_SNAKEMAKE_PID"  # the main Snakemake process (set by guard.py), for the "snakemake" target
JOB_GROUP_ENV = "MINTDIM_JOB_GROUP"  # a job forked by the fork server (its own group): the jobs' group


def kill_point(point: str) -> None:
    pause = os.environ.get(SLEEP_ENV)
    for entry in pause.split(",") if pause else ():
        where, _, seconds = entry.partition("=")
        if where == point:
            time.sleep(float(seconds or 1))
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    where, _, target = spec.partition("@")
    if where != point:
        return
    target = target or "self"
    if target == "group":
        # all at once, as the kernel does: the launcher's death makes Snakemake SIGTERM its group
        # (snakemake_main.py), which must not stop this job before it sends the SIGKILL
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
        group = int(os.environ.get(JOB_GROUP_ENV, "0") or 0) or os.getpgid(0)
        launcher = _launcher_of(group)  # `mintdim build` runs Snakemake in a group of its own: kill it too
        if launcher > 1:
            # stopped first: Snakemake (the group's leader) reacts to its launcher's death by stopping
            # its group and writing failure markers; a kill of a whole session gives it no such moment
            # (seen under load: markers after aggregate:end@group)
            os.kill(group, signal.SIGSTOP)
            os.kill(launcher, signal.SIGKILL)
        os.killpg(group, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)  # a job forked by the fork server is in a group of its own
    elif target == "snakemake":
        pid = int(os.environ.get(SNAKEMAKE_PID_ENV, "0") or 0)
        if pid > 1:
            os.kill(pid, signal.SIGKILL)
        linger = float(os.environ.get(LINGER_ENV, "0") or 0)
        if linger > 0:
            time.sleep(linger)
        return  # the job itself goes on
    os.kill(os.getpid(), signal.SIGKILL)


def _nothing(point: str) -> None:
    pass


if not (os.environ.get(KILL_ENV) or os.environ.get(SLEEP_ENV)):
    kill_point = _nothing  # noqa: F811  (production: no test hook set)


def _launcher_of(group: int) -> int:
    """The `mintdim build` (runner) process that started the group's leader, if it is the runner's
    Snakemake (`python -m mintdim.run.snakemake_main --mintdim-launcher PID ...`); else 0."""
    try:
        with open(f"/proc/{group}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return 0
    if b"mintdim.run.snakemake_main" in argv and b"--mintdim-launcher" in argv:
        i = argv.index(b"--mintdim-launcher")
        if i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
    return 0
