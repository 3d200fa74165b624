"""What `mintdim verify` checks the same way in both layouts (verify.py: unit sizes, verify_packed.py:
packed rows): the report, sample_index.jsonl as columns and the keys of its lines (origin, overflow),
stats.json's empty_files, and the two indexes recomputed from it (duplicate_index.jsonl, unk_index.jsonl)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import orjson

from ..formats import output as fmt

MAX_PROBLEMS = 10_000  # kept in the report; the count goes on
BLOCK_ROWS = 65_536
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


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
    checksums: object = None  # formats/checksums.py Check: what the checksum pass found (None: not run)
    notes: list[str] = field(default_factory=list)  # said beside the problems, not problems themselves
    progress: object = field(default=None, repr=False, compare=False)  # a Progress over the shards, or None

    def shard_done(self) -> None:
        """One more shard read and checked (a progress line every few seconds on long checks)."""
        self.shards += 1
        if self.progress is not None:
            self.progress.update(self.shards)

    @property
    def ok(self) -> bool:
        return self.count == 0

    def add(self, file: str, message: str, sample: int | None = None) -> None:
        self.count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(file, message, sample))

    def summary(self) -> str:
        what = f"{self.samples} samples, {self.shards} shards"
        if self.checksums is not None and self.checksums.present:
            what += f", {self.checksums.files} files checksummed"
        if self.source_checked:
            what += f", source re-hashed, {self.encoded} samples re-encoded"
        if self.ok:
            return f"[verify] {self.path}: OK ({what})"
        return f"[verify] {self.path}: {self.count} problem{'s' if self.count != 1 else ''} ({what})"


class HexDigests:
    """n SHA-256 hex digests kept as the one string they make joined, not as n string objects (61 k of
    them cost 0.01 to 0.02 s to make): digests[i], len(), iteration, and `joined`."""

    __slots__ = ("joined",)

    def __init__(self, joined: str):
        self.joined = joined

    def __len__(self) -> int:
        return len(self.joined) // 64

    def __getitem__(self, i: int) -> str:
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.joined[64 * i : 64 * i + 64]

    def __iter__(self):
        return (self.joined[k : k + 64] for k in range(0, len(self.joined), 64))


class Index:
    """sample_index.jsonl as columns."""

    def __init__(self, n: int):
        import numpy as np

        self.tc = np.zeros(n, dtype=np.int64)
        self.unit = np.zeros(n, dtype=np.int64)
        self.line = np.zeros(n, dtype=np.int64)
        self.file = np.full(n, -1, dtype=np.int64)
        self.hashes: list[str] | HexDigests = [""] * n  # "" where a line gives none
        self.shard_path: list[str] = [""] * n  # packed rows (a bucketed sample's follows from its unit)
        self.shard_row = np.full(n, -1, dtype=np.int64)
        self.valid = np.zeros(n, dtype=bool)
        # units.overflow: 0 whole, 1 dropped, 2 truncated; 3 left out by source.drop_untrained
        self.status = np.zeros(n, dtype=np.int8)
        self.source_tc = np.zeros(n, dtype=np.int64)  # the whole length of a dropped or truncated sample
        self.repeat = np.zeros(n, dtype=np.int64)  # source.take: the sample's repeat (0 without take)
        self.trained = np.full(n, -1, dtype=np.int64)  # trained_tokens (source.train_on); -1: not given
        self.files: list[str] = []  # manifest.json's source files, which `file` indexes
        self.skipped: dict[int, set[int]] = {}  # source.on_bad_record: skip: the lines skipped, per file

    def file_name(self, i: int) -> str:
        f = int(self.file[i])
        return self.files[f] if 0 <= f < len(self.files) else "?"


OVERFLOW_OF = {"error": set(), "drop": {"dropped"}, "truncate": {"truncated"}}


def overflow_policy(manifest: dict, report: Report) -> str:
    """units.overflow as manifest.json declares it; "error" (reported) when it is none of the three."""
    policy = (manifest.get("units") or {}).get("overflow", "error")
    if policy not in OVERFLOW_OF:
        report.add(fmt.MANIFEST, f"units.overflow {policy!r} is not error, drop or truncate")
        policy = "error"
    return policy


def overflow_of(obj: dict, i: int, tc: int, limit: int, policy: str, where: str, report: Report) -> int:
    """A sample_index.jsonl line's overflow keys, checked against the manifest's policy (units.overflow):
    0 a whole sample (no overflow key, no source_token_count), 1 dropped (token_count 0), 2 truncated
    (token_count = limit); a cut sample's source_token_count is above `limit` (`where` names it)."""
    name = fmt.SAMPLE_INDEX
    over = obj.get("overflow")
    if "untrained" in obj:
        return untrained_of(obj, i, tc, report)
    if over is None:
        if "source_token_count" in obj:
            report.add(name, "source_token_count without overflow", i)
        return 0
    if over not in OVERFLOW_OF[policy]:
        report.add(name, f"overflow {over!r} does not follow the manifest's policy {policy!r}", i)
    stc = obj.get("source_token_count")
    if not is_int(stc) or stc <= limit:
        report.add(name, f"overflow {over!r} but source_token_count {stc!r} fits {where} {limit}", i)
    want_tc = 0 if over == "dropped" else limit
    if tc != want_tc:
        report.add(name, f"{over} sample: token_count {tc}, expected {want_tc}", i)
    return 1 if over == "dropped" else 2


