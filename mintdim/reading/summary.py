"""What `mintdim inspect` prints and the build report shows: figures of one finished output.

Padding is computed from token counts and unit sizes: a unit's padding ratio is
1 - tokens / (samples * unit_size), the share of its record slots that hold pad_id.
"""

from __future__ import annotations

import math
import os

import numpy as np

from .reader import Dataset
from .reader import open as open_dataset

NICE = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 200, 256, 500, 512, 1000, 1024)


def bin_width(sizes: list[int], target_bins: int = 24, max_bins: int = 32) -> int:
    """A readable bin width: the smallest that divides every unit size in at most `max_bins` bins
    (so unit boundaries fall on bin edges), else one giving about `target_bins` bins."""
    max_size = max(sizes)
    for w in NICE:
        if math.ceil(max_size / w) <= max_bins and all(s % w == 0 for s in sizes):
            return w
    want = max(1, math.ceil(max_size / target_bins))
    for w in NICE:
        if w >= want:
            return w
    scale = 10 ** (len(str(want)) - 1)
    return math.ceil(want / scale) * scale


def length_histogram(lengths: np.ndarray, sizes: list[int], width: int | None = None) -> dict:
    """Counts of token lengths in bins (lo, hi] of `width` (the first bin is [0, width])."""
    max_size = max(sizes)
    width = width or bin_width(sizes)
    nbins = max(1, math.ceil(max_size / width))
    idx = np.maximum(np.asarray(lengths, dtype=np.int64) - 1, 0) // width
    counts = np.bincount(np.minimum(idx, nbins - 1), minlength=nbins)
    return {"width": width, "edges": [k * width for k in range(nbins + 1)], "counts": counts.tolist()}


def summarize(target) -> dict:
    """Figures of a finished output (a path or an open Dataset)."""
    ds = target if not isinstance(target, str) else open_dataset(target)
    if not isinstance(ds, Dataset):  # packed rows (units.pack)
        return with_trained(ds, _summarize_packed(ds), None)
    return with_trained(ds, _summarize_units(ds), np.asarray(ds.sample_columns.unit))


def trained_per_sample(ds) -> np.ndarray | None:
    """trained_tokens of every sample, as the sample index gives them; None without source.train_on."""
    if not ds.has_loss_mask:
        return None
    trained = ds.sample_columns.trained_tokens
    return np.zeros(ds.num_samples, np.int64) if trained is None else np.asarray(trained, dtype=np.int64)


def with_trained(ds, s: dict, unit_of) -> dict:
    """source.train_on: the trained tokens of each unit (the rows) and of the whole output, and the samples
    that train no token (untrained_samples, the first ten ids) among those written or left out for it."""
    trained = trained_per_sample(ds)
    if trained is None:
        return s
    written = (ds.token_counts > 0) | (trained > 0)  # a sample in no unit (or no row) has no token
    if unit_of is None:
        unit_of = np.where(written, 0, -1)
    for u, unit in enumerate(s["units"]):
        mine = unit_of == u
        unit["trained"] = int(trained[mine].sum())
        unit["untrained"] = int(np.count_nonzero(trained[mine] == 0))
    st = ds.stats
    ids = st.get("untrained_ids", np.flatnonzero(written & (trained == 0)).tolist())
    return s | {
        "trained_tokens": int(trained.sum()),
        "untrained_samples": st.get("untrained_samples", len(ids)),
        "untrained_ids": ids[:10],
        "untrained_dropped": st.get("untrained_dropped", 0),
    }


