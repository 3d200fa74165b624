"""The tokenizer kinds MintDim encodes with, behind one small interface.

Each kind loads a file, reports vocab size and the library's own UNK and PAD
ids (None when absent), and encodes a batch of texts with the library's
batch call into a flat token array plus per-text lengths. No special tokens
are added; padding and truncation configured inside a tokenizer.json are
switched off.
"""

from __future__ import annotations

import array
import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


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


def _flatten(id_lists) -> tuple[np.ndarray, np.ndarray]:
    """Id lists -> (flat uint32 ids, lengths). array('I').extend copies each list in C: ~30%
    faster than np.fromiter over a chained iterator."""
    import numpy as np  # here, not at the top: the validate job and pre-flight never need it

    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    flat = array.array("I")
    for ids in id_lists:
        flat.extend(ids)
    return np.frombuffer(flat, dtype=np.uint32) if len(flat) else np.zeros(0, dtype=np.uint32), lengths


class SentencePieceTokenizer:
    kind = "sentencepiece"

    def __init__(self, path: str, threads: int = 1):
        import sentencepiece

        self.sp = sentencepiece.SentencePieceProcessor(model_file=os.fspath(path))
        self.threads = max(1, int(threads))

    @property
    def vocab_size(self) -> int:
        return int(self.sp.get_piece_size())

    @property
    def unk_id(self) -> int | None:
        value = int(self.sp.unk_id())
        return value if value >= 0 else None

    @property
    def pad_id(self) -> int | None:
        value = int(self.sp.pad_id())
        return value if value >= 0 else None

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts, num_threads=self.threads)

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return _flatten(self.encode_ids(texts))

    def encode_batch_with_starts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Also each token's start, as a character offset into its text (for loss masks).
        The same encode as encode_batch: the offsets come with the ids from one call."""
        found = self.sp.Encode(input=texts, return_type="offset_mapping", num_threads=self.threads)
        flat, lengths = _flatten([f["ids"] for f in found])
        import numpy as np

        starts = np.fromiter((o[0] for f in found for o in f["offsets"]), dtype=np.int64, count=len(flat))
        return flat, lengths, starts


class HFJsonTokenizer:
    kind = "hf_json"

    def __init__(self, path: str, threads: int = 1, engine: str | None = None, engine_cache: str | None = None):
        # Threads: the Rust pool reads RAYON_NUM_THREADS once, when first used; a workflow job sets it
        # from its own allocation (use_threads, below), never this constructor: pre-flight loads
        # tokenizers in the runner, whose environment every job inherits.
        self.path = os.fspath(path)
        self._tok = None
        # engine: "auto" checks whether tiktoken encodes this file exactly (mintdim/tokenizers/engines.py);
        # "tiktoken" (pre-flight found it does) loads the library only if a text or a caller needs it;
        # None keeps the library. engine_cache: the checked ranks by the file's SHA-256 (work dir).
        self.engine, self.engine_reason, self._fast = "tokenizers", "not checked", None
        if engine in ("auto", "tiktoken"):
            from .engines import fast_encoder_for

            self._fast, reason = fast_encoder_for(self.path, self._library if engine == "tiktoken" else self.tok,
                                                  threads=threads, cache_dir=engine_cache)
            self.engine, self.engine_reason = (self._fast.name, "") if self._fast else ("tokenizers", reason)
        if self._fast is None:
            self._library()

    def _library(self):
        if self._tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(self.path)
            padding = tok.padding
            self._pad_id = int(padding["pad_id"]) if padding and padding.get("pad_id") is not None else None
            # In-file padding/truncation would silently change token counts.
            tok.no_padding()
            tok.no_truncation()
            self._tok = tok
            self._unk_id = self._find_unk()
        return self._tok

    @property
    def tok(self):
        """The library's Tokenizer (with engine="tiktoken", loaded on first use)."""
        return self._library()

    def _find_unk(self) -> int | None:
        model = self.tok.model
        unk_token = getattr(model, "unk_token", None)
        if unk_token is not None:
            return self.tok.token_to_id(unk_token)
        if type(model).__name__ == "Unigram":
            unk = json.loads(self.tok.to_str()).get("model", {}).get("unk_id")
            return int(unk) if unk is not None else None
        return None

    @property
    def vocab_size(self) -> int:
        return int(self.tok.get_vocab_size(with_added_tokens=True))

    @property
    def unk_id(self) -> int | None:
        self._library()
        return self._unk_id

    @property
    def pad_id(self) -> int | None:
        self._library()
        return self._pad_id

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        if self._fast is not None:  # the same ids, proven per file (mintdim/tokenizers/engines.py, tests/test_engine.py)
            return self._fast.encode_ids(texts)
        return [e.ids for e in self.tok.encode_batch_fast(texts, add_special_tokens=False)]

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return _flatten(self.encode_ids(texts))

    def encode_batch_with_starts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Also each token's start, as a character offset into its text (for loss masks):
        encode_batch (with offsets) instead of encode_batch_fast, the same ids."""
        encs = self.tok.encode_batch(texts, add_special_tokens=False)
        flat, lengths = _flatten([e.ids for e in encs])
        import numpy as np

        starts = np.fromiter((o[0] for e in encs for o in e.offsets), dtype=np.int64, count=len(flat))
        return flat, lengths, starts


def _unitoken(path: str, threads: int = 1):
    from .unitoken import UnitokenTokenizer

    return UnitokenTokenizer(path, threads=threads)


def _hf_dir(path: str, threads: int = 1, **options):
    from .hfdir import HFDirTokenizer

    return HFDirTokenizer(path, threads=threads, **options)


_CLASSES = {"sentencepiece": SentencePieceTokenizer, "hf_json": HFJsonTokenizer, "unitoken": _unitoken,
            "hf_dir": _hf_dir}
ENGINE_KINDS = ("hf_json", "hf_dir")  # kinds whose tokenizer.json may be encoded by a fast engine


def load(kind: str, path: str, threads: int = 1, engine: str | None = None, engine_cache: str | None = None,
         **options):
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


def exists(kind: str, path: str) -> bool:
    """A file kind needs a file; a directory kind (unitoken) needs the path to exist (else: not found);
    hf_dir needs the directory's tokenizer.json."""
    if kind == "hf_dir":
        return os.path.isfile(os.path.join(path, "tokenizer.json"))
    return os.path.exists(path) if kind in DIRECTORY_KINDS else os.path.isfile(path)


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
