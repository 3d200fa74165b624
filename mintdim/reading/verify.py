"""Check a finished output directory without trusting it: `mintdim verify OUT [--source [--all]]`.

    from mintdim.reading.verify import verify
    report = verify("artifacts/gsm8k_units", source=True)
    report.ok                    # False when any problem was found
    for p in report.problems:    # each names the file, and the sample where there is one
        print(p)

Every figure is recomputed from the files themselves, then compared:

- manifest: dtype, bytes per token and vocabulary agree; the unit directories are exactly the
  declared sizes; no UNIT_BUILD_FAILED.md anywhere.
- sample_index.jsonl: sample ids 0..n-1 in order; unit = smallest declared size >= token_count;
  shard_path (and shard_row) = the sample's place among its unit's samples in sample_id order;
  source lines (or rows) increasing within each file and repeat (source.take), files in manifest
  order. units.overflow (drop | truncate): only the manifest's policy occurs; a cut sample's
  source_token_count is above the largest size; dropped: token_count 0, no unit, shard or row;
  truncated: token_count = the largest size, in the largest unit (its stored tokens are the
  encoder's first ones).
- shards: exactly ceil(count / samples_per_shard) files per unit, each of
  records * unit_size * bytes_per_token bytes; every slot from token_count on holds pad_id;
  every token is inside the vocabulary; an empty unit holds EMPTY_UNIT.md. Loss masks
  (source.train_on): a mask_XXXXXX.bin of records * ceil(unit_size / 8) bytes beside each
  shard, no bit set after token_count.
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

import hashlib
import json
import os
import random
import re
from dataclasses import dataclass, field

import orjson

from ..formats import output as fmt
from ..formats import shards as fs
from ..formats.output import INDEX_FILES
from ..formats.records import EMPTY_MARKER, FAILED_MARKER

MAX_PROBLEMS = 10_000  # kept in the report; the count goes on
BLOCK_ROWS = 65_536
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX_RUN = re.compile(r"[0-9a-f]*")
_SHARD = fs.SHARD_RE  # names and layout come from the format modules; every figure is recomputed here
_UNIT = fs.UNIT_RE


@dataclass
class Problem:
    file: str  # relative to the output directory ("." for the directory itself)
    message: str
    sample: int | None = None

    def __str__(self) -> str:
        return self.text()

    def text(self, output: str | None = None) -> str:
        """The console line; `output` names the directory itself (else shown as ".")."""
        file = output if output is not None and self.file == "." else self.file
        where = file if self.sample is None else f"{file}: sample {self.sample}"
        return f"{where}: {self.message}"


@dataclass
class Report:
    path: str
    problems: list[Problem] = field(default_factory=list)
    count: int = 0  # problems found (the list keeps the first MAX_PROBLEMS)
    samples: int = 0
    shards: int = 0
    source_checked: bool = False
    encoded: int = 0  # samples re-encoded and compared token by token

    @property
    def ok(self) -> bool:
        return self.count == 0

    def add(self, file: str, message: str, sample: int | None = None) -> None:
        self.count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(file, message, sample))

    def summary(self) -> str:
        what = f"{self.samples} samples, {self.shards} shards"
        if self.source_checked:
            what += f", source re-hashed, {self.encoded} samples re-encoded"
        if self.ok:
            return f"[verify] {self.path}: OK ({what})"
        return f"[verify] {self.path}: {self.count} problem{'s' if self.count != 1 else ''} ({what})"


class _Index:
    """sample_index.jsonl as columns."""

    def __init__(self, n: int):
        import numpy as np
        self.tc = np.zeros(n, dtype=np.int64)
        self.unit = np.zeros(n, dtype=np.int64)
        self.line = np.zeros(n, dtype=np.int64)
        self.file = np.full(n, -1, dtype=np.int64)
        self.hashes: list[str] = [""] * n
        self.shard_path: list[str] = [""] * n
        self.shard_row = np.full(n, -1, dtype=np.int64)
        self.valid = np.zeros(n, dtype=bool)
        self.status = np.zeros(n, dtype=np.int8)  # units.overflow: 0 whole, 1 dropped, 2 truncated
        self.source_tc = np.zeros(n, dtype=np.int64)  # the whole length of a dropped or truncated sample
        self.repeat = np.zeros(n, dtype=np.int64)  # source.take: the sample's repeat (0 without take)
        self.files: list[str] = []  # manifest.json's source files, which `file` indexes

    def file_name(self, i: int) -> str:
        f = int(self.file[i])
        return self.files[f] if 0 <= f < len(self.files) else "?"


OVERFLOW_OF = {"error": set(), "drop": {"dropped"}, "truncate": {"truncated"}}


def overflow_of(obj: dict, i: int, tc: int, limit: int, policy: str, where: str, report: "Report") -> int:
    """A sample_index.jsonl line's overflow keys, checked against the manifest's policy (units.overflow):
    0 a whole sample (no overflow key, no source_token_count), 1 dropped (token_count 0), 2 truncated
    (token_count = limit); a cut sample's source_token_count is above `limit` (`where` names it)."""
    name = fmt.SAMPLE_INDEX
    over = obj.get("overflow")
    if over is None:
        if "source_token_count" in obj:
            report.add(name, "source_token_count without overflow", i)
        return 0
    if over not in OVERFLOW_OF[policy]:
        report.add(name, f"overflow {over!r} does not follow the manifest's policy {policy!r}", i)
    stc = obj.get("source_token_count")
    if not _is_int(stc) or stc <= limit:
        report.add(name, f"overflow {over!r} but source_token_count {stc!r} fits {where} {limit}", i)
    want_tc = 0 if over == "dropped" else limit
    if tc != want_tc:
        report.add(name, f"{over} sample: token_count {tc}, expected {want_tc}", i)
    return 1 if over == "dropped" else 2


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


