"""Plan one output directory: its samples in sample_id order, their units (or packed rows) and shards.

Reads the meta of every chunk mapped to the output, in files order then
chunk order, so sample_id follows input order whatever ran in parallel.
It holds per sample only compact columns (length, unit, UNK facts, trained
tokens); each sample's line and digest stay in its chunk's meta, which the
aggregate stage reads a chunk at a time.
With source.take, the output's samples are chosen here, where every chunk's
count is known (mintdim/sources/take.py): the per-sample columns are gathered
in the chosen order, and the plan records, for the write jobs, where each
chosen sample's tokens are (take_src, take_units, take_chunks).
Bad records (source.on_bad_record) are decided here too, first: every chunk
listed its own, so a file's count is known; the plan keeps those skipped.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from .. import errors as E
from ..formats import intermediate as inter
from ..sources import inputs
from ..units import padding
from ..units.packing import LEFT_OUT, UNTRAINED
from .bad_records import BAD_SHOWN, bad_records_counted, relocated, too_many_bad_records


def empty_files(build, out, per_file: dict[int, int], log=print) -> list[int]:
    """The output's files without a single sample: an error (SourceParseError), or with source.allow_empty
    a warning, returned for stats.json. Pre-flight decided the cheap cases (jsonl.no_samples); here every
    chunk's count is known, so a long file of blank lines, or an output of no sample at all, is caught too."""
    empty = [i for i in out.files if per_file.get(i, 0) == 0]
    for i in empty:
        f = build.files[i]
        if not f.source.allow_empty:
            kind = inputs.label(f.abspath)
            blank = "empty" if os.path.getsize(f.abspath) == 0 else "blank"
            raise E.SourceParseError.message(
                "empty_" + (blank if kind == "JSONL" else "no_rows"), f.path, kind
            )
        log(
            f"[unit-build:warning] {f.path} holds no samples; built without it "
            "(source.allow_empty: true; listed in stats.json empty_files)"
        )
    return empty


OVERFLOW_SHOWN = 10  # over-long samples listed by file:line in UnitOverflowError


def overflow_counted(samples: list, count: int, max_unit: int, packed: bool, longest: int) -> E.MintDimError:
    """The spec's text for the first over-long sample, then how many there are in the output, the first
    few by file:line (samples: (path, line, token_count), in input order), and what to do. packed
    (units.pack): the row length is `max_unit`; `longest`, the longest sample's token count, is the row
    length that holds them all."""
    err = E.UnitOverflowError.make(*samples[0], max_unit)
    return E.extended(
        err,
        "counted_packed" if packed else "counted",
        many=err.texts("one" if count == 1 else "many", count=count),
        max_unit=max_unit,
        first=err.texts("first", n=len(samples)) if count > len(samples) else "",
        samples=[err.texts("listed", path=p, n=n, tokens=c) for p, n, c in samples],
        longest=longest,
    )


def overflow_status(build, out, data: dict, limit: int | None) -> tuple[np.ndarray, np.ndarray] | None:
    """units.overflow on unit sizes or packed rows with `error`: (status, tokens kept) per sample when a
    sample is longer than `limit` (the largest unit size, or the row with error); None when none is.
    With `error`, UnitOverflowError counting every such sample (the first ten by file:line)."""
    from ..units import packing

    lengths = data["lengths"]
    over = lengths > limit if limit else np.zeros(len(lengths), dtype=bool)
    if not over.any():
        return None
    if (out.overflow or "error") == "error":
        ids = np.flatnonzero(over)
        shown = ids[:OVERFLOW_SHOWN]
        at = shown if data.get("src") is None else data["src"][shown]  # source.take: the source samples
        order = np.argsort(at, kind="stable")
        files, lines = origins(data["chunk_dirs"], at[order])
        found = dict(zip(order.tolist(), zip(files, lines)))
        first = [
            (build.files[found[j][0]].path, found[j][1], int(lengths[i]))
            for j, i in enumerate(shown.tolist())
        ]
        raise overflow_counted(first, len(ids), int(limit), out.pack is not None, int(lengths[ids].max()))
    status = np.where(over, packing.DROPPED if out.overflow == "drop" else packing.TRUNCATED, packing.WRITTEN)
    kept = np.where(over, 0 if out.overflow == "drop" else limit, lengths)
    return status.astype(np.uint8), kept.astype(np.int64)