def _summarize_units(ds) -> dict:
    """The figures of an output of unit sizes."""
    unit_of = np.asarray(ds.sample_columns.unit)
    lengths = ds.token_counts.astype(np.int64)[unit_of >= 0]  # not those dropped for their length
    unit_of = unit_of[unit_of >= 0]
    units = []
    total_slots = 0
    total_bytes = 0
    for u, unit in enumerate(ds.units):
        mine = lengths[unit_of == u]
        tokens = int(mine.sum())
        slots = int(unit.num_samples) * unit.size
        nbytes = (
            sum(int(np.prod(ds._memmap(p, unit.size).shape)) for p in unit.shard_paths) * ds.dtype.itemsize
        )
        total_slots += slots
        total_bytes += nbytes
        units.append(
            {
                "unit_size": unit.size,
                "samples": unit.num_samples,
                "shards": unit.num_shards,
                "tokens": tokens,
                "slots": slots,
                "padding_ratio": (1 - tokens / slots) if slots else 0.0,
                "bytes": nbytes,
                "min_length": int(mine.min()) if len(mine) else None,
                "mean_length": float(mine.mean()) if len(mine) else None,
                "max_length": int(mine.max()) if len(mine) else None,
            }
        )
    st = ds.stats
    total_tokens = int(lengths.sum())
    return {
        "path": ds.path,
        "samples": ds.num_samples,
        "tokens": total_tokens,
        "slots": total_slots,
        "padding_ratio": (1 - total_tokens / total_slots) if total_slots else 0.0,
        "bytes": total_bytes,
        "shards": sum(u["shards"] for u in units),
        "token_dtype": ds.dtype.name,
        "bytes_per_token": ds.dtype.itemsize,
        "tokenizer": dict(ds.manifest["tokenizer"]),
        "samples_per_shard": ds.samples_per_shard,
        "duplicate_groups": int(st.get("duplicate_groups", 0)),
        "duplicate_samples": int(st.get("duplicate_samples", 0)),
        "samples_with_unk": int(st.get("samples_with_unk", 0)),
        "unk_tokens": int(st.get("unk_tokens", 0)),
        "min_length": int(lengths.min()) if len(lengths) else None,
        "mean_length": float(lengths.mean()) if len(lengths) else None,
        "max_length": int(lengths.max()) if len(lengths) else None,
        "units": units,
        "histogram": length_histogram(lengths, ds.sizes),
        "unit_sizes": list(ds.sizes),
        **({"overflow": st["overflow"]} if "overflow" in st else {}),  # units.overflow drop | truncate
        **({"empty_files": st["empty_files"]} if "empty_files" in st else {}),  # source.allow_empty
        **_skipped(st),  # source.on_bad_record: skip
    }


def _skipped(st: dict) -> dict:
    """stats.json's skipped records (source.on_bad_record: skip), when the output has them."""
    return {key: st[key] for key in ("skipped_records", "skipped_records_by_class") if key in st}


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def stats_rows(s: dict) -> tuple[list[str], list[list[str]]]:
    """The per-unit table (header, rows with a closing `all` row): for the console and the report."""
    header = ["unit", "samples", "share", "shards", "tokens", "padding", "min", "mean", "max"]
    rows = []
    n = s["samples"] or 1
    for u in s["units"]:
        empty = u["samples"] == 0
        rows.append(
            [
                str(u["unit_size"]),
                f"{u['samples']:,}",
                _pct(u["samples"] / n),
                str(u["shards"]),
                f"{u['tokens']:,}",
                "-" if empty else _pct(u["padding_ratio"]),
                "-" if empty else str(u["min_length"]),
                "-" if empty else f"{u['mean_length']:.1f}",
                "-" if empty else str(u["max_length"]),
            ]
        )
    kept = sum(u["samples"] for u in s["units"])  # the samples in the shards; the others were dropped
    rows.append(
        [
            "all",
            f"{kept:,}",
            _pct(kept / n if s["samples"] else 0.0),
            str(s["shards"]),
            f"{s['tokens']:,}",
            _pct(s["padding_ratio"]),
            str(s["min_length"] if kept else "-"),
            f"{s['mean_length']:.1f}" if kept else "-",
            str(s["max_length"] if kept else "-"),
        ]
    )
    if "trained_tokens" in s:  # source.train_on: trained tokens, and samples that train none, per unit
        header += ["trained", "untrained"]
        for row, u in zip(rows, s["units"]):
            row += [f"{u['trained']:,}", f"{u['untrained']:,}"]
        rows[-1] += [f"{s['trained_tokens']:,}", f"{sum(u['untrained'] for u in s['units']):,}"]
    if kept < s["samples"]:
        rows.append(
            ["dropped", f"{s['samples'] - kept:,}", _pct((s["samples"] - kept) / n)]
            + ["-"] * (len(header) - 3)
        )
    return header, rows