def _jsonl_rows(out: str, name: str, report: Report):
    """(line number, object or None) of every line; problems for unreadable or invalid lines."""
    path = os.path.join(out, name)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        report.add(name, "missing")
        return
    except OSError as exc:
        report.add(name, f"cannot be read ({exc.strerror or exc})")
        return
    with f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                report.add(name, f"line {n} is blank")
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                report.add(name, f"line {n} is not valid JSON")
                yield n, None
                continue
            if not isinstance(obj, dict):
                report.add(name, f"line {n} is not a JSON object")
                yield n, None
                continue
            yield n, obj


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def verify(out: str, source: bool = False, all: bool = False, sample: int = 1000, root: str | None = None,
           seed: int = 0) -> Report:  # noqa: A002  (the CLI's --all)
    """Check the output directory `out`; see the module documentation. Returns a Report."""
    import numpy as np  # here and below, on first use: `import mintdim` (every workflow job) stays light
    report = Report(path=out)
    if not os.path.isdir(out):
        report.add(".", "not a directory" if os.path.exists(out) else "does not exist")
        return report

    # --- failure markers, the directory's entries --------------------------------------------------
    for base, dirs, files in os.walk(out):
        dirs.sort()
        if FAILED_MARKER in files:
            rel = os.path.relpath(os.path.join(base, FAILED_MARKER), out)
            report.add(rel, "failure marker: the build failed or did not finish; this is not a usable output")

    manifest = _load_json(out, fmt.MANIFEST, report)
    histogram = _load_json(out, fmt.HISTOGRAM, report)
    stats = _load_json(out, fmt.STATS, report)
    m = _check_manifest(manifest, report)
    if m is None:
        return report
    sizes, sps, dtype, _pad, _unk, _vocab, files = m
    if (manifest.get("units") or {}).get("layout") == "packed":  # units.pack
        from .verify_packed import verify_packed

        return verify_packed(out, manifest, histogram, stats, m, report, source, all, sample, root, seed)
    has_masks = "loss_mask" in manifest  # source.train_on: mask_XXXXXX.bin beside every shard
    policy = (manifest.get("units") or {}).get("overflow", "error")  # units.overflow with unit sizes
    if policy not in OVERFLOW_OF:
        report.add(fmt.MANIFEST, f"units.overflow {policy!r} is not error, drop or truncate")
        policy = "error"

    entries = sorted(os.listdir(out))
    declared = {fs.unit_dir(s) for s in sizes}
    for name in entries:
        full = os.path.join(out, name)
        if _UNIT.match(name) and name not in declared:
            report.add(name, f"unit directory not declared in manifest.json (sizes {sizes})")
        elif not _UNIT.match(name) and name not in INDEX_FILES:
            report.add(name, "unexpected entry in the output directory")
        elif name in declared and not os.path.isdir(full):
            report.add(name, "is not a directory")
    for d in sorted(declared - set(entries)):
        report.add(d, "declared unit directory is missing")

    # --- sample_index.jsonl ------------------------------------------------------------------------
    idx = _read_sample_index(out, report, sizes, sps, files, policy)
    n = len(idx.tc)
    report.samples = n
    per_unit = {s: np.flatnonzero(idx.unit == s) for s in sizes}
    counts = {s: int(len(per_unit[s])) for s in sizes}

    # --- shards: names, sizes, padding, vocabulary, UNK positions ---------------------------------
    found_unk: dict[int, list[int]] = {}
    for s in sizes:
        _check_unit(out, s, per_unit[s], sps, has_masks, m, idx, report, found_unk)

    # --- histogram, stats ---------------------------------------------------------------------------
    dist = {str(s): counts[s] for s in sizes}
    if isinstance(histogram, dict):
        got = {str(k): v for k, v in histogram.items()}
        if got != dist:
            report.add("histogram.json", f"{got} does not match the samples per unit in sample_index.jsonl {dist}")
    elif histogram is not None:
        report.add("histogram.json", "is not a JSON object")

    dup_groups = _check_duplicates(out, idx, files, report)
    _check_unk(out, idx, files, found_unk, report)
    if isinstance(stats, dict):
        _check_stats(stats, idx, dist, sizes, sps, dtype, dup_groups, found_unk, policy, files, report)
    elif stats is not None:
        report.add("stats.json", "is not a JSON object")

    if source:
        _check_source(out, manifest, idx, per_unit, sizes, sps, dtype, report, all, sample, root, seed)
    return report