def untrained_of(obj: dict, i: int, tc: int, report: Report) -> int:
    """A line of a sample source.drop_untrained left out (status 3): "untrained": "dropped", no overflow
    key, token_count 0 and its whole length in source_token_count (its trained_tokens: check_trained)."""
    name = fmt.SAMPLE_INDEX
    if obj["untrained"] != "dropped" or "overflow" in obj:
        report.add(
            name,
            f"untrained {obj['untrained']!r} with overflow {obj.get('overflow')!r}: a sample left out "
            'for training no token carries "untrained": "dropped" alone',
            i,
        )
    if tc != 0:
        report.add(name, f"untrained sample: token_count {tc}, expected 0", i)
    if not is_int(obj.get("source_token_count")) or obj["source_token_count"] < 0:
        report.add(
            name,
            f"untrained sample: source_token_count {obj.get('source_token_count')!r} is not a "
            "non-negative int",
            i,
        )
    return 3


def check_checksums(out: str, report: Report, log=None) -> None:
    """checksums.sha256: every listed file read again and its SHA-256 compared (formats/checksums.py); each
    file that differs, is missing or is not listed becomes a problem. An output without the file (written
    before MintDim recorded one) gets a note, not a problem: the checks that follow still run."""
    from ..formats import checksums
    from ..progress import Progress

    name = checksums.NAME
    found = report.checksums = checksums.check(
        out, Progress(log, f"[verify] {out}: {name}", 0, "files") if log is not None else None
    )
    if not found.present:
        report.notes.append(
            f"no {name}: the output was written before MintDim recorded one; the other "
            "checks ran, but a changed byte that leaves the files consistent goes unseen"
        )
        return
    for n in found.malformed:
        report.add(name, f"line {n} is not `SHA256  PATH` (or names a file twice)")
    for rel in found.differ:
        report.add(rel, f"its bytes differ from its SHA-256 in {name} (changed since the build)")
    for rel in found.missing:
        report.add(rel, f"listed in {name}, missing")
    for rel in found.extra:
        report.add(rel, f"not listed in {name} (the build did not write it)")


def jsonl_rows(out: str, name: str, report: Report):
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


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_origin(obj: dict, i: int, file_of: dict, last: tuple, report: Report, idx: Index):
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
    if not is_int(repeat) or repeat < 0:
        report.add(name, f"repeat {repeat!r} is not a non-negative int", i)
        repeat = 0
    idx.repeat[i] = repeat
    if not is_int(line) or line < 1:
        report.add(name, f"source_line {line!r} is not a positive int", i)
        line = 0
    elif fi >= 0 and (fi, repeat, line) <= last:
        report.add(
            name, f"{src}:{line} (repeat {repeat}) is not after the previous sample's (input order)", i
        )
    if fi >= 0 and line:
        last = (fi, repeat, line)
    return h, fi, line, last


