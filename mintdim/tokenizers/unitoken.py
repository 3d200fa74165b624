"""The `unitoken` tokenizer kind: a BPE model directory saved by ffbpe (the maintained unitoken).

A model directory holds `ffbpe.json` (unit, format, special tokens, pre-tokenizer
settings), `vocab.json` and `merges.txt`, as `BpeModel.save_pretrained` writes
them; byte- and unicode-unit models both load. UNK and PAD are the model's
special tokens named `<unk>` and `<pad>` (None when the model has none).

Encoding is ffbpe's plain `BpeEncoder.encode`: no special token is added, and a
special-token string inside the text (`<pad>`) becomes that token, as Hugging
Face tokenizers match their added tokens (DECISIONS, Tokenizers).

ffbpe has no batch call (and holds the GIL while it encodes), and a call costs
about as much again as the text it encodes when records are short. A batch is
therefore encoded in ONE call: the texts joined by a sentinel special token that
exists only in a private copy of the vocabulary (id = vocab_size), then split at
the sentinel ids. Special tokens split the text before the pre-tokenizer runs,
so every text encodes exactly as on its own (tests compare both on real text).
A text that holds the sentinel string itself shows up as one sentinel too many;
that batch is then encoded text by text.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

UNK_TOKEN = "<unk>"
PAD_TOKEN = "<pad>"
CONFIG_FILE = "ffbpe.json"
LEGACY_CONFIG_FILE = "unitoken.json"
SENTINEL = "<|mintdim:batch-sep:4c1f9e|>"  # starts with "<|", ends with "|>": no border, so no overlap


class NotAModelDirectory(ValueError):
    """The path is not a directory saved by ffbpe (ffbpe.json, vocab.json, merges.txt)."""


def read_config(path: str) -> dict:
    """The model directory's config, checked by ffbpe itself; NotAModelDirectory when it is not one."""
    from pathlib import Path

    from ffbpe._serialization import read_model_config

    if not os.path.isdir(path):
        raise NotAModelDirectory(
            f"not a directory; a unitoken model is a directory saved by ffbpe "
            f"({CONFIG_FILE}, vocab.json, merges.txt)"
        )
    if not any(os.path.isfile(os.path.join(path, name)) for name in (CONFIG_FILE, LEGACY_CONFIG_FILE)):
        raise NotAModelDirectory(
            f"no {CONFIG_FILE} in the directory; a unitoken model is a directory saved by "
            f"ffbpe ({CONFIG_FILE}, vocab.json, merges.txt)"
        )
    try:
        config = read_model_config(Path(path))
    except ValueError as exc:
        raise NotAModelDirectory(str(exc)) from None
    for key in ("vocab_file", "merges_file"):
        if not os.path.isfile(os.path.join(path, config[key])):
            raise NotAModelDirectory(f"{config[key]} named in {CONFIG_FILE} is missing")
    return dict(config)


def model_files(path: str) -> list[str]:
    """The files whose content defines the model (for change detection)."""
    try:
        config = read_config(path)
    except NotAModelDirectory:
        return [os.path.join(path, CONFIG_FILE)]
    name = CONFIG_FILE if os.path.isfile(os.path.join(path, CONFIG_FILE)) else LEGACY_CONFIG_FILE
    return [os.path.join(path, n) for n in (name, config["vocab_file"], config["merges_file"])]


def _load_encoder(config: dict, vocab_file: str, merges_file: str, special_tokens: list[str]):
    from ffbpe import BpeEncoder

    return BpeEncoder.load(
        unit=config["unit"],
        format=config["format"],
        special_tokens=special_tokens,
        merges_file=merges_file,
        vocab_file=vocab_file,
        pat_str=config.get("pat_str"),
        unicode_bigrams=config.get("unicode_bigrams"),
        unicode_bigram_mixed_boundary=config.get("unicode_bigram_mixed_boundary", "keep"),
        split_on_vocab_bigrams=config.get("split_on_vocab_bigrams", True),
    )


def _overlaps(a: str, b: str) -> bool:
    """Could a match of `a` and a match of `b` share characters when both are next to each other?"""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


