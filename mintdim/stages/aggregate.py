"""Aggregate one output: sample, duplicate and UNK indexes, histogram, stats and manifest.

Everything is written into the aggregate job's own directory; finalize links it and the write jobs'
directories into the output's tree and places it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .. import __version__
from ..files import open_pieces
from ..formats import intermediate as inter
from ..formats import output as fmt
from ..formats import sample_columns
from ..formats.output import JsonlWriter, duplicate_groups, write_json
from ..formats.records import atomic_write_text
from ..progress import Progress
from ..units import padding
from ..units.packing import LEFT_OUT
from .plan import BLOCK, unit_counts, walk_chunks
from .write import fresh_dir

UNTRAINED_SHOWN = 10  # ids of samples that train no token in the console's warning


def manifest(build, meta, out, plan: inter.Plan) -> dict:
    """manifest.json of an output: its tokenizer, token storage, units (or packed rows), sources, and the
    blocks of the extensions it uses."""
    packed = plan.packing is not None  # units.pack
    sizes, end_markers = plan.sizes, plan.end_markers
    files = [build.files[i] for i in out.files]
    batches = [f.units.build_batch for f in files]
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
                "fields": [f.source.fields for f in files],
                "templates": [f.source.template for f in files],
                **(
                    {
                        "drop_untrained": [bool(f.masks.drop_untrained) for f in files]
                    }  # only in builds that use it
                    if any(f.masks.drop_untrained for f in files)
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
                if any(f.masks.train_on is not None for f in files)
                else {}
            ),
        }
        | _chat_manifest(files, meta)
        | ({"take": plan.take.summary} if plan.take is not None else {})
    )


def _bad_record_policy(files) -> dict:
    """source.on_bad_record and max_skipped per file, only in an output a file of which skips."""
    if all(f.source.on_bad_record != "skip" for f in files):
        return {}
    return {
        "on_bad_record": [f.source.on_bad_record or "error" for f in files],
        "max_skipped": [f.source.max_skipped for f in files],
    }


def _write_skipped(build, plan: inter.Plan, stage_dir: str) -> dict:
    """skipped_index.jsonl and stats.json's skipped_records (and per class), when a file of the output
    skips."""
    if plan.skipped is None:
        return {}
    from ..sources import inputs

    rows = {i for i, f in enumerate(build.files) if inputs.kind_of(f.abspath) != inputs.JSONL}
    per_class = fmt.write_skipped_index(
        os.path.join(stage_dir, fmt.SKIPPED_INDEX), plan.skipped, [f.path for f in build.files], rows
    )
    return {"skipped_records": len(plan.skipped.files), "skipped_records_by_class": per_class}


def _chat_manifest(files, meta) -> dict:
    """source.chat and hf_dir options, only in builds that use them (other manifests keep their bytes)."""
    extra = {}
    if any(getattr(f, "chat", None) is not None for f in files):
        extra["chat"] = {
            "source": [f.chat for f in files],
            "train_on": [f.masks.train_on for f in files],
            "rule": "a message's span is the text its content renders to (found by rendering again "
            "with only that content changed) plus the end-of-turn token after it; "
            "{% generation %} spans for assistant turns of a tagged template",
        }
    opts = next((f.tokenizer.options for f in files if f.tokenizer.options), None)
    if opts:
        extra["tokenizer_options"] = {k: v for k, v in opts.items()}
    return extra


def loss_mask_layout(files, width: str = "unit_size", build=None, end_markers: dict | None = None) -> dict:
    """How to read the loss masks (source.train_on) that sit beside the shards; end_markers (source.train_eos,
    by file index): the end-of-turn tokens trained after a trained field, only in builds that train one."""
    order = sorted(end_markers or {}, key=int)
    eot = {build.files[int(i)].path: end_markers[i] for i in order} if order else None
    return {
        "train_on": [f.masks.train_on or [] for f in files],
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


@dataclass(frozen=True, slots=True)
class _Shards:
    """What an output's shards hold, in either layout (unit sizes or packed rows)."""

    kept: np.ndarray  # tokens written of each sample
    status: np.ndarray | None  # units.packing's status of each (None: every sample written whole)
    trained: np.ndarray | None  # source.train_on: trained tokens written of each
    unk: tuple  # samples with UNK among the tokens written, their UNK counts and positions
    counts: list[int]  # samples written in each unit (packed rows: one count)
    stats: dict  # stats.json's keys of the layout: shards, padding, then overflow or packing


