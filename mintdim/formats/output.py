"""The output directory's format: the names, writers and readers of its JSON files and JSONL indexes.

    manifest.json          how the output was built and how to read it
    histogram.json         samples per unit size
    stats.json             totals, duplicate and UNK figures, padding (and packing) figures
    sample_index.jsonl     one line per sample, in sample_id order
    sample_index.idx       the same samples' places and counts as arrays (formats/sample_columns.py)
    duplicate_index.jsonl  groups of samples whose rendered text has the same SHA-256
    unk_index.jsonl        samples whose tokens hold unk_id, with 0-based positions
    skipped_index.jsonl    (source.on_bad_record: skip) the records no sample came from, in input order

(the unit directories beside them: formats/shards.py). JSON is written UTF-8 with
sorted-free, stable key order (the spec's order); JSONL one object per line. Nothing here
depends on time, host or work paths.
"""

from __future__ import annotations

import bisect
import os

import numpy as np
import orjson

from ..files import open_pieces
from . import shards

MANIFEST = "manifest.json"
HISTOGRAM = "histogram.json"
STATS = "stats.json"
SAMPLE_INDEX = "sample_index.jsonl"
DUPLICATE_INDEX = "duplicate_index.jsonl"
UNK_INDEX = "unk_index.jsonl"
SAMPLE_COLUMNS = "sample_index.idx"  # written and read by formats/sample_columns.py
INDEX_FILES = (MANIFEST, HISTOGRAM, STATS, SAMPLE_INDEX, SAMPLE_COLUMNS, DUPLICATE_INDEX, UNK_INDEX)
SKIPPED_INDEX = "skipped_index.jsonl"  # only in an output a file of which has source.on_bad_record: skip


def skips(manifest) -> bool:
    """Does the output list its skipped records (a file of it with source.on_bad_record: skip)?"""
    source = manifest.get("source") if isinstance(manifest, dict) else None
    return isinstance(source, dict) and "skip" in (source.get("on_bad_record") or ())


def index_files(manifest) -> tuple[str, ...]:
    """The JSON and JSONL files of an output beside its unit directories, as its manifest declares them."""
    return INDEX_FILES + ((SKIPPED_INDEX,) if skips(manifest) else ())


def write_skipped_index(path: str, skipped, paths: list[str], row_files: set[int]) -> dict[str, int]:
    """skipped_index.jsonl: one line per skipped record, in input order: source_file, source_line (a JSONL
    file) or source_row (row_files: Parquet, datasets), error (the class), reason (one line). Returns the
    count per class."""
    writer = JsonlWriter(path)
    per_class: dict[str, int] = {}
    columns = (skipped.files, skipped.lines, skipped.classes, skipped.reasons)  # intermediate.Skipped
    for f, line, kind, reason in zip(*columns):
        at = "source_row" if f in row_files else "source_line"
        writer.write({"source_file": paths[f], at: int(line), "error": kind, "reason": reason})
        per_class[kind] = per_class.get(kind, 0) + 1
    writer.close()
    return dict(sorted(per_class.items()))


_JSON_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def read_json(out_dir: str, name: str):
    """One of the output's JSON files (MANIFEST, STATS, HISTOGRAM), parsed."""
    with open(os.path.join(out_dir, name), "rb") as f:
        return orjson.loads(f.read())


def iter_jsonl(path: str):
    """(line number, raw line) of every non-blank line of a JSONL index."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                yield n, line


def iter_index(out_dir: str, name: str = SAMPLE_INDEX):
    """The objects of one of the output's JSONL indexes, in file order."""
    for _n, line in iter_jsonl(os.path.join(out_dir, name)):
        yield orjson.loads(line)


def token_counts(out_dir: str, source: bool = False) -> np.ndarray:
    """token_count of every sample of sample_index.jsonl, in sample_id order (int64). With
    `source`, a sample longer than a packed row counts its whole length (source_token_count)."""
    key = "source_token_count" if source else "token_count"

    def count(line: bytes) -> int:
        obj = orjson.loads(line)
        return obj.get(key, obj["token_count"])

    return np.fromiter(
        (count(line) for _n, line in iter_jsonl(os.path.join(out_dir, SAMPLE_INDEX))), dtype=np.int64
    )


