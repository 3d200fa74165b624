"""Plan one output directory: sample ids, file line numbers, unit rows and shards.

Reads the meta of every chunk mapped to the output, in files order then
chunk order, so sample_id follows input order whatever ran in parallel.
With source.take, the output's samples are chosen here, where every chunk's
count is known (mintdim/sources/take.py): the per-sample columns are gathered
in the chosen order, and the plan records, for the write jobs, where each
chosen sample's tokens are (take_src, take_units, take_chunks).
Bad records (source.on_bad_record) are decided here too, first: every chunk
listed its own, so a file's count is known; the plan keeps those skipped.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from .. import errors as E
from ..formats import intermediate as inter
from ..formats.records import atomic_write_text
from ..sources import inputs
from ..units import padding
from ..units.packing import LEFT_OUT, UNTRAINED


def empty_files(build, out, per_file: dict[int, int], log=print) -> list[int]:
    """The output's files without a single sample: an error (SourceParseError), or with source.allow_empty
    a warning, returned for stats.json. Pre-flight decided the cheap cases (jsonl.no_samples); here every
    chunk's count is known, so a long file of blank lines, or an output of no sample at all, is caught too."""
    empty = [i for i in out.files if per_file.get(i, 0) == 0]
    for i in empty:
        f = build.files[i]
        if not f.allow_empty:
            kind = inputs.label(f.abspath)
            blank = "empty" if os.path.getsize(f.abspath) == 0 else "blank"
            raise E.SourceParseError.empty(f.path, blank if kind == "JSONL" else "no_rows", kind)
        log(
            f"[unit-build:warning] {f.path} holds no samples; built without it "
            "(source.allow_empty: true; listed in stats.json empty_files)"
        )
    return empty


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
        first = [
            (build.files[int(data["files"][i])].path, int(data["lines"][i]), int(lengths[i]))
            for i in ids[: E.OVERFLOW_SHOWN]
        ]
        raise E.UnitOverflowError.counted(
            first, len(ids), int(limit), packed=out.pack is not None, longest=int(lengths[ids].max())
        )
    status = np.where(over, packing.DROPPED if out.overflow == "drop" else packing.TRUNCATED, packing.WRITTEN)
    kept = np.where(over, 0 if out.overflow == "drop" else limit, lengths)
    return status.astype(np.uint8), kept.astype(np.int64)


def untrained_mask(build, data: dict) -> np.ndarray | None:
    """source.drop_untrained: True for each sample of a file with the flag whose tokens (as many as are
    written: the tokenize stage counts them) train none; None when no file of the build leaves any out."""
    flags = np.array([bool(f.drop_untrained) for f in build.files], dtype=bool)
    if not flags.any() or data.get("trained") is None:
        return None
    return flags[data["files"].astype(np.int64)] & (data["trained"] == 0)


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


def _columns(data: dict) -> dict:
    """The plan table's per-sample columns both layouts share."""
    return {
        "files": inter.arr(data["files"], np.uint32),
        "lines": inter.arr(data["lines"], np.uint64),
        "hashes": data["hashes"],
        "unk_samples": inter.arr(data["unk_samples"], np.uint64),
        "unk_counts": inter.arr(data["unk_counts"], np.uint32),
        "unk_positions": inter.arr(data["unk_positions"], np.uint32),
        **({"trained": inter.arr(data["trained"], np.uint32)} if data.get("trained") is not None else {}),
        **({"end_markers": data["end_markers"]} if data.get("end_markers") else {}),
    }


