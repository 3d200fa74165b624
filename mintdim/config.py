"""Config checks that need no file system, and resolution of shared/mapped blocks.

The same dict comes from a YAML file or from the fluent API. Checks run in a
fixed order (missing blocks, shapes, mapping arity, values, outputs shared by
several files, templates), so one config always reports the same error.
`resolve()` returns a `BuildConfig`: one resolved entry per input file and
one per output directory.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from . import __version__
from . import errors as E
from . import template as T
from . import training
from .tokenizers import EXTENSIONS, KINDS

DEFAULT_WORK_DIR = ".mintdim"
# Each tokenize job loads the tokenizer once (ai21 j2's SentencePiece model: ~0.4 s) and starts
# a Python process; 256 MB chunks keep that under ~2% of the job's encode time. Memory does not
# grow with it (the job streams its chunk).
DEFAULT_CHUNK_MB = 256
TOP_KEYS = {"source", "tokenizer", "units", "output", "lang", "work_dir", "chunk_mb"}
AUTO_KEYS = {"k", "multiple_of", "max_size", "min_size", "cost"}  # units: {sizes: auto, ...}
BLOCK_KEYS = {"source": {"files", "fields", "templates", "train_on", "chat"}, "units": {"sizes", "build_batch"} | AUTO_KEYS,
              "output": {"dir", "samples_per_shard"}}
MISSING_ORDER = ["source.files", "source.fields", "source.templates", "tokenizer", "units.sizes",
                 "units.build_batch", "output.dir", "output.samples_per_shard"]
PACK_KEYS = {"pack", "overflow"}  # units: {pack: [4096], overflow: [drop]}: packed rows instead of sizes
BLOCK_KEYS["units"] = BLOCK_KEYS["units"] | PACK_KEYS


@dataclass
class FileEntry:
    index: int
    path: str  # as declared: every index shows it like this
    abspath: str
    fields: list[str]
    template: str
    tokenizer_kind: str
    tokenizer_path: str
    tokenizer_abspath: str
    sizes: list[int] | None  # None: planned from the data (units.sizes: auto)
    build_batch: int
    output: int
    samples_per_shard: int
    tokenizer_train: dict | None = None  # tokenizer.train_bpe: options; the model goes to tokenizer_path
    train_on: list[str] | None = None  # source.train_on: fields whose tokens the loss mask trains
    pack: int | None = None  # units.pack: row length of the packed layout (None: bucketed units)
    overflow: str | None = None  # units.overflow with pack: error | drop | truncate
    chat: dict | None = None  # source.chat: the conversation options (mintdim/chat.py); train_on holds roles
    tokenizer_options: dict | None = None  # hf_dir: pad_token, chat_template (a path as declared)

    @property
    def compression(self) -> str | None:
        if self.path.endswith(".gz"):
            return "gz"
        if self.path.endswith(".zst"):
            return "zst"
        return None


@dataclass
class OutputEntry:
    index: int
    dir: str  # as declared
    absdir: str
    files: list[int]
    tokenizer_kind: str
    tokenizer_path: str
    tokenizer_abspath: str
    sizes: list[int] | None
    samples_per_shard: int
    auto: dict | None = None  # the planning options when sizes are auto
    build_batches: list[int] = field(default_factory=list)
    pack: int | None = None  # units.pack: packed rows of this length (sizes is then [pack])
    overflow: str | None = None  # with pack: error | drop | truncate


@dataclass
class BuildConfig:
    files: list[FileEntry]
    outputs: list[OutputEntry]
    lang: str
    work_dir: str
    chunk_mb: float
    raw: dict

    @property
    def build_id(self) -> str:
        """Identity of this build: the resolved config and the MintDim version, not the data."""
        canon = {"version": __version__, "files": [_canon(f) for f in self.files],
                 "outputs": [_canon(o) for o in self.outputs]}
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def work_abs(self) -> str:
        return os.path.abspath(self.work_dir)

    @property
    def build_dir(self) -> str:
        return os.path.join(self.work_dir, self.build_id)


# fields of extensions (units.pack, source.chat, hf_dir options): in the build id only when set, so
# builds that do not use them keep the id (and work directory) they had before the extension
EXTENSION_FIELDS = PACK_KEYS | {"chat", "tokenizer_options"}


def _canon(entry) -> dict:
    """An entry for the build id, without the extension fields a build does not use."""
    return {k: v for k, v in asdict(entry).items() if not (k in EXTENSION_FIELDS and v is None)}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_pos_int(value) -> bool:
    return _is_int(value) and value > 0


def _blank(value) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and len(value) == 0)


def _tname(value) -> str:
    return type(value).__name__


def lang_of(raw) -> str:
    lang = raw.get("lang", "en") if isinstance(raw, dict) else "en"
    return lang if lang in E.LANGS else "en"


def _tokenizer_block(raw: dict):
    """(kind, items, was_list) or raises. A dict value is shared; a list maps by file."""
    tok = raw.get("tokenizer")
    if not isinstance(tok, dict):
        raise E.TokenizerValidationError.config(
            f"tokenizer must be a mapping with one key (sentencepiece or hf_json), got {_tname(tok)}",
            f"tokenizer phải là mapping có một key (sentencepiece hoặc hf_json), hiện tại là {_tname(tok)}")
    kinds = list(tok)
    if len(kinds) != 1:
        raise E.TokenizerValidationError.config(
            f"declare exactly one tokenizer kind, got {kinds!r}",
            f"chỉ khai báo đúng một loại tokenizer, hiện tại là {kinds!r}")
    kind = kinds[0]
    if kind not in KINDS and kind != training.KIND:
        raise E.TokenizerValidationError.unsupported(f"Declared kind: {kind}", f"Loại đã khai báo: {kind}")
    value = tok[kind]
    items = value if isinstance(value, list) else [value]
    return kind, items, isinstance(value, list)


def _check_tokenizer_item(item, index: int, kind: str) -> None:
    if kind == training.KIND:
        training.check_item(item)
        return
    if not isinstance(item, dict):
        raise E.TokenizerValidationError.config(
            f"tokenizer config must be a dict with key: path, got {_tname(item)}",
            f"config tokenizer phải là dict có key: path, hiện tại là {_tname(item)}")
    unknown = [k for k in item if k != "path" and not (kind == "hf_dir" and k in HF_DIR_KEYS)]
    if unknown:
        raise E.TokenizerValidationError.unknown_keys(unknown)
    if "path" not in item:
        raise E.TokenizerValidationError.config("tokenizer config is missing key: path",
                                                "config tokenizer thiếu key: path")
    if not isinstance(item["path"], str):
        raise E.TokenizerValidationError.config(
            f"path must be a string, got {_tname(item['path'])}",
            f"path phải là string, hiện tại là {_tname(item['path'])}", component="path")
    if not item["path"]:
        raise E.TokenizerValidationError.config("path must be a non-empty string, got an empty string",
                                                "path phải là string không rỗng, hiện tại là string rỗng",
                                                component="path")


def _find_missing(raw: dict) -> list[str]:
    missing = []
    for key in MISSING_ORDER:
        if key == "tokenizer":
            tok = raw.get("tokenizer")
            # a kind with no value at all is missing; a kind with a dict (even {}) is checked as a config
            empty = _blank(tok) or (isinstance(tok, dict) and all(v is None or v == [] for v in tok.values()))
            if empty:
                missing.append(key)
            continue
        block, name = key.split(".")
        section = raw.get(block)
        if key == "units.sizes" and isinstance(section, dict) and "pack" in section:
            continue  # pack replaces sizes
        if not isinstance(section, dict) or _blank(section.get(name)):
            missing.append(key)
    return missing


def _pick(values: list, i: int):
    return values[0] if len(values) == 1 else values[i]


def resolve(raw) -> BuildConfig:
    """Check a config dict and resolve it. Raises the spec's error classes."""
    lang = lang_of(raw)
    try:
        return _resolve(raw, lang)
    except E.MintDimError as err:
        raise err.with_lang(lang)