def text_histogram(s: dict, bar: int = 40) -> list[str]:
    """Token-length histogram as text; a line marks each unit boundary."""
    h = s["histogram"]
    counts, edges, width = h["counts"], h["edges"], h["width"]
    peak = max(counts) if counts and max(counts) else 1
    label_w = len(f"{edges[-1] - width + 1}-{edges[-1]}")
    lines = [f"token lengths (bins of {width}; a '--- unit N' line closes each unit's range)"]
    bounds = list(s["unit_sizes"])
    for k, c in enumerate(counts):
        lo, hi = (0 if k == 0 else edges[k] + 1), edges[k + 1]
        hashes = "#" * (math.ceil(bar * c / peak) if c else 0)
        lines.append(f"  {f'{lo}-{hi}':>{label_w}} | {hashes:<{bar}} {c:,}")
        while bounds and bounds[0] <= hi:
            lines.append(f"  {'':>{label_w}} --- unit {bounds.pop(0)}")
    return lines


def format_summary(s: dict) -> str:
    tok = s["tokenizer"]
    lines = [
        f"MintDim output {s['path']}",
        f"  samples     {_samples(s)}",
        f"  tokens      {s['tokens']:,} in {s['slots']:,} {'row' if s.get('packing') else 'record'} slots: "
        f"padding {_pct(s['padding_ratio'], 3 if s.get('packing') else 1)}",
        f"  dtype       {s['token_dtype']} ({s['bytes_per_token']} bytes/token, little-endian), "
        f"pad_id {tok.get('pad_id')}, unk_id {tok.get('unk_id')}",
        f"  tokenizer   {tok.get('type')} {tok.get('path')} (vocab {tok.get('vocab_size'):,})",
        f"  shards      {s['shards']} files, {_mib(s['bytes'])}, {s['samples_per_shard']:,} "
        f"{'rows' if s.get('packing') else 'samples'} per shard",
        f"  duplicates  {s['duplicate_groups']:,} groups, {s['duplicate_samples']:,} samples",
        f"  UNK         {s['samples_with_unk']:,} samples, {s['unk_tokens']:,} tokens "
        f"({_pct(s['unk_tokens'] / s['tokens']) if s['tokens'] else '0.0%'} of tokens)",
        "",
    ]
    if s.get("packing"):
        p = s["packing"]
        lines[3:3] = [
            f"  packing     {p['rows']:,} rows of {p['row_length']:,} tokens: efficiency "
            f"{_pct(p['efficiency'], 3)} (lower bound {p['lower_bound_rows']:,} rows)",
            _overflow_line(p["overflow"]),
        ]
    elif s.get("overflow"):
        lines[3:3] = [_overflow_line(s["overflow"])]
    if s.get("empty_files"):
        lines[2:2] = [f"  empty files {', '.join(s['empty_files'])} (source.allow_empty)"]
    if "trained_tokens" in s:
        lines.insert(3, _trained_line(s))
    if "skipped_records" in s:  # source.on_bad_record: skip
        by_class = ", ".join(f"{k}: {v:,}" for k, v in s["skipped_records_by_class"].items())
        lines[2:2] = [
            f"  skipped records: {s['skipped_records']:,}"
            + (f" ({by_class})" if by_class else "")
            + ", listed in skipped_index.jsonl (source.on_bad_record: skip)"
        ]
    header, rows = stats_rows(s)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    lines.append("")
    lines += text_histogram(s)
    return "\n".join(lines)


