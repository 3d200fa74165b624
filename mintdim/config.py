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
   train_bpe's `out` (mintdim/training.py); each template against its fields.
4. A violation no step worded is reported last, in jsonschema's words with its
   block's error class (`schema.unworded`).

To add a key: declare it in the schema (and document it in config/README.md).
If its violations need their own words, add a named constructor to errors.py
and, at most, one small step to `STEPS`: its place in the list is its place in
the order, and `bad.at(path...)` / `bad.under(path...)` give the schema's
findings there. Resolve the key in `_entries`; a rule across files goes in
`RULES`. E.g.:

- `units.overflow` (a list of error|drop|truncate): an enum in the schema, its
  words in a step beside `_unit_values`, its length in `_arity`'s table.
- a key that makes another optional (`source.chat` for fields/templates,
  `units.pack` for sizes): `if`/`then` `required` in the schema; `_missing`
  lists only what the schema requires; steps read the optional key with `.get`.
- a tokenizer kind (`tokenizer.hf_dir`: {path, pad_token, chat_template}): a
  property of `tokenizer` in the schema with its item's $def; `ITEM_PROBLEMS`
  gets an entry only if its words differ from a {path: ...} item's.

`resolve(raw, trusted=True)` skips the schema for a config that passed the
whole check before (validated.json; the pre-flight cache): stage jobs never
import jsonschema.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from . import __version__
from . import errors as E
from . import schema
from . import template as T
from . import training
from .tokenizers import EXTENSIONS

DEFAULT_WORK_DIR = ".mintdim"
# Each tokenize job loads the tokenizer once (ai21 j2's SentencePiece model: ~0.4 s) and starts
# a Python process; 256 MB chunks keep that under ~2% of the job's encode time. Memory does not
# grow with it (the job streams its chunk).
DEFAULT_CHUNK_MB = 256
MISSING_ORDER = ["source.files", "source.fields", "source.templates", "tokenizer", "units.sizes",
                 "units.build_batch", "output.dir", "output.samples_per_shard"]


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
        canon = {"version": __version__, "files": [asdict(f) for f in self.files],
                 "outputs": [asdict(o) for o in self.outputs]}
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def work_abs(self) -> str:
        return os.path.abspath(self.work_dir)


def _blank(value) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and len(value) == 0)


def _tname(value) -> str:
    return type(value).__name__


def _pick(values: list, i: int):
    return values[0] if len(values) == 1 else values[i]


def _listed(value) -> list:
    """A block that is one value shared by every file, or a list mapped by file."""
    return value if isinstance(value, list) else [value]


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


# --- steps before resolution, in the fixed order ----------------------------------------------------------------
# Each takes the config and the schema's findings (`bad`); a step that words findings runs after every step that
# guarantees the shapes it reads.


def _a_mapping(cfg, bad) -> None:
    if not isinstance(cfg, dict):
        raise E.PipelineValidationError.missing(MISSING_ORDER)


def _lang(cfg, bad) -> None:
    if bad.at("lang"):
        raise E.PipelineValidationError.lang(cfg.get("lang"))


def _unknown_keys(cfg, bad) -> None:
    for err in bad.at(keyword="additionalProperties"):
        raise E.PipelineValidationError.unknown_keys(sorted(_extra_keys(err)))
    for block in ("source", "units", "output"):
        for err in bad.at(block, keyword="additionalProperties"):
            raise E.PipelineValidationError.unknown_keys(sorted(_extra_keys(err)), block)


def _absent(cfg: dict, key: str) -> bool:
    block, _, name = key.partition(".")
    value = cfg.get(block)
    if not name:  # tokenizer: a kind with no value at all is missing; a kind with a dict (even {}) is a config
        return _blank(value) or (isinstance(value, dict) and all(v is None or v == [] for v in value.values()))
    return not isinstance(value, dict) or _blank(value.get(name))


def _required(bad, key: str) -> bool:
    """Does the schema flag this key: its value, the key absent (or its block absent), or its block not a mapping?"""
    path = tuple(key.split("."))
    if bad.under(*path):
        return True
    for depth in range(len(path)):  # at the root naming the block; in the block naming the key
        if any(path[depth] in err.validator_value for err in bad.at(*path[:depth], keyword="required")):
            return True
    return any(bad.at(*path[:depth], keyword="type") for depth in range(1, len(path)))


def _missing(cfg, bad) -> None:
    """A block the schema requires that is absent or empty: all of them listed at once."""
    missing = [key for key in MISSING_ORDER if _absent(cfg, key) and _required(bad, key)]
    if missing:
        raise E.PipelineValidationError.missing(missing)


