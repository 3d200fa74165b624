"""What every stage job shares: a log that also reaches the console, and failure capture.

A failing job writes its MintDim error as JSON under the build's errors/
directory and raises the build's FAILED flag, so sibling jobs stop early and
the runner can re-raise the same typed error in the caller's process.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from .. import errors as E
from ..outputs import atomic_write_text


class JobLog:
    def __init__(self, path: str | None, console: bool = True):
        self.path = path
        self.console = console
        self._fh = None
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            self._fh = open(path, "a", encoding="utf-8")
        self._last_progress = 0.0

    def __call__(self, message: str) -> None:
        if self._fh:
            self._fh.write(message + "\n")
            self._fh.flush()
        if self.console:
            # one write per line: parallel jobs share the console, and an unbuffered stream
            # would otherwise split text and newline into two writes
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    def detail(self, message: str) -> None:
        """Only to the log file (tracebacks, internals)."""
        if self._fh:
            self._fh.write(message + "\n")
            self._fh.flush()

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


def run(name: str, body, *, log: JobLog, errors_dir: str | None, failed_flag: str | None, lang: str = "en") -> int:
    """Run a stage body; turn every failure into one clear message and an exit code."""
    try:
        body()
        return 0
    except BuildStopped:
        log(f"[unit-build] {name}: stopped because another job of this build failed")
        return 1
    except E.MintDimError as err:
        failure = err
    except Exception as exc:  # disk full, unreadable file, a bug: still one clear message
        log.detail(traceback.format_exc())
        detail = f"Stage: {name}\n\nCause: {type(exc).__name__}: {exc}"
        failure = E.BuildError.make(detail, f"Giai đoạn: {name}\n\nNguyên nhân: {type(exc).__name__}: {exc}")
    if errors_dir and failed_flag:
        try:
            record_failure(errors_dir, failed_flag, name, failure)
        except OSError:
            pass
    log(failure.render(lang))
    return 1


def entry(name: str, description: str, add_args, body, argv=None) -> int:
    """Command-line door of a stage script: common arguments, the log, failure capture.

    `body(args, build, metas, log, stop)` does the work; `stop()` raises BuildStopped
    when another job of this build has failed.
    """
    import argparse

    from .validate import read_validated

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--validated", required=True, help="validated.json written by the validate stage")
    parser.add_argument("--log", default=None, help="log file (lines also go to stderr)")
    add_args(parser)
    args = parser.parse_args(argv)
    log = JobLog(args.log)
    root = os.path.dirname(os.path.abspath(args.validated))
    flag = FailureFlag(os.path.join(root, "FAILED"))
    job_name = name.format(**vars(args))
    state = {"lang": "en"}

    def go():
        build, metas = read_validated(args.validated)
        state["lang"] = build.lang
        body(args, build, metas, log, flag.check)

    return run(job_name, go, log=log, errors_dir=os.path.join(root, "errors"),
               failed_flag=os.path.join(root, "FAILED"), lang=state["lang"])
