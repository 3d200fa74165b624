"""The config check (no file system), and resolution of shared/mapped blocks.

The same dict comes from a YAML file or from the fluent API. `resolve()` checks
it once and returns a `BuildConfig`: one resolved entry per input file and one
per output directory.

How the check is built:

1. The JSON Schema (workflow/schemas/config.schema.yaml) is the contract of
   shapes and types: blocks and keys, types, enums, minimums, unknown keys. It
   runs first, once (mintdim/schema.py), and finds every violation.
2. `STEPS` run in a fixed order, so one config always reports the same error:
   missing blocks (all listed at once), shapes, mapping arity, values. A step
   either words the schema's findings in its area with a named problem of the
   catalogue (mintdim/errors.py), or is a rule the schema cannot say (arity:
   len 1 shared or len N mapped; train_on names declared fields; sizes
   ascending; min_size <= max_size; a tokenizer file's extension).
3. The entries are resolved (`_entries`), then `RULES` run on them: files
   sharing an output share its tokenizer, unit sizes and samples_per_shard;
   outputs apart from each other, the work directory and the inputs;
   train_bpe's `out` (mintdim/tokenizers/training.py); each template against its fields.
4. A violation no step worded is reported last, in jsonschema's words with its
   block's error class (`schema.unworded`).

To add a key: declare it in the schema (and document it in config/README.md).
If its violations need their own words, add a named constructor to errors.py
and, at most, one small step to `STEPS`: its place in the list is its place in
the order, and `bad.at(path...)` / `bad.under(path...)` give the schema's
findings there. Resolve the key in `_entries`; a rule across files goes in
`RULES`. The extensions were added so:

- `units.pack` / `units.overflow` (packed rows instead of sizes; overflow also
  with sizes): the schema says pack or sizes, never both (`_missing` then
  lists sizes only without pack); `_pack` words it; `_arity` counts them like
  sizes; `_entries` sets the row length and the policy (bucketed `error`, the
  default, stays None: the build id of a config without it);
  `_shared_overflow` is its rule.
- `source.allow_empty`: `_allow_empty` words it; `_entries` sets it on every
  file (None when false).
- `source.chat` (conversations; fields/templates optional when no file is
  null): its item's $def in the schema; `_chat` words it (with main's order:
  before missing blocks); `_train_on` checks roles for conversation files;
  `_chat_tokenizer` asks for hf_dir; `_entries` fills the options.
- `tokenizer.hf_dir` ({path, pad_token, chat_template}): a property of
  `tokenizer` with its item's $def; `ITEM_PROBLEMS` words its two options;
  `_hf_dir_pads` is its rule (one directory, one pad_token).

- `source.take` / `source.seed` (mixing by exact counts): `_take` checks them (the schema declares
  them); `_entries` sets each file's take and the seed; pre-flight refuses a count on a file
  that holds no sample (mintdim/stages/preflight.py).
- `source.on_bad_record` / `source.max_skipped` (the bad-record policy): `_bad_records` words them;
  `_entries` sets both on a file with skip (None with error, the default: the build id stays).

Extension fields of the entries stay out of the build id while unused
(`EXTENSION_FIELDS`): a build that does not use them keeps its id.

`resolve(raw, trusted=True)` skips the schema for a config that passed the
whole check before (validated.json; the pre-flight cache): stage jobs never
import jsonschema.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field

from . import __version__, schema
from . import errors as E
from .sources import template as T
from .tokenizers import training
from .tokenizers.kinds import EXTENSIONS, KINDS

DEFAULT_WORK_DIR = ".mintdim"
# Each tokenize job loads the tokenizer once (ai21 j2's SentencePiece model: ~0.4 s) and starts
# a Python process; 256 MB chunks keep that under ~2% of the job's encode time. Memory does not
# grow with it (the job streams its chunk).
DEFAULT_CHUNK_MB = 256
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
    overflow: str | None = None  # units.overflow: error | drop | truncate (bucketed: None for error)
    chat: dict | None = (
        None  # source.chat: the conversation options (mintdim/sources/chat.py); train_on holds roles
    )
    tokenizer_options: dict | None = None  # hf_dir: pad_token, chat_template (a path as declared)
    allow_empty: bool | None = (
        None  # source.allow_empty: a file with no samples is a warning (None: an error)
    )
    take: int | float | None = None  # source.take: a count (int) or a fraction (float) of the file's samples
    take_seed: int | None = (
        None  # source.seed with take (default 0): seeds the choice (mintdim/sources/take.py)
    )
    train_eos: bool | None = None  # source.train_eos: False, the end-of-turn token is not trained
    drop_untrained: bool | None = None  # source.drop_untrained: True leaves out samples with no trained token
    on_bad_record: str | None = None  # source.on_bad_record: "skip" (None: error, the spec's behaviour)
    max_skipped: int | float | None = None  # with skip: a count (int) or a fraction (float) of its records

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
    overflow: str | None = None  # error | drop | truncate (bucketed: None for error)


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
        canon = {
            "version": __version__,
            "files": [_canon(f) for f in self.files],
            "outputs": [_canon(o) for o in self.outputs],
        }
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def work_abs(self) -> str:
        return os.path.abspath(self.work_dir)


# fields of extensions (units.pack, source.chat, hf_dir options): in the build id only when set, so
# builds that do not use them keep the id (and work directory) they had before the extension
EXTENSION_FIELDS = (
    "pack",
    "overflow",
    "chat",
    "tokenizer_options",
    "allow_empty",
    "take",
    "take_seed",
    "train_eos",
    "drop_untrained",
    "on_bad_record",
    "max_skipped",
)


def _canon(entry) -> dict:
    """An entry for the build id, without the extension fields a build does not use."""
    return {k: v for k, v in asdict(entry).items() if not (k in EXTENSION_FIELDS and v is None)}


def _blank(value) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and len(value) == 0)


def _tname(value) -> str:
    return type(value).__name__


def _pick(values: list, i: int):
    return values[0] if len(values) == 1 else values[i]


def _listed(value) -> list:
    """A block that is one value shared by every file, or a list mapped by file."""
    return value if isinstance(value, list) else [value]


def _chats(src: dict, n: int) -> list:
    """source.chat per file: its item, or None (no chat, or a null item: fields/templates)."""
    value = src.get("chat")
    return [None if value is None else _pick(_listed(value), i) for i in range(n)]


def _chat_module():
    """mintdim.sources.chat, imported only for a config with conversations (a job spares ~10 ms otherwise)."""
    from .sources import chat

    return chat


def _extra_keys(err) -> list[str]:
    """The keys an additionalProperties violation names, in the config's order."""
    return [k for k in err.instance if k not in err.schema.get("properties", {})]