def _resolve(raw, lang: str) -> BuildConfig:
    if not isinstance(raw, dict):
        raise E.PipelineValidationError.missing(MISSING_ORDER)
    if raw.get("lang", "en") not in E.LANGS:
        raise E.PipelineValidationError.invalid(f"lang must be one of en, vi, both, got {raw.get('lang')!r}",
                                                f"lang phải là en, vi hoặc both, hiện tại là {raw.get('lang')!r}")
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise E.PipelineValidationError.unknown_keys(unknown, TOP_KEYS)
    for block, keys in BLOCK_KEYS.items():
        if isinstance(raw.get(block), dict):
            extra = sorted(set(raw[block]) - keys)
            if extra:
                raise E.PipelineValidationError.unknown_keys(extra, keys, block)

    # 1. missing blocks, all listed at once (source.chat: conversation files need no fields/templates)
    chats, raw_view = _chat_view(raw)
    missing = _find_missing(raw_view)
    if missing:
        raise E.PipelineValidationError.missing(missing)
    src, units, out = raw_view["source"], raw["units"], raw["output"]
    files, fields, templates = src["files"], src["fields"], src["templates"]
    packs = _pack_options(units)  # units.pack: (row lengths, overflow policies), else None
    sizes, batches = ([[p] for p in packs[0]] if packs else units["sizes"]), units["build_batch"]
    dirs_raw, sps = out["dir"], out["samples_per_shard"]

    # 2. shapes
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise E.PipelineValidationError.invalid("source.files must be a list of file paths (strings)",
                                                "source.files phải là list đường dẫn file (string)")
    if not isinstance(fields, list) or not all(isinstance(f, list) for f in fields):
        raise E.FieldMappingError.invalid("fields must be a list of lists, e.g. [[\"prompt\", \"response\"]]",
                                          "fields phải là list các list, ví dụ [[\"prompt\", \"response\"]]")
    for i, names in enumerate(fields):
        if not names or not all(isinstance(n, str) and n for n in names):
            raise E.FieldMappingError.invalid(f"fields[{i}] must be a non-empty list of field names (strings)",
                                              f"fields[{i}] phải là list tên field (string) không rỗng")
        if len(set(names)) != len(names):
            raise E.FieldMappingError.invalid(f"fields[{i}] names a field twice: {names!r}",
                                              f"fields[{i}] khai báo một field hai lần: {names!r}")
    if not isinstance(templates, list) or not all(isinstance(t, str) for t in templates):
        raise E.TemplateMappingError.invalid("templates must be a list of strings",
                                             "templates phải là list các string")
    kind, tok_items, _ = _tokenizer_block(raw)
    for i, item in enumerate(tok_items):
        _check_tokenizer_item(item, i, kind)
    auto = _auto_options(units) if sizes == "auto" else None
    if auto is None and any(key in units for key in AUTO_KEYS):
        raise E.UnitValidationError.make(
            f"{sorted(AUTO_KEYS & set(units))} apply only with sizes: auto",
            f"{sorted(AUTO_KEYS & set(units))} chỉ dùng được với sizes: auto")
    if auto is not None:
        sizes = [None]
    elif not isinstance(sizes, list) or not all(isinstance(s, list) for s in sizes):
        raise E.UnitValidationError.make("sizes must be a list of lists, e.g. [[128, 256]]",
                                         "sizes phải là list các list, ví dụ [[128, 256]]")
    if not isinstance(batches, list):
        raise E.UnitValidationError.make("build_batch must be a list, e.g. [4096]",
                                         "build_batch phải là list, ví dụ [4096]")
    dirs = dirs_raw if isinstance(dirs_raw, list) else [dirs_raw]
    if not all(isinstance(d, str) and d for d in dirs) or not dirs:
        raise E.OutputValidationError.invalid("output.dir must be a path (string) or a list of paths",
                                              "output.dir phải là đường dẫn (string) hoặc list đường dẫn")
    if not isinstance(sps, list):
        raise E.SamplesPerShardError.make(f"samples_per_shard must be a list of positive ints, got {_tname(sps)}",
                                          f"samples_per_shard phải là list số nguyên dương, hiện tại là {_tname(sps)}")

    # 3. mapping arity: len 1 (shared) or len N (mapped)
    n = len(files)

    def arity_ok(values) -> bool:
        return len(values) in (1, n)

    if not arity_ok(fields):
        raise E.FieldMappingError.arity(n, len(fields))
    if not arity_ok(templates):
        raise E.TemplateMappingError.arity(n, len(templates))
    train_on = _check_train_on(src.get("train_on"), fields, n, chats)
    if not arity_ok(tok_items):
        raise E.TokenizerMappingError.arity(n, len(tok_items))
    if not arity_ok(sizes):
        raise E.UnitMappingError.arity(n, len(sizes))
    if packs and not arity_ok(packs[1]):
        raise E.UnitMappingError.arity(n, len(packs[1]))
    if not arity_ok(batches):
        raise E.UnitMappingError.arity(n, len(batches))
    if not arity_ok(dirs):
        raise E.OutputMappingError.arity(n, len(dirs))
    if not arity_ok(sps):
        raise E.SamplesPerShardError.arity(n, len(sps))

    # 4. values
    for i, unit_sizes in enumerate(sizes if auto is None else []):
        if not unit_sizes or not all(_is_pos_int(s) for s in unit_sizes):
            raise E.UnitValidationError.make(f"sizes[{i}] = {unit_sizes!r}", f"sizes[{i}] = {unit_sizes!r}")
        if any(a >= b for a, b in zip(unit_sizes, unit_sizes[1:])):
            raise E.UnitValidationError.make(f"sizes[{i}] = {unit_sizes!r} is not sorted ascending",
                                             f"sizes[{i}] = {unit_sizes!r} không tăng dần")
    for i, batch in enumerate(batches):
        if not _is_pos_int(batch):
            raise E.UnitValidationError.make(f"build_batch[{i}] = {batch!r}", f"build_batch[{i}] = {batch!r}")
    for i, value in enumerate(sps):
        if not _is_pos_int(value):
            raise E.SamplesPerShardError.value(i, value)
    for item in tok_items:
        if kind in EXTENSIONS and not item["path"].endswith(EXTENSIONS[kind]):
            raise E.TokenizerValidationError.unsupported(
                f"Declared: {kind} with path {item['path']}", f"Đã khai báo: {kind} với path {item['path']}")
    work_dir = raw.get("work_dir", DEFAULT_WORK_DIR)
    if not isinstance(work_dir, str) or not work_dir:
        raise E.PipelineValidationError.invalid("work_dir must be a non-empty path (string)",
                                                "work_dir phải là đường dẫn (string) không rỗng")
    chunk_mb = raw.get("chunk_mb", DEFAULT_CHUNK_MB)
    if isinstance(chunk_mb, bool) or not isinstance(chunk_mb, (int, float)) or not chunk_mb > 0:
        raise E.PipelineValidationError.invalid(f"chunk_mb must be a positive number, got {chunk_mb!r}",
                                                f"chunk_mb phải là số dương, hiện tại là {chunk_mb!r}")

    # resolve one entry per file
    out_index: dict[str, int] = {}
    outputs: list[OutputEntry] = []
    entries: list[FileEntry] = []
    for i, path in enumerate(files):
        tok_item = _pick(tok_items, i)
        tok_path = tok_item["out"] if kind == training.KIND else tok_item["path"]
        out_dir = _pick(dirs, i)
        absdir = os.path.abspath(out_dir)
        entry = FileEntry(
            index=i, path=path, abspath=os.path.abspath(path), fields=list(_pick(fields, i)),
            template=_pick(templates, i), tokenizer_kind="unitoken" if kind == training.KIND else kind,
            tokenizer_path=tok_path, tokenizer_abspath=os.path.abspath(tok_path),
            tokenizer_train=training.check_item(tok_item) if kind == training.KIND else None,
            sizes=None if auto else list(_pick(sizes, i)),
            build_batch=_pick(batches, i), output=-1, samples_per_shard=_pick(sps, i),
            train_on=list(_pick(train_on, i)) if train_on else None)
        if chats is not None:
            _chat_entry(entry, chats, i, src.get("train_on"), kind, tok_item)
        elif kind == "hf_dir":
            entry.tokenizer_options = _hf_dir_options(tok_item)
        if absdir not in out_index:
            out_index[absdir] = len(outputs)
            outputs.append(OutputEntry(index=len(outputs), dir=out_dir, absdir=absdir, files=[],
                                       tokenizer_kind=entry.tokenizer_kind, tokenizer_path=tok_path,
                                       tokenizer_abspath=entry.tokenizer_abspath, sizes=entry.sizes, auto=auto,
                                       samples_per_shard=entry.samples_per_shard))
        entry.output = out_index[absdir]
        outputs[entry.output].files.append(i)
        outputs[entry.output].build_batches.append(entry.build_batch)
        entries.append(entry)

    # 5. files sharing one output must share its tokenizer, unit sizes and samples_per_shard
    for o in outputs:
        members = [entries[i] for i in o.files]
        paths = [m.path for m in members]
        if len({m.tokenizer_abspath for m in members}) > 1:
            raise E.TokenizerMappingError.collision("tokenizer", o.dir, paths, [m.tokenizer_path for m in members])
        if len({tuple(m.sizes or ()) for m in members}) > 1:
            raise E.UnitMappingError.collision("unit sizes", o.dir, paths, [m.sizes for m in members])
        if len({m.samples_per_shard for m in members}) > 1:
            vals = ", ".join(f"{m.path}: {m.samples_per_shard}" for m in members)
            raise E.SamplesPerShardError.make(
                f"files that share output {o.dir} must share samples_per_shard ({vals})",
                f"các file dùng chung output {o.dir} phải dùng chung samples_per_shard ({vals})")
    work_abs = os.path.abspath(work_dir)
    absdirs = [o.absdir for o in outputs]
    for o in outputs:
        for other in absdirs:
            if other != o.absdir and (other + os.sep).startswith(o.absdir + os.sep):
                raise E.OutputValidationError.invalid(f"output {o.dir} contains another output {other}",
                                                      f"output {o.dir} chứa một output khác {other}")
        if (work_abs + os.sep).startswith(o.absdir + os.sep) or (o.absdir + os.sep).startswith(work_abs + os.sep):
            raise E.OutputValidationError.invalid(f"output {o.dir} overlaps the work directory {work_dir}",
                                                  f"output {o.dir} trùng với thư mục làm việc {work_dir}")
        for e in entries:
            if e.abspath == o.absdir:
                raise E.OutputValidationError.invalid(f"output {o.dir} is an input file",
                                                      f"output {o.dir} là một file đầu vào")

    if packs:
        _resolve_pack(entries, outputs, packs)
    training.check_entries(entries, outputs, work_dir)  # tokenizer.train_bpe: out apart from outputs and work
    # 6. templates against fields
    for e in entries:
        if e.chat is None:
            check_template(e)
    _check_hf_dir_items(kind, tok_items)
    return BuildConfig(files=entries, outputs=outputs, lang=lang, work_dir=work_dir, chunk_mb=float(chunk_mb),
                       raw=raw)


