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
