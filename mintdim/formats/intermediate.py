"""The intermediates' format: msgpack files between stages, flat numpy arrays stored as raw bytes.

One tokenize job writes one chunk directory (see docs/intermediates.md):

    meta.msgpack     one object: per-sample facts of the chunk (lines, lengths, units, hashes, UNK)
    u<size>.msgpack  a stream: one {lengths, tokens[, mask]} object per batch, the samples assigned
                     to that unit size, in input order
    uall.msgpack     (units.sizes: auto) the same stream of every sample: sizes are planned later

A stream is several msgpack objects in a row, so `msgpack.unpackb` on the whole file fails
with ExtraData: read it with `iter_objects` (public). Flat token bytes plus a lengths array
are smaller than lists of id lists and unpack without per-token Python objects
(np.frombuffer on the bytes).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

import msgpack
import numpy as np

from ..files import atomic_write_text, open_pieces

FORMAT_VERSION = 1
META = "meta.msgpack"
ALL = "all"  # the part name of the stream of every sample (units.sizes: auto)


def stream_name(part) -> str:
    """A chunk's token stream of one unit size (or of ALL samples): u<size>.msgpack / uall.msgpack."""
    return f"u{part}.msgpack"


def meta_path(chunk_dir: str) -> str:
    return os.path.join(chunk_dir, META)


def stream_path(chunk_dir: str, part) -> str:
    return os.path.join(chunk_dir, stream_name(part))


def arr(a: np.ndarray, dtype) -> dict:
    a = np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": a.dtype.str, "data": a.tobytes()}


def unarr(d: dict) -> np.ndarray:
    return np.frombuffer(d["data"], dtype=np.dtype(d["dtype"]))


def write(path: str, obj: dict) -> None:
    """Write atomically: a killed job never leaves a half file under the final name."""
    obj = {"format": FORMAT_VERSION, **obj}
    tmp = f"{path}.tmp{os.getpid()}"
    with open_pieces(tmp) as f:
        small: list[bytes] = []
        _pack_into(f, small, msgpack.Packer(use_bin_type=True), obj)
        f.write(b"".join(small))
    os.replace(tmp, path)


LARGE_BIN = 1 << 16  # bytes values from this size are written as they are, after their bin 32 header


def _pack_into(f, small: list[bytes], packer, obj) -> None:
    """obj as msgpack.packb(obj, use_bin_type=True) packs it, byte for byte, but written piece by piece:
    a dict's keys and values one at a time, a large bytes value's header then the value itself, so the
    packed file is never whole in memory (the plan's per-sample columns would be held twice). Small
    pieces gather in `small`, written before each large value."""
    if isinstance(obj, dict):
        small.append(packer.pack_map_header(len(obj)))
        for key, value in obj.items():
            small.append(packer.pack(key))
            _pack_into(f, small, packer, value)
    elif isinstance(obj, bytes) and len(obj) >= LARGE_BIN:
        small.append(b"\xc6" + len(obj).to_bytes(4, "big"))  # msgpack's bin 32: lengths of 2^16 and more
        f.write(b"".join(small))
        small.clear()
        f.write(obj)
    else:
        small.append(packer.pack(obj))


def read(path: str) -> dict:
    with open(path, "rb") as f:
        return msgpack.unpackb(f.read(), raw=False)


class StreamWriter:
    """A msgpack stream: one object appended per batch, so a chunk's tokens never sit in memory whole.

    Written under a temporary name and renamed by close(), like write()."""

    def __init__(self, path: str):
        self.path = path
        self._tmp = f"{path}.tmp{os.getpid()}"
        self._fh = open_pieces(self._tmp)
        self._packer = msgpack.Packer(use_bin_type=True)
        self.objects = 0

    def append(self, obj: dict) -> None:
        self._fh.write(self._packer.pack(obj))
        self.objects += 1

    def close(self) -> None:
        self._fh.close()
        os.replace(self._tmp, self.path)


def iter_stream(path: str):
    """The objects of a stream written by StreamWriter, one at a time."""
    with open(path, "rb") as f:
        yield from msgpack.Unpacker(f, raw=False, max_buffer_size=2**31 - 1)


def decode(obj):
    """An intermediate object with every stored array ({dtype, data}) as a numpy array."""
    if isinstance(obj, dict):
        if set(obj) == {"dtype", "data"} and isinstance(obj["data"], bytes):
            return unarr(obj)
        return {k: decode(v) for k, v in obj.items()}
    return obj


def iter_objects(path: str, arrays: bool = True):
    """Public reader of any intermediate file: yields its msgpack objects in order (one for
    meta.msgpack and the plan, one per batch for a u<size>.msgpack stream). With `arrays`,
    stored arrays come back as read-only numpy arrays (little-endian, the stored dtype)."""
    for obj in iter_stream(path):
        yield decode(obj) if arrays else obj


def read_chunk(chunk_dir: str) -> tuple[dict, dict[str, list[dict]]]:
    """A whole chunk directory: (meta, {stream name: [batch objects]}), arrays decoded.
    For inspection and tests; the stages stream instead."""
    meta = next(iter_objects(meta_path(chunk_dir)))
    streams = {
        name: list(iter_objects(os.path.join(chunk_dir, name)))
        for name in sorted(os.listdir(chunk_dir))
        if name != META and name.endswith(".msgpack")
    }
    return meta, streams