def _check_train_on(train_on, fields: list, n: int, chats: list | None = None) -> list | None:
    """source.train_on: a list of lists of field names, shared (len 1) or mapped (len N) like fields.
    A conversation file (source.chat) names roles instead: mintdim/chat.py checks those."""
    if train_on is None:
        return None
    if not isinstance(train_on, list) or not train_on or not all(isinstance(t, list) for t in train_on):
        raise E.FieldMappingError.invalid("train_on must be a list of lists of field names, e.g. [[\"output\"]]",
                                          "train_on phải là list các list tên field, ví dụ [[\"output\"]]")
    if len(train_on) not in (1, n):
        raise E.FieldMappingError.invalid(f"Received {n} input files but {len(train_on)} train_on entries",
                                          f"Nhận {n} file đầu vào nhưng chỉ có {len(train_on)} train_on")
    for i in range(n):
        if chats is not None and chats[i] is not None:
            continue
        names, declared = _pick(train_on, i), _pick(fields, i)
        for name in names:
            if not isinstance(name, str) or name not in declared:
                raise E.FieldMappingError.invalid(
                    f"train_on[{i if len(train_on) > 1 else 0}] names {name!r}, which is not one of the file's "
                    f"fields {declared!r}",
                    f"train_on[{i if len(train_on) > 1 else 0}] có {name!r}, không thuộc fields của file "
                    f"{declared!r}")
    return train_on


