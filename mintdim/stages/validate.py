"""Pre-flight: every check that needs no data, in a fixed order, before any data stage starts.

The config (config.resolve: its JSON schema, then the rules across fields and
the templates), input files, tokenizers (format, special tokens, dtype), tier-1
template literals, and the output directories. Nothing is created when a check
fails.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass

from .. import __version__, schema
from .. import errors as E
from ..config import DEFAULT_WORK_DIR, BuildConfig, resolve
from ..formats import records
from ..sources import inputs
from ..sources import template as T
from ..tokenizers import training
from ..tokenizers.engines import (
    cache_dirs,
    file_digest,
    ranks_cached,
    read_entry,
    user_cache_dir,
    write_entry,
)
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


@dataclass
class TokenizerMeta:
    type: str
    path: str
    vocab_size: int
    unk_id: int
    pad_id: int
    dtype: str
    trained: dict | None = None  # tokenizer.train_bpe: what the model was trained from (manifest)
    engine: str | None = (
        None  # "tiktoken" when it encodes this file exactly (mintdim/tokenizers/engines.py), else None
    )

    @property
    def bytes_per_token(self) -> int:
        return BYTES_PER_TOKEN[self.dtype]


BYTES_PER_TOKEN = {"uint16": 2, "uint32": 4}  # the token dtypes dtype_for_vocab chooses


def check_files(build: BuildConfig) -> None:
    """Every input is there; then what each holds: it reads, its columns fit the config (Parquet,
    datasets directories: from their metadata), and it holds a sample: unless source.allow_empty, an input
    with none is an error (a JSONL file decided from a bounded prefix, jsonl.no_samples: the plan stage
    catches a longer blank one); and a file asked for a count (source.take) must hold one."""
    from ..sources.jsonl import no_samples

    for f in build.files:
        if not inputs.exists(f.abspath):
            raise E.MintDimFileNotFoundError.resolved("source", f.path, os.getcwd())
        if not inputs.accepted(f.abspath):  # e.g. a .json file: its tokenize job would fail at line 1
            raise E.SourceParseError.unknown_kind(f.path, inputs.shape_of(f.abspath))
    for f in build.files:
        count = isinstance(f.take, int)
        holds = inputs.check(f.abspath, f.path, f.fields, f.chat, count=count)
        jsonl_file = inputs.kind_of(f.abspath) == inputs.JSONL
        reason = no_samples(f.abspath) if jsonl_file else (None if holds else "no_rows")
        if reason and not f.allow_empty:
            raise E.SourceParseError.empty(f.path, reason, "JSONL" if jsonl_file else inputs.label(f.abspath))
        if count and not holds:
            shared = len(build.raw["source"]["take"]) == 1
            raise E.PipelineValidationError.take_no_samples(0 if shared else f.index, f.path, f.take)


def _fingerprint(kind: str, abspath: str, options: dict | None = None) -> str:
    # MINTDIM_ENGINE=tokenizers: facts recorded without the fast engine, apart from the usual ones
    key = f"{kind}|{abspath}|{stat_key(kind, abspath)}" + ("" if engines_allowed() else "|library")
    # hf_dir: pad_token changes pad_id
    return key + "|" + json.dumps(options, sort_keys=True) if options else key


def engines_allowed() -> bool:
    """MINTDIM_ENGINE=tokenizers keeps every file on its library's own encode
    (mintdim/tokenizers/engines.py)."""
    return os.environ.get(ENGINE_ENV, "auto") != "tokenizers"


ENGINE_ENV = "MINTDIM_ENGINE"


def _cache_path(build_or_work_dir) -> str:
    work_dir = getattr(build_or_work_dir, "work_dir", build_or_work_dir)
    return os.path.join(work_dir, "tokenizer-facts.json")


def _read_cache(build_or_work_dir) -> dict:
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
    return _schema_key(raw) in _read_cache(work_dir).get("schema_valid", [])


# ---- the same facts by content, shared by every work directory (the user cache, engines.user_cache_dir)

# the libraries whose behaviour the facts of a kind depend on (their versions are part of the key)
_LIBRARIES = {
    "sentencepiece": ("sentencepiece",),
    "hf_json": ("tokenizers", "tiktoken"),
    "hf_dir": ("tokenizers", "tiktoken"),
    "unitoken": ("ffbpe",),
}
_CONTENT: dict[str, str] = {}  # work-dir fingerprint -> content key, for the tokenizers this process checked


def _model_files(kind: str, abspath: str) -> list[str]:
    if kind == "hf_dir":
        from ..tokenizers.hfdir import model_files
    elif kind == "unitoken":
        from ..tokenizers.unitoken import model_files
    else:
        return [abspath]
    return model_files(abspath)


def _content_key(kind: str, abspath: str, options: dict | None) -> str | None:
    """What a tokenizer's facts depend on: the SHA-256 of each of its files, the options (pad_token),
    MINTDIM_ENGINE, MintDim's version and its libraries' versions. None: a file cannot be read."""
    import importlib

    files = []
    for p in _model_files(kind, abspath):
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


def _content_hit(f, work_dir: str) -> dict | None:
    """Facts of a tokenizer with this content from any work directory (vocab size, PAD, UNK, dtype, engine,
    the templates whose literals passed). The engine's checked tables must be at hand too, else the
    tokenize jobs would check the file again: then it is a miss."""
    key = _content_key(f.tokenizer_kind, f.tokenizer_abspath, f.tokenizer_options)
    if key is None:
        return None
    _CONTENT[_fingerprint(f.tokenizer_kind, f.tokenizer_abspath, f.tokenizer_options)] = key
    entry = _read_facts(key)
    if entry and entry["meta"].get("engine"):
        hf_dir = f.tokenizer_kind == "hf_dir"
        json_file = os.path.join(f.tokenizer_abspath, "tokenizer.json") if hf_dir else f.tokenizer_abspath
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
    config passed the schema, so the validate job neither loads a large model a second time nor
    imports the schema validator. Only after pre-flight passed."""
    cache = _read_cache(build)
    valid = cache.setdefault("schema_valid", [])
    key = _schema_key(build.raw)
    if key not in valid:
        valid[:] = (valid + [key])[-32:]
    for f in build.files:
        if f.tokenizer_abspath not in metas:  # tokenizer.train_bpe: not trained yet
            continue
        m = metas[f.tokenizer_abspath]
        key = _fingerprint(f.tokenizer_kind, f.tokenizer_abspath, f.tokenizer_options)
        entry = cache.setdefault(
            key, {"meta": {k: v for k, v in asdict(m).items() if k != "path"}, "templates": []}
        )
        if f.template not in entry["templates"]:
            entry["templates"].append(f.template)
    os.makedirs(build.work_dir, exist_ok=True)
    records.atomic_write_text(_cache_path(build), json.dumps(cache, ensure_ascii=False))
    _write_facts(cache)


