"""Training a BPE tokenizer (ffbpe) on the rendered texts of a build's own files.

Config: `tokenizer: {train_bpe: {vocab_size: 32000, unit: byte, out: DIR, hot_pair_window_size: 4096}}`
(API: `.tokenizer.train_bpe({...})`). A dict is shared by every file: one
tokenizer trained on all of them, each sample rendered through its file's
template. A list maps by file; files whose items name the same `out` train one
tokenizer together (their options must agree).

The build then encodes with the trained model exactly as with
`tokenizer: {unitoken: {path: DIR}}`: resolved entries carry kind `unitoken`,
path `out`, and the training options (`FileEntry.tokenizer.train`).

Counting streams: the files are read in byte-range chunks (`chunk_mb`), each
sample parsed and rendered, and the texts fed to ffbpe's native word counter in
bounded batches; no list of texts is held. `<unk>` and `<pad>` are reserved as
ids 0 and 1. `hot_pair_window_size` bounds the trainer's pair memory with the
same result. The model is saved to `out` with `mintdim-train.json`, which
records what it was trained from; the manifest references it, and a rerun of
the same build reuses it. MintDim never overwrites `out`: a directory there must
be new, empty, or a model MintDim trained from the same files and options.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field

from .. import errors as E
from ..sources import inputs, jsonl
from ..sources import template as T
from .unitoken import PAD_TOKEN, UNK_TOKEN, is_model_dir

KIND = "train_bpe"
SPECIAL_TOKENS = [UNK_TOKEN, PAD_TOKEN]  # ids 0 and 1
RECORD = "mintdim-train.json"


def options(item: dict) -> dict:
    """A checked train_bpe item's options, unit and window filled in (the config's schema checked it)."""
    return {
        "vocab_size": item["vocab_size"],
        "unit": item.get("unit", "byte"),
        "hot_pair_window_size": item.get("hot_pair_window_size"),
    }


def inside(a: str, b: str) -> bool:
    """Is path a inside path b (or b itself)?"""
    return (a + os.sep).startswith(b + os.sep)


def check_entries(files, outputs, work_dir: str) -> None:
    """Files that train one `out` agree on options; `out` is apart from outputs, inputs and the work dir."""
    seen: dict[str, tuple[str, dict]] = {}
    work_abs = os.path.abspath(work_dir)
    bad = E.TokenizerValidationError
    for f in files:
        if f.tokenizer.train is None:
            continue
        out = f.tokenizer.abspath
        if out in seen and seen[out][1] != f.tokenizer.train:
            raise bad.train_options_differ(seen[out][0], f.path, f.tokenizer.path)
        seen.setdefault(out, (f.path, f.tokenizer.train))
        for o in outputs:
            if inside(out, o.absdir) or inside(o.absdir, out):
                raise bad.train_out_overlaps(f.tokenizer.path, o.dir)
        if inside(out, work_abs) or inside(work_abs, out):
            raise bad.train_out_overlaps_work(f.tokenizer.path, work_dir)
        if any(g.abspath == out for g in files):
            raise bad.train_out_is_input(f.tokenizer.path)


# --- groups: one trained tokenizer per distinct out ---------------------------------------------------------


@dataclass
class Group:
    index: int
    out: str  # as declared
    out_abs: str
    options: dict
    files: list[int] = field(default_factory=list)


def groups(build) -> list[Group]:
    found: dict[str, Group] = {}
    for f in build.files:
        if f.tokenizer.train is None:
            continue
        g = found.get(f.tokenizer.abspath)
        if g is None:
            g = found[f.tokenizer.abspath] = Group(
                len(found), f.tokenizer.path, f.tokenizer.abspath, dict(f.tokenizer.train)
            )
        g.files.append(f.index)
    return list(found.values())


def group_of(build, file_entry) -> Group:
    return next(g for g in groups(build) if g.out_abs == file_entry.tokenizer.abspath)


def marker(root: str, index: int) -> str:
    """The train job's Snakemake output (in the build's work directory; never the user's `out`)."""
    return os.path.join(root, "train", f"t{index}.json")


def markers(build, root: str) -> list[str]:
    return [marker(root, g.index) for g in groups(build)]


def sources(build, index: int) -> list[str]:
    return [build.files[i].abspath for i in groups(build)[index].files]


