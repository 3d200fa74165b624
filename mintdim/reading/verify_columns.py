"""`mintdim verify`'s check of sample_index.idx (formats/sample_columns.py), the index the readers use,
against sample_index.jsonl as verify read and checked it: every column, sample by sample."""

from __future__ import annotations

import os

import numpy as np

from ..errors import MintDimError
from ..formats import sample_columns as sc
from .verify_common import Index, Report

JSONL = sc.JSONL


def check_sample_columns(out: str, idx: Index, report: Report, want: dict) -> None:
    """sample_index.idx against the columns sample_index.jsonl gives: `want` holds the layout's own columns
    (unit sizes: unit, shard, record; packed rows: shard, record, row_offset, row_samples, row_first), the
    rest come from `idx`. The first sample where a column differs is named, with the count that differ.
    An output built before sample_index.idx existed has none: a note says so."""
    path = os.path.join(out, sc.NAME)
    if not os.path.exists(path):
        report.notes.append(
            f"no {sc.NAME}: this output was built before MintDim wrote it, so its readers read {JSONL} "
            "(in a time that grows with its samples); rebuild it to open it in constant time"
        )
        return
    try:
        cols = sc.read(path)
    except MintDimError as exc:
        report.add(sc.NAME, exc.en.split(f"{sc.NAME} ", 1)[-1])
        return
    n = len(idx.tc)
    if cols.n != n:
        report.add(sc.NAME, f"holds {cols.n} samples, {JSONL} {n}")
        return
    expected = dict(want, **_common(idx, cols))
    valid = np.asarray(idx.valid, dtype=bool)
    for name, values in expected.items():
        got = getattr(cols, name)
        if got is None:
            if name in sc.REQUIRED[cols.layout] or np.any(values[valid] != 0):
                report.add(sc.NAME, f"has no column {name}; {JSONL} gives one")
            continue
        _compare(name, np.asarray(got), np.asarray(values), valid, report)


def _common(idx: Index, cols) -> dict:
    """The columns both layouts share, as sample_index.jsonl gives them (source_file: the index into
    sample_index.idx's own file names of the name the line gives; -1 for a name it does not list)."""
    status = np.asarray(idx.status, dtype=np.int64)
    names = {name: k for k, name in enumerate(cols.file_names)}
    number = np.asarray([names.get(f, -1) for f in idx.files] + [-1], dtype=np.int64)
    common = {
        "status": status,
        "token_count": idx.tc,
        "source_token_count": np.where(status != 0, idx.source_tc, idx.tc),
        "source_file": number[idx.file],  # (a file index of -1: the added last item)
        "source_line": idx.line,
        "repeat": idx.repeat,
    }
    if np.any(idx.trained >= 0) or cols.trained_tokens is not None:
        common["trained_tokens"] = idx.trained
    return common


def _compare(name: str, got: np.ndarray, want: np.ndarray, valid: np.ndarray, report: Report) -> None:
    """One column: a problem naming the first sample (or item) that differs, and how many do."""
    per_sample = len(want) == len(valid)
    if len(got) != len(want):
        report.add(sc.NAME, f"{name} has {len(got)} items, {JSONL} gives {len(want)}")
        return
    differ = got != want
    if per_sample:
        differ &= valid
    bad = np.flatnonzero(differ)
    if not len(bad):
        return
    i = int(bad[0])
    more = f" ({len(bad)} {'samples' if per_sample else 'items'} differ)" if len(bad) > 1 else ""
    what = name if per_sample else f"{name}[{i}]"  # a per-sample column names its sample in the problem
    report.add(
        sc.NAME, f"{what} is {int(got[i])}, {JSONL} gives {int(want[i])}{more}", i if per_sample else None
    )


def bucketed(idx: Index, sizes, sps: int) -> dict:
    """unit, shard and record as sample_index.jsonl places a sample of unit sizes: its records follow
    sample_id order within its unit (-1 for a sample in no unit)."""
    placed = ~np.isin(idx.status, sc.DROPPED)
    unit = np.where(placed, np.searchsorted(np.asarray(sizes), idx.unit), -1)
    rank = np.full(len(unit), -1, dtype=np.int64)
    for u in range(len(sizes)):
        members = np.flatnonzero(unit == u)
        rank[members] = np.arange(len(members))
    return {
        "unit": unit,
        "shard": np.where(placed, rank // sps, -1),
        "record": np.where(placed, rank % sps, -1),
    }


def packed(idx, sps: int, order, first) -> dict:
    """shard, record, row_offset, row_samples and row_first as sample_index.jsonl places packed samples
    (idx.row: a sample's row, -1 for none; order / first: the rows verify recomputed)."""
    placed = idx.row >= 0
    return {
        "shard": np.where(placed, idx.row // sps, -1),
        "record": np.where(placed, idx.row % sps, -1),
        "row_offset": np.where(placed, idx.offset, -1),
        "row_samples": order,
        "row_first": first,
    }
