"""`mintdim export OUT --format hf|megatron --to DEST`: a
finished output as files trainers load without code."""

from __future__ import annotations

import argparse
import textwrap

from . import lang_option

DESCRIPTION = [
    "Verify a finished output directory (as `mintdim verify OUT`), then write it in a format trainers load "
    "without code.",
    "--format hf: a Hugging Face `datasets` directory: datasets.load_from_disk(DEST) (needs pyarrow: pip "
    "install 'mintdim[arrow]'). A bucketed output gives one row per sample: input_ids (no padding), labels "
    "(-100 where source.train_on does not train the token), sample_id. A packed output gives one row per "
    "packed row, without its padding: input_ids, labels (-100 on untrained tokens and on each sample's first "
    "token), position_ids (restarting at each sample), seq_lengths and sample_ids, so that TRL's "
    "padding-free collator and flash-attention models keep the samples apart.",
    "--format megatron: Megatron-Core's indexed dataset, PREFIX.bin + PREFIX.idx: one sequence and one "
    "document per sample, in sample_id order, unpadded. That format has no loss mask: with source.train_on "
    "the masks are written beside it in the same layout, PREFIX_mask.bin + PREFIX_mask.idx (uint8, 1 = a "
    "trained token).",
    "Nothing is overwritten: an existing DEST (a file, or a directory that is not empty) or PREFIX file is "
    "refused. Files are written under temporary names and moved into place when complete; after a failure "
    "nothing is left at DEST.",
]


def run(args) -> int:
    from ..reading.export import export

    export(args.output, args.format, args.to, log=print)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write a finished output as a Hugging Face datasets directory or a Megatron indexed dataset",
        description="\n\n".join(textwrap.fill(par, 100) for par in DESCRIPTION),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 exported, 1 not a finished output, verification failed, DEST exists or a write "
        "failed (one clear message; nothing left at DEST), 2 usage error.",
    )
    p.add_argument("output", help="output directory of a finished build (output.dir in the config)")
    p.add_argument(
        "--format",
        required=True,
        choices=["hf", "megatron"],
        help="hf: a datasets directory; megatron: PREFIX.bin/.idx (+ PREFIX_mask.bin/.idx)",
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="DEST",
        help="hf: the directory to create; megatron: the path prefix (PREFIX) of the files",
    )
    lang_option(p)
    p.set_defaults(func=run)
