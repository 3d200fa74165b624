"""The tokenizer-facts cache: what a pre-flight learned of each tokenizer, so no later one loads it again.

Per work directory (WORK/tokenizer-facts.json): each tokenizer file's facts by its size and mtime, the
templates whose literals passed, and the configs that passed the schema (config.resolve may then skip the
schema step). Shared by every work directory (the user cache, engines.user_cache_dir): the same facts by
content. Written only after a pre-flight passed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass

from .. import __version__, schema
from ..config import DEFAULT_WORK_DIR, BuildConfig
from ..formats import records
from ..tokenizers.engines import (
    cache_dirs,
    file_digest,
    ranks_cached,
    read_entry,
    user_cache_dir,
    write_entry,
)
from ..tokenizers.kinds import stat_key


@dataclass
class TokenizerMeta:
    type: str
    path: str
    vocab_size: int
    unk_id: int
    pad_id: int
    dtype: str
    trained: dict | None = None  # tokenizer.train_bpe: what the model was trained from (manifest)
    # "tiktoken" when it encodes this file exactly (mintdim/tokenizers/engines.py), else None
    engine: str | None = None

    @property
    def bytes_per_token(self) -> int:
        return BYTES_PER_TOKEN[self.dtype]


BYTES_PER_TOKEN = {"uint16": 2, "uint32": 4}  # the token dtypes dtype_for_vocab chooses


def fingerprint(kind: str, abspath: str, options: dict | None = None) -> str:
    # MINTDIM_ENGINE=tokenizers: facts recorded without the fast engine, apart from the usual ones
    key = f"{kind}|{abspath}|{stat_key(kind, abspath)}" + ("" if engines_allowed() else "|library")
    # hf_dir: pad_token changes pad_id
    return key + "|" + json.dumps(options, sort_keys=True) if options else key


def engines_allowed() -> bool:
    """MINTDIM_ENGINE=tokenizers keeps every file on its library's own encode (tokenizers/engines.py)."""
    return os.environ.get(ENGINE_ENV, "auto") != "tokenizers"


ENGINE_ENV = "MINTDIM_ENGINE"


def _cache_path(build_or_work_dir) -> str:
    work_dir = getattr(build_or_work_dir, "work_dir", build_or_work_dir)
    return os.path.join(work_dir, "tokenizer-facts.json")