def lang_of(raw) -> str:
    lang = raw.get("lang", "en") if isinstance(raw, dict) else "en"
    return lang if lang in E.LANGS else "en"


def resolve(raw, trusted: bool = False) -> BuildConfig:
    """Check a config dict and resolve it. Raises the spec's error classes.

    trusted: the config passed this check before in this build (validated.json, or the pre-flight cache
    of this exact config): the schema step is skipped, which spares a job importing jsonschema (~55 ms)."""
    lang = lang_of(raw)
    try:
        bad = schema.NONE if trusted else schema.findings(raw)
        for step in STEPS:
            step(raw, bad)
        build = _entries(raw)
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


# --- steps before resolution, in the fixed order ------------------------------------------------------------
# Each takes the config and the schema's findings (`bad`); a step that
# words findings runs after every step that guarantees the shapes it reads.


def _a_mapping(cfg, bad) -> None:
    if not isinstance(cfg, dict):
        raise E.PipelineValidationError.missing(MISSING_ORDER)


def _lang(cfg, bad) -> None:
    if bad.at("lang"):
        raise E.PipelineValidationError.lang(cfg.get("lang"))


def _unknown_keys(cfg, bad) -> None:
    """Unknown keys, each with the closest key the schema knows there ('did you mean')."""
    for err in bad.at(keyword="additionalProperties"):
        raise E.PipelineValidationError.unknown_keys(sorted(_extra_keys(err)), err.schema["properties"])
    for block in ("source", "units", "output"):
        for err in bad.at(block, keyword="additionalProperties"):
            raise E.PipelineValidationError.unknown_keys(
                sorted(_extra_keys(err)), err.schema["properties"], block
            )


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
    items = _listed(value)
    for i, item in enumerate(items):
        if item is None and len(items) > 1:
            continue
        at = ("source", "chat", i) if isinstance(value, list) else ("source", "chat")
        problem = _chat_item_problem(item, at, f"source.chat[{i}]" if len(items) > 1 else "source.chat", bad)
        if problem:
            raise problem