def _check_unit(out: str, s: int, ids, sps: int, has_masks: bool, m, idx: _Index, report: Report,
                found_unk: dict) -> None:
    """One unit directory: exactly its shards (and masks), each of whole records, checked record by record."""
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
            why = ("an empty unit holds no shard" if count == 0 and _SHARD.match(name) else
                   f"not expected: unit {s} has {count} samples in {len(want)} shards" if _SHARD.match(name)
                   else "unexpected file")
            report.add(f"{fs.unit_dir(s)}/{name}", why)
    if count == 0 and EMPTY_MARKER not in names:
        report.add(fs.unit_dir(s), f"empty unit without {EMPTY_MARKER}")
    if count and EMPTY_MARKER in names:
        report.add(f"{fs.unit_dir(s)}/{EMPTY_MARKER}", f"unit {s} is not empty ({count} samples)")
    for k, name in enumerate(want):
        rel = f"{fs.unit_dir(s)}/{name}"
        path = os.path.join(udir, name)
        members = ids[k * sps:(k + 1) * sps]
        if not os.path.isfile(path):
            report.add(rel, f"missing (holds samples {int(members[0])}..{int(members[-1])})")
            continue
        report.shards += 1
        size = os.path.getsize(path)
        expected = len(members) * s * bpt
        if size != expected:
            report.add(rel, f"size {size} bytes, expected {len(members)} records * {s} tokens * {bpt} bytes "
                            f"= {expected}")
            if size % (s * bpt):
                continue  # not whole records: the rows cannot be trusted
        _check_shard(path, rel, s, members, idx, dtype, pad, unk, vocab, report, found_unk)
        if has_masks:
            _check_mask(os.path.join(udir, masks[k]), f"{fs.unit_dir(s)}/{masks[k]}", s, members, idx, report)


def _check_stats(stats: dict, idx: _Index, dist: dict, sizes, sps: int, dtype, dup_groups, found_unk: dict,
                 policy: str, files: list, report: Report) -> None:
    """stats.json against the figures the files give (the spec's keys, shards, overflow, empty_files)."""
    want_stats = {
        "total_samples": len(idx.tc), "total_tokens": int(idx.tc.sum()), "token_dtype": dtype.name,
        "bytes_per_token": dtype.itemsize, "duplicate_groups": len(dup_groups),
        "duplicate_samples": int(sum(len(g) for g in dup_groups)),
        "samples_with_unk": len(found_unk), "unk_tokens": int(sum(len(v) for v in found_unk.values())),
        "unit_distribution": dist,
    }
    for key, value in want_stats.items():
        got = stats.get(key)
        if isinstance(got, dict):
            got = {str(k): v for k, v in got.items()}
        if got != value:
            report.add("stats.json", f"{key} is {got!r}, the files give {value!r}")
    if policy != "error" or "overflow" in stats:  # units.overflow: the figures packed rows give
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


def check_empty_files(stats: dict, idx: _Index, files: list, report: Report) -> None:
    """stats.json empty_files (source.allow_empty) lists exactly the source files without a sample."""
    import numpy as np

    per_file = np.bincount(idx.file[idx.file >= 0], minlength=len(files)) if len(files) else []
    empty = [f for f, c in zip(files, per_file) if c == 0]
    if stats.get("empty_files", []) != empty:
        report.add("stats.json", f"empty_files is {stats.get('empty_files')!r}, sample_index.jsonl gives {empty!r}")


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
            report.add("manifest.json", f"token_storage.dtype {storage.get('dtype')!r} != token_dtype {dname!r}")
        if storage.get("bytes_per_token", dtype.itemsize) != dtype.itemsize:
            report.add("manifest.json", f"bytes_per_token {storage.get('bytes_per_token')!r} does not match "
                                        f"{dname} ({dtype.itemsize})")
        tok = manifest.get("tokenizer") or {}
        vocab, pad, unk = tok.get("vocab_size"), tok.get("pad_id"), tok.get("unk_id")
        no_unk = unk is None and tok.get("type") == "hf_dir"  # a byte-level tokenizer directory: no UNK id
        if not all(_is_int(v) for v in (vocab, pad) + (() if no_unk else (unk,))) \
                or not (0 <= pad < vocab and (no_unk or 0 <= unk < vocab)):
            report.add("manifest.json", f"tokenizer vocab_size/pad_id/unk_id invalid: {vocab!r}/{pad!r}/{unk!r}")
            return None
        if (vocab <= 65535) != (dname == "uint16"):
            report.add("manifest.json", f"dtype {dname} does not follow vocab_size {vocab}")
        sizes = (manifest.get("units") or {}).get("sizes")
        if not isinstance(sizes, list) or not sizes or not all(_is_int(s) and s > 0 for s in sizes) \
                or sorted(set(sizes)) != sizes:
            report.add("manifest.json", f"units.sizes {sizes!r} is not an ascending list of positive ints")
            return None
        sps = (manifest.get("output") or {}).get("samples_per_shard")
        if not _is_int(sps) or sps <= 0:
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