def _files(cfg, bad) -> None:
    if bad.under("source", "files"):
        raise E.PipelineValidationError.files()


def _fields(cfg, bad) -> None:
    fields = cfg["source"]["fields"]
    if bad.at("source", "fields") or any(bad.at("source", "fields", i, keyword="type") for i in range(len(fields))):
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
        raise E.TokenizerValidationError.unknown_kind(next(iter(tok)))


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
        return E.TokenizerValidationError.train_missing_keys([k for k in err.validator_value if k not in item])
    worded = {"vocab_size": E.TokenizerValidationError.train_vocab_size, "unit": E.TokenizerValidationError.train_unit,
              "out": E.TokenizerValidationError.train_out,
              "hot_pair_window_size": E.TokenizerValidationError.train_window}
    for key, problem in worded.items():
        if bad.under(*at, key):
            return problem(item[key])
    return None


ITEM_PROBLEMS = {training.KIND: _train_item_problem}  # a kind whose item is not {path: ...} words its own


def check_train_item(item) -> dict:
    """`mintdim tokenizer train`'s options, checked as a train_bpe item of a config is; returns its options."""
    bad = schema.findings(item, "train_value")
    if bad:
        raise _train_item_problem(item, (), bad) or schema.unworded(bad)
    return training.options(item)


def _auto_options(cfg, bad) -> None:
    """units: {sizes: auto, k: 4, multiple_of: 64, min_size: .., max_size: .., cost: linear|attention}."""
    units = cfg["units"]
    if units["sizes"] != "auto":
        for err in bad.at("units", keyword="not"):  # the planning options apply only with sizes: auto
            named = {sub["required"][0] for sub in err.validator_value["anyOf"]}
            raise E.UnitValidationError.auto_only(sorted(named & set(units)))
        return
    if bad.at("units", keyword="required") or bad.under("units", "k"):
        raise E.UnitValidationError.needs_k(units.get("k"))
    for key in ("multiple_of", "min_size", "max_size"):
        if units.get(key) is not None and bad.under("units", key):  # null: the schema's own words, last
            raise E.UnitValidationError.not_positive(key, units[key])
    for err in bad.at("units", "cost"):
        raise E.UnitValidationError.cost(list(err.validator_value), units["cost"])


def _auto_range(cfg, bad) -> None:
    units = cfg["units"]
    if units["sizes"] == "auto" and units.get("min_size") and units.get("max_size"):
        if units["min_size"] > units["max_size"]:
            raise E.UnitValidationError.min_above_max()


def _units_shapes(cfg, bad) -> None:
    sizes = cfg["units"]["sizes"]
    if sizes != "auto" and (bad.at("units", "sizes")
                            or any(bad.at("units", "sizes", i, keyword="type") for i in range(len(sizes)))):
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
    for values, error in ((src["fields"], E.FieldMappingError), (src["templates"], E.TemplateMappingError)):
        if len(values) not in (1, n):
            raise error.arity(n, len(values))


def _train_on(cfg, bad) -> None:
    """source.train_on: a list of lists of field names, shared (len 1) or mapped (len N) like fields."""
    src = cfg["source"]
    train_on = src.get("train_on")
    if train_on is None:  # absent (an explicit null: the schema's own words, last)
        return
    if bad.at("source", "train_on") or any(bad.at("source", "train_on", i, keyword="type")
                                           for i in range(len(train_on))):
        raise E.FieldMappingError.train_on()
    n = len(src["files"])
    if len(train_on) not in (1, n):
        raise E.FieldMappingError.train_on_arity(n, len(train_on))
    for i in range(n):
        declared = _pick(src["fields"], i)
        for name in _pick(train_on, i):
            if name not in declared:
                raise E.FieldMappingError.train_on_name(i if len(train_on) > 1 else 0, name, declared)


def _arity(cfg, bad) -> None:
    units, out = cfg["units"], cfg["output"]
    n = len(cfg["source"]["files"])
    mapped = [(_listed(next(iter(cfg["tokenizer"].values()))), E.TokenizerMappingError),
              (units["sizes"] if units["sizes"] != "auto" else [None], E.UnitMappingError),
              (units["build_batch"], E.UnitMappingError), (_listed(out["dir"]), E.OutputMappingError),
              (out["samples_per_shard"], E.SamplesPerShardError)]
    for values, error in mapped:
        if len(values) not in (1, n):
            raise error.arity(n, len(values))


def _unit_values(cfg, bad) -> None:
    units = cfg["units"]
    for i, unit_sizes in enumerate(units["sizes"] if units["sizes"] != "auto" else []):
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
    for item in _listed(value):
        if kind in EXTENSIONS and not item["path"].endswith(EXTENSIONS[kind]):
            raise E.TokenizerValidationError.extension(kind, item["path"])


