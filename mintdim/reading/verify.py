"""Check a finished output directory without trusting it: `mintdim verify OUT [--source [--all]]`.

    from mintdim.reading.verify import verify
    report = verify("artifacts/gsm8k_units", source=True)
    report.ok                    # False when any problem was found
    for p in report.problems:    # each names the file, and the sample where there is one
        print(p)

Every figure is recomputed from the files themselves, then compared:

- checksums.sha256 (first): every file it lists is read again and its SHA-256 compared; each file that
  differs, is missing or is not listed is named. An output written before MintDim recorded checksums
  has none: the report then carries a note, and the checks below run as before.
- manifest: dtype, bytes per token and vocabulary agree; the unit directories are exactly the
  declared sizes; no UNIT_BUILD_FAILED.md anywhere.
- sample_index.jsonl: sample ids 0..n-1 in order; unit = smallest declared size >= token_count;
  shard_path (and shard_row) = the sample's place among its unit's samples in sample_id order;
  source lines (or rows) increasing within each file and repeat (source.take), files in manifest
  order. units.overflow (drop | truncate): only the manifest's policy occurs; a cut sample's
  source_token_count is above the largest size; dropped: token_count 0, no unit, shard or row;
  truncated: token_count = the largest size, in the largest unit (its stored tokens are the
  encoder's first ones).
- sample_index.idx (the readers' index): every column agrees with sample_index.jsonl, sample by
  sample (an output built before MintDim wrote it: a note).
- shards: exactly ceil(count / samples_per_shard) files per unit, each of
  records * unit_size * bytes_per_token bytes; every slot from token_count on holds pad_id;
  every token is inside the vocabulary; an empty unit holds EMPTY_UNIT.md. Loss masks
  (source.train_on): a mask_XXXXXX.bin of records * ceil(unit_size / 8) bytes beside each
  shard, no bit set after token_count; each sample's trained_tokens and stats.json's total are
  what the bits give.
- histogram.json and stats.json: counts, totals, duplicate and UNK figures (and the overflow block:
  policy, counts, lost tokens and ids, as for packed rows).
- duplicate_index.jsonl: exactly the groups of equal hashes, as the spec orders them.
- unk_index.jsonl: exactly the samples whose tokens hold unk_id, at those positions.
- with source=True: the source files are read again (paths as declared, from `root`, default
  the current directory; JSONL, Parquet, datasets directories), every line or row re-rendered and
  re-hashed (under source.take: the samples are exactly the ones the take and seed choose); a
  sample of the samples (or all) is re-encoded with the tokenizer and compared with its shard
  record.
"""

from __future__ import annotations

import json
import os

import orjson