def _overflow_figures(policy: str, idx: _Index, limit: int) -> dict:
    import numpy as np

    dropped, truncated = np.flatnonzero(idx.status == 1), np.flatnonzero(idx.status == 2)
    return {"policy": policy, "dropped": int(len(dropped)), "truncated": int(len(truncated)),
            "truncated_tokens_lost": int((idx.source_tc[truncated] - limit).sum()),
            "dropped_ids": dropped.tolist(), "truncated_ids": truncated.tolist()}


_FAST_KEYS = {"sample_id", "token_count", "unit_size", "hash", "source_file", "source_line", "shard_path", "shard_row",
              "trained_tokens"}


def _sample_index_fast(out: str, sizes, sps, files) -> _Index | None:
    """sample_index.jsonl as columns, checked array by array: the common case (every line well formed
    and in place) at 0.1 s instead of 0.4 s of CPU for 61 k samples. None as soon as anything is off
    (a blank or invalid line, a missing key, a wrong type, any disagreement): the line-by-line check
    then finds and words every problem. Checks exactly what that check checks, so a None-free pass
    means it would have found nothing."""
    import numpy as np
    try:
        with open(os.path.join(out, fmt.SAMPLE_INDEX), "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        rows = [orjson.loads(line) for line in lines]
        if set().union(*map(set, rows)) - _FAST_KEYS:  # overflow, repeat (take), ...: checked line by line
            return None
        cols = list(zip(*[(o["sample_id"], o["token_count"], o["unit_size"], o["hash"], o["source_file"],
                           o["source_line"], o["shard_path"], o["shard_row"]) for o in rows]))
        if not rows:
            return None
        sid, tc, unit, hashes, src, line, paths, srow = cols
        if any(set(map(type, col)) != {int} for col in (sid, tc, unit, line, srow)):  # no bool, no float
            return None
        if set(map(type, hashes)) != {str} or set(map(len, hashes)) != {64} or not _HEX_RUN.fullmatch("".join(hashes)):
            return None
        file_of = {f: i for i, f in enumerate(files)}
        fi = np.array([file_of.get(s, -1) for s in src], dtype=np.int64)
    except (orjson.JSONDecodeError, KeyError, TypeError, OSError):
        return None
    n = len(rows)
    sid, tc, unit, line, srow = (np.array(c, dtype=np.int64) for c in (sid, tc, unit, line, srow))
    size_arr = np.asarray(sizes, dtype=np.int64)
    fit = np.searchsorted(size_arr, tc)
    if (not np.array_equal(sid, np.arange(n)) or tc.min() < 0 or fit.max() >= len(size_arr)
            or not np.array_equal(size_arr[fit], unit) or fi.min() < 0 or line.min() < 1):
        return None
    if n > 1 and not np.all((fi[1:] > fi[:-1]) | ((fi[1:] == fi[:-1]) & (line[1:] > line[:-1]))):
        return None
    rank = np.empty(n, dtype=np.int64)  # a sample's place among its unit's samples
    for u in np.unique(fit).tolist():
        members = np.flatnonzero(fit == u)
        rank[members] = np.arange(len(members))
    code = {fs.shard_path(int(size_arr[u]), k): u * n + k for u in np.unique(fit).tolist()
            for k in range(int(rank[fit == u].max()) // sps + 1)}
    try:
        got = np.array([code.get(p, -1) for p in paths], dtype=np.int64)
    except TypeError:
        return None
    if not np.array_equal(got, fit * n + rank // sps) or not np.array_equal(srow, rank % sps):
        return None
    idx = _Index(n)
    idx.files = list(files)
    idx.tc, idx.unit, idx.line, idx.file = tc, unit, line, fi
    idx.hashes, idx.shard_path = list(hashes), list(paths)
    idx.valid[:] = True
    return idx


def _read_sample_index(out: str, report: Report, sizes, sps, files, policy: str = "error") -> _Index:
    fast = _sample_index_fast(out, sizes, sps, files)
    if fast is not None:
        return fast
    rows = list(_jsonl_rows(out, fmt.SAMPLE_INDEX, report))
    idx = _Index(len(rows))
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
            report.add(name, f"line {n}: sample_id {sid!r}, expected {i} (ids count 0, 1, 2, ... in order)", i)
        tc, unit = obj.get("token_count"), obj.get("unit_size")
        if not _is_int(tc) or tc < 0:
            report.add(name, f"token_count {tc!r} is not a non-negative int", i)
            continue
        idx.status[i] = overflow_of(obj, i, tc, sizes[-1], policy, "the largest unit", report)
        if idx.status[i]:
            idx.source_tc[i] = obj.get("source_token_count") if _is_int(obj.get("source_token_count")) else 0
        if idx.status[i] == 1:  # dropped: in no unit and no shard
            place = (unit, obj.get("shard_path"), obj.get("shard_row"))
            if place != (None, None, None):
                report.add(name, f"dropped sample has a unit and a place in the shards {place}", i)
            idx.hashes[i], idx.file[i], idx.line[i], last = _check_origin(obj, i, file_of, last, report, idx)
            idx.valid[i] = True
            continue
        if unit not in seen_in_unit:
            report.add(name, f"unit_size {unit!r} is not a declared size {sizes}", i)
            continue
        fit = next((s for s in sizes if s >= tc), None)
        if fit != unit:
            report.add(name, f"token_count {tc} belongs in unit {fit}, not {unit}", i)
        h, fi, line, last = _check_origin(obj, i, file_of, last, report, idx)
        k = seen_in_unit[unit]
        seen_in_unit[unit] = k + 1
        want_path = fs.shard_path(unit, k // sps)
        if obj.get("shard_path") != want_path:
            report.add(name, f"shard_path {obj.get('shard_path')!r}, expected {want_path!r}", i)
        if "shard_row" in obj and obj["shard_row"] != k % sps:
            report.add(name, f"shard_row {obj['shard_row']!r}, expected {k % sps}", i)
        idx.tc[i], idx.unit[i], idx.line[i], idx.file[i] = tc, unit, line, fi
        idx.hashes[i] = h
        idx.shard_path[i] = want_path
        idx.valid[i] = True
    return idx


def _check_origin(obj: dict, i: int, file_of: dict, last: tuple, report: Report, idx: _Index):
    """A sample_index.jsonl line's hash and source: (hash or "", file index or -1, line or 0, the
    (file, repeat, line) the next sample must follow); its repeat (source.take) goes to idx."""
    name = fmt.SAMPLE_INDEX
    h = obj.get("hash")
    if not isinstance(h, str) or not _HEX64.match(h):
        report.add(name, f"hash {h!r} is not a SHA-256 hex digest", i)
        h = ""
    src, line, repeat = obj.get("source_file"), obj.get("source_line"), obj.get("repeat", 0)
    fi = file_of.get(src, -1)
    if fi < 0:
        report.add(name, f"source_file {src!r} is not a source file of manifest.json", i)
    if not _is_int(repeat) or repeat < 0:
        report.add(name, f"repeat {repeat!r} is not a non-negative int", i)
        repeat = 0
    idx.repeat[i] = repeat
    if not _is_int(line) or line < 1:
        report.add(name, f"source_line {line!r} is not a positive int", i)
        line = 0
    elif fi >= 0 and (fi, repeat, line) <= last:
        report.add(name, f"{src}:{line} (repeat {repeat}) is not after the previous sample's (input order)", i)
    if fi >= 0 and line:
        last = (fi, repeat, line)
    return h, fi, line, last


def _check_shard(path, rel, unit, members, idx: _Index, dtype, pad, unk, vocab, report: Report, found_unk) -> None:
    import numpy as np
    data = np.memmap(path, dtype=dtype, mode="r") if os.path.getsize(path) else np.zeros(0, dtype=dtype)
    rows = data.reshape(-1, unit)
    cols = np.arange(unit)
    for lo in range(0, min(len(rows), len(members)), BLOCK_ROWS):
        block = np.asarray(rows[lo:lo + BLOCK_ROWS][:len(members) - lo])
        ids = members[lo:lo + len(block)]
        tc = idx.tc[ids]
        tail = cols[None, :] >= tc[:, None]
        for r in np.flatnonzero(((block != pad) & tail).any(axis=1)):
            sid = int(ids[r])
            first = int(np.flatnonzero((block[r] != pad) & tail[r])[0])
            report.add(rel, f"row {lo + r}: slot {first} holds {int(block[r, first])}, not pad_id {pad} "
                            f"(token_count {int(tc[r])})", sid)
        for r in np.flatnonzero(((block >= vocab) & ~tail).any(axis=1)):
            sid = int(ids[r])
            report.add(rel, f"row {lo + r}: token outside the vocabulary ({vocab})", sid)
        unk_mask = (block == unk) & ~tail
        for r in np.flatnonzero(unk_mask.any(axis=1)):
            found_unk[int(ids[r])] = np.flatnonzero(unk_mask[r]).tolist()


def _check_mask(path, rel, unit, members, idx: _Index, report: Report) -> None:
    """Loss masks: ceil(unit / 8) bytes per record, bit order little, no bit set after token_count."""
    import numpy as np
    if not os.path.isfile(path):
        report.add(rel, "missing (manifest.json declares loss masks)")
        return
    width = -(-unit // 8)
    size = os.path.getsize(path)
    if size != len(members) * width:
        report.add(rel, f"size {size} bytes, expected {len(members)} records * {width} bytes = {len(members) * width}")
        return
    if not size:
        return
    bits = np.unpackbits(np.fromfile(path, dtype=np.uint8).reshape(-1, width), axis=1, count=unit, bitorder="little")
    tail = np.arange(unit)[None, :] >= idx.tc[members][:, None]
    for r in np.flatnonzero((bits.astype(bool) & tail).any(axis=1)):
        report.add(rel, f"row {r}: mask bit set after token_count {int(idx.tc[members[r]])}", int(members[r]))


def _check_duplicates(out: str, idx: _Index, files, report: Report) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, h in enumerate(idx.hashes):
        if h:
            groups.setdefault(h, []).append(i)
    want = [ids for ids in groups.values() if len(ids) > 1]
    want.sort(key=lambda ids: ids[0])
    name = fmt.DUPLICATE_INDEX
    got = list(_jsonl_rows(out, name, report))
    for k, (n, obj) in enumerate(got):
        if obj is None:
            continue
        if k >= len(want):
            report.add(name, f"line {n}: group of hash {str(obj.get('hash'))[:16]}... is not a duplicate group "
                             "of sample_index.jsonl")
            continue
        ids = want[k]
        exp = {"hash": idx.hashes[ids[0]], "count": len(ids),
               "samples": [{"sample_id": i, "source_file": files[idx.file[i]] if idx.file[i] >= 0 else None,
                            "source_line": int(idx.line[i])} for i in ids]}
        samples = obj.get("samples")
        have = {"hash": obj.get("hash"), "count": obj.get("count"),
                "samples": [{key: s.get(key) for key in ("sample_id", "source_file", "source_line")}
                            for s in samples if isinstance(s, dict)] if isinstance(samples, list) else samples}
        if have != exp:
            report.add(name, f"line {n}: expected the group of samples {ids} (hash {exp['hash'][:16]}...), "
                             f"found {have['samples'] if isinstance(have['samples'], list) else have}", ids[0])
    for ids in want[len(got):]:
        report.add(name, f"missing the duplicate group of samples {ids}", ids[0])
    return want


def _check_unk(out: str, idx: _Index, files, found_unk: dict[int, list[int]], report: Report) -> None:
    name = fmt.UNK_INDEX
    listed: dict[int, list[int]] = {}
    for n, obj in _jsonl_rows(out, name, report):
        if obj is None:
            continue
        sid = obj.get("sample_id")
        if not _is_int(sid) or not 0 <= sid < len(idx.tc):
            report.add(name, f"line {n}: sample_id {sid!r} is not a sample of sample_index.jsonl")
            continue
        if sid in listed:
            report.add(name, f"line {n}: listed twice", sid)
        pos = obj.get("unk_positions")
        if not isinstance(pos, list) or not all(_is_int(p) for p in pos):
            report.add(name, f"line {n}: unk_positions is not a list of ints", sid)
            pos = []
        listed[sid] = pos
        if obj.get("unk_count") != len(pos):
            report.add(name, f"line {n}: unk_count {obj.get('unk_count')!r} != {len(pos)} positions", sid)
        if obj.get("hash") != idx.hashes[sid]:
            report.add(name, f"line {n}: hash differs from sample_index.jsonl", sid)
        src = files[idx.file[sid]] if idx.file[sid] >= 0 else None
        if obj.get("source_file") != src or obj.get("source_line") != int(idx.line[sid]):
            report.add(name, f"line {n}: source {obj.get('source_file')}:{obj.get('source_line')} differs from "
                             f"sample_index.jsonl ({src}:{int(idx.line[sid])})", sid)
    order = list(listed)
    if order != sorted(order):
        report.add(name, "samples are not in sample_id order")
    for sid in sorted(set(listed) | set(found_unk)):
        want, have = found_unk.get(sid), listed.get(sid)
        if have is None:
            report.add(name, f"missing: the sample's tokens hold unk_id at {want}", sid)
        elif want is None:
            if idx.valid[sid]:
                report.add(name, f"listed, but the sample's tokens hold no unk_id (positions {have})", sid)
        elif want != have:
            report.add(name, f"unk_positions {have}, the shard record has unk_id at {want}", sid)


# --- against the source files and the tokenizer ------------------------------------------------------


def _check_source(out, manifest, idx: _Index, per_unit, sizes, sps, dtype, report: Report, all_samples: bool,
                  sample: int, root: str | None, seed: int, packed=None) -> None:
    """packed (units.pack): (locate(i) -> (shard path, row in shard, offset) or None, encoded counts)."""
    report.source_checked = True
    root = root or os.getcwd()
    n = len(idx.tc)
    if all_samples:
        chosen = set(range(n))
    else:
        rng = random.Random(seed)
        chosen = set(rng.sample(range(n), min(n, sample))) if n else set()
    texts = _source_texts(manifest, idx, report, chosen, root)
    _encode_again(out, manifest, idx, per_unit, sizes, sps, dtype, report, texts, root, packed)


def _source_texts(manifest, idx: _Index, report: Report, chosen: set, root: str) -> dict[int, str]:
    """Read every source file again (any input kind), render and hash each sample, compare it with the
    index; returns the rendered texts of the `chosen` samples. A file under source.take: its samples
    are also the ones its take and seed choose (mintdim/sources/take.py), with their repeats."""
    import numpy as np
    from ..sources import inputs
    from ..sources import template as T

    src = manifest.get("source") or {}
    files, fields, templates = src.get("files") or [], src.get("fields") or [], src.get("templates") or []
    takes = {t.get("file"): t for t in (manifest.get("take") or {}).get("files", []) if isinstance(t, dict)}
    texts: dict[int, str] = {}
    n = len(idx.tc)
    sid = 0
    for fi, decl in enumerate(files):
        path = decl if os.path.isabs(decl) else os.path.join(root, decl)
        if not inputs.exists(path):
            report.add(decl, f"source file not found (looked for {path})")
            sid = int(np.searchsorted(idx.file, fi, side="right")) if len(idx.file) else sid
            continue
        names = fields[fi] if fi < len(fields) else []
        chat = ((manifest.get("chat") or {}).get("source") or [None] * (fi + 1))[fi]
        try:
            tpl = _chat_template(manifest, chat, root, decl) if chat is not None else T.parse(templates[fi])
        except (IndexError, T.TemplateSyntaxError):
            report.add("manifest.json", f"no valid template for source file {decl}")
            continue
        except Exception as exc:  # source.chat: the tokenizer directory or its template
            report.add("manifest.json", f"cannot render the conversations of {decl}: {str(exc).splitlines()[0]}")
            continue
        rendered = _rendered(path, decl, names, chat, tpl, idx, fi, sid, chosen, report)
        if decl in takes:
            sid = _check_taken(rendered, decl, fi, takes[decl], (manifest.get("take") or {}).get("seed"), idx, sid,
                               chosen, texts, report)
        else:
            sid = _check_whole(rendered, decl, fi, idx, sid, chosen, texts, report)
    if sid < n:
        report.add("sample_index.jsonl", f"{n - sid} samples more than the source files hold ({sid})", sid)
    return texts


def _rendered(path, decl, names, chat, tpl, idx: _Index, fi: int, sid: int, chosen: set, report: Report):
    """(line, digest, text) of every sample of one source, in order: digest None for one that is no
    longer valid (reported), text only where the index's chosen samples of this file need it."""
    from .. import errors as E
    from ..sources import inputs, jsonl

    wanted = {int(idx.line[i]) for i in chosen if idx.file[i] == fi}
    try:
        reader = inputs.open_whole(path, decl, names, chat)
        for local, raw in reader:
            line = reader.location(local)
            try:
                obj = jsonl.declared_values(reader.parse(raw, line), names, decl, line)
                text = tpl.render(obj)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            except (E.MintDimError, UnicodeEncodeError) as err:
                report.add(decl, f"{_where(line)} is no longer a valid sample: {str(err).splitlines()[0]}")
                yield line, None, None
                continue
            yield line, digest, text if int(line) in wanted else None
    except E.MintDimError as err:
        report.add(decl, f"cannot be read: {str(err).splitlines()[0]}")


def _check_whole(rendered, decl, fi: int, idx: _Index, sid: int, chosen, texts, report: Report) -> int:
    """A source without take: its samples are the index's next ones, one each, in order."""
    n = len(idx.tc)
    for line, digest, text in rendered:
        if digest is None or sid >= n:
            if digest is not None:
                report.add(decl, f"{_where(line)} has no sample in sample_index.jsonl")
            sid += 1
            continue
        if _compare(idx, sid, fi, decl, line, 0, digest, report) and sid in chosen:
            texts[sid] = text
        sid += 1
    return sid


def _where(line) -> str:
    """A source place in words: "line 7" (JSONL) or "row 7" (Parquet, datasets)."""
    from ..errors import Row

    return f"row {line}" if isinstance(line, Row) else f"line {line}"


def _compare(idx: _Index, sid: int, fi: int, decl: str, line: int, repeat: int, digest: str, report: Report,
             why: str = "the source files give") -> bool:
    """Does index sample `sid` come from this source place and text? Else a problem is reported."""
    if idx.file[sid] != fi or idx.line[sid] != line or idx.repeat[sid] != repeat:
        got = f"{idx.file_name(sid)}:{int(idx.line[sid])}" + (f" repeat {int(idx.repeat[sid])}" if repeat else "")
        report.add("sample_index.jsonl", f"source is {got}, {why} {decl}:{line}" + (f" repeat {repeat}" if repeat
                                                                                      else ""), sid)
        return False
    if idx.hashes[sid] != digest:
        report.add("sample_index.jsonl", f"hash differs from the rendered text of {decl}:{line}", sid)
        return False
    return True


def _check_taken(rendered, decl, fi: int, entry: dict, seed, idx: _Index, sid: int, chosen, texts,
                 report: Report) -> int:
    """A source under source.take: the samples its take and seed choose, from the samples it holds now."""
    from ..sources import take as TK

    samples = list(rendered)  # (line, digest, text): 32 bytes and a line number per sample
    available = len(samples)
    value, index = entry.get("take"), entry.get("file_index")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _is_int(index) or not _is_int(seed):
        report.add("manifest.json", f"take of {decl}: take, file_index and seed are not numbers: {entry}")
        return sid
    want = TK.summary(decl, index, value, available)
    if entry != want:
        report.add("manifest.json", f"take of {decl} is {entry}, the source gives {want}")
    positions, repeats = TK.select(value, available, seed, index)
    n = len(idx.tc)
    for p, r in zip(positions.tolist(), repeats.tolist()):
        line, digest, text = samples[p]
        if sid >= n:
            report.add(decl, f"{_where(line)} repeat {r} (chosen by its take) has no sample in sample_index.jsonl")
        elif digest is not None:
            if _compare(idx, sid, fi, decl, line, r, digest, report, f"the take of {decl} (seed {seed}) chooses") \
                    and sid in chosen:
                texts[sid] = text
        sid += 1
    return sid


def _encode_again(out, manifest, idx: _Index, per_unit, sizes, sps, dtype, report: Report, texts: dict, root: str,
                  packed) -> None:
    """The chosen samples' texts encoded again with the tokenizer, compared with their shard records."""
    import numpy as np

    tok = _manifest_tokenizer(manifest, root, report)
    if tok is None:
        return
    if packed is None:
        def locate(i):  # (shard, row in it, first slot, record width) of a stored sample; None: dropped
            if idx.status[i] == 1:
                return None
            unit = int(idx.unit[i])
            return idx.shard_path[i], int(np.searchsorted(per_unit[unit], i)) % sps, 0, unit

        counts = np.where(idx.status > 0, idx.source_tc, idx.tc)  # a cut sample: the encoder gives its whole length
    else:
        def locate(i):
            place = packed[0](i)
            return None if place is None else (*place, sizes[0])

        counts = packed[1]
    _compare_encoded(out, tok, texts, idx, locate, counts, dtype, report)


def _manifest_tokenizer(manifest: dict, root: str, report: Report):
    """The manifest's tokenizer, loaded from `root`, its ids checked against the manifest; None: unloadable."""
    from ..tokenizers.kinds import load

    tok_cfg = manifest.get("tokenizer") or {}
    tpath = tok_cfg.get("path", "")
    tpath = tpath if os.path.isabs(tpath) else os.path.join(root, tpath)
    try:
        tok = load(tok_cfg.get("type"), tpath, **(manifest.get("tokenizer_options") or {}))
    except Exception as exc:  # the library's own words
        report.add("manifest.json", f"tokenizer {tok_cfg.get('path')!r} cannot be loaded from {tpath}: "
                                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")
        return None
    for key, value in (("vocab_size", tok.vocab_size), ("unk_id", tok.unk_id), ("pad_id", tok.pad_id)):
        if tok_cfg.get(key) != value:
            report.add("manifest.json", f"tokenizer {key} is {tok_cfg.get(key)!r}, the tokenizer file says {value!r}")
    return tok


def _compare_encoded(out, tok, texts: dict, idx: _Index, locate, counts, dtype, report: Report) -> None:
    """Each chosen sample re-encoded: the encoder's count is counts[i] (its whole length), and the record
    where locate(i) puts it (None: dropped) holds the first token_count of its tokens."""
    import numpy as np

    ids = sorted(texts)
    shards: dict[str, np.ndarray] = {}
    for lo in range(0, len(ids), 1024):
        batch = ids[lo:lo + 1024]
        flat, lengths = tok.encode_batch([texts[i] for i in batch])
        ends = np.cumsum(lengths)
        for j, i in enumerate(batch):
            tokens = flat[ends[j] - lengths[j]:ends[j]]
            report.encoded += 1
            want = int(counts[i])
            if len(tokens) != want:
                key = "token_count" if want == idx.tc[i] else "source_token_count"
                report.add("sample_index.jsonl", f"{key} {want}, the tokenizer gives {len(tokens)}", i)
                continue
            place = locate(i)
            if place is None:  # dropped: nothing stored to compare
                continue
            rel, row, offset, width = place
            tokens = tokens[:int(idx.tc[i])].astype(dtype)
            if rel not in shards:
                try:
                    shards[rel] = np.memmap(os.path.join(out, rel), dtype=dtype, mode="r").reshape(-1, width)
                except (OSError, ValueError):
                    shards[rel] = np.zeros((0, width), dtype=dtype)
            if row >= len(shards[rel]):
                continue  # a missing or short shard is reported already
            stored = shards[rel][row, offset:offset + len(tokens)]
            if not np.array_equal(stored, tokens):
                where = offset + int(np.flatnonzero(stored != tokens)[0])
                report.add(rel, f"row {row}: tokens differ from the tokenizer's encode of the source "
                                f"(first at slot {where})", i)


def _chat_template(manifest: dict, chat: dict, root: str, decl: str):
    """source.chat: the build's renderer (its tokenizer directory's chat template) for one file."""
    from ..sources.chat import ChatRenderer
    from ..tokenizers.kinds import load

    tok_cfg = manifest.get("tokenizer") or {}
    tpath = tok_cfg.get("path", "")
    opts = dict(manifest.get("tokenizer_options") or {})
    if opts.get("chat_template") and not os.path.isabs(opts["chat_template"]):
        opts["chat_template"] = os.path.join(root, opts["chat_template"])
    tok = load("hf_dir", tpath if os.path.isabs(tpath) else os.path.join(root, tpath), **opts)
    return ChatRenderer(tok.chat_template, tok.special_tokens, chat, None, (), tok.tool_chat_template).as_template(decl)


def main_lines(report: Report, limit: int | None = 50) -> list[str]:
    """What `mintdim verify` prints: each problem (up to `limit`), then the summary."""
    shown = report.problems[:limit] if limit is not None else report.problems
    lines = [p.text(report.path) for p in shown]
    if report.count > len(lines):
        lines.append(f"... and {report.count - len(lines)} more")
    lines.append(report.summary())
    return lines


def to_json(report: Report) -> str:
    return json.dumps({"path": report.path, "ok": report.ok, "problems": report.count, "samples": report.samples,
                       "shards": report.shards, "source_checked": report.source_checked, "encoded": report.encoded,
                       "list": [{"file": p.file, "sample": p.sample, "message": p.message}
                                for p in report.problems]}, ensure_ascii=False, indent=1)
