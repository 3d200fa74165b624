"""Aggregate one output: sample, duplicate and UNK indexes, histogram, stats and manifest.

Everything is written into the output's staging directory; finalize moves
the finished tree into place.
"""

from __future__ import annotations

import json
import os

import numpy as np
import orjson

from .. import __version__, padding
from ..formats import intermediate as inter
from ..formats.indexes import JsonlWriter, duplicate_groups, write_json
from ..formats.shards import SHARD_NAME
from ..outputs import atomic_write_text
from ..progress import Progress
from .written import check_shard_counts


def manifest(build, meta, out, sizes: list[int]) -> dict:
    files = [build.files[i] for i in out.files]
    batches = [f.build_batch for f in files]
    return {
        "pipeline": "unit-build",
        "mintdim_version": __version__,
        "tokenizer": {"type": meta.type, "path": meta.path, "vocab_size": meta.vocab_size,
                      "unk_id": meta.unk_id, "pad_id": meta.pad_id,
                      **({"trained": meta.trained} if getattr(meta, "trained", None) else {})},
        "token_storage": {"dtype": meta.dtype, "bytes_per_token": meta.bytes_per_token, "byte_order": "little"},
        "units": {"sizes": sizes, "build_batch": batches[0] if len(set(batches)) == 1 else batches,
                  **({"planned": {"from": "data", **out.auto}} if out.auto else {})},
        "source": {"files": [f.path for f in files], "fields": [f.fields for f in files],
                   "templates": [f.template for f in files]},
        "output": {"samples_per_shard": out.samples_per_shard},
        "token_dtype": meta.dtype,
        "hash": {"algorithm": "sha256"},
        **({"loss_mask": loss_mask_layout(files)} if any(f.train_on is not None for f in files) else {}),
    } | _chat_manifest(files, meta)


def _chat_manifest(files, meta) -> dict:
    """source.chat and hf_dir options, only in builds that use them (other manifests keep their bytes)."""
    extra = {}
    if any(getattr(f, "chat", None) is not None for f in files):
        extra["chat"] = {"source": [f.chat for f in files], "train_on": [f.train_on for f in files],
                         "rule": "a message's span is the text its content renders to (found by rendering again "
                                 "with only that content changed) plus the end-of-turn token after it; "
                                 "{% generation %} spans for assistant turns of a tagged template"}
    opts = next((f.tokenizer_options for f in files if getattr(f, "tokenizer_options", None)), None)
    if opts:
        extra["tokenizer_options"] = {k: v for k, v in opts.items()}
    return extra


def loss_mask_layout(files) -> dict:
    """How to read the loss masks (source.train_on) that sit beside the shards."""
    return {
        "train_on": [f.train_on or [] for f in files],
        "file": "unit_<size>/mask_XXXXXX.bin beside unit_<size>/shard_XXXXXX.bin, same record order",
        "record_bytes": "ceil(unit_size / 8)",
        "bit_order": "little",
        "padding_bits": 0,
        "rule": "a token is trained when the character it starts at (the tokenizer's own offsets, "
                "from the same encode call) lies inside the rendered span of a train_on field",
    }


_SAMPLE_LINE = ('{"sample_id":%d,"hash":"%s","token_count":%d,"unit_size":%d,"source_file":%s,"source_line":%d,'
                '"shard_path":"unit_%d/' + SHARD_NAME + '","shard_row":%d')


