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

from ..faults import kill_point
from ..files import open_pieces

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


def shard_line(
    index: int, samples: int, nbytes: int, unit: int, output: str | None = None, rows: int | None = None
) -> str:
    """The spec's line of a closed shard; a shard of packed rows (`rows`) says its rows, then its samples."""
    held = f"rows={rows} samples={samples}" if rows is not None else f"samples={samples}"
    line = f"[unit-build] shard={index:06d} {held} bytes={nbytes / 2**20:.1f} MiB unit={unit}"
    return line + (f" output={output}" if output else "")


def shard_warning(index: int, nbytes: int) -> str | None:
    if nbytes <= RECOMMENDED_MAX_BYTES:
        return None
    return (
        f"[unit-build:warning] shard={index:06d} size={nbytes / 2**20:.1f} MiB exceeds recommended 512 MiB.\n"
        "Build continues because sharding is controlled by samples_per_shard."
    )


def pad_block(lengths: np.ndarray, tokens: np.ndarray, unit: int, pad_id: int, dtype) -> np.ndarray:
    block = np.full((len(lengths), unit), pad_id, dtype=np.dtype(dtype).newbyteorder("<"))
    if len(tokens):
        block[np.arange(unit)[None, :] < lengths[:, None]] = tokens
    return block


class ShardWriter:
    """Appends padded records to shard files in a unit directory, rolling every samples_per_shard."""

    def __init__(
        self,
        unit_dir: str,
        unit: int,
        samples_per_shard: int,
        pad_id: int,
        dtype: str,
        on_close=None,
        masks: bool = False,
    ):
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
        self._fh = open_pieces(os.path.join(self.unit_dir, shard_name(self._index)))
        if self.masks:
            self._mask_fh = open_pieces(os.path.join(self.unit_dir, mask_name(self._index)))
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
        kill_point("write:shard")  # tests: a kill with shards half written

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
            block = pad_block(lengths[i : i + take], tokens[lo:hi], self.unit, self.pad_id, self.dtype)
            self._fh.write(block)  # a full disk or a file size limit: an OSError naming the shard
            if self._mask_fh is not None:
                self._mask_fh.write(mask_block(lengths[i : i + take], mask_bits[lo:hi], self.unit))
            self._in_shard += take
            self._bytes += block.nbytes
            i += take

    def close(self) -> list[dict]:
        self._close()
        return self.shards


# --- packed rows (units.pack) --------------------------------------------------------------------
#
#   unit_<L>/shard_XXXXXX.bin  rows of L tokens: the samples of the row back to back, then pad_id
#   unit_<L>/cu_XXXXXX.bin     the boundaries of those rows, int32 little-endian: R + 1 row pointers
#                              `ptr`, then for each row its cumulative sequence lengths
#                              [0, end of sample 1, ..., end of the last sample] (FlashAttention's
#                              cu_seqlens of the row). Row r's boundaries are the values
#                              cu[ptr[r]:ptr[r + 1]] of the part after the pointers, so a reader finds
#                              them without scanning; R = the shard's size / (L * bytes per token).
#   unit_<L>/mask_XXXXXX.bin   (source.train_on) as for units: ceil(L / 8) bytes per row

CU_NAME = "cu_%06d.bin"
CU_DTYPE = np.dtype("<i4")


def cu_name(index: int) -> str:
    return CU_NAME % index


def cu_path(shard: str) -> str:
    """The boundaries file beside a shard file (packed rows)."""
    head, name = os.path.split(shard)
    return os.path.join(head, cu_name(shard_index(name)))


