"""The shard format: names, writer and reader of the record files in an output's unit directories.

    unit_<size>/shard_XXXXXX.bin   records of <size> little-endian tokens (the manifest's dtype),
                                   each a sample's tokens then pad_id
    unit_<size>/mask_XXXXXX.bin    (source.train_on) the loss mask of the same records:
                                   ceil(size / 8) bytes each, little bit order, padding bits 0

Shards roll purely by sample count (samples_per_shard). Padding is
vectorised: a block of records starts as pad_id and a boolean mask of
"slot < token_count" receives the flat tokens in row-major order.
"""

from __future__ import annotations

import os
import re

import numpy as np

RECOMMENDED_MAX_BYTES = 512 * 1024 * 1024
BLOCK_ROWS = 8192


UNIT_DIR = "unit_%d"  # %-format: also formatted in bulk (formats/output.py)
SHARD_NAME = "shard_%06d.bin"
MASK_NAME = "mask_%06d.bin"
UNIT_RE = re.compile(r"^unit_(\d+)$")
SHARD_RE = re.compile(r"^shard_(\d{6})\.bin$")


def unit_dir(size: int) -> str:
    """The directory of one unit size inside an output directory."""
    return UNIT_DIR % size


def shard_name(index: int) -> str:
    return SHARD_NAME % index


def mask_name(index: int) -> str:
    """The loss mask beside shard_XXXXXX.bin (source.train_on)."""
    return MASK_NAME % index


def shard_path(size: int, index: int) -> str:
    """A shard's path relative to the output directory, as sample_index.jsonl writes it."""
    return f"{unit_dir(size)}/{shard_name(index)}"


def shard_index(name: str) -> int | None:
    """The number of a shard file name (shard_000007.bin -> 7); None for any other name."""
    m = SHARD_RE.match(name)
    return int(m.group(1)) if m else None


def mask_path(shard: str) -> str:
    """The loss-mask file beside a shard file (any directory prefix kept)."""
    head, name = os.path.split(shard)
    return os.path.join(head, mask_name(shard_index(name)))


def list_shards(directory: str) -> list[str]:
    """The shard file names in a unit directory, in shard order (nothing else it holds)."""
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if SHARD_RE.match(n))


def mask_width(size: int) -> int:
    """Bytes per mask record of a unit size."""
    return -(-size // 8)


def open_records(path: str, width: int, dtype) -> np.memmap:
    """A read-only memmap of a shard's records, shape (records, width); ValueError when the file
    is not a whole number of records. dtype: the manifest's token dtype (little-endian is forced)."""
    dtype = np.dtype(dtype).newbyteorder("<")
    nbytes = os.path.getsize(path)
    record = width * dtype.itemsize
    if nbytes % record:
        raise ValueError(f"{path} is not a whole number of {width}-slot records")
    if not nbytes:
        return np.zeros((0, width), dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=(nbytes // record, width))


def open_mask(path: str, size: int) -> np.memmap:
    """A read-only memmap of a mask file: (records, ceil(size / 8)) uint8, little bit order."""
    return open_records(path, mask_width(size), np.uint8)


def unpack_mask(rows: np.ndarray, size: int) -> np.ndarray:
    """Mask records (bytes) -> (records, size) bool."""
    return np.unpackbits(rows, axis=-1, count=size, bitorder="little").astype(bool)


def mask_block(lengths: np.ndarray, bits: np.ndarray, unit: int) -> np.ndarray:
    """Bit-packed mask records: ceil(unit/8) bytes each, little bit order, padding bits 0."""
    slots = np.zeros((len(lengths), unit), dtype=bool)
    if len(bits):
        slots[np.arange(unit)[None, :] < lengths[:, None]] = bits
    return np.packbits(slots, axis=1, bitorder="little")


def shard_line(index: int, samples: int, nbytes: int, unit: int, output: str | None = None) -> str:
    line = f"[unit-build] shard={index:06d} samples={samples} bytes={nbytes / 2**20:.1f} MiB unit={unit}"
    return line + (f" output={output}" if output else "")


def shard_warning(index: int, nbytes: int) -> str | None:
    if nbytes <= RECOMMENDED_MAX_BYTES:
        return None
    return (f"[unit-build:warning] shard={index:06d} size={nbytes / 2**20:.1f} MiB exceeds recommended 512 MiB.\n"
            "Build continues because sharding is controlled by samples_per_shard.")


def pad_block(lengths: np.ndarray, tokens: np.ndarray, unit: int, pad_id: int, dtype) -> np.ndarray:
    block = np.full((len(lengths), unit), pad_id, dtype=np.dtype(dtype).newbyteorder("<"))
    if len(tokens):
        block[np.arange(unit)[None, :] < lengths[:, None]] = tokens
    return block


class ShardWriter:
    """Appends padded records to shard files in a unit directory, rolling every samples_per_shard."""

    def __init__(self, unit_dir: str, unit: int, samples_per_shard: int, pad_id: int, dtype: str, on_close=None,
                 masks: bool = False):
        self.unit_dir, self.unit, self.sps = unit_dir, unit, samples_per_shard
        self.masks = masks
        self._mask_fh = None
        self.pad_id, self.dtype = pad_id, dtype
        self.on_close = on_close
        self.shards: list[dict] = []
        self._fh = None
        self._index = -1
        self._in_shard = 0
        self._bytes = 0

    def _open_next(self) -> None:
        self._index += 1
        self._fh = open(os.path.join(self.unit_dir, shard_name(self._index)), "wb")
        if self.masks:
            self._mask_fh = open(os.path.join(self.unit_dir, mask_name(self._index)), "wb")
        self._in_shard = 0
        self._bytes = 0

    def _close(self) -> None:
        if self._fh is None:
            return
        self._fh.close()
        self._fh = None
        if self._mask_fh is not None:
            self._mask_fh.close()
            self._mask_fh = None
        info = {"name": shard_name(self._index), "records": self._in_shard, "bytes": self._bytes}
        self.shards.append(info)
        if self.on_close:
            self.on_close(self._index, info)

    def write(self, lengths: np.ndarray, tokens: np.ndarray, mask_bits: np.ndarray | None = None) -> None:
        """mask_bits: one bool per token (flat, like tokens) when the output carries loss masks."""
        ends = np.cumsum(lengths)
        i, n = 0, len(lengths)
        while i < n:
            if self._fh is None or self._in_shard == self.sps:
                self._close()
                self._open_next()
            take = min(n - i, self.sps - self._in_shard, BLOCK_ROWS)
            lo = int(ends[i - 1]) if i else 0
            hi = int(ends[i + take - 1])
            block = pad_block(lengths[i:i + take], tokens[lo:hi], self.unit, self.pad_id, self.dtype)
            try:
                block.tofile(self._fh)
            except OSError as exc:  # a short write (disk full, a file size or quota limit): name the shard
                raise OSError(exc.errno, exc.strerror or str(exc), self._fh.name) from None
            if self._mask_fh is not None:
                try:
                    mask_block(lengths[i:i + take], mask_bits[lo:hi], self.unit).tofile(self._mask_fh)
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror or str(exc), self._mask_fh.name) from None
            self._in_shard += take
            self._bytes += block.nbytes
            i += take

    def close(self) -> list[dict]:
        self._close()
        return self.shards
