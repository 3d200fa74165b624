"""Pre-flight: every check that needs no data, in a fixed order, before any data stage starts.

The config (config.resolve: its JSON schema, then the rules across fields and
the templates), input files, tokenizers (format, special tokens, dtype), tier-1
template literals, and the output directories. Nothing is created when a check
fails.

One pre-flight per build: the launcher (`mintdim build`, job.run()) or, for a direct `snakemake` run,
Snakemake's main process runs it and records its result (`record`: WORK/preflight/<key>.json, the key
naming the config and the working directory); the Snakefile's wiring and the validate job read that record
(`recorded`) and trust it only while nothing it depends on changed (its stamp: MintDim's version, the
schema, MINTDIM_ENGINE, the file-system identity of every file it read). The record names the processes
that ran the pre-flights recorded there (`passed`): one per build.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict

from .. import __version__, schema
from .. import errors as E
from ..config import DEFAULT_WORK_DIR, BuildConfig, resolve
from ..formats import records
from ..sources import inputs
from ..sources import template as T
from ..tokenizers import training
from ..tokenizers.engines import cache_dirs
from ..tokenizers.kinds import (
    DIRECTORY_KINDS,
    dtype_for_vocab,
    engine_of,
    load,
    missing_files,
    stat_key,
)
from ..tokenizers.kinds import (
    exists as tokenizer_exists,
)
from .to_build import outputs_to_build, stat_identity
from .tokenizer_facts import (
    TokenizerMeta,
    content_hit,
    engines_allowed,
    fingerprint,
    model_files,
    read_cache,
    schema_checked,
    write_cache,
)


def _not_found(context: str, path: str, holds=None) -> E.MintDimError:
    """A file not found: a relative path says which directory it was resolved from (the one the build runs
    in); `holds`: what the directory that lacks it holds (a directory kind's files)."""
    base = None if path.startswith("/") else os.getcwd()
    return E.MintDimFileNotFoundError.resolved(context, path, base, holds)


def check_files(build: BuildConfig) -> None:
    """Every input is there; then what each holds: it reads, its columns fit the config (Parquet,
    datasets directories: from their metadata), and it holds a sample: unless source.allow_empty, an input
    with none is an error (a JSONL file decided from a bounded prefix, jsonl.no_samples: the plan stage
    catches a longer blank one); and a file asked for a count (source.take) must hold one."""
    from ..sources.jsonl import no_samples

    for f in build.files:
        if not inputs.exists(f.abspath):
            raise _not_found("source", f.path)
        if not inputs.accepted(f.abspath):  # e.g. a .json file: its tokenize job would fail at line 1
            shape = inputs.shape_of(f.abspath)  # what the file seems to hold, for the fix
            stem = os.path.splitext(f.path)[0]
            raise E.SourceParseError.unknown_kind(f.path, shape == "array", shape == "lines", stem)
    for f in build.files:
        count = isinstance(f.source.take, int)
        holds = inputs.check(f.abspath, f.path, f.source.fields, f.chat, count=count)
        jsonl_file = inputs.kind_of(f.abspath) == inputs.JSONL
        reason = no_samples(f.abspath) if jsonl_file else (None if holds else "no_rows")
        if reason and not f.source.allow_empty:
            kind = "JSONL" if jsonl_file else inputs.label(f.abspath)
            raise E.SourceParseError.message("empty_" + reason, f.path, kind)
        if count and not holds:
            shared = len(build.raw["source"]["take"]) == 1
            raise E.PipelineValidationError.take_no_samples(0 if shared else f.index, f.path, f.source.take)


def load_tokenizers(
    build: BuildConfig, check_templates: bool = True, use_cache: bool = False
) -> dict[str, TokenizerMeta]:
    """Each distinct tokenizer's facts (keyed by absolute path), loading a file only when needed."""
    metas: dict[str, TokenizerMeta] = {}
    loaded = {}
    pending = set()  # tokenizer.train_bpe models not trained yet: checked again by the validate job
    cache = read_cache(build) if use_cache else {}
    for f in build.files:
        key = f.tokenizer.abspath
        if key in metas or key in pending:
            continue
        if f.tokenizer.train is not None and training.state(build, training.group_of(build, f)) == "absent":
            pending.add(key)
            continue
        _check_directory_kind(f)
        if not tokenizer_exists(f.tokenizer.kind, key):
            raise _not_found("tokenizer", f.tokenizer.path)
        known = fingerprint(f.tokenizer.kind, key, f.tokenizer.options)
        hit = cache.get(known)
        if hit is None and use_cache:  # the same content checked in another work directory
            hit = content_hit(f, build.work_dir)
            if hit is not None:
                cache[known] = hit
        if hit:
            facts = {k: v for k, v in hit["meta"].items() if k != "trained"}  # the config says `trained`
            metas[key] = TokenizerMeta(path=f.tokenizer.path, **facts)
        else:
            metas[key], loaded[key] = _load_checked(f, cache_dirs(build.work_dir))
        if f.tokenizer.train is not None:
            metas[key].trained = training.manifest_reference(key)
    if check_templates:
        for f in build.files:
            if f.tokenizer.abspath in pending:
                training.check_pending(f)
                continue
            if f.chat is not None:  # source.chat: the tokenizer's chat template, not a MintDim template
                check_chat_template(f)
                continue
            hit = cache.get(fingerprint(f.tokenizer.kind, f.tokenizer.abspath, f.tokenizer.options))
            if hit and f.source.template in hit["templates"]:
                continue
            if f.tokenizer.abspath not in loaded:
                loaded[f.tokenizer.abspath] = _load_checked(f, cache_dirs(build.work_dir))[1]
            check_template_literals(f, loaded[f.tokenizer.abspath], metas[f.tokenizer.abspath].unk_id)
    return metas


def _check_directory_kind(f) -> None:
    """A directory kind given a file (e.g. hf_dir given its tokenizer.json): the fix names the directory
    when that is one; an hf_dir directory without tokenizer.json or tokenizer_config.json: that file."""
    kind, key = f.tokenizer.kind, f.tokenizer.abspath
    if kind in DIRECTORY_KINDS and os.path.isfile(key):
        parent = os.path.dirname(f.tokenizer.path.rstrip("/")) or "."
        missing = missing_files(kind, os.path.dirname(key))
        raise E.TokenizerValidationError.dir_expected(kind, f.tokenizer.path, parent, missing)
    if kind == "hf_dir" and os.path.isdir(key) and missing_files(kind, key):
        path = os.path.join(f.tokenizer.path, missing_files(kind, key)[0])
        raise _not_found("tokenizer", path, E.MintDimFileNotFoundError.texts("dir_holds_" + kind))


def _load_checked(f, engines_dir: str | list[str] | None = None) -> tuple[TokenizerMeta, object]:
    try:
        tok = load(
            f.tokenizer.kind,
            f.tokenizer.abspath,
            engine="auto" if engines_allowed() else None,
            engine_cache=engines_dir,
            **(f.tokenizer.options or {}),
        )
    except Exception as exc:  # the library's own words for a file it cannot read
        reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise E.TokenizerValidationError.unloadable(f.tokenizer.kind, f.tokenizer.path, reason) from None
    vocab = tok.vocab_size
    unk, pad = tok.unk_id, tok.pad_id
    # hf_dir: a tokenizer that encodes every string (byte-level, byte fallback) needs no UNK
    needs_unk = not getattr(tok, "encodes_every_string", False)
    if (unk is None and needs_unk) or (unk is not None and not 0 <= unk < vocab):
        raise E.TokenizerSpecialTokenError.make("unk_id", f.tokenizer.path)
    if f.tokenizer.kind == "hf_dir" and pad is None:
        names, total = tok.pad_candidates()
        raise E.TokenizerSpecialTokenError.dir_pad(f.tokenizer.path, names, total, tok.declared_pad)
    if pad is None or not 0 <= pad < vocab:
        raise E.TokenizerSpecialTokenError.make("pad_id", f.tokenizer.path)
    dtype = dtype_for_vocab(vocab)
    if dtype is None:
        raise E.TokenDTypeValidationError.make(vocab)
    meta = TokenizerMeta(f.tokenizer.kind, f.tokenizer.path, vocab, unk, pad, dtype, engine=engine_of(tok))
    return meta, tok


def check_template_literals(f, tok, unk_id: int) -> None:
    """Tier 1: each non-empty literal segment, encoded on its own, must hold no UNK."""
    tpl = T.parse(f.source.template)
    parts = tpl.static_parts
    if not parts or unk_id is None:  # no UNK id (hf_dir, byte-level): nothing can produce one
        return
    for literal, ids in zip(parts, tok.encode_ids(parts)):
        if unk_id in ids:
            raise E.TemplateTokenizerError.make(f.index, f.source.template, literal)


def check_chat_template(f) -> None:
    """source.chat: the tokenizer directory (or the config) supplies a chat template that compiles."""
    from ..sources import chat
    from ..tokenizers import hfdir

    opts = f.tokenizer.options or {}
    override = opts.get("chat_template")
    if override is not None and not os.path.isfile(override):
        raise E.MintDimFileNotFoundError.make("tokenizer chat_template", override)
    config = hfdir._read_json(os.path.join(f.tokenizer.abspath, hfdir.CONFIG_FILE))
    text = hfdir.read_chat_template(f.tokenizer.abspath, config, override)
    if text is None:
        raise E.ChatTemplateError.missing(f.tokenizer.path)
    chat.check_template(text, override or f.tokenizer.path)


def preflight(
    raw: dict,
    use_cache: bool = False,
    check_outputs: bool = True,
    rebuild: bool = False,
    how: str | None = None,
) -> tuple[BuildConfig, dict[str, TokenizerMeta]]:
    """All pre-flight checks. Returns the resolved build and its tokenizers' facts.

    use_cache: trust tokenizer facts an earlier pre-flight of the same files recorded
    (tokenizer_facts.py: a later build in the same work directory, or of the same tokenizer files).
    rebuild, how: see outputs_to_build."""
    build = resolve(raw, trusted=use_cache and schema_checked(raw))
    try:
        check_files(build)
        metas = load_tokenizers(build, use_cache=use_cache)
        if check_outputs:
            outputs_to_build(build, rebuild, how)
    except E.MintDimError as err:
        raise err.with_lang(build.lang)
    return build, metas


# --- the record of a pre-flight, read by the rest of the build -------------------------------------------

RECORDS = "preflight"  # WORK/preflight/<key>.json
PASSED_KEPT = 32  # the processes named in a record's `passed`: the latest ones


def _sha256(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_path(raw) -> str | None:
    """Where the pre-flight of this config, run from this directory, is recorded: one file per config and
    working directory (relative paths resolve from it), so two builds never read each other's record.
    None: the config names no work directory."""
    work_dir = raw.get("work_dir", DEFAULT_WORK_DIR) if isinstance(raw, dict) else None
    if not isinstance(work_dir, str) or not work_dir:
        return None
    return os.path.join(work_dir, RECORDS, _sha256([os.getcwd(), raw]) + ".json")


def _head() -> list:
    """What every pre-flight depends on besides its files: MintDim's version, its schema, the engine."""
    return [__version__, stat_key("file", schema.schema_file()), engines_allowed()]


def _stamp(build: BuildConfig) -> str:
    """The file-system identity (to_build.stat_identity) of every file a pre-flight read: the sources, the
    tokenizers' model files (absent ones too: a tokenizer.train_bpe model not trained yet), a chat template
    file. Any write changes it."""
    paths = set()
    for f in build.files:
        paths.update([f.abspath, *inputs.files_of(f.abspath), f.tokenizer.abspath])
        try:
            paths.update(model_files(f.tokenizer.kind, f.tokenizer.abspath))
        except (OSError, ValueError, KeyError, TypeError, E.MintDimError):
            pass  # an unreadable model directory: its own identity stands for it
        override = (f.tokenizer.options or {}).get("chat_template")
        if isinstance(override, str):
            paths.add(os.path.abspath(override))
    return _sha256([_head(), {p: stat_identity([p]) for p in sorted(paths)}])


def record(raw: dict, build: BuildConfig, metas: dict[str, TokenizerMeta], by: str) -> None:
    """Record a pre-flight that passed, for the rest of this build: the tokenizer-facts cache, then the
    record (the config's digest, the stamp, the tokenizers' facts, and `passed`: the processes that ran
    the pre-flights recorded here, oldest first, this one last)."""
    write_cache(build, metas)
    path = record_path(raw)
    if path is None:  # resolve refuses such a config: not reached
        return
    passed = _read(path).get("passed", [])[-(PASSED_KEPT - 1) :] + [f"{by} (pid {os.getpid()})"]
    body = {
        "config": _sha256(raw),
        "head": _sha256(_head()),
        "stamp": _stamp(build),
        "tokenizers": {k: asdict(v) for k, v in metas.items()},
        "passed": passed,
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    records.atomic_write_text(path, json.dumps(body, ensure_ascii=False))


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            body = json.load(f)
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) and isinstance(body.get("passed", []), list) else {}


def recorded(raw) -> tuple[BuildConfig, dict[str, TokenizerMeta]] | None:
    """The pre-flight recorded for this config here (`record`), as pre-flight returns it, when nothing it
    depends on changed since; None (run pre-flight) when there is none, or it is stale or unreadable."""
    try:
        body = _read(record_path(raw))
        if body["config"] != _sha256(raw) or body["head"] != _sha256(_head()):
            return None
        build = resolve(raw, trusted=True)  # this config passed the schema of this version
        if body["stamp"] != _stamp(build):
            return None
        return build, {k: TokenizerMeta(**v) for k, v in body["tokenizers"].items()}
    except (OSError, ValueError, KeyError, TypeError, E.MintDimError):
        return None


def checked(raw: dict, by: str) -> tuple[BuildConfig, dict[str, TokenizerMeta]]:
    """This build's pre-flight: the recorded one while current, else pre-flight again (the config or an
    input changed since it was recorded), recorded in turn. The outputs are not checked (to_build)."""
    hit = recorded(raw)
    if hit is not None:
        return hit
    build, metas = preflight(raw, use_cache=True, check_outputs=False)
    record(raw, build, metas, by)
    return build, metas
