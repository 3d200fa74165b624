"""Training a BPE tokenizer (ffbpe) on the rendered texts of a build's own files.

Config: `tokenizer: {train_bpe: {vocab_size: 32000, unit: byte, out: DIR, hot_pair_window_size: 4096}}`
(API: `.tokenizer.train_bpe({...})`). A dict is shared by every file: one
tokenizer trained on all of them, each sample rendered through its file's
template. A list maps by file; files whose items name the same `out` train one
tokenizer together (their options must agree).

The build then encodes with the trained model exactly as with
`tokenizer: {unitoken: {path: DIR}}`: resolved entries carry kind `unitoken`,
path `out`, and the training options (`FileEntry.tokenizer_train`).

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

from . import errors as E
from . import jsonl
from . import template as T
from .unitoken import PAD_TOKEN, UNK_TOKEN, is_model_dir

KIND = "train_bpe"
KEYS = ("vocab_size", "unit", "out", "hot_pair_window_size")
UNITS = ("byte", "unicode")
SPECIAL_TOKENS = [UNK_TOKEN, PAD_TOKEN]  # ids 0 and 1
MIN_VOCAB = 256 + len(SPECIAL_TOKENS)
RECORD = "mintdim-train.json"

_RULES_EN = ["train_bpe config must be a dict with keys: vocab_size, out (unit, hot_pair_window_size optional)",
             f"vocab_size is an int >= {MIN_VOCAB} (256 bytes + <unk> + <pad>)",
             "unit is byte or unicode (default byte)",
             "out is a directory path: new, empty, or a model MintDim trained from the same files and options",
             "hot_pair_window_size is a positive int (bounds trainer memory, same result)"]
_RULES_VI = ["config train_bpe phải là dict có key: vocab_size, out (unit, hot_pair_window_size tuỳ chọn)",
             f"vocab_size là số nguyên >= {MIN_VOCAB} (256 byte + <unk> + <pad>)",
             "unit là byte hoặc unicode (mặc định byte)",
             "out là đường dẫn thư mục: mới, rỗng, hoặc model MintDim đã train từ cùng file và tuỳ chọn",
             "hot_pair_window_size là số nguyên dương (giới hạn bộ nhớ trainer, cùng kết quả)"]


def _config_error(en: str, vi: str, component: str = "train_bpe") -> E.TokenizerValidationError:
    return E.TokenizerValidationError.config(en, vi, component=component, rules_en=_RULES_EN, rules_vi=_RULES_VI)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_item(item) -> dict:
    """A train_bpe item, checked; returns the normalized options (unit and window filled in)."""
    if not isinstance(item, dict):
        raise _config_error(f"train_bpe config must be a dict, got {type(item).__name__}",
                            f"config train_bpe phải là dict, hiện tại là {type(item).__name__}")
    unknown = [k for k in item if k not in KEYS]
    if unknown:
        raise _config_error(f"train_bpe config has unknown keys: {unknown!r}",
                            f"config train_bpe có key không hợp lệ: {unknown!r}")
    missing = [k for k in ("vocab_size", "out") if k not in item]
    if missing:
        raise _config_error(f"train_bpe config is missing keys: {missing!r}",
                            f"config train_bpe thiếu key: {missing!r}")
    vocab = item["vocab_size"]
    if not _is_int(vocab) or vocab < MIN_VOCAB:
        raise _config_error(f"vocab_size must be an int >= {MIN_VOCAB}, got {vocab!r}",
                            f"vocab_size phải là số nguyên >= {MIN_VOCAB}, hiện tại là {vocab!r}",
                            component="train_bpe.vocab_size")
    unit = item.get("unit", "byte")
    if unit not in UNITS:
        raise _config_error(f"unit must be byte or unicode, got {unit!r}",
                            f"unit phải là byte hoặc unicode, hiện tại là {unit!r}", component="train_bpe.unit")
    out = item["out"]
    if not isinstance(out, str) or not out:
        raise _config_error(f"out must be a non-empty path (string), got {out!r}",
                            f"out phải là đường dẫn (string) không rỗng, hiện tại là {out!r}",
                            component="train_bpe.out")
    window = item.get("hot_pair_window_size")
    if window is not None and (not _is_int(window) or window < 1):
        raise _config_error(f"hot_pair_window_size must be a positive int, got {window!r}",
                            f"hot_pair_window_size phải là số nguyên dương, hiện tại là {window!r}",
                            component="train_bpe.hot_pair_window_size")
    return {"vocab_size": vocab, "unit": unit, "hot_pair_window_size": window}


def inside(a: str, b: str) -> bool:
    """Is path a inside path b (or b itself)?"""
    return (a + os.sep).startswith(b + os.sep)


def check_entries(files, outputs, work_dir: str) -> None:
    """Files that train one `out` agree on options; `out` is apart from outputs, inputs and the work dir."""
    seen: dict[str, tuple[str, dict]] = {}
    work_abs = os.path.abspath(work_dir)
    for f in files:
        if f.tokenizer_train is None:
            continue
        out = f.tokenizer_abspath
        if out in seen and seen[out][1] != f.tokenizer_train:
            raise _config_error(
                f"files {seen[out][0]} and {f.path} train the same out {f.tokenizer_path} with different options",
                f"file {seen[out][0]} và {f.path} train cùng out {f.tokenizer_path} với tuỳ chọn khác nhau",
                component="train_bpe.out")
        seen.setdefault(out, (f.path, f.tokenizer_train))
        for o in outputs:
            if inside(out, o.absdir) or inside(o.absdir, out):
                raise _config_error(f"out {f.tokenizer_path} overlaps the output directory {o.dir}",
                                    f"out {f.tokenizer_path} trùng với thư mục output {o.dir}",
                                    component="train_bpe.out")
        if inside(out, work_abs) or inside(work_abs, out):
            raise _config_error(f"out {f.tokenizer_path} overlaps the work directory {work_dir}",
                                f"out {f.tokenizer_path} trùng với thư mục làm việc {work_dir}",
                                component="train_bpe.out")
        if any(g.abspath == out for g in files):
            raise _config_error(f"out {f.tokenizer_path} is an input file", f"out {f.tokenizer_path} là file đầu vào",
                                component="train_bpe.out")


# --- groups: one trained tokenizer per distinct out ----------------------------------------------------------


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
        if f.tokenizer_train is None:
            continue
        g = found.get(f.tokenizer_abspath)
        if g is None:
            g = found[f.tokenizer_abspath] = Group(len(found), f.tokenizer_path, f.tokenizer_abspath,
                                                   dict(f.tokenizer_train))
        g.files.append(f.index)
    return list(found.values())


def group_of(build, file_entry) -> Group:
    return next(g for g in groups(build) if g.out_abs == file_entry.tokenizer_abspath)


def marker(root: str, index: int) -> str:
    """The train job's Snakemake output (in the build's work directory; never the user's `out`)."""
    return os.path.join(root, "train", f"t{index}.json")