def _auto_options(units: dict) -> dict:
    """units: {sizes: auto, k: 4, multiple_of: 64, min_size: .., max_size: .., cost: linear|attention}."""
    from .padding import COSTS

    opts = {"k": units.get("k"), "multiple_of": units.get("multiple_of", 1), "min_size": units.get("min_size"),
            "max_size": units.get("max_size"), "cost": units.get("cost", "linear")}
    if not _is_pos_int(opts["k"]):
        raise E.UnitValidationError.make(f"sizes: auto needs k, a positive int (got {opts['k']!r})",
                                         f"sizes: auto cần k là số nguyên dương (hiện tại là {opts['k']!r})")
    for key in ("multiple_of", "min_size", "max_size"):
        if opts[key] is not None and not _is_pos_int(opts[key]):
            raise E.UnitValidationError.make(f"{key} must be a positive int, got {opts[key]!r}",
                                             f"{key} phải là số nguyên dương, hiện tại là {opts[key]!r}")
    if opts["cost"] not in COSTS:
        raise E.UnitValidationError.make(f"cost must be one of {list(COSTS)}, got {opts['cost']!r}",
                                         f"cost phải là một trong {list(COSTS)}, hiện tại là {opts['cost']!r}")
    if opts["min_size"] and opts["max_size"] and opts["min_size"] > opts["max_size"]:
        raise E.UnitValidationError.make("min_size is above max_size", "min_size lớn hơn max_size")
    return opts


