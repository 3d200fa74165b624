"""The config check (no file system but a tokenizer path's kind), before resolution.

The same dict comes from a YAML file or from the fluent API. `resolve()` checks
it once and returns a `BuildConfig` (mintdim/entries.py): one resolved entry per
input file and one per output directory.

How the check is built:

1. The JSON Schema (workflow/schemas/config.schema.yaml) is the contract of
   shapes and types: blocks and keys, types, enums, minimums, unknown keys. It
   runs first, once (mintdim/schema.py), and finds every violation. Beside each
   property, its `x-error` annotation names the catalogue's message for its
   violations and the message's arguments (mintdim/schema.py explains the form).
2. `STEPS` run in a fixed order, so one config always reports the same error:
   missing blocks (all listed at once), shapes, mapping arity, values. A step is
   either the catalogue keys whose violations are reported there (a string:
   `Findings.word`, the first violation in the schema's order), or a rule the
   schema cannot say, across fields (arity: len 1 shared or len N mapped;
   train_on names declared fields or roles; sizes ascending; min_size <=
   max_size; a tokenizer file's extension; source.chat needs hf_dir).
3. The entries are resolved (mintdim/entries.py), then `RULES` run on them: files
   sharing an output share its tokenizer, unit sizes, samples_per_shard and
   overflow; outputs apart from each other, the work directory and the inputs;
   train_bpe's `out` (mintdim/tokenizers/training.py); each template against
   its fields; one pad_token per tokenizer directory.
4. A violation no step worded is reported last, in jsonschema's words with its
   block's error class (`schema.unworded`).

To add a key: declare it in the schema with its `x-error` (a new message is a
catalogue entry, mintdim/catalogue/) and document it in config/README.md; put
its message's key in `STEPS` where it is reported (its place in the list is its
place in the order). A rule across fields is a small step; resolve the key in
mintdim/entries.py (a rule across files goes in `RULES`).

`resolve(raw, trusted=True)` skips the schema for a config that passed the
whole check before (validated.json; the pre-flight cache): stage jobs never
import jsonschema.
"""

from __future__ import annotations

import os

from . import errors as E
from . import schema
from .entries import DEFAULT_WORK_DIR as DEFAULT_WORK_DIR
from .entries import BuildConfig, FileEntry, chat_module, chats, lang_of, listed, pick, resolve_entries
from .sources import template as T
from .tokenizers import training
from .tokenizers.kinds import EXTENSIONS

CHAT_KEYS = " ".join(
    f"PipelineValidationError.{key}" for key in ("chat_not_mapping", "chat_unknown_keys", "chat_key")
)
FLAG_KEYS = ("train_eos", "drop_untrained")  # source keys of one boolean per file (shared or mapped)
MISSING_ORDER = [
    "source.files",
    "source.fields",
    "source.templates",
    "tokenizer",
    "units.sizes",
    "units.build_batch",
    "output.dir",
    "output.samples_per_shard",
]


def _blank(value) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and len(value) == 0)


def resolve(raw, trusted: bool = False) -> BuildConfig:
    """Check a config dict and resolve it. Raises the spec's error classes.

    trusted: the config passed this check before in this build (validated.json, or the pre-flight cache
    of this exact config): the schema step is skipped, which spares a job importing jsonschema (~55 ms)."""
    lang = lang_of(raw)
    try:
        bad = schema.NONE if trusted else schema.findings(raw)
        for step in STEPS:
            if isinstance(step, str):
                bad.word(step)
            else:
                step(raw, bad)
        build = resolve_entries(raw)
        for rule in RULES:
            rule(build)
        if bad:
            raise schema.unworded(bad)
        return build
    except E.MintDimError as err:
        raise err.with_lang(lang)


def check_schema(raw) -> None:
    """Raise the catalogue error a config check reports first when raw breaks the schema; else nothing
    (a config the schema accepts may still break a rule across fields: `resolve` checks those)."""
    if schema.findings(raw):
        resolve(raw)