def load_tokenizers(
    build: BuildConfig, check_templates: bool = True, use_cache: bool = False
) -> dict[str, TokenizerMeta]:
    """Each distinct tokenizer's facts (keyed by absolute path), loading a file only when needed."""
    metas: dict[str, TokenizerMeta] = {}
    loaded = {}
    pending = set()  # tokenizer.train_bpe models not trained yet: checked again by the validate job
    cache = _read_cache(build) if use_cache else {}
    for f in build.files:
        key = f.tokenizer_abspath
        if key in metas or key in pending:
            continue
        if f.tokenizer_train is not None and training.state(build, training.group_of(build, f)) == "absent":
            pending.add(key)
            continue
        _check_directory_kind(f)
        if not tokenizer_exists(f.tokenizer_kind, key):
            raise E.MintDimFileNotFoundError.resolved("tokenizer", f.tokenizer_path, os.getcwd())
        fingerprint = _fingerprint(f.tokenizer_kind, key, f.tokenizer_options)
        hit = cache.get(fingerprint)
        if hit is None and use_cache:  # the same content checked in another work directory
            hit = _content_hit(f, build.work_dir)
            if hit is not None:
                cache[fingerprint] = hit
        if hit:
            metas[key] = TokenizerMeta(path=f.tokenizer_path, **hit["meta"])
        else:
            metas[key], loaded[key] = _load_checked(f, cache_dirs(build.work_dir))
        if f.tokenizer_train is not None:
            metas[key].trained = training.manifest_reference(key)
    if check_templates:
        for f in build.files:
            if f.tokenizer_abspath in pending:
                training.check_pending(f)
                continue
            if f.chat is not None:  # source.chat: the tokenizer's chat template, not a MintDim template
                check_chat_template(f)
                continue
            hit = cache.get(_fingerprint(f.tokenizer_kind, f.tokenizer_abspath, f.tokenizer_options))
            if hit and f.template in hit["templates"]:
                continue
            if f.tokenizer_abspath not in loaded:
                loaded[f.tokenizer_abspath] = _load_checked(f, cache_dirs(build.work_dir))[1]
            check_template_literals(f, loaded[f.tokenizer_abspath], metas[f.tokenizer_abspath].unk_id)
    return metas


