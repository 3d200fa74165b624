"""`mintdim verify` for an output of packed rows (units.pack); see mintdim/reading/verify.py.

Names and the on-disk layout come from formats/shards.py and formats/output.py; every figure is
recomputed from the files:

- sample_index.jsonl: ids in order; unit_size = the row length; a sample without `overflow`
  fits a row (token_count <= row length); `dropped`: token_count 0, no shard, row or offset,
  source_token_count above the row length; `truncated`: token_count = the row length; only the
  manifest's policy occurs. shard_path / shard_row / row_offset place the samples of every row
  back to back from slot 0, in sample_id order, rows numbered by their smallest sample id,
  rows 0..R-1 all used, samples_per_shard rows per shard.
- sample_index.idx: every column agrees with sample_index.jsonl (verify_columns.py).
- shards: ceil(R / samples_per_shard) files of rows * row_length * bytes_per_token bytes; every
  slot after a row's last sample holds pad_id; tokens inside the vocabulary; UNK positions read back.
- cu_XXXXXX.bin: exactly R_k + 1 row pointers and, per row, [0, ends of its samples] as the index gives.
- mask_XXXXXX.bin (source.train_on): rows * ceil(row_length / 8) bytes, no bit after a row's
  tokens, trained_tokens of every sample = its bits.
- histogram.json, stats.json (spec keys, shards, padding, packing), duplicate and UNK indexes.
- with source=True: every line re-rendered and re-hashed, a sample of samples re-encoded: the
  encoder's count is token_count (or source_token_count) and the row holds its first tokens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..formats import output as fmt
from ..formats import shards as fs
from ..formats.checksums import NAME as CHECKSUMS
from ..formats.output import INDEX_FILES
from ..formats.records import EMPTY_MARKER, FAILED_MARKER
from . import verify_columns
from .verify_columns import check_sample_columns
from .verify_common import (
    BLOCK_ROWS,
    Index,
    check_duplicates,
    check_empty_files,
    check_histogram,
    check_origin,
    check_skipped,
    check_trained,
    check_unk,
    compare_stats,
    is_int,
    jsonl_rows,
    overflow_of,
    overflow_policy,
    spec_stats,
)
from .verify_source import check_source


def verify_packed(
    out: str,
    manifest: dict,
    histogram,
    stats,
    m,
    report,
    source: bool,
    all_samples: bool,
    sample: int,
    root,
    seed: int,
):
    """verify.verify for an output of packed rows: `m` is what verify's manifest check gave."""
    sizes, sps, dtype, _pad, _unk, _vocab, files = m
    L = (manifest.get("units") or {}).get("row_length")
    if not is_int(L) or sizes != [L]:
        report.add(fmt.MANIFEST, f"units.row_length {L!r} does not match units.sizes {sizes!r}")
        return report
    policy = overflow_policy(manifest, report)
    has_masks = "loss_mask" in manifest
    _check_entries(out, fs.unit_dir(L), report, fmt.index_files(manifest))
    idx = _read_index(out, L, sps, files, policy, report)
    report.samples = len(idx.tc)
    rows = _recompute_rows(idx, L, report)
    check_sample_columns(out, idx, report, verify_columns.packed(idx, sps, rows.order, rows.first))
    found_unk, trained_found = _check_row_files(out, m, L, idx, rows, has_masks, report)
    if has_masks:
        check_trained(idx, trained_found, stats, report, manifest)
    dist = {str(L): int(np.count_nonzero(~np.isin(idx.status, (1, 3))))}  # the samples written
    check_histogram(histogram, dist, "the samples written", report)
    dup_groups = check_duplicates(out, idx, files, report)
    check_unk(out, idx, files, found_unk, report)
    check_skipped(out, manifest, stats, idx, report)  # source.on_bad_record: skip
    if isinstance(stats, dict):
        _check_stats(stats, idx, rows.count, L, dist, m, dup_groups, found_unk, policy, report)
    elif stats is not None:
        report.add(fmt.STATS, "is not a JSON object")
    if source:
        _recheck_source(out, manifest, idx, L, sps, dtype, report, all_samples, sample, root, seed)
    return report


