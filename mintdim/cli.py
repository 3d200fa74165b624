"""The `mintdim` command: `mintdim build CONFIG.yaml --cores N [...]`.

Exit codes: 0 success, 1 build or validation error (one clear message), 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

from . import __version__
from . import errors as E


def load_config_file(path: str) -> dict:
    if not os.path.isfile(path):
        raise E.MintDimFileNotFoundError.make("config", path)
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise E.PipelineValidationError.invalid(f"{path} is not valid YAML: {exc}",
                                                f"{path} không phải YAML hợp lệ: {exc}")
    return raw if raw is not None else {}


def _build(args) -> int:
    from .runner import run_build

    raw = load_config_file(args.config)
    if args.lang and isinstance(raw, dict):
        raw["lang"] = args.lang
    result = run_build(raw, cores=args.cores, profile=args.profile, keep_intermediates=args.keep_intermediates,
                       dry_run=args.dry_run)
    if not args.dry_run:
        for out in result.outputs:
            s = out.stats
            print(f"[unit-build] built {out.dir}: {s['total_samples']} samples, {s['total_tokens']} tokens, "
                  f"dtype {s['token_dtype']}")
    return 0


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mintdim", description="MintDim: low-padding fixed-width token shards from JSONL datasets.",
        epilog="Exit codes: 0 ok, 1 build or validation error, 2 usage error.")
    parser.add_argument("--version", action="version", version=f"mintdim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    b = sub.add_parser("build", help="run the unit-build workflow for a YAML config",
                       description="Run the unit-build workflow (Snakemake) for a YAML config. "
                                   "Relative paths in the config resolve from the current directory.")
    b.add_argument("config", help="YAML config file (see config/README.md)")
    b.add_argument("--cores", type=int, default=None, help="cores to use (default: all)")
    b.add_argument("--profile", default=None, help="Snakemake profile directory (e.g. profiles/slurm)")
    b.add_argument("--keep-intermediates", action="store_true", help="keep msgpack intermediates in the work dir")
    b.add_argument("--dry-run", action="store_true", help="show the planned jobs, run nothing")
    b.add_argument("--lang", choices=E.LANGS, default=None, help="language of error messages (overrides config)")
    b.set_defaults(func=_build)
    return parser


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except E.MintDimError as err:
        print(str(err), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
