"""`python -m snakemake`, for the runner: the same command line, ended without the interpreter's
teardown, and never outliving the `mintdim build` (or job.run()) that started it.

Speed (issue 13, measured again on this 2-core box under a load of ~12, medians of 7 no-op builds,
CPU time): fastexit saves 0.31 s CPU per build here (1.07 s against 1.38 s) and stays. The former
pkgutil.iter_modules patch (one sys.path walk instead of five per start) saved 0.07 s (5 walks of
18 ms over 466 modules), below the 0.1 s bar, and was removed.

`mintdim build` and job.run() start Snakemake as
`python -m mintdim.run.snakemake_main --mintdim-launcher PID ...` in its own process group (see
runner.py); a user's `snakemake` command is the plain one. See mintdim/run/fastexit.py.

Started early: `mintdim build` starts this process before its pre-flight, with only
`--mintdim-launcher PID --mintdim-argv stdin`; it imports Snakemake (~0.65 s of CPU, see
docs/performance.md) on the other core meanwhile, then reads the whole command line as one JSON
line on stdin, or ends at once when stdin closes without one (pre-flight failed).

Launcher gone: when the process that started this one dies (kill -9 of `mintdim build`, a closed
terminal, a scheduler's timeout), Snakemake and its running jobs stop too, instead of running on
with nobody reading their output (a job writing to that broken pipe failed with BrokenPipeError
and Snakemake hung for good, issue 14). The kernel tells us at once on Linux (prctl
PR_SET_PDEATHSIG -> SIGHUP), and a watchdog thread compares getppid() with the launcher twice a
second everywhere. Either way the whole process group gets SIGTERM, once a second (Snakemake stops
gracefully, the jobs end; stop_group), and SIGKILL after 10 s.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from . import fastexit

LAUNCHER_ARG = "--mintdim-launcher"  # PID of the runner process; this one stops when it dies
PREFLIGHT_ARG = "--mintdim-preflight"  # BUILD_ID: the runner ran pre-flight for it (the Snakefile skips it)
ERROR_FILE_ARG = "--mintdim-error-file"  # PATH: where an error of this process goes for the runner
ARGV_ARG = "--mintdim-argv"  # "stdin": the rest of the command line comes as one JSON line on stdin
FORKSERVER_ARG = "--mintdim-forkserver"  # SPEC (JSON): start the fork server for this run's jobs (forkserver.py)

# What the runner told this process (its arguments above, taken off Snakemake's command line).
# The Snakefile runs in this same process and reads it (dag.BuildDAG, guard.report_error); a
# direct `snakemake` run has none of it.
RUN: dict[str, str] = {}
_ARGS = {LAUNCHER_ARG: "launcher", PREFLIGHT_ARG: "preflight", ERROR_FILE_ARG: "error_file", ARGV_ARG: "argv",
         FORKSERVER_ARG: "forkserver"}


def _take_run_args(argv: list[str]) -> None:
    while len(argv) > 2 and argv[1] in _ARGS:
        RUN[_ARGS[argv[1]]] = argv[2]
        del argv[1:3]


_stopping = threading.Event()


def _launcher_gone(*_args) -> None:
    """Stop this Snakemake and every job of it: nobody waits for them any more."""
    if _stopping.is_set():
        return
    _stopping.set()
    try:  # nobody reads our output: writes to it must neither fail nor block
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
    except OSError:
        pass
    group = os.getpgid(0)
    if group == os.getpid():  # started by the runner in a group of its own: stop it all
        threading.Thread(target=stop_group, args=(group, threading.Event()), daemon=True).start()
    else:
        os.kill(os.getpid(), signal.SIGTERM)


def stop_group(group: int, ended: threading.Event, every: float = 1.0, kill_after: float = 10.0) -> None:
    """SIGTERM to a process group, again every second until `ended` is set (a job Snakemake was
    starting at that moment misses the first one, and Snakemake waits for its running jobs), then
    SIGKILL after `kill_after` seconds."""
    t0 = time.monotonic()
    while not ended.is_set():
        signal_group(group, signal.SIGKILL if time.monotonic() - t0 >= kill_after else signal.SIGTERM)
        ended.wait(every)


def signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except OSError:  # already gone
        pass


def parent_death_signal(sig: int) -> None:
    """Linux: the kernel sends this process `sig` when its parent dies (prctl PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, int(sig), 0, 0, 0)  # 1: PR_SET_PDEATHSIG


def _die_with_launcher(launcher: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            parent_death_signal(signal.SIGHUP)
            signal.signal(signal.SIGHUP, _launcher_gone)
        except (OSError, AttributeError, ValueError):
            pass

    def watch():
        while not _stopping.is_set():
            if os.getppid() != launcher:
                _launcher_gone()
                return
            time.sleep(0.5)

    threading.Thread(target=watch, name="mintdim-launcher-watch", daemon=True).start()


def _argv_from_stdin() -> None:
    """Started early (runner.start_snakemake): Snakemake is imported; now wait for the command line.
    End quietly when none comes (the runner's pre-flight failed, or the runner is gone)."""
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    sys.argv[1:] = json.loads(line)
    _take_run_args(sys.argv)
    null = os.open(os.devnull, os.O_RDONLY)  # Snakemake and its jobs read nothing from the runner
    os.dup2(null, 0)
    os.close(null)


def main() -> None:
    fastexit.install()  # first: runs after Snakemake's own exit handlers
    _take_run_args(sys.argv)
    if RUN.get("launcher", "").isdigit():
        _die_with_launcher(int(RUN["launcher"]))
    from snakemake.cli import main as snakemake

    if RUN.get("argv") == "stdin":
        _argv_from_stdin()
    server = None
    if RUN.get("forkserver"):  # before Snakemake's own start (~0.9 s before its first job): it warms up meanwhile
        from . import forkserver

        started = forkserver.start(RUN["forkserver"])
        if started is not None:
            server, os.environ[forkserver.ENV] = started  # the jobs inherit Snakemake's environment

    try:
        snakemake()
        fastexit.set_code(0)
    except SystemExit as exc:
        fastexit.set_code(exc.code)
        raise
    except KeyboardInterrupt:
        fastexit.set_code(130)
        raise
    finally:
        if server is not None:  # waited for: its CPU time and its jobs' count in this process's children
            forkserver.stop(server)


if __name__ == "__main__":
    main()
