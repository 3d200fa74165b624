"""`mintdim inspect OUT`: what a finished output holds (samples, tokens, padding, histogram)."""

from __future__ import annotations

import json

from .. import errors as E
from . import lang_option


def run(args) -> int:
    import sys

    from ..reading.summary import format_summary, summarize

    if args.sample is not None:
        from ..reading.reader import open as open_dataset
        from ..reading.sample_view import render_sample

        count = open_dataset(args.output).num_samples
        if not 0 <= args.sample < count:
            raise E.UsageError.sample_range(args.sample, count, args.output, count - 1)

        print(
            render_sample(
                args.output, args.sample, args.tokenizer, color=sys.stdout.isatty() and not args.json
            )
        )
        return 0

    summary = summarize(args.output)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_summary(summary))
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "inspect",
        help="summarise a finished output directory",
        description="Print what a finished output directory holds: samples, tokens, dtype, per-unit sample "
        "counts, shards and padding ratio (1 - tokens / (samples x unit_size)), per unit and overall; "
        "duplicate and UNK figures from stats.json; a text histogram of token lengths with the unit "
        "boundaries. Reads the manifest, stats and sample_index.jsonl; changes nothing.",
        epilog="Exit codes: 0 ok, 1 not a finished MintDim output (one clear message), 2 usage error.",
    )
    p.add_argument("output", help="output directory of a finished build (output.dir in the config)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of text")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="ID",
        help="show one sample's text, its trained tokens (source.train_on) highlighted: colour on a "
        "terminal, ⟦ ⟧ brackets otherwise",
    )
    p.add_argument(
        "--tokenizer", default=None, help="tokenizer path for --sample (default: the manifest's path)"
    )
    lang_option(p)
    p.set_defaults(func=run)
