"""Concurrent and killed builds: locks that the kernel releases when their process dies.

Three flock(2) locks guard a build. Each is released when its holder exits,
SIGKILL included, so a kill never leaves a lock that blocks a rerun.

run lock      WORK/<build_id>/run.lock, exclusive, held by the main Snakemake process of
              a build from the start of execution (`onstart`) to its end; it holds that
              process's pid and, under `mintdim build`, the launcher's. A second run of
              the same build at the same time fails with a clear error: at once, while the
              Snakefile is parsed (a read-only probe), or at its own start if both started
              together. A holder whose launcher is gone (its parent is no longer the recorded
              launcher: `kill -9` of the launcher's process group, a closed terminal) is
              stopping (dag.watch_launcher): the next run waits for it and its jobs to end
              (at most STOPPING_WAIT_S, one console line), then goes on.
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
# seconds a run waits for a run whose launcher is gone to stop: it stops within about 4 s (dag.watch_launcher
# checks every 0.5 s, dag.stop_group kills its group 3 s after SIGINT); beyond it: "already running"
STOPPING_WAIT_S = 60.0
STOPPING = (
    "[unit-build] waiting for an earlier run of this build to stop (process {pid}; its launcher is gone)"
)


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


def holders(path: str) -> str:
    """The process ids holding a flock on `path`, for messages (Linux /proc/locks; best effort)."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return "unknown"
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for parts in (line.split() for line in lines):
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want and parts[4].isdigit():
            pid = int(parts[4])
            if pid not in pids and pid != os.getpid():
                pids.append(pid)
    return ", ".join(map(str, pids)) or "unknown"


def _read_pid(fd: int) -> str:
    return _read_holder(fd)[0]


def _read_holder(fd: int) -> tuple[str, int | None]:
    """The run lock's record: the holder's pid ("" if none) and its launcher's (None: none recorded)."""
    try:
        lines = os.pread(fd, 64, 0).decode("ascii", "replace").split("\n")
    except OSError:
        return "", None
    pid = lines[0].strip()
    launcher = lines[1].split()[-1] if len(lines) > 1 and lines[1].startswith("launcher ") else ""
    return (pid if pid.isdigit() else ""), (int(launcher) if launcher.isdigit() else None)


def _parent(pid: str) -> int | None:
    """The parent pid of a live process (None: gone, a zombie, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == b"Z" else int(fields[1])


def _take_run_lock(fd: int, path: str, echo) -> bool:
    """Take the run lock (exclusive). While its holder is a run whose launcher is gone (it is stopping), or
    a holder that has not recorded itself yet, wait for it (at most STOPPING_WAIT_S; one line when the wait
    is for a stopping run), then for that run's jobs (jobs.lock beside it). False: a live run holds it."""
    t0, told = time.monotonic(), ""
    while not _try(fd, fcntl.LOCK_EX):
        pid, launcher = _read_holder(fd)
        parent = _parent(pid) if pid else None
        if parent is not None and (launcher is None or parent == launcher):
            return False  # alive, and so is its launcher (or it has none: a direct `snakemake` run)
        if time.monotonic() - t0 >= STOPPING_WAIT_S:
            return False
        if parent is not None and not told:
            told = pid
            echo(STOPPING.format(pid=pid))
        time.sleep(0.1)
    if told:  # its jobs end with it (dag.stop_group); one may still be on its way out
        jobs = _open(os.path.join(os.path.dirname(path), "jobs.lock"))
        try:
            while not _try(jobs, fcntl.LOCK_EX) and time.monotonic() - t0 < STOPPING_WAIT_S:
                time.sleep(0.1)
            fcntl.flock(jobs, fcntl.LOCK_UN)
        finally:
            os.close(jobs)
    return True


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_lock_path(layout) -> str:
    return os.path.join(layout.root, "run.lock")


def report_error(err: E.MintDimError, path: str | None) -> None:
    """Hand an error raised in the main Snakemake process to the launcher that started it (its
    `error_file`, dag.RUN_KEYS); a direct `snakemake` run has none."""
    if path:
        try:
            records.atomic_write_text(path, json.dumps(err.to_dict(), ensure_ascii=False))
        except OSError:
            pass