def aggregate_output(
    build,
    metas,
    out_index: int,
    plan_path: str,
    chunk_dirs: list[str],
    written_paths: list[str] | None,
    stage_dir: str,
    agg_path: str,
    log=print,
) -> dict:
    """Shard counts follow from the plan (ceil(samples / samples_per_shard) per unit); finalize checks
    them against the write jobs' summaries. chunk_dirs: the output's chunks, whose metas give each
    sample's file, line and digest, a chunk at a time. written_paths: the write jobs' summaries, which
    packed rows need (the trained tokens each sample kept); bucketed units run aggregate beside the write
    jobs."""
    out = build.outputs[out_index]
    meta = metas[out.tokenizer_abspath]
    plan = inter.Plan.read(plan_path)
    fresh_dir(stage_dir)
    shards = _packed_rows(plan, written_paths) if plan.packing else _units(plan)
    facts = _Facts(chunk_dirs, plan.take)
    tied, per_file = _tied_prefixes(facts, plan.n, len(build.files))
    paths = [f.path for f in build.files]
    progress = Progress(log, f"[unit-build] aggregate {out.dir}", plan.n, "samples indexed")
    tied_found, unk_found = _write_index_of_samples(
        stage_dir, plan, shards, facts, paths, per_file, tied, progress
    )
    repeats = None if plan.take is None else plan.take.repeats
    groups = _write_duplicates(os.path.join(stage_dir, fmt.DUPLICATE_INDEX), tied_found, paths, repeats)
    _write_unk(os.path.join(stage_dir, fmt.UNK_INDEX), *shards.unk, unk_found.origin(paths, repeats))
    distribution = {str(s): int(c) for s, c in zip(plan.sizes, shards.counts)}
    write_json(os.path.join(stage_dir, fmt.HISTOGRAM), distribution)
    stats = {
        "total_samples": int(plan.n),
        "total_tokens": int(shards.kept.sum(dtype=np.int64)),
        "token_dtype": meta.dtype,
        "bytes_per_token": meta.bytes_per_token,
        "duplicate_groups": len(groups),
        "duplicate_samples": int(sum(len(g) for g in groups)),
        "samples_with_unk": int(len(shards.unk[0])),
        "unk_tokens": int(shards.unk[1].sum(dtype=np.int64)),
        "unit_distribution": distribution,
        **shards.stats,
        **_extension_stats(build, plan, shards),
        **_write_skipped(build, plan, stage_dir),  # source.on_bad_record: skip
    }
    warn_untrained(log, out, stats)
    write_json(os.path.join(stage_dir, fmt.MANIFEST), manifest(build, meta, out, plan))
    write_json(os.path.join(stage_dir, fmt.STATS), stats)
    atomic_write_text(agg_path, json.dumps({"output": out.dir, "stats": stats}))
    log(
        f"[unit-build] aggregate {out.dir}: {plan.n} samples, {stats['total_tokens']} tokens, "
        f"{stats['duplicate_groups']} duplicate groups, {stats['samples_with_unk']} samples with UNK"
    )
    return stats


# --- each sample's file, line and digest, from the chunks ----------------------------------------------


class _Facts:
    """Each sample's file, 1-based line and digest, a block of at most BLOCK samples at a time in
    sample_id order: (first sample_id, files, lines, digests as n x 32 bytes), read from the chunks'
    metas one at a time. With source.take the source samples' facts are held (12 + 32 bytes a source
    sample) and gathered by the plan's take_src."""

    def __init__(self, chunk_dirs: list[str], take: inter.Take | None):
        self.chunk_dirs, self.take = chunk_dirs, take
        self._held = None

    def blocks(self):
        if self.take is None:
            for meta, first, base in walk_chunks(self.chunk_dirs):
                lines = meta.lines.astype(np.int64) + first
                for a in range(0, meta.n, BLOCK):
                    b = min(a + BLOCK, meta.n)
                    files = np.full(b - a, meta.file, dtype=np.int64)
                    yield base + a, files, lines[a:b], meta.hashes[32 * a : 32 * b]
            return
        files, lines, digests = self._source()
        for a in range(0, len(self.take.src), BLOCK):
            at = self.take.src[a : a + BLOCK].astype(np.int64)
            yield a, files[at], lines[at], digests[at].tobytes()

    def _source(self):
        if self._held is None:
            files, lines, digests = [], [], []
            for meta, first, _base in walk_chunks(self.chunk_dirs):
                files.append(np.full(meta.n, meta.file, dtype=np.uint32))
                lines.append(meta.lines.astype(np.int64) + first)
                digests.append(meta.hashes)
            held = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 32)
            self._held = (_cat(files, np.int64), _cat(lines, np.int64), held)
        return self._held