def _samples(s: dict) -> str:
    """The samples read, and when some are in no shard, how many are and how many were dropped."""
    kept = sum(u["samples"] for u in s["units"])
    if kept == s["samples"]:
        return f"{s['samples']:,}"
    return f"{s['samples']:,} read: {kept:,} in the shards, {s['samples'] - kept:,} dropped"


def _trained_line(s: dict) -> str:
    """The summary's line of the loss masks: trained tokens, and the samples that train none."""
    count, ids = s["untrained_samples"], s["untrained_ids"]
    return (
        f"  trained     {s['trained_tokens']:,} tokens "
        f"({_pct(s['trained_tokens'] / s['tokens']) if s['tokens'] else '0.0%'} of tokens); "
        f"{count:,} samples train none"
        + (f" (ids {', '.join(map(str, ids))}{', ...' if count > len(ids) else ''})" if count else "")
        + (f", {s['untrained_dropped']:,} left out (source.drop_untrained)" if s["untrained_dropped"] else "")
    )


def _overflow_line(o: dict) -> str:
    """The summary's line of stats.json's overflow figures (units.overflow)."""
    cut = o["dropped"] + o["truncated"]
    return f"  overflow    {o['policy']}: {o['dropped']:,} dropped, {o['truncated']:,} truncated" + (
        f" (ids {', '.join(map(str, (o['dropped_ids'] + o['truncated_ids'])[:10]))}"
        f"{', ...' if cut > 10 else ''})"
        if cut
        else ""
    )


def _summarize_packed(ds) -> dict:
    """The figures of an output of packed rows: one 'unit' (the rows) and the packing block."""
    counts = ds.token_counts.astype(np.int64)
    lengths = counts[np.asarray(ds.sample_columns.shard) >= 0]
    L = ds.row_length
    slots = ds.num_rows * L
    tokens = int(lengths.sum())
    nbytes = sum(os.path.getsize(p) for p in ds.shard_paths)
    st = ds.stats
    unit = {
        "unit_size": L,
        "samples": int(len(lengths)),
        "shards": len(ds.shard_paths),
        "tokens": tokens,
        "slots": slots,
        "padding_ratio": (1 - tokens / slots) if slots else 0.0,
        "bytes": nbytes,
        "min_length": int(lengths.min()) if len(lengths) else None,
        "mean_length": float(lengths.mean()) if len(lengths) else None,
        "max_length": int(lengths.max()) if len(lengths) else None,
    }
    pk = st["packing"]
    return {
        "path": ds.path,
        "samples": ds.num_samples,
        "tokens": tokens,
        "slots": slots,
        "padding_ratio": unit["padding_ratio"],
        "bytes": nbytes,
        "shards": len(ds.shard_paths),
        "token_dtype": ds.dtype.name,
        "bytes_per_token": ds.dtype.itemsize,
        "tokenizer": dict(ds.manifest["tokenizer"]),
        "samples_per_shard": ds.samples_per_shard,
        "duplicate_groups": int(st.get("duplicate_groups", 0)),
        "duplicate_samples": int(st.get("duplicate_samples", 0)),
        "samples_with_unk": int(st.get("samples_with_unk", 0)),
        "unk_tokens": int(st.get("unk_tokens", 0)),
        "min_length": unit["min_length"],
        "mean_length": unit["mean_length"],
        "max_length": unit["max_length"],
        "units": [unit],
        "histogram": length_histogram(lengths, [L]),
        "unit_sizes": [L],
        "packing": {
            "row_length": L,
            "rows": ds.num_rows,
            "efficiency": tokens / slots if slots else 1.0,
            "lower_bound_rows": -(-tokens // L),
            "overflow": pk["overflow"],
        },
        **_skipped(st),  # source.on_bad_record: skip
    }
