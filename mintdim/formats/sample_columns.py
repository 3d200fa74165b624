"""sample_index.idx: the per-sample columns the readers need, as fixed-width little-endian arrays.

sample_index.jsonl is the spec's audit file, one JSON line per sample; reading one sample's place from it
means parsing every line before. This file holds the same facts as arrays (in the spirit of
Megatron-Core's indexed dataset `.idx`), so that opening an output reads a small header and
`tokens(i)` touches only sample i's bytes of each column (the file is memory-mapped).

Layout (every integer little-endian):

    offset  size  field
         0     8  magic b"MINTSIDX"
         8     4  version (uint32, VERSION)
        12     4  CRC-32 of the header's bytes from offset 16 to header_size
        16     4  header_size (uint32): these 40 bytes and the column table, a multiple of 8
        20     4  layout (uint32): 0 unit sizes, 1 packed rows (units.pack)
        24     8  samples (uint64)
        32     4  columns (uint32)
        36     4  zero
        40        the column table, 48 bytes a column:
                    name (24 bytes, ASCII, NUL-padded), dtype (8 bytes, numpy's spelling, NUL-padded),
                    count (uint64: items), offset (uint64: from the start of the file, a multiple of 8)
                  then the columns' bytes, in table order, each starting at a multiple of 8; the file
                  ends where the last column ends.

Columns (COLUMNS; one item per sample unless said otherwise):

    status              0 whole; 1 dropped (units.overflow: drop); 2 truncated; 3 left out
                        (source.drop_untrained)
    unit                (unit sizes) the index of the sample's size in manifest units.sizes; -1: in no unit
    shard, record       the shard number and the record (row) in it; -1: in no shard
    row_offset          (packed rows) the sample's first slot in its row; -1: in no row
    token_count         tokens written (as sample_index.jsonl's token_count)
    source_token_count  the sample's whole length (larger than token_count only for a cut sample)
    source_file         an index into file_names
    source_line         the 1-based line (JSONL) or row (Parquet, datasets) of the record
    trained_tokens      (source.train_on) as sample_index.jsonl gives them
    repeat              (source.take) the sample's repeat
    row_samples         (packed rows; one item per placed sample) sample ids ordered by row, then row_offset
    row_first           (packed rows; rows + 1 items) each row's first position in row_samples
    file_names          (bytes) the source files the samples come from, a JSON list of strings as
                        sample_index.jsonl writes them

Outputs written before this file existed have none: `open_columns` then reads sample_index.jsonl into
the same columns (in memory, time linear in the samples) and warns once per output.
"""

from __future__ import annotations

import functools
import itertools
import os
import struct
import warnings
import zlib

import numpy as np
import orjson

from .. import errors as E
from ..files import open_pieces
from . import output, shards

NAME = output.SAMPLE_COLUMNS  # "sample_index.idx"
JSONL = output.SAMPLE_INDEX
MAGIC = b"MINTSIDX"
VERSION = 1
LAYOUTS = ("units", "packed")
_HEAD = struct.Struct("<8sIIIIQII")  # magic, version, crc, header_size, layout, samples, columns, zero
_ENTRY = struct.Struct("<24s8sQQ")  # name, dtype, count, offset
DROPPED = (1, 3)  # statuses of a sample in no unit, shard or row

COLUMNS = {
    "status": "|u1",
    "unit": "<i2",
    "shard": "<i4",
    "record": "<i4",
    "row_offset": "<i4",
    "token_count": "<i4",
    "source_token_count": "<i8",
    "source_file": "<i4",
    "source_line": "<i8",
    "trained_tokens": "<i8",
    "repeat": "<i4",
    "row_samples": "<i8",
    "row_first": "<i8",
    "file_names": "|u1",
}
_PER_SAMPLE = ("status", "shard", "record", "token_count", "source_token_count", "source_file", "source_line")
REQUIRED = {
    "units": _PER_SAMPLE + ("unit", "file_names"),
    "packed": _PER_SAMPLE + ("row_offset", "row_samples", "row_first", "file_names"),
}
_NOT_PER_SAMPLE = ("row_samples", "row_first", "file_names")


