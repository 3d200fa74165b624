"""msgpack intermediates between stages: flat numpy arrays stored as raw bytes.

Flat token bytes plus a lengths array are smaller than lists of id lists and
unpack without per-token Python objects (np.frombuffer on the bytes).
"""

from __future__ import annotations

import os

import msgpack
import numpy as np

FORMAT_VERSION = 1


def arr(a: np.ndarray, dtype) -> dict:
    a = np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": a.dtype.str, "data": a.tobytes()}


def unarr(d: dict) -> np.ndarray:
    return np.frombuffer(d["data"], dtype=np.dtype(d["dtype"]))


def write(path: str, obj: dict) -> None:
    """Write atomically: a killed job never leaves a half file under the final name."""
    obj = {"format": FORMAT_VERSION, **obj}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(msgpack.packb(obj, use_bin_type=True))
    os.replace(tmp, path)


def read(path: str) -> dict:
    with open(path, "rb") as f:
        return msgpack.unpackb(f.read(), raw=False)


class StreamWriter:
    """A msgpack stream: one object appended per batch, so a chunk's tokens never sit in memory whole.

    Written under a temporary name and renamed by close(), like write()."""

    def __init__(self, path: str):
        self.path = path
        self._tmp = f"{path}.tmp{os.getpid()}"
        self._fh = open(self._tmp, "wb")
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