def _check_directory_kind(f) -> None:
    """A directory kind given a file (e.g. hf_dir given its tokenizer.json): the fix names the directory
    when that is one; an hf_dir directory without tokenizer.json or tokenizer_config.json: that file."""
    kind, key = f.tokenizer_kind, f.tokenizer_abspath
    if kind in DIRECTORY_KINDS and os.path.isfile(key):
        parent = os.path.dirname(f.tokenizer_path.rstrip("/")) or "."
        missing = missing_files(kind, os.path.dirname(key))
        raise E.TokenizerValidationError.dir_expected(kind, f.tokenizer_path, parent, missing)
    if kind == "hf_dir" and os.path.isdir(key) and missing_files(kind, key):
        path = os.path.join(f.tokenizer_path, missing_files(kind, key)[0])
        raise E.MintDimFileNotFoundError.tokenizer_dir_file(kind, path, os.getcwd())


def _load_checked(f, engines_dir: str | list[str] | None = None) -> tuple[TokenizerMeta, object]:
    try:
        tok = load(
            f.tokenizer_kind,
            f.tokenizer_abspath,
            engine="auto" if engines_allowed() else None,
            engine_cache=engines_dir,
            **(f.tokenizer_options or {}),
        )
    except Exception as exc:  # the library's own words for a file it cannot read
        reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise E.TokenizerValidationError.unloadable(f.tokenizer_kind, f.tokenizer_path, reason) from None
    vocab = tok.vocab_size
    unk, pad = tok.unk_id, tok.pad_id
    # hf_dir: a tokenizer that encodes every string (byte-level, byte fallback) needs no UNK
    if (unk is None and not getattr(tok, "encodes_every_string", False)) or (
        unk is not None and not 0 <= unk < vocab
    ):
        raise E.TokenizerSpecialTokenError.make("unk_id", f.tokenizer_path)
    if f.tokenizer_kind == "hf_dir" and pad is None:
        names, total = tok.pad_candidates()
        raise E.TokenizerSpecialTokenError.dir_pad(f.tokenizer_path, names, total, tok.declared_pad)
    if pad is None or not 0 <= pad < vocab:
        raise E.TokenizerSpecialTokenError.make("pad_id", f.tokenizer_path)
    dtype = dtype_for_vocab(vocab)
    if dtype is None:
        raise E.TokenDTypeValidationError.make(vocab)
    return TokenizerMeta(
        f.tokenizer_kind, f.tokenizer_path, vocab, unk, pad, dtype, engine=engine_of(tok)
    ), tok


def check_template_literals(f, tok, unk_id: int) -> None:
    """Tier 1: each non-empty literal segment, encoded on its own, must hold no UNK."""
    tpl = T.parse(f.template)
    parts = tpl.static_parts
    if not parts or unk_id is None:  # no UNK id (hf_dir, byte-level): nothing can produce one
        return
    for literal, ids in zip(parts, tok.encode_ids(parts)):
        if unk_id in ids:
            raise E.TemplateTokenizerError.make(f.index, f.template, literal)