def check_template(e: FileEntry) -> T.Template:
    try:
        tpl = T.parse(e.template)
    except T.TemplateSyntaxError as bad:
        raise E.TemplateFieldMismatchError.make(
            e.path, e.fields, e.template, bad.placeholder,
            f"invalid placeholder ({bad.reason}); use {{name}}, and {{{{ }}}} for literal braces",
            f"placeholder không hợp lệ ({bad.reason}); dùng {{name}}, và {{{{ }}}} cho dấu ngoặc literal")
    declared = set(e.fields)
    for name in tpl.names:
        if name not in declared:
            raise E.TemplateFieldMismatchError.make(
                e.path, e.fields, e.template, name,
                f"template uses {{{name}}}, but fields does not declare it",
                f"template dùng {{{name}}}, nhưng fields không khai báo field này")
    used = set(tpl.names)
    for name in e.fields:
        if name not in used:
            raise E.TemplateFieldMismatchError.make(
                e.path, e.fields, e.template, name,
                f"fields declares {name}, but template does not use {{{name}}}",
                f"fields khai báo {name}, nhưng template không dùng {{{name}}}")
    return tpl


def _pack_options(units: dict) -> tuple[list, list] | None:
    """units.pack (row lengths, shared or mapped) and units.overflow (error | drop | truncate);
    None for the bucketed layout. Checked here; arity with the other lists in _resolve."""
    if "pack" not in units:
        if "overflow" in units:
            raise E.UnitValidationError.pack("overflow_alone")
        return None
    from .packing import OVERFLOW  # here: a bucketed build's Snakefile parse does not import numpy for it
    if "sizes" in units:
        raise E.UnitValidationError.pack("both")
    packs, overflow = units["pack"], units.get("overflow", ["error"])
    if not isinstance(packs, list) or not packs or not all(_is_pos_int(p) for p in packs):
        raise E.UnitValidationError.pack("pack", packs)
    if not isinstance(overflow, list) or not overflow or not all(o in OVERFLOW for o in overflow):
        raise E.UnitValidationError.pack("overflow", overflow)
    return packs, overflow


