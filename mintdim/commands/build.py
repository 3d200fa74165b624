"""`mintdim build CONFIG.yaml`: run the unit-build workflow."""

from __future__ import annotations

import os

from . import lang_option


def shipped_profile(profile: str | None) -> str | None:
    """A profile directory as given, or the name of one shipped with MintDim (slurm, local-cluster)."""
    from ..paths import workflow_root

    if profile and not os.path.isdir(profile) and os.sep not in profile:
        shipped = os.path.join(workflow_root(), "profiles", profile)
        if os.path.isfile(os.path.join(shipped, "config.yaml")):
            return shipped
    return profile


def run(args) -> int:
    from ..config import load_config_file
    from ..progress import samples_said
    from ..run import runner

    raw = load_config_file(args.config)
    if args.lang and isinstance(raw, dict):
        raw["lang"] = args.lang
    result = runner.run_build(
        raw,
        cores=args.cores,
        profile=shipped_profile(args.profile),
        keep_intermediates=args.keep_intermediates,
        dry_run=args.dry_run,
        rebuild=args.rebuild,
        until=args.until,
        forcerun=args.forcerun,
        report=args.report,
        how=f"mintdim build {args.config} --rebuild",
    )
    if args.until and not result.outputs and not args.dry_run:
        print(
            f"[unit-build] stopped after {', '.join(args.until)} (--until); files of this build: "
            f"{os.path.join(result.work_dir, result.build_id)}"
        )
    for out in result.outputs:
        s = out.stats
        what = "built"
        if result.already_built and args.forcerun:  # the stages ran again; finalize found the same bytes
            what = (
                f"built again (--forcerun {' '.join(args.forcerun)}): the same bytes as the finished "
                "output, which stays;"
            )
        elif result.already_built:
            what = "already built (same config and inputs; " + (
                "report written)" if result.reports_written else "nothing to do)"
            )
        print(
            f"[unit-build] {what} {out.dir}: {samples_said(s)}, {s['total_tokens']} tokens, "
            f"dtype {s['token_dtype']}"
        )
    return 0


def register(sub) -> None:
    b = sub.add_parser(
        "build",
        help="run the unit-build workflow for a YAML config",
        description="Run the unit-build workflow (Snakemake) for a YAML config. "
        "Relative paths in the config resolve from the current directory. "
        "Prints one line per closed shard and a summary per output.",
        epilog="Exit codes: 0 built (or nothing to do), 1 build or validation error (one clear "
        "message: the spec's error class and text), 2 usage error. Logs: "
        "<work_dir>/<build id>/logs/ (work_dir defaults to .mintdim).",
    )
    b.add_argument("config", help="YAML config file (see config/README.md)")
    b.add_argument("--cores", type=int, default=None, help="cores to use (default: all)")
    b.add_argument(
        "--profile",
        default=None,
        help="Snakemake profile: a directory, or the name of a shipped one (slurm, "
        "local-cluster); it sets the executor and resources (see docs/clusters.md)",
    )
    b.add_argument(
        "--keep-intermediates", action="store_true", help="keep msgpack intermediates in the work dir"
    )
    b.add_argument(
        "--dry-run",
        action="store_true",
        help="show the planned jobs (a count per rule, then each job), run nothing",
    )
    b.add_argument(
        "--rebuild",
        action="store_true",
        help="replace a finished output that MintDim wrote (same or another config of this work dir), "
        "e.g. after an input changed; a directory holding anything else is never touched",
    )
    b.add_argument(
        "--until",
        action="append",
        metavar="RULE",
        default=None,
        help="run only up to this rule (validate, tokenize, plan, write, aggregate, finalize); "
        "with --keep-intermediates to look at its files (repeatable)",
    )
    b.add_argument(
        "--forcerun",
        action="append",
        metavar="RULE",
        default=None,
        help="run this rule (and what depends on it) again even if its outputs exist (repeatable); "
        "on a finished output the result must be the same bytes",
    )
    b.add_argument(
        "--report",
        action="store_true",
        help="also write each output's report (stats.html, stats.txt, and lengths.png with matplotlib) "
        "under <work_dir>/<build id>/report/, for `snakemake --report report.html reports`",
    )
    lang_option(b, "language of error messages: en, vi or both (overrides the config's lang)")
    b.set_defaults(func=run)
