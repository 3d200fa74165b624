"""`mintdim tokenizer train|export|add-specials`: make and fix tokenizers for MintDim.

train         train a BPE tokenizer (ffbpe) on rendered samples: a config's source files,
              JSONL files with --fields/--template, or plain text lines; <unk>/<pad> reserved
export        a byte-unit unitoken model directory -> Hugging Face tokenizer.json, same ids
add-specials  a copy of a tokenizer with the missing PAD/UNK appended (IN untouched, ids unchanged)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from types import SimpleNamespace

from .. import errors as E
from . import lang_option


def _print(result: dict, as_json: bool, line: str) -> None:
    print(json.dumps(result, indent=1, ensure_ascii=False) if as_json else line)


# --- train --------------------------------------------------------------------------------------------------


def _corpus(args):
    """A build-like object whose files are what to render, and the indexes to read."""
    from ..config import check_template, load_config_file, resolve

    if args.config:
        build = resolve(load_config_file(args.config))
        return build, [f.index for f in build.files]
    files = []
    for i, path in enumerate(args.jsonl or []):
        if not os.path.isfile(path):
            raise E.MintDimFileNotFoundError.make("source", path)
        if not args.fields:
            raise E.FieldMappingError.jsonl_needs_fields()
        template = (
            unescape(args.template)
            if args.template is not None
            else "\n".join(f"{{{n}}}" for n in args.fields)
        )
        source = SimpleNamespace(fields=list(args.fields), template=template)  # FileEntry's shape
        entry = SimpleNamespace(index=i, path=path, abspath=os.path.abspath(path), source=source)
        check_template(entry)
        files.append(entry)
    return SimpleNamespace(files=files, chunk_mb=64), [f.index for f in files]


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}


def unescape(text: str) -> str:
    """A template typed on a command line (`--template '{q}\\n\\n{a}'`, as docs/tokenizers.md types it)
    means what the same text means in a config's double-quoted YAML string: \\n newline, \\t tab, \\r,
    \\\\ and \\"."""
    import re

    return re.sub(r'\\([nrt"\\])', lambda m: _ESCAPES[m.group(1)], text)


def _text_lines(paths):
    for path in paths:
        if not os.path.isfile(path):
            raise E.MintDimFileNotFoundError.make("source", path)
        with open(path, encoding="utf-8", errors="strict") as f:
            for line in f:
                line = line.rstrip("\n")
                if line.strip():
                    yield line


def run_train(args) -> int:
    from ..config import check_train_item
    from ..tokenizers import training
    from ..tokenizers.specials import refuse_existing

    sources = sum(bool(x) for x in (args.config, args.jsonl, args.text))
    if sources != 1:
        print("mintdim tokenizer train: give exactly one of --config, --jsonl or --text", file=sys.stderr)
        return 2
    options = check_train_item(
        {
            "vocab_size": args.vocab_size,
            "unit": args.unit,
            "out": args.out,
            "hot_pair_window_size": args.hot_pair_window_size,
        }
    )
    refuse_existing(args.out)
    stats = training.TextStats()
    if args.text:
        texts = _text_lines(args.text)
        corpus = {"text_files": list(args.text), "records": "one per non-blank line"}
    else:
        build, indexes = _corpus(args)
        texts = training.iter_rendered(build, indexes, stats)
        files = [build.files[i] for i in indexes]
        corpus = {
            "files": [f.path for f in files],
            "fields": [f.source.fields for f in files],
            "templates": [f.source.template for f in files],
        }
    parent = os.path.dirname(os.path.abspath(args.out.rstrip("/")))
    os.makedirs(parent, exist_ok=True)
    log = (lambda message: print(message, file=sys.stderr)) if not args.quiet else None
    with tempfile.TemporaryDirectory(prefix=".mintdim-train-", dir=parent) as tmp:
        staging = os.path.join(tmp, "model")
        result = training.train_texts(texts, staging, log=log, **options)
        reference = {
            "trainer": "ffbpe",
            "ffbpe_version": training.ffbpe_version(),
            **options,
            "special_tokens": list(training.SPECIAL_TOKENS),
            "corpus": corpus,
            "samples": stats.samples if not args.text else None,
            "model_vocab_size": result["vocab_size"],
        }
        training.write_record(
            staging, {"created_by": "mintdim tokenizer train", "reference": reference, "run": result}
        )
        training.install(staging, os.path.abspath(args.out))
    _print(
        {"out": args.out, **result},
        args.json,
        f"[tokenizer] trained {args.out}: vocab {result['vocab_size']} (<unk> 0, <pad> 1), "
        f"{result['unique_words']} unique words; count {result['count_seconds']} s, "
        f"train {result['train_seconds']} s",
    )
    return 0


# --- export -------------------------------------------------------------------------------------------------


def run_export(args) -> int:
    from ..tokenizers.export import export
    from ..tokenizers.specials import read_check_texts

    checks = [t for path in (args.check or []) for t in read_check_texts(path)]
    result = export(args.model, args.out, check_texts=checks)
    _print(
        {"out": args.out, **result},
        args.json,
        f"[tokenizer] exported {args.model} -> {args.out}: vocab {result['vocab_size']}, unk_id "
        f"{result['unk_id']}, pad_id {result['pad_id']}; identical ids on {result['checked_texts']} texts "
        f"({result['checked_tokens']} tokens)",
    )
    return 0


# --- add-specials -------------------------------------------------------------------------------------------