# --- the records the stages pass: a chunk's meta, an output's plan and its units summary --------------------
# Each record's to_dict() is the object its file holds, keys in the order the file has them (msgpack keeps
# a map's order, so the same record gives the same bytes); arrays are stored with the dtypes listed here
# and come back from from_dict() in them. A field that is None is a key the file does not have.


def _stored(record, dtypes: dict, names) -> dict:
    """The named fields of a record that are not None, arrays stored with their dtype."""
    out = {}
    for name in names:
        value = getattr(record, name)
        if value is not None:
            out[name] = arr(value, dtypes[name]) if name in dtypes else value
    return out


def _loaded(obj: dict, dtypes: dict) -> dict:
    """A file's object as a record's fields: its arrays as numpy arrays, without `format`."""
    return {k: unarr(v) if k in dtypes else v for k, v in obj.items() if k != "format"}


_META_ARRAYS = {
    "lines": np.uint64,
    "lengths": np.uint32,
    "units": np.uint16,
    "unk_samples": np.uint32,
    "unk_counts": np.uint32,
    "unk_positions": np.uint32,
    "trained": np.uint32,
    "bad_lines": np.uint64,
}


@dataclass(frozen=True, slots=True)
class ChunkMeta:
    """meta.msgpack: the per-sample facts of one tokenize job's chunk (docs/intermediates.md), lines 0-based
    inside the chunk, units an index into the file's unit sizes."""

    file: int
    chunk: int
    n: int
    newlines: int  # line ends of a JSONL chunk, rows of a Parquet or datasets one
    lines: np.ndarray
    lengths: np.ndarray
    units: np.ndarray
    hashes: bytes  # n x 32 bytes of SHA-256 of the rendered text
    unk_samples: np.ndarray
    unk_counts: np.ndarray
    unk_positions: np.ndarray
    trained: np.ndarray | None = None  # source.train_on: trained tokens per sample
    trained_roles: dict[str, int] | None = None  # source.chat with train_on: trained tokens per role
    trained_roles_samples: dict[str, np.ndarray] | None = None  # with source.take: per role, per sample
    end_markers: list[str] | None = None  # source.train_eos: the end-of-turn tokens the template trains
    bad_lines: np.ndarray | None = None  # source.on_bad_record: the chunk's bad records, 0-based lines,
    bad_classes: list[str] | None = None  # their error classes and reasons,
    bad_reasons: list[str] | None = None
    bad_first: dict | None = None  # and the first one's error (MintDimError.to_dict)

    def to_dict(self) -> dict:
        out = _stored(self, _META_ARRAYS, (f.name for f in fields(self)))
        if self.trained_roles_samples is not None:
            out["trained_roles_samples"] = {
                role: arr(a, np.uint32) for role, a in self.trained_roles_samples.items()
            }
        return out

    @classmethod
    def from_dict(cls, obj: dict) -> ChunkMeta:
        found = _loaded(obj, _META_ARRAYS)
        if "trained_roles_samples" in found:
            found["trained_roles_samples"] = {r: unarr(a) for r, a in found["trained_roles_samples"].items()}
        return cls(**found)

    def write(self, path: str) -> None:
        write(path, self.to_dict())

    @classmethod
    def read(cls, chunk_dir: str) -> ChunkMeta:
        """The meta of a chunk directory."""
        return cls.from_dict(read(meta_path(chunk_dir)))


@dataclass(frozen=True, slots=True)
class Skipped:
    """source.on_bad_record: skip: the records of an output left out, in input order (1-based lines)."""

    files: list[int]
    lines: list[int]
    classes: list[str]
    reasons: list[str]


@dataclass(frozen=True, slots=True)
class Take:
    """source.take: each chosen sample's repeat, what the manifest records (`take`), and where the write
    jobs find a chosen sample's tokens: its position among the chunks' samples (`take_src`), each chunk
    sample's unit among the output's sizes (`take_units`) and the samples per chunk (`take_chunks`)."""

    repeats: np.ndarray
    summary: dict
    src: np.ndarray
    units: np.ndarray
    chunks: list[int]


@dataclass(frozen=True, slots=True)
class Cut:
    """The samples units.overflow or source.drop_untrained cut: each one's status (units.packing's WRITTEN,
    DROPPED, TRUNCATED, UNTRAINED) and tokens written. Always there for packed rows."""

    overflow: str | None
    status: np.ndarray
    kept: np.ndarray


@dataclass(frozen=True, slots=True)
class Packing:
    """units.pack: the row length, the rows, and each sample's first slot in its row."""

    row_length: int
    n_rows: int
    offsets: np.ndarray