def _chat_item_problem(item, at: tuple, where: str, bad):
    """One source.chat item: {messages, role, content, roles, system, extras, train, last_turn, drop_roles,
    reasoning, chat_template_kwargs}, all optional."""
    if not isinstance(item, dict):
        return E.PipelineValidationError.chat_not_mapping(where, _tname(item))
    for err in bad.at(*at, keyword="additionalProperties"):
        known = list(err.schema["properties"])
        return E.PipelineValidationError.chat_unknown_keys(where, sorted(_extra_keys(err)), known)
    for key in ("messages", "role", "content", "system", "train"):
        if bad.under(*at, key):
            return E.PipelineValidationError.chat_key(where, key, item[key])
    role, content = (item.get(k) or _chat_module().DEFAULTS[k] for k in ("role", "content"))
    if role == content:
        return E.PipelineValidationError.chat_same_key(where, role)
    if bad.under(*at, "roles"):
        return E.PipelineValidationError.chat_roles(where)
    extras = bad.under(*at, "extras")
    if any(err.validator != "not" for err in extras):
        return E.PipelineValidationError.chat_extras(where)
    for err in extras:  # names the template gets from MintDim (the schema's `not: {enum}`)
        return E.PipelineValidationError.chat_extras_reserved(
            where, sorted(set(err.validator_value["enum"]) & set(item["extras"]))
        )
    if bad.under(*at, "last_turn"):
        return E.PipelineValidationError.chat_last_turn(where, item["last_turn"])
    if bad.under(*at, "drop_roles"):
        return E.PipelineValidationError.chat_drop_roles(where)
    if bad.under(*at, "reasoning"):
        return E.PipelineValidationError.chat_reasoning(where, item["reasoning"])
    kwargs = bad.under(*at, "chat_template_kwargs")
    if kwargs and not isinstance(item["chat_template_kwargs"], dict):
        return E.PipelineValidationError.chat_template_kwargs(where)
    if kwargs:  # names the template gets from MintDim (the schema's propertyNames `not: {enum}`)
        return E.PipelineValidationError.chat_template_kwargs_reserved(
            where, [k for k in item["chat_template_kwargs"] if k in _chat_module().RESERVED_KWARGS]
        )
    return None


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


def _pack(cfg, bad) -> None:
    """units.pack (packed rows instead of sizes) and units.overflow (error | drop | truncate)."""
    units = cfg["units"]
    if any(err.validator_value == {"required": ["sizes"]} for err in bad.at("units", keyword="not")):
        raise E.UnitValidationError.pack("both")
    if bad.under("units", "pack"):
        raise E.UnitValidationError.pack("pack", units["pack"])
    if bad.under("units", "overflow"):
        raise E.UnitValidationError.pack("overflow", units["overflow"])


def _files(cfg, bad) -> None:
    if bad.under("source", "files"):
        raise E.PipelineValidationError.files()


def _allow_empty(cfg, bad) -> None:
    if bad.under("source", "allow_empty"):
        raise E.PipelineValidationError.allow_empty(cfg["source"]["allow_empty"])


def _fields(cfg, bad) -> None:
    fields = cfg["source"].get("fields")
    if fields is None:  # conversations only (source.chat): the schema did not require them
        return
    if bad.at("source", "fields") or any(
        bad.at("source", "fields", i, keyword="type") for i in range(len(fields))
    ):
        raise E.FieldMappingError.not_lists()
    for i, names in enumerate(fields):
        found = bad.under("source", "fields", i)
        if any(err.validator != "uniqueItems" for err in found):
            raise E.FieldMappingError.names(i)
        if found:
            raise E.FieldMappingError.twice(i, names)


