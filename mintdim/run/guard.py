"""Concurrent and killed builds: locks that the kernel releases when their process dies.

Three flock(2) locks guard a build. Each is released when its holder exits,
SIGKILL included, so a kill never leaves a lock that blocks a rerun.

run lock      WORK/<build_id>/run.lock, exclusive, held by the main Snakemake process of
              a build from the start of execution (`onstart`) to its end. A second run of
              the same build at the same time fails with a clear error: at once, while the
              Snakefile is parsed (a read-only probe), or at its own start if both started
              together.
job lock      WORK/<build_id>/jobs.lock, shared, held by every stage job while it runs.
              When the main process of a run was killed, its running jobs live on as
              orphans; the next run of the build waits for them before its first job.
output claim  the output directory itself (created empty when missing), exclusive, held
              by the main Snakemake process from the start of execution (`onstart`). Any
              other build into the same directory, from any config or work directory,
              fails at once with a clear error. Failure markers are written only into
              outputs this process claimed, so a failing build never marks a directory
              that another live build is about to fill.

Parsing the Snakefile only probes (`probe`: is this build or one of its outputs held by a
live process?) and changes nothing; every lock is taken in `onstart`, which Snakemake calls
only for a run that executes jobs (never a dry run, never "nothing to be done").

These locks guard everything Snakemake's own lock files would, and the kernel drops them
when a process dies, so a kill never leaves one behind. `mintdim build` and `job.run()` run
Snakemake with `--nolock`, and the workflow profile (profiles/default) sets `nolock` for a
direct `snakemake` run: Snakemake's lock files would go stale after a kill and stop the
rerun until `snakemake --unlock`. A run that opts out of the profile (`--workflow-profile
none`) gets Snakemake's own lock files and their usual behaviour.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import sys
import time

from .. import errors as E
from ..formats import records

ORPHAN_WAIT_ENV = "MINTDIM_ORPHAN_WAIT"  # seconds a run waits for orphaned jobs of a killed run (default 600)

_ACTIVE: "BuildGuard | None" = None


# --- flock helpers ------------------------------------------------------------------------------


def _open(path: str, directory: bool = False) -> int:
    if directory:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _try(fd: int, mode: int) -> bool:
    """Take a flock without waiting. A file system without flock support counts as free."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def holders(path: str) -> list[int]:
    """Process ids holding a flock on `path` (Linux /proc/locks; best effort, for messages)."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] == "->" or parts[1] != "FLOCK":
            continue
        if parts[5] == want and parts[4].isdigit() and int(parts[4]) not in pids:
            pids.append(int(parts[4]))
    return [p for p in pids if p != os.getpid()]


def _pids_text(pids: list[int]) -> str:
    return ", ".join(str(p) for p in pids) if pids else "unknown"


def _read_pid(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
        return text if text.isdigit() else ""
    except OSError:
        return ""


def run_lock_path(layout) -> str:
    return os.path.join(layout.root, "run.lock")


def jobs_lock_path(layout) -> str:
    return os.path.join(layout.root, "jobs.lock")


# --- errors --------------------------------------------------------------------------------------


def already_running(layout, pid: str, lang: str) -> E.MintDimError:
    return E.BuildError.already_running(layout.root, pid, lang=lang)


def output_busy(out, pids: list[int], lang: str) -> E.MintDimError:
    return E.OutputValidationError.busy(out.dir, _pids_text(pids), lang=lang)


def orphans_alive(layout, pids: list[int], waited: float, lang: str) -> E.MintDimError:
    return E.BuildError.orphans_alive(layout.root, _pids_text(pids), waited, lang=lang)


def report_error(err: E.MintDimError, path: str | None) -> None:
    """Hand an error raised in the main Snakemake process to the launcher that started it (its
    `error_file`, dag.RUN_KEYS); a direct `snakemake` run has none."""
    if not path:
        return
    try:
        records.atomic_write_text(path, json.dumps(err.to_dict(), ensure_ascii=False))
    except OSError:
        pass


# --- the guard of one build, in its main Snakemake process -----------------------------------


class BuildGuard:
    def __init__(self, build, layout, echo=None):
        self.build = build
        self.layout = layout
        self.echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
        self.claimed: set[str] = set()
        self._run_fd: int | None = None
        self._claim_fds: list[int] = []

    # start of execution (onstart) -------------------------------------------------------------

    def start(self) -> "BuildGuard":
        """Take the run lock, then wait for orphaned jobs of a killed run."""
        lang = self.build.lang
        fd = _open(run_lock_path(self.layout))
        if not _try(fd, fcntl.LOCK_EX):
            pid = _read_pid(fd) or _pids_text(holders(run_lock_path(self.layout)))
            os.close(fd)
            raise already_running(self.layout, "" if pid == "unknown" else pid, lang)
        self._run_fd = fd
        before = _read_pid(fd)  # a run that ended cleared it: one that was killed left its pid behind
        if before and int(before) != os.getpid():
            self.echo(f"[unit-build] taking over the run lock of process {before}, which is no longer running "
                      "(an earlier run of this build was killed)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        atexit.register(self.release)  # an ending run clears its pid
        self.check_outputs_free()
        self.wait_for_orphans()
        return self

    def check_outputs_free(self) -> None:
        """An existing output directory that another live build holds: stop now (nothing is created)."""
        for out in self.build.outputs:
            if os.path.isdir(out.absdir) and not os.path.islink(out.absdir):
                fd = _open(out.absdir, directory=True)
                try:
                    if not _try(fd, fcntl.LOCK_EX):
                        raise output_busy(out, holders(out.absdir), self.build.lang)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)

    def wait_for_orphans(self) -> None:
        path = jobs_lock_path(self.layout)
        fd = _open(path)
        try:
            limit = float(os.environ.get(ORPHAN_WAIT_ENV, "600"))
            t0 = time.monotonic()
            told = False
            while not _try(fd, fcntl.LOCK_EX):
                waited = time.monotonic() - t0
                if waited >= limit:
                    raise orphans_alive(self.layout, holders(path), waited, self.build.lang)
                if not told:
                    self.echo(f"[unit-build] waiting for jobs of an earlier, killed run of this build to end "
                              f"(process {_pids_text(holders(path))})")
                    told = True
                time.sleep(0.2)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def claim_outputs(self) -> None:
        """Create each output directory if missing and hold it; another live build's -> error."""
        for out in self.build.outputs:
            if out.absdir in self.claimed:
                continue
            os.makedirs(out.absdir, exist_ok=True)
            fd = _open(out.absdir, directory=True)
            if not _try(fd, fcntl.LOCK_EX):
                os.close(fd)
                raise output_busy(out, holders(out.absdir), self.build.lang)
            self._claim_fds.append(fd)
            if records.state(self.build.work_dir, out.absdir).kind in ("foreign", "file"):
                raise E.OutputValidationError.not_empty(out.dir, lang=self.build.lang)
            # written now, while there is room: a failure on a full disk can still mark the output
            records.write_record(self.build.work_dir, out.absdir, dir=out.dir, marked=self.build.build_id)
            self.claimed.add(out.absdir)

    def release(self) -> None:
        for fd in self._claim_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._claim_fds = []
        if self._run_fd is not None:
            try:
                os.ftruncate(self._run_fd, 0)
                os.close(self._run_fd)
            except OSError:
                pass
            self._run_fd = None


