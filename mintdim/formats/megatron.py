"""Megatron-Core's indexed dataset (`mintdim export --format megatron`): names, writer and reader.

    PREFIX.bin   the sequences' tokens one after another, little-endian, no padding
    PREFIX.idx   b"MMIDIDX\\x00\\x00", <Q version (1), <B dtype code, <Q sequence count,
                 <Q document count, then int32 sequence lengths, int64 byte pointers (where each
                 sequence starts in .bin), int64 document indices (0, then the sequence index after
                 each document's last sequence: document count = documents + 1 entries)

Checked against Megatron-Core's own source, megatron/core/datasets/indexed_dataset.py in
NVIDIA/Megatron-LM (commit 00caa53af30912914981c86f39db123961678bbd): _INDEX_HEADER; the DType
enum (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16: no uint32);
_IndexWriter.__enter__/write (header, "<Q" 1, "<B" code, "<Q" counts, then the three arrays);
_IndexWriter._sequence_pointers (running sum of length * itemsize); IndexedDatasetBuilder
(document_indices start [0], end_document appends len(sequence_lengths)); IndexedDataset.__init__
asserts sequence_lengths.shape[0] == document_indices[-1].

The format holds tokens only: it has no loss mask. MintDim writes the masks beside it in the same
layout (mask_prefix: PREFIX_mask.bin/.idx, uint8, 1 = a trained token), read the same way.
"""

from __future__ import annotations

import struct

import numpy as np

from ..files import open_pieces

HEADER = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {
    "uint8": 1,
    "int8": 2,
    "int16": 3,
    "int32": 4,
    "int64": 5,
    "float64": 6,
    "float32": 7,
    "uint16": 8,
}
CODE_DTYPES = {code: name for name, code in DTYPE_CODES.items()}
MASK_SUFFIX = "_mask"
MASK_DTYPE = np.dtype(np.uint8)
_HEAD = struct.Struct("<9sQBQQ")  # header, version, dtype code, sequence count, document count (34 bytes)


def bin_path(prefix: str) -> str:
    return prefix + ".bin"


def idx_path(prefix: str) -> str:
    return prefix + ".idx"


def mask_prefix(prefix: str) -> str:
    """The prefix of the loss masks written beside a dataset."""
    return prefix + MASK_SUFFIX


def stored_dtype(dtype) -> np.dtype:
    """The dtype tokens are written with: their own when Megatron has a code for it, else int32
    (uint32: token ids below 2**31, the dtype Megatron's own tools pick for large vocabularies)."""
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("<") if dtype.name in DTYPE_CODES else np.dtype("<i4")


class Writer:
    """Writes PREFIX.bin block by block (`add`), then PREFIX.idx (`finish`); one document per sequence.
    Opens its files with "x": an existing file is never overwritten."""

    def __init__(self, bin_file: str, dtype):
        self.dtype = stored_dtype(dtype)
        self._bin = open_pieces(bin_file, "xb")  # closed by finish or abort
        self._lengths: list[np.ndarray] = []

    def add(self, lengths: np.ndarray, tokens: np.ndarray) -> None:
        """The next sequences: their lengths and their tokens one after another."""
        lengths = np.asarray(lengths)
        if int(lengths.sum()) != len(tokens):
            raise ValueError(f"{len(tokens)} tokens for sequences of {int(lengths.sum())}")
        self._bin.write(np.ascontiguousarray(tokens, dtype=self.dtype))
        self._lengths.append(lengths.astype("<i4"))

    def finish(self, idx_file: str) -> None:
        self._bin.close()
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype="<i4")
        pointers = np.zeros(len(lengths), dtype="<i8")
        np.cumsum(lengths[:-1], dtype="<i8", out=pointers[1:])
        pointers *= self.dtype.itemsize
        documents = np.arange(len(lengths) + 1, dtype="<i8")
        with open_pieces(idx_file, "xb") as f:
            f.write(_HEAD.pack(HEADER, VERSION, DTYPE_CODES[self.dtype.name], len(lengths), len(documents)))
            for array in (lengths, pointers, documents):
                f.write(array.data)

    def abort(self) -> None:
        self._bin.close()


def read_index(idx_file: str) -> tuple[np.dtype, np.ndarray, np.ndarray, np.ndarray]:
    """(token dtype, sequence lengths, byte pointers, document indices) of an .idx file; ValueError
    when it is not one."""
    with open(idx_file, "rb") as f:
        raw = f.read()
    if len(raw) < _HEAD.size:
        raise ValueError(f"{idx_file}: {len(raw)} bytes, shorter than the header")
    header, version, code, seqs, docs = _HEAD.unpack_from(raw)
    if header != HEADER or version != VERSION or code not in CODE_DTYPES:
        raise ValueError(
            f"{idx_file}: not a version-1 Megatron index (header {header!r}, version {version}, "
            f"dtype code {code})"
        )
    if len(raw) != _HEAD.size + 12 * seqs + 8 * docs:
        raise ValueError(f"{idx_file}: {len(raw)} bytes, the counts give {_HEAD.size + 12 * seqs + 8 * docs}")
    lengths = np.frombuffer(raw, dtype="<i4", count=seqs, offset=_HEAD.size)
    pointers = np.frombuffer(raw, dtype="<i8", count=seqs, offset=_HEAD.size + 4 * seqs)
    documents = np.frombuffer(raw, dtype="<i8", count=docs, offset=_HEAD.size + 12 * seqs)
    return np.dtype(CODE_DTYPES[code]).newbyteorder("<"), lengths, pointers, documents


def read_sequences(prefix: str) -> list[np.ndarray]:
    """Every sequence of PREFIX.bin (views of one memory map), by the index."""
    dtype, lengths, pointers, _documents = read_index(idx_path(prefix))
    if not int(lengths.sum()):
        return [np.zeros(0, dtype=dtype) for _ in lengths]
    data = np.memmap(bin_path(prefix), dtype=np.uint8, mode="r")
    return [data[p : p + n * dtype.itemsize].view(dtype) for p, n in zip(pointers.tolist(), lengths.tolist())]