def check_empty_files(stats: dict, idx: Index, files: list, report: Report) -> None:
    """stats.json empty_files (source.allow_empty) lists exactly the source files without a sample."""
    import numpy as np

    per_file = np.bincount(idx.file[idx.file >= 0], minlength=len(files)) if len(files) else []
    empty = [f for f, c in zip(files, per_file) if c == 0]
    if stats.get("empty_files", []) != empty:
        report.add(
            "stats.json", f"empty_files is {stats.get('empty_files')!r}, sample_index.jsonl gives {empty!r}"
        )


def check_skipped(out: str, manifest: dict, stats, idx: Index, report: Report) -> None:
    """skipped_index.jsonl (source.on_bad_record: skip): each line a record of a source file with its
    line (or row), class and reason, in input order, none of them a sample's origin; stats.json's
    skipped_records and skipped_records_by_class count them. Without skip, neither is there."""
    if not fmt.skips(manifest):
        if isinstance(stats, dict) and "skipped_records" in stats:
            report.add(fmt.STATS, "skipped_records, but manifest.json declares no source.on_bad_record: skip")
        return
    files, per_class, last = idx.files, {}, (-1, 0)
    origins = set(zip(idx.file.tolist(), idx.line.tolist()))
    for n, obj in jsonl_rows(out, fmt.SKIPPED_INDEX, report):
        if obj is None:
            continue
        at = obj.get("source_line", obj.get("source_row"))
        f = files.index(obj.get("source_file")) if obj.get("source_file") in files else -1
        if (
            f < 0
            or not is_int(at)
            or at < 1
            or not isinstance(obj.get("error"), str)
            or not isinstance(obj.get("reason"), str)
        ):
            report.add(
                fmt.SKIPPED_INDEX,
                f"line {n}: not a skipped record of a source file (source_file, "
                "source_line or source_row, error, reason)",
            )
            continue
        if (f, at) <= last:
            report.add(
                fmt.SKIPPED_INDEX, f"line {n}: {files[f]}:{at} is not after the line before (input order)"
            )
        if (f, at) in origins:
            report.add(
                fmt.SKIPPED_INDEX, f"line {n}: {files[f]}:{at} is a sample's origin in sample_index.jsonl"
            )
        last = (f, at)
        idx.skipped.setdefault(f, set()).add(at)
        per_class[obj["error"]] = per_class.get(obj["error"], 0) + 1
    if isinstance(stats, dict):
        want = {
            "skipped_records": sum(per_class.values()),
            "skipped_records_by_class": dict(sorted(per_class.items())),
        }
        for key, value in want.items():
            if stats.get(key) != value:
                report.add(fmt.STATS, f"{key} is {stats.get(key)!r}, {fmt.SKIPPED_INDEX} gives {value!r}")


def check_trained(idx: Index, found, stats, report: Report, manifest=None) -> None:
    """source.train_on: every sample's trained_tokens in sample_index.jsonl (idx.trained, -1 where a line
    that could be read has none) and the total in stats.json are what the mask bits give (`found`)."""
    import numpy as np

    for sid in np.flatnonzero(idx.valid & (idx.trained < 0)).tolist():
        report.add(fmt.SAMPLE_INDEX, "trained_tokens missing (manifest.json declares loss masks)", sid)
    for sid in np.flatnonzero((idx.trained >= 0) & (idx.trained != found)).tolist():
        report.add(
            fmt.SAMPLE_INDEX,
            f"trained_tokens {int(idx.trained[sid])}, the mask bits give {int(found[sid])}",
            sid,
        )
    if isinstance(stats, dict) and stats.get("trained_tokens") != int(found.sum()):
        report.add(
            fmt.STATS,
            f"trained_tokens is {stats.get('trained_tokens')!r}, the mask bits give {int(found.sum())}",
        )
    if isinstance(stats, dict):
        check_untrained(idx, found, stats, report)
    flags = (
        ((manifest or {}).get("source") or {}).get("drop_untrained") if isinstance(manifest, dict) else None
    )
    check_left_out(idx, found, flags if isinstance(flags, list) else [], report)