def write_json(path: str, obj) -> None:
    with open(path, "wb") as f:
        f.write(orjson.dumps(obj, option=_JSON_OPTS))


class JsonlWriter:
    def __init__(self, path: str, flush_every: int = 4096):
        self._fh = open_pieces(path)
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
    # Whole digests are compared only where first words tie: no sorted copy of the digests (32
    # bytes a sample) is made, the sort holds 8 bytes a sample and its order 8.
    first = words[:, 0].astype(np.uint64)
    order = np.argsort(first, kind="stable")
    first = first[order]
    tied = np.flatnonzero(first[1:] == first[:-1])
    del first
    if not len(tied):
        return []
    if np.all(words[order[tied]] == words[order[tied + 1]]):
        same = np.zeros(n - 1, dtype=bool)
        same[tied] = True
    else:
        order = np.lexsort((words[:, 3], words[:, 2], words[:, 1], words[:, 0]))
        ordered = words[order]
        same = np.all(ordered[1:] == ordered[:-1], axis=1)
        if not same.any():
            return []
    groups = []
    # runs of True in `same` mark consecutive equal digests; a run's ids ascend (stable sorts)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))))
    for start, stop in zip(edges[::2], edges[1::2]):
        groups.append(order[start : stop + 1])
    groups.sort(key=lambda m: int(m[0]))
    return groups


def origin_of(paths, file_ids, lines, repeats=None):
    """origin(s): where sample s comes from, as the indexes give it: {"sample_id", "source_file",
    "source_line"} (source.take: and its "repeat")."""

    def origin(s: int) -> dict:
        found = {"sample_id": s, "source_file": paths[file_ids[s]], "source_line": int(lines[s])}
        if repeats is not None:
            found["repeat"] = int(repeats[s])
        return found

    return origin


def duplicate_records(groups, hash_of, origin):
    """duplicate_index.jsonl's objects: a group by first sample_id (duplicate_groups), its members in
    sample_id order (source.take: the repeats of one sample are duplicates too, by their hash)."""
    for members in groups:
        yield {
            "hash": hash_of(int(members[0])),
            "count": int(len(members)),
            "samples": [origin(int(s)) for s in members],
        }


def jsonl_bytes(objs) -> bytes:
    """Objects as JsonlWriter writes them: compact JSON, a line each."""
    return b"".join(orjson.dumps(obj) + b"\n" for obj in objs)


_SAMPLE_HEAD = (
    '{"sample_id":%d,"hash":"%s","token_count":%d,"unit_size":%d,"source_file":%s,"source_line":%d,'
)
_SAMPLE_TAIL = '"shard_path":"' + shards.UNIT_DIR + "/" + shards.SHARD_NAME + '","shard_row":%d'


def write_sample_index(
    path: str,
    hexes: str,
    lengths,
    sizes,
    units,
    rows,
    sps: int,
    file_ids,
    paths,
    lines,
    trained,
    progress,
    block: int = 1 << 16,
    overflow=None,
    repeats=None,
) -> None:
    """sample_index.jsonl of the bucketed layout, in sample_id order, from whole arrays: sample_lines
    of each block of `block` samples (the aggregate stage gives it a chunk's blocks instead)."""
    files = json_names(paths)
    with open_pieces(path) as fh:
        for start in range(0, len(lengths), block):
            progress.update(start)
            end = min(start + block, len(lengths))
            part = slice(start, end)
            fh.write(
                sample_lines(
                    start,
                    hexes[64 * start : 64 * end],
                    lengths[part],
                    sizes,
                    units[part],
                    rows[part],
                    sps,
                    file_ids[part],
                    files,
                    lines[part],
                    None if trained is None else trained[part],
                    overflow=None if overflow is None else (overflow[0][part], overflow[1][part]),
                    repeats=None if repeats is None else repeats[part],
                )
            )


def json_names(paths) -> list[str]:
    """The source files' paths as JSON strings (non-ASCII kept as is), as sample_lines takes them."""
    return [orjson.dumps(p).decode("utf-8") for p in paths]