def check_train_item(item) -> dict:
    """`mintdim tokenizer train`'s options, checked as a
    train_bpe item of a config is; returns its options."""
    bad = schema.findings(item, "train_value")
    bad.word("TokenizerValidationError.train_*")
    if bad:
        raise schema.unworded(bad)
    return training.options(item)


# --- steps before resolution, in the fixed order ------------------------------------------------------------
# A string: the catalogue keys (patterns) whose schema violations are reported there. A function takes the
# config and the schema's findings (`bad`); a step that reads a shape runs after the steps that word it.


def _a_mapping(cfg, bad) -> None:
    if not isinstance(cfg, dict):
        raise E.PipelineValidationError.missing(MISSING_ORDER)


def _chat(cfg, bad) -> None:
    """source.chat: one item shared by every file, or a list mapped by file (a null item: that file uses
    fields/templates; a list of one is shared, so never null). Checked before missing blocks: whether
    fields/templates are needed depends on it."""
    src = cfg.get("source")
    # absent (an explicit null: the schema's words, last)
    if not isinstance(src, dict) or src.get("chat") is None:
        return
    value, files = src["chat"], src.get("files")
    n = max(len(files) if isinstance(files, list) else 0, 1)
    if isinstance(value, list) and len(value) not in (1, n):
        raise E.PipelineValidationError.chat_arity(n, len(value))
    if value == [None]:
        raise E.PipelineValidationError.chat_not_mapping("source.chat", "NoneType")
    items = listed(value)
    for i, item in enumerate(items):  # item by item: its shape and keys, then role != content, then the rest
        at = ("source", "chat", i) if isinstance(value, list) else ("source", "chat")
        bad.word(CHAT_KEYS, *at)
        if isinstance(item, dict):
            role, content = (item.get(k) or chat_module().DEFAULTS[k] for k in ("role", "content"))
            if role == content:
                where = f"source.chat[{i}]" if len(items) > 1 else "source.chat"
                raise E.PipelineValidationError.chat_same_key(where, role)
        bad.word("PipelineValidationError.chat_*", *at)


def _absent(cfg: dict, key: str) -> bool:
    block, _, name = key.partition(".")
    value = cfg.get(block)
    # tokenizer: a kind with no value at all is missing; a kind with a dict (even {}) is a config
    if not name:
        return _blank(value) or (
            isinstance(value, dict) and all(v is None or v == [] for v in value.values())
        )
    return not isinstance(value, dict) or _blank(value.get(name))


def _required(bad, key: str) -> bool:
    """Does the schema flag this key: its value, the key absent (or
    its block absent), or its block not a mapping?"""
    path = tuple(key.split("."))
    if bad.under(*path):
        return True
    for depth in range(len(path)):  # at the root naming the absent block; in the block naming the absent key
        if any(
            path[depth] in err.validator_value and path[depth] not in err.instance
            for err in bad.at(*path[:depth], keyword="required")
        ):
            return True
    return any(bad.at(*path[:depth], keyword="type") for depth in range(1, len(path)))


def _missing(cfg, bad) -> None:
    """A block the schema requires that is absent or empty: all of them listed at once."""
    missing = [key for key in MISSING_ORDER if _absent(cfg, key) and _required(bad, key)]
    if missing:
        raise E.PipelineValidationError.missing(missing)


def _fields(cfg, bad) -> None:
    if cfg["source"].get("fields") is not None:  # None: conversations only (source.chat): not required
        bad.word("FieldMappingError.not_lists")
        bad.word("FieldMappingError.names FieldMappingError.twice")


def _auto_options(cfg, bad) -> None:
    """units: {sizes: auto, k: 4, multiple_of: 64, min_size: .., max_size: .., cost: linear|attention}; the
    planning options apply only with sizes: auto."""
    bad.word("UnitValidationError.auto_only UnitValidationError.needs_k")
    for key in ("multiple_of", "min_size", "max_size"):
        if cfg["units"].get(key) is not None:  # null: the schema's own words, last
            bad.word("UnitValidationError.not_positive", "units", key)
    bad.word("UnitValidationError.cost")