# --- writing --------------------------------------------------------------------------------------------


def write(path: str, layout: str, columns: dict, file_names: list[str]) -> None:
    """sample_index.idx at `path`: the arrays of `columns` (names of COLUMNS, cast to their dtypes) and the
    file-name table, after the header; the file is complete only when closed (formats' PieceWriter)."""
    counts = {k: len(columns[k]) for k in COLUMNS if k in columns}
    with Writer(path, layout, counts, file_names) as w:
        for k in counts:
            w.put(k, 0, columns[k])


class Writer:
    """sample_index.idx written a block of samples at a time (the aggregate stage writes each chunk's):
    the header first, from the column counts (name -> items, in COLUMNS order, file_names added), then
    each put(name, start, values) at its place in its column. Every item of every column must be put."""

    def __init__(self, path: str, layout: str, counts: dict, file_names: list[str]):
        self._names = np.frombuffer(orjson.dumps(list(file_names)), dtype=np.uint8)
        counts = {k: counts[k] for k in COLUMNS if k in counts} | {"file_names": len(self._names)}
        header_size = _HEAD.size + _ENTRY.size * len(counts)
        self._at, at = {}, header_size
        for k, c in counts.items():
            self._at[k] = at
            at = _aligned(at + c * np.dtype(COLUMNS[k]).itemsize)
        self._end = self._at["file_names"] + len(self._names)  # the file ends where the last column ends
        table = b"".join(
            _ENTRY.pack(k.encode(), COLUMNS[k].encode(), c, self._at[k]) for k, c in counts.items()
        )
        n = counts["status"]
        tail = _HEAD.pack(MAGIC, VERSION, 0, header_size, LAYOUTS.index(layout), n, len(counts), 0)[16:]
        self._fh = open_pieces(path)
        self._fh.write(MAGIC + struct.pack("<II", VERSION, zlib.crc32(tail + table)) + tail + table)
        self._fh.truncate(self._end)  # the gaps between columns: zeros
        self.put("file_names", 0, self._names)

    def put(self, name: str, start: int, values) -> None:
        a = np.ascontiguousarray(values, dtype=COLUMNS[name])
        self._fh.seek(self._at[name] + start * a.itemsize)
        self._fh.write(a)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()