def _templates(cfg, bad) -> None:
    if bad.under("source", "templates"):
        raise E.TemplateMappingError.not_strings()


def _tokenizer(cfg, bad) -> None:
    tok = cfg["tokenizer"]
    if bad.at("tokenizer", keyword="type"):
        raise E.TokenizerValidationError.not_mapping(_tname(tok))
    if bad.at("tokenizer", keyword="maxProperties"):
        raise E.TokenizerValidationError.kinds(list(tok))
    if bad.at("tokenizer", keyword="additionalProperties"):
        raise E.TokenizerValidationError.unknown_kind(next(iter(tok)), known=KINDS + ("train_bpe",))


def _tokenizer_items(cfg, bad) -> None:
    ((kind, value),) = cfg["tokenizer"].items()
    word = ITEM_PROBLEMS.get(kind, _item_problem)
    for i, item in enumerate(_listed(value)):
        at = ("tokenizer", kind, i) if isinstance(value, list) else ("tokenizer", kind)
        if bad.under(*at):
            problem = word(item, at, bad)
            if problem:
                raise problem


def _item_problem(item, at: tuple, bad):
    """One {path: ...} item of sentencepiece / hf_json / unitoken."""
    if not isinstance(item, dict):
        return E.TokenizerValidationError.item_not_dict(_tname(item))
    for err in bad.at(*at, keyword="additionalProperties"):
        return E.TokenizerValidationError.unknown_keys(_extra_keys(err))
    if bad.at(*at, keyword="required"):
        return E.TokenizerValidationError.missing_path()
    if bad.at(*at, "path", keyword="type"):
        return E.TokenizerValidationError.path_not_string(_tname(item["path"]))
    if bad.at(*at, "path", keyword="minLength"):
        return E.TokenizerValidationError.path_empty()
    return None


def _train_item_problem(item, at: tuple, bad):
    """One train_bpe item: {vocab_size, out, unit, hot_pair_window_size}."""
    if not isinstance(item, dict):
        return E.TokenizerValidationError.train_not_dict(_tname(item))
    for err in bad.at(*at, keyword="additionalProperties"):
        return E.TokenizerValidationError.train_unknown_keys(_extra_keys(err))
    for err in bad.at(*at, keyword="required"):
        return E.TokenizerValidationError.train_missing_keys(
            [k for k in err.validator_value if k not in item]
        )
    worded = {
        "vocab_size": E.TokenizerValidationError.train_vocab_size,
        "unit": E.TokenizerValidationError.train_unit,
        "out": E.TokenizerValidationError.train_out,
        "hot_pair_window_size": E.TokenizerValidationError.train_window,
    }
    for key, problem in worded.items():
        if bad.under(*at, key):
            return problem(item[key])
    return None


def _hf_dir_item_problem(item, at: tuple, bad):
    """One hf_dir item: a {path: ...} item with two options, pad_token and chat_template."""
    problem = _item_problem(item, at, bad)
    if problem:
        return problem
    for key in ("pad_token", "chat_template"):
        if bad.under(*at, key):
            return E.TokenizerValidationError.option_not_string(key, item[key])
    return None


ITEM_PROBLEMS = {
    training.KIND: _train_item_problem,  # a kind whose item is not {path: ...} words its own
    "hf_dir": _hf_dir_item_problem,
}


def check_train_item(item) -> dict:
    """`mintdim tokenizer train`'s options, checked as a
    train_bpe item of a config is; returns its options."""
    bad = schema.findings(item, "train_value")
    if bad:
        raise _train_item_problem(item, (), bad) or schema.unworded(bad)
    return training.options(item)


