"""The resolved config: one entry per input file (`FileEntry`) and one per output directory
(`OutputEntry`), shared/mapped blocks resolved (`resolve_entries`), and the build's identity
(`BuildConfig.build_id`). mintdim/config.py checks a config before it is resolved here.

Extension fields of the entries stay out of the build id while unused (`EXTENSION_FIELDS`): a build
that does not use them keeps its id.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field

from . import __version__
from . import errors as E
from .tokenizers import training

DEFAULT_WORK_DIR = ".mintdim"
# Each tokenize job loads the tokenizer once (ai21 j2's SentencePiece model: ~0.4 s) and starts
# a Python process; 256 MB chunks keep that under ~2% of the job's encode time. Memory does not
# grow with it (the job streams its chunk).
DEFAULT_CHUNK_MB = 256


@dataclass(slots=True)
class SourceOptions:
    """How the file's records become samples (source.*)."""

    fields: list[str] = field(default_factory=list)  # empty for a conversation file (source.chat)
    template: str = ""
    allow_empty: bool | None = (
        None  # source.allow_empty: a file with no samples is a warning (None: an error)
    )
    take: int | float | None = None  # source.take: a count (int) or a fraction (float) of the file's samples
    take_seed: int | None = None  # source.seed with take (default 0): seeds the choice (sources/take.py)
    on_bad_record: str | None = None  # source.on_bad_record: "skip" (None: error, the spec's behaviour)
    max_skipped: int | float | None = None  # with skip: a count (int) or a fraction (float) of its records


@dataclass(slots=True)
class TokenizerOptions:
    """The file's tokenizer (tokenizer.*)."""

    kind: str  # sentencepiece | hf_json | unitoken | hf_dir (train_bpe: unitoken, trained first)
    path: str  # as declared (train_bpe: its `out`, where the model goes)
    abspath: str
    train: dict | None = None  # tokenizer.train_bpe: the training options
    options: dict | None = None  # hf_dir: pad_token, chat_template (a path as declared)


@dataclass(slots=True)
class UnitOptions:
    """The file's units (units.*)."""

    sizes: list[int] | None  # None: planned from the data (units.sizes: auto)
    build_batch: int
    pack: int | None = None  # units.pack: row length of the packed layout (None: bucketed units)
    overflow: str | None = None  # units.overflow: error | drop | truncate (bucketed: None for error)


@dataclass(slots=True)
class MaskOptions:
    """The file's loss mask (source.train_on, source.train_eos, source.drop_untrained)."""

    train_on: list[str] | None = None  # fields (a conversation file: roles) whose tokens the mask trains
    train_eos: bool | None = None  # False: the end-of-turn token is not trained (None: it is)
    drop_untrained: bool | None = None  # True: a sample with no trained token is left out


@dataclass(slots=True)
class FileEntry:
    """One input file, resolved: its options grouped as the config declares them (`entry.source.take`,
    `entry.tokenizer.path`, `entry.units.sizes`, `entry.masks.train_on`)."""

    index: int
    path: str  # as declared: every index shows it like this
    abspath: str
    source: SourceOptions
    tokenizer: TokenizerOptions
    units: UnitOptions
    output: int
    samples_per_shard: int
    masks: MaskOptions = field(default_factory=MaskOptions)
    chat: dict | None = None  # source.chat: the conversation options (sources/chat.py); train_on: roles

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
            "files": [canonical(f) for f in self.files],
            "outputs": [canonical(o) for o in self.outputs],
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


# a FileEntry's groups, flat in the build id as the entry was before they were grouped (the id stays)
FLAT_PREFIX = {"source": "", "tokenizer": "tokenizer_", "units": "", "masks": ""}


def canonical(entry) -> dict:
    """An entry for the build id, one flat record, without the extension fields a build does not use."""
    record = asdict(entry)
    for group, prefix in FLAT_PREFIX.items():
        record.update({prefix + k: v for k, v in (record.pop(group, None) or {}).items()})
    return {k: v for k, v in record.items() if not (k in EXTENSION_FIELDS and v is None)}


def pick(values: list, i: int):
    return values[0] if len(values) == 1 else values[i]


def listed(value) -> list:
    """A block that is one value shared by every file, or a list mapped by file."""
    return value if isinstance(value, list) else [value]


def chats(src: dict, n: int) -> list:
    """source.chat per file: its item, or None (no chat, or a null item: fields/templates)."""
    value = src.get("chat")
    return [None if value is None else pick(listed(value), i) for i in range(n)]


def chat_module():
    """mintdim.sources.chat, imported only for a config with conversations (a job spares ~10 ms otherwise)."""
    from .sources import chat

    return chat