def untrained_mask(build, data: dict) -> np.ndarray | None:
    """source.drop_untrained: True for each sample of a file with the flag whose tokens (as many as are
    written: the tokenize stage counts them) train none; None when no file of the build leaves any out."""
    flags = np.array([bool(f.masks.drop_untrained) for f in build.files], dtype=bool)
    if not flags.any() or data.get("trained") is None:
        return None
    return flags[files_of(data)] & (data["trained"] == 0)


def untrained_status(cut, untrained, lengths) -> tuple[np.ndarray, np.ndarray] | None:
    """units.overflow's (status, kept) with the untrained samples (unit sizes: the tokenize stage left
    their tokens out) marked UNTRAINED, kept 0; a sample the overflow policy dropped stays DROPPED."""
    from ..units import packing

    if untrained is None:
        return cut
    if cut is None:
        cut = np.zeros(len(lengths), dtype=np.uint8), lengths.astype(np.int64)
    status, kept = cut
    gone = untrained & (status != packing.DROPPED)
    if not gone.any():
        return cut if status.any() else None
    return np.where(gone, packing.UNTRAINED, status).astype(np.uint8), np.where(gone, 0, kept)


@dataclass(frozen=True, slots=True)
class _Chosen:
    """An output's samples in sample_id order, before they are laid out: read_chunks' columns (with
    source.take: of the chosen samples, and what _take chose), the files without a sample, the records
    skipped."""

    data: dict
    taken: dict | None
    empty: list[int]
    skipped: inter.Skipped | None


def plan_output(
    build, out_index: int, chunk_dirs: list[str], plan_path: str, units_path: str, log=print
) -> inter.UnitsSummary:
    """The plan of one output (plan_path) and what its write jobs write (units_path): its samples in
    sample_id order, laid out in unit sizes or, with units.pack, in packed rows."""
    out = build.outputs[out_index]
    chosen = _choose(build, out, chunk_dirs, log)
    plan, summary = (_plan_rows if out.pack else _plan_units)(build, out_index, chosen, log)
    plan.write(plan_path)
    summary.write(units_path)
    return summary


def _choose(build, out, chunk_dirs: list[str], log) -> _Chosen:
    """The output's samples: bad records and empty files decided, source.take's choice made."""
    data = read_chunks(chunk_dirs)
    skipped = bad_records(build, out, data, log)
    empty = empty_files(build, out, data["per_file"], log)
    taken = None
    if any(
        build.files[i].source.take is not None for i in out.files
    ):  # source.take: choose the samples first
        taken = _take(build, out, data)
        data = _gather(data, taken["src"])
    return _Chosen(data, taken, empty, skipped)