def check_left_out(idx: Index, found, flags: list, report: Report) -> None:
    """source.drop_untrained (manifest.json's source.drop_untrained, per file): a sample of such a file
    trains a token or is left out (untrained: dropped); no other file's sample is left out so."""
    import numpy as np

    declared = np.array([f is True for f in flags] + [False], dtype=bool)  # [-1]: a sample of no known file
    of_file = declared[np.where((idx.file >= 0) & (idx.file < len(flags)), idx.file, len(flags))]
    for sid in np.flatnonzero((idx.status == 3) & ~of_file).tolist():
        report.add(
            fmt.SAMPLE_INDEX,
            "untrained: dropped, but manifest.json's source.drop_untrained does not name its file",
            sid,
        )
    for sid in np.flatnonzero(idx.valid & of_file & (found == 0) & ~np.isin(idx.status, (1, 3))).tolist():
        report.add(
            fmt.SAMPLE_INDEX,
            "trains no token, but its file leaves such samples out (source.drop_untrained)",
            sid,
        )


def check_untrained(idx: Index, found, stats: dict, report: Report) -> None:
    """stats.json's untrained_samples and untrained_ids: the samples whose mask bits are all 0 (but those
    units.overflow dropped); untrained_dropped: those source.drop_untrained left out (status 3). An output
    written before these keys has none of them: nothing to compare."""
    import numpy as np

    ids = np.flatnonzero(idx.valid & (found == 0) & (idx.status != 1))
    want = {
        "untrained_samples": len(ids),
        "untrained_ids": ids.tolist(),
        "untrained_dropped": int(np.count_nonzero(idx.status == 3)),
    }
    for key, value in want.items():
        if key in stats and stats[key] != value:
            shown = stats[key] if not isinstance(stats[key], list) or len(stats[key]) <= 10 else "[...]"
            report.add(
                fmt.STATS,
                f"{key} is {shown!r}, the mask bits give "
                f"{value if not isinstance(value, list) or len(value) <= 10 else '[...]'}",
            )
    if "untrained_samples" in stats and "untrained_dropped" not in stats and want["untrained_dropped"]:
        report.add(fmt.STATS, "samples are marked untrained: dropped but untrained_dropped is missing")


def check_duplicates(out: str, idx: Index, files, report: Report) -> list[list[int]]:
    """duplicate_index.jsonl against the groups of equal hashes of the index (those it could read),
    found as the build finds them (formats/output.py duplicate_groups); returns those groups."""
    import numpy as np

    if isinstance(idx.hashes, HexDigests):  # every line gave one
        joined, ids_of = idx.hashes.joined, np.arange(len(idx.hashes))
    else:
        joined, ids_of = (
            "".join(idx.hashes),
            np.array([i for i, h in enumerate(idx.hashes) if h], dtype=np.int64),
        )
    digests = np.frombuffer(bytes.fromhex(joined), dtype=np.uint8).reshape(-1, 32)
    want = [ids_of[g].tolist() for g in fmt.duplicate_groups(digests)]
    name = fmt.DUPLICATE_INDEX
    if idx.valid.all() and not idx.repeat.any():  # the file as the build writes it, compared whole (as
        origin = fmt.origin_of(files, idx.file, idx.line)  # fast as reading it: 3 k groups in 0.01 s)
        try:
            with open(os.path.join(out, name), "rb") as f:
                if f.read() == fmt.jsonl_bytes(fmt.duplicate_records(want, idx.hashes.__getitem__, origin)):
                    return want
        except OSError:
            pass  # worded below
    got = list(jsonl_rows(out, name, report))
    for k, (n, obj) in enumerate(got):
        if obj is None:
            continue
        if k >= len(want):
            report.add(
                name,
                f"line {n}: group of hash {str(obj.get('hash'))[:16]}... is not a duplicate group "
                "of sample_index.jsonl",
            )
            continue
        ids = want[k]
        exp = {
            "hash": idx.hashes[ids[0]],
            "count": len(ids),
            "samples": [
                {
                    "sample_id": i,
                    "source_file": files[idx.file[i]] if idx.file[i] >= 0 else None,
                    "source_line": int(idx.line[i]),
                }
                for i in ids
            ],
        }
        samples = obj.get("samples")
        have = {
            "hash": obj.get("hash"),
            "count": obj.get("count"),
            "samples": [
                {key: s.get(key) for key in ("sample_id", "source_file", "source_line")}
                for s in samples
                if isinstance(s, dict)
            ]
            if isinstance(samples, list)
            else samples,
        }
        if have != exp:
            report.add(
                name,
                f"line {n}: expected the group of samples {ids} (hash {exp['hash'][:16]}...), "
                f"found {have['samples'] if isinstance(have['samples'], list) else have}",
                ids[0],
            )
    for ids in want[len(got) :]:
        report.add(name, f"missing the duplicate group of samples {ids}", ids[0])
    return want


