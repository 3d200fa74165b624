"""`mintdim verify OUT [--source [--all]]`: check a finished output directory without trusting it."""

from __future__ import annotations

import sys

from . import lang_option


def run(args) -> int:
    from ..reading.verify import main_lines, to_json, verify

    report = verify(
        args.output,
        source=args.source or args.all,
        all=args.all,
        sample=args.sample,
        root=args.root,
        seed=args.seed,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if args.json:
        print(to_json(report))
    else:
        lines = main_lines(report, None if args.limit == 0 else args.limit)
        for line in lines[:-1]:
            print(line, file=sys.stderr)
        print(lines[-1])
    return 0 if report.ok else 1


def register(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="check an output directory against itself (and its source files)",
        description="Check a finished output directory without trusting it: shard sizes (records x unit_size "
        "x bytes_per_token), padding after token_count, tokens inside the vocabulary, and that "
        "sample_index, histogram, stats, duplicate and UNK indexes agree with each other and with the "
        "shards. With --source, also read the source files again (paths as the manifest declares them, "
        "from --root), re-render and re-hash every line, and re-encode a sample of the samples "
        "(--sample N, or --all) to compare their tokens with the shard records. Changes nothing.",
        epilog="Each problem is printed with its file (and sample). Exit codes: 0 no problem, 1 problems "
        "found, 2 usage error.",
    )
    p.add_argument("output", help="output directory of a finished build (output.dir in the config)")
    p.add_argument("--source", action="store_true", help="re-read, re-render and re-hash the source files")
    p.add_argument(
        "--all", action="store_true", help="with --source: re-encode every sample (implies --source)"
    )
    p.add_argument(
        "--sample",
        type=int,
        default=1000,
        metavar="N",
        help="with --source: samples to re-encode, chosen at random (default 1000)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of that random choice (default 0)")
    p.add_argument(
        "--root",
        default=None,
        help="directory the manifest's relative paths start from (default: the current directory)",
    )
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="problems to print (default 50; 0: all)"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    lang_option(p)
    p.set_defaults(func=run)
