"""`mintdim workflow-path`: where the installed workflow is, for running Snakemake on it directly."""

from __future__ import annotations


def run(args) -> int:
    from ..paths import snakefile, workflow_root

    print(workflow_root() if args.dir else snakefile())
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "workflow-path",
        help="print the installed Snakefile's path (for a direct snakemake run)",
        description="Print the path of the Snakefile that `mintdim build` runs (inside the installed "
        "package, or the checkout), so Snakemake can run it directly, e.g. to debug one stage: "
        'snakemake -s "$(mintdim workflow-path)" --configfile my.yaml --cores 2 --until plan --notemp',
    )
    p.add_argument(
        "--dir",
        action="store_true",
        help="print the workflow's directory instead (Snakefile, workflow/, scripts/, profiles/)",
    )
    p.set_defaults(func=run)