def _auto_options(cfg, bad) -> None:
    """units: {sizes: auto, k: 4, multiple_of: 64, min_size: .., max_size: .., cost: linear|attention}."""
    units = cfg["units"]
    if units.get("sizes") != "auto":
        for err in bad.at("units", keyword="not"):  # the planning options apply only with sizes: auto
            if "anyOf" in err.validator_value:
                named = {sub["required"][0] for sub in err.validator_value["anyOf"]}
                raise E.UnitValidationError.auto_only(sorted(named & set(units)))
        return
    if any("k" in err.validator_value for err in bad.at("units", keyword="required")) or bad.under(
        "units", "k"
    ):
        raise E.UnitValidationError.needs_k(units.get("k"))
    for key in ("multiple_of", "min_size", "max_size"):
        if units.get(key) is not None and bad.under("units", key):  # null: the schema's own words, last
            raise E.UnitValidationError.not_positive(key, units[key])
    for err in bad.at("units", "cost"):
        raise E.UnitValidationError.cost(list(err.validator_value), units["cost"])


def _auto_range(cfg, bad) -> None:
    units = cfg["units"]
    if units.get("sizes") == "auto" and units.get("min_size") and units.get("max_size"):
        if units["min_size"] > units["max_size"]:
            raise E.UnitValidationError.min_above_max()


def _units_shapes(cfg, bad) -> None:
    sizes = cfg["units"].get("sizes")  # absent with pack
    if sizes not in ("auto", None) and (
        bad.at("units", "sizes")
        or any(bad.at("units", "sizes", i, keyword="type") for i in range(len(sizes)))
    ):
        raise E.UnitValidationError.sizes_not_lists()
    if bad.at("units", "build_batch"):
        raise E.UnitValidationError.build_batch_not_list()


def _output_shapes(cfg, bad) -> None:
    if bad.under("output", "dir"):
        raise E.OutputValidationError.not_paths()
    if bad.at("output", "samples_per_shard"):
        raise E.SamplesPerShardError.not_list(_tname(cfg["output"]["samples_per_shard"]))


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
    if bad.at("source", "train_on") or any(
        bad.at("source", "train_on", i, keyword="type") for i in range(len(train_on))
    ):
        raise E.FieldMappingError.train_on()
    n = len(src["files"])
    if len(train_on) not in (1, n):
        raise E.FieldMappingError.train_on_arity(n, len(train_on))
    for i, item in enumerate(_chats(src, n)):
        at = i if len(train_on) > 1 else 0
        if item is not None:
            produced = sorted(set(item["roles"].values())) if item.get("roles") is not None else None
            for name in _pick(train_on, i):
                if not isinstance(name, str) or not name:
                    raise E.FieldMappingError.train_on_role_name(at, name)
                if produced is not None and name not in produced:
                    raise E.FieldMappingError.train_on_role(at, name, produced)
            continue
        declared = _pick(src["fields"], i)
        for name in _pick(train_on, i):
            if name not in declared:
                raise E.FieldMappingError.train_on_name(at, name, declared)


def _take(cfg, bad) -> None:
    """source.take: per file (shared or mapped), a fraction (a float > 0) or a count (an int >= 1) of its
    samples; source.seed: an int >= 0, only with take. Data-free: a count on an empty file is pre-flight's."""
    src = cfg["source"]
    if "seed" in src and "take" not in src:
        raise E.PipelineValidationError.seed_alone()
    if "take" not in src:
        return
    take, n = src["take"], len(src["files"])
    if not isinstance(take, list) or not take:
        raise E.PipelineValidationError.take_not_list(take)
    if len(take) not in (1, n):
        raise E.PipelineValidationError.take_arity(n, len(take))
    for i, value in enumerate(take):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not value > 0
            or not math.isfinite(value)
        ):
            raise E.PipelineValidationError.take(i, value)
    seed = src.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise E.PipelineValidationError.seed(seed)


def _source_flags(cfg, bad) -> None:
    """source.train_eos and source.drop_untrained: lists of booleans, shared (len 1) or mapped (len N)."""
    src = cfg["source"]
    for key in FLAG_KEYS:
        if key not in src:
            continue
        value = src[key]
        if not isinstance(value, list) or not value or not all(isinstance(v, bool) for v in value):
            raise E.PipelineValidationError.flag_list(key, value)
        if len(value) not in (1, len(src["files"])):
            raise E.PipelineValidationError.flag_arity(key, len(src["files"]), len(value))


