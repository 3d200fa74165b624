"""Plan one output directory: sample ids, file line numbers, unit rows and shards.

Reads the meta of every chunk mapped to the output, in files order then
chunk order, so sample_id follows input order whatever ran in parallel.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from .. import errors as E
from ..units import padding
from ..units.packing import DROPPED
from ..formats import intermediate as inter
from ..formats.records import atomic_write_text


def _read_chunks(chunk_dirs: list[str]) -> dict:
    """The chunks' metas, in order, as whole-output columns (sample ids follow input order), with each
    file's sample count."""
    cols: dict[str, list] = {k: [] for k in ("files", "lines", "lengths", "units", "hashes", "unk_samples",
                                             "unk_counts", "unk_positions", "trained")}
    trained_roles: dict[str, int] | None = None  # source.chat: trained tokens per role
    next_line: dict[int, int] = {}
    per_file: dict[int, int] = {}
    base = 0
    for d in chunk_dirs:
        meta = inter.read(inter.meta_path(d))
        f, n = meta["file"], meta["n"]
        first = next_line.get(f, 1)
        next_line[f] = first + meta["newlines"]
        per_file[f] = per_file.get(f, 0) + n
        cols["files"].append(np.full(n, f, dtype=np.uint32))
        cols["lines"].append(inter.unarr(meta["lines"]).astype(np.int64) + first)
        cols["lengths"].append(inter.unarr(meta["lengths"]))
        cols["units"].append(inter.unarr(meta["units"]))
        cols["hashes"].append(meta["hashes"])
        cols["unk_samples"].append(inter.unarr(meta["unk_samples"]).astype(np.int64) + base)
        cols["unk_counts"].append(inter.unarr(meta["unk_counts"]))
        cols["unk_positions"].append(inter.unarr(meta["unk_positions"]))
        if "trained" in meta:
            cols["trained"].append(inter.unarr(meta["trained"]))
        if "trained_roles" in meta:
            trained_roles = trained_roles or {}
            for role, count in meta["trained_roles"].items():
                trained_roles[role] = trained_roles.get(role, 0) + int(count)
        base += n

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return {"n": base, "per_file": per_file, "trained_roles": trained_roles,
            "files": cat(cols["files"], np.uint32), "lines": cat(cols["lines"], np.int64),
            "lengths": cat(cols["lengths"], np.int64), "units": cat(cols["units"], np.int64),
            "hashes": b"".join(cols["hashes"]), "unk_samples": cat(cols["unk_samples"], np.int64),
            "unk_counts": cat(cols["unk_counts"], np.int64), "unk_positions": cat(cols["unk_positions"], np.int64),
            "trained": cat(cols["trained"], np.int64) if cols["trained"] else None}


def empty_files(build, out, per_file: dict[int, int], log=print) -> list[int]:
    """The output's files without a single sample: an error (SourceParseError), or with source.allow_empty
    a warning, returned for stats.json. Pre-flight decided the cheap cases (jsonl.no_samples); here every
    chunk's count is known, so a long file of blank lines, or an output of no sample at all, is caught too."""
    empty = [i for i in out.files if per_file.get(i, 0) == 0]
    for i in empty:
        f = build.files[i]
        if not f.allow_empty:
            raise E.SourceParseError.empty(f.path, "empty" if os.path.getsize(f.abspath) == 0 else "blank")
        log(f"[unit-build:warning] {f.path} holds no samples; built without it "
            "(source.allow_empty: true; listed in stats.json empty_files)")
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
        first = [(build.files[int(data["files"][i])].path, int(data["lines"][i]), int(lengths[i]))
                 for i in ids[:E.OVERFLOW_SHOWN]]
        raise E.UnitOverflowError.counted(first, len(ids), int(limit), packed=out.pack is not None)
    status = np.where(over, packing.DROPPED if out.overflow == "drop" else packing.TRUNCATED, packing.WRITTEN)
    kept = np.where(over, 0 if out.overflow == "drop" else limit, lengths)
    return status.astype(np.uint8), kept.astype(np.int64)


def _columns(data: dict) -> dict:
    """The plan table's per-sample columns both layouts share."""
    return {"files": inter.arr(data["files"], np.uint32), "lines": inter.arr(data["lines"], np.uint64),
            "hashes": data["hashes"], "unk_samples": inter.arr(data["unk_samples"], np.uint64),
            "unk_counts": inter.arr(data["unk_counts"], np.uint32),
            "unk_positions": inter.arr(data["unk_positions"], np.uint32),
            **({"trained": inter.arr(data["trained"], np.uint32)} if data["trained"] is not None else {})}


