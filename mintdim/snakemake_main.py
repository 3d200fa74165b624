"""`python -m snakemake`, for the runner: the same command line, started faster and ended
without the interpreter's teardown.

`mintdim build` and job.run() start Snakemake as `python -m mintdim.snakemake_main ...`
(see runner.py); a user's `snakemake` command is the plain one. See mintdim/fastexit.py.
"""

from __future__ import annotations

import pkgutil
import sys

from . import fastexit


def _scan_sys_path_once() -> None:
    """Snakemake's plugin registries (executor, storage, report, logger, scheduler, ...) each
    call `pkgutil.iter_modules()` and walk every directory on sys.path for their name prefix:
    ~0.2 s per start in a venv of a few hundred packages, growing with it. Within this one
    process the walk gives the same answer each time, so it is done once per sys.path."""
    scan = pkgutil.iter_modules
    seen: dict[tuple, list] = {}

    def iter_modules(path=None, prefix=""):
        if path is not None or prefix:
            return scan(path, prefix)
        key = tuple(sys.path)
        if key not in seen:
            seen[key] = list(scan())
        return iter(seen[key])

    pkgutil.iter_modules = iter_modules


def main() -> None:
    fastexit.install()  # first: runs after Snakemake's own exit handlers
    _scan_sys_path_once()
    from snakemake.cli import main as snakemake

    try:
        snakemake()
        fastexit.set_code(0)
    except SystemExit as exc:
        fastexit.set_code(exc.code)
        raise
    except KeyboardInterrupt:
        fastexit.set_code(130)
        raise


if __name__ == "__main__":
    main()