def run_add_specials(args) -> int:
    from ..tokenizers.specials import add_specials, read_check_texts

    checks = [t for path in (args.check or []) for t in read_check_texts(path)]
    result = add_specials(args.input, args.out, pad=args.pad, unk=args.unk, check_texts=checks)
    added = ", ".join(f"{k} {v} ({result['tokens'][k]})" for k, v in result["added"].items())
    _print(
        {"out": args.out, **result},
        args.json,
        f"[tokenizer] wrote {args.out}: added {added}; vocab {result['vocab_size'][0]} -> "
        f"{result['vocab_size'][1]}; existing ids unchanged, same ids on {result['checked_texts']} texts",
    )
    missing = [k for k in ("unk_id", "pad_id") if result[k] is None]
    if missing:
        print(f"[tokenizer] note: {args.out} still lacks {', '.join(missing)}", file=sys.stderr)
    return 0


def run(args) -> int:
    if not getattr(args, "tool", None):
        args.parser.print_help()
        return 2
    return args.tool(args)


EXIT_CODES = "Exit codes: 0 ok, 1 error (one clear message on stderr; nothing written), 2 usage error."


def register(sub) -> None:
    p = sub.add_parser(
        "tokenizer",
        help="train, export, or add special tokens to a tokenizer",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=_raw(),
    )
    p.set_defaults(func=run, parser=p)
    tools = p.add_subparsers(dest="tool_name", metavar="TOOL")
    _register_train(tools)
    _register_export(tools)
    _register_add_specials(tools)


def _register_train(tools) -> None:
    """`mintdim tokenizer train`: its options."""
    t = tools.add_parser(
        "train",
        epilog=EXIT_CODES,
        help="train a BPE tokenizer on rendered samples (ffbpe)",
        description="Train a BPE tokenizer (ffbpe) with <unk> (id 0) and <pad> (id 1) reserved, on the "
        "rendered samples of a config's source files (--config: each file through its template), of JSONL "
        "files (--jsonl with --fields and --template), or on plain text (--text: each non-blank line "
        "a record). Counting streams; nothing is held in memory but the word counts. Writes the model "
        "directory OUT (ffbpe.json, vocab.json, merges.txt, mintdim-train.json); use it as "
        "`tokenizer: {unitoken: {path: OUT}}`. OUT must be new or empty.",
    )
    t.add_argument("out", help="model directory to write (new or empty)")
    t.add_argument(
        "--vocab-size", type=int, required=True, help="target vocabulary (>= 258), specials included"
    )
    t.add_argument(
        "--unit",
        choices=["byte", "unicode"],
        default="byte",
        help="byte (default; exports to tokenizer.json) or unicode",
    )
    t.add_argument(
        "--hot-pair-window-size",
        type=int,
        default=None,
        help="bound the trainer's pair memory (exact top-K window; same model), e.g. 4096",
    )
    t.add_argument("--config", help="a MintDim config: train on its source files, rendered")
    t.add_argument("--jsonl", nargs="+", help="JSONL files to render")
    t.add_argument("--fields", nargs="+", help="with --jsonl: the keys to render")
    t.add_argument(
        "--template",
        help="with --jsonl: the template (default: the fields joined by newlines); "
        "\\n, \\t, \\r, \\\\ and \\\" mean what they mean in the config's YAML: "
        "'{prompt}\\n{response}'",
    )
    t.add_argument("--text", nargs="+", help="plain UTF-8 text files, one record per line")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress lines")
    lang_option(t)
    t.set_defaults(tool=run_train)


def _register_export(tools) -> None:
    """`mintdim tokenizer export`: its options."""
    x = tools.add_parser(
        "export",
        epilog=EXIT_CODES,
        help="unitoken model directory (byte unit) -> Hugging Face tokenizer.json",
        description="Write a Hugging Face tokenizer.json that encodes exactly as a byte-unit unitoken model "
        "(same vocabulary, merges, byte-level pre-tokenizer; <unk> as the model's unk token and "
        "<pad> in the padding settings, so MintDim's hf_json kind finds the same ids). Ids are "
        "checked on a probe text and the --check files before anything is written.",
    )
    x.add_argument("model", help="model directory saved by ffbpe (unit byte)")
    x.add_argument("out", help="tokenizer.json to write (must not exist)")
    x.add_argument(
        "--check", nargs="+", help="text (.txt: lines) or JSONL files whose texts must encode the same"
    )
    x.add_argument("--json", action="store_true", help="print the result as JSON")
    lang_option(x)
    x.set_defaults(tool=run_export)


def _register_add_specials(tools) -> None:
    """`mintdim tokenizer add-specials`: its options."""
    a = tools.add_parser(
        "add-specials",
        epilog=EXIT_CODES,
        help="write a copy of a tokenizer with the missing PAD/UNK appended",
        description="Write OUT: the tokenizer IN (SentencePiece .model, tokenizer.json, or unitoken model "
        "directory) with the missing special tokens appended as new ids. IN is never touched and no "
        "existing id changes; OUT is checked (existing ids, a probe text, --check files) before it is "
        "written. With neither --pad nor --unk, whatever is missing is added as <pad> / <unk>.",
    )
    a.add_argument("input", metavar="IN", help="the tokenizer to copy")
    a.add_argument("out", metavar="OUT", help="the new tokenizer (must not exist; .model / .json like IN)")
    a.add_argument("--pad", metavar="TOKEN", help="add this string as the PAD token")
    a.add_argument(
        "--unk", metavar="TOKEN", help="add this string as the UNK token (tokenizer.json, unitoken)"
    )
    a.add_argument(
        "--check", nargs="+", help="text (.txt: lines) or JSONL files whose texts must encode the same"
    )
    a.add_argument("--json", action="store_true", help="print the result as JSON")
    lang_option(a)
    a.set_defaults(tool=run_add_specials)


def _raw():
    import argparse

    return argparse.RawDescriptionHelpFormatter