def _resolve_pack(entries: list, outputs: list, packs: tuple[list, list]) -> None:
    """Packed outputs: every file of one output shares its row length and overflow policy. The
    tokenize stage bounds a sample by the row length (UnitOverflowError) only with overflow: error;
    with drop or truncate it bounds nothing and the plan stage applies the policy."""
    from .packing import NO_LIMIT

    for e in entries:
        e.pack, e.overflow = _pick(packs[0], e.index), _pick(packs[1], e.index)
        e.sizes = [e.pack] if e.overflow == "error" else [NO_LIMIT]
    for o in outputs:
        members = [entries[i] for i in o.files]
        if len({(m.pack, m.overflow) for m in members}) > 1:
            raise E.UnitMappingError.collision("pack and overflow", o.dir, [m.path for m in members],
                                               [[m.pack, m.overflow] for m in members])
        o.pack, o.overflow, o.sizes = members[0].pack, members[0].overflow, [members[0].pack]


# --- source.chat and the hf_dir tokenizer kind (extensions; mintdim/chat.py, mintdim/hfdir.py) -----

HF_DIR_KEYS = ("pad_token", "chat_template")  # besides path
_CHAT_STUB = {"fields": [["__chat__"]], "templates": ["{__chat__}"]}  # stands in for unused fields/templates