def check_unk(out: str, idx: Index, files, found_unk: dict[int, list[int]], report: Report) -> None:
    name = fmt.UNK_INDEX
    listed: dict[int, list[int]] = {}
    for n, obj in jsonl_rows(out, name, report):
        if obj is None:
            continue
        sid = obj.get("sample_id")
        if not is_int(sid) or not 0 <= sid < len(idx.tc):
            report.add(name, f"line {n}: sample_id {sid!r} is not a sample of sample_index.jsonl")
            continue
        if sid in listed:
            report.add(name, f"line {n}: listed twice", sid)
        pos = obj.get("unk_positions")
        if not isinstance(pos, list) or not all(is_int(p) for p in pos):
            report.add(name, f"line {n}: unk_positions is not a list of ints", sid)
            pos = []
        listed[sid] = pos
        if obj.get("unk_count") != len(pos):
            report.add(name, f"line {n}: unk_count {obj.get('unk_count')!r} != {len(pos)} positions", sid)
        if obj.get("hash") != idx.hashes[sid]:
            report.add(name, f"line {n}: hash differs from sample_index.jsonl", sid)
        src = files[idx.file[sid]] if idx.file[sid] >= 0 else None
        if obj.get("source_file") != src or obj.get("source_line") != int(idx.line[sid]):
            report.add(
                name,
                f"line {n}: source {obj.get('source_file')}:{obj.get('source_line')} differs from "
                f"sample_index.jsonl ({src}:{int(idx.line[sid])})",
                sid,
            )
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


# --- histogram.json, stats.json -----------------------------------------------------------------------------


def check_histogram(histogram, dist: dict, what: str, report: Report) -> None:
    """histogram.json against `dist`, the samples per unit (`what` says where they were counted)."""
    if isinstance(histogram, dict):
        got = {str(k): v for k, v in histogram.items()}
        if got != dist:
            report.add(fmt.HISTOGRAM, f"{got} does not match {what} {dist}")
    elif histogram is not None:
        report.add(fmt.HISTOGRAM, "is not a JSON object")


def spec_stats(idx: Index, dtype, dup_groups: list, found_unk: dict, dist: dict) -> dict:
    """The spec's stats.json keys, as the files give them."""
    return {
        "total_samples": len(idx.tc),
        "total_tokens": int(idx.tc.sum()),
        "token_dtype": dtype.name,
        "bytes_per_token": dtype.itemsize,
        "duplicate_groups": len(dup_groups),
        "duplicate_samples": int(sum(len(g) for g in dup_groups)),
        "samples_with_unk": len(found_unk),
        "unk_tokens": int(sum(len(v) for v in found_unk.values())),
        "unit_distribution": dist,
    }


def compare_stats(got: dict, want: dict, report: Report) -> None:
    """Every key of `want` against its value in `got` (stats.json, or figures taken from its blocks)."""
    for key, value in want.items():
        have = got.get(key)
        if isinstance(have, dict):
            have = {str(k): v for k, v in have.items()}
        if have != value:
            report.add(fmt.STATS, f"{key} is {have!r}, the files give {value!r}")