def lang_of(raw) -> str:
    lang = raw.get("lang", "en") if isinstance(raw, dict) else "en"
    return lang if lang in E.LANGS else "en"


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
    return {**chat_module().DEFAULTS, **{k: v for k, v in item.items() if v is not None}}


def _chat_roles(train_on, opts: dict) -> list[str] | None:
    """The roles a conversation file trains: train_on's, or with `train`/`last_turn` and no train_on the
    assistant's; None: no masks."""
    if train_on is not None:
        return list(train_on)
    return list(chat_module().DEFAULT_TRAIN_ROLES) if ("train" in opts or opts.get("last_turn")) else None


def _flags(entry: FileEntry, src: dict, i: int) -> None:
    """train_eos and drop_untrained of one file, kept only where they change the build (the build id of a
    config without them): train_eos False, drop_untrained True."""
    if "train_eos" in src and pick(src["train_eos"], i) is False:
        entry.masks.train_eos = False
    if "drop_untrained" in src and pick(src["drop_untrained"], i) is True:
        entry.masks.drop_untrained = True


def resolve_entries(raw: dict) -> BuildConfig:
    src, units, out = raw["source"], raw["units"], raw["output"]
    ((kind, tok_value),) = raw["tokenizer"].items()
    tok_items, dirs, auto = listed(tok_value), listed(out["dir"]), _auto(units)
    train_on, items = src.get("train_on"), chats(src, len(src["files"]))
    packs, overflows = units.get("pack"), units.get("overflow", ["error"])
    allow_empty = True if src.get("allow_empty") else None
    if packs:
        from .units.packing import NO_LIMIT  # here: a bucketed config does not import numpy for it
    out_index: dict[str, int] = {}
    outputs: list[OutputEntry] = []
    entries: list[FileEntry] = []
    for i, path in enumerate(src["files"]):
        tok_item = pick(tok_items, i)
        tok_path = tok_item["out"] if kind == training.KIND else tok_item["path"]
        out_dir = pick(dirs, i)
        absdir = os.path.abspath(out_dir)
        entry = FileEntry(
            index=i,
            path=path,
            abspath=os.path.abspath(path),
            source=SourceOptions(allow_empty=allow_empty),
            tokenizer=TokenizerOptions(
                kind="unitoken" if kind == training.KIND else kind,
                path=tok_path,
                abspath=os.path.abspath(tok_path),
                train=training.options(tok_item) if kind == training.KIND else None,
                options=_hf_dir_options(tok_item) if kind == "hf_dir" else None,
            ),
            units=UnitOptions(
                sizes=None if auto or packs else list(pick(units["sizes"], i)),
                build_batch=pick(units["build_batch"], i),
            ),
            output=-1,
            samples_per_shard=pick(out["samples_per_shard"], i),
        )
        source, masks, unit = entry.source, entry.masks, entry.units
        if items[i] is not None:  # a conversation file: no fields/template; train_on names roles
            entry.chat = _chat_options(items[i])
            masks.train_on = _chat_roles(pick(train_on, i) if train_on else None, entry.chat)
        else:
            source.fields, source.template = list(pick(src["fields"], i)), pick(src["templates"], i)
            masks.train_on = list(pick(train_on, i)) if train_on else None
        _flags(entry, src, i)
        if "take" in src:  # source.take: the plan stage chooses the samples (mintdim/sources/take.py)
            source.take, source.take_seed = pick(src["take"], i), src.get("seed", 0)
        if pick(src.get("on_bad_record", ["error"]), i) == "skip":  # stages/plan.py applies it
            source.on_bad_record, source.max_skipped = "skip", pick(src.get("max_skipped", [0.01]), i)
        if packs:
            # the tokenize stage bounds a sample by the row only
            # with overflow: error; else the plan applies it
            unit.pack, unit.overflow = pick(packs, i), pick(overflows, i)
            unit.sizes = [unit.pack] if unit.overflow == "error" else [NO_LIMIT]
        # unit sizes: the tokenize stage drops or truncates to the largest
        elif pick(overflows, i) != "error":
            unit.overflow = pick(overflows, i)
        if absdir not in out_index:
            out_index[absdir] = len(outputs)
            outputs.append(_output_entry(len(outputs), out_dir, absdir, entry, tok_path, auto, packs))
        entry.output = out_index[absdir]
        outputs[entry.output].files.append(i)
        outputs[entry.output].build_batches.append(entry.units.build_batch)
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
        tokenizer_kind=entry.tokenizer.kind,
        tokenizer_path=tok_path,
        tokenizer_abspath=entry.tokenizer.abspath,
        auto=auto,
        sizes=[entry.units.pack] if packs else entry.units.sizes,
        pack=entry.units.pack,
        overflow=entry.units.overflow,
        samples_per_shard=entry.samples_per_shard,
    )
