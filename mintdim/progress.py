"""What a job tells: throttled progress lines for long stages (count, share done, rate and ETA), the
job's log (JobLog: a file, and the console), and its timing record (write_timing); without_cyclic_gc for
the loops that time a job's work (many small objects, no reference cycle); samples_said, how the
console names an output's samples.

Nothing is printed during the first `every` seconds, then at most one line every
`every` seconds, so a short job stays silent and a cluster log gets a few lines
per minute, not one per batch:

    [unit-build] write unit 192: 120,000/553,000 records (22%), 45.1 MB/s, ETA 12 s
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time

from .files import atomic_write_text

EVERY = 5.0


def _eta(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    def __init__(self, log, label: str, total: int, what: str = "records", every: float = EVERY, clock=None):
        self.log = log
        self.label = label
        self.total = int(total)
        self.what = what
        self.every = every
        self.clock = clock or time.monotonic
        self.start = self.last = self.clock()

    def line(self, done: int, nbytes: int | None = None) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        share = done / self.total if self.total else 1.0
        text = f"{self.label}: {done:,}/{self.total:,} {self.what} ({share:.0%})"
        if nbytes is not None:
            text += f", {nbytes / elapsed / 1e6:.1f} MB/s"
        else:
            rate = done / elapsed
            text += f", {rate:,.0f} {self.what}/s" if rate >= 10 else f", {rate:.2g} {self.what}/s"
        if 0 < done < self.total:
            text += f", ETA {_eta(elapsed * (self.total - done) / done)}"
        return text

    def update(self, done: int, nbytes: int | None = None) -> bool:
        """Log one line if `every` seconds passed since the start or the last line; True if it did."""
        now = self.clock()
        if now - self.last < self.every:
            return False
        self.last = now
        self.log(self.line(done, nbytes))
        return True


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
                self.console = False  # still gets every line, and the job is not failed by it

    def detail(self, message: str) -> None:
        """Only to the log file (tracebacks, internals)."""
        self._to_file(message)

    def progress(self, message: str, every: float = 5.0, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress >= every:
            self._last_progress = now
            self(message)


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
BENCH_COLUMNS = (
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
)


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
    io_in = (me.ru_inblock + kids.ru_inblock) * 512 / 2**20  # 512-byte blocks
    io_out = (me.ru_oublock + kids.ru_oublock) * 512 / 2**20
    whole = int(wall)
    row = (
        f"{wall:.4f}",
        f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}",
        "NA" if rss_mb is None else f"{rss_mb:.2f}",
        "NA",
        "NA",
        "NA",
        f"{io_in:.2f}",
        f"{io_out:.2f}",
        f"{100 * cpu / wall:.2f}" if wall > 0 else "NA",
        f"{cpu:.2f}",
    )
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        atomic_write_text(path, "\t".join(BENCH_COLUMNS) + "\n" + "\t".join(row) + "\n")
    except OSError as exc:
        if log is not None:
            log(f"[unit-build:warning] timing record {path} not written: {exc}")


@contextlib.contextmanager
def without_cyclic_gc():
    """The cyclic collector paused: for loops that allocate a few objects per sample and make no reference
    cycle, where its passes cost ~3% of a tokenize job's encode (ShareGPT, MiniLM, one thread) and a third
    of the parse of the 107 MB ShareGPT build's sample_index.jsonl (61 k lines) in verify. Reference
    counting still frees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def samples_said(stats: dict) -> str:
    """How the console names an output's samples from its stats.json: those in the shards
    (unit_distribution), and the ones left out of them, when any (total_samples counts every
    sample read): "987 samples (332 dropped: units.overflow)"."""
    kept = sum(stats["unit_distribution"].values())
    dropped = stats["total_samples"] - kept
    if dropped <= 0:
        return f"{stats['total_samples']} samples"
    overflow = stats.get("overflow") or stats.get("packing", {}).get("overflow") or {}
    why = ": units.overflow" if overflow.get("dropped") == dropped else ""
    return f"{kept} samples ({dropped} dropped{why})"