class UnitokenTokenizer:
    kind = "unitoken"

    def __init__(self, path: str, threads: int = 1):
        path = os.fspath(path)
        self.path = path
        self.config = read_config(path)
        vocab_file = os.path.join(path, self.config["vocab_file"])
        merges_file = os.path.join(path, self.config["merges_file"])
        with open(vocab_file, encoding="utf-8") as f:
            vocab = json.load(f)
        if not isinstance(vocab, dict) or not vocab:
            raise NotAModelDirectory(f"{self.config['vocab_file']} is not a token -> id mapping")
        self.special_tokens = list(self.config["special_tokens"])
        self._vocab_size = max(int(v) for v in vocab.values()) + 1
        self._unk_id = (
            int(vocab[UNK_TOKEN]) if UNK_TOKEN in self.special_tokens and UNK_TOKEN in vocab else None
        )
        self._pad_id = (
            int(vocab[PAD_TOKEN]) if PAD_TOKEN in self.special_tokens and PAD_TOKEN in vocab else None
        )
        self.unit = self.config["unit"]
        self.encoder = _load_encoder(self.config, vocab_file, merges_file, self.special_tokens)
        self._joined = None
        if SENTINEL not in vocab and not any(_overlaps(SENTINEL, s) for s in self.special_tokens):
            # a private copy of the vocabulary with the sentinel at id vocab_size; the model is not touched
            with tempfile.TemporaryDirectory(prefix="mintdim-unitoken-") as tmp:
                vocab[SENTINEL] = self._vocab_size
                copy = os.path.join(tmp, "vocab.json")
                with open(copy, "w", encoding="utf-8") as f:
                    json.dump(vocab, f, ensure_ascii=False)
                self._joined = _load_encoder(self.config, copy, merges_file, self.special_tokens + [SENTINEL])

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def unk_id(self) -> int | None:
        return self._unk_id

    @property
    def pad_id(self) -> int | None:
        return self._pad_id

    def added_special(self) -> list[str]:
        """The model's special tokens (ffbpe matches them in text)."""
        return list(self.special_tokens)

    def encode(self, text: str) -> list[int]:
        return self.encoder.encode(text)

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        import numpy as np  # here: config and pre-flight import this module, and need no numpy

        flat, lengths = self.encode_batch(texts)
        ends = np.cumsum(lengths)
        return [flat[e - n : e].tolist() for e, n in zip(ends, lengths)]

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        n = len(texts)
        if n == 0:
            return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
        if self._joined is not None and n > 1:
            ids = self._joined.encode_to_numpy(SENTINEL.join(texts) + SENTINEL)
            seps = np.flatnonzero(ids == self._vocab_size)
            if len(seps) == n:  # else a text held the sentinel string: encode this batch text by text
                lengths = np.diff(seps, prepend=-1) - 1
                return np.delete(ids, seps).astype(np.uint32, copy=False), lengths.astype(np.int64)
        arrays = [self.encoder.encode_to_numpy(t) for t in texts]
        lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=n)
        flat = (
            np.concatenate(arrays).astype(np.uint32, copy=False) if arrays else np.zeros(0, dtype=np.uint32)
        )
        return flat, lengths

    def encode_batch_with_starts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Also each token's start, as a character offset into its text (for loss masks).

        ffbpe gives no offsets: they follow from the ids, each token's UTF-8 byte length
        summed along the text; a token that starts inside a multi-byte character starts at
        that character (as Hugging Face's byte-level offsets do)."""
        import numpy as np

        flat, lengths = self.encode_batch(texts)
        token_bytes = self._byte_lengths()[flat]
        data = "".join(texts).encode("utf-8")
        text_bytes = np.fromiter((len(t.encode("utf-8")) for t in texts), dtype=np.int64, count=len(texts))
        ends = np.cumsum(lengths)
        per_text = np.add.reduceat(token_bytes, ends - lengths) if len(flat) else np.zeros(0, dtype=np.int64)
        per_text = np.where(lengths > 0, per_text, 0) if len(flat) else np.zeros(len(texts), dtype=np.int64)
        if not np.array_equal(per_text, text_bytes):  # never expected: the ids must spell the text
            raise ValueError("unitoken offsets: the tokens' bytes do not add up to the text")
        byte_base = np.repeat(np.cumsum(text_bytes) - text_bytes, lengths)
        within = np.cumsum(token_bytes) - token_bytes - np.repeat(np.cumsum(per_text) - per_text, lengths)
        first_byte = byte_base + within
        arr = np.frombuffer(data, dtype=np.uint8)
        chars_upto = np.cumsum((arr & 0xC0) != 0x80)  # characters started at or before each byte
        text_chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        char_base = np.repeat(np.cumsum(text_chars) - text_chars, lengths)
        starts = (chars_upto[first_byte] - 1 - char_base) if len(flat) else np.zeros(0, dtype=np.int64)
        return flat, lengths, starts.astype(np.int64)

    def _byte_lengths(self) -> np.ndarray:
        """UTF-8 byte length of every id's token (special tokens: their text)."""
        import numpy as np

        if getattr(self, "_lengths", None) is None:
            with open(os.path.join(self.path, self.config["vocab_file"]), encoding="utf-8") as f:
                vocab = json.load(f)
            lengths = np.zeros(self._vocab_size, dtype=np.int64)
            decode = _gpt2_bytes if self.config["format"] == "gpt2" else _unitoken_bytes
            specials = set(self.special_tokens)
            for token, idx in vocab.items():
                lengths[int(idx)] = len(token.encode("utf-8")) if token in specials else len(decode(token))
            self._lengths = lengths
        return self._lengths

    def decode(self, ids) -> str:
        return self.encoder.decode(ids)


def _gpt2_bytes(token: str) -> bytes:
    from ffbpe.tiktoken_compat import _BYTE_DECODER

    return bytes(_BYTE_DECODER[ch] for ch in token)


def _unitoken_bytes(token: str) -> bytes:
    """ffbpe's own vocabulary format: `{uXXXX}` a character, `{xHH}` a byte, `␣` a space, else literal."""
    out = bytearray()
    i = 0
    while i < len(token):
        ch = token[i]
        if ch == "{":
            close = token.index("}", i)
            code = token[i + 1 : close]
            out += bytes([int(code[1:], 16)]) if code[0] == "x" else chr(int(code[1:], 16)).encode("utf-8")
            i = close + 1
            continue
        out += b" " if ch == "\u2423" else ch.encode("utf-8")
        i += 1
    return bytes(out)


def is_model_dir(path: str) -> bool:
    try:
        read_config(path)
        return True
    except NotAModelDirectory:
        return False


def copy_model(src: str, dst: str) -> None:
    """Copy a model directory's files (config, vocab, merges) into dst."""
    os.makedirs(dst, exist_ok=True)
    for p in model_files(src):
        shutil.copy2(p, os.path.join(dst, os.path.basename(p)))
