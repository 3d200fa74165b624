"""`mintdim verify` for an output of packed rows (units.pack); see mintdim/reading/verify.py.

Names and the on-disk layout come from formats/shards.py and formats/output.py; every figure is
recomputed from the files:

- sample_index.jsonl: ids in order; unit_size = the row length; a sample without `overflow`
  fits a row (token_count <= row length); `dropped`: token_count 0, no shard, row or offset,
  source_token_count above the row length; `truncated`: token_count = the row length; only the
  manifest's policy occurs. shard_path / shard_row / row_offset place the samples of every row
  back to back from slot 0, in sample_id order, rows numbered by their smallest sample id,
  rows 0..R-1 all used, samples_per_shard rows per shard.
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

import numpy as np

from ..formats import output as fmt
from ..formats import shards as fs
from ..formats.output import INDEX_FILES
from ..formats.records import EMPTY_MARKER, FAILED_MARKER
from .verify_common import (BLOCK_ROWS, OVERFLOW_OF, Index, check_duplicates, check_empty_files, check_origin,
                            check_unk, is_int, jsonl_rows, overflow_of)
from .verify_source import check_source


def verify_packed(out: str, manifest: dict, histogram, stats, m, report, source: bool, all_samples: bool,
                  sample: int, root, seed: int):
    sizes, sps, dtype, pad, unk, vocab, files = m
    units = manifest.get("units") or {}
    L = units.get("row_length")
    policy = units.get("overflow", "error")
    if not is_int(L) or sizes != [L]:
        report.add(fmt.MANIFEST, f"units.row_length {L!r} does not match units.sizes {sizes!r}")
        return report
    if policy not in OVERFLOW_OF:
        report.add(fmt.MANIFEST, f"units.overflow {policy!r} is not error, drop or truncate")
        policy = "error"
    has_masks = "loss_mask" in manifest
    unit = fs.unit_dir(L)
    for name in sorted(os.listdir(out)):
        if name != unit and name not in INDEX_FILES:
            report.add(name, "unexpected entry in the output directory (packed rows: only "
                             f"{unit} and the index files)")
    if not os.path.isdir(os.path.join(out, unit)):
        report.add(unit, "the rows' directory is missing")

    # --- sample_index.jsonl -----------------------------------------------------------------------
    rows_raw = list(jsonl_rows(out, fmt.SAMPLE_INDEX, report))
    n = len(rows_raw)
    idx = Index(n)
    idx.files = list(files)
    row = np.full(n, -1, dtype=np.int64)
    offset = np.zeros(n, dtype=np.int64)
    status = np.zeros(n, dtype=np.int8)  # 0 fits, 1 dropped, 2 truncated
    source_tc = np.zeros(n, dtype=np.int64)
    trained = np.full(n, -1, dtype=np.int64)
    file_of = {f: i for i, f in enumerate(files)}
    name = fmt.SAMPLE_INDEX
    last = (-1, 0, 0)
    for i, (line_no, obj) in enumerate(rows_raw):
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
        status[i] = overflow_of(obj, i, tc, L, policy, "a row of", report)  # the keys as for unit sizes
        if over is None and tc > L:
            report.add(name, f"token_count {tc} does not fit a row of {L}", i)
        if over is not None and is_int(obj.get("source_token_count")) and obj["source_token_count"] > L:
            source_tc[i] = obj["source_token_count"]
        if status[i] == 1:
            if loc != (None, None, None):
                report.add(name, f"dropped sample has a place in the rows {loc}", i)
        else:
            k = fs.shard_index(loc[0][len(unit) + 1:]) if isinstance(loc[0], str) and loc[0].startswith(unit + "/") \
                else None
            if k is None or not is_int(loc[1]) or not is_int(loc[2]) or not 0 <= loc[1] < sps \
                    or loc[2] < 0:
                report.add(name, f"shard_path/shard_row/row_offset {loc} do not name a row of {unit}", i)
            else:
                row[i], offset[i] = k * sps + loc[1], loc[2]
        h, fi, line, last = check_origin(obj, i, file_of, last, report, idx)
        if is_int(obj.get("trained_tokens")):
            trained[i] = obj["trained_tokens"]
        elif has_masks:
            report.add(name, "trained_tokens missing (manifest.json declares loss masks)", i)
        idx.tc[i], idx.unit[i], idx.line[i], idx.file[i] = tc, L, line, fi
        idx.hashes[i] = h
        idx.shard_path[i] = loc[0] if isinstance(loc[0], str) else ""
        idx.shard_row[i] = loc[1] if is_int(loc[1]) else -1
        idx.valid[i] = True
    report.samples = n

    # --- the rows, recomputed from the index ------------------------------------------------------
    live = np.flatnonzero(row >= 0)
    order = live[np.lexsort((offset[live], row[live]))]
    n_rows = int(row.max()) + 1 if len(live) else 0
    per_row = np.bincount(row[live], minlength=n_rows)
    first = np.concatenate(([0], np.cumsum(per_row)))
    for r in np.flatnonzero(per_row == 0).tolist():
        report.add(name, f"row {r} holds no sample (rows are numbered 0..{n_rows - 1} without gaps)")
    ends = offset + idx.tc
    used = np.zeros(n_rows, dtype=np.int64)
    smallest = np.full(n_rows, n, dtype=np.int64)
    for r in np.flatnonzero(per_row).tolist():
        ids = order[first[r]:first[r + 1]]
        want = np.concatenate(([0], ends[ids][:-1]))
        bad = np.flatnonzero(offset[ids] != want)
        if len(bad):
            sid = int(ids[bad[0]])
            report.add(name, f"row {r}: row_offset {int(offset[sid])}, expected {int(want[bad[0]])} "
                             "(samples back to back from slot 0)", sid)
        if np.any(np.diff(ids) < 0):
            report.add(name, f"row {r}: samples are not in sample_id order", int(ids[0]))
        if ends[ids[-1]] > L:
            report.add(name, f"row {r}: its samples end at slot {int(ends[ids[-1]])}, beyond the row length {L}",
                       int(ids[-1]))
        used[r] = min(int(ends[ids[-1]]), L)
        smallest[r] = ids.min()
    if np.any(np.diff(smallest) < 0):
        report.add(name, "rows are not numbered by their smallest sample_id")

    # --- shards, boundaries, masks ----------------------------------------------------------------
    found_unk: dict[int, list[int]] = {}
    bpt = dtype.itemsize
    udir = os.path.join(out, unit)
    n_shards = -(-n_rows // sps)
    want_names = {fs.shard_name(k) for k in range(n_shards)} | {fs.cu_name(k) for k in range(n_shards)}
    if has_masks:
        want_names |= {fs.mask_name(k) for k in range(n_shards)}
    if os.path.isdir(udir):
        present = set(os.listdir(udir))
        for extra in sorted(present - want_names - {FAILED_MARKER} - ({EMPTY_MARKER} if n_rows == 0 else set())):
            report.add(f"{unit}/{extra}", f"not expected: {n_rows} rows in {n_shards} shards")
        if n_rows == 0 and EMPTY_MARKER not in present:
            report.add(unit, f"no rows and no {EMPTY_MARKER}")
    trained_found = np.zeros(n, dtype=np.int64)
    for k in range(n_shards):
        r0, r1 = k * sps, min(n_rows, (k + 1) * sps)
        rel = f"{unit}/{fs.shard_name(k)}"
        path = os.path.join(out, rel)
        if not os.path.isfile(path):
            report.add(rel, f"missing (holds rows {r0}..{r1 - 1})")
            continue
        report.shards += 1
        size, expected = os.path.getsize(path), (r1 - r0) * L * bpt
        if size != expected:
            report.add(rel, f"size {size} bytes, expected {r1 - r0} rows * {L} tokens * {bpt} bytes = {expected}")
            continue
        data = fs.open_records(path, L, dtype)
        for lo in range(r0, r1, BLOCK_ROWS):
            hi = min(r1, lo + BLOCK_ROWS)
            block = np.asarray(data[lo - r0:hi - r0])
            tail = np.arange(L)[None, :] >= used[lo:hi, None]
            for b in np.flatnonzero(((block != pad) & tail).any(axis=1)).tolist():
                slot = int(np.flatnonzero((block[b] != pad) & tail[b])[0])
                report.add(rel, f"row {lo + b - r0}: slot {slot} holds {int(block[b, slot])}, not pad_id {pad} "
                                f"(the row's samples end at {int(used[lo + b])})")
            for b in np.flatnonzero(((block >= vocab) & ~tail).any(axis=1)).tolist():
                report.add(rel, f"row {lo + b - r0}: token outside the vocabulary ({vocab})")
            is_unk = (block == unk) & ~tail
            for b in np.flatnonzero(is_unk.any(axis=1)).tolist():
                r = lo + b
                for sid in order[first[r]:first[r + 1]].tolist():
                    pos = np.flatnonzero(is_unk[b, offset[sid]:ends[sid]])
                    if len(pos):
                        found_unk[sid] = pos.tolist()
        _check_cu(out, unit, k, r0, r1, per_row, first, order, ends, report)
        if has_masks:
            _check_masks(out, unit, k, r0, r1, L, used, first, order, offset, ends, trained_found, report)
    if has_masks:
        for sid in np.flatnonzero((trained >= 0) & (trained != trained_found)).tolist():
            if row[sid] >= 0 or trained[sid] != 0:
                report.add(name, f"trained_tokens {int(trained[sid])}, the mask bits give {int(trained_found[sid])}",
                           sid)

    # --- histogram, stats, duplicates, UNK --------------------------------------------------------
    written = int(np.count_nonzero(status != 1))
    dist = {str(L): written}
    if isinstance(histogram, dict):
        if {str(k): v for k, v in histogram.items()} != dist:
            report.add(fmt.HISTOGRAM, f"{histogram} does not match the samples written {dist}")
    elif histogram is not None:
        report.add(fmt.HISTOGRAM, "is not a JSON object")
    dup_groups = check_duplicates(out, idx, files, report)
    check_unk(out, idx, files, found_unk, report)
    if isinstance(stats, dict):
        tokens = int(idx.tc.sum())
        slots = n_rows * L
        dropped, truncated = np.flatnonzero(status == 1), np.flatnonzero(status == 2)
        want = {
            "total_samples": n, "total_tokens": tokens, "token_dtype": dtype.name, "bytes_per_token": bpt,
            "duplicate_groups": len(dup_groups), "duplicate_samples": int(sum(len(g) for g in dup_groups)),
            "samples_with_unk": len(found_unk), "unk_tokens": int(sum(len(v) for v in found_unk.values())),
            "unit_distribution": dist, "shards": {str(L): n_shards},
        }
        packing = stats.get("packing") if isinstance(stats.get("packing"), dict) else {}
        over = packing.get("overflow") if isinstance(packing.get("overflow"), dict) else {}
        got_more = {"packing.rows": packing.get("rows"), "packing.row_length": packing.get("row_length"),
                    "packing.samples": packing.get("samples"), "packing.tokens": packing.get("tokens"),
                    "packing.slots": packing.get("slots"), "packing.lower_bound_rows": packing.get("lower_bound_rows"),
                    "packing.overflow.policy": over.get("policy"), "packing.overflow.dropped": over.get("dropped"),
                    "packing.overflow.truncated": over.get("truncated"),
                    "packing.overflow.dropped_ids": over.get("dropped_ids"),
                    "packing.overflow.truncated_ids": over.get("truncated_ids"),
                    "padding.total_slots": (stats.get("padding") or {}).get("total_slots"),
                    "padding.pad_tokens": (stats.get("padding") or {}).get("pad_tokens")}
        want_more = {"packing.rows": n_rows, "packing.row_length": L, "packing.samples": written,
                     "packing.tokens": tokens, "packing.slots": slots, "packing.lower_bound_rows": -(-tokens // L),
                     "packing.overflow.policy": policy, "packing.overflow.dropped": len(dropped),
                     "packing.overflow.truncated": len(truncated), "packing.overflow.dropped_ids": dropped.tolist(),
                     "packing.overflow.truncated_ids": truncated.tolist(), "padding.total_slots": slots,
                     "padding.pad_tokens": slots - tokens}
        for key, value in want.items():
            got = stats.get(key)
            if isinstance(got, dict):
                got = {str(a): b for a, b in got.items()}
            if got != value:
                report.add(fmt.STATS, f"{key} is {got!r}, the files give {value!r}")
        for key, value in want_more.items():
            if got_more[key] != value:
                report.add(fmt.STATS, f"{key} is {got_more[key]!r}, the files give {value!r}")
        check_empty_files(stats, idx, files, report)
        eff = packing.get("efficiency")
        if not isinstance(eff, (int, float)) or abs(eff - (tokens / slots if slots else 1.0)) > 1e-12:
            report.add(fmt.STATS, f"packing.efficiency is {eff!r}, the files give {tokens / slots if slots else 1.0!r}")
    elif stats is not None:
        report.add(fmt.STATS, "is not a JSON object")

    if source:
        def locate(i):
            return (idx.shard_path[i], int(idx.shard_row[i]), int(offset[i])) if row[i] >= 0 else None

        counts = np.where(status == 0, idx.tc, source_tc)
        check_source(out, manifest, idx, None, [L], sps, dtype, report, all_samples, sample, root, seed,
                        packed=(locate, counts))
    return report


def _check_cu(out, unit, k, r0, r1, per_row, first, order, ends, report) -> None:
    rel = f"{unit}/{fs.cu_name(k)}"
    path = os.path.join(out, rel)
    if not os.path.isfile(path):
        report.add(rel, "missing (the boundaries of its shard)")
        return
    want = fs.boundaries_block(per_row[r0:r1], ends[order[first[r0]:first[r1]]])
    size = os.path.getsize(path)
    if size != want.nbytes:
        report.add(rel, f"size {size} bytes, expected {len(want)} int32 values ({r1 - r0 + 1} row pointers, "
                        f"{r1 - r0} rows, {int(first[r1] - first[r0])} samples) = {want.nbytes}")
        return
    try:
        ptr, cu = fs.read_boundaries(path, r1 - r0)
    except ValueError as exc:
        report.add(rel, str(exc).split(": ", 1)[-1])
        return
    for r in range(r0, r1):
        got = fs.row_cu(ptr, cu, r - r0)
        exp = np.concatenate(([0], ends[order[first[r]:first[r + 1]]]))
        if not np.array_equal(got, exp):
            report.add(rel, f"row {r - r0}: boundaries {got.tolist()[:8]}..., sample_index.jsonl gives "
                            f"{exp.tolist()[:8]}...", int(order[first[r]]))


def _check_masks(out, unit, k, r0, r1, L, used, first, order, offset, ends, trained_found, report) -> None:
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
    tail = np.arange(L)[None, :] >= used[r0:r1, None]
    for b in np.flatnonzero((bits & tail).any(axis=1)).tolist():
        report.add(rel, f"row {b}: mask bit set after the row's tokens ({int(used[r0 + b])})")
    for r in range(r0, r1):
        for sid in order[first[r]:first[r + 1]].tolist():
            trained_found[sid] = int(bits[r - r0, offset[sid]:ends[sid]].sum())