def markers(build, root: str) -> list[str]:
    return [marker(root, g.index) for g in groups(build)]


def sources(build, index: int) -> list[str]:
    return [build.files[i].abspath for i in groups(build)[index].files]


# --- what a model was trained from ---------------------------------------------------------------------------


def ffbpe_version() -> str:
    try:
        from importlib.metadata import version

        return version("ffbpe")
    except Exception:  # pragma: no cover
        return "unknown"


def reference(build, group: Group) -> dict:
    """Deterministic description of the training (goes into the record and every manifest that uses it)."""
    files = [build.files[i] for i in group.files]
    return {"trainer": "ffbpe", "ffbpe_version": ffbpe_version(), "out": group.out,
            "vocab_size": group.options["vocab_size"], "unit": group.options["unit"],
            "hot_pair_window_size": group.options["hot_pair_window_size"], "special_tokens": list(SPECIAL_TOKENS),
            "counting": "PreTokenizer([]) word counter over rendered samples",
            "corpus": {"files": [f.path for f in files], "fields": [f.fields for f in files],
                       "templates": [f.template for f in files]}}


def identity(build, group: Group) -> dict:
    """What must be unchanged for a model in `out` to be reused: options, templates, files (by size and mtime)."""
    files = [build.files[i] for i in group.files]
    stats = []
    for f in files:
        try:
            st = os.stat(f.abspath)
            stats.append([f.abspath, st.st_size, st.st_mtime_ns])
        except OSError:
            stats.append([f.abspath, None, None])
    return {"options": {k: group.options[k] for k in ("vocab_size", "unit", "hot_pair_window_size")},
            "special_tokens": list(SPECIAL_TOKENS), "fields": [f.fields for f in files],
            "templates": [f.template for f in files], "files": stats}


def read_record(out_abs: str) -> dict | None:
    try:
        with open(os.path.join(out_abs, RECORD), encoding="utf-8") as f:
            record = json.load(f)
        return record if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None


