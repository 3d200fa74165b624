"""`mintdim build CONFIG.yaml`: run the unit-build workflow."""

from __future__ import annotations

import os

import yaml

from .. import errors as E


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


def run(args) -> int:
    from ..runner import run_build

    raw = load_config_file(args.config)
    if args.lang and isinstance(raw, dict):
        raw["lang"] = args.lang
    result = run_build(raw, cores=args.cores, profile=args.profile, keep_intermediates=args.keep_intermediates,
                       dry_run=args.dry_run)
    for out in result.outputs:
        s = out.stats
        print(f"[unit-build] built {out.dir}: {s['total_samples']} samples, {s['total_tokens']} tokens, "
              f"dtype {s['token_dtype']}")
    return 0


def register(sub) -> None:
    b = sub.add_parser("build", help="run the unit-build workflow for a YAML config",
                       description="Run the unit-build workflow (Snakemake) for a YAML config. "
                                   "Relative paths in the config resolve from the current directory.")
    b.add_argument("config", help="YAML config file (see config/README.md)")
    b.add_argument("--cores", type=int, default=None, help="cores to use (default: all)")
    b.add_argument("--profile", default=None, help="Snakemake profile directory (e.g. profiles/slurm)")
    b.add_argument("--keep-intermediates", action="store_true", help="keep msgpack intermediates in the work dir")
    b.add_argument("--dry-run", action="store_true", help="show the planned jobs, run nothing")
    b.add_argument("--lang", choices=E.LANGS, default=None, help="language of error messages (overrides config)")
    b.set_defaults(func=run)