def _check_entries(out: str, unit: str, report, index_files=INDEX_FILES) -> None:
    """The output directory holds the rows' directory and the index files, nothing else."""
    for name in sorted(os.listdir(out)):
        if name != unit and name not in index_files and name != CHECKSUMS:
            report.add(
                name,
                f"unexpected entry in the output directory (packed rows: only {unit} and the index files)",
            )
    if not os.path.isdir(os.path.join(out, unit)):
        report.add(unit, "the rows' directory is missing")


# --- sample_index.jsonl -------------------------------------------------------------------------------------


class _Placed(Index):
    """sample_index.jsonl of packed rows as columns: Index's (status and source_tc as for unit sizes),
    each sample's row (-1: none), its first slot in that row."""

    def __init__(self, n: int):
        super().__init__(n)
        self.row = np.full(n, -1, dtype=np.int64)
        self.offset = np.zeros(n, dtype=np.int64)


def _read_index(out: str, L: int, sps: int, files, policy: str, report) -> _Placed:
    """Every line: its id, unit_size (the row length), token_count, overflow keys, place and origin."""
    rows = list(jsonl_rows(out, fmt.SAMPLE_INDEX, report))
    idx = _Placed(len(rows))
    idx.files = list(files)
    file_of = {f: i for i, f in enumerate(files)}
    name = fmt.SAMPLE_INDEX
    last = (-1, 0, 0)
    for i, (line_no, obj) in enumerate(rows):
        if obj is None:
            continue
        if obj.get("sample_id") != i:
            report.add(name, f"line {line_no}: sample_id {obj.get('sample_id')!r}, expected {i}", i)
        tc, over = obj.get("token_count"), obj.get("overflow")
        if not is_int(tc) or tc < 0:
            report.add(name, f"token_count {tc!r} is not a non-negative int", i)
            continue
        if obj.get("unit_size") != L:
            report.add(name, f"unit_size {obj.get('unit_size')!r} is not the row length {L}", i)
        loc = (obj.get("shard_path"), obj.get("shard_row"), obj.get("row_offset"))
        idx.status[i] = overflow_of(obj, i, tc, L, policy, "a row of", report)  # the keys as for unit sizes
        if over is None and tc > L:
            report.add(name, f"token_count {tc} does not fit a row of {L}", i)
        stc = obj.get("source_token_count")
        if is_int(stc) and ((over is not None and stc > L) or idx.status[i] == 3):  # 3: drop_untrained
            idx.source_tc[i] = stc
        _place(idx, i, loc, fs.unit_dir(L), sps, report)
        h, fi, line, last = check_origin(obj, i, file_of, last, report, idx)
        if is_int(obj.get("trained_tokens")):
            idx.trained[i] = obj["trained_tokens"]
        idx.tc[i], idx.unit[i], idx.line[i], idx.file[i] = tc, L, line, fi
        idx.hashes[i] = h
        idx.shard_path[i] = loc[0] if isinstance(loc[0], str) else ""
        idx.shard_row[i] = loc[1] if is_int(loc[1]) else -1
        idx.valid[i] = True
    return idx


def _place(idx: _Placed, i: int, loc: tuple, unit: str, sps: int, report) -> None:
    """A sample's (shard_path, shard_row, row_offset): none for a dropped sample, else a row of `unit`."""
    if idx.status[i] in (1, 3):  # dropped (units.overflow, source.drop_untrained)
        if loc != (None, None, None):
            report.add(fmt.SAMPLE_INDEX, f"dropped sample has a place in the rows {loc}", i)
        return
    path, row, offset = loc
    k = (
        fs.shard_index(path[len(unit) + 1 :])
        if isinstance(path, str) and path.startswith(unit + "/")
        else None
    )
    if k is None or not is_int(row) or not is_int(offset) or not 0 <= row < sps or offset < 0:
        report.add(fmt.SAMPLE_INDEX, f"shard_path/shard_row/row_offset {loc} do not name a row of {unit}", i)
    else:
        idx.row[i], idx.offset[i] = k * sps + row, offset


# --- the rows, recomputed from the index --------------------------------------------------------------------


@dataclass
class _Rows:
    """The rows as the index places the samples."""

    count: int
    order: np.ndarray  # the placed sample ids, by row, then offset
    per_row: np.ndarray  # samples per row
    first: np.ndarray  # each row's first entry in `order` (count + 1 values)
    ends: np.ndarray  # each sample's end slot (offset + token_count)
    used: np.ndarray  # slots each row's samples fill

    def samples(self, r: int) -> np.ndarray:
        return self.order[self.first[r] : self.first[r + 1]]