def _auto_range(cfg, bad) -> None:
    units = cfg["units"]
    if units.get("sizes") == "auto" and units.get("min_size") and units.get("max_size"):
        if units["min_size"] > units["max_size"]:
            raise E.UnitValidationError.min_above_max()


def _arity_source(cfg, bad) -> None:
    """Mapping arity: len 1 (shared) or len N (mapped)."""
    src = cfg["source"]
    n = len(src["files"])
    for values, error in (
        (src.get("fields"), E.FieldMappingError),
        (src.get("templates"), E.TemplateMappingError),
    ):
        if values is not None and len(values) not in (1, n):  # None: conversations only (source.chat)
            raise error.arity(n, len(values))


def _train_on(cfg, bad) -> None:
    """source.train_on: a list of lists of field names, shared (len 1) or mapped (len N) like fields; a
    conversation file (source.chat) names roles instead (after its `roles` map, when it has one)."""
    src = cfg["source"]
    train_on = src.get("train_on")
    if train_on is None:  # absent (an explicit null: the schema's own words, last)
        return
    bad.word("FieldMappingError.train_on", "source", "train_on")
    n = len(src["files"])
    if len(train_on) not in (1, n):
        raise E.FieldMappingError.train_on_arity(n, len(train_on))
    for i, item in enumerate(chats(src, n)):
        at = i if len(train_on) > 1 else 0
        if item is not None:
            produced = sorted(set(item["roles"].values())) if item.get("roles") is not None else None
            for name in pick(train_on, i):
                if not isinstance(name, str) or not name:
                    raise E.FieldMappingError.train_on_role_name(at, name)
                if produced is not None and name not in produced:
                    raise E.FieldMappingError.train_on_role(at, name, produced)
            continue
        declared = pick(src["fields"], i)
        for name in pick(train_on, i):
            if name not in declared:
                raise E.FieldMappingError.train_on_name(at, name, declared)


def _take(cfg, bad) -> None:
    """source.take: per file (shared or mapped), a fraction or a count of its samples; source.seed, only
    with take. Data-free: a count on an empty file is pre-flight's."""
    src = cfg["source"]
    bad.word("PipelineValidationError.seed_alone PipelineValidationError.take_not_list")
    if "take" in src and len(src["take"]) not in (1, len(src["files"])):
        raise E.PipelineValidationError.take_arity(len(src["files"]), len(src["take"]))
    bad.word("PipelineValidationError.take PipelineValidationError.seed")


def _source_flags(cfg, bad) -> None:
    """source.train_eos and source.drop_untrained: lists of booleans, shared (len 1) or mapped (len N)."""
    src = cfg["source"]
    for key in FLAG_KEYS:
        bad.word("PipelineValidationError.flag_list", "source", key)
        if key in src and len(src[key]) not in (1, len(src["files"])):
            raise E.PipelineValidationError.flag_arity(key, len(src["files"]), len(src[key]))


def _bad_records(cfg, bad) -> None:
    """source.on_bad_record: per file, error | skip; source.max_skipped: per file, a fraction (a float
    from 0 to 1) or a count (an int >= 0) of its records, only with on_bad_record."""
    src, n = cfg["source"], len(cfg["source"]["files"])
    bad.word("PipelineValidationError.max_skipped_alone")
    for key in ("on_bad_record", "max_skipped"):
        bad.word(f"PipelineValidationError.{key}", "source", key)
        if key in src and len(src[key]) not in (1, n):
            raise E.PipelineValidationError.bad_record_arity(key, n, len(src[key]))


