"""Packed rows: assign samples to fixed-length rows (the plan stage), from token counts alone.

The algorithm is best-fit decreasing (BFD), exact, over capacity classes: rows are grouped by
their remaining capacity (an integer 0..row_length), and samples are taken longest first (ties
by sample id). A sample goes into the row with the smallest remaining capacity that still holds
it; a new row is opened only when no row does. Equal-length samples are placed in bulk: the
best-fitting class c takes q = c // length of them per row (the next sample of that length
would best-fit the same row again, since c - length < c was the smallest class that fits), so
the loop runs once per (length, capacity class) step, not once per sample; each step moves
numpy arrays of row ids. Ties between rows of one capacity: the row that reached it first.

Within a row, samples are stored in ascending sample_id order (not in packing order), and rows
are numbered by their smallest sample_id: row 0 holds sample 0, and reading rows in order
visits samples roughly in input order. The result depends only on the lengths in sample_id
order, never on --cores or the chunking. Memory is linear in the sample count (a few int64
arrays); see docs/packing.md and benchmarks/pack_plan.py for the figures.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

OVERFLOW = ("error", "drop", "truncate")
# The tokenize stage's single unit size when overflow is drop or truncate: no sample reaches it, so
# every sample goes to one stream (u1099511627776.msgpack) and the plan applies the policy.
NO_LIMIT = 2**40
WRITTEN, DROPPED, TRUNCATED = 0, 1, 2  # per-sample status in the plan
UNTRAINED = 3  # source.drop_untrained: left out, its loss mask trains no token (in no unit, row or shard)
LEFT_OUT = (DROPPED, UNTRAINED)  # statuses of a sample that is in no row


@dataclass
class Packing:
    row_length: int
    rows: np.ndarray  # (n,) int64: global row of each sample (-1: dropped)
    offsets: np.ndarray  # (n,) int64: first slot of each sample in its row
    kept: np.ndarray  # (n,) int64: tokens written (truncated samples: row_length; dropped: 0)
    status: np.ndarray  # (n,) uint8: WRITTEN, DROPPED, TRUNCATED, UNTRAINED
    n_rows: int

    @property
    def tokens(self) -> int:
        return int(self.kept.sum())

    @property
    def slots(self) -> int:
        return self.n_rows * self.row_length

    @property
    def efficiency(self) -> float:
        """tokens / slots of the rows (1.0 for no rows)."""
        return self.tokens / self.slots if self.slots else 1.0

    @property
    def lower_bound(self) -> int:
        """ceil(tokens / row_length): no packing has fewer rows."""
        return -(-self.tokens // self.row_length)


class _Classes:
    """Rows by remaining capacity: per capacity a FIFO of row-id arrays; the non-empty capacities sorted."""

    def __init__(self):
        self.parts: dict[int, list] = {}  # capacity -> [list of arrays, head offset into the first, count]
        self.nonempty: list[int] = []

    def add(self, cap: int, ids: np.ndarray) -> None:
        if not len(ids):
            return
        entry = self.parts.get(cap)
        if entry is None:
            self.parts[cap] = [[ids], 0, len(ids)]
            bisect.insort(self.nonempty, cap)
        else:
            entry[0].append(ids)
            entry[2] += len(ids)

    def best(self, length: int) -> int | None:
        """The smallest capacity >= length that has rows."""
        i = bisect.bisect_left(self.nonempty, length)
        return self.nonempty[i] if i < len(self.nonempty) else None

    def count(self, cap: int) -> int:
        return self.parts[cap][2]

    def take(self, cap: int, k: int) -> np.ndarray:
        """The first k rows of a capacity (FIFO), removed from it."""
        arrays, head, count = self.parts[cap]
        out, need = [], k
        while need:
            first = arrays[0]
            avail = len(first) - head
            if avail <= need:
                out.append(first[head:])
                arrays.pop(0)
                head = 0
                need -= avail
            else:
                out.append(first[head : head + need])
                head += need
                need = 0
        if count == k:
            del self.parts[cap]
            self.nonempty.remove(cap)
        else:
            self.parts[cap][1] = head
            self.parts[cap][2] = count - k
        return out[0] if len(out) == 1 else np.concatenate(out)


def assign(lengths, row_length: int) -> tuple[np.ndarray, int]:
    """Best-fit decreasing: the row of every sample (in packing numbering) and the number of rows.
    Every length must be <= row_length."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    C = int(row_length)
    if n and (lengths.max() > C or lengths.min() < 0):
        raise ValueError(f"every length must be in 0..{C}")
    # longest first, ties by sample id: a stable sort of C - length (a radix sort when it fits 16 bits)
    key = (C - lengths).astype(np.uint16 if C < 2**16 else np.int64)
    order = np.argsort(key, kind="stable")
    del key
    per_length = np.bincount(lengths, minlength=C + 1)[::-1]  # samples per length, longest first
    bounds = np.concatenate(([0], np.cumsum(per_length)))
    classes = _Classes()
    n_rows = 0
    placed_items, placed_rows = [], []
    for g in np.flatnonzero(per_length).tolist():
        length = C - g
        items = order[bounds[g] : bounds[g + 1]]
        p, m = 0, len(items)
        while p < m:
            left = m - p
            cap = classes.best(length)
            if cap is None:  # open new rows, each taking q samples of this length
                cap = C
                q = C // length if length else left
                k = -(-left // q)
                ids = np.arange(n_rows, n_rows + k, dtype=np.int64)
                n_rows += k
            else:
                q = cap // length if length else left
                k = min(classes.count(cap), -(-left // q))
                ids = classes.take(cap, k)
            take = min(left, k * q)
            placed_items.append(items[p : p + take])
            placed_rows.append(np.repeat(ids, q)[:take])
            full, last = divmod(take, q)  # rows that took q samples; the last one may take fewer
            classes.add(cap - q * length, ids[:full])
            if last:
                classes.add(cap - last * length, ids[full:])
            p += take
    row_of = np.empty(n, dtype=np.int64)
    if n:
        row_of[np.concatenate(placed_items)] = np.concatenate(placed_rows)
    return row_of, n_rows


def layout(row_of: np.ndarray, lengths: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows renumbered by their smallest sample id, samples in sample-id order inside a row:
    (row, offset) of every sample."""
    n = len(row_of)
    if not n:
        return row_of.copy(), np.zeros(0, dtype=np.int64)
    order = np.argsort(row_of, kind="stable")  # by row, then sample id
    counts = np.bincount(row_of, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    renumber = np.empty(n_rows, dtype=np.int64)
    renumber[np.argsort(order[starts])] = np.arange(n_rows, dtype=np.int64)  # by smallest sample id
    rows = renumber[row_of]
    before = np.cumsum(lengths[order]) - lengths[order]  # tokens before each sample, in this order
    offsets = np.empty(n, dtype=np.int64)
    offsets[order] = before - np.repeat(before[starts], counts)
    return rows, offsets


def plan(lengths, row_length: int, overflow: str = "error", untrained=None) -> Packing:
    """Apply the overflow policy, then pack. `overflow: error` expects no sample above row_length
    (the tokenize stage already raised UnitOverflowError). untrained (source.drop_untrained): a bool per
    sample, True for one to leave out (UNTRAINED) unless the overflow policy dropped it already."""
    lengths = np.asarray(lengths, dtype=np.int64)
    C = int(row_length)
    over = lengths > C
    status = np.zeros(len(lengths), dtype=np.uint8)
    kept = lengths.copy()
    if over.any():
        if overflow == "drop":
            status[over] = DROPPED
            kept[over] = 0
        elif overflow == "truncate":
            status[over] = TRUNCATED
            kept[over] = C
        else:
            raise ValueError(f"{int(over.sum())} samples are longer than the row length {C}")
    if untrained is not None:
        gone = np.asarray(untrained, dtype=bool) & (status != DROPPED)
        status[gone] = UNTRAINED
        kept[gone] = 0
    live = np.flatnonzero(~np.isin(status, LEFT_OUT))
    row_of, n_rows = assign(kept[live], C)
    rows_live, offsets_live = layout(row_of, kept[live], n_rows)
    rows = np.full(len(lengths), -1, dtype=np.int64)
    offsets = np.zeros(len(lengths), dtype=np.int64)
    rows[live] = rows_live
    offsets[live] = offsets_live
    return Packing(C, rows, offsets, kept, status, n_rows)


def row_boundaries(rows: np.ndarray, offsets: np.ndarray, kept: np.ndarray, n_rows: int):
    """Per row, in row order: (samples per row, the sample ids ordered by row then offset)."""
    live = np.flatnonzero(rows >= 0)
    order = live[np.lexsort((offsets[live], rows[live]))]
    per_row = np.bincount(rows[live], minlength=n_rows)
    return per_row, order