def _aligned(at: int) -> int:
    return -(-at // 8) * 8


def built_counts(n: int, trained: bool, repeats: bool, packed=None) -> dict:
    """The column counts of an output's sample_index.idx (packed: (rows, placed samples) of units.pack)."""
    counts = dict.fromkeys(_PER_SAMPLE, n)
    counts |= {"trained_tokens": n} if trained else {}
    counts |= {"repeat": n} if repeats else {}
    if packed is None:
        return counts | {"unit": n}
    n_rows, placed = packed
    return counts | {"row_offset": n, "row_samples": placed, "row_first": n_rows + 1}


def put_built(w: Writer, start: int, sps: int, block: dict) -> None:
    """One block of samples' columns (from `start`), from the aggregate stage's arrays of the block:
    status (None: every sample written whole), rows (the row in its unit; packed: the global row), units
    (unit sizes) or offsets (packed), kept (tokens written), lengths, files (numbers among the file names),
    lines, and trained and repeats when the build has them."""
    lengths, rows = block["lengths"], block["rows"].astype(np.int64)
    status = block["status"]
    status = np.zeros(len(lengths), dtype=np.uint8) if status is None else status
    placed = ~np.isin(status, DROPPED)
    cols = {
        "status": status,
        "shard": np.where(placed, rows // sps, -1),
        "record": np.where(placed, rows % sps, -1),
        "token_count": block["kept"],
        "source_token_count": lengths,
        "source_file": block["files"],
        "source_line": block["lines"],
        "trained_tokens": block.get("trained"),
        "repeat": block.get("repeats"),
    }
    if block.get("offsets") is None:
        cols["unit"] = np.where(placed, block["units"], -1)
    else:
        cols["row_offset"] = np.where(placed, block["offsets"].astype(np.int64), -1)
    for k, v in cols.items():
        if v is not None:
            w.put(k, start, v)


def write_built(directory: str, plan, paths, kept, status=None, trained=None):
    """sample_index.idx in `directory` in one block, from whole arrays: the same values its
    sample_index.jsonl writers are given (plan: an intermediate.Plan's layout fields with the output's
    `files` and `lines`; paths: every build file's path, which `files` index; kept and status: the tokens
    written of each sample and their status, None when every sample is written whole; trained:
    source.train_on's, or None)."""
    used, number = used_files(np.bincount(plan.files, minlength=len(paths)))
    n = len(plan.lengths)
    repeats = None if plan.take is None else plan.take.repeats
    placed = None if plan.packing is None else placed_of(n, status)
    packed = None if plan.packing is None else (plan.packing.n_rows, int(np.count_nonzero(placed)))
    layout = "units" if plan.packing is None else "packed"
    counts = built_counts(n, trained is not None, repeats is not None, packed)
    with Writer(os.path.join(directory, NAME), layout, counts, [paths[k] for k in used.tolist()]) as w:
        block = {"status": status, "rows": plan.rows, "units": plan.units, "kept": kept}
        block |= {"lengths": plan.lengths, "files": number[plan.files], "lines": plan.lines}
        block |= {"trained": trained, "repeats": repeats}
        block |= {"offsets": None if plan.packing is None else plan.packing.offsets}
        put_built(w, 0, plan.samples_per_shard, block)
        if plan.packing is not None:
            put_rows(w, plan.rows, plan.packing.offsets, placed, plan.packing.n_rows)


def used_files(per_file: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the build's files the samples come from, sorted; each build file's number among them, -1: none)
    from the samples per build file."""
    used = np.flatnonzero(per_file)
    number = np.full(len(per_file), -1, dtype=np.int64)
    number[used] = np.arange(len(used))
    return used, number


def placed_of(n: int, status) -> np.ndarray:
    """Which samples are in a unit, shard or row (status None: all)."""
    return np.ones(n, dtype=bool) if status is None else ~np.isin(status, DROPPED)


def put_rows(w: Writer, rows, offsets, placed, n_rows: int) -> None:
    """Packed rows: the row_samples and row_first columns (row_order)."""
    order, first = row_order(rows.astype(np.int64), offsets.astype(np.int64), placed, n_rows)
    w.put("row_samples", 0, order)
    w.put("row_first", 0, first)


def row_order(rows, offsets, placed, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(the placed sample ids ordered by row then offset, each row's first position among them:
    n_rows + 1 items)."""
    live = np.flatnonzero(placed)
    order = live[np.lexsort((offsets[live], rows[live]))]
    first = np.zeros(n_rows + 1, dtype=np.int64)
    first[1:] = np.cumsum(np.bincount(rows[live], minlength=n_rows))
    return order, first


# --- reading --------------------------------------------------------------------------------------------


class SampleColumns:
    """The columns of one output's sample index: `col.token_count[i]` etc. (COLUMNS' names; None for an
    optional column the build did not write), `layout`, `n`, `file_names`. Opened from sample_index.idx they
    are read-only views of one memory map; pickled, they reopen the file (a DataLoader worker maps it again
    rather than receiving a copy)."""

    def __init__(self, path: str, layout: str, n: int, arrays: dict, mapped: bool):
        self.path, self.layout, self.n = path, layout, n
        self._arrays = arrays
        self.mapped = mapped
        self._names = None

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in COLUMNS:
            raise AttributeError(name)
        return self._arrays.get(name)

    @property
    def file_names(self) -> list[str]:
        if self._names is None:
            self._names = orjson.loads(self._arrays["file_names"].tobytes())
        return self._names

    def __reduce__(self):
        if self.mapped:
            return (read, (self.path,))
        return (SampleColumns, (self.path, self.layout, self.n, self._arrays, False))


def read(path: str) -> SampleColumns:
    """sample_index.idx memory-mapped: the header and column table checked (OutputValidationError: a file
    cut short, a damaged header, a version this MintDim does not read), the columns left unread until used."""
    size, (layout, n, header_size), table = _header(path)
    entries = _entries(path, table, n, header_size)
    end = max((at + c * np.dtype(d).itemsize for _k, d, c, at in entries), default=header_size)
    if size < end:
        raise E.OutputValidationError.index_file("index_file_cut", path, size, end)
    missing = [k for k in REQUIRED[LAYOUTS[layout]] if k not in {e[0] for e in entries}]
    if missing:
        raise E.OutputValidationError.index_file(
            "index_file_damaged", path, E.OutputValidationError.texts("idx_no_column", name=missing[0])
        )
    data = np.memmap(path, dtype=np.uint8, mode="r", shape=(end,))
    arrays = {k: data[at : at + c * np.dtype(d).itemsize].view(d) for k, d, c, at in entries}
    return SampleColumns(path, LAYOUTS[layout], n, arrays, mapped=True)


def _header(path: str) -> tuple[int, tuple[int, int, int], bytes]:
    """(file size, (layout, samples, header size), the column table's bytes), every header field checked."""
    damaged = functools.partial(E.OutputValidationError.index_file, "index_file_damaged")
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(_HEAD.size)
            if head[:8] != MAGIC[: len(head)]:
                raise damaged(path, E.OutputValidationError.texts("idx_no_mark"))
            if len(head) < _HEAD.size:
                raise E.OutputValidationError.index_file("index_file_cut", path, size, _HEAD.size)
            _magic, version, crc, header_size, layout, n, count, _zero = _HEAD.unpack(head)
            if version != VERSION:
                raise E.OutputValidationError.index_file("index_file_version", path, version, VERSION)
            if header_size != _HEAD.size + _ENTRY.size * count:
                raise damaged(
                    path, E.OutputValidationError.texts("idx_header_size", size=header_size, count=count)
                )
            table = f.read(header_size - _HEAD.size)
    except FileNotFoundError:
        raise E.MintDimFileNotFoundError.make("reader", path) from None
    if len(table) < header_size - _HEAD.size:
        raise E.OutputValidationError.index_file("index_file_cut", path, size, header_size)
    if zlib.crc32(head[16:] + table) != crc:
        raise damaged(path, E.OutputValidationError.texts("idx_crc"))
    if layout >= len(LAYOUTS):
        raise damaged(path, E.OutputValidationError.texts("idx_layout", layout=layout))
    return size, (layout, n, header_size), table


def _entries(path: str, table: bytes, n: int, header_size: int) -> list[tuple]:
    """The column table: (name, dtype, count, offset) each, checked against COLUMNS and the sample count."""
    entries, after = [], header_size
    for j in range(len(table) // _ENTRY.size):
        raw_name, raw_dtype, items, at = _ENTRY.unpack_from(table, j * _ENTRY.size)
        name = raw_name.rstrip(b"\0").decode("ascii", "replace")
        dtype = raw_dtype.rstrip(b"\0").decode("ascii", "replace")
        if name in COLUMNS and dtype != COLUMNS[name]:
            raise E.OutputValidationError.index_file(
                "index_file_damaged",
                path,
                E.OutputValidationError.texts("idx_dtype_not", name=name, dtype=dtype, want=COLUMNS[name]),
            )
        try:
            width = np.dtype(dtype).itemsize
        except TypeError:
            raise E.OutputValidationError.index_file(
                "index_file_damaged", path, E.OutputValidationError.texts("idx_dtype", name=name, dtype=dtype)
            ) from None
        if at % 8 or at < after or (name not in _NOT_PER_SAMPLE and name in COLUMNS and items != n):
            raise E.OutputValidationError.index_file(
                "index_file_damaged",
                path,
                E.OutputValidationError.texts("idx_items", name=name, items=items, at=at),
            )
        entries.append((name, dtype, items, at))
        after = at + items * width
    return entries


def open_columns(out_dir: str, manifest: dict, samples: int, warn: bool = True) -> SampleColumns:
    """The sample index of a finished output: sample_index.idx, checked to hold `samples` samples of the
    manifest's layout; for an output built before it existed, sample_index.jsonl read into the same columns
    (a warning says so, unless `warn` is False)."""
    packed = (manifest.get("units") or {}).get("layout") == "packed"
    path = os.path.join(out_dir, NAME)
    if not os.path.exists(path) and os.path.isfile(os.path.join(out_dir, JSONL)):
        if warn:
            warnings.warn(E.OutputValidationError.index_file_older(out_dir).en, stacklevel=3)
        return from_jsonl(out_dir, manifest, samples)
    cols = read(path)
    if cols.layout != ("packed" if packed else "units"):
        raise E.OutputValidationError.index_file(
            "index_file_damaged",
            path,
            E.OutputValidationError.texts("idx_not_manifest_layout", layout=cols.layout),
        )
    if cols.n != samples:
        raise E.OutputValidationError.index_count(out_dir, cols.n, samples, NAME)
    return cols


# --- an output without sample_index.idx: its sample_index.jsonl -----------------------------------------


def from_jsonl(out_dir: str, manifest: dict, samples: int, block: int = 1 << 16) -> SampleColumns:
    """sample_index.jsonl (bucketed or packed keys) as the columns sample_index.idx holds, in memory; the
    reader's catalogue errors for ids out of order, a count other than stats.json's, a unit size the
    manifest does not declare, a shard_row that does not follow the shard layout. Parsed `block` lines at
    a time, each block's objects taken apart key by key."""
    units = manifest["units"]
    packed = units.get("layout") == "packed"
    sizes = [int(s) for s in units["sizes"]]
    sps = int(manifest["output"]["samples_per_shard"])
    fast = None if packed else _as_written(out_dir, manifest, samples, sizes, sps)
    if fast is not None:
        return fast
    names: dict[str, int] = {}
    parts, seen = [], 0
    with open(os.path.join(out_dir, JSONL), "rb") as f:
        while True:
            lines = list(itertools.islice(f, block))
            if not lines:
                break
            objs = [orjson.loads(line) for line in lines if line.strip()]  # (one joined array: 1.8x longer)
            ids = [o.get("sample_id") for o in objs]
            if ids != list(range(seen, seen + len(ids))):
                k = next(k for k, sid in enumerate(ids) if sid != seen + k)
                raise E.OutputValidationError.index_order(out_dir, seen + k + 1, ids[k])
            seen += len(objs)
            parts.append(_block_columns(objs, names, sizes, packed, out_dir))
    if seen != samples:
        raise E.OutputValidationError.index_count(out_dir, seen, samples, output.SAMPLE_INDEX)
    c = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64) for k in _FROM_LINES}
    placed = ~np.isin(c["status"], DROPPED)
    if packed:
        rows = np.where(placed, c.pop("shard") * sps + c["record"], -1)
        c["shard"], c["record"] = _split(rows, sps)
        n_rows = int(rows.max()) + 1 if samples else 0
        c["row_samples"], c["row_first"] = row_order(rows, c["row_offset"], placed, n_rows)
        del c["unit"]
    else:
        _bucketed_places(out_dir, c, sizes, sps, c.pop("record"))
        del c["row_offset"]
    for optional in ("trained_tokens", "repeat"):
        if not any(p[optional + "?"] for p in parts):
            del c[optional]
    c["file_names"] = np.frombuffer(orjson.dumps(list(names)), dtype=np.uint8)
    cols = {k: v.astype(COLUMNS[k]) for k, v in c.items()}
    return SampleColumns(os.path.join(out_dir, JSONL), "packed" if packed else "units", samples, cols, False)


def _as_written(out_dir: str, manifest: dict, samples: int, sizes, sps: int) -> SampleColumns | None:
    """A bucketed sample_index.jsonl whose lines are all as the build writes them without overflow or
    repeat keys, read with array operations (formats/output.read_sample_index: 20x the line-by-line
    parse); None for any other, or for ids or a count the reader's errors are about."""
    files = (manifest.get("source") or {}).get("files") or []
    cols = output.read_sample_index(os.path.join(out_dir, JSONL), list(files))
    if cols is None or len(cols["sample_id"]) != samples:
        return None
    if (
        not np.array_equal(cols["sample_id"], np.arange(samples))
        or not np.isin(cols["unit_size"], sizes).all()
    ):
        return None
    c = {
        "status": np.zeros(samples, np.uint8),
        "unit": np.searchsorted(np.asarray(sizes), cols["unit_size"]),
        "token_count": cols["token_count"],
        "source_token_count": cols["token_count"],
        "source_file": cols["source_file"],
        "source_line": cols["source_line"],
        **({"trained_tokens": cols["trained_tokens"]} if "trained_tokens" in cols else {}),
    }
    _bucketed_places(out_dir, c, sizes, sps, cols["shard_row"])
    c["file_names"] = np.frombuffer(orjson.dumps(list(files)), dtype=np.uint8)
    arrays = {k: v.astype(COLUMNS[k]) for k, v in c.items()}
    return SampleColumns(os.path.join(out_dir, JSONL), "units", samples, arrays, False)


_FROM_LINES = _PER_SAMPLE + ("unit", "row_offset", "trained_tokens", "repeat")


def _block_columns(objs: list[dict], names: dict, sizes, packed: bool, out_dir: str) -> dict:
    """The columns of a block of sample_index.jsonl's objects: shard (the shard number) and record
    (shard_row as given, -1 where none), unit (unit sizes; -1: none), row_offset (packed rows); for an
    optional key, whether a line of the block has it ("trained_tokens?", "repeat?")."""
    unit_of = {size: k for k, size in enumerate(sizes)}
    status = [3 if o.get("untrained") == "dropped" else _OVERFLOW.get(o.get("overflow"), 0) for o in objs]
    placed = [st not in DROPPED for st in status]
    cols = {
        "status": status,
        "token_count": [o["token_count"] for o in objs],
        "source_token_count": [o.get("source_token_count", o["token_count"]) for o in objs],
        "source_file": [names.setdefault(o["source_file"], len(names)) for o in objs],
        "source_line": [o["source_line"] for o in objs],
        "trained_tokens": [o.get("trained_tokens", 0) for o in objs],
        "repeat": [o.get("repeat", 0) for o in objs],
        "record": [
            r if ok and isinstance(r, int) else -1
            for ok, r in zip(placed, (o.get("shard_row") for o in objs))
        ],
    }
    if packed:  # the shard from shard_path (bucketed: from the sample's rank in its unit)
        number: dict[str, int] = {}
        cols["shard"] = [
            number.get(p) or number.setdefault(p, shards.shard_index(os.path.basename(p))) if ok else -1
            for ok, p in zip(placed, (o.get("shard_path") for o in objs))
        ]
        cols["row_offset"] = [o["row_offset"] if ok else -1 for ok, o in zip(placed, objs)]
        cols["unit"] = [-1] * len(objs)
    else:
        cols["unit"] = [unit_of.get(o.get("unit_size"), -2) if ok else -1 for ok, o in zip(placed, objs)]
        if -2 in cols["unit"]:
            raise E.OutputValidationError.index_unit_size(out_dir)
        cols["shard"] = cols["row_offset"] = [-1] * len(objs)
    out = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    out["trained_tokens?"] = any("trained_tokens" in o for o in objs)
    out["repeat?"] = any("repeat" in o for o in objs)
    return out


_OVERFLOW = {"dropped": 1, "truncated": 2}  # sample_index.jsonl's overflow key: the status


def _split(rows, sps: int):
    return np.where(rows >= 0, rows // sps, -1), np.where(rows >= 0, rows % sps, -1)


def _bucketed_places(out_dir: str, c: dict, sizes, sps: int, given_rows) -> None:
    """Shard and record of every placed sample: its rank among its unit's samples (records follow
    sample_id order), checked against shard_row where the line gives one."""
    rank = np.full(len(c["unit"]), -1, dtype=np.int64)
    for u in range(len(sizes)):
        members = np.flatnonzero(c["unit"] == u)
        rank[members] = np.arange(len(members))
    known = given_rows >= 0
    if np.any(rank[known] % sps != given_rows[known]):
        raise E.OutputValidationError.index_shard_row(out_dir)
    c["shard"], c["record"] = _split(rank, sps)