def sample_lines(
    start, hexed: str, lengths, sizes, units, rows, sps, file_ids, files, lines, trained, overflow, repeats
) -> bytes:
    """The bucketed layout's sample_index.jsonl lines of the samples from `start` (every array of these
    samples only; hexed: their digests' text; files: json_names). Each line is formatted directly, as
    the same bytes orjson gives for the record (same keys, same order): a dict and a dumps call per
    sample took most of the aggregate stage. lengths: the tokens written.
    overflow (units.overflow drop | truncate): (status per sample, whole lengths); a sample longer than
    the largest unit carries overflow and source_token_count, as in the packed layout: "dropped" is in
    no unit (unit_size, shard_path and shard_row null, token_count 0), "truncated" in the largest; a
    sample source.drop_untrained left out carries "untrained": "dropped" instead, in no unit either.
    repeats (source.take): each sample's repeat, after source_line."""
    line = (
        _SAMPLE_HEAD
        + ('"repeat":%d,' if repeats is not None else "")
        + _SAMPLE_TAIL
        + (',"trained_tokens":%d}\n' if trained is not None else "}\n")
    )
    sized = list(sizes) + [0]  # a dropped sample's unit index is len(sizes): its line is rewritten below
    m = len(lengths)
    unit_size = [sized[k] for k in units.tolist()]  # twice: the field and the shard's dir
    r = np.asarray(rows, dtype=np.int64)
    cols = [
        range(start, start + m),
        (hexed[64 * j : 64 * j + 64] for j in range(m)),
        lengths.tolist(),
        unit_size,
        [files[k] for k in file_ids.tolist()],
        lines.tolist(),
        *([repeats.tolist()] if repeats is not None else []),
        unit_size,
        (r // sps).tolist(),
        (r % sps).tolist(),
    ]
    if trained is not None:
        cols.append(trained.tolist())
    text = [line % row for row in zip(*cols)]
    if overflow is not None:
        for j in np.flatnonzero(overflow[0]).tolist():
            text[j] = _cut_line(json_line=text[j], status=int(overflow[0][j]), whole=int(overflow[1][j]))
    return "".join(text).encode("utf-8")


def _template_parts(template: str) -> tuple[list[bytes], list[str]]:
    """A line template's literal pieces and, between them, its fields' kinds: "d" (a JSON int),
    "06d" (shard_%06d), "hex" ("%s" inside quotes: the hash), "str" (%s: a JSON string)."""
    pieces, kinds, rest = [], [], template
    while "%" in rest:
        head, rest = rest.split("%", 1)
        spec = "06d" if rest.startswith("06d") else rest[0]
        rest = rest[len(spec) :]
        kinds.append("hex" if spec == "s" and head.endswith('"') else "str" if spec == "s" else spec)
        pieces.append(head.encode())
    return pieces + [rest.encode()], kinds


# the fields of write_sample_index's line, in order (+ trained_tokens)
SAMPLE_FIELDS = (
    "sample_id",
    "hash",
    "token_count",
    "unit_size",
    "source_file",
    "source_line",
    "shard_unit",
    "shard",
    "shard_row",
)


# bytes of sample_index.jsonl parsed at once by read_sample_index (memory stays bounded)
INDEX_CHUNK = 1 << 23


def read_sample_index(path: str, files: list[str], chunk: int = INDEX_CHUNK) -> dict | None:
    """sample_index.jsonl of the bucketed layout as columns, when every line is exactly as
    write_sample_index writes it (without overflow or repeat keys; with trained_tokens when the first
    line has them) and the lines are in source file order: {field of SAMPLE_FIELDS (+ "trained_tokens"):
    int64 array, but "hash": the n hex digests joined (str) and "source_file": the index into `files`}.
    None as soon as one line is anything else (other spacing or key order, an escape, a number with a
    sign, a point or a leading zero, a file not in `files` or out of order): a JSON parser then reads
    it line by line. Read `chunk` bytes at a time into one reused buffer (whole lines), each chunk
    parsed with array operations, field after field for all its lines at once: the 61 k lines of the
    107 MB ShareGPT build in 0.05 to 0.07 s, where a JSON parser and columns made of its objects took
    0.13 s, and memory bounded (a fresh buffer per chunk would cost its page faults again). A line
    taken here is one a JSON parser reads as the same values."""
    quoted = [orjson.dumps(f) for f in files]
    if any(q != b'"' + f.encode() + b'"' for q, f in zip(quoted, files)):
        return None  # a name JSON writes with escapes
    pad = 128 + max(map(len, quoted), default=0)  # zeros after the lines: every window stays inside
    buf = bytearray(chunk + pad)
    parts: list[dict] = []
    held, template, next_file = 0, None, 0  # bytes of a line carried to the next chunk; the line's template
    with open(path, "rb") as f:
        while True:
            got = f.readinto(memoryview(buf)[held:chunk])
            size = held + got
            if not got:  # the end of the file
                if held:
                    return None  # bytes after the last newline
                break
            last = buf.rfind(b"\n", 0, size) + 1  # whole lines only
            if last == 0:
                if size == chunk:
                    return None  # a line longer than a chunk
                held = size
                continue
            if template is None:
                trained = buf.find(b',"trained_tokens":', 0, buf.find(b"\n", 0, last)) >= 0
                template = _template_parts(
                    _SAMPLE_HEAD + _SAMPLE_TAIL + (',"trained_tokens":%d}\n' if trained else "}\n")
                )
            rest = bytes(buf[last:size])  # the start of the next line
            buf[last : last + pad] = bytes(pad)
            cols = _parse_lines(buf, last, pad, template, quoted, next_file)
            if cols is None:
                return None
            parts.append(cols)
            next_file = int(cols["source_file"][-1])
            buf[: len(rest)] = rest
            held = len(rest)
    if not parts:
        return None
    return {
        k: "".join(p[k] for p in parts) if k == "hash" else np.concatenate([p[k] for p in parts])
        for k in parts[0]
    }


def _parse_lines(
    data: bytearray, size: int, pad: int, template, quoted: list[bytes], first_file: int
) -> dict | None:
    """The columns of data[:size], whole lines as write_sample_index writes them, `pad` zeros after them."""
    from numpy.lib.stride_tricks import sliding_window_view

    pieces, kinds = template
    names = SAMPLE_FIELDS + ("trained_tokens",)
    a = np.frombuffer(data, dtype=np.uint8, count=size + pad)
    win = sliding_window_view(a, pad)  # win[p, :k]: the k bytes from p (rows gathered on use)
    # temporary as long as the chunk
    ends = np.concatenate(
        [
            np.flatnonzero(a[at : min(at + (1 << 20), size)] == 10) + at  # by the MiB: no
            for at in range(0, size, 1 << 20)
        ]
    )
    starts = np.concatenate(([0], ends[:-1] + 1))
    pos, cols = starts.copy(), {}
    for k, piece in enumerate(pieces):  # a literal piece, then a field (each gathered with its piece)
        wide = 0 if k == len(kinds) else {"hex": 64, "str": 0}.get(kinds[k], 19)
        got = win[pos, : len(piece) + wide]
        if not (got[:, : len(piece)] == np.frombuffer(piece, dtype=np.uint8)).all():
            return None
        pos += len(piece)
        if k == len(kinds):
            break
        if kinds[k] == "hex":
            digits = got[:, len(piece) :]
            if not (((digits - 48) <= 9) | ((digits - 97) <= 5)).all():  # 0-9 a-f (uint8: lower bytes wrap)
                return None
            cols[names[k]] = digits.tobytes().decode("ascii")
            pos += 64
        elif kinds[k] == "str":
            fi = _file_runs(data, win, pos, quoted, first_file)
            if fi is None:
                return None
            cols[names[k]] = fi
            pos += np.array([len(q) for q in quoted], dtype=np.int64)[fi]
        else:  # 1 to 18 digits, no leading zero ("06d": at least 6, zeros filling 6)
            digits = got[:, len(piece) :] - 48  # (uint8: a byte below "0" wraps above 9)
            is_digit = digits <= 9
            length = np.where(is_digit.all(axis=1), 19, is_digit.argmin(axis=1))
            least = 6 if kinds[k] == "06d" else 1
            if length.min() < least or length.max() > 18 or ((digits[:, 0] == 0) & (length > least)).any():
                return None
            value = np.zeros(len(pos), dtype=np.int64)
            # Horner's rule, column by column (10 ** powers took 10x longer)
            for j in range(int(length.max())):
                value = np.where(length > j, value * 10 + digits[:, j], value)
            cols[names[k]] = value
            pos += length
    return cols if np.array_equal(pos, np.append(starts[1:], size)) else None


def _file_runs(data: bytes, win, pos, quoted: list[bytes], first: int = 0):
    """Which of the `quoted` names each line holds at `pos`, when the lines hold them in that order from
    the one numbered `first` on (a run per name, maybe empty): each run's end found by bisection, then
    every line of the run compared at once. None when a line holds none of them, or not in order."""
    fi = np.empty(len(pos), dtype=np.int64)
    lo = 0
    for k, q in enumerate(quoted[first:], first):
        holds = lambda i: data[pos[i] : pos[i] + len(q)] == q  # noqa: E731,B023  (used in this iteration)
        end = lo + bisect.bisect_left(range(lo, len(pos)), True, key=lambda i: not holds(i))
        if not (win[pos[lo:end], : len(q)] == np.frombuffer(q, dtype=np.uint8)).all():
            return None
        fi[lo:end] = k
        lo = end
    return fi if lo == len(pos) else None


def _cut_line(json_line: str, status: int, whole: int) -> str:
    """A bucketed sample's line with its overflow keys: dropped (status 1) in no unit and no shard; left out
    for training no token (status 3, source.drop_untrained) likewise, marked "untrained": "dropped"."""
    obj = orjson.loads(json_line)
    if status in (1, 3):
        obj.update(unit_size=None, shard_path=None, shard_row=None)
    obj.update(cut_keys(status, whole))
    return orjson.dumps(obj).decode("utf-8") + "\n"


def cut_keys(status: int, whole: int) -> dict:
    """sample_index.jsonl's keys of a sample units.overflow or source.drop_untrained cut (status 1, 2, 3)."""
    if status == 3:
        return {"untrained": "dropped", "source_token_count": whole}
    return {"overflow": "dropped" if status == 1 else "truncated", "source_token_count": whole}


def write_packed_sample_index(
    path: str,
    hexes: str,
    lengths,
    kept,
    status,
    row_length: int,
    rows,
    offsets,
    sps: int,
    file_ids,
    paths,
    lines,
    trained,
    progress,
    repeats=None,
    block: int = 1 << 16,
) -> None:
    """sample_index.jsonl of the packed layout (units.pack), in sample_id order, from whole arrays:
    packed_lines of each block of `block` samples."""
    with open_pieces(path) as fh:
        for start in range(0, len(lengths), block):
            progress.update(start)
            end = min(start + block, len(lengths))
            part = slice(start, end)
            columns = (lengths, kept, status, rows, offsets, file_ids, lines, trained, repeats)
            fh.write(
                packed_lines(
                    start,
                    hexes[64 * start : 64 * end],
                    row_length,
                    sps,
                    paths,
                    *(None if c is None else c[part] for c in columns),
                )
            )


def packed_lines(
    start,
    hexed: str,
    row_length,
    sps,
    paths,
    lengths,
    kept,
    status,
    rows,
    offsets,
    file_ids,
    lines,
    trained,
    repeats,
) -> bytes:
    """The packed layout's sample_index.jsonl lines of the samples from `start` (every array of these
    samples only; hexed: their digests' text): the bucketed keys (unit_size is the row length; shard_row
    the row inside the shard) plus row_offset, the sample's first slot in its row. token_count counts the
    tokens written; a sample longer than the row carries overflow ("dropped": no shard, row or offset;
    "truncated": the row's first tokens) and source_token_count (its whole length)."""
    out = []
    trained = None if trained is None else np.asarray(trained).tolist()
    for j, (n, k, st, r, off, f, line) in enumerate(
        zip(
            lengths.tolist(),
            kept.tolist(),
            status.tolist(),
            rows.tolist(),
            offsets.tolist(),
            file_ids.tolist(),
            lines.tolist(),
        )
    ):
        dropped = st in (1, 3)  # overflow: drop, or source.drop_untrained
        obj = {
            "sample_id": start + j,
            "hash": hexed[64 * j : 64 * j + 64],
            "token_count": k,
            "unit_size": row_length,
            "source_file": paths[f],
            "source_line": line,
            **({"repeat": int(repeats[j])} if repeats is not None else {}),
            "shard_path": None if dropped else shards.shard_path(row_length, r // sps),
            "shard_row": None if dropped else r % sps,
            "row_offset": None if dropped else off,
        }
        if trained is not None:
            obj["trained_tokens"] = trained[j]
        if st:
            obj.update(cut_keys(st, n))
        out.append(orjson.dumps(obj))
    return b"\n".join(out) + b"\n"
