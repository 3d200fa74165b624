"""Test hooks: hold a build, or kill a job, at a named point.

    MINTDIM_TEST_SLEEP_AT=POINT=SECONDS[,POINT=SECONDS ...]

holds the job that reaches POINT that long (a test then kills what it wants from outside: the launcher,
Snakemake, the whole build; or starts a second build meanwhile).

    MINTDIM_TEST_KILL_AT=POINT

SIGKILLs the job that reaches POINT (only the job: Snakemake sees a failed job).

POINT is `<stage>:start` or `<stage>:end` of every stage job (mintdim/run/job.py; stage = validate,
tokenize, plan, write, aggregate, finalize; `end` is after the job wrote its outputs, before Snakemake
recorded them), `write:shard` (the first shard of a unit was closed: formats/shards.py),
`snakemake:start` (Snakemake's process in its start hook, its locks taken, before the launcher watch and
the first job: run/dag.py), `finalize:moved` (the output was placed, its record not yet written) or
`finalize:copied` (copied beside an output on another file system, not yet placed: formats/records.py).

Unset in normal use: then `kill_point` is a function that does nothing (decided once, when this module
is imported), so the hooks cost a production build nothing.
"""

from __future__ import annotations

import os
import signal
import time

KILL_ENV = "MINTDIM_TEST_KILL_AT"
SLEEP_ENV = "MINTDIM_TEST_SLEEP_AT"


def kill_point(point: str) -> None:
    for entry in (os.environ.get(SLEEP_ENV) or "").split(","):
        where, _, seconds = entry.partition("=")
        if where == point:
            time.sleep(float(seconds or 1))
    if os.environ.get(KILL_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def _nothing(point: str) -> None:
    pass


if not (os.environ.get(KILL_ENV) or os.environ.get(SLEEP_ENV)):
    kill_point = _nothing  # noqa: F811  (production: no test hook set)