def _cat(parts, dtype):
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


def _first_words(digests: bytes) -> np.ndarray:
    """Each digest's first 8 bytes as an unsigned integer (big-endian, as duplicate_groups sorts them)."""
    return np.frombuffer(digests, dtype=">u8")[::4].astype(np.uint64)


def _tied_prefixes(facts: _Facts, n: int, n_files: int) -> tuple[np.ndarray, np.ndarray]:
    """The first 8 digest bytes that two or more samples share (sorted), and the samples per build file.
    Holds 8 bytes a sample (sorted in place) and 1 for the comparison; every duplicate shares its
    prefix, and the samples with a shared prefix are grouped by their whole digests later (exact)."""
    keys = np.empty(n, dtype=np.uint64)
    per_file = np.zeros(n_files, dtype=np.int64)
    for start, files, _lines, digests in facts.blocks():
        keys[start : start + len(files)] = _first_words(digests)
        per_file += np.bincount(files, minlength=n_files)
    keys.sort()
    same = keys[1:] == keys[:-1]
    return np.unique(keys[1:][same]), per_file


class _Picked:
    """Some samples' sample ids, files, lines and digests, gathered a block at a time in sample_id order."""

    def __init__(self):
        self._parts = []

    def add(self, start: int, sel, files, lines, digests: bytes) -> None:
        if len(sel):
            d = np.frombuffer(digests, dtype=np.uint8).reshape(-1, 32)[sel]
            self._parts.append((sel + start, files[sel], lines[sel], d))

    def done(self) -> _Picked:
        cols = list(zip(*self._parts)) or [[np.zeros(0, dtype=np.int64)]] * 3 + [
            [np.zeros((0, 32), np.uint8)]
        ]
        self.ids, self.files, self.lines, self.digests = (np.concatenate(c) for c in cols)
        return self

    def origin(self, paths, repeats):
        """origin(k): where the k-th picked sample comes from, as the indexes give it (formats.output
        origin_of), with its digest's hex text."""

        def origin(k: int) -> dict:
            s = int(self.ids[k])
            found = {
                "sample_id": s,
                "source_file": paths[int(self.files[k])],
                "source_line": int(self.lines[k]),
            }
            if repeats is not None:
                found["repeat"] = int(repeats[s])
            return found | {"hash": self.digests[k].tobytes().hex()}

        return origin


def _write_duplicates(path: str, found: _Picked, paths, repeats) -> list:
    """duplicate_index.jsonl: a line per hash that 2 or more samples share (among the samples whose
    first 8 digest bytes another shares, grouped by whole digests); returns the groups."""
    groups = duplicate_groups(found.digests)
    origin = found.origin(paths, repeats)
    writer = JsonlWriter(path)
    for record in fmt.duplicate_records(groups, lambda k: origin(k)["hash"], _without_hash(origin)):
        writer.write(record)
    writer.close()
    return groups


def _without_hash(origin):
    def where(k: int) -> dict:
        found = origin(k)
        del found["hash"]
        return found

    return where