def read_cache(build_or_work_dir) -> dict:
    try:
        with open(_cache_path(build_or_work_dir), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _schema_key(raw: dict) -> str:
    """This config, checked against this version's schema."""
    text = json.dumps([__version__, stat_key("file", schema.schema_file()), raw], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def schema_checked(raw) -> bool:
    """Did this exact config pass a whole pre-flight before (recorded in its work directory's cache)?
    Then config.resolve may skip the schema step (`trusted`): no jsonschema import (~55 ms)."""
    work_dir = raw.get("work_dir", DEFAULT_WORK_DIR) if isinstance(raw, dict) else None
    if not isinstance(work_dir, str) or not work_dir:
        return False
    return _schema_key(raw) in read_cache(work_dir).get("schema_valid", [])


# ---- the same facts by content, shared by every work directory (the user cache, engines.user_cache_dir)

# the libraries whose behaviour the facts of a kind depend on (their versions are part of the key)
_LIBRARIES = {
    "sentencepiece": ("sentencepiece",),
    "hf_json": ("tokenizers", "tiktoken"),
    "hf_dir": ("tokenizers", "tiktoken"),
    "unitoken": ("ffbpe",),
}
_CONTENT: dict[str, str] = {}  # work-dir fingerprint -> content key, for the tokenizers this process checked


def model_files(kind: str, abspath: str) -> list[str]:
    if kind == "hf_dir":
        from ..tokenizers.hfdir import model_files as files
    elif kind == "unitoken":
        from ..tokenizers.unitoken import model_files as files
    else:
        return [abspath]
    return files(abspath)


def _content_key(kind: str, abspath: str, options: dict | None) -> str | None:
    """What a tokenizer's facts depend on: the SHA-256 of each of its files, the options (pad_token),
    MINTDIM_ENGINE, MintDim's version and its libraries' versions. None: a file cannot be read."""
    import importlib

    files = []
    for p in model_files(kind, abspath):
        try:
            files.append([os.path.basename(p), file_digest(p) if os.path.isfile(p) else None])
        except OSError:
            return None
    versions = {}
    # the module's own attribute: importlib.metadata's first call costs ~70 ms
    for lib in _LIBRARIES.get(kind, ()):
        try:
            versions[lib] = getattr(importlib.import_module(lib), "__version__", "?")
        except ImportError:
            versions[lib] = None
    text = json.dumps([kind, files, options or {}, engines_allowed(), __version__, versions], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _facts_file(content_key: str) -> str | None:
    user = user_cache_dir()
    return os.path.join(user, "tokenizer-facts", f"{content_key}.json") if user else None


def _read_facts(content_key: str) -> dict | None:
    """The user cache's entry for this content key, when intact and recorded for this very key."""
    path = _facts_file(content_key)
    body = read_entry(path) if path else None
    try:
        entry = json.loads(body) if body is not None else None
        if not isinstance(entry, dict) or entry.get("key") != content_key:
            return None
        if not isinstance(entry.get("templates"), list):
            return None
        TokenizerMeta(path="", **entry["meta"])  # every field present and known
        return entry
    except (ValueError, TypeError, KeyError):
        return None


def content_hit(f, work_dir: str) -> dict | None:
    """Facts of a tokenizer with this content from any work directory (vocab size, PAD, UNK, dtype, engine,
    the templates whose literals passed). The engine's checked tables must be at hand too, else the
    tokenize jobs would check the file again: then it is a miss."""
    key = _content_key(f.tokenizer.kind, f.tokenizer.abspath, f.tokenizer.options)
    if key is None:
        return None
    _CONTENT[fingerprint(f.tokenizer.kind, f.tokenizer.abspath, f.tokenizer.options)] = key
    entry = _read_facts(key)
    if entry and entry["meta"].get("engine"):
        hf_dir = f.tokenizer.kind == "hf_dir"
        json_file = os.path.join(f.tokenizer.abspath, "tokenizer.json") if hf_dir else f.tokenizer.abspath
        if not ranks_cached(json_file, cache_dirs(work_dir)):
            return None
    return entry


def _write_facts(cache: dict) -> None:
    """Record, by content, the tokenizers this process checked (after pre-flight passed): a fresh work
    directory then neither loads the model nor checks the engine again. Unwritable: nothing happens."""
    for fingerprint, key in _CONTENT.items():
        here, path = cache.get(fingerprint), _facts_file(key)
        if here is None or path is None:
            continue
        before = _read_facts(key)
        templates = list((before or {}).get("templates", []))
        templates += [t for t in here["templates"] if t not in templates]
        if before and before["templates"] == templates:
            continue
        meta = {k: v for k, v in here["meta"].items() if k != "trained"}
        body = json.dumps({"key": key, "meta": meta, "templates": templates[-64:]}, ensure_ascii=False)
        write_entry(path, body.encode("utf-8"))
    _CONTENT.clear()


def write_cache(build: BuildConfig, metas: dict[str, TokenizerMeta]) -> None:
    """Remember what pre-flight learned of each tokenizer file (by size and mtime), and that this
    config passed the schema, so a later pre-flight (another build, or the validate job after an input
    changed) neither loads a large model a second time nor imports the schema validator. Only after
    pre-flight passed."""
    cache = read_cache(build)
    valid = cache.setdefault("schema_valid", [])
    key = _schema_key(build.raw)
    if key not in valid:
        valid[:] = (valid + [key])[-32:]
    for f in build.files:
        if f.tokenizer.abspath not in metas:  # tokenizer.train_bpe: not trained yet
            continue
        m = metas[f.tokenizer.abspath]
        key = fingerprint(f.tokenizer.kind, f.tokenizer.abspath, f.tokenizer.options)
        # `trained` names the config that trained the model (tokenizer.train_bpe), not a fact of its files
        meta = {k: v for k, v in asdict(m).items() if k not in ("path", "trained")}
        entry = cache.setdefault(key, {"meta": meta, "templates": []})
        if f.source.template not in entry["templates"]:
            entry["templates"].append(f.source.template)
    os.makedirs(build.work_dir, exist_ok=True)
    records.atomic_write_text(_cache_path(build), json.dumps(cache, ensure_ascii=False))
    _write_facts(cache)