def _recompute_rows(idx: _Placed, L: int, report) -> _Rows:
    """Rows 0..R-1 all used, numbered by their smallest sample id, each checked by _check_row."""
    name = fmt.SAMPLE_INDEX
    live = np.flatnonzero(idx.row >= 0)
    order = live[np.lexsort((idx.offset[live], idx.row[live]))]
    n_rows = int(idx.row.max()) + 1 if len(live) else 0
    per_row = np.bincount(idx.row[live], minlength=n_rows)
    rows = _Rows(
        n_rows,
        order,
        per_row,
        np.concatenate(([0], np.cumsum(per_row))),
        idx.offset + idx.tc,
        np.zeros(n_rows, dtype=np.int64),
    )
    for r in np.flatnonzero(per_row == 0).tolist():
        report.add(name, f"row {r} holds no sample (rows are numbered 0..{n_rows - 1} without gaps)")
    smallest = np.full(n_rows, len(idx.tc), dtype=np.int64)
    for r in np.flatnonzero(per_row).tolist():
        ids = rows.samples(r)
        _check_row(r, ids, idx.offset, rows.ends, L, report)
        rows.used[r] = min(int(rows.ends[ids[-1]]), L)
        smallest[r] = ids.min()
    if np.any(np.diff(smallest) < 0):
        report.add(name, "rows are not numbered by their smallest sample_id")
    return rows


def _check_row(r: int, ids, offset, ends, L: int, report) -> None:
    """One row's samples: back to back from slot 0, in sample_id order, ending within the row."""
    name = fmt.SAMPLE_INDEX
    want = np.concatenate(([0], ends[ids][:-1]))
    bad = np.flatnonzero(offset[ids] != want)
    if len(bad):
        sid = int(ids[bad[0]])
        report.add(
            name,
            f"row {r}: row_offset {int(offset[sid])}, expected {int(want[bad[0]])} "
            "(samples back to back from slot 0)",
            sid,
        )
    if np.any(np.diff(ids) < 0):
        report.add(name, f"row {r}: samples are not in sample_id order", int(ids[0]))
    if ends[ids[-1]] > L:
        report.add(
            name,
            f"row {r}: its samples end at slot {int(ends[ids[-1]])}, beyond the row length {L}",
            int(ids[-1]),
        )


# --- shards, boundaries, masks ------------------------------------------------------------------------------