def _units(plan: inter.Plan) -> _Shards:
    """Unit sizes: each unit holds its samples whole, or (units.overflow truncate) their first tokens;
    those units.overflow dropped or source.drop_untrained left out are in none."""
    cut, sizes, sps = plan.cut, plan.sizes, plan.samples_per_shard
    kept = plan.lengths if cut is None else cut.kept.astype(np.int64)
    written = kept if cut is None else kept[~np.isin(cut.status, LEFT_OUT)]
    counts = unit_counts(plan.units, len(sizes))  # a dropped one: in none
    stats = {
        "shards": {str(s): -(-int(c) // sps) for s, c in zip(sizes, counts)},
        "padding": padding.measure(*padding.histogram(written), sizes).as_stats(),
    }
    if cut is not None and np.isin(cut.status, (1, 2)).any():  # units.overflow drop | truncate
        stats["overflow"] = overflow_block(cut.overflow, cut.status, plan.lengths, int(sizes[-1]))
    unk = (plan.unk_samples, plan.unk_counts, plan.unk_positions)
    return _Shards(kept, None if cut is None else cut.status, plan.trained, unk, counts, stats)


def _packed_rows(plan: inter.Plan, written_paths) -> _Shards:
    """units.pack: rows of samples back to back; the UNK figures and trained tokens are of the tokens
    written (a truncated sample's row part, as the write job reports it)."""
    status, kept = plan.cut.status, plan.cut.kept.astype(np.int64)
    unk = _stored_unk(plan.unk_samples, plan.unk_counts, plan.unk_positions, kept)
    written = int(np.count_nonzero(~np.isin(status, LEFT_OUT)))
    trained = None if plan.trained is None else _trained_written(plan.trained, status, written_paths)
    return _Shards(kept, status, trained, unk, [written], _packed_stats(plan, kept, written))


def _write_index_of_samples(
    stage_dir, plan: inter.Plan, shards: _Shards, facts, paths, per_file, tied, progress
):
    """sample_index.jsonl and sample_index.idx, of packed rows (units.pack) or of units, a block of samples
    at a time; returns the samples whose first 8 digest bytes are `tied` and those with UNK, picked on
    the way (_Picked)."""
    repeats = None if plan.take is None else plan.take.repeats  # source.take
    used, number = sample_columns.used_files(per_file)
    placed = None if plan.packing is None else sample_columns.placed_of(plan.n, shards.status)
    packed = None if plan.packing is None else (plan.packing.n_rows, int(np.count_nonzero(placed)))
    counts = sample_columns.built_counts(plan.n, shards.trained is not None, repeats is not None, packed)
    layout = "units" if plan.packing is None else "packed"
    columns = os.path.join(stage_dir, sample_columns.NAME)
    names = fmt.json_names(paths)
    rows_of = _rows_in_units(len(plan.sizes))
    tied_found, unk_found, unk = _Picked(), _Picked(), shards.unk[0]
    with (
        open_pieces(os.path.join(stage_dir, fmt.SAMPLE_INDEX)) as fh,
        sample_columns.Writer(columns, layout, counts, [paths[k] for k in used.tolist()]) as w,
    ):
        for start, files, lines, digests in facts.blocks():
            progress.update(start)
            part = slice(start, start + len(files))
            block = _block(plan, shards, part, repeats)
            block["rows"] = plan.rows[part] if plan.packing is not None else rows_of(block["units"])
            fh.write(_lines(plan, block, start, digests.hex(), files, lines, paths, names))
            sample_columns.put_built(
                w, start, plan.samples_per_shard, block | {"files": number[files], "lines": lines}
            )
            words = _first_words(digests)
            at = np.minimum(np.searchsorted(tied, words), max(len(tied) - 1, 0))
            tied_found.add(
                start, np.flatnonzero(tied[at] == words) if len(tied) else at[:0], files, lines, digests
            )
            lo, hi = np.searchsorted(unk, [part.start, part.stop])
            unk_found.add(start, unk[lo:hi].astype(np.int64) - start, files, lines, digests)
        if plan.packing is not None:
            sample_columns.put_rows(w, plan.rows, plan.packing.offsets, placed, plan.packing.n_rows)
    return tied_found.done(), unk_found.done()


def _block(plan: inter.Plan, shards: _Shards, part: slice, repeats) -> dict:
    """The plan's and the shards' per-sample arrays of one block of samples."""
    pick = lambda a: None if a is None else a[part]  # noqa: E731
    block = {"status": pick(shards.status), "kept": shards.kept[part], "lengths": plan.lengths[part]}
    block |= {"trained": pick(shards.trained), "repeats": pick(repeats), "units": plan.units[part]}
    return block | {"offsets": None if plan.packing is None else plan.packing.offsets[part]}


def _lines(plan: inter.Plan, b: dict, start: int, hexed: str, files, lines, paths, names) -> bytes:
    """One block's sample_index.jsonl lines: of packed rows (units.pack) or of units."""
    sps = plan.samples_per_shard
    if plan.packing is not None:
        return fmt.packed_lines(
            start, hexed, plan.sizes[0], sps, paths, b["lengths"], b["kept"], b["status"], b["rows"],
            b["offsets"].astype(np.int64), files, lines, b["trained"], b["repeats"],
        )  # fmt: skip
    overflow = None if plan.cut is None else (b["status"], b["lengths"])
    return fmt.sample_lines(
        start, hexed, b["kept"], plan.sizes, b["units"], b["rows"], sps, files, names, lines, b["trained"],
        overflow, b["repeats"],
    )  # fmt: skip


def _rows_in_units(n_units: int):
    """rows(units): the row inside its unit of each sample of a block, counted in sample_id order over the
    blocks given in turn (a sample in no unit: 0)."""
    counters = np.zeros(n_units, dtype=np.int64)

    def rows(units) -> np.ndarray:
        out = np.zeros(len(units), dtype=np.int64)
        for u in np.unique(units).tolist():
            if u < n_units:
                sel = np.flatnonzero(units == u)
                out[sel] = counters[u] + np.arange(len(sel))
                counters[u] += len(sel)
        return out

    return rows


def _extension_stats(build, plan: inter.Plan, shards: _Shards) -> dict:
    """stats.json keys of the extensions a build uses (none: the spec's stats, byte for byte)."""
    stats = {}
    if plan.empty_files is not None:  # source.allow_empty: the inputs that held no sample
        stats["empty_files"] = [build.files[i].path for i in plan.empty_files]
    if shards.trained is not None:
        stats["trained_tokens"] = int(shards.trained.astype(np.int64).sum())
        stats.update(untrained_stats(build, shards.trained, shards.status))
    if plan.trained_roles is not None:  # source.chat: the same trained tokens, counted by message role
        stats["trained_tokens_by_role"] = plan.trained_roles
    return stats


def untrained_stats(build, trained, status) -> dict:
    """source.train_on: the samples whose loss mask has no bit set among the tokens written (a sample
    units.overflow dropped is not one), with those source.drop_untrained left out of the shards."""
    from ..units import packing

    status = np.zeros(len(trained), dtype=np.uint8) if status is None else status
    ids = np.flatnonzero((trained == 0) & (status != packing.DROPPED))
    stats = {"untrained_samples": len(ids), "untrained_ids": ids.tolist()}
    if any(f.masks.drop_untrained for f in build.files):
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


def _write_unk(path: str, unk_samples, unk_counts, unk_positions, origin) -> None:
    """unk_index.jsonl: the samples whose tokens hold unk_id, in sample_id order, with the positions
    (origin(k): the k-th of them's place and hash)."""
    writer = JsonlWriter(path)
    offset = 0
    for k, (s, c) in enumerate(zip(unk_samples.tolist(), unk_counts.tolist())):
        where = origin(k)
        writer.write(
            {
                "sample_id": s,
                "hash": where["hash"],
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


def _trained_written(trained, status, written_paths) -> np.ndarray:
    """Packed rows with source.train_on: the trained tokens written of each sample (a dropped one: none;
    a truncated one: those inside its row, as the write job reports them)."""
    trained = trained.astype(np.int64)
    trained[status == 1] = 0
    reported = {}
    for p in written_paths or []:
        with open(p, encoding="utf-8") as f:
            for u in json.load(f).get("units", []):
                reported.update(u.get("trained_kept", {}))
    for sid in np.flatnonzero(status == 2).tolist():
        if str(sid) not in reported:
            raise RuntimeError(f"the write job did not report the trained tokens of truncated sample {sid}")
        trained[sid] = reported[str(sid)]
    return trained


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


def _packed_stats(plan: inter.Plan, kept, written: int) -> dict:
    """stats.json's shards and padding of packed rows, and its packing block."""
    L, n_rows, rows_per_shard = plan.packing.row_length, plan.packing.n_rows, plan.samples_per_shard
    status = plan.cut.status
    tokens = int(kept.sum())
    slots = n_rows * L
    lengths = plan.lengths.astype(np.int64)
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
            "overflow": overflow_block(plan.cut.overflow, status, lengths, L),
        },
    }