def _plan_units(build, out_index: int, chosen: _Chosen, log) -> tuple[inter.Plan, inter.UnitsSummary]:
    """Unit sizes (declared, or planned from the data): each sample's unit and row in it. units.overflow
    drop | truncate and source.drop_untrained cut samples here as the tokenize stage did."""
    out, data = build.outputs[out_index], chosen.data
    lengths = data["lengths"]
    limit = out.sizes[-1] if out.sizes is not None else padding.largest_size(out.auto)
    cut = overflow_status(build, out, data, limit)  # drop / truncate: the tokenize stage applied them
    cut = untrained_status(cut, untrained_mask(build, data), lengths)  # so did it source.drop_untrained
    kept = lengths if cut is None else cut[1]
    sizes, units = _assign_units(out, data, cut, kept, log)
    counts = unit_counts(units, len(sizes))
    take_units = None if chosen.taken is None else _units_of_taken(out, chosen.taken, sizes)
    plan = _record(
        out_index,
        out,
        chosen,
        sizes=sizes,
        units=units,
        rows=None,
        take_units=take_units,
        cut=None if cut is None else inter.Cut(out.overflow, cut[0], kept),
        trained_roles=data["trained_roles"] if cut is None else None,  # of whole samples: none cut
    )
    sps = out.samples_per_shard
    shards = [-(-c // sps) for c in counts]
    summary = inter.UnitsSummary(
        out_index, sizes, counts, sps, shards, out.auto, take=chosen.taken is not None
    )
    log(
        f"[unit-build] plan {out.dir}: {plan.n} samples; per unit "
        + ", ".join(f"{s}: {c}" for s, c in zip(sizes, counts))
        + _cut_note(cut, limit, out.overflow)
    )
    return plan, summary


def _plan_rows(build, out_index: int, chosen: _Chosen, log) -> tuple[inter.Plan, inter.UnitsSummary]:
    """units.pack: each sample's row and offset (mintdim.units.packing), from the lengths alone (and, with
    source.drop_untrained, which samples train no token); the plan applies units.overflow drop | truncate."""
    from ..units import packing

    out, data = build.outputs[out_index], chosen.data
    lengths, n = data["lengths"], len(data["lengths"])
    if out.overflow == "error":
        overflow_status(build, out, data, out.pack)
    untrained = untrained_mask(build, data)
    t0 = time.monotonic()
    p = packing.plan(lengths, out.pack, out.overflow, untrained)
    take_units = None if chosen.taken is None else np.zeros(len(chosen.taken["lengths"]), dtype=np.int64)
    plan = _record(
        out_index,
        out,
        chosen,
        sizes=[out.pack],
        units=np.zeros(n, dtype=np.uint16),
        rows=np.maximum(p.rows, 0),
        take_units=take_units,
        cut=inter.Cut(out.overflow, p.status, p.kept),
        trained_roles=None if np.any(p.status) else data["trained_roles"],  # of whole samples: none cut
        packing=inter.Packing(out.pack, p.n_rows, p.offsets),
    )
    sps = out.samples_per_shard  # rows per shard in the packed layout
    written = int(np.count_nonzero(~np.isin(p.status, packing.LEFT_OUT)))
    shards = [-(-p.n_rows // sps)]
    summary = inter.UnitsSummary(
        out_index, [out.pack], [written], sps, shards, None, rows=p.n_rows, take=chosen.taken is not None
    )
    counted = (packing.DROPPED, packing.TRUNCATED, packing.UNTRAINED)
    dropped, truncated, left = (int(np.count_nonzero(p.status == s)) for s in counted)
    log(
        f"[unit-build] plan {out.dir}: {n} samples packed into {p.n_rows} rows of {out.pack} "
        f"(lower bound {p.lower_bound}, efficiency {p.efficiency:.4%}; {dropped} dropped, "
        f"{truncated} truncated" + (f", {left} untrained left out" if untrained is not None else "") + ") "
        f"in {time.monotonic() - t0:.2f} s"
    )
    return plan, summary


def _record(
    out_index: int, out, chosen: _Chosen, *, sizes, units, rows, take_units, cut, trained_roles, packing=None
) -> inter.Plan:
    """The plan record: the layout's columns (sizes, each sample's unit and row, each source.take source
    sample's unit), its cut and packing, and the columns both layouts share."""
    data, taken = chosen.data, chosen.taken
    return inter.Plan(
        output=out_index,
        n=int(len(data["lengths"])),
        sizes=sizes,
        samples_per_shard=out.samples_per_shard,
        lengths=data["lengths"],
        units=units,
        rows=rows,
        unk_samples=data["unk_samples"],
        unk_counts=data["unk_counts"],
        unk_positions=data["unk_positions"],
        trained=data.get("trained"),
        end_markers=data.get("end_markers") or None,
        empty_files=chosen.empty or None,
        skipped=chosen.skipped,
        take=None if taken is None else _take_record(taken, take_units),
        cut=cut,
        trained_roles=None if trained_roles is None else dict(sorted(trained_roles.items())),
        packing=packing,
    )


def _assign_units(out, data, cut, kept, log) -> tuple[list[int], np.ndarray]:
    """The output's unit sizes and each sample's unit (an index into them; len(sizes) for a sample left
    out). units.sizes: auto -> the exact padding-optimal sizes for this output's lengths."""
    if out.sizes is not None:
        return out.sizes, data["units"]
    written = kept if cut is None else kept[~np.isin(cut[0], LEFT_OUT)]
    sizes = plan_sizes(written, out.auto, log)
    units_arr = np.searchsorted(np.asarray(sizes, dtype=np.int64), kept, side="left")
    if cut is not None:
        units_arr[np.isin(cut[0], LEFT_OUT)] = len(sizes)  # in no unit
    return sizes, units_arr


def _units_of_taken(out, taken, sizes) -> np.ndarray:
    """source.take: each source sample's unit among these sizes (the write jobs find its tokens so)."""
    if out.sizes is not None:
        return taken["units"]
    return np.searchsorted(np.asarray(sizes, dtype=np.int64), taken["lengths"], side="left")


BLOCK = 1 << 16  # samples counted (and indexed, in the aggregate stage) at a time


def unit_counts(units_arr, n_units: int) -> list[int]:
    """Each unit's sample count (a sample in unit n_units, in none, is not counted), a block at a time."""
    counts = np.zeros(n_units + 1, dtype=np.int64)
    for start in range(0, len(units_arr), BLOCK):
        counts += np.bincount(units_arr[start : start + BLOCK], minlength=n_units + 1)[: n_units + 1]
    return counts[:n_units].tolist()


def _cut_note(cut, limit: int, overflow) -> str:
    """The plan line's note of the samples units.overflow and source.drop_untrained cut."""
    if cut is None:
        return ""
    over = int(np.count_nonzero(np.isin(cut[0], (1, 2))))
    untrained = int(np.count_nonzero(cut[0] == UNTRAINED))
    return (f"; {over} longer than {limit}: {overflow}" if over else "") + (
        f"; {untrained} untrained left out (source.drop_untrained)" if untrained else ""
    )


def walk_chunks(chunk_dirs: list[str]):
    """Each chunk's meta in files order then chunk order, with the 1-based line (or row) of its first line
    in its file and its first sample's position among the chunks' samples: (meta, first, base)."""
    next_line: dict[int, int] = {}
    base = 0
    for d in chunk_dirs:
        meta = inter.ChunkMeta.read(d)
        first = next_line.get(meta.file, 1)
        next_line[meta.file] = first + meta.newlines  # line ends of a JSONL chunk, rows of a Parquet one
        yield meta, first, base
        base += meta.n


_COLUMNS = {  # the per-sample columns the plan holds, in the chunk meta's dtypes
    "lengths": np.uint32,
    "units": np.uint16,
    "unk_samples": np.int64,
    "unk_counts": np.uint32,
    "unk_positions": np.uint32,
    "trained": np.uint32,
}


def read_chunks(chunk_dirs: list[str]) -> dict:
    """The per-sample facts of an output's chunks the plan needs, in files order then chunk order
    (sample_id order without source.take): compact columns (lengths, units, UNK, trained), each chunk's
    file and sample count, and each file's sample count. A sample's line and digest stay in its chunk
    (origins reads lines back)."""
    parts: dict[str, list] = {k: [] for k in _COLUMNS}
    trained_roles: dict[str, int] | None = None  # source.chat: trained tokens per role
    role_samples: list[tuple[int, dict]] = []  # with source.take: per chunk, role -> per-sample counts
    end_markers: dict[str, list[str]] = {}
    per_file: dict[int, int] = {}
    bad: dict[int, dict] = {}  # file -> its bad records (source.on_bad_record), in input order
    chunk_n, chunk_file = [], []
    for meta, first, base in walk_chunks(chunk_dirs):
        f, n = meta.file, meta.n
        per_file[f] = per_file.get(f, 0) + n
        chunk_n.append(n)
        chunk_file.append(f)
        for key in ("lengths", "units", "unk_counts", "unk_positions", "trained"):
            if getattr(meta, key) is not None:
                parts[key].append(getattr(meta, key))
        parts["unk_samples"].append(meta.unk_samples.astype(np.int64) + base)
        if meta.trained_roles is not None:
            trained_roles = trained_roles or {}
            for role, count in meta.trained_roles.items():
                trained_roles[role] = trained_roles.get(role, 0) + int(count)
        role_samples.append((n, meta.trained_roles_samples or {}))
        if meta.end_markers:  # source.train_eos: the end-of-turn tokens each file's template trains
            end_markers[str(f)] = meta.end_markers
        bad_of_chunk(bad, meta, first)
    cols = {}
    for key in list(parts):  # each column's chunk parts let go as soon as it is joined
        if parts[key] or key != "trained":
            cols[key] = _cat(parts.pop(key), _COLUMNS[key])
    cols["trained_roles"], cols["chunk_dirs"] = trained_roles, chunk_dirs
    cols["per_file"], cols["chunk_n"], cols["end_markers"], cols["bad"] = per_file, chunk_n, end_markers, bad
    cols["chunk_file"] = np.asarray(chunk_file, dtype=np.uint32)
    roles = sorted({r for _n, per in role_samples for r in per})
    cols["role_samples"] = {
        r: _cat([per.get(r, np.zeros(n, dtype=np.int64)) for n, per in role_samples], np.int64) for r in roles
    }
    return cols


def _cat(parts, dtype):
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def files_of(data: dict) -> np.ndarray:
    """Each sample's file (an index into the build's files), from the chunks' files and sample counts."""
    files = np.repeat(data["chunk_file"], data["chunk_n"])
    return files if data.get("src") is None else files[data["src"]]


def origins(chunk_dirs: list[str], positions) -> tuple[list[int], list[int]]:
    """The files and 1-based lines of the samples at `positions` (ascending, among the chunks' samples),
    read back from the chunks' metas."""
    positions = np.asarray(positions, dtype=np.int64)
    files, lines = [], []
    for meta, first, base in walk_chunks(chunk_dirs):
        lo, hi = np.searchsorted(positions, [base, base + meta.n])
        for p in positions[lo:hi].tolist():
            files.append(meta.file)
            lines.append(int(meta.lines[p - base]) + first)
        if hi == len(positions):
            break
    return files, lines


# --- source.on_bad_record: the records no sample came from (stages/tokenize.py lists a chunk's) -------


def bad_of_chunk(bad: dict, meta: inter.ChunkMeta, first: int) -> None:
    """A chunk's bad records, added to its file's: 1-based lines (or rows), classes, reasons, and the
    file's first bad record's error."""
    if meta.bad_lines is None:
        return
    found = bad.setdefault(meta.file, {"lines": [], "classes": [], "reasons": [], "first": None})
    found["lines"] += (meta.bad_lines.astype(np.int64) + first).tolist()
    found["classes"] += meta.bad_classes
    found["reasons"] += meta.bad_reasons
    if found["first"] is None:  # its line within the chunk (a JSONL chunk's job tells no other)
        found["first"] = relocated(meta.bad_first, found["lines"][0])


def _limit(f, records: int) -> int:
    """The most bad records source.max_skipped lets a file of `records` records hold."""
    return (
        f.source.max_skipped if isinstance(f.source.max_skipped, int) else int(f.source.max_skipped * records)
    )


def bad_records(build, out, data: dict, log=print) -> inter.Skipped | None:
    """source.on_bad_record for each file of the output (check_bad_records). Returns the records skipped
    when a file of the output skips (None otherwise)."""
    skipped = inter.Skipped([], [], [], [])
    for i in out.files:
        found = data["bad"].get(i)
        if found and check_bad_records(build, build.files[i], found, data["per_file"].get(i, 0), log):
            skipped.files.extend([i] * len(found["lines"]))
            skipped.lines.extend(found["lines"])
            skipped.classes.extend(found["classes"])
            skipped.reasons.extend(found["reasons"])
    if all(build.files[i].source.on_bad_record != "skip" for i in out.files):
        return None
    return skipped


def check_bad_records(build, f, found: dict | None, samples: int, log=print) -> int:
    """A file's bad records (found: bad_of_chunk's) beside its `samples`: `error` (default) fails at the
    first, counting them all; `skip` fails when they are more than max_skipped or all of its records, else
    says how many it leaves out. Returns that count."""
    count = len(found["lines"]) if found else 0
    if not count:
        return 0
    shown = [(f.path, line, kind) for line, kind in zip(found["lines"][:BAD_SHOWN], found["classes"])]
    records = count + samples
    if f.source.on_bad_record != "skip":
        raise bad_records_counted(found["first"], shown, count, f.path, lang=build.lang)
    if count == records or count > _limit(f, records):
        raise too_many_bad_records(
            found["first"],
            shown,
            _top_reasons(found),
            count,
            records,
            f.source.max_skipped,
            f.path,
            lang=build.lang,
        )
    log(
        f"[unit-build:warning] {f.path}: {count} bad records skipped of {records} "
        "(source.on_bad_record: skip; listed in skipped_index.jsonl)"
    )
    return count


def _top_reasons(found: dict) -> list[tuple[int, str, str]]:
    """(count, class, reason) of a file's bad records, the most frequent first (ties: in order of
    appearance)."""
    counts: dict[tuple[str, str], int] = {}
    for kind, reason in zip(found["classes"], found["reasons"]):
        counts[(kind, reason)] = counts.get((kind, reason), 0) + 1
    return sorted(((n, kind, reason) for (kind, reason), n in counts.items()), key=lambda t: -t[0])


# --- source.take: the chosen samples (mintdim/sources/take.py) ----------------------------------------------


def _take(build, out, cols: dict) -> dict:
    """Positions (into the chunks' samples) and repeats of the output's samples, file by file, and
    what the manifest records of each file's take."""
    from .. import errors as E
    from ..sources import take as TK

    src, repeats, files = [], [], []
    base = 0
    for i in out.files:
        f = build.files[i]
        available = cols["per_file"].get(i, 0)
        if f.source.take is None:  # a file of this output without take: all of it, once
            positions, reps = np.arange(available, dtype=np.int64), np.zeros(available, dtype=np.int64)
        else:
            if (
                isinstance(f.source.take, int) and available == 0
            ):  # pre-flight refuses it; a file changed since
                raise E.PipelineValidationError.take_no_samples(i, f.path, f.source.take, lang=build.lang)
            positions, reps = TK.select(f.source.take, available, f.source.take_seed, f.index)
            files.append(TK.summary(f.path, f.index, f.source.take, available))
        src.append(positions + base)
        repeats.append(reps)
        base += available
    seed = next(build.files[i].source.take_seed for i in out.files if build.files[i].source.take is not None)
    return {
        "src": _cat(src, np.int64),
        "repeats": _cat(repeats, np.int64),
        "summary": {"seed": seed, "files": files},
        "units": cols["units"],
        "lengths": cols["lengths"],
        "chunk_n": cols["chunk_n"],
    }


def _gather(cols: dict, src: np.ndarray) -> dict:
    """The per-sample columns of the samples at `src`, in that order (a position twice: twice)."""
    out = {key: cols[key][src] for key in ("lengths", "units", "trained") if key in cols}
    out |= {k: cols[k] for k in ("chunk_dirs", "chunk_file", "chunk_n")} | {"src": src}
    n = len(cols["lengths"])
    counts, firsts = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    unk_counts = cols["unk_counts"].astype(np.int64)
    counts[cols["unk_samples"]] = unk_counts
    firsts[cols["unk_samples"]] = np.cumsum(unk_counts) - unk_counts
    has = np.flatnonzero(counts[src] > 0)
    c, f = counts[src[has]], firsts[src[has]]
    out["unk_samples"], out["unk_counts"] = has, c
    out["unk_positions"] = cols["unk_positions"][
        np.repeat(f - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
    ]
    out["end_markers"] = cols["end_markers"]
    out["trained_roles"] = (
        {role: int(per[src].sum()) for role, per in cols["role_samples"].items()}
        if cols["trained_roles"] is not None
        else None
    )
    return out


def _take_record(taken: dict, source_units: np.ndarray) -> inter.Take:
    """The plan's take columns: each sample's repeat, and what the write jobs need to find a chosen
    sample's tokens in the chunks' unit streams (its position, each source sample's unit, chunk sizes)."""
    chunks = [int(n) for n in taken["chunk_n"]]
    return inter.Take(taken["repeats"], taken["summary"], taken["src"], source_units, chunks)


def plan_sizes(lengths: np.ndarray, auto: dict, log=print) -> list[int]:
    """units.sizes: auto -> k sizes minimising padding (mintdim.units.padding, exact)."""
    if not len(lengths):
        return [auto.get("min_size") or auto.get("multiple_of") or 1]
    found = padding.suggest(
        lengths,
        k=auto["k"],
        multiple_of=auto.get("multiple_of") or 1,
        min_size=auto.get("min_size"),
        max_size=auto.get("max_size"),
        cost=auto.get("cost") or "linear",
    )
    log(
        f"[unit-build] planned unit sizes {found.sizes} (padding {found.report.padding_ratio:.2%}"
        f"{'; ' + found.note if found.note else ''})"
    )
    return found.sizes
