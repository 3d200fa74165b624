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

import os

import msgpack
import numpy as np

from ..files import open_pieces

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
