"""What every stage job shares: its command line, its log and timing record (mintdim/progress.py),
failure capture.

A failing job writes its MintDim error as JSON under the build's errors/
directory and raises the build's FAILED flag, so sibling jobs stop early and
the launcher can raise the same typed error in the caller's process.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback

from .. import errors as E
from ..faults import kill_point
from ..formats.records import atomic_write_text
from ..progress import JobLog, write_timing
from .failure import unexpected
from .guard import job_lock


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


def run(
    name: str, body, *, log: JobLog, errors_dir: str | None, failed_flag: str | None, lang="en", writes=None
) -> int:
    """Run a stage body; turn every failure into one clear message and an exit code.

    lang: the language of the message, or a function giving it once the body has run (the job
    entry learns the config's `lang` only inside the body)."""
    # held while the job runs: a rerun after a killed Snakemake waits for this job to end
    lock = job_lock(os.path.dirname(errors_dir)) if errors_dir else None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # _door.py ends quietly until here
    try:
        return _run(
            name, body, log=log, errors_dir=errors_dir, failed_flag=failed_flag, lang=lang, writes=writes
        )
    finally:
        if lock is not None:
            os.close(lock)  # drops the flock


def _run(name: str, body, *, log, errors_dir, failed_flag, lang, writes) -> int:
    stage, code = name.split("_")[0], 1
    try:
        kill_point(f"{stage}:start")
        body()
        kill_point(f"{stage}:end")
        return 0
    except BuildStopped:
        log(f"[unit-build] {name}: stopped because another job of this build failed")
        return 1
    except KeyboardInterrupt:  # Ctrl-C reaches every process of the group: one line, no traceback
        failure, code = E.BuildError.interrupted(name), 130
    except E.MintDimError as err:
        failure = err
    except Exception as exc:  # disk full, unreadable file, a bug: still one clear message
        log.detail(traceback.format_exc())
        failure = unexpected(name, exc, writes)
    if errors_dir and failed_flag:
        try:
            record_failure(errors_dir, failed_flag, name, failure)
        except OSError:  # e.g. the disk is full: the launcher finds the full file system (failure.full_disks)
            pass
    log(
        f"[unit-build] {name}: interrupted"
        if code == 130
        else failure.render(lang() if callable(lang) else lang)
    )
    return code


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

    return _door(
        name, description, add_args, argv, "--validated", "validated.json written by the validate stage", work
    )


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

    return _door(
        name, description, add_args, argv, "--config-file", "the build's config.json (WORK/<build id>/)", work
    )


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
    code = run(
        name.format(**vars(args)),
        go,
        log=log,
        errors_dir=os.path.join(root, "errors"),
        failed_flag=os.path.join(root, "FAILED"),
        lang=lambda: state["lang"],
        writes=writes,
    )
    if code == 0:
        write_timing(args.bench, log)
    return code


_WRITE_ARGS = ("out", "units", "stage", "written", "agg", "done")  # where stage jobs write