def boundaries_block(per_row: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A shard's boundaries file: per_row = samples in each row, ends = each sample's end slot
    (offset + tokens), ordered by row then offset."""
    per_row = np.asarray(per_row, dtype=np.int64)
    ptr = np.arange(len(per_row) + 1, dtype=np.int64)
    ptr[1:] += np.cumsum(per_row)
    cu = np.zeros(int(ptr[-1]), dtype=np.int64)
    is_end = np.ones(len(cu), dtype=bool)
    is_end[ptr[:-1]] = False
    cu[is_end] = ends
    return np.concatenate((ptr, cu)).astype(CU_DTYPE)


def read_boundaries(path: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, cu) of a boundaries file of a shard of `rows` rows; ValueError when it cannot be one."""
    data = np.fromfile(path, dtype=CU_DTYPE) if os.path.getsize(path) else np.zeros(0, dtype=CU_DTYPE)
    if len(data) < rows + 1:
        raise ValueError(f"{path} holds {len(data)} int32 values, fewer than the {rows + 1} row pointers")
    ptr, cu = data[: rows + 1].astype(np.int64), data[rows + 1 :]
    if ptr[0] != 0 or ptr[-1] != len(cu) or np.any(np.diff(ptr) < 1):
        raise ValueError(f"{path}: row pointers are not increasing from 0 to {len(cu)}")
    return ptr, cu


def row_cu(ptr: np.ndarray, cu: np.ndarray, row: int) -> np.ndarray:
    """Row `row`'s cumulative sequence lengths [0, ..., tokens in the row] (int32)."""
    return cu[ptr[row] : ptr[row + 1]]


class PackedWriter:
    """Writes the packed rows of one output: shards pre-filled with pad_id, then each sample's tokens
    scattered to (row, offset) as the chunk streams arrive in sample order; masks likewise (one
    byte per slot in a temporary file, bit-packed at close); boundaries from the plan."""

    def __init__(
        self,
        unit_dir: str,
        row_length: int,
        rows_per_shard: int,
        n_rows: int,
        pad_id: int,
        dtype: str,
        masks: bool = False,
        on_close=None,
    ):
        self.unit_dir, self.L, self.rps, self.n_rows = unit_dir, row_length, rows_per_shard, n_rows
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.masks, self.on_close = masks, on_close
        self.n_shards = -(-n_rows // rows_per_shard)
        self._tokens: list[np.memmap] = []
        self._bits: list[np.memmap] = []
        self.samples = np.zeros(self.n_shards, dtype=np.int64)
        for k in range(self.n_shards):
            rows = min(rows_per_shard, n_rows - k * rows_per_shard)
            path = os.path.join(unit_dir, shard_name(k))
            pad = np.full((min(rows, BLOCK_ROWS), row_length), pad_id, dtype=self.dtype)
            with open_pieces(path) as fh:  # real blocks, not a sparse file: a full disk fails here, by name
                for lo in range(0, rows, BLOCK_ROWS):
                    fh.write(pad[: min(BLOCK_ROWS, rows - lo)])
            self._tokens.append(np.memmap(path, dtype=self.dtype, mode="r+", shape=(rows * row_length,)))
            if masks:
                self._bits.append(
                    np.memmap(self._bits_path(k), dtype=np.uint8, mode="w+", shape=(rows * row_length,))
                )

    def _bits_path(self, k: int) -> str:
        return os.path.join(self.unit_dir, f".{mask_name(k)}.slots")

    def write_boundaries(self, rows: np.ndarray, offsets: np.ndarray, kept: np.ndarray) -> None:
        """Every shard's boundaries file, from the plan (rows: -1 for a dropped sample)."""
        live = np.flatnonzero(rows >= 0)
        order = live[np.lexsort((offsets[live], rows[live]))]
        row_sorted = rows[order]
        per_row = np.bincount(row_sorted, minlength=self.n_rows)
        ends = (offsets + kept)[order]
        first = np.concatenate(([0], np.cumsum(per_row)))
        for k in range(self.n_shards):
            r0, r1 = k * self.rps, min(self.n_rows, (k + 1) * self.rps)
            block = boundaries_block(per_row[r0:r1], ends[first[r0] : first[r1]])
            path = os.path.join(self.unit_dir, cu_name(k))
            with open_pieces(path) as fh:
                fh.write(block)
            self.samples[k] = first[r1] - first[r0]

    def scatter(
        self,
        rows: np.ndarray,
        offsets: np.ndarray,
        kept: np.ndarray,
        lengths: np.ndarray,
        tokens: np.ndarray,
        bits: np.ndarray | None = None,
    ) -> np.ndarray:
        """One batch of consecutive samples (their encoded lengths and flat tokens): the first
        kept[i] tokens of sample i go to row rows[i] from slot offsets[i]. Returns, per sample,
        the trained tokens written (bits), else None."""
        lengths = np.asarray(lengths, dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
        within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
        keep = within < np.repeat(kept, lengths)
        sample_of = np.repeat(np.arange(len(lengths)), lengths)[keep]
        row = rows[sample_of]
        shard = row // self.rps
        dest = (row - shard * self.rps) * self.L + offsets[sample_of] + within[keep]
        src = tokens[keep]
        src_bits = bits[keep] if bits is not None and self.masks else None
        for k in np.unique(shard).tolist():
            sel = shard == k
            self._tokens[k][dest[sel]] = src[sel]
            if src_bits is not None:
                self._bits[k][dest[sel]] = src_bits[sel]
        if src_bits is None:
            return None
        return np.bincount(sample_of, weights=src_bits, minlength=len(lengths)).astype(np.int64)

    def close(self) -> list[dict]:
        shards = []
        for k in range(self.n_shards):
            mm = self._tokens[k]
            mm.flush()
            rows = len(mm) // self.L
            if self.masks:
                slots = self._bits[k]
                path = os.path.join(self.unit_dir, mask_name(k))
                with open_pieces(path) as fh:
                    for lo in range(0, rows, BLOCK_ROWS):
                        hi = min(rows, lo + BLOCK_ROWS)
                        block = np.asarray(slots[lo * self.L : hi * self.L]).reshape(hi - lo, self.L)
                        fh.write(np.packbits(block.astype(bool), axis=1, bitorder="little"))
                del slots
                os.unlink(self._bits_path(k))
            info = {
                "name": shard_name(k),
                "records": rows,
                "bytes": rows * self.L * self.dtype.itemsize,
                "samples": int(self.samples[k]),
            }
            shards.append(info)
            if self.on_close:
                self.on_close(k, info)
            kill_point("write:shard")
        self._tokens, self._bits = [], []
        return shards