class BuildGuard:
    """The locks of one build, held by its main Snakemake process from `onstart` to its end."""

    def __init__(self, build, layout, echo=None, launcher: int | None = None):
        self.build = build
        self.layout = layout
        self.echo = echo or _stderr
        self.launcher = launcher  # the `mintdim build` process that started this run (recorded in the lock)
        self.claimed: set[str] = set()
        self._fds: list[int] = []  # the run lock first, then the output claims

    def start(self) -> BuildGuard:
        """Take the run lock, then wait for orphaned jobs of a killed run."""
        path = run_lock_path(self.layout)
        fd = _open(path)
        if not _take_run_lock(fd, path, self.echo):
            pid = _read_pid(fd) or holders(path)
            os.close(fd)
            raise E.BuildError.already_running(
                self.layout.root, "" if pid == "unknown" else pid, lang=self.build.lang
            )
        self._fds.append(fd)
        before = _read_pid(fd)  # a run that ended cleared it: one that was killed left its pid behind
        if before and int(before) != os.getpid():
            self.echo(
                f"[unit-build] taking over the run lock of process {before}, which is no longer running "
                "(an earlier run of this build was killed)"
            )
        os.ftruncate(fd, 0)
        launcher = f"launcher {self.launcher}\n" if self.launcher else ""
        os.pwrite(fd, f"{os.getpid()}\n{launcher}".encode(), 0)
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
                        raise E.OutputValidationError.busy(out.dir, holders(out.absdir), lang=self.build.lang)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)

    def wait_for_orphans(self) -> None:
        path = os.path.join(self.layout.root, "jobs.lock")
        fd = _open(path)
        try:
            limit = float(os.environ.get(ORPHAN_WAIT_ENV, "600"))
            t0, told = time.monotonic(), False
            while not _try(fd, fcntl.LOCK_EX):
                waited = time.monotonic() - t0
                if waited >= limit:
                    raise E.BuildError.orphans_alive(
                        self.layout.root, holders(path), waited, lang=self.build.lang
                    )
                if not told:
                    told = True
                    self.echo(
                        f"[unit-build] waiting for jobs of an earlier, killed run of this build to end "
                        f"(process {holders(path)})"
                    )
                time.sleep(0.2)
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
                raise E.OutputValidationError.busy(out.dir, holders(out.absdir), lang=self.build.lang)
            self._fds.append(fd)
            if records.state(self.build.work_dir, out.absdir).kind in ("foreign", "file"):
                raise E.OutputValidationError.not_empty(out.dir, lang=self.build.lang)
            # written now, while there is room: a failure on a full disk can still mark the output
            records.write_record(self.build.work_dir, out.absdir, dir=out.dir, marked=self.build.build_id)
            self.claimed.add(out.absdir)

    def release(self) -> None:
        fds, self._fds = self._fds, []
        for i, fd in enumerate(fds):
            try:
                if i == 0:
                    os.ftruncate(fd, 0)  # the run lock: this run has ended
                os.close(fd)
            except OSError:
                pass


def probe(build, layout, echo=None) -> None:
    """Before anything is written (the launcher; parsing the Snakefile): is this build or one of its
    outputs held by a live process? Each lock is only tried and let go at once (after a run whose launcher
    is gone has stopped: _take_run_lock)."""
    path = run_lock_path(layout)
    if os.path.exists(path):
        fd = _open(path)
        try:
            if not _take_run_lock(fd, path, echo or _stderr):
                raise E.BuildError.already_running(layout.root, _read_pid(fd), lang=build.lang)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    BuildGuard(build, layout).check_outputs_free()


def job_lock(build_root: str) -> int | None:
    """A stage job's hold (shared) on its build's job lock, from its start to its end (os.close drops it);
    None where there is no flock."""
    try:
        fd = _open(os.path.join(build_root, "jobs.lock"))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:  # no flock on this file system: nothing to hold
        os.close(fd)
        return None
    return fd