def start(build, layout) -> BuildGuard:
    """The main Snakemake process's guard, kept for the life of the process."""
    global _ACTIVE
    guard = BuildGuard(build, layout).start()
    _ACTIVE = guard
    return guard


def active() -> BuildGuard | None:
    return _ACTIVE


def probe(build, layout) -> None:
    """Before anything is written (the runner; parsing the Snakefile): is this build or one of its
    outputs held by a live process? Each lock is only tried and let go at once."""
    path = run_lock_path(layout)
    if os.path.exists(path):
        fd = _open(path)
        try:
            if not _try(fd, fcntl.LOCK_EX):
                raise already_running(layout, _read_pid(fd), build.lang)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    BuildGuard(build, layout).check_outputs_free()


# --- stage jobs ------------------------------------------------------------------------------------


class JobLock:
    """A stage job's hold (shared) on its build's job lock, from start to end."""

    def __init__(self, fd: int | None):
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)  # closing drops the flock
            except OSError:
                pass
            self._fd = None


def job_lock(build_root: str) -> JobLock:
    try:
        fd = _open(os.path.join(build_root, "jobs.lock"))
    except OSError:
        return JobLock(None)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:  # no flock on this file system: nothing to hold
        os.close(fd)
        return JobLock(None)
    return JobLock(fd)