def write_sample_index(path: str, hexes: str, lengths, sizes, units, rows, sps: int, file_ids, paths, lines,
                       trained, progress, block: int = 1 << 16) -> None:
    """sample_index.jsonl, in sample_id order. Each line is formatted directly, as the same bytes
    orjson gives for the record (same keys, same order): a dict and a dumps call per sample took
    most of the aggregate stage."""
    files = [orjson.dumps(p).decode("utf-8") for p in paths]  # JSON strings, non-ASCII kept as is
    line = _SAMPLE_LINE + (',"trained_tokens":%d}\n' if trained is not None else "}\n")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for start in range(0, len(lengths), block):
            progress.update(start)
            end = min(start + block, len(lengths))
            unit_size = [sizes[k] for k in units[start:end].tolist()]  # twice: the field and the shard's dir
            r = rows[start:end]
            cols = [range(start, end), (hexes[64 * i:64 * i + 64] for i in range(start, end)),
                    lengths[start:end].tolist(), unit_size,
                    [files[k] for k in file_ids[start:end].tolist()], lines[start:end].tolist(),
                    unit_size, (r // sps).tolist(), (r % sps).tolist()]
            if trained is not None:
                cols.append(trained[start:end].tolist())
            fh.write("".join([line % row for row in zip(*cols)]))


def aggregate_output(build, metas, out_index: int, plan_path: str, written_paths: list[str] | None, stage_dir: str,
                     agg_path: str, log=print) -> dict:
    """Shard counts follow from the plan (ceil(samples / samples_per_shard) per unit); written_paths,
    when given (the write jobs' summaries: the workflow runs aggregate after them), are checked
    against them."""
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
    rows = inter.unarr(plan["rows"])
    digests = np.frombuffer(plan["hashes"], dtype=np.uint8).reshape(n, 32)
    hexes = plan["hashes"].hex()
    paths = [f.path for f in build.files]
    trained = inter.unarr(plan["trained"]) if "trained" in plan else None  # source.train_on

    os.makedirs(stage_dir, exist_ok=True)
    progress = Progress(log, f"[unit-build] aggregate {out.dir}", n, "samples indexed")
    write_sample_index(os.path.join(stage_dir, "sample_index.jsonl"), hexes, lengths, sizes, units, rows, sps,
                       file_ids, paths, lines, trained, progress)

    # duplicate_index.jsonl: groups by first sample_id, members in sample_id order
    groups = duplicate_groups(digests)
    writer = JsonlWriter(os.path.join(stage_dir, "duplicate_index.jsonl"))
    for members in groups:
        first = int(members[0])
        writer.write({"hash": hexes[64 * first:64 * first + 64], "count": int(len(members)),
                      "samples": [{"sample_id": int(s), "source_file": paths[file_ids[s]],
                                   "source_line": int(lines[s])} for s in members]})
    writer.close()

    # unk_index.jsonl
    unk_samples = inter.unarr(plan["unk_samples"])
    unk_counts = inter.unarr(plan["unk_counts"])
    unk_positions = inter.unarr(plan["unk_positions"])
    writer = JsonlWriter(os.path.join(stage_dir, "unk_index.jsonl"))
    offset = 0
    for s, c in zip(unk_samples.tolist(), unk_counts.tolist()):
        writer.write({"sample_id": s, "hash": hexes[64 * s:64 * s + 64], "source_file": paths[file_ids[s]],
                      "source_line": int(lines[s]), "unk_count": c,
                      "unk_positions": unk_positions[offset:offset + c].tolist()})
        offset += c
    writer.close()

    counts = np.bincount(units, minlength=len(sizes)).tolist()
    distribution = {str(s): int(c) for s, c in zip(sizes, counts)}
    write_json(os.path.join(stage_dir, "histogram.json"), distribution)
    stats = {
        "total_samples": int(n),
        "total_tokens": int(lengths.astype(np.int64).sum()),
        "token_dtype": meta.dtype,
        "bytes_per_token": meta.bytes_per_token,
        "duplicate_groups": len(groups),
        "duplicate_samples": int(sum(len(g) for g in groups)),
        "samples_with_unk": int(len(unk_samples)),
        "unk_tokens": int(unk_counts.astype(np.int64).sum()),
        "unit_distribution": distribution,
        "shards": {str(s): -(-int(c) // sps) for s, c in zip(sizes, counts)},
        "padding": padding.measure(*padding.histogram(lengths), sizes).as_stats(),
    }
    if trained is not None:
        stats["trained_tokens"] = int(trained.astype(np.int64).sum())
    if "trained_roles" in plan:  # source.chat: the same trained tokens, counted by message role
        stats["trained_tokens_by_role"] = plan["trained_roles"]
    if written_paths:
        check_shard_counts(stats, written_paths)
    write_json(os.path.join(stage_dir, "manifest.json"), manifest(build, meta, out, sizes))
    write_json(os.path.join(stage_dir, "stats.json"), stats)
    atomic_write_text(agg_path, json.dumps({"output": out.dir, "stats": stats}))
    log(f"[unit-build] aggregate {out.dir}: {n} samples, {stats['total_tokens']} tokens, "
        f"{stats['duplicate_groups']} duplicate groups, {stats['samples_with_unk']} samples with UNK")
    return stats
