"""What happens when a build fails after pre-flight: markers in every output, one clear message.

Called from the Snakefile's onerror handler (the main Snakemake process).
"""

from __future__ import annotations

import errno
import json
import os
import shutil

from .. import errors as E
from ..formats import records


def collect(errors_dir: str) -> list[E.MintDimError]:
    """Errors the failed jobs recorded, spec errors first, then in name order (stable)."""
    found = []
    try:
        names = sorted(os.listdir(errors_dir))
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(errors_dir, name), encoding="utf-8") as f:
                found.append(E.MintDimError.from_dict(json.load(f)))
        except (OSError, ValueError, KeyError):
            continue
    found.sort(key=lambda e: isinstance(e, E.BuildError))
    return found


def first_error(layout, lang: str = "en", build=None, recorded=()) -> E.MintDimError | None:
    """Why a build failed, from MintDim's records: `recorded` (the Snakemake process's own error) and the
    jobs' errors, else a full file system (a job could not even record its error); None: nothing says."""
    errs = list(recorded) + collect(layout.errors_dir)
    if errs:
        return errs[0].with_lang(lang)
    full = full_disks([layout.root] + ([o.absdir for o in build.outputs] if build else []))
    return (
        E.BuildError.disk_full(", ".join(full), os.path.join(layout.root, "logs"), lang=lang)
        if full
        else None
    )


def full_disks(paths, below: int = 64 * 1024) -> list[str]:
    """Those of `paths` (or their nearest existing parent) on a file system with almost no space left."""
    found = []
    for path in paths:
        probe = os.path.abspath(path)
        while not os.path.exists(probe) and os.path.dirname(probe) != probe:
            probe = os.path.dirname(probe)
        try:
            if shutil.disk_usage(probe).free < below:
                found.append(path)
        except OSError:
            continue
    return found


def reset(layout) -> None:
    """A new run starts with no failure recorded."""
    shutil.rmtree(layout.errors_dir, ignore_errors=True)
    try:
        os.unlink(layout.failed_flag)
    except FileNotFoundError:
        pass


def on_error(build, layout, claimed) -> E.MintDimError:
    """claimed: the outputs this run holds (guard.BuildGuard): markers go only there, never into another
    live build's."""
    err = first_error(layout, build.lang, build) or E.BuildError.no_mintdim_error(
        os.path.join(layout.root, "logs"), lang=build.lang
    )
    mark(build, err, claimed)
    return err


def mark(build, err: E.MintDimError, claimed) -> None:
    """Failure markers into the outputs this run holds; best effort: the message reaches the user anyway."""
    try:
        records.write_failure_markers(build, err, only=claimed)
    except OSError as exc:
        print(f"[unit-build:warning] could not write failure markers: {exc}")


def unexpected(stage: str, exc: BaseException, writes=None, **kw) -> E.BuildError:
    """A failure that is not a MintDim error (disk full, an unreadable file, a bug), in one clear message.
    An OSError names its path: the one the system reported, else where the job writes (`writes`)."""
    cause = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:  # the path goes on a line of its own
        cause = f"{type(exc).__name__}: " + (f"[Errno {exc.errno}] " if exc.errno else "") + exc.strerror
    if not isinstance(exc, OSError):
        return E.BuildError.job_failed(stage, cause, **kw)
    paths = [p for p in (exc.filename, exc.filename2) if p] or [p for p in (writes or []) if p]
    # numpy: a short write
    space = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) or (
        exc.errno is None and "written" in str(exc)
    )
    return E.BuildError.job_failed(
        stage,
        cause,
        ", ".join(os.fsdecode(p) for p in paths) or None,
        named=bool(exc.filename),
        space=space,
        **kw,
    )
