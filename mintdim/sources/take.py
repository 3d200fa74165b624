"""source.take: which samples of each file an output holds, exactly and reproducibly.

take (per file) is a fraction of the file's samples (a float: the count is take x available,
rounded to the nearest int, halves up) or exactly that many samples (an int). With
count = R x available + r (0 <= r < available), the file contributes its samples R whole times
over (repeats 0..R-1, each in input order), then r of them chosen without replacement (repeat R,
in input order). A repeat is a new sample: its own sample_id, the same source line or row.

The choice of the r: PCG64 seeded with numpy's SeedSequence([seed, file_index]) (file_index: the
file's position in source.files) draws one 64-bit key per sample with random_raw (a bit generator's
raw stream is fixed for its seed in every numpy version); the r samples with the smallest
(key, position) are chosen. So the same seed gives the same samples, another seed the same counts.
"""

from __future__ import annotations

import math

import numpy as np


def count(take, available: int) -> int:
    """How many samples a take asks of a file of `available` samples."""
    if isinstance(take, int):
        return take
    return math.floor(take * available + 0.5)


def choose(seed: int, file_index: int, available: int, remainder: int) -> np.ndarray:
    """Positions (0-based, ascending) of the `remainder` samples chosen among `available`."""
    if remainder <= 0:
        return np.zeros(0, dtype=np.int64)
    keys = np.random.PCG64(np.random.SeedSequence([seed, file_index])).random_raw(available)
    order = np.lexsort((np.arange(available), keys))  # smallest key first, ties by position
    return np.sort(order[:remainder]).astype(np.int64)


def select(take, available: int, seed: int, file_index: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, repeats) of the file's samples in the output, in output order. A count on a file
    without samples is refused in pre-flight; here it is an empty selection's caller's error."""
    total = count(take, available)
    if available == 0 or total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    whole, remainder = divmod(total, available)
    chosen = choose(seed, file_index, available, remainder)
    positions = np.concatenate([np.tile(np.arange(available, dtype=np.int64), whole), chosen])
    repeats = np.concatenate(
        [np.repeat(np.arange(whole, dtype=np.int64), available), np.full(len(chosen), whole, dtype=np.int64)]
    )
    return positions, repeats


def summary(path: str, file_index: int, take, available: int) -> dict:
    """The manifest's record of one file's take."""
    total = count(take, available)
    return {
        "file": path,
        "file_index": file_index,
        "take": take,
        "available": available,
        "taken": total,
        "whole_repeats": total // available if available else 0,
    }