def _bad_records(cfg, bad) -> None:
    """source.on_bad_record: per file, error | skip; source.max_skipped: per file, a fraction (a float
    from 0 to 1) or a count (an int >= 0) of its records, only with on_bad_record."""
    src, n = cfg["source"], len(cfg["source"]["files"])
    if "max_skipped" in src and "on_bad_record" not in src:
        raise E.PipelineValidationError.max_skipped_alone()
    for key, problem in (
        ("on_bad_record", E.PipelineValidationError.on_bad_record),
        ("max_skipped", E.PipelineValidationError.max_skipped),
    ):
        if key not in src:
            continue
        value = src[key]
        if bad.under("source", key) or (
            key == "max_skipped" and any(isinstance(v, float) and v > 1 for v in value)
        ):
            raise problem(value)
        if len(value) not in (1, n):
            raise E.PipelineValidationError.bad_record_arity(key, n, len(value))


def _arity(cfg, bad) -> None:
    units, out = cfg["units"], cfg["output"]
    n = len(cfg["source"]["files"])
    sizes = units["pack"] if "pack" in units else units["sizes"] if units["sizes"] != "auto" else [None]
    mapped = [
        (_listed(next(iter(cfg["tokenizer"].values()))), E.TokenizerMappingError),
        (sizes, E.UnitMappingError),
        (units.get("overflow", [None]), E.UnitMappingError),
        (units["build_batch"], E.UnitMappingError),
        (_listed(out["dir"]), E.OutputMappingError),
        (out["samples_per_shard"], E.SamplesPerShardError),
    ]
    for values, error in mapped:
        if len(values) not in (1, n):
            raise error.arity(n, len(values))


def _unit_values(cfg, bad) -> None:
    units = cfg["units"]
    for i, unit_sizes in enumerate(units["sizes"] if isinstance(units.get("sizes"), list) else []):
        if bad.under("units", "sizes", i):
            raise E.UnitValidationError.sizes(i, unit_sizes)
        if any(a >= b for a, b in zip(unit_sizes, unit_sizes[1:])):
            raise E.UnitValidationError.unsorted(i, unit_sizes)
    for i, batch in enumerate(units["build_batch"]):
        if bad.under("units", "build_batch", i):
            raise E.UnitValidationError.build_batch(i, batch)


def _output_values(cfg, bad) -> None:
    for i, value in enumerate(cfg["output"]["samples_per_shard"]):
        if bad.under("output", "samples_per_shard", i):
            raise E.SamplesPerShardError.value(i, value)


def _tokenizer_extension(cfg, bad) -> None:
    ((kind, value),) = cfg["tokenizer"].items()
    if kind not in EXTENSIONS:  # train_bpe names no path (it writes `out`); directory kinds have no extension
        return
    for item in _listed(value):
        path = item["path"]
        if not path.endswith(EXTENSIONS[kind]):
            raise E.TokenizerValidationError.extension(
                kind,
                path,
                directory=os.path.isdir(path),
                has_tokenizer_json=os.path.isfile(os.path.join(path, "tokenizer.json")),
            )


def _work(cfg, bad) -> None:
    if bad.under("work_dir"):
        raise E.PipelineValidationError.work_dir()
    if bad.under("chunk_mb"):
        raise E.PipelineValidationError.chunk_mb(cfg["chunk_mb"])


def _chat_tokenizer(cfg, bad) -> None:
    """A conversation is rendered with its model's chat template: source.chat needs the hf_dir kind."""
    (kind,) = cfg["tokenizer"]
    if kind != "hf_dir" and any(
        item is not None for item in _chats(cfg["source"], len(cfg["source"]["files"]))
    ):
        raise E.TokenizerValidationError.chat_needs_hf_dir(kind)