def _arity(cfg, bad) -> None:
    units, out = cfg["units"], cfg["output"]
    n = len(cfg["source"]["files"])
    sizes = units["pack"] if "pack" in units else units["sizes"] if units["sizes"] != "auto" else [None]
    mapped = [
        (listed(next(iter(cfg["tokenizer"].values()))), E.TokenizerMappingError),
        (sizes, E.UnitMappingError),
        (units.get("overflow", [None]), E.UnitMappingError),
        (units["build_batch"], E.UnitMappingError),
        (listed(out["dir"]), E.OutputMappingError),
        (out["samples_per_shard"], E.SamplesPerShardError),
    ]
    for values, error in mapped:
        if len(values) not in (1, n):
            raise error.arity(n, len(values))


def _unit_values(cfg, bad) -> None:
    units = cfg["units"]
    for i, unit_sizes in enumerate(units["sizes"] if isinstance(units.get("sizes"), list) else []):
        bad.word("UnitValidationError.sizes", "units", "sizes", i)
        if any(a >= b for a, b in zip(unit_sizes, unit_sizes[1:])):
            raise E.UnitValidationError.unsorted(i, unit_sizes)
    bad.word("UnitValidationError.build_batch")


def _tokenizer_extension(cfg, bad) -> None:
    ((kind, value),) = cfg["tokenizer"].items()
    if kind not in EXTENSIONS:  # train_bpe names no path (it writes `out`); directory kinds have no extension
        return
    for item in listed(value):
        path = item["path"]
        if not path.endswith(EXTENSIONS[kind]):
            # a directory: a file is expected; for hf_json, kind hf_dir reads it (or its tokenizer.json alone)
            hf_dir = kind == "hf_json" and os.path.isdir(path)
            json_file = hf_dir and os.path.isfile(os.path.join(path, "tokenizer.json"))
            raise E.TokenizerValidationError.extension(
                kind, path, os.path.isdir(path), hf_dir, json_file, path.rstrip("/")
            )


def _chat_tokenizer(cfg, bad) -> None:
    """A conversation is rendered with its model's chat template: source.chat needs the hf_dir kind."""
    (kind,) = cfg["tokenizer"]
    if kind != "hf_dir" and any(
        item is not None for item in chats(cfg["source"], len(cfg["source"]["files"]))
    ):
        raise E.TokenizerValidationError.chat_needs_hf_dir(kind)


STEPS = [
    _a_mapping,
    "PipelineValidationError.lang",
    "PipelineValidationError.unknown_*_keys",
    _chat,
    _missing,
    "UnitValidationError.pack_*",  # what the config is
    "PipelineValidationError.files",
    "PipelineValidationError.allow_empty",
    _fields,
    "TemplateMappingError.not_strings",
    "TokenizerValidationError.*",  # the block, then its items
    _auto_options,
    _auto_range,
    "UnitValidationError.sizes_not_lists",
    "UnitValidationError.build_batch_not_list",
    "OutputValidationError.not_paths",
    "SamplesPerShardError.not_list",  # shapes
    _arity_source,
    _train_on,
    _take,
    _source_flags,
    _bad_records,
    _arity,  # mapping arity
    _unit_values,
    "SamplesPerShardError.value",
    _tokenizer_extension,
    "PipelineValidationError.work_dir PipelineValidationError.chunk_mb",
    _chat_tokenizer,  # values
]


# --- rules on the resolved entries, in the fixed order ------------------------------------------------------


def _shared_outputs(build: BuildConfig) -> None:
    """Files sharing one output share its tokenizer, unit sizes and samples_per_shard."""
    for o in build.outputs:
        members = [build.files[i] for i in o.files]
        paths = [m.path for m in members]
        if len({m.tokenizer.abspath for m in members}) > 1:
            raise E.TokenizerMappingError.collision(
                "tokenizer", o.dir, paths, [m.tokenizer.path for m in members]
            )
        sizes = [
            [m.units.pack] if m.units.pack is not None else m.units.sizes for m in members
        ]  # as declared (pack: [row])
        if len({tuple(s or ()) for s in sizes}) > 1:
            raise E.UnitMappingError.collision("unit sizes", o.dir, paths, sizes)
        if len({m.samples_per_shard for m in members}) > 1:
            raise E.SamplesPerShardError.shared(
                o.dir, ", ".join(f"{m.path}: {m.samples_per_shard}" for m in members)
            )