def check_chat_template(f) -> None:
    """source.chat: the tokenizer directory (or the config) supplies a chat template that compiles."""
    from ..sources import chat
    from ..tokenizers import hfdir

    opts = f.tokenizer_options or {}
    override = opts.get("chat_template")
    if override is not None and not os.path.isfile(override):
        raise E.MintDimFileNotFoundError.make("tokenizer chat_template", override)
    config = hfdir._read_json(os.path.join(f.tokenizer_abspath, hfdir.CONFIG_FILE))
    text = hfdir.read_chat_template(f.tokenizer_abspath, config, override)
    if text is None:
        raise E.ChatTemplateError.missing(f.tokenizer_path)
    chat.check_template(text, override or f.tokenizer_path)


def preflight(
    raw: dict,
    use_cache: bool = False,
    check_outputs: bool = True,
    rebuild: bool = False,
    how: str | None = None,
) -> tuple[BuildConfig, dict[str, TokenizerMeta]]:
    """All pre-flight checks. Returns the resolved build and its tokenizers' facts.

    use_cache: trust tokenizer facts an earlier pre-flight of the same files recorded
    (the validate job, right after the runner or the Snakefile checked them).
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


# --- the output directories, and what their finished outputs were built from ---------------------------


def outputs_to_build(build: BuildConfig, rebuild: bool = False, how: str | None = None) -> list[int]:
    """The outputs this build must (re)build; the others are already built: this config's finished output,
    from inputs with the same content. Refused here, before anything is tokenized, by the one state rule
    (formats/records.py): a directory that is not new, empty or MintDim's own failed attempt; a finished
    output of another config, or built from inputs that changed since (unless `rebuild`: it is replaced once
    the new output is complete); one whose files changed since MintDim wrote them. how: the command that
    rebuilds (`mintdim build my.yaml --rebuild`), named in the refusals."""
    todo = []
    for out in build.outputs:
        st = records.state(build.work_dir, out.absdir)
        if st.kind in ("absent", "empty", "failed"):
            todo.append(out.index)
        elif st.kind == "file":
            raise E.OutputValidationError.not_a_directory(out.dir)
        elif st.kind == "unrecorded":
            if not rebuild:
                raise E.OutputValidationError.unrecorded(out.dir, how)
            check_unrecorded(out)
            todo.append(out.index)
        elif not st.finished:
            raise E.OutputValidationError.not_empty(out.dir)
        elif records.not_as_written(out.absdir, st.entry):
            raise E.OutputValidationError.not_only_ours(
                out.dir, records.not_as_written(out.absdir, st.entry)[:5]
            )
        elif st.entry.get("build_id") != build.build_id:
            if not rebuild:
                raise E.OutputValidationError.other_config(
                    out.dir,
                    st.entry.get("build_id", "?"),
                    config_changes(st.entry.get("config"), build.raw),
                    how,
                )
            todo.append(out.index)
        elif rebuild:
            todo.append(out.index)
        else:
            # placing (its finalize was stopped before recording it) is a finished output like placed: built
            # from inputs that changed since, it is replaced only with --rebuild
            changed = changed_inputs(st.entry.get("inputs"), build, out)
            if changed:
                raise E.OutputValidationError.inputs_changed(out.dir, changed, how)
            if st.kind == "placing":
                todo.append(out.index)  # its finalize records the placement
    return todo


def check_unrecorded(out) -> None:
    """--rebuild over a MintDim output with no record here: only one `mintdim verify` finds complete, with
    nothing else in it (a stray or changed file is a problem there), may be replaced."""
    from ..reading.verify import verify

    report = verify(out.absdir)
    if not report.ok:
        raise E.OutputValidationError.not_only_ours(
            out.dir, [f"{p.file}: {p.message}" for p in report.problems[:5]]
        )


def input_files(build: BuildConfig, out) -> dict[str, list[str]]:
    """What an output is built from besides its config, by name: each source file, and the tokenizer's
    model files."""
    names = {f"source {build.files[i].path}": inputs.files_of(build.files[i].abspath) for i in out.files}
    names[f"tokenizer {out.tokenizer_path}"] = _model_files(out.tokenizer_kind, out.tokenizer_abspath)
    return names


def _stat_key(paths: list[str]) -> str:
    """A file's identity for the file system: size, times and inode. Any write changes ctime, which no
    tool sets back, so an equal key means the same bytes; a different key is checked by content."""
    keys = []
    for p in paths:
        try:
            st = os.stat(p)
            keys.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
        except OSError:
            keys.append("-")
    return ",".join(keys)


def _content(paths: list[str]) -> str | None:
    try:
        digests = [file_digest(p) for p in paths]
    except OSError:
        return None
    return digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()


def input_digests(build: BuildConfig, out) -> dict[str, dict]:
    """Each input's SHA-256 (of its bytes; a model directory: of its files') and file-system identity,
    recorded when the validate job runs and kept with the finished output. SHA-256 reads 1.27 GB/s on one
    core here (hashlib, file in the page cache): 0.08 s for the 107 MB ShareGPT file, once per build."""
    return {
        name: {"sha256": _content(paths), "stat": _stat_key(paths)}
        for name, paths in input_files(build, out).items()
    }


def changed_inputs(recorded: dict | None, build: BuildConfig, out) -> list[str]:
    """The inputs whose content differs from what the finished output was built from ("source d.jsonl").
    Decided by content: an input with the recorded file-system identity is not read again; any other
    is hashed (a copy with the same bytes, a touch: unchanged)."""
    current = input_files(build, out)
    if not isinstance(recorded, dict):
        return sorted(current)
    changed = []
    for name in sorted(set(recorded) | set(current)):
        was, paths = recorded.get(name), current.get(name)
        if not isinstance(was, dict) or paths is None:
            changed.append(name)
        elif was.get("stat") != _stat_key(paths) and (
            was.get("sha256") is None or was.get("sha256") != _content(paths)
        ):
            changed.append(name)
    return changed


def config_changes(before, after: dict, limit: int = 8) -> list[str]:
    """What differs between two configs, key by key (`units.sizes: [[256, 512]] -> [[256, 1024]]`)."""
    if not isinstance(before, dict):
        return []
    a, b = _flat(before), _flat(after)
    lines = [
        f"{k}: {json.dumps(a.get(k), ensure_ascii=False)} -> {json.dumps(b.get(k), ensure_ascii=False)}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    return lines[:limit] + ([f"... {len(lines) - limit} more"] if len(lines) > limit else [])


def _flat(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def validated_record(build: BuildConfig, metas: dict[str, TokenizerMeta]) -> dict:
    return {
        "build_id": build.build_id,
        "config": build.raw,
        "tokenizers": {k: asdict(v) for k, v in metas.items()},
        # what each output is built from, as the build starts: recorded with the finished output
        "inputs": {str(o.index): input_digests(build, o) for o in build.outputs},
    }


def built_from(path: str, out_index: int) -> dict:
    """What validated.json recorded an output is built from (its inputs, the config), for its record."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {"inputs": data.get("inputs", {}).get(str(out_index)), "config": data.get("config")}


def read_validated(path: str) -> tuple[BuildConfig, dict[str, TokenizerMeta]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    build = resolve(data["config"], trusted=True)  # written after pre-flight passed
    metas = {k: TokenizerMeta(**v) for k, v in data["tokenizers"].items()}
    return build, metas


def run(raw: dict, out_path: str) -> None:
    """The validate job: pre-flight again, the outputs left to the run (the Snakefile checked them; a
    forced or replacing run may find them finished), and what the outputs are built from."""
    build, metas = preflight(raw, use_cache=True, check_outputs=False)
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    records.atomic_write_text(
        out_path, json.dumps(validated_record(build, metas), indent=1, ensure_ascii=False)
    )
