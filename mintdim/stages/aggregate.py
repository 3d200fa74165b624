"""Aggregate one output: sample, duplicate and UNK indexes, histogram, stats and manifest.

Everything is written into the aggregate job's own directory; finalize links it and the write jobs'
directories into the output's tree and places it.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .. import __version__
from ..formats import intermediate as inter
from ..formats import output as fmt
from ..formats import sample_columns
from ..formats.output import (
    JsonlWriter,
    duplicate_groups,
    write_json,
    write_packed_sample_index,
    write_sample_index,
)
from ..formats.records import atomic_write_text
from ..progress import Progress
from ..units import padding
from ..units.packing import LEFT_OUT
from .write import fresh_dir

UNTRAINED_SHOWN = 10  # ids of samples that train no token in the console's warning


def manifest(
    build,
    meta,
    out,
    sizes: list[int],
    packed: bool = False,
    take: dict | None = None,
    end_markers: dict | None = None,
) -> dict:
    files = [build.files[i] for i in out.files]
    batches = [f.build_batch for f in files]
    return (
        {
            "pipeline": "unit-build",
            "mintdim_version": __version__,
            "tokenizer": {
                "type": meta.type,
                "path": meta.path,
                "vocab_size": meta.vocab_size,
                "unk_id": meta.unk_id,
                "pad_id": meta.pad_id,
                **({"trained": meta.trained} if getattr(meta, "trained", None) else {}),
                # extension: only when a fast engine encoded the texts (mintdim/tokenizers/engines.py)
                **({"engine": meta.engine} if getattr(meta, "engine", None) else {}),
            },
            "token_storage": {
                "dtype": meta.dtype,
                "bytes_per_token": meta.bytes_per_token,
                "byte_order": "little",
            },
            "units": {
                "sizes": sizes,
                "build_batch": batches[0] if len(set(batches)) == 1 else batches,
                **({"planned": {"from": "data", **out.auto}} if out.auto else {}),
                **(packed_layout(out) if packed else {"overflow": out.overflow} if out.overflow else {}),
            },
            "source": {
                "files": [f.path for f in files],
                "fields": [f.fields for f in files],
                "templates": [f.template for f in files],
                **(
                    {"drop_untrained": [bool(f.drop_untrained) for f in files]}  # only in builds that use it
                    if any(f.drop_untrained for f in files)
                    else {}
                ),
                **_bad_record_policy(files),
            },
            "output": {"samples_per_shard": out.samples_per_shard},
            "token_dtype": meta.dtype,
            "hash": {"algorithm": "sha256"},
            **(
                {
                    "loss_mask": loss_mask_layout(
                        files, "row_length" if packed else "unit_size", build, end_markers
                    )
                }
                if any(f.train_on is not None for f in files)
                else {}
            ),
        }
        | _chat_manifest(files, meta)
        | ({"take": take} if take is not None else {})
    )


def _bad_record_policy(files) -> dict:
    """source.on_bad_record and max_skipped per file, only in an output a file of which skips."""
    if all(f.on_bad_record != "skip" for f in files):
        return {}
    return {
        "on_bad_record": [f.on_bad_record or "error" for f in files],
        "max_skipped": [f.max_skipped for f in files],
    }


def _write_skipped(build, plan: dict, stage_dir: str) -> dict:
    """skipped_index.jsonl and stats.json's skipped_records (and per class), when a file of the output
    skips."""
    if "skipped" not in plan:
        return {}
    from ..sources import inputs

    rows = {i for i, f in enumerate(build.files) if inputs.kind_of(f.abspath) != inputs.JSONL}
    per_class = fmt.write_skipped_index(
        os.path.join(stage_dir, fmt.SKIPPED_INDEX), plan["skipped"], [f.path for f in build.files], rows
    )
    return {"skipped_records": len(plan["skipped"]["files"]), "skipped_records_by_class": per_class}


def _chat_manifest(files, meta) -> dict:
    """source.chat and hf_dir options, only in builds that use them (other manifests keep their bytes)."""
    extra = {}
    if any(getattr(f, "chat", None) is not None for f in files):
        extra["chat"] = {
            "source": [f.chat for f in files],
            "train_on": [f.train_on for f in files],
            "rule": "a message's span is the text its content renders to (found by rendering again "
            "with only that content changed) plus the end-of-turn token after it; "
            "{% generation %} spans for assistant turns of a tagged template",
        }
    opts = next((f.tokenizer_options for f in files if getattr(f, "tokenizer_options", None)), None)
    if opts:
        extra["tokenizer_options"] = {k: v for k, v in opts.items()}
    return extra


def loss_mask_layout(files, width: str = "unit_size", build=None, end_markers: dict | None = None) -> dict:
    """How to read the loss masks (source.train_on) that sit beside the shards; end_markers (source.train_eos,
    by file index): the end-of-turn tokens trained after a trained field, only in builds that train one."""
    order = sorted(end_markers or {}, key=int)
    eot = {build.files[int(i)].path: end_markers[i] for i in order} if order else None
    return {
        "train_on": [f.train_on or [] for f in files],
        "file": "unit_<size>/mask_XXXXXX.bin beside unit_<size>/shard_XXXXXX.bin, same record order",
        "record_bytes": f"ceil({width} / 8)",
        "bit_order": "little",
        "padding_bits": 0,
        "rule": "a token is trained when the character it starts at (the tokenizer's own offsets, "
        "from the same encode call) lies inside the rendered span of a train_on field"
        + (
            ", or of the end-of-turn token the template writes right after it (after optional white "
            "space; source.train_eos)"
            if eot
            else ""
        ),
        **({"end_of_turn": eot} if eot else {}),
    }


def _write_duplicates(path: str, digests, hexes: str, origin) -> list:
    """duplicate_index.jsonl: a line per hash that 2 or more samples share; returns the groups."""
    groups = duplicate_groups(digests)
    writer = JsonlWriter(path)
    for record in fmt.duplicate_records(groups, lambda s: hexes[64 * s : 64 * s + 64], origin):
        writer.write(record)
    writer.close()
    return groups


def aggregate_output(
    build,
    metas,
    out_index: int,
    plan_path: str,
    written_paths: list[str] | None,
    stage_dir: str,
    agg_path: str,
    log=print,
) -> dict:
    """Shard counts follow from the plan (ceil(samples / samples_per_shard) per unit); finalize checks
    them against the write jobs' summaries. written_paths: those summaries, which packed rows need
    (the trained tokens each sample kept); bucketed units run aggregate beside the write jobs."""
    out = build.outputs[out_index]
    meta = metas[out.tokenizer_abspath]
    plan = inter.read(plan_path)
    n = plan["n"]
    sizes = plan["sizes"]  # declared, or planned from the data (units.sizes: auto)
    sps = out.samples_per_shard
    file_ids = inter.unarr(plan["files"])
    lines = inter.unarr(plan["lines"])
    lengths = inter.unarr(plan["lengths"])
    units = inter.unarr(plan["units"])
    digests = np.frombuffer(plan["hashes"], dtype=np.uint8).reshape(n, 32)
    hexes = fmt.HexDigests(plan["hashes"])  # the digests' text, made per block as the indexes are written
    paths = [f.path for f in build.files]
    trained = inter.unarr(plan["trained"]) if "trained" in plan else None  # source.train_on
    repeats = inter.unarr(plan["repeats"]) if "repeats" in plan else None  # source.take

    fresh_dir(stage_dir)
    progress = Progress(log, f"[unit-build] aggregate {out.dir}", n, "samples indexed")
    packed = _packed(plan, trained, written_paths) if plan.get("layout") == "packed" else None
    cut = _cut(plan) if packed is None else None  # unit sizes with units.overflow drop | truncate
    if packed is not None:  # units.pack
        trained = packed["trained"]
    index_path = os.path.join(stage_dir, fmt.SAMPLE_INDEX)
    _write_index_of_samples(index_path, plan, hexes, paths, sps, packed, cut, trained, repeats, progress)
    sample_columns.write_built(stage_dir, plan, paths, sps, packed, cut, trained, repeats)

    origin = fmt.origin_of(paths, file_ids, lines, repeats)
    groups = _write_duplicates(os.path.join(stage_dir, fmt.DUPLICATE_INDEX), digests, hexes, origin)
    unk_samples, unk_counts = _write_unk_index(
        os.path.join(stage_dir, fmt.UNK_INDEX), plan, packed, hexes, origin
    )
    counts = _samples_per_unit(units, sizes, packed)
    distribution = {str(s): int(c) for s, c in zip(sizes, counts)}
    write_json(os.path.join(stage_dir, fmt.HISTOGRAM), distribution)
    kept = packed["kept"] if packed is not None else lengths if cut is None else cut["kept"]
    stats = {
        "total_samples": int(n),
        "total_tokens": int(kept.astype(np.int64).sum()),
        "token_dtype": meta.dtype,
        "bytes_per_token": meta.bytes_per_token,
        "duplicate_groups": len(groups),
        "duplicate_samples": int(sum(len(g) for g in groups)),
        "samples_with_unk": int(len(unk_samples)),
        "unk_tokens": int(unk_counts.astype(np.int64).sum()),
        "unit_distribution": distribution,
        "shards": {str(s): -(-int(c) // sps) for s, c in zip(sizes, counts)},
        "padding": padding.measure(*padding.histogram(_written(kept, cut)), sizes).as_stats()
        if packed is None
        else None,
    }
    if packed is not None:  # shards and padding of the rows, and the packing block
        stats.update(_packed_stats(plan, packed, sps))
    stats.update(_extension_stats(build, plan, cut, lengths, int(sizes[-1]), trained, packed))
    stats.update(_write_skipped(build, plan, stage_dir))  # source.on_bad_record: skip
    warn_untrained(log, out, stats)
    write_json(
        os.path.join(stage_dir, fmt.MANIFEST),
        manifest(build, meta, out, sizes, packed is not None, plan.get("take"), plan.get("end_markers")),
    )
    write_json(os.path.join(stage_dir, fmt.STATS), stats)
    atomic_write_text(agg_path, json.dumps({"output": out.dir, "stats": stats}))
    log(
        f"[unit-build] aggregate {out.dir}: {n} samples, {stats['total_tokens']} tokens, "
        f"{stats['duplicate_groups']} duplicate groups, {stats['samples_with_unk']} samples with UNK"
    )
    return stats


def _write_index_of_samples(path, plan, hexes, paths, sps, packed, cut, trained, repeats, progress) -> None:
    """The sample index of the output: of its packed rows (units.pack) or of its units."""
    file_ids, lines = inter.unarr(plan["files"]), inter.unarr(plan["lines"])
    lengths, rows = inter.unarr(plan["lengths"]), inter.unarr(plan["rows"])
    if packed is not None:
        write_packed_sample_index(
            path,
            hexes,
            lengths,
            packed["kept"],
            packed["status"],
            plan["sizes"][0],
            rows,
            packed["offsets"],
            sps,
            file_ids,
            paths,
            lines,
            None if trained is None else trained.tolist(),
            progress,
            repeats,
        )
    else:
        write_sample_index(
            path,
            hexes,
            lengths if cut is None else cut["kept"],
            plan["sizes"],
            inter.unarr(plan["units"]),
            rows,
            sps,
            file_ids,
            paths,
            lines,
            trained,
            progress,
            overflow=None if cut is None else (cut["status"], lengths),
            repeats=repeats,
        )


def _write_unk_index(path, plan, packed, hexes, origin) -> tuple[np.ndarray, np.ndarray]:
    """The UNK index of the output; returns the samples with UNK and their UNK counts (with units.pack,
    of the tokens written)."""
    unk_samples = inter.unarr(plan["unk_samples"])
    unk_counts = inter.unarr(plan["unk_counts"])
    unk_positions = inter.unarr(plan["unk_positions"])
    if packed is not None:  # UNK figures describe the tokens written
        unk_samples, unk_counts, unk_positions = _stored_unk(
            unk_samples, unk_counts, unk_positions, packed["kept"]
        )
    _write_unk(path, unk_samples, unk_counts, unk_positions, hexes, origin)
    return unk_samples, unk_counts


def _samples_per_unit(units, sizes, packed) -> list[int]:
    """The number of samples written in each unit (one count, of the samples packed, with units.pack)."""
    if packed is not None:
        return [int(np.count_nonzero(~np.isin(packed["status"], LEFT_OUT)))]
    return np.bincount(units, minlength=len(sizes))[: len(sizes)].tolist()  # a dropped sample: in no unit


def _extension_stats(
    build, plan: dict, cut: dict | None, lengths, largest: int, trained, packed=None
) -> dict:
    """stats.json keys of the extensions a build uses (none: the spec's stats, byte for byte)."""
    stats = {}
    if cut is not None and np.isin(cut["status"], (1, 2)).any():  # unit sizes with units.overflow drop |
        stats["overflow"] = overflow_block(cut["policy"], cut["status"], lengths, largest)  # truncate
    if "empty_files" in plan:  # source.allow_empty: the inputs that held no sample
        stats["empty_files"] = [build.files[i].path for i in plan["empty_files"]]
    if trained is not None:
        stats["trained_tokens"] = int(trained.astype(np.int64).sum())
        status = packed["status"] if packed is not None else cut["status"] if cut is not None else None
        stats.update(untrained_stats(build, trained, status))
    if "trained_roles" in plan:  # source.chat: the same trained tokens, counted by message role
        stats["trained_tokens_by_role"] = plan["trained_roles"]
    return stats


def untrained_stats(build, trained, status) -> dict:
    """source.train_on: the samples whose loss mask has no bit set among the tokens written (a sample
    units.overflow dropped is not one), with those source.drop_untrained left out of the shards."""
    from ..units import packing

    status = np.zeros(len(trained), dtype=np.uint8) if status is None else status
    ids = np.flatnonzero((trained == 0) & (status != packing.DROPPED))
    stats = {"untrained_samples": len(ids), "untrained_ids": ids.tolist()}
    if any(f.drop_untrained for f in build.files):
        stats["untrained_dropped"] = int(np.count_nonzero(status == packing.UNTRAINED))
    return stats


def warn_untrained(log, out, stats: dict) -> None:
    """The console's warning of samples that train no token: how many, the first ten ids, what to do."""
    count, ids = stats.get("untrained_samples", 0), stats.get("untrained_ids", [])[:UNTRAINED_SHOWN]
    if not count:
        return
    shown = ", ".join(map(str, ids)) + (", ..." if count > len(ids) else "")
    left = stats.get("untrained_dropped", 0)
    what = (
        f"{left} left out of the shards (source.drop_untrained)"
        if left
        else "source.drop_untrained: [true] leaves them out"
    )
    log(
        f"[unit-build:warning] {out.dir}: {count} samples train no token (ids {shown}): what train_on names "
        f"is empty, or past what units.overflow kept; {what}; stats.json untrained_samples, untrained_ids"
    )


def _write_unk(path: str, unk_samples, unk_counts, unk_positions, hexes: str, origin) -> None:
    """unk_index.jsonl: the samples whose tokens hold unk_id, in sample_id order, with the positions."""
    writer = JsonlWriter(path)
    offset = 0
    for s, c in zip(unk_samples.tolist(), unk_counts.tolist()):
        where = origin(s)
        writer.write(
            {
                "sample_id": s,
                "hash": hexes[64 * s : 64 * s + 64],
                "source_file": where["source_file"],
                "source_line": where["source_line"],
                **({"repeat": where["repeat"]} if "repeat" in where else {}),
                "unk_count": c,
                "unk_positions": unk_positions[offset : offset + c].tolist(),
            }
        )
        offset += c
    writer.close()


# --- packed rows (units.pack) ------------------------------------------------------------------


def packed_layout(out) -> dict:
    """The manifest's units keys of the packed layout: how rows, boundaries and samples are laid out."""
    return {
        "layout": "packed",
        "row_length": out.pack,
        "overflow": out.overflow,
        "pack": {
            "rows": "unit_<row_length>/shard_XXXXXX.bin: rows of row_length tokens, the samples of a row "
            "back to back in sample_id order, then pad_id; samples_per_shard rows per shard",
            "boundaries": "unit_<row_length>/cu_XXXXXX.bin beside each shard, int32 little-endian: R + 1 row "
            "pointers ptr (R rows in the shard), then per row its cumulative sequence lengths "
            "[0, ..., tokens in the row]; row r's are cu[ptr[r]:ptr[r + 1]] of the values after "
            "the pointers",
            "sample_index": "shard_path, shard_row (row in the shard), row_offset (first slot in the row)",
            "algorithm": "best-fit decreasing over the token counts (docs/packing.md)",
        },
    }


def _packed(plan: dict, trained, written_paths) -> dict:
    """The plan's packing columns, and the trained tokens written per sample (source.train_on:
    truncated samples count only the row's part, as the write job reports it)."""
    status = inter.unarr(plan["status"])
    kept = inter.unarr(plan["kept"]).astype(np.int64)
    if trained is not None:
        trained = trained.astype(np.int64)
        trained[status == 1] = 0
        reported = {}
        for p in written_paths or []:
            with open(p, encoding="utf-8") as f:
                for u in json.load(f).get("units", []):
                    reported.update(u.get("trained_kept", {}))
        for sid in np.flatnonzero(status == 2).tolist():
            if str(sid) not in reported:
                raise RuntimeError(
                    f"the write job did not report the trained tokens of truncated sample {sid}"
                )
            trained[sid] = reported[str(sid)]
    return {
        "status": status,
        "kept": kept,
        "offsets": inter.unarr(plan["offsets"]).astype(np.int64),
        "trained": trained,
        "n_rows": int(plan["n_rows"]),
        "row_length": int(plan["row_length"]),
        "overflow": plan["overflow"],
    }


def _written(kept, cut: dict | None):
    """The token counts of the samples in a unit (not those units.overflow or drop_untrained left out)."""
    return kept if cut is None else kept[~np.isin(cut["status"], LEFT_OUT)]


def _cut(plan: dict) -> dict | None:
    """Unit sizes with units.overflow drop | truncate, when a sample was longer than the largest unit."""
    if "status" not in plan:
        return None
    return {
        "policy": plan["overflow"],
        "status": inter.unarr(plan["status"]),
        "kept": inter.unarr(plan["kept"]).astype(np.int64),
    }


def overflow_block(policy: str, status, lengths, limit: int) -> dict:
    """stats.json's overflow figures (packed rows: packing.overflow; unit sizes: overflow): the policy,
    how many samples were dropped or truncated, the tokens truncation lost, and their sample ids."""
    dropped = np.flatnonzero(status == 1)
    truncated = np.flatnonzero(status == 2)
    return {
        "policy": policy,
        "dropped": int(len(dropped)),
        "truncated": int(len(truncated)),
        "truncated_tokens_lost": int((lengths[truncated].astype(np.int64) - limit).sum()),
        "dropped_ids": dropped.tolist(),
        "truncated_ids": truncated.tolist(),
    }


def _stored_unk(samples, counts, positions, kept):
    """UNK positions inside the tokens written: a dropped sample
    has none, a truncated one those in its row."""
    owner = np.repeat(samples.astype(np.int64), counts.astype(np.int64))
    keep = positions.astype(np.int64) < kept[owner]
    per = np.bincount(owner[keep], minlength=len(kept))[samples.astype(np.int64)] if len(samples) else counts
    has = per > 0
    return samples[has], per[has].astype(np.uint32), positions[keep]


def _packed_stats(plan, packed, rows_per_shard) -> dict:
    from ..units import packing

    L, n_rows = packed["row_length"], packed["n_rows"]
    status, kept = packed["status"], packed["kept"]
    tokens = int(kept.sum())
    slots = n_rows * L
    written = int(np.count_nonzero(~np.isin(status, packing.LEFT_OUT)))
    lengths = inter.unarr(plan["lengths"]).astype(np.int64)
    ratio = (slots - tokens) / slots if slots else 0.0
    return {
        "shards": {str(L): -(-n_rows // rows_per_shard)},
        "padding": {
            "total_slots": slots,
            "pad_tokens": slots - tokens,
            "padding_ratio": ratio,
            "per_unit": {
                str(L): {
                    "samples": written,
                    "tokens": tokens,
                    "slots": slots,
                    "pad_tokens": slots - tokens,
                    "padding_ratio": ratio,
                }
            },
        },
        "packing": {
            "row_length": L,
            "rows": n_rows,
            "samples": written,
            "tokens": tokens,
            "slots": slots,
            "efficiency": tokens / slots if slots else 1.0,
            "lower_bound_rows": -(-tokens // L),
            "overflow": overflow_block(packed["overflow"], status, lengths, L),
        },
    }