def _work(cfg, bad) -> None:
    if bad.under("work_dir"):
        raise E.PipelineValidationError.work_dir()
    if bad.under("chunk_mb"):
        raise E.PipelineValidationError.chunk_mb(cfg["chunk_mb"])


STEPS = [
    _a_mapping, _lang, _unknown_keys, _missing,  # what the config is
    _files, _fields, _templates, _tokenizer, _tokenizer_items, _auto_options, _auto_range, _units_shapes,
    _output_shapes,  # shapes
    _arity_source, _train_on, _arity,  # mapping arity
    _unit_values, _output_values, _tokenizer_extension, _work,  # values
]


# --- resolution: one entry per file, one per output directory ---------------------------------------------------


def _auto(units: dict) -> dict | None:
    if units["sizes"] != "auto":
        return None
    return {"k": units.get("k"), "multiple_of": units.get("multiple_of", 1), "min_size": units.get("min_size"),
            "max_size": units.get("max_size"), "cost": units.get("cost", "linear")}


def _entries(raw: dict) -> BuildConfig:
    src, units, out = raw["source"], raw["units"], raw["output"]
    ((kind, tok_value),) = raw["tokenizer"].items()
    tok_items, dirs, auto = _listed(tok_value), _listed(out["dir"]), _auto(units)
    train_on = src.get("train_on")
    out_index: dict[str, int] = {}
    outputs: list[OutputEntry] = []
    entries: list[FileEntry] = []
    for i, path in enumerate(src["files"]):
        tok_item = _pick(tok_items, i)
        tok_path = tok_item["out"] if kind == training.KIND else tok_item["path"]
        out_dir = _pick(dirs, i)
        absdir = os.path.abspath(out_dir)
        entry = FileEntry(
            index=i, path=path, abspath=os.path.abspath(path), fields=list(_pick(src["fields"], i)),
            template=_pick(src["templates"], i), tokenizer_kind="unitoken" if kind == training.KIND else kind,
            tokenizer_path=tok_path, tokenizer_abspath=os.path.abspath(tok_path),
            tokenizer_train=training.options(tok_item) if kind == training.KIND else None,
            sizes=None if auto else list(_pick(units["sizes"], i)),
            build_batch=_pick(units["build_batch"], i), output=-1, samples_per_shard=_pick(out["samples_per_shard"], i),
            train_on=list(_pick(train_on, i)) if train_on else None)
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
    return BuildConfig(files=entries, outputs=outputs, lang=lang_of(raw),
                       work_dir=raw.get("work_dir", DEFAULT_WORK_DIR),
                       chunk_mb=float(raw.get("chunk_mb", DEFAULT_CHUNK_MB)), raw=raw)


# --- rules on the resolved entries, in the fixed order -----------------------------------------------------------


def _shared_outputs(build: BuildConfig) -> None:
    """Files sharing one output share its tokenizer, unit sizes and samples_per_shard."""
    for o in build.outputs:
        members = [build.files[i] for i in o.files]
        paths = [m.path for m in members]
        if len({m.tokenizer_abspath for m in members}) > 1:
            raise E.TokenizerMappingError.collision("tokenizer", o.dir, paths, [m.tokenizer_path for m in members])
        if len({tuple(m.sizes or ()) for m in members}) > 1:
            raise E.UnitMappingError.collision("unit sizes", o.dir, paths, [m.sizes for m in members])
        if len({m.samples_per_shard for m in members}) > 1:
            raise E.SamplesPerShardError.shared(o.dir, ", ".join(f"{m.path}: {m.samples_per_shard}" for m in members))


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


def _train_out(build: BuildConfig) -> None:
    training.check_entries(build.files, build.outputs, build.work_dir)  # train_bpe: out apart, options agree


def _templates_match(build: BuildConfig) -> None:
    for e in build.files:
        check_template(e)


RULES = [_shared_outputs, _outputs_apart, _train_out, _templates_match]


def check_template(e: FileEntry) -> T.Template:
    try:
        tpl = T.parse(e.template)
    except T.TemplateSyntaxError as bad:
        raise E.TemplateFieldMismatchError.placeholder(e.path, e.fields, e.template, bad.placeholder, bad.reason)
    declared = set(e.fields)
    for name in tpl.names:
        if name not in declared:
            raise E.TemplateFieldMismatchError.undeclared(e.path, e.fields, e.template, name)
    used = set(tpl.names)
    for name in e.fields:
        if name not in used:
            raise E.TemplateFieldMismatchError.unused(e.path, e.fields, e.template, name)
    return tpl
