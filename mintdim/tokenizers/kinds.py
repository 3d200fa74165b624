"""The tokenizer kinds MintDim encodes with, behind one small interface.

Each kind loads a file, reports vocab size and the library's own UNK and PAD
ids (None when absent), and encodes a batch of texts with the library's
batch call into a flat token array plus per-text lengths. No special tokens
are added; padding and truncation configured inside a tokenizer.json are
switched off.
"""

from __future__ import annotations

import os

from .library import HFJsonTokenizer, SentencePieceTokenizer

KINDS = ("sentencepiece", "hf_json", "unitoken", "hf_dir")
EXTENSIONS = {"sentencepiece": ".model", "hf_json": ".json"}  # unitoken, hf_dir: model directories
DIRECTORY_KINDS = ("unitoken", "hf_dir")
UINT16_MAX_VOCAB = 65535
UINT32_MAX_VOCAB = 2**32 - 1


def use_threads(threads: int) -> None:
    """The job's thread allocation for the Rust thread pools (tokenizers, ffbpe), which read
    RAYON_NUM_THREADS once, at first use. Set, not defaulted: an inherited value (a parent process,
    a benchmark) would otherwise oversubscribe the cores, or leave them idle."""
    os.environ["RAYON_NUM_THREADS"] = str(max(1, int(threads)))


def dtype_for_vocab(vocab_size: int) -> str | None:
    if vocab_size <= UINT16_MAX_VOCAB:
        return "uint16"
    if vocab_size <= UINT32_MAX_VOCAB:
        return "uint32"
    return None


def _unitoken(path: str, threads: int = 1):
    from .unitoken import UnitokenTokenizer

    return UnitokenTokenizer(path, threads=threads)


def _hf_dir(path: str, threads: int = 1, **options):
    from .hfdir import HFDirTokenizer

    return HFDirTokenizer(path, threads=threads, **options)


_CLASSES = {
    "sentencepiece": SentencePieceTokenizer,
    "hf_json": HFJsonTokenizer,
    "unitoken": _unitoken,
    "hf_dir": _hf_dir,
}
ENGINE_KINDS = ("hf_json", "hf_dir")  # kinds whose tokenizer.json may be encoded by a fast engine


def load(
    kind: str,
    path: str,
    threads: int = 1,
    engine: str | None = None,
    engine_cache: str | None = None,
    **options,
):
    """Load a tokenizer of a known kind. Raises whatever the library raises on a bad file.
    engine, engine_cache: hf_json and hf_dir (HFJsonTokenizer): "auto" (pre-flight: check the file),
    "tiktoken" (a build job: pre-flight's check passed) or None (the library: every other caller,
    and `mintdim verify`, which re-encodes with the library on purpose).
    options: the hf_dir kind's pad_token and chat_template (mintdim/tokenizers/hfdir.py)."""
    if kind in ENGINE_KINDS:
        return _CLASSES[kind](path, threads=threads, engine=engine, engine_cache=engine_cache, **options)
    return _CLASSES[kind](path, threads=threads, **options)


def engine_of(tok) -> str | None:
    """The fast engine a loaded tokenizer encodes with ("tiktoken"), or None for the library's own."""
    engine = getattr(tok, "engine", None)
    return engine if engine not in (None, "tokenizers") else None


def end_markers(special_tokens: dict, added_special: list[str]) -> tuple[str, ...]:
    """Strings that close a turn, longest first: the EOS, and special tokens named like an end marker
    (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, <|endoftext|>), never a header marker
    (<|end_header_id|>) nor a start marker."""
    found = {special_tokens["eos_token"]} if special_tokens.get("eos_token") else set()
    for name in added_special:
        low = name.lower()
        if ("end" in low or "eot" in low) and not any(w in low for w in ("start", "begin", "header")):
            found.add(name)
    return tuple(sorted(found, key=len, reverse=True))


def field_end_markers(tok) -> tuple[str, ...]:
    """The end-of-turn tokens a field template may write after a trained field (source.train_eos):
    end_markers of the special tokens the tokenizer matches in text (added_special: Hugging Face's
    added special tokens, SentencePiece's user-defined symbols, unitoken's special tokens). The EOS
    is the one an hf_dir names; a tokenizer that names none (a tokenizer.json alone) takes `</s>`
    when that is one of its special tokens. SentencePiece's EOS is a control symbol, never matched
    in text: `</s>` in a template is text there, and never an end marker."""
    specials = tok.added_special()
    named = getattr(tok, "special_tokens", None)
    named = dict(named) if isinstance(named, dict) else {}
    if not named.get("eos_token") and "</s>" in specials:
        named["eos_token"] = "</s>"
    return end_markers(named, specials)


def exists(kind: str, path: str) -> bool:
    """A file kind needs a file; a directory kind (unitoken) needs the path to exist (else: not found);
    hf_dir needs the directory's tokenizer.json."""
    if kind == "hf_dir":
        return os.path.isfile(os.path.join(path, "tokenizer.json"))
    return os.path.exists(path) if kind in DIRECTORY_KINDS else os.path.isfile(path)


def missing_files(kind: str, path: str) -> list[str]:
    """The files a directory kind's directory needs that `path` lacks: hf_dir's tokenizer.json and
    tokenizer_config.json; unitoken's ffbpe.json (its own check names the files that names)."""
    if kind == "hf_dir":
        from .hfdir import CONFIG_FILE, TOKENIZER_FILE

        return [n for n in (TOKENIZER_FILE, CONFIG_FILE) if not os.path.isfile(os.path.join(path, n))]
    from .unitoken import CONFIG_FILE, LEGACY_CONFIG_FILE

    found = any(os.path.isfile(os.path.join(path, name)) for name in (CONFIG_FILE, LEGACY_CONFIG_FILE))
    return [] if found else [CONFIG_FILE]


def stat_key(kind: str, path: str) -> str:
    """Size and mtime of what defines the tokenizer: the file, or a model directory's files."""
    if kind in DIRECTORY_KINDS:
        if kind == "hf_dir":
            from .hfdir import model_files
        else:
            from .unitoken import model_files

        parts = []
        for p in model_files(path):
            try:
                st = os.stat(p)
                parts.append(f"{os.path.basename(p)}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                parts.append(f"{os.path.basename(p)}:-")
        return ",".join(parts)
    st = os.stat(path)
    return f"{st.st_size}|{st.st_mtime_ns}"
