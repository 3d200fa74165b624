"""Plan one output directory: sample ids, file line numbers, unit rows and shards.

Reads the meta of every chunk mapped to the output, in files order then
chunk order, so sample_id follows input order whatever ran in parallel.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..units import padding
from ..formats import intermediate as inter
from ..formats.records import atomic_write_text


def plan_output(build, out_index: int, chunk_dirs: list[str], plan_path: str, units_path: str, log=print) -> dict:
    out = build.outputs[out_index]
    file_ids, lines, lengths, units, hashes = [], [], [], [], []
    unk_samples, unk_counts, unk_positions = [], [], []
    trained = []  # per-sample trained-token counts, when source.train_on is set
    trained_roles: dict[str, int] | None = None  # source.chat: trained tokens per role
    next_line: dict[int, int] = {}
    base = 0
    for d in chunk_dirs:
        meta = inter.read(inter.meta_path(d))
        f = meta["file"]
        first = next_line.get(f, 1)
        next_line[f] = first + meta["newlines"]
        n = meta["n"]
        file_ids.append(np.full(n, f, dtype=np.uint32))
        lines.append(inter.unarr(meta["lines"]).astype(np.int64) + first)
        lengths.append(inter.unarr(meta["lengths"]))
        units.append(inter.unarr(meta["units"]))
        hashes.append(meta["hashes"])
        unk_samples.append(inter.unarr(meta["unk_samples"]).astype(np.int64) + base)
        unk_counts.append(inter.unarr(meta["unk_counts"]))
        unk_positions.append(inter.unarr(meta["unk_positions"]))
        if "trained" in meta:
            trained.append(inter.unarr(meta["trained"]))
        if "trained_roles" in meta:
            trained_roles = trained_roles or {}
            for role, count in meta["trained_roles"].items():
                trained_roles[role] = trained_roles.get(role, 0) + int(count)
        base += n

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    lengths_arr = cat(lengths, np.int64)
    if out.pack:  # units.pack: rows of the row length instead of unit sizes
        return _plan_packed(out, out_index, int(base), lengths_arr, plan_path, units_path, log, {
            "files": inter.arr(cat(file_ids, np.uint32), np.uint32),
            "lines": inter.arr(cat(lines, np.int64), np.uint64),
            "hashes": b"".join(hashes),
            "unk_samples": inter.arr(cat(unk_samples, np.int64), np.uint64),
            "unk_counts": inter.arr(cat(unk_counts, np.int64), np.uint32),
            "unk_positions": inter.arr(cat(unk_positions, np.int64), np.uint32),
            **({"trained": inter.arr(cat(trained, np.int64), np.uint32)} if trained else {})}, trained_roles)
    if out.sizes is None:  # units.sizes: auto -> the exact padding-optimal sizes for this output's lengths
        sizes = plan_sizes(lengths_arr, out.auto, log)
        units_arr = np.searchsorted(np.asarray(sizes, dtype=np.int64), lengths_arr, side="left")
    else:
        sizes = out.sizes
        units_arr = cat(units, np.int64)
    # row of each sample inside its unit, counted in sample_id order
    rows = np.zeros(len(units_arr), dtype=np.int64)
    counts = []
    for u in range(len(sizes)):
        sel = np.flatnonzero(units_arr == u)
        rows[sel] = np.arange(len(sel))
        counts.append(int(len(sel)))
    sps = out.samples_per_shard
    inter.write(plan_path, {
        "output": out_index, "n": int(base), "sizes": sizes, "samples_per_shard": sps,
        "files": inter.arr(cat(file_ids, np.uint32), np.uint32),
        "lines": inter.arr(cat(lines, np.int64), np.uint64),
        "lengths": inter.arr(lengths_arr, np.uint32),
        "units": inter.arr(units_arr, np.uint16),
        "rows": inter.arr(rows, np.uint64),
        "hashes": b"".join(hashes),
        "unk_samples": inter.arr(cat(unk_samples, np.int64), np.uint64),
        "unk_counts": inter.arr(cat(unk_counts, np.int64), np.uint32),
        "unk_positions": inter.arr(cat(unk_positions, np.int64), np.uint32),
        **({"trained": inter.arr(cat(trained, np.int64), np.uint32)} if trained else {}),
        **({"trained_roles": dict(sorted(trained_roles.items()))} if trained_roles is not None else {}),
    })
    summary = {"output": out_index, "sizes": sizes, "counts": counts, "samples_per_shard": sps,
               "shards": [-(-c // sps) for c in counts], "auto": out.auto}
    atomic_write_text(units_path, json.dumps(summary))
    log(f"[unit-build] plan {out.dir}: {base} samples; per unit " +
        ", ".join(f"{s}: {c}" for s, c in zip(sizes, counts)))
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