def plan_output(
    build, out_index: int, chunk_dirs: list[str], plan_path: str, units_path: str, log=print
) -> dict:
    out = build.outputs[out_index]
    data = read_chunks(chunk_dirs)
    skipped = bad_records(build, out, data, log)
    empty = empty_files(build, out, data["per_file"], log)
    taken = None
    if any(build.files[i].take is not None for i in out.files):  # source.take: choose the samples first
        taken = _take(build, out, data)
        data = _gather(data, taken["src"])
    n, lengths = len(data["lengths"]), data["lengths"]
    columns = _columns(data) | ({"empty_files": empty} if empty else {}) | skipped
    if out.pack:  # units.pack: rows of the row length instead of unit sizes (the plan applies drop/truncate)
        return _plan_output_packed(build, out_index, data, taken, columns, plan_path, units_path, log)
    limit = out.sizes[-1] if out.sizes is not None else padding.largest_size(out.auto)
    cut = overflow_status(build, out, data, limit)  # drop / truncate: the tokenize stage applied them
    cut = untrained_status(cut, untrained_mask(build, data), lengths)  # so did it source.drop_untrained
    kept = lengths if cut is None else cut[1]
    sizes, units_arr = _assign_units(out, data, cut, kept, log)
    if taken is not None:
        columns.update(_take_columns(taken, _units_of_taken(out, taken, sizes)))
    rows, counts = _rows_in_units(units_arr, len(sizes))
    sps = out.samples_per_shard
    roles = data["trained_roles"]
    if cut is not None:  # the per-role counts are of whole samples: exact only when none was cut
        columns |= {
            "overflow": out.overflow,
            "status": inter.arr(cut[0], np.uint8),
            "kept": inter.arr(kept, np.uint32),
        }
        roles = None
    inter.write(
        plan_path,
        {
            "output": out_index,
            "n": int(n),
            "sizes": sizes,
            "samples_per_shard": sps,
            "lengths": inter.arr(lengths, np.uint32),
            "units": inter.arr(units_arr, np.uint16),
            "rows": inter.arr(rows, np.uint64),
            **columns,
            **({"trained_roles": dict(sorted(roles.items()))} if roles is not None else {}),
        },
    )
    summary = {
        "output": out_index,
        "sizes": sizes,
        "counts": counts,
        "samples_per_shard": sps,
        "shards": [-(-c // sps) for c in counts],
        "auto": out.auto,
        **({"take": True} if taken else {}),
    }
    atomic_write_text(units_path, json.dumps(summary))
    log(
        f"[unit-build] plan {out.dir}: {n} samples; per unit "
        + ", ".join(f"{s}: {c}" for s, c in zip(sizes, counts))
        + _cut_note(cut, limit, out.overflow)
    )
    return summary


def _plan_output_packed(build, out_index, data, taken, columns, plan_path, units_path, log) -> dict:
    """plan_output for units.pack: rows of the row length instead of unit sizes (the plan applies
    drop/truncate)."""
    out = build.outputs[out_index]
    if out.overflow == "error":
        overflow_status(build, out, data, out.pack)
    if taken is not None:
        columns.update(_take_columns(taken, np.zeros(len(taken["lengths"]), dtype=np.int64)))
    return _plan_packed(
        out,
        out_index,
        int(len(data["lengths"])),
        data["lengths"],
        plan_path,
        units_path,
        log,
        columns,
        data["trained_roles"],
        untrained_mask(build, data),
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


def _rows_in_units(units_arr, n_units: int) -> tuple[np.ndarray, list[int]]:
    """The row of each sample inside its unit, counted in sample_id order, and each unit's sample count."""
    rows = np.zeros(len(units_arr), dtype=np.int64)
    counts = []
    for u in range(n_units):
        sel = np.flatnonzero(units_arr == u)
        rows[sel] = np.arange(len(sel))
        counts.append(int(len(sel)))
    return rows, counts


def _cut_note(cut, limit: int, overflow) -> str:
    """The plan line's note of the samples units.overflow and source.drop_untrained cut."""
    if cut is None:
        return ""
    over = int(np.count_nonzero(np.isin(cut[0], (1, 2))))
    untrained = int(np.count_nonzero(cut[0] == UNTRAINED))
    return (f"; {over} longer than {limit}: {overflow}" if over else "") + (
        f"; {untrained} untrained left out (source.drop_untrained)" if untrained else ""
    )


def read_chunks(chunk_dirs: list[str]) -> dict:
    """The per-sample facts of an output's chunks, in files order then chunk order (sample_id order
    without source.take): columns, 1-based file lines, and each file's sample count."""
    parts: dict[str, list] = {
        k: []
        for k in (
            "files",
            "lines",
            "lengths",
            "units",
            "hashes",
            "unk_samples",
            "unk_counts",
            "unk_positions",
            "trained",
        )
    }
    trained_roles: dict[str, int] | None = None  # source.chat: trained tokens per role
    role_samples: list[tuple[int, dict]] = []  # with source.take: per chunk, role -> per-sample counts
    end_markers: dict[str, list[str]] = {}
    next_line: dict[int, int] = {}
    per_file: dict[int, int] = {}
    bad: dict[int, dict] = {}  # file -> its bad records (source.on_bad_record), in input order
    chunk_n = []
    base = 0
    for d in chunk_dirs:
        meta = inter.ChunkMeta.read(d)
        f, n = meta.file, meta.n
        first = next_line.get(f, 1)
        next_line[f] = first + meta.newlines  # line ends of a JSONL chunk, rows of a Parquet/datasets one
        per_file[f] = per_file.get(f, 0) + n
        chunk_n.append(n)
        parts["files"].append(np.full(n, f, dtype=np.uint32))
        parts["lines"].append(meta.lines.astype(np.int64) + first)
        for key in ("lengths", "units", "unk_counts", "unk_positions", "trained"):
            if getattr(meta, key) is not None:
                parts[key].append(getattr(meta, key))
        parts["hashes"].append(meta.hashes)
        parts["unk_samples"].append(meta.unk_samples.astype(np.int64) + base)
        if meta.trained_roles is not None:
            trained_roles = trained_roles or {}
            for role, count in meta.trained_roles.items():
                trained_roles[role] = trained_roles.get(role, 0) + int(count)
        role_samples.append((n, meta.trained_roles_samples or {}))
        if meta.end_markers:  # source.train_eos: the end-of-turn tokens each file's template trains
            end_markers[str(f)] = meta.end_markers
        bad_of_chunk(bad, meta, first)
        base += n
    cols = {
        key: _cat(parts[key], np.int64)
        for key in parts
        if key != "hashes" and (parts[key] or key != "trained")
    }
    cols["hashes"] = b"".join(parts["hashes"])
    cols["trained_roles"] = trained_roles
    cols["per_file"], cols["chunk_n"], cols["end_markers"], cols["bad"] = per_file, chunk_n, end_markers, bad
    roles = sorted({r for _n, per in role_samples for r in per})
    cols["role_samples"] = {
        r: _cat([per.get(r, np.zeros(n, dtype=np.int64)) for n, per in role_samples], np.int64) for r in roles
    }
    return cols


def _cat(parts, dtype):
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


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
        found["first"] = E.relocated(meta.bad_first, found["lines"][0])


def _limit(f, records: int) -> int:
    """The most bad records source.max_skipped lets a file of `records` records hold."""
    return f.max_skipped if isinstance(f.max_skipped, int) else int(f.max_skipped * records)


def bad_records(build, out, data: dict, log=print) -> dict:
    """source.on_bad_record for each file of the output (check_bad_records). Returns the plan's `skipped`
    column when a file of the output skips ({} otherwise)."""
    rows = {"files": [], "lines": [], "classes": [], "reasons": []}
    for i in out.files:
        found = data["bad"].get(i)
        if found and check_bad_records(build, build.files[i], found, data["per_file"].get(i, 0), log):
            rows["files"] += [i] * len(found["lines"])
            for key in ("lines", "classes", "reasons"):
                rows[key] += found[key]
    if all(build.files[i].on_bad_record != "skip" for i in out.files):
        return {}
    return {"skipped": rows}


def check_bad_records(build, f, found: dict | None, samples: int, log=print) -> int:
    """A file's bad records (found: bad_of_chunk's) beside its `samples`: `error` (default) fails at the
    first, counting them all; `skip` fails when they are more than max_skipped or all of its records, else
    says how many it leaves out. Returns that count."""
    count = len(found["lines"]) if found else 0
    if not count:
        return 0
    shown = [(f.path, line, kind) for line, kind in zip(found["lines"][: E.BAD_SHOWN], found["classes"])]
    records = count + samples
    if f.on_bad_record != "skip":
        raise E.bad_records_counted(found["first"], shown, count, f.path, lang=build.lang)
    if count == records or count > _limit(f, records):
        raise E.too_many_bad_records(
            found["first"], shown, _top_reasons(found), count, records, f.max_skipped, f.path, lang=build.lang
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
        if f.take is None:  # a file of this output without take: all of it, once
            positions, reps = np.arange(available, dtype=np.int64), np.zeros(available, dtype=np.int64)
        else:
            if isinstance(f.take, int) and available == 0:  # pre-flight refuses it; a file changed since
                raise E.PipelineValidationError.take_no_samples(i, f.path, f.take, lang=build.lang)
            positions, reps = TK.select(f.take, available, f.take_seed, f.index)
            files.append(TK.summary(f.path, f.index, f.take, available))
        src.append(positions + base)
        repeats.append(reps)
        base += available
    seed = next(build.files[i].take_seed for i in out.files if build.files[i].take is not None)
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
    out = {key: cols[key][src] for key in ("files", "lines", "lengths", "units", "trained") if key in cols}
    out["hashes"] = np.frombuffer(cols["hashes"], dtype=np.uint8).reshape(-1, 32)[src].tobytes()
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


def _take_columns(taken: dict, source_units: np.ndarray) -> dict:
    """The plan's take columns: each sample's repeat, and what the write jobs need to find a chosen
    sample's tokens in the chunks' unit streams (its position, each source sample's unit, chunk sizes)."""
    return {
        "repeats": inter.arr(taken["repeats"], np.uint32),
        "take": taken["summary"],
        "take_src": inter.arr(taken["src"], np.uint64),
        "take_units": inter.arr(source_units, np.uint16),
        "take_chunks": [int(n) for n in taken["chunk_n"]],
    }


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


def _plan_packed(
    out,
    out_index: int,
    n: int,
    lengths: np.ndarray,
    plan_path: str,
    units_path: str,
    log,
    columns: dict,
    trained_roles: dict | None = None,
    untrained=None,
) -> dict:
    """Packed rows (mintdim.units.packing): each sample's row and offset, from the lengths alone (and,
    with source.drop_untrained, which samples train no token)."""
    from ..units import packing

    t0 = time.monotonic()
    p = packing.plan(lengths, out.pack, out.overflow, untrained)
    if trained_roles is not None and not np.any(p.status):  # source.chat: per-role counts of whole samples,
        columns["trained_roles"] = dict(sorted(trained_roles.items()))  # exact only when none was cut
    sps = out.samples_per_shard  # rows per shard in the packed layout
    written = int(np.count_nonzero(~np.isin(p.status, packing.LEFT_OUT)))
    inter.write(
        plan_path,
        {
            "output": out_index,
            "n": n,
            "sizes": [out.pack],
            "samples_per_shard": sps,
            "layout": "packed",
            "row_length": out.pack,
            "overflow": out.overflow,
            "n_rows": p.n_rows,
            "lengths": inter.arr(lengths, np.uint32),
            "units": inter.arr(np.zeros(n, dtype=np.int64), np.uint16),
            "rows": inter.arr(np.maximum(p.rows, 0), np.uint64),
            "offsets": inter.arr(p.offsets, np.uint32),
            "kept": inter.arr(p.kept, np.uint32),
            "status": inter.arr(p.status, np.uint8),
            **columns,
        },
    )
    summary = {
        "output": out_index,
        "sizes": [out.pack],
        "counts": [written],
        "samples_per_shard": sps,
        "shards": [-(-p.n_rows // sps)],
        "auto": None,
        "layout": "packed",
        "rows": p.n_rows,
        **({"take": True} if "take" in columns else {}),
    }
    atomic_write_text(units_path, json.dumps(summary))
    dropped = int(np.count_nonzero(p.status == packing.DROPPED))
    truncated = int(np.count_nonzero(p.status == packing.TRUNCATED))
    left = int(np.count_nonzero(p.status == packing.UNTRAINED))
    log(
        f"[unit-build] plan {out.dir}: {n} samples packed into {p.n_rows} rows of {out.pack} "
        f"(lower bound {p.lower_bound}, efficiency {p.efficiency:.4%}; {dropped} dropped, "
        f"{truncated} truncated" + (f", {left} untrained left out" if untrained is not None else "") + ") "
        f"in {time.monotonic() - t0:.2f} s"
    )
    return summary