def state(build, group: Group) -> str:
    """"absent" (train it) or "ready" (a model MintDim trained from the same files and options: reuse it).

    Anything else in `out` is never touched: OutputValidationError, as for an output directory."""
    out = group.out_abs
    if not os.path.exists(out) or (os.path.isdir(out) and not os.listdir(out)):
        return "absent"
    record = read_record(out)
    if record is not None and is_model_dir(out):
        if record.get("identity") == identity(build, group):
            return "ready"
        err = E.OutputValidationError.not_empty(group.out)
        err.en += ("\n\nIt holds a tokenizer MintDim trained from other files, templates or options "
                   f"(tokenizer.train_bpe.out; see {RECORD} there). Delete it to train again, or choose a new out.")
        err.vi += ("\n\nThư mục chứa tokenizer MintDim đã train từ file, template hoặc tuỳ chọn khác "
                   f"(tokenizer.train_bpe.out; xem {RECORD}). Hãy xoá nó để train lại, hoặc chọn out mới.")
        raise err.with_lang(err.lang)
    err = E.OutputValidationError.not_empty(group.out)
    err.en += "\n\ntokenizer.train_bpe.out is where the trained tokenizer is saved; MintDim never overwrites it."
    err.vi += "\n\ntokenizer.train_bpe.out là nơi lưu tokenizer được train; MintDim không bao giờ ghi đè nó."
    raise err.with_lang(err.lang)


def check_pending(f) -> None:
    """Pre-flight of a tokenizer that does not exist yet: what is known before training.

    `<unk>` and `<pad>` are reserved by construction; byte-level (and unicode with its byte
    alphabet) never produce an unknown id, so a template literal gives UNK only if it holds
    the text `<unk>` (encoded as that special token). The dtype follows from vocab_size.
    The validate job checks all of it again on the trained model."""
    from .tokenizers import dtype_for_vocab

    tpl = T.parse(f.template)
    for literal in tpl.static_parts:
        if UNK_TOKEN in literal:
            raise E.TemplateTokenizerError.make(f.index, f.template, literal)
    if dtype_for_vocab(f.tokenizer_train["vocab_size"]) is None:
        raise E.TokenDTypeValidationError.make(f.tokenizer_train["vocab_size"])


# --- streaming the rendered texts ----------------------------------------------------------------------------


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
        tpl = T.parse(entry.template)
        fields = entry.fields
        for start, end in jsonl.chunk_bounds(entry.abspath, build.chunk_mb):
            reader = jsonl.ChunkReader(entry.abspath, start, end, entry.path)
            for local, raw in reader:
                try:
                    obj = jsonl.parse_object(raw, entry.path, 0)
                    jsonl.declared_values(obj, fields, entry.path, 0)
                    text = tpl.render(obj)
                    size = len(text.encode("utf-8"))
                except E.MintDimError:
                    line = reader.first_line() + local
                    jsonl.declared_values(jsonl.parse_object(raw, entry.path, line), fields, entry.path, line)
                    raise
                except UnicodeEncodeError:
                    raise E.SourceParseError.make(entry.path, reader.first_line() + local, "surrogate") from None
                stats.samples += 1
                stats.bytes += size
                yield text
            if log is not None and hasattr(log, "progress"):
                rate = stats.bytes / max(time.monotonic() - t0, 1e-9)
                log.progress(f"[unit-build] train: counted {stats.samples} samples, {stats.bytes / 1e6:.1f} MB "
                             f"({rate / 1e6:.1f} MB/s)")


# --- training --------------------------------------------------------------------------------------------------


def train_texts(texts, out_dir: str, *, vocab_size: int, unit: str = "byte", hot_pair_window_size: int | None = None,
                log=None) -> dict:
    """Count `texts` (any iterable of str, consumed once) and train; saves an ffbpe model directory.

    Byte-unit models use the byte-level alphabet (GPT-2 byte mapping), so they export to a
    Hugging Face tokenizer.json with the same ids (mintdim.export)."""
    from ffbpe import BpeTrainer, PreTokenizer

    log = log or (lambda message: None)
    t0 = time.monotonic()
    counter = PreTokenizer([]).word_counter()  # []: special-token strings are counted as text
    counter.add_source(texts)
    words = counter.len
    t1 = time.monotonic()
    trainer = BpeTrainer(SPECIAL_TOKENS, unit=unit, initial_alphabet="byte_level" if unit == "byte" else None,
                         hot_pair_window_size=hot_pair_window_size)
    trainer.add_word_counter(counter)
    trainer.train(vocab_size)
    model = trainer.validate_model()
    t2 = time.monotonic()
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    result = {"unique_words": words, "vocab_size": trainer.vocab_size, "count_seconds": round(t1 - t0, 3),
              "train_seconds": round(t2 - t1, 3)}
    if hot_pair_window_size:
        result["hot_pair_window_stats"] = trainer.hot_pair_window_stats
    log(f"[unit-build] train: {words} unique words counted in {t1 - t0:.1f} s; vocab {trainer.vocab_size} "
        f"trained in {t2 - t1:.1f} s")
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
    log(f"[unit-build] train: {stats.samples} samples ({stats.bytes / 1e6:.1f} MB) -> {group.out} "
        f"(vocab {result['vocab_size']})")
    return record


def manifest_reference(out_abs: str) -> dict | None:
    """The record's deterministic part, for manifest.json `tokenizer.trained`."""
    record = read_record(out_abs)
    return record.get("reference") if record else None