from ..formats import output as fmt
from ..formats import shards as fs
from ..formats.checksums import NAME as CHECKSUMS
from ..formats.records import EMPTY_MARKER, FAILED_MARKER
from ..progress import Progress, without_cyclic_gc
from . import verify_columns
from .verify_columns import check_sample_columns
from .verify_common import (  # noqa: F401  (the report's types, imported from here)
    BLOCK_ROWS,
    HexDigests,
    Index,
    Problem,
    Report,
    check_checksums,
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
from .verify_packed import verify_packed
from .verify_source import check_source

_SHARD = fs.SHARD_RE  # names and layout come from the format modules; every figure is recomputed here
_UNIT = fs.UNIT_RE


def _load_json(out: str, name: str, report: Report):
    path = os.path.join(out, name)
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except FileNotFoundError:
        report.add(name, "missing")
    except OSError as exc:
        report.add(name, f"cannot be read ({exc.strerror or exc})")
    except orjson.JSONDecodeError as exc:
        report.add(name, f"is not valid JSON ({exc})")
    return None


def verify(
    out: str,
    source: bool = False,
    all: bool = False,
    sample: int = 1000,
    root: str | None = None,
    seed: int = 0,
    log=None,
) -> Report:  # noqa: A002  (the CLI's --all)
    """Check the output directory `out`; see the module documentation. Returns a Report. `log`: a callable
    that receives a progress line every few seconds while the shards are read (a long check)."""
    return verify_with_index(out, source, all, sample, root, seed, log)[0]


def verify_with_index(
    out: str,
    source: bool = False,
    all: bool = False,
    sample: int = 1000,  # noqa: A002
    root: str | None = None,
    seed: int = 0,
    log=None,
) -> tuple[Report, Index | None]:
    """verify(), and sample_index.jsonl as the columns it checked (an Index: token counts, unit sizes,
    overflow status...; None for packed rows or when the check stopped before the index)."""
    with without_cyclic_gc():  # the index makes a few objects per sample and no reference cycle
        return _verify(out, source, all, sample, root, seed, log)


def _verify(
    out: str,
    source: bool,
    all: bool,
    sample: int,
    root: str | None,  # noqa: A002
    seed: int,
    log,
) -> tuple[Report, Index | None]:
    import numpy as np  # here and below, on first use: `import mintdim` (every workflow job) stays light

    report = Report(path=out)
    if log is not None:  # the count of shards is set once the manifest (and index) give it
        report.progress = Progress(log, f"[verify] {out}", 0, "shards")
    if not os.path.isdir(out):
        report.add(".", "not a directory" if os.path.exists(out) else "does not exist")
        return report, None
    check_checksums(out, report, log)  # first: any changed byte, by file

    _check_failure_markers(out, report)
    manifest = _load_json(out, fmt.MANIFEST, report)
    histogram = _load_json(out, fmt.HISTOGRAM, report)
    stats = _load_json(out, fmt.STATS, report)
    m = _check_manifest(manifest, report)
    if m is None:
        return report, None
    sizes, sps, dtype, _pad, _unk, _vocab, files = m
    if (manifest.get("units") or {}).get("layout") == "packed":  # units.pack
        return verify_packed(
            out, manifest, histogram, stats, m, report, source, all, sample, root, seed
        ), None
    has_masks = "loss_mask" in manifest  # source.train_on: mask_XXXXXX.bin beside every shard
    policy = overflow_policy(manifest, report)  # units.overflow with unit sizes
    _check_entries(out, manifest, sizes, report)

    # --- sample_index.jsonl ------------------------------------------------------------------------
    idx = _read_sample_index(out, report, sizes, sps, files, policy)
    check_sample_columns(out, idx, report, verify_columns.bucketed(idx, sizes, sps))  # sample_index.idx
    n = len(idx.tc)
    report.samples = n
    per_unit = {s: np.flatnonzero(idx.unit == s) for s in sizes}
    counts = {s: int(len(per_unit[s])) for s in sizes}

    # --- shards: names, sizes, padding, vocabulary, UNK positions ---------------------------------
    if report.progress is not None:
        report.progress.total = sum(-(-counts[s] // sps) for s in sizes)
    found_unk: dict[int, list[int]] = {}
    trained_found = np.zeros(n, dtype=np.int64) if has_masks else None  # mask bits per sample
    for s in sizes:
        _check_unit(out, s, per_unit[s], sps, m, idx, report, found_unk, trained_found)
    if has_masks:
        check_trained(idx, trained_found, stats, report, manifest)

    # --- histogram, stats ---------------------------------------------------------------------------
    dist = {str(s): counts[s] for s in sizes}
    check_histogram(histogram, dist, "the samples per unit in sample_index.jsonl", report)

    dup_groups = check_duplicates(out, idx, files, report)
    check_unk(out, idx, files, found_unk, report)
    check_skipped(out, manifest, stats, idx, report)  # source.on_bad_record: skip
    if isinstance(stats, dict):
        _check_stats(stats, idx, dist, sizes, sps, dtype, dup_groups, found_unk, policy, files, report)
    elif stats is not None:
        report.add("stats.json", "is not a JSON object")

    if source:
        check_source(out, manifest, idx, per_unit, sizes, sps, dtype, report, all, sample, root, seed)
    return report, idx


def _check_failure_markers(out: str, report: Report) -> None:
    """A failure marker anywhere in the output: the build failed or did not finish."""
    for base, dirs, files in os.walk(out):
        dirs.sort()
        if FAILED_MARKER in files:
            rel = os.path.relpath(os.path.join(base, FAILED_MARKER), out)
            report.add(rel, "failure marker: the build failed or did not finish; this is not a usable output")


def _check_entries(out: str, manifest: dict, sizes, report: Report) -> None:
    """The output directory's entries: the declared unit directories, the index files, nothing else."""
    entries = sorted(os.listdir(out))
    declared = {fs.unit_dir(s) for s in sizes}
    for name in entries:
        full = os.path.join(out, name)
        if _UNIT.match(name) and name not in declared:
            report.add(name, f"unit directory not declared in manifest.json (sizes {sizes})")
        elif not _UNIT.match(name) and name not in fmt.index_files(manifest) and name != CHECKSUMS:
            report.add(name, "unexpected entry in the output directory")
        elif name in declared and not os.path.isdir(full):
            report.add(name, "is not a directory")
    for d in sorted(declared - set(entries)):
        report.add(d, "declared unit directory is missing")


def _check_unit(
    out: str, s: int, ids, sps: int, m, idx: Index, report: Report, found_unk: dict, trained_found
) -> None:
    """One unit directory: exactly its shards (and masks, when `trained_found` is an array: each sample's
    mask bits are counted into it), each of whole records, checked record by record."""
    has_masks = trained_found is not None
    _sizes, _sps, dtype, pad, unk, vocab, _files = m
    udir = os.path.join(out, fs.unit_dir(s))
    if not os.path.isdir(udir):
        return
    bpt = dtype.itemsize
    names = sorted(os.listdir(udir))
    count = len(ids)
    want = [fs.shard_name(k) for k in range(-(-count // sps))]
    masks = [fs.mask_name(k) for k in range(len(want))] if has_masks else []
    allowed = set(want) | set(masks) | ({EMPTY_MARKER} if count == 0 else set()) | {FAILED_MARKER}
    for name in names:
        if name not in allowed:
            why = (
                "an empty unit holds no shard"
                if count == 0 and _SHARD.match(name)
                else f"not expected: unit {s} has {count} samples in {len(want)} shards"
                if _SHARD.match(name)
                else "unexpected file"
            )
            report.add(f"{fs.unit_dir(s)}/{name}", why)
    if count == 0 and EMPTY_MARKER not in names:
        report.add(fs.unit_dir(s), f"empty unit without {EMPTY_MARKER}")
    if count and EMPTY_MARKER in names:
        report.add(f"{fs.unit_dir(s)}/{EMPTY_MARKER}", f"unit {s} is not empty ({count} samples)")
    for k, name in enumerate(want):
        rel = f"{fs.unit_dir(s)}/{name}"
        path = os.path.join(udir, name)
        members = ids[k * sps : (k + 1) * sps]
        if not os.path.isfile(path):
            report.add(rel, f"missing (holds samples {int(members[0])}..{int(members[-1])})")
            continue
        report.shard_done()
        size = os.path.getsize(path)
        expected = len(members) * s * bpt
        if size != expected:
            report.add(
                rel,
                f"size {size} bytes, expected {len(members)} records * {s} tokens * {bpt} bytes = {expected}",
            )
            if size % (s * bpt):
                continue  # not whole records: the rows cannot be trusted
        _check_shard(path, rel, s, members, idx, dtype, pad, unk, vocab, report, found_unk)
        if has_masks:
            _check_mask(
                os.path.join(udir, masks[k]),
                f"{fs.unit_dir(s)}/{masks[k]}",
                s,
                members,
                idx,
                report,
                trained_found,
            )


def _check_stats(
    stats: dict,
    idx: Index,
    dist: dict,
    sizes,
    sps: int,
    dtype,
    dup_groups,
    found_unk: dict,
    policy: str,
    files: list,
    report: Report,
) -> None:
    """stats.json against the figures the files give (the spec's keys, shards, overflow, empty_files)."""
    import numpy as np

    compare_stats(stats, spec_stats(idx, dtype, dup_groups, found_unk, dist), report)
    cut = bool(np.isin(idx.status, (1, 2)).any())  # the build writes the block when a sample was cut
    if cut or "overflow" in stats:  # units.overflow: the figures packed rows give
        got = stats.get("overflow") if isinstance(stats.get("overflow"), dict) else {}
        for sub, value in _overflow_figures(policy, idx, sizes[-1]).items():
            if got.get(sub) != value:
                report.add("stats.json", f"overflow.{sub} is {got.get(sub)!r}, the files give {value!r}")
    if isinstance(stats.get("shards"), dict):  # extension: shards per unit
        want_shards = {str(s): -(-dist[str(s)] // sps) for s in sizes}
        got = {str(k): v for k, v in stats["shards"].items()}
        if got != want_shards:
            report.add("stats.json", f"shards is {got!r}, the files give {want_shards!r}")
    check_empty_files(stats, idx, files, report)


def _check_manifest(manifest, report: Report):
    import numpy as np

    if not isinstance(manifest, dict):
        if manifest is not None:
            report.add("manifest.json", "is not a JSON object")
        return None
    try:
        storage = manifest.get("token_storage") or {}
        dname = manifest.get("token_dtype", storage.get("dtype"))
        if dname not in ("uint16", "uint32"):
            report.add("manifest.json", f"token dtype {dname!r} is not uint16 or uint32")
            return None
        dtype = np.dtype(dname).newbyteorder("<")
        if storage.get("dtype", dname) != dname:
            report.add(
                "manifest.json", f"token_storage.dtype {storage.get('dtype')!r} != token_dtype {dname!r}"
            )
        if storage.get("bytes_per_token", dtype.itemsize) != dtype.itemsize:
            report.add(
                "manifest.json",
                f"bytes_per_token {storage.get('bytes_per_token')!r} does not match "
                f"{dname} ({dtype.itemsize})",
            )
        tok = manifest.get("tokenizer") or {}
        vocab, pad, unk = tok.get("vocab_size"), tok.get("pad_id"), tok.get("unk_id")
        no_unk = unk is None and tok.get("type") == "hf_dir"  # a byte-level tokenizer directory: no UNK id
        if not all(is_int(v) for v in (vocab, pad) + (() if no_unk else (unk,))) or not (
            0 <= pad < vocab and (no_unk or 0 <= unk < vocab)
        ):
            report.add(
                "manifest.json", f"tokenizer vocab_size/pad_id/unk_id invalid: {vocab!r}/{pad!r}/{unk!r}"
            )
            return None
        if (vocab <= 65535) != (dname == "uint16"):
            report.add("manifest.json", f"dtype {dname} does not follow vocab_size {vocab}")
        sizes = (manifest.get("units") or {}).get("sizes")
        if (
            not isinstance(sizes, list)
            or not sizes
            or not all(is_int(s) and s > 0 for s in sizes)
            or sorted(set(sizes)) != sizes
        ):
            report.add("manifest.json", f"units.sizes {sizes!r} is not an ascending list of positive ints")
            return None
        sps = (manifest.get("output") or {}).get("samples_per_shard")
        if not is_int(sps) or sps <= 0:
            report.add("manifest.json", f"output.samples_per_shard {sps!r} is not a positive int")
            return None
        files = (manifest.get("source") or {}).get("files")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            report.add("manifest.json", "source.files is not a list of paths")
            files = []
        algo = (manifest.get("hash") or {}).get("algorithm", "sha256")
        if algo != "sha256":
            report.add("manifest.json", f"hash algorithm {algo!r} is not sha256")
    except AttributeError:
        report.add("manifest.json", "does not have the manifest's shape")
        return None
    return sizes, sps, dtype, pad, unk, vocab, files


def _overflow_figures(policy: str, idx: Index, limit: int) -> dict:
    import numpy as np

    dropped, truncated = np.flatnonzero(idx.status == 1), np.flatnonzero(idx.status == 2)
    return {
        "policy": policy,
        "dropped": int(len(dropped)),
        "truncated": int(len(truncated)),
        "truncated_tokens_lost": int((idx.source_tc[truncated] - limit).sum()),
        "dropped_ids": dropped.tolist(),
        "truncated_ids": truncated.tolist(),
    }


def _sample_index_fast(out: str, sizes, sps, files) -> Index | None:
    """sample_index.jsonl as columns when every line is as the build writes it (formats/output.py
    read_sample_index, array operations over the whole file), checked array by array; None as soon as
    anything is off: the line-by-line check then finds and words every problem. What passes here
    passes that check (tests/test_verify.py holds the two together)."""
    import numpy as np

    try:
        cols = fmt.read_sample_index(os.path.join(out, fmt.SAMPLE_INDEX), files)
    except OSError:
        return None
    if cols is None:
        return None
    sid, tc, unit, line, fi = (
        cols[k] for k in ("sample_id", "token_count", "unit_size", "source_line", "source_file")
    )
    n = len(sid)
    size_arr = np.asarray(sizes, dtype=np.int64)
    fit = np.searchsorted(size_arr, tc)
    if (
        not np.array_equal(sid, np.arange(n))
        or fit.max() >= len(size_arr)
        or not np.array_equal(size_arr[fit], unit)
        or line.min() < 1
        or not np.array_equal(cols["shard_unit"], unit)
    ):
        return None
    if n > 1 and not np.all((fi[1:] > fi[:-1]) | (line[1:] > line[:-1])):  # (files are in order already)
        return None
    rank = np.empty(n, dtype=np.int64)  # a sample's place among its unit's samples
    for u in np.flatnonzero(
        np.bincount(fit, minlength=len(size_arr))
    ).tolist():  # (np.unique imports numpy.ma)
        members = np.flatnonzero(fit == u)
        rank[members] = np.arange(len(members))
    if not np.array_equal(cols["shard"], rank // sps) or not np.array_equal(cols["shard_row"], rank % sps):
        return None
    idx = Index(n)
    idx.files = list(files)
    idx.tc, idx.unit, idx.line, idx.file = tc, unit, line, fi
    if "trained_tokens" in cols:
        idx.trained = cols["trained_tokens"]
    idx.hashes = HexDigests(cols["hash"])
    idx.valid[:] = True
    return idx


def _read_sample_index(out: str, report: Report, sizes, sps, files, policy: str = "error") -> Index:
    fast = _sample_index_fast(out, sizes, sps, files)
    if fast is not None:
        return fast
    rows = list(jsonl_rows(out, fmt.SAMPLE_INDEX, report))
    idx = Index(len(rows))
    idx.files = list(files)
    name = fmt.SAMPLE_INDEX
    file_of = {f: i for i, f in enumerate(files)}
    seen_in_unit = {s: 0 for s in sizes}
    last = (-1, 0, 0)  # (file index, repeat, line) of the previous sample
    for i, (n, obj) in enumerate(rows):
        if obj is None:
            continue
        sid = obj.get("sample_id")
        if sid != i:
            report.add(
                name, f"line {n}: sample_id {sid!r}, expected {i} (ids count 0, 1, 2, ... in order)", i
            )
        if is_int(obj.get("trained_tokens")):
            idx.trained[i] = obj["trained_tokens"]
        tc, unit = obj.get("token_count"), obj.get("unit_size")
        if not is_int(tc) or tc < 0:
            report.add(name, f"token_count {tc!r} is not a non-negative int", i)
            continue
        idx.status[i] = overflow_of(obj, i, tc, sizes[-1], policy, "the largest unit", report)
        if idx.status[i]:
            idx.source_tc[i] = obj.get("source_token_count") if is_int(obj.get("source_token_count")) else 0
        # dropped (units.overflow, source.drop_untrained): in no unit and no shard
        if idx.status[i] in (
            1,
            3,
        ):
            place = (unit, obj.get("shard_path"), obj.get("shard_row"))
            if place != (None, None, None):
                report.add(name, f"dropped sample has a unit and a place in the shards {place}", i)
            idx.hashes[i], idx.file[i], idx.line[i], last = check_origin(obj, i, file_of, last, report, idx)
            idx.valid[i] = True
            continue
        if unit not in seen_in_unit:
            report.add(name, f"unit_size {unit!r} is not a declared size {sizes}", i)
            continue
        fit = next((s for s in sizes if s >= tc), None)
        if fit != unit:
            report.add(name, f"token_count {tc} belongs in unit {fit}, not {unit}", i)
        h, fi, line, last = check_origin(obj, i, file_of, last, report, idx)
        k = seen_in_unit[unit]
        seen_in_unit[unit] = k + 1
        want_path = fs.shard_path(unit, k // sps)
        if obj.get("shard_path") != want_path:
            report.add(name, f"shard_path {obj.get('shard_path')!r}, expected {want_path!r}", i)
        if "shard_row" in obj and obj["shard_row"] != k % sps:
            report.add(name, f"shard_row {obj['shard_row']!r}, expected {k % sps}", i)
        idx.tc[i], idx.unit[i], idx.line[i], idx.file[i] = tc, unit, line, fi
        idx.hashes[i] = h
        idx.valid[i] = True
    return idx


def _check_shard(
    path, rel, unit, members, idx: Index, dtype, pad, unk, vocab, report: Report, found_unk
) -> None:
    import numpy as np

    data = np.memmap(path, dtype=dtype, mode="r") if os.path.getsize(path) else np.zeros(0, dtype=dtype)
    rows = data.reshape(-1, unit)
    for lo in range(0, min(len(rows), len(members)), BLOCK_ROWS):
        block = np.asarray(rows[lo : lo + BLOCK_ROWS][: len(members) - lo])
        ids = members[lo : lo + len(block)]
        tc = idx.tc[ids]
        for r in np.flatnonzero(_stray_padding(block, np.minimum(tc, unit), pad)).tolist():
            first = int(tc[r]) + int(np.flatnonzero(block[r, tc[r] :] != pad)[0])
            report.add(
                rel,
                f"row {lo + r}: slot {first} holds {int(block[r, first])}, not pad_id {pad} "
                f"(token_count {int(tc[r])})",
                int(ids[r]),
            )
        if int(block.max()) >= vocab:  # one pass; the rows only when some slot is outside
            inside = np.arange(unit)[None, :] < tc[:, None]
            for r in np.flatnonzero(((block >= vocab) & inside).any(axis=1)):
                report.add(rel, f"row {lo + r}: token outside the vocabulary ({vocab})", int(ids[r]))
        if unk is not None:
            _unk_positions(block, tc, ids, unk, found_unk)


def _stray_padding(block, tc, pad: int):
    """Whether each row holds anything but pad_id from its token count (at most the row's width) on: one
    logical_or.reduceat over the slots that are not pad, its segments each row's padding and the next
    row's tokens (half the time of a padding mask of the block's shape, on the ShareGPT build)."""
    import numpy as np

    n, width = block.shape
    flat = (block != pad).reshape(-1)
    bounds = np.empty(2 * n, dtype=np.int64)
    bounds[0::2] = np.arange(n, dtype=np.int64) * width + tc  # a row's padding starts
    bounds[1::2] = bounds[0::2] - tc + width  # the next row's tokens start
    bounds = np.minimum(bounds[:-1], len(flat) - 1)  # (the last padding runs to the end)
    stray = np.logical_or.reduceat(flat, bounds)[0::2]
    stray[tc >= width] = False  # no padding: reduceat gave the next slot alone
    return stray


def _unk_positions(block, tc, ids, unk: int, found_unk: dict) -> None:
    """found_unk[sample] = the positions before its token_count that hold unk_id, for every row of the block
    that has one (few rows have: the slots are found in one pass over the block, not row by row)."""
    import numpy as np

    row, col = np.divmod(np.flatnonzero(block == unk), block.shape[1])
    inside = col < tc[row]
    row, col = row[inside], col[inside]
    if not len(row):
        return
    cuts = np.flatnonzero(row[1:] != row[:-1]) + 1  # flat order: rows ascending, positions within a row too
    for r, positions in zip(row[np.concatenate(([0], cuts))].tolist(), np.split(col, cuts)):
        found_unk[int(ids[r])] = positions.tolist()


def _check_mask(path, rel, unit, members, idx: Index, report: Report, trained_found) -> None:
    """Loss masks: ceil(unit / 8) bytes per record, bit order little, no bit set after token_count; the
    bits of each record counted into trained_found."""
    import numpy as np

    if not os.path.isfile(path):
        report.add(rel, "missing (manifest.json declares loss masks)")
        return
    width = -(-unit // 8)
    size = os.path.getsize(path)
    if size != len(members) * width:
        report.add(
            rel,
            f"size {size} bytes, expected {len(members)} records * {width} bytes = {len(members) * width}",
        )
        return
    if not size:
        return
    bits = np.unpackbits(
        np.fromfile(path, dtype=np.uint8).reshape(-1, width), axis=1, count=unit, bitorder="little"
    )
    tail = np.arange(unit)[None, :] >= idx.tc[members][:, None]
    for r in np.flatnonzero((bits.astype(bool) & tail).any(axis=1)):
        report.add(rel, f"row {r}: mask bit set after token_count {int(idx.tc[members[r]])}", int(members[r]))
    trained_found[members] = (bits.astype(bool) & ~tail).sum(axis=1)


def main_lines(report: Report, limit: int | None = 50) -> list[str]:
    """What `mintdim verify` prints: each problem (up to `limit`), then the summary."""
    shown = report.problems[:limit] if limit is not None else report.problems
    lines = [f"[verify] {report.path}: note: {note}" for note in report.notes]
    lines += [p.text(report.path) for p in shown]
    if report.count > len(lines):
        lines.append(f"... and {report.count - len(lines)} more")
    lines.append(report.summary())
    return lines


def to_json(report: Report) -> str:
    return json.dumps(
        {
            "path": report.path,
            "ok": report.ok,
            "problems": report.count,
            "samples": report.samples,
            "shards": report.shards,
            "source_checked": report.source_checked,
            "encoded": report.encoded,
            "checksums": None if report.checksums is None else report.checksums.files,
            "notes": report.notes,
            "list": [{"file": p.file, "sample": p.sample, "message": p.message} for p in report.problems],
        },
        ensure_ascii=False,
        indent=1,
    )
