"""What every stage job shares: a log that also reaches the console, failure capture, and the
job's timing record.

A failing job writes its MintDim error as JSON under the build's errors/
directory and raises the build's FAILED flag, so sibling jobs stop early and
the launcher can raise the same typed error in the caller's process.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import threading
import time
import traceback

from .. import errors as E
from ..faults import kill_point
from .guard import job_lock
from ..formats.records import atomic_write_text


class JobLog:
    def __init__(self, path: str | None, console: bool = True):
        self.path = path
        self.console = console
        self._fh = None
        if path:
            try:
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                self._fh = open(path, "a", encoding="utf-8")
            except OSError:
                self._fh = None
        self._last_progress = 0.0

    def _to_file(self, message: str) -> None:
        if self._fh:
            try:
                self._fh.write(message + "\n")
                self._fh.flush()
            except OSError:  # a full disk: the console still gets every line
                self._fh = None

    def __call__(self, message: str) -> None:
        self._to_file(message)
        if self.console:
            # one write per line: parallel jobs share the console, and an unbuffered stream
            # would otherwise split text and newline into two writes
            try:
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # nobody reads the console any more (launcher gone): the log file
                self.console = False      # still gets every line, and the job is not failed by it

    def detail(self, message: str) -> None:
        """Only to the log file (tracebacks, internals)."""
        self._to_file(message)

    def progress(self, message: str, every: float = 5.0, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress >= every:
            self._last_progress = now
            self(message)


class BuildStopped(Exception):
    """Another job of this build failed; this one stops without adding an error of its own."""


class FailureFlag:
    """Cheap check, once per batch, whether another job of the same build has failed."""

    def __init__(self, path: str):
        self.path = path
        self.started = time.time()

    def check(self) -> None:
        try:
            if os.stat(self.path).st_mtime >= self.started - 1:
                raise BuildStopped()
        except FileNotFoundError:
            pass


def record_failure(errors_dir: str, failed_flag: str, name: str, err: E.MintDimError) -> None:
    os.makedirs(errors_dir, exist_ok=True)
    atomic_write_text(os.path.join(errors_dir, f"{name}.json"), json.dumps(err.to_dict(), ensure_ascii=False))
    atomic_write_text(failed_flag, name + "\n")


def run(name: str, body, *, log: JobLog, errors_dir: str | None, failed_flag: str | None, lang="en",
        writes=None) -> int:
    """Run a stage body; turn every failure into one clear message and an exit code.

    lang: the language of the message, or a function giving it once the body has run (the job
    entry learns the config's `lang` only inside the body)."""
    # held while the job runs: a rerun after a killed Snakemake waits for this job to end
    lock = job_lock(os.path.dirname(errors_dir)) if errors_dir else None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # _door.py ends quietly until here
    try:
        return _run(name, body, log=log, errors_dir=errors_dir, failed_flag=failed_flag, lang=lang, writes=writes)
    finally:
        if lock is not None:
            lock.release()


def _run(name: str, body, *, log, errors_dir, failed_flag, lang, writes) -> int:
    stage = name.split("_")[0]
    try:
        kill_point(f"{stage}:start")
        body()
        kill_point(f"{stage}:end")
        return 0
    except BuildStopped:
        log(f"[unit-build] {name}: stopped because another job of this build failed")
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches every process of the group: one line, no traceback
        failure = E.BuildError.interrupted(name)
        if errors_dir and failed_flag:
            try:
                record_failure(errors_dir, failed_flag, name, failure)
            except OSError:
                pass
        log(f"[unit-build] {name}: interrupted")
        return 130
    except E.MintDimError as err:
        failure = err
    except Exception as exc:  # disk full, unreadable file, a bug: still one clear message
        log.detail(traceback.format_exc())
        failure = unexpected_failure(name, exc, writes)
    if errors_dir and failed_flag:
        try:
            record_failure(errors_dir, failed_flag, name, failure)
        except OSError:  # e.g. the disk is full: the launcher finds the full file system (failure.full_disks)
            pass
    log(failure.render(lang() if callable(lang) else lang))
    return 1


_SPACE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def unexpected_failure(name: str, exc: BaseException, writes=None) -> E.MintDimError:
    """A failure that is not a MintDim error (disk full, an unreadable file, a bug), in one clear message.

    An OSError names its path: the one the system reported, else where this job writes."""
    cause = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:  # the path goes on a line of its own
        cause = f"{type(exc).__name__}: " + (f"[Errno {exc.errno}] " if exc.errno else "") + exc.strerror
    if not isinstance(exc, OSError):
        return E.BuildError.job_failed(name, cause)
    paths = [p for p in (exc.filename, exc.filename2) if p] or [p for p in (writes or []) if p]
    space = exc.errno in _SPACE_ERRNOS or (exc.errno is None and "written" in str(exc))  # numpy: a short write
    return E.BuildError.job_failed(name, cause, ", ".join(os.fsdecode(p) for p in paths) or None,
                                   named=bool(exc.filename), space=space)


def entry(name: str, description: str, add_args, body, argv=None) -> int:
    """Command-line door of a stage script: common arguments, the log, failure capture.

    `body(args, build, metas, log, stop)` does the work; `stop()` raises BuildStopped
    when another job of this build has failed.
    """
    from ..stages.validate import read_validated

    def work(args, log, root):
        build, metas = read_validated(args.validated)
        flag = FailureFlag(os.path.join(root, "FAILED"))
        return build.lang, lambda: body(args, build, metas, log, flag.check)

    return _door(name, description, add_args, argv, "--validated", "validated.json written by the validate stage",
                 work)


def config_entry(name: str, description: str, add_args, body, argv=None) -> int:
    """Command-line door of the stages that run before validated.json exists (validate, train):
    `--config-file` is the build's config.json, in the build's root (mintdim/run/dag.py writes it), so
    the root, the errors directory and the language come from it.

    `body(args, raw, log)` does the work."""
    from ..config import lang_of

    def work(args, log, _root):
        with open(args.config_file, encoding="utf-8") as f:
            raw = json.load(f)
        return lang_of(raw), lambda: body(args, raw, log)

    return _door(name, description, add_args, argv, "--config-file", "the build's config.json (WORK/<build id>/)",
                 work)


def _door(name: str, description: str, add_args, argv, source: str, source_help: str, work) -> int:
    """What both doors share: the arguments, the log, the build's root (the directory of the file
    `source` names) and failure capture. `work(args, log, root)` reads what the job needs and returns
    (the build's language, the job); a failure before that is reported in English."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(source, required=True, help=source_help)
    parser.add_argument("--log", default=None, help="log file (lines also go to stderr)")
    parser.add_argument("--bench", default=None, help="timing record to write when the job ends well (TSV)")
    add_args(parser)
    args = parser.parse_args(argv)
    log = JobLog(args.log)
    root = os.path.dirname(os.path.abspath(getattr(args, source.lstrip("-").replace("-", "_"))))
    state = {"lang": "en"}

    def go():
        state["lang"], job = work(args, log, root)
        job()

    writes = [getattr(args, k) for k in _WRITE_ARGS if isinstance(getattr(args, k, None), str)]
    code = run(name.format(**vars(args)), go, log=log, errors_dir=os.path.join(root, "errors"),
               failed_flag=os.path.join(root, "FAILED"), lang=lambda: state["lang"], writes=writes)
    if code == 0:
        write_timing(args.bench, log)
    return code


_WRITE_ARGS = ("out", "units", "stage", "written", "agg", "done")  # where stage jobs write


# --- the timing record ------------------------------------------------------------------------------
# Each job writes its own `<build>/benchmarks/<job>.tsv` when it ends well, with the columns of
# Snakemake's benchmark TSV. Snakemake's `benchmark:` directive measured the same from the main
# process: a thread that reads each job's /proc smaps (psutil memory_full_info) every 0.5 s for a
# job's first 15 s, then every 30 s. In a 107 MB MiniLM build (2 cores, both busy tokenizing) that
# was 0.34 s of Snakemake's CPU, taken from the tokenize jobs (Snakemake's process: 1.43 s CPU with
# the directive, 1.08 s without, medians of 3; py-spy: 80% of its samples during tokenize in that
# thread), and its cpu_time column was sampled (12.2 s for a 16.3 s CPU job). Here CPU time comes
# from the kernel's accounting (rusage) and peak RSS from /proc/self/status VmHWM, exact and free
# (not rusage's ru_maxrss: Linux keeps it across fork and exec, so a 30 MB job started from
# Snakemake's process reported Snakemake's 100 MB); vms, uss and pss, which need the smaps walk,
# are NA.
BENCH_COLUMNS = ("s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out", "mean_load",
                 "cpu_time")


def _process_age() -> float | None:
    """Seconds since this process started (Linux /proc; the interpreter's start and imports included)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def peak_rss_mb() -> float | None:
    """This process's peak resident set (VmHWM: of its own address space, reset by exec). Also the
    benchmarks' figure: rusage's ru_maxrss survives fork and exec, so a child started from a large
    parent would report the parent's size."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


_STARTED = time.monotonic()  # fallback where /proc is not there: from this module's import


def write_timing(path: str | None, log=None) -> None:
    """The job's timing record (BENCH_COLUMNS; MB are 2^20 bytes, as Snakemake's), written atomically.
    A record that cannot be written is said in the log and does not fail the job: its work is done."""
    if not path:
        return
    import resource

    wall = _process_age()
    wall = time.monotonic() - _STARTED if wall is None else wall
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    rss_mb = peak_rss_mb()
    io_in = (me.ru_inblock + kids.ru_inblock) * 512 / 2 ** 20  # 512-byte blocks
    io_out = (me.ru_oublock + kids.ru_oublock) * 512 / 2 ** 20
    whole = int(wall)
    row = (f"{wall:.4f}", f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}",
           "NA" if rss_mb is None else f"{rss_mb:.2f}", "NA", "NA",
           "NA", f"{io_in:.2f}", f"{io_out:.2f}", f"{100 * cpu / wall:.2f}" if wall > 0 else "NA", f"{cpu:.2f}")
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        atomic_write_text(path, "\t".join(BENCH_COLUMNS) + "\n" + "\t".join(row) + "\n")
    except OSError as exc:
        if log is not None:
            log(f"[unit-build:warning] timing record {path} not written: {exc}")