# --- what a model was trained from --------------------------------------------------------------------------


def ffbpe_version() -> str:
    try:
        from importlib.metadata import version

        return version("ffbpe")
    except Exception:  # pragma: no cover
        return "unknown"


def reference(build, group: Group) -> dict:
    """Deterministic description of the training (goes into the record and every manifest that uses it)."""
    files = [build.files[i] for i in group.files]
    return {
        "trainer": "ffbpe",
        "ffbpe_version": ffbpe_version(),
        "out": group.out,
        "vocab_size": group.options["vocab_size"],
        "unit": group.options["unit"],
        "hot_pair_window_size": group.options["hot_pair_window_size"],
        "special_tokens": list(SPECIAL_TOKENS),
        "counting": "PreTokenizer([]) word counter over rendered samples",
        "corpus": {
            "files": [f.path for f in files],
            "fields": [f.source.fields for f in files],
            "templates": [f.source.template for f in files],
        },
    }


def identity(build, group: Group) -> dict:
    """What must be unchanged for a model in `out` to be reused:
    options, templates, files (by size and mtime)."""
    files = [build.files[i] for i in group.files]
    stats = []
    for f in files:
        try:
            st = os.stat(f.abspath)
            stats.append([f.abspath, st.st_size, st.st_mtime_ns])
        except OSError:
            stats.append([f.abspath, None, None])
    return {
        "options": {k: group.options[k] for k in ("vocab_size", "unit", "hot_pair_window_size")},
        "special_tokens": list(SPECIAL_TOKENS),
        "fields": [f.source.fields for f in files],
        "templates": [f.source.template for f in files],
        "files": stats,
    }


def read_record(out_abs: str) -> dict | None:
    try:
        with open(os.path.join(out_abs, RECORD), encoding="utf-8") as f:
            record = json.load(f)
        return record if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None


def state(build, group: Group) -> str:
    """ "absent" (train it) or "ready" (a model MintDim trained from the same files and options: reuse it).

    Anything else in `out` is never touched: OutputValidationError, as for an output directory."""
    out = group.out_abs
    if not os.path.exists(out) or (os.path.isdir(out) and not os.listdir(out)):
        return "absent"
    record = read_record(out)
    if record is not None and is_model_dir(out):
        if record.get("identity") == identity(build, group):
            return "ready"
        raise E.OutputValidationError.train_out_taken(group.out, RECORD)
    raise E.OutputValidationError.train_out_not_empty(group.out)


def check_pending(f) -> None:
    """Pre-flight of a tokenizer that does not exist yet: what is known before training.

    `<unk>` and `<pad>` are reserved by construction; byte-level (and unicode with its byte
    alphabet) never produce an unknown id, so a template literal gives UNK only if it holds
    the text `<unk>` (encoded as that special token). The dtype follows from vocab_size.
    The validate job checks all of it again on the trained model."""
    from .kinds import dtype_for_vocab

    tpl = T.parse(f.source.template)
    for literal in tpl.static_parts:
        if UNK_TOKEN in literal:
            raise E.TemplateTokenizerError.make(f.index, f.source.template, literal)
    if dtype_for_vocab(f.tokenizer.train["vocab_size"]) is None:
        raise E.TokenDTypeValidationError.make(f.tokenizer.train["vocab_size"])


# --- streaming the rendered texts ---------------------------------------------------------------------------


class TextStats:
    def __init__(self):
        self.samples = 0
        self.bytes = 0