def _chat_view(raw: dict) -> tuple[list | None, dict]:
    """(per-file chat options or None, the config as the field checks see it). Conversation files
    take no fields/templates: when every file is one, neutral stand-ins fill those keys."""
    src = raw.get("source") if isinstance(raw.get("source"), dict) else None
    if src is None or src.get("chat") is None:
        return None, raw
    from . import chat

    files = src.get("files")
    n = len(files) if isinstance(files, list) else 0
    chats = chat.check_block(src["chat"], max(n, 1))
    if all(c is not None for c in chats):
        view = dict(raw)
        view["source"] = {**src, **{k: v for k, v in _CHAT_STUB.items() if _blank(src.get(k))}}
        return chats, view
    return chats, raw


def _hf_dir_options(item: dict) -> dict | None:
    opts = {}
    if item.get("pad_token") is not None:
        opts["pad_token"] = item["pad_token"]
    if item.get("chat_template") is not None:
        opts["chat_template"] = item["chat_template"]  # as declared: loaded from the build's directory
    return opts or None


def _chat_entry(entry: FileEntry, chats: list, i: int, train_on, kind: str, tok_item: dict) -> None:
    """Fill a file entry's conversation settings (train_on: roles) and hf_dir options."""
    from . import chat

    if kind == "hf_dir":
        entry.tokenizer_options = _hf_dir_options(tok_item)
    if chats[i] is None:
        return
    if kind != "hf_dir":
        raise E.TokenizerValidationError.config(
            f"source.chat renders conversations with the model's chat template: use the hf_dir tokenizer kind "
            f"(a tokenizer directory), not {kind}",
            f"source.chat render hội thoại bằng chat template của model: dùng loại tokenizer hf_dir "
            f"(thư mục tokenizer), không phải {kind}")
    entry.chat = chats[i]
    entry.fields, entry.template = [], ""
    entry.train_on = chat.check_train_on(train_on, chats, len(chats))[i]


def _check_hf_dir_items(kind: str, items: list) -> None:
    """hf_dir: pad_token a non-empty string, chat_template a path; one directory, one pad_token."""
    if kind != "hf_dir":
        return
    pads: dict[str, object] = {}
    for item in items:
        for key in HF_DIR_KEYS:
            if key in item and not (isinstance(item[key], str) and item[key]):
                raise E.TokenizerValidationError.config(
                    f"{key} must be a non-empty string, got {item[key]!r}",
                    f"{key} phải là string không rỗng, hiện tại là {item[key]!r}", component=key)
        where = os.path.abspath(item["path"])
        if pads.setdefault(where, item.get("pad_token")) != item.get("pad_token"):
            raise E.TokenizerValidationError.config(
                f"tokenizer {item['path']} is declared with two pad_token values",
                f"tokenizer {item['path']} được khai báo với hai giá trị pad_token", component="pad_token")