def _check_row_files(out: str, m, L: int, idx: _Placed, rows: _Rows, has_masks: bool, report):
    """Every shard with its boundaries (and masks): (UNK positions per sample, trained bits per sample)."""
    _sizes, sps, dtype, _pad, _unk, _vocab, _files = m
    unit = fs.unit_dir(L)
    bpt = dtype.itemsize
    n_shards = -(-rows.count // sps)
    if report.progress is not None:
        report.progress.total = n_shards
    _check_unit_entries(out, unit, rows.count, n_shards, has_masks, report)
    found_unk: dict[int, list[int]] = {}
    trained_found = np.zeros(len(idx.tc), dtype=np.int64)
    for k in range(n_shards):
        r0, r1 = k * sps, min(rows.count, (k + 1) * sps)
        rel = f"{unit}/{fs.shard_name(k)}"
        path = os.path.join(out, rel)
        if not os.path.isfile(path):
            report.add(rel, f"missing (holds rows {r0}..{r1 - 1})")
            continue
        report.shard_done()
        size, expected = os.path.getsize(path), (r1 - r0) * L * bpt
        if size != expected:
            report.add(
                rel, f"size {size} bytes, expected {r1 - r0} rows * {L} tokens * {bpt} bytes = {expected}"
            )
            continue
        _check_rows(fs.open_records(path, L, dtype), rel, r0, r1, m, idx, rows, found_unk, report)
        _check_cu(out, unit, k, r0, r1, rows, report)
        if has_masks:
            _check_masks(out, unit, k, r0, r1, L, idx, rows, trained_found, report)
    return found_unk, trained_found


def _check_unit_entries(out: str, unit: str, n_rows: int, n_shards: int, has_masks: bool, report) -> None:
    """The rows' directory: exactly its shards, boundaries (and masks); EMPTY_UNIT.md when there is no row."""
    udir = os.path.join(out, unit)
    if not os.path.isdir(udir):
        return
    want_names = {fs.shard_name(k) for k in range(n_shards)} | {fs.cu_name(k) for k in range(n_shards)}
    if has_masks:
        want_names |= {fs.mask_name(k) for k in range(n_shards)}
    present = set(os.listdir(udir))
    for extra in sorted(present - want_names - {FAILED_MARKER} - ({EMPTY_MARKER} if n_rows == 0 else set())):
        report.add(f"{unit}/{extra}", f"not expected: {n_rows} rows in {n_shards} shards")
    if n_rows == 0 and EMPTY_MARKER not in present:
        report.add(unit, f"no rows and no {EMPTY_MARKER}")


def _check_rows(
    data, rel: str, r0: int, r1: int, m, idx: _Placed, rows: _Rows, found_unk: dict, report
) -> None:
    """One shard's rows r0..r1-1, block by block: pad_id after each row's samples, tokens inside the
    vocabulary; the UNK positions of each sample go to found_unk."""
    sizes, _sps, _dtype, pad, unk, vocab, _files = m
    L = sizes[0]  # the row length (verify_packed checked sizes == [row_length])
    for lo in range(r0, r1, BLOCK_ROWS):
        hi = min(r1, lo + BLOCK_ROWS)
        block = np.asarray(data[lo - r0 : hi - r0])
        tail = np.arange(L)[None, :] >= rows.used[lo:hi, None]
        for b in np.flatnonzero(((block != pad) & tail).any(axis=1)).tolist():
            slot = int(np.flatnonzero((block[b] != pad) & tail[b])[0])
            report.add(
                rel,
                f"row {lo + b - r0}: slot {slot} holds {int(block[b, slot])}, not pad_id {pad} "
                f"(the row's samples end at {int(rows.used[lo + b])})",
            )
        for b in np.flatnonzero(((block >= vocab) & ~tail).any(axis=1)).tolist():
            report.add(rel, f"row {lo + b - r0}: token outside the vocabulary ({vocab})")
        is_unk = (block == unk) & ~tail
        for b in np.flatnonzero(is_unk.any(axis=1)).tolist():
            for sid in rows.samples(lo + b).tolist():
                pos = np.flatnonzero(is_unk[b, idx.offset[sid] : rows.ends[sid]])
                if len(pos):
                    found_unk[sid] = pos.tolist()


def _check_cu(out: str, unit: str, k: int, r0: int, r1: int, rows: _Rows, report) -> None:
    """cu_XXXXXX.bin: exactly R_k + 1 row pointers and, per row, [0, ends of its samples]."""
    rel = f"{unit}/{fs.cu_name(k)}"
    path = os.path.join(out, rel)
    if not os.path.isfile(path):
        report.add(rel, "missing (the boundaries of its shard)")
        return
    first, ends = rows.first, rows.ends
    want = fs.boundaries_block(rows.per_row[r0:r1], ends[rows.order[first[r0] : first[r1]]])
    size = os.path.getsize(path)
    if size != want.nbytes:
        report.add(
            rel,
            f"size {size} bytes, expected {len(want)} int32 values ({r1 - r0 + 1} row pointers, "
            f"{r1 - r0} rows, {int(first[r1] - first[r0])} samples) = {want.nbytes}",
        )
        return
    try:
        ptr, cu = fs.read_boundaries(path, r1 - r0)
    except ValueError as exc:
        report.add(rel, str(exc).split(": ", 1)[-1])
        return
    for r in range(r0, r1):
        got = fs.row_cu(ptr, cu, r - r0)
        exp = np.concatenate(([0], ends[rows.samples(r)]))
        if not np.array_equal(got, exp):
            report.add(
                rel,
                f"row {r - r0}: boundaries {got.tolist()[:8]}..., sample_index.jsonl gives "
                f"{exp.tolist()[:8]}...",
                int(rows.order[first[r]]),
            )


def _check_masks(
    out: str, unit: str, k: int, r0: int, r1: int, L: int, idx: _Placed, rows: _Rows, trained_found, report
) -> None:
    """mask_XXXXXX.bin: ceil(L / 8) bytes per row, no bit after the row's tokens; each sample's bits
    counted into trained_found."""
    rel = f"{unit}/{fs.mask_name(k)}"
    path = os.path.join(out, rel)
    if not os.path.isfile(path):
        report.add(rel, "missing (manifest.json declares loss masks)")
        return
    width = fs.mask_width(L)
    size = os.path.getsize(path)
    if size != (r1 - r0) * width:
        report.add(rel, f"size {size} bytes, expected {r1 - r0} rows * {width} bytes = {(r1 - r0) * width}")
        return
    bits = fs.unpack_mask(np.fromfile(path, dtype=np.uint8).reshape(-1, width), L)
    tail = np.arange(L)[None, :] >= rows.used[r0:r1, None]
    for b in np.flatnonzero((bits & tail).any(axis=1)).tolist():
        report.add(rel, f"row {b}: mask bit set after the row's tokens ({int(rows.used[r0 + b])})")
    for r in range(r0, r1):
        for sid in rows.samples(r).tolist():
            trained_found[sid] = int(bits[r - r0, idx.offset[sid] : rows.ends[sid]].sum())


# --- stats.json, the source ---------------------------------------------------------------------------------


def _check_stats(
    stats: dict,
    idx: _Placed,
    n_rows: int,
    L: int,
    dist: dict,
    m,
    dup_groups,
    found_unk: dict,
    policy: str,
    report,
) -> None:
    """The spec's keys and shards, the packing and padding blocks, empty_files, packing.efficiency."""
    _sizes, sps, dtype, _pad, _unk, _vocab, files = m
    tokens, slots = int(idx.tc.sum()), n_rows * L
    compare_stats(
        stats,
        {**spec_stats(idx, dtype, dup_groups, found_unk, dist), "shards": {str(L): -(-n_rows // sps)}},
        report,
    )
    dropped, truncated = np.flatnonzero(idx.status == 1), np.flatnonzero(idx.status == 2)
    want = {
        "packing.rows": n_rows,
        "packing.row_length": L,
        "packing.samples": dist[str(L)],
        "packing.tokens": tokens,
        "packing.slots": slots,
        "packing.lower_bound_rows": -(-tokens // L),
        "packing.overflow.policy": policy,
        "packing.overflow.dropped": len(dropped),
        "packing.overflow.truncated": len(truncated),
        "packing.overflow.dropped_ids": dropped.tolist(),
        "packing.overflow.truncated_ids": truncated.tolist(),
        "padding.total_slots": slots,
        "padding.pad_tokens": slots - tokens,
    }
    compare_stats(_packing_figures(stats), want, report)
    check_empty_files(stats, idx, files, report)
    eff = _packing_figures(stats)["packing.efficiency"]
    if not isinstance(eff, (int, float)) or abs(eff - (tokens / slots if slots else 1.0)) > 1e-12:
        report.add(
            fmt.STATS, f"packing.efficiency is {eff!r}, the files give {tokens / slots if slots else 1.0!r}"
        )


def _packing_figures(stats: dict) -> dict:
    """stats.json's packing and padding blocks, by dotted key ({} for a block that is not an object)."""
    packing = stats.get("packing") if isinstance(stats.get("packing"), dict) else {}
    over = packing.get("overflow") if isinstance(packing.get("overflow"), dict) else {}
    padding = stats.get("padding") or {}
    figures = {
        f"packing.{key}": packing.get(key)
        for key in ("rows", "row_length", "samples", "tokens", "slots", "lower_bound_rows", "efficiency")
    }
    figures.update(
        {
            f"packing.overflow.{key}": over.get(key)
            for key in ("policy", "dropped", "truncated", "dropped_ids", "truncated_ids")
        }
    )
    figures.update({f"padding.{key}": padding.get(key) for key in ("total_slots", "pad_tokens")})
    return figures


def _recheck_source(
    out: str,
    manifest: dict,
    idx: _Placed,
    L: int,
    sps: int,
    dtype,
    report,
    all_samples: bool,
    sample: int,
    root,
    seed: int,
) -> None:
    """--source as for unit sizes (verify_source.py); a sample's tokens are at its row and offset, the
    encoder's count of a cut sample is its source_token_count."""

    def locate(i):
        return (idx.shard_path[i], int(idx.shard_row[i]), int(idx.offset[i])) if idx.row[i] >= 0 else None

    counts = np.where(idx.status == 0, idx.tc, idx.source_tc)
    check_source(
        out,
        manifest,
        idx,
        None,
        [L],
        sps,
        dtype,
        report,
        all_samples,
        sample,
        root,
        seed,
        packed=(locate, counts),
    )