def plan_output(build, out_index: int, chunk_dirs: list[str], plan_path: str, units_path: str, log=print) -> dict:
    out = build.outputs[out_index]
    data = _read_chunks(chunk_dirs)
    n, lengths = data["n"], data["lengths"]
    empty = empty_files(build, out, data["per_file"], log)
    columns = _columns(data) | ({"empty_files": empty} if empty else {})
    if out.pack:  # units.pack: rows of the row length instead of unit sizes (the plan applies drop/truncate)
        if out.overflow == "error":
            overflow_status(build, out, data, out.pack)
        return _plan_packed(out, out_index, int(n), lengths, plan_path, units_path, log, columns,
                            data["trained_roles"])
    limit = out.sizes[-1] if out.sizes is not None else padding.largest_size(out.auto)
    cut = overflow_status(build, out, data, limit)  # drop / truncate: the tokenize stage applied them
    kept = lengths if cut is None else cut[1]
    if out.sizes is None:  # units.sizes: auto -> the exact padding-optimal sizes for this output's lengths
        written = kept if cut is None else kept[cut[0] != DROPPED]
        sizes = plan_sizes(written, out.auto, log)
        units_arr = np.searchsorted(np.asarray(sizes, dtype=np.int64), kept, side="left")
        if cut is not None:
            units_arr[cut[0] == DROPPED] = len(sizes)  # in no unit
    else:
        sizes = out.sizes
        units_arr = data["units"]
    # row of each sample inside its unit, counted in sample_id order
    rows = np.zeros(len(units_arr), dtype=np.int64)
    counts = []
    for u in range(len(sizes)):
        sel = np.flatnonzero(units_arr == u)
        rows[sel] = np.arange(len(sel))
        counts.append(int(len(sel)))
    sps = out.samples_per_shard
    roles = data["trained_roles"]
    if cut is not None:  # the per-role counts are of whole samples: exact only when none was cut
        columns |= {"overflow": out.overflow, "status": inter.arr(cut[0], np.uint8),
                    "kept": inter.arr(kept, np.uint32)}
        roles = None
    inter.write(plan_path, {
        "output": out_index, "n": int(n), "sizes": sizes, "samples_per_shard": sps,
        "lengths": inter.arr(lengths, np.uint32), "units": inter.arr(units_arr, np.uint16),
        "rows": inter.arr(rows, np.uint64), **columns,
        **({"trained_roles": dict(sorted(roles.items()))} if roles is not None else {}),
    })
    summary = {"output": out_index, "sizes": sizes, "counts": counts, "samples_per_shard": sps,
               "shards": [-(-c // sps) for c in counts], "auto": out.auto}
    atomic_write_text(units_path, json.dumps(summary))
    log(f"[unit-build] plan {out.dir}: {n} samples; per unit " + ", ".join(f"{s}: {c}" for s, c in zip(sizes, counts))
        + ("" if cut is None else f"; {int(np.count_nonzero(cut[0]))} longer than {limit}: {out.overflow}"))
    return summary


def plan_sizes(lengths: np.ndarray, auto: dict, log=print) -> list[int]:
    """units.sizes: auto -> k sizes minimising padding (mintdim.units.padding, exact)."""
    if not len(lengths):
        return [auto.get("min_size") or auto.get("multiple_of") or 1]
    found = padding.suggest(lengths, k=auto["k"], multiple_of=auto.get("multiple_of") or 1,
                            min_size=auto.get("min_size"), max_size=auto.get("max_size"),
                            cost=auto.get("cost") or "linear")
    log(f"[unit-build] planned unit sizes {found.sizes} (padding {found.report.padding_ratio:.2%}"
        f"{'; ' + found.note if found.note else ''})")
    return found.sizes


def _plan_packed(out, out_index: int, n: int, lengths: np.ndarray, plan_path: str, units_path: str, log,
                 columns: dict, trained_roles: dict | None = None) -> dict:
    """Packed rows (mintdim.units.packing): each sample's row and offset, from the lengths alone."""
    from ..units import packing

    t0 = time.monotonic()
    p = packing.plan(lengths, out.pack, out.overflow)
    if trained_roles is not None and not np.any(p.status):  # source.chat: per-role counts of whole samples,
        columns["trained_roles"] = dict(sorted(trained_roles.items()))  # exact only when none was cut
    sps = out.samples_per_shard  # rows per shard in the packed layout
    written = int(np.count_nonzero(p.status != packing.DROPPED))
    inter.write(plan_path, {
        "output": out_index, "n": n, "sizes": [out.pack], "samples_per_shard": sps,
        "layout": "packed", "row_length": out.pack, "overflow": out.overflow, "n_rows": p.n_rows,
        "lengths": inter.arr(lengths, np.uint32),
        "units": inter.arr(np.zeros(n, dtype=np.int64), np.uint16),
        "rows": inter.arr(np.maximum(p.rows, 0), np.uint64),
        "offsets": inter.arr(p.offsets, np.uint32),
        "kept": inter.arr(p.kept, np.uint32),
        "status": inter.arr(p.status, np.uint8),
        **columns,
    })
    summary = {"output": out_index, "sizes": [out.pack], "counts": [written], "samples_per_shard": sps,
               "shards": [-(-p.n_rows // sps)], "auto": None, "layout": "packed", "rows": p.n_rows}
    atomic_write_text(units_path, json.dumps(summary))
    dropped = int(np.count_nonzero(p.status == packing.DROPPED))
    truncated = int(np.count_nonzero(p.status == packing.TRUNCATED))
    log(f"[unit-build] plan {out.dir}: {n} samples packed into {p.n_rows} rows of {out.pack} "
        f"(lower bound {p.lower_bound}, efficiency {p.efficiency:.4%}; {dropped} dropped, {truncated} truncated) "
        f"in {time.monotonic() - t0:.2f} s")
    return summary