def iter_rendered(build, file_indexes, stats: TextStats | None = None, log=None):
    """Rendered samples of the given files, in order, read chunk by chunk (bounded memory).

    Data errors are the tokenize stage's: SourceParseError, SampleSchemaError, with file and line."""
    stats = stats if stats is not None else TextStats()
    t0 = time.monotonic()
    for i in file_indexes:
        entry = build.files[i]
        tpl = T.parse(entry.source.template)
        fields = entry.source.fields
        for start, end in inputs.chunk_bounds(entry.abspath, build.chunk_mb):
            reader = inputs.open_chunk(entry.abspath, start, end, entry.path, fields)
            for local, raw in reader:
                try:
                    obj = reader.parse(raw, 0)
                    jsonl.declared_values(obj, fields, entry.path, 0)
                    text = tpl.render(obj)
                    size = len(text.encode("utf-8"))
                except E.MintDimError:
                    line = reader.location(local)
                    jsonl.declared_values(reader.parse(raw, line), fields, entry.path, line)
                    raise
                except UnicodeEncodeError:
                    raise E.SourceParseError.line_surrogate(entry.path, reader.location(local)) from None
                stats.samples += 1
                stats.bytes += size
                yield text
            if log is not None and hasattr(log, "progress"):
                rate = stats.bytes / max(time.monotonic() - t0, 1e-9)
                log.progress(
                    f"[unit-build] train: counted {stats.samples} samples, {stats.bytes / 1e6:.1f} MB "
                    f"({rate / 1e6:.1f} MB/s)"
                )


# --- training -----------------------------------------------------------------------------------------------


def train_texts(
    texts,
    out_dir: str,
    *,
    vocab_size: int,
    unit: str = "byte",
    hot_pair_window_size: int | None = None,
    log=None,
) -> dict:
    """Count `texts` (any iterable of str, consumed once) and train; saves an ffbpe model directory.

    Byte-unit models use the byte-level alphabet (GPT-2 byte mapping), so they export to a
    Hugging Face tokenizer.json with the same ids (mintdim.tokenizers.export)."""
    from ffbpe import BpeTrainer, PreTokenizer

    log = log or (lambda message: None)
    t0 = time.monotonic()
    counter = PreTokenizer([]).word_counter()  # []: special-token strings are counted as text
    counter.add_source(texts)
    words = counter.len
    t1 = time.monotonic()
    trainer = BpeTrainer(
        SPECIAL_TOKENS,
        unit=unit,
        initial_alphabet="byte_level" if unit == "byte" else None,
        hot_pair_window_size=hot_pair_window_size,
    )
    trainer.add_word_counter(counter)
    trainer.train(vocab_size)
    model = trainer.validate_model()
    t2 = time.monotonic()
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    result = {
        "unique_words": words,
        "vocab_size": trainer.vocab_size,
        "count_seconds": round(t1 - t0, 3),
        "train_seconds": round(t2 - t1, 3),
    }
    if hot_pair_window_size:
        result["hot_pair_window_stats"] = trainer.hot_pair_window_stats
    log(
        f"[unit-build] train: {words} unique words counted in {t1 - t0:.1f} s; vocab {trainer.vocab_size} "
        f"trained in {t2 - t1:.1f} s"
    )
    return result


def write_record(out_dir: str, record: dict) -> None:
    with open(os.path.join(out_dir, RECORD), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")


def install(staging: str, out_abs: str) -> None:
    """Move a finished model directory into `out` (new or empty: checked again right before)."""
    if os.path.isdir(out_abs) and not os.listdir(out_abs):
        os.rmdir(out_abs)
    if os.path.exists(out_abs):
        raise E.OutputValidationError.not_empty(out_abs)
    os.makedirs(os.path.dirname(out_abs) or ".", exist_ok=True)
    try:
        os.replace(staging, out_abs)
    except OSError:  # another file system
        shutil.copytree(staging, out_abs)
        shutil.rmtree(staging, ignore_errors=True)


def train_group(build, group: Group, staging: str, log=print) -> dict:
    """Train the tokenizer of one group into `staging` (with its record); returns the record."""
    stats = TextStats()
    shutil.rmtree(staging, ignore_errors=True)
    result = train_texts(iter_rendered(build, group.files, stats, log), staging, log=log, **group.options)
    ref = reference(build, group)
    ref["samples"] = stats.samples
    ref["text_bytes"] = stats.bytes
    ref["model_vocab_size"] = result["vocab_size"]
    record = {"created_by": "mintdim", "reference": ref, "identity": identity(build, group), "run": result}
    write_record(staging, record)
    log(
        f"[unit-build] train: {stats.samples} samples ({stats.bytes / 1e6:.1f} MB) -> {group.out} "
        f"(vocab {result['vocab_size']})"
    )
    return record


def manifest_reference(out_abs: str) -> dict | None:
    """The record's deterministic part, for manifest.json `tokenizer.trained`."""
    record = read_record(out_abs)
    return record.get("reference") if record else None