_PLAN_ARRAYS = {
    "lengths": np.uint32,
    "units": np.uint16,
    "rows": np.uint64,
    "files": np.uint32,
    "lines": np.uint64,
    "unk_samples": np.uint64,
    "unk_counts": np.uint32,
    "unk_positions": np.uint32,
    "trained": np.uint32,
    "offsets": np.uint32,
    "kept": np.uint32,
    "status": np.uint8,
    "repeats": np.uint32,
    "take_src": np.uint64,
    "take_units": np.uint16,
}
_PLAN_COLUMNS = ("unk_samples", "unk_counts", "unk_positions", "trained")


@dataclass(frozen=True, slots=True)
class Plan:
    """plan/o<out>.msgpack: an output's samples in sample_id order (docs/intermediates.md): units indexes
    into `sizes`; rows (packed rows only) each sample's global row. A sample's source file, line and digest
    stay in its chunk's meta, where the aggregate stage reads them."""

    output: int
    n: int
    sizes: list[int]
    samples_per_shard: int
    lengths: np.ndarray
    units: np.ndarray
    unk_samples: np.ndarray
    unk_counts: np.ndarray
    unk_positions: np.ndarray
    rows: np.ndarray | None = None  # units.pack: each sample's row
    trained: np.ndarray | None = None  # source.train_on: trained tokens per sample
    end_markers: dict[str, list[str]] | None = None  # source.train_eos: by file index
    empty_files: list[int] | None = None  # source.allow_empty: the files without a sample
    skipped: Skipped | None = None
    take: Take | None = None
    cut: Cut | None = None
    trained_roles: dict[str, int] | None = None  # source.chat: trained tokens per role, when none was cut
    packing: Packing | None = None

    def to_dict(self) -> dict:
        p, c = self.packing, self.cut
        cut = {}  # its overflow even when None (unit sizes with source.drop_untrained and overflow: error)
        if c is not None:
            cut = {"overflow": c.overflow, "status": arr(c.status, np.uint8), "kept": arr(c.kept, np.uint32)}
        out = {
            "output": self.output,
            "n": self.n,
            "sizes": self.sizes,
            "samples_per_shard": self.samples_per_shard,
        }
        if p is not None:  # packed rows: the layout after these, the cut beside the rows
            out |= {
                "layout": "packed",
                "row_length": p.row_length,
                "overflow": c.overflow,
                "n_rows": p.n_rows,
            }
        out |= _stored(self, _PLAN_ARRAYS, ("lengths", "units", "rows"))
        if p is not None:
            out |= {"offsets": arr(p.offsets, np.uint32), "kept": cut["kept"], "status": cut["status"]}
        out |= _stored(self, _PLAN_ARRAYS, _PLAN_COLUMNS + ("end_markers", "empty_files"))
        if self.skipped is not None:
            out["skipped"] = {f.name: getattr(self.skipped, f.name) for f in fields(Skipped)}
        if self.take is not None:
            t = self.take
            out |= {
                "repeats": arr(t.repeats, np.uint32),
                "take": t.summary,
                "take_src": arr(t.src, np.uint64),
                "take_units": arr(t.units, np.uint16),
                "take_chunks": t.chunks,
            }
        if p is None:
            out |= cut  # unit sizes: the cut after the take
        if self.trained_roles is not None:
            out["trained_roles"] = self.trained_roles
        return out

    @classmethod
    def from_dict(cls, obj: dict) -> Plan:
        found = _loaded(obj, _PLAN_ARRAYS)
        if found.pop("layout", None) == "packed":
            found["packing"] = Packing(found.pop("row_length"), found.pop("n_rows"), found.pop("offsets"))
        if "status" in found:
            found["cut"] = Cut(found.pop("overflow"), found.pop("status"), found.pop("kept"))
        if "skipped" in found:
            found["skipped"] = Skipped(**found["skipped"])
        if "take" in found:
            found["take"] = Take(
                found.pop("repeats"),
                found.pop("take"),
                found.pop("take_src"),
                found.pop("take_units"),
                found.pop("take_chunks"),
            )
        return cls(**found)

    def write(self, path: str) -> None:
        write(path, self.to_dict())

    @classmethod
    def read(cls, path: str) -> Plan:
        return cls.from_dict(read(path))


@dataclass(frozen=True, slots=True)
class UnitsSummary:
    """plan/o<out>.units.json: what the write jobs of an output write: its unit sizes (packed rows: the row
    length), the samples each holds (packed: the samples written), samples (rows) per shard, shards."""

    output: int
    sizes: list[int]
    counts: list[int]
    samples_per_shard: int
    shards: list[int]
    auto: dict | None  # units.sizes: auto, as declared
    rows: int | None = None  # units.pack: the rows
    take: bool = False  # source.take: the write jobs read the plan to find the chosen samples

    def to_json(self) -> str:
        out = {
            f: getattr(self, f) for f in ("output", "sizes", "counts", "samples_per_shard", "shards", "auto")
        }
        if self.rows is not None:
            out |= {"layout": "packed", "rows": self.rows}
        return json.dumps(out | ({"take": True} if self.take else {}))

    @classmethod
    def from_json(cls, text: str) -> UnitsSummary:
        found = json.loads(text)
        found.pop("layout", None)
        return cls(**found)

    def write(self, path: str) -> None:
        atomic_write_text(path, self.to_json())

    @classmethod
    def read(cls, path: str) -> UnitsSummary:
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())