def _paths_once(build: BuildConfig) -> None:
    """A path declared once per output: the indexes name a sample's file by its declared path."""
    for o in build.outputs:
        seen: dict[str, int] = {}
        for i in o.files:
            path = build.files[i].path
            if path in seen:
                raise E.OutputMappingError.same_file(o.dir, path, seen[path], i)
            seen[path] = i


def _outputs_apart(build: BuildConfig) -> None:
    """No output inside another, around or inside the work directory, or an input file."""
    work_abs = build.work_abs
    for o in build.outputs:
        for other in (p.absdir for p in build.outputs):
            if other != o.absdir and training.inside(other, o.absdir):
                raise E.OutputValidationError.nested(o.dir, other)
        if training.inside(work_abs, o.absdir) or training.inside(o.absdir, work_abs):
            raise E.OutputValidationError.overlaps_work(o.dir, build.work_dir)
        if any(e.abspath == o.absdir for e in build.files):
            raise E.OutputValidationError.is_input(o.dir)


def _shared_overflow(build: BuildConfig) -> None:
    """Files sharing an output share its overflow policy (and, packed, its row length)."""
    for o in build.outputs:
        members = [build.files[i] for i in o.files]
        if len({(m.units.pack, m.units.overflow or "error") for m in members}) > 1:
            if o.pack:
                raise E.UnitMappingError.collision(
                    "pack and overflow",
                    o.dir,
                    [m.path for m in members],
                    [[m.units.pack, m.units.overflow] for m in members],
                )
            raise E.UnitMappingError.collision(
                "overflow", o.dir, [m.path for m in members], [m.units.overflow or "error" for m in members]
            )


def _train_out(build: BuildConfig) -> None:
    training.check_entries(build.files, build.outputs, build.work_dir)  # train_bpe: out apart, options agree


def _templates_match(build: BuildConfig) -> None:
    for e in build.files:
        if e.chat is None:  # a conversation: the tokenizer's chat template (checked in pre-flight)
            check_template(e)


def _hf_dir_pads(build: BuildConfig) -> None:
    """One tokenizer directory, one pad_token (its pad id)."""
    pads: dict[str, object] = {}
    for e in build.files:
        pad = (e.tokenizer.options or {}).get("pad_token")
        if e.tokenizer.kind == "hf_dir" and pads.setdefault(e.tokenizer.abspath, pad) != pad:
            raise E.TokenizerValidationError.two_pad_tokens(e.tokenizer.path)


RULES = [
    _shared_outputs,
    _paths_once,
    _outputs_apart,
    _shared_overflow,
    _train_out,
    _templates_match,
    _hf_dir_pads,
]


def check_template(e: FileEntry) -> T.Template:
    try:
        tpl = T.parse(e.source.template)
    except T.TemplateSyntaxError as bad:
        raise E.TemplateFieldMismatchError.placeholder(
            e.path, e.source.fields, e.source.template, bad.placeholder, bad.reason
        )
    declared = set(e.source.fields)
    for name in tpl.names:
        if name not in declared:
            raise E.TemplateFieldMismatchError.undeclared(e.path, e.source.fields, e.source.template, name)
    used = set(tpl.names)
    for name in e.source.fields:
        if name not in used:
            raise E.TemplateFieldMismatchError.unused(e.path, e.source.fields, e.source.template, name)
    return tpl


def load_config_file(path: str) -> dict:
    """A YAML config file as a dict (an empty file: {}, which then lists every missing block)."""
    import yaml

    if not os.path.isfile(path):
        raise E.MintDimFileNotFoundError.make("config", path)
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise E.PipelineValidationError.not_yaml(path, exc)
    return raw if raw is not None else {}
