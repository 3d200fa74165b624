"""`mintdim suggest-units SOURCE -k K`: padding-optimal unit sizes for an output or a config."""

from __future__ import annotations

import json

from .. import errors as E
from . import lang_option


def fraction(text: str) -> float:
    """--max-padding: 0.05 or 5%; a fraction of 1 or more (5 meant 500%) is a usage error."""
    import argparse

    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(E.UsageError.fraction("--max-padding", text).en)
    return value


def positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(E.UsageError.positive("--multiple-of", text).en)
    return value


def _pct(x) -> str:
    return "-" if x is None else f"{x:.2%}"


def run(args) -> int:
    from ..reading.suggest import suggest_units

    answers = suggest_units(
        args.source,
        k=args.k,
        multiple_of=args.multiple_of,
        min_size=args.min,
        max_size=args.max,
        max_padding=args.max_padding,
        cost=args.cost,
        cores=args.cores,
        pack=args.pack,
    )
    if args.json:
        print(json.dumps([a.as_dict() for a in answers], indent=2))
        return 0
    for a in answers:
        s = a.suggestion
        print(f"{a.output}: {a.samples} samples, {a.distinct_lengths} distinct token lengths")
        if a.current_sizes:
            print(
                f"  current   sizes {a.current_sizes}: padding "
                f"{_pct(a.current.padding_ratio if a.current else None)}"
            )
        print(
            f"  suggested sizes {s.sizes}: padding {_pct(s.report.padding_ratio)} "
            f"({s.report.pad_tokens} pad tokens in {s.report.total_slots} slots; cost {s.cost})"
        )
        for k, ratio in s.by_k.items():
            print(f"    k={k}: padding {_pct(ratio)}")
        if s.note:
            print(f"  note: {s.note}")
        for p in a.packed or []:
            print(
                f"  packed    rows of {p['row_length']}: padding {_pct(p['padding_ratio'])} "
                f"({p['pad_tokens']} pad tokens in {p['total_slots']} slots; {p['rows']} rows, lower bound "
                f"{p['lower_bound_rows']}"
                + (
                    f"; {p['longer_than_row']} samples longer than a row left out)"
                    if p["longer_than_row"]
                    else ")"
                )
            )
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "suggest-units",
        help="unit sizes that minimise padding (exact), for an output or a config",
        description="Find the K unit sizes that minimise total padded token slots for the exact token "
        "lengths of a finished output (its sample_index.jsonl) or of a config (tokenized by the build's own "
        "tokenize stage). The answer is optimal (dynamic programme over the distinct lengths).",
    )
    p.add_argument("source", help="an output directory, or a YAML config file")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("-k", type=int, help="number of unit sizes")
    group.add_argument(
        "--max-padding",
        type=fraction,
        help="the smallest K whose padding ratio is at most this: a fraction below 1 (0.05) or 5%%",
    )
    p.add_argument(
        "--multiple-of", type=positive_int, default=1, help="every size a multiple of this (default 1)"
    )
    p.add_argument("--min", type=int, default=None, help="no size below this")
    p.add_argument("--max", type=int, default=None, help="no size above this")
    p.add_argument(
        "--cost",
        choices=["linear", "attention"],
        default="linear",
        help="linear: token slots; attention: a slot of a unit of size s costs s (sum of s^2)",
    )
    p.add_argument("--cores", type=int, default=None, help="tokenizer threads when reading a config")
    p.add_argument(
        "--pack",
        type=int,
        nargs="*",
        default=[4096, 8192],
        metavar="ROW",
        help="also show the packed layout (units.pack) with these row lengths (default 4096 8192; "
        "--pack with no value: none)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    lang_option(p)
    p.set_defaults(func=run)
