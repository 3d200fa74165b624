"""Padding: measure it for a set of unit sizes, and find the unit sizes that minimise it.

The optimiser is exact. A unit of size s holding the samples whose lengths
fall in (previous size, s] costs g(s) per sample, where g(s) = s (token slots)
or s * s (attention cost grows with the square of the length). Optimal sizes
are always among the "candidates": each distinct length rounded up to the
required multiple (and raised to the minimum), since shrinking a unit to the
longest sample it holds never costs more. Over the candidates the cost
w(i, j) = g(c_j) * (N_j - N_i) satisfies the Monge (quadrangle) inequality
because g grows and N is cumulative, so the best previous cut is monotone in
j and each of the K layers of the dynamic programme is solved by divide and
conquer in O(n log n), here vectorised level by level with numpy. Integer
arithmetic throughout: no rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

COSTS = ("linear", "attention")
_INF = np.int64(2**62)


@dataclass
class UnitPadding:
    size: int
    samples: int
    tokens: int
    slots: int

    @property
    def pad_tokens(self) -> int:
        return self.slots - self.tokens

    @property
    def padding_ratio(self) -> float:
        return self.pad_tokens / self.slots if self.slots else 0.0


@dataclass
class PaddingReport:
    units: list[UnitPadding]

    @property
    def total_slots(self) -> int:
        return sum(u.slots for u in self.units)

    @property
    def total_tokens(self) -> int:
        return sum(u.tokens for u in self.units)

    @property
    def pad_tokens(self) -> int:
        return self.total_slots - self.total_tokens

    @property
    def padding_ratio(self) -> float:
        return self.pad_tokens / self.total_slots if self.total_slots else 0.0

    def as_stats(self) -> dict:
        """The extension block stats.json carries (the spec's keys are untouched)."""
        return {
            "total_slots": self.total_slots,
            "pad_tokens": self.pad_tokens,
            "padding_ratio": self.padding_ratio,
            "per_unit": {
                str(u.size): {
                    "samples": u.samples,
                    "tokens": u.tokens,
                    "slots": u.slots,
                    "pad_tokens": u.pad_tokens,
                    "padding_ratio": u.padding_ratio,
                }
                for u in self.units
            },
        }


def largest_size(auto: dict | None) -> int | None:
    """The largest unit size `sizes: auto` may plan (its max_size rounded down to multiple_of), which
    bounds a sample as the largest declared size does; None: no bound."""
    if not auto or not auto.get("max_size"):
        return None
    m = max(1, int(auto.get("multiple_of") or 1))
    return int(auto["max_size"]) // m * m or int(auto["max_size"])


HISTOGRAM_BLOCK = 1 << 16  # lengths counted at a time
HISTOGRAM_BINS = 1 << 24  # longest length counted in bins; a longer one: np.unique


def histogram(lengths) -> tuple[np.ndarray, np.ndarray]:
    """Distinct token lengths and how many samples have each (int64 both), in ascending order. Counted
    a block at a time into one bin per length, so no copy of the lengths is made."""
    lengths = np.asarray(lengths)
    if not len(lengths) or lengths.min() < 0 or lengths.max() > HISTOGRAM_BINS:
        values, counts = np.unique(lengths.astype(np.int64), return_counts=True)
        return values, counts.astype(np.int64)
    bins = np.zeros(int(lengths.max()) + 1, dtype=np.int64)
    for start in range(0, len(lengths), HISTOGRAM_BLOCK):
        block = lengths[start : start + HISTOGRAM_BLOCK].astype(np.int64, copy=False)
        bins += np.bincount(block, minlength=len(bins))
    values = np.flatnonzero(bins)
    return values.astype(np.int64), bins[values]


def measure(values, counts, sizes) -> PaddingReport:
    """Padding of a length histogram packed into `sizes` (smallest fitting unit)."""
    values = np.asarray(values, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    sizes = [int(s) for s in sizes]
    if len(values) and values[-1] > sizes[-1]:
        raise ValueError(f"a sample of {int(values[-1])} tokens does not fit the largest unit {sizes[-1]}")
    unit = np.searchsorted(np.asarray(sizes), values, side="left")
    samples = np.bincount(unit, weights=counts, minlength=len(sizes)).astype(np.int64)
    tokens = np.bincount(unit, weights=counts * values, minlength=len(sizes)).astype(np.int64)
    return PaddingReport(
        [UnitPadding(s, int(n), int(t), int(n) * s) for s, n, t in zip(sizes, samples, tokens)]
    )


@dataclass
class Suggestion:
    sizes: list[int]
    cost: str
    report: PaddingReport
    objective: int  # total cost in the chosen model (slots, or sum of size^2 per sample)
    candidates: int
    note: str = ""
    by_k: dict = field(default_factory=dict)  # k -> padding ratio, when searched by max_padding


def _candidates(
    values: np.ndarray, counts: np.ndarray, multiple_of: int, min_size: int | None, max_size: int | None
) -> tuple[np.ndarray, np.ndarray]:
    m = max(1, int(multiple_of))
    need = np.maximum(values, min_size or 1)
    cand = -(-need // m) * m
    cand = np.maximum(cand, m)
    sizes, inverse = np.unique(cand, return_inverse=True)
    weights = np.bincount(inverse, weights=counts, minlength=len(sizes)).astype(np.int64)
    if max_size is not None and len(sizes) and sizes[-1] > max_size:
        raise AboveMax(int(values[-1]), int(sizes[-1]), int(max_size))
    return sizes.astype(np.int64), weights


class AboveMax(ValueError):
    """The longest sample needs a unit above max_size."""

    def __init__(self, longest: int, needed: int, max_size: int):
        self.longest, self.needed, self.max_size = longest, needed, max_size
        super().__init__(
            f"the longest sample ({longest} tokens) needs a unit of {needed}, above --max {max_size}"
        )


def _gain(sizes: np.ndarray, cost: str) -> np.ndarray:
    if cost == "linear":
        return sizes
    if cost == "attention":
        return sizes * sizes
    raise ValueError(f"cost must be one of {COSTS}, got {cost!r}")


def _layer(prev: np.ndarray, N: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F[j] = min_{i<j} prev[i] + g[j] * (N[j] - N[i]); opt(j) is monotone, so divide and conquer,
    all intervals of one recursion depth at once."""
    n = len(N)
    F = np.full(n, _INF, dtype=np.int64)
    A = np.zeros(n, dtype=np.int64)
    lo, hi = np.array([0]), np.array([n - 1])
    olo, ohi = np.array([0]), np.array([n - 1])
    while lo.size:
        mid = (lo + hi) // 2
        top = np.minimum(ohi, mid - 1)
        span = np.maximum(top - olo + 1, 0)
        has = span > 0
        best_i = olo.copy()
        if has.any():
            seg = np.repeat(np.arange(len(mid))[has], span[has])
            starts = np.concatenate(([0], np.cumsum(span[has])[:-1]))
            offs = np.arange(len(seg)) - np.repeat(starts, span[has])
            i = np.repeat(olo[has], span[has]) + offs
            j = np.repeat(mid[has], span[has])
            val = np.where(prev[i] >= _INF, _INF, prev[i] + g[j] * (N[j] - N[i]))
            order = np.lexsort((i, val, seg))  # per segment: smallest value, then smallest i
            first = np.concatenate(([True], seg[order][1:] != seg[order][:-1]))
            pick = order[first]
            F[mid[has]] = val[pick]
            best_i[has] = i[pick]
        A[mid] = best_i
        # children: left [lo, mid-1] with opt in [olo, best], right [mid+1, hi] with opt in [best, ohi]
        left = mid - 1 >= lo
        right = mid + 1 <= hi
        lo, hi, olo, ohi = (
            np.concatenate((lo[left], mid[right] + 1)),
            np.concatenate((mid[left] - 1, hi[right])),
            np.concatenate((olo[left], best_i[right])),
            np.concatenate((best_i[left], ohi[right])),
        )
    return F, A


def _solve(sizes: np.ndarray, weights: np.ndarray, k: int, cost: str):
    """All layers up to k: (F_t[-1] for t = 1..k, backtrack tables)."""
    g = _gain(sizes, cost)
    N = np.cumsum(weights)
    F = g * N  # one unit: the candidate j covers everything up to it
    finals, tables = [int(F[-1])], []
    for _ in range(1, min(k, len(sizes))):
        F, A = _layer(F, N, g)
        finals.append(int(F[-1]))
        tables.append(A)
    return finals, tables


def _backtrack(sizes: np.ndarray, tables: list[np.ndarray], t: int) -> list[int]:
    j = len(sizes) - 1
    chosen = [j]
    for layer in range(t - 1, 0, -1):
        j = int(tables[layer - 1][j])
        chosen.append(j)
    return [int(sizes[c]) for c in reversed(chosen)]


def suggest(
    lengths=None,
    *,
    values=None,
    counts=None,
    k: int | None = None,
    multiple_of: int = 1,
    min_size: int | None = None,
    max_size: int | None = None,
    max_padding: float | None = None,
    cost: str = "linear",
    k_limit: int = 64,
) -> Suggestion:
    """The unit sizes that minimise total cost for this length distribution.

    Give `k` (exactly that many sizes, fewer only when fewer candidates exist), or
    `max_padding` (the smallest k whose optimal sizes reach that padding ratio).
    """
    if values is None:
        values, counts = histogram(lengths)
    values = np.asarray(values, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if not len(values):
        raise ValueError("no samples: nothing to plan")
    if k is None and max_padding is None:
        raise ValueError("give k or max_padding")
    sizes, weights = _candidates(values, counts, multiple_of, min_size, max_size)
    note = ""
    if max_padding is not None:
        finals, tables = _solve(sizes, weights, min(k_limit, len(sizes)), cost)
        by_k, chosen_t = {}, None
        for t in range(1, len(finals) + 1):
            plan = _backtrack(sizes, tables, t)
            ratio = measure(values, counts, plan).padding_ratio
            by_k[t] = ratio
            if ratio <= max_padding:
                chosen_t = t
                break
        if chosen_t is None:
            chosen_t = len(finals)
            note = f"no k up to {chosen_t} reaches padding {max_padding}; the best found is shown"
        plan = _backtrack(sizes, tables, chosen_t)
        rep = measure(values, counts, plan)
        return Suggestion(plan, cost, rep, finals[chosen_t - 1], len(sizes), note, by_k)
    k = int(k)
    if k < 1:
        raise ValueError("k must be a positive integer")
    finals, tables = _solve(sizes, weights, k, cost)
    t = len(finals)
    if t < k:
        note = f"only {t} distinct candidate sizes exist; all are used"
    plan = _backtrack(sizes, tables, t)
    return Suggestion(plan, cost, measure(values, counts, plan), finals[-1], len(sizes), note)


def objective(values, counts, sizes, cost: str = "linear") -> int:
    """Total cost of packing the histogram into `sizes` (for comparisons and tests)."""
    values = np.asarray(values, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    s = np.asarray(sizes, dtype=np.int64)
    unit = np.searchsorted(s, values, side="left")
    return int((_gain(s, cost)[unit] * counts).sum())
