"""The output's JSON files and JSONL indexes, exactly in the spec's shapes.

JSON is written UTF-8 with sorted-free, stable key order (the spec's order);
JSONL one object per line. Nothing here depends on time, host or work paths.
"""

from __future__ import annotations

import os

import numpy as np
import orjson

_JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def write_json(path: str, obj) -> None:
    with open(path, "wb") as f:
        f.write(orjson.dumps(obj, option=_JSON_OPTS))


class JsonlWriter:
    def __init__(self, path: str, flush_every: int = 4096):
        self._fh = open(path, "wb")
        self._buf: list[bytes] = []
        self._every = flush_every

    def write(self, obj) -> None:
        self._buf.append(orjson.dumps(obj))
        if len(self._buf) >= self._every:
            self._flush()

    def _flush(self) -> None:
        if self._buf:
            self._fh.write(b"\n".join(self._buf) + b"\n")
            self._buf = []

    def close(self) -> None:
        self._flush()
        self._fh.close()


def duplicate_groups(digests: np.ndarray) -> list[np.ndarray]:
    """Groups of sample ids sharing one digest (n x 32 uint8), 2+ members, ordered by first sample id."""
    n = len(digests)
    if n < 2:
        return []
    words = np.ascontiguousarray(digests).view(">u8").reshape(n, 4)
    # Sort on the first 8 bytes only (4x faster than sorting whole digests): SHA-256 bytes are
    # uniform, so equal first words mean equal digests unless two differ only further on, which
    # the check below catches, falling back to the whole-digest sort. Stable: ties keep sample order.
    order = np.argsort(words[:, 0].astype(np.uint64), kind="stable")
    ordered = words[order]
    same = np.all(ordered[1:] == ordered[:-1], axis=1)
    if not np.array_equal(same, ordered[1:, 0] == ordered[:-1, 0]):
        order = np.lexsort((words[:, 3], words[:, 2], words[:, 1], words[:, 0]))
        ordered = words[order]
        same = np.all(ordered[1:] == ordered[:-1], axis=1)
    if not same.any():
        return []
    groups = []
    # runs of True in `same` mark consecutive equal digests; a run's ids ascend (stable sorts)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))))
    for start, stop in zip(edges[::2], edges[1::2]):
        groups.append(order[start:stop + 1])
    groups.sort(key=lambda m: int(m[0]))
    return groups


def relpath_join(*parts: str) -> str:
    return "/".join(parts).replace(os.sep, "/")
