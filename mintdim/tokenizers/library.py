"""The kinds a library loads from one file: `sentencepiece` (a .model file) and `hf_json` (a
tokenizer.json, also the encoder of the `hf_dir` kind, mintdim/tokenizers/hfdir.py), and the
flattening of id lists that every kind's encode_batch returns. mintdim/tokenizers/kinds.py
names the kinds and loads them."""

from __future__ import annotations

import array
import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def flatten(id_lists) -> tuple[np.ndarray, np.ndarray]:
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

    def added_special(self) -> list[str]:
        """The symbols an encode matches in text as one piece: the model's user-defined symbols, in id
        order (control symbols such as </s> are never matched in text, so they are not among them)."""
        from sentencepiece import sentencepiece_model_pb2 as pb

        model = pb.ModelProto()
        model.ParseFromString(self.sp.serialized_model_proto())
        user_defined = pb.ModelProto.SentencePiece.USER_DEFINED
        return [p.piece for p in model.pieces if p.type == user_defined]

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts, num_threads=self.threads)

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return flatten(self.encode_ids(texts))

    def encode_batch_with_starts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Also each token's start, as a character offset into its text (for loss masks).
        The same encode as encode_batch: the offsets come with the ids from one call."""
        found = self.sp.Encode(input=texts, return_type="offset_mapping", num_threads=self.threads)
        flat, lengths = flatten([f["ids"] for f in found])
        import numpy as np

        starts = np.fromiter((o[0] for f in found for o in f["offsets"]), dtype=np.int64, count=len(flat))
        return flat, lengths, starts


class HFJsonTokenizer:
    kind = "hf_json"

    def __init__(
        self, path: str, threads: int = 1, engine: str | None = None, engine_cache: str | None = None
    ):
        # Threads: the Rust pool reads RAYON_NUM_THREADS once, when first used; a workflow job sets it
        # from its own allocation (kinds.use_threads), never this constructor: pre-flight loads
        # tokenizers in the runner, whose environment every job inherits.
        self.path = os.fspath(path)
        self._tok = None
        # engine: "auto" checks whether tiktoken encodes this file exactly (mintdim/tokenizers/engines.py);
        # "tiktoken" (pre-flight found it does) loads the library only if a text or a caller needs it;
        # None keeps the library. engine_cache: the checked ranks by the file's SHA-256 (work dir).
        self.engine, self.engine_reason, self._fast = "tokenizers", "not checked", None
        if engine in ("auto", "tiktoken"):
            from .engines import fast_encoder_for

            self._fast, reason = fast_encoder_for(
                self.path,
                self._library if engine == "tiktoken" else self.tok,
                threads=threads,
                cache_dir=engine_cache,
            )
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

    def added_special(self) -> list[str]:
        """The added tokens marked special, in id order: from the library when it is loaded, else from
        tokenizer.json itself (~0.1 s instead of the library's ~0.5 s load: a chat build's tokenize job
        on the fast engine, which needs them for the turn-end markers)."""
        if self._tok is not None:
            decoder = self._tok.get_added_tokens_decoder()
            return [decoder[i].content for i in sorted(decoder) if decoder[i].special]
        import orjson

        with open(self.path, "rb") as f:
            added = orjson.loads(f.read()).get("added_tokens") or []
        return [a["content"] for a in sorted(added, key=lambda a: a["id"]) if a.get("special")]

    def encode_ids(self, texts: list[str]) -> list[list[int]]:
        # the same ids, proven per file (mintdim/tokenizers/engines.py, tests/test_engine.py)
        if self._fast is not None:
            return self._fast.encode_ids(texts)
        return [e.ids for e in self.tok.encode_batch_fast(texts, add_special_tokens=False)]

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return flatten(self.encode_ids(texts))

    @property
    def offsets_engine(self) -> str | None:
        """The fast engine that also gives the offsets (loss masks), or None: the library's encode_batch.
        The engine's offsets equal the library's unless the file's post-processor moves them."""
        return self._fast.name if self._fast is not None and not self._fast.offsets_reason else None

    def encode_batch_with_offsets(self, texts: list[str]):
        """(flat ids, lengths, starts, ends): each token's character span in its text, from the same
        encode as the ids (loss masks): the engine's ids and their byte lengths, or the library's
        encode_batch (with offsets) instead of encode_batch_fast, the same ids."""
        if self.offsets_engine is not None:
            encoded = self._fast.encode_ids(texts, offsets=True)  # a text NFC changes: the library's Encoding
            flat, lengths = flatten([e if isinstance(e, list) else e.ids for e in encoded])
            return (flat, lengths, *self._fast.offsets(texts, encoded, flat, lengths))
        from itertools import chain

        import numpy as np

        encs = self.tok.encode_batch(texts, add_special_tokens=False)
        flat, lengths = flatten([e.ids for e in encs])
        # one pass over the (start, end) pairs, chained in C: two generator passes cost ~10% of the encode
        pairs = np.fromiter(
            chain.from_iterable(chain.from_iterable(e.offsets for e in encs)),
            dtype=np.int64,
            count=2 * len(flat),
        ).reshape(-1, 2)
        return flat, lengths, pairs[:, 0], pairs[:, 1]

    def encode_batch_with_starts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Also each token's start, as a character offset into its text (for loss masks)."""
        flat, lengths, starts, _ends = self.encode_batch_with_offsets(texts)
        return flat, lengths, starts

    def encode_batch_with_byte_starts(self, texts: list[str]):
        """(flat ids, lengths, starts, bases) on the fast engine that gives the offsets (offsets_engine):
        each token's first byte and each text's in the texts' UTF-8 laid end to end, from the same encode
        as the ids (TiktokenEncoder.byte_starts): loss masks without a character offset per token."""
        encoded = self._fast.encode_ids(texts, offsets=True)
        flat, lengths = flatten([e if isinstance(e, list) else e.ids for e in encoded])
        return (flat, lengths, *self._fast.byte_starts(texts, encoded, flat, lengths))