STEPS = [
    _a_mapping,
    _lang,
    _unknown_keys,
    _chat,
    _missing,
    _pack,  # what the config is
    _files,
    _allow_empty,
    _fields,
    _templates,
    _tokenizer,
    _tokenizer_items,
    _auto_options,
    _auto_range,
    _units_shapes,
    _output_shapes,  # shapes
    _arity_source,
    _train_on,
    _take,
    _source_flags,
    _bad_records,
    _arity,  # mapping arity
    _unit_values,
    _output_values,
    _tokenizer_extension,
    _work,
    _chat_tokenizer,  # values
]


# --- resolution: one entry per file, one per output directory -----------------------------------------------


def _auto(units: dict) -> dict | None:
    if units.get("sizes") != "auto":
        return None
    return {
        "k": units.get("k"),
        "multiple_of": units.get("multiple_of", 1),
        "min_size": units.get("min_size"),
        "max_size": units.get("max_size"),
        "cost": units.get("cost", "linear"),
    }


def _hf_dir_options(item: dict) -> dict | None:
    opts = {key: item[key] for key in ("pad_token", "chat_template") if item.get(key) is not None}
    return opts or None  # chat_template: a path as declared, loaded from the build's directory


def _chat_options(item: dict) -> dict:
    return {**_chat_module().DEFAULTS, **{k: v for k, v in item.items() if v is not None}}


def _chat_roles(train_on, opts: dict) -> list[str] | None:
    """The roles a conversation file trains: train_on's, or with `train`/`last_turn` and no train_on the
    assistant's; None: no masks."""
    if train_on is not None:
        return list(train_on)
    return list(_chat_module().DEFAULT_TRAIN_ROLES) if ("train" in opts or opts.get("last_turn")) else None


def _flags(entry: FileEntry, src: dict, i: int) -> None:
    """train_eos and drop_untrained of one file, kept only where they change the build (the build id of a
    config without them): train_eos False, drop_untrained True."""
    if "train_eos" in src and _pick(src["train_eos"], i) is False:
        entry.train_eos = False
    if "drop_untrained" in src and _pick(src["drop_untrained"], i) is True:
        entry.drop_untrained = True


def _entries(raw: dict) -> BuildConfig:
    src, units, out = raw["source"], raw["units"], raw["output"]
    ((kind, tok_value),) = raw["tokenizer"].items()
    tok_items, dirs, auto = _listed(tok_value), _listed(out["dir"]), _auto(units)
    train_on, chats = src.get("train_on"), _chats(src, len(src["files"]))
    packs, overflows = units.get("pack"), units.get("overflow", ["error"])
    allow_empty = True if src.get("allow_empty") else None
    if packs:
        from .units.packing import NO_LIMIT  # here: a bucketed config does not import numpy for it
    out_index: dict[str, int] = {}
    outputs: list[OutputEntry] = []
    entries: list[FileEntry] = []
    for i, path in enumerate(src["files"]):
        tok_item = _pick(tok_items, i)
        tok_path = tok_item["out"] if kind == training.KIND else tok_item["path"]
        out_dir = _pick(dirs, i)
        absdir = os.path.abspath(out_dir)
        entry = FileEntry(
            index=i,
            path=path,
            abspath=os.path.abspath(path),
            fields=[],
            template="",
            tokenizer_kind="unitoken" if kind == training.KIND else kind,
            tokenizer_path=tok_path,
            tokenizer_abspath=os.path.abspath(tok_path),
            tokenizer_train=training.options(tok_item) if kind == training.KIND else None,
            sizes=None if auto or packs else list(_pick(units["sizes"], i)),
            build_batch=_pick(units["build_batch"], i),
            output=-1,
            samples_per_shard=_pick(out["samples_per_shard"], i),
            tokenizer_options=_hf_dir_options(tok_item) if kind == "hf_dir" else None,
            allow_empty=allow_empty,
        )
        if chats[i] is not None:  # a conversation file: no fields/template; train_on names roles
            entry.chat = _chat_options(chats[i])
            entry.train_on = _chat_roles(_pick(train_on, i) if train_on else None, entry.chat)
        else:
            entry.fields, entry.template = list(_pick(src["fields"], i)), _pick(src["templates"], i)
            entry.train_on = list(_pick(train_on, i)) if train_on else None
        _flags(entry, src, i)
        if "take" in src:  # source.take: the plan stage chooses the samples (mintdim/sources/take.py)
            entry.take, entry.take_seed = _pick(src["take"], i), src.get("seed", 0)
        if _pick(src.get("on_bad_record", ["error"]), i) == "skip":  # stages/plan.py applies it
            entry.on_bad_record, entry.max_skipped = "skip", _pick(src.get("max_skipped", [0.01]), i)
        if packs:
            # the tokenize stage bounds a sample by the row only
            # with overflow: error; else the plan applies it
            entry.pack, entry.overflow = _pick(packs, i), _pick(overflows, i)
            entry.sizes = [entry.pack] if entry.overflow == "error" else [NO_LIMIT]
        # unit sizes: the tokenize stage drops or truncates to the largest
        elif _pick(overflows, i) != "error":
            entry.overflow = _pick(overflows, i)
        if absdir not in out_index:
            out_index[absdir] = len(outputs)
            outputs.append(_output_entry(len(outputs), out_dir, absdir, entry, tok_path, auto, packs))
        entry.output = out_index[absdir]
        outputs[entry.output].files.append(i)
        outputs[entry.output].build_batches.append(entry.build_batch)
        entries.append(entry)
    return BuildConfig(
        files=entries,
        outputs=outputs,
        lang=lang_of(raw),
        work_dir=raw.get("work_dir", DEFAULT_WORK_DIR),
        chunk_mb=float(raw.get("chunk_mb", DEFAULT_CHUNK_MB)),
        raw=raw,
    )


