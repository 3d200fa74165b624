#!/usr/bin/env python3
"""Padding of hand-picked unit sizes vs the optimal sizes for the same K, on a real dataset.

    python benchmarks/padding_figures.py --data FILE.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer tokenizer.json [--k 4,8,12] [--multiple-of 64]

Token lengths come from MintDim's own tokenize stage (mintdim.suggest_units with a
config); for each K the table compares a power-of-two list (the usual hand-made
choice, the largest size raised to fit the longest sample) with the exact optimum; then the
packed layout (units.pack, mintdim.units.packing) for each --pack row length, with the samples longer
than a row truncated (overflow: truncate) and dropped (overflow: drop).
"""

from __future__ import annotations

import argparse
import os

from mintdim.reading.suggest import lengths_from_config
from mintdim.units import packing, padding


def hand_sizes(k: int, longest: int) -> list[int]:
    sizes = [128 * 2**i for i in range(k)]
    if sizes[-1] < longest:
        sizes[-1] = 1 << (longest - 1).bit_length()
    return sizes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True)
    p.add_argument("--template", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--k", default="4,8,12")
    p.add_argument("--multiple-of", type=int, default=64)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--pack", default="4096,8192", help="row lengths of the packed layout ('' for none)")
    args = p.parse_args()
    kind = "sentencepiece" if args.tokenizer.endswith(".model") else "hf_json"
    cfg = {
        "source": {
            "files": [os.path.abspath(args.data)],
            "fields": [args.fields.split(",")],
            "templates": [args.template.encode().decode("unicode_escape")],
        },
        "tokenizer": {kind: {"path": os.path.abspath(args.tokenizer)}},
        "units": {"sizes": [[1]], "build_batch": [4096]},
        "output": {"dir": "unused-out", "samples_per_shard": [1]},
    }
    [(_, lengths, _)] = lengths_from_config(cfg, args.cores)
    values, counts = padding.histogram(lengths)
    print(
        f"{len(lengths)} samples, {int(lengths.sum())} tokens, longest {int(values[-1])}, "
        f"{len(values)} distinct lengths; tokenizer {os.path.basename(args.tokenizer)}\n"
    )
    print(
        f"{'K':>3}  {'hand-picked sizes (powers of two)':<60} {'padding':>8}   "
        f"{'optimal sizes (multiple of ' + str(args.multiple_of) + ')':<60} {'padding':>8}"
    )
    for k in map(int, args.k.split(",")):
        hand = hand_sizes(k, int(values[-1]))
        best = padding.suggest(values=values, counts=counts, k=k, multiple_of=args.multiple_of)
        print(
            f"{k:>3}  {str(hand):<60} {padding.measure(values, counts, hand).padding_ratio:>8.2%}   "
            f"{str(best.sizes):<60} {best.report.padding_ratio:>8.2%}"
        )
    for row in [int(r) for r in args.pack.split(",") if r]:
        for policy in ("truncate", "drop"):
            p = packing.plan(lengths, row, policy)
            over = int((p.status != 0).sum())
            print(
                f"packed rows of {row}, overflow {policy}: padding {1 - p.efficiency:.3%} (efficiency "
                f"{p.efficiency:.3%}), {p.n_rows} rows, lower bound {p.lower_bound} "
                f"(+{p.n_rows / p.lower_bound - 1:.3%}), {over} samples longer than a row, "
                f"{int(p.tokens)} of {int(lengths.sum())} tokens kept"
            )


if __name__ == "__main__":
    main()
