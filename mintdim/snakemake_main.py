"""`python -m snakemake`, for the runner: the same command line, without the teardown at exit.

`mintdim build` and job.run() start Snakemake as `python -m mintdim.snakemake_main ...`
(see runner.py); a user's `snakemake` command is the plain one. See mintdim/fastexit.py.
"""

from __future__ import annotations

from . import fastexit


def main() -> None:
    fastexit.install()  # first: runs after Snakemake's own exit handlers
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