def _output_entry(index: int, out_dir: str, absdir: str, entry, tok_path: str, auto, packs) -> OutputEntry:
    """The output that `entry`, its first file, opens: its directory, tokenizer and units."""
    return OutputEntry(
        index=index,
        dir=out_dir,
        absdir=absdir,
        files=[],
        tokenizer_kind=entry.tokenizer_kind,
        tokenizer_path=tok_path,
        tokenizer_abspath=entry.tokenizer_abspath,
        auto=auto,
        sizes=[entry.pack] if packs else entry.sizes,
        pack=entry.pack,
        overflow=entry.overflow,
        samples_per_shard=entry.samples_per_shard,
    )


# --- rules on the resolved entries, in the fixed order ------------------------------------------------------


def _shared_outputs(build: BuildConfig) -> None:
    """Files sharing one output share its tokenizer, unit sizes and samples_per_shard."""
    for o in build.outputs:
        members = [build.files[i] for i in o.files]
        paths = [m.path for m in members]
        if len({m.tokenizer_abspath for m in members}) > 1:
            raise E.TokenizerMappingError.collision(
                "tokenizer", o.dir, paths, [m.tokenizer_path for m in members]
            )
        sizes = [[m.pack] if m.pack is not None else m.sizes for m in members]  # as declared (pack: [row])
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
        if len({(m.pack, m.overflow or "error") for m in members}) > 1:
            if o.pack:
                raise E.UnitMappingError.collision(
                    "pack and overflow",
                    o.dir,
                    [m.path for m in members],
                    [[m.pack, m.overflow] for m in members],
                )
            raise E.UnitMappingError.collision(
                "overflow", o.dir, [m.path for m in members], [m.overflow or "error" for m in members]
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
        pad = (e.tokenizer_options or {}).get("pad_token")
        if e.tokenizer_kind == "hf_dir" and pads.setdefault(e.tokenizer_abspath, pad) != pad:
            raise E.TokenizerValidationError.two_pad_tokens(e.tokenizer_path)


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
        tpl = T.parse(e.template)
    except T.TemplateSyntaxError as bad:
        raise E.TemplateFieldMismatchError.placeholder(
            e.path, e.fields, e.template, bad.placeholder, bad.reason
        )
    declared = set(e.fields)
    for name in tpl.names:
        if name not in declared:
            raise E.TemplateFieldMismatchError.undeclared(e.path, e.fields, e.template, name)
    used = set(tpl.names)
    for name in e.fields:
        if name not in used:
            raise E.TemplateFieldMismatchError.unused(e.path, e.fields, e.template, name)
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
