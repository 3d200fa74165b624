"""Write the shards of some unit sizes of one output directory into the write job's own directory
(finalize links the jobs' directories into the output's tree)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

from ..formats import intermediate as inter
from ..formats.records import EMPTY_MARKER, atomic_write_text
from ..formats.shards import PackedWriter, ShardWriter, shard_line, shard_warning
from ..formats.shards import unit_dir as unit_dir_name
from ..progress import Progress


def empty_unit_text(unit: int) -> str:
    return (
        f"# Empty unit\n\nNo sample of this build was assigned to unit size {unit}.\n"
        "The unit is declared in the config, so its directory exists; it holds no shard.\n"
    )


def fresh_dir(path: str) -> None:
    """A job's own output directory, made anew: what a stopped attempt left is ours, and every file is
    written new (never into a file that a placed output may share as a hard link: finalize links them)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def _fresh_unit_dir(stage_dir: str, unit: int) -> str:
    unit_dir = os.path.join(stage_dir, unit_dir_name(unit))
    shutil.rmtree(unit_dir, ignore_errors=True)  # a killed earlier attempt's leftovers (ours)
    os.makedirs(unit_dir)
    return unit_dir


def _shard_closed(build, out, unit: int, log, packed: bool = False):
    """The writer's on_close: the shard line (a packed shard's: its rows, then its samples) and the size
    warning."""
    suffix = out.dir if len(build.outputs) > 1 else None

    def closed(index: int, info: dict) -> None:
        if packed:
            log(shard_line(index, info["samples"], info["bytes"], unit, suffix, rows=info["records"]))
        else:
            log(shard_line(index, info["records"], info["bytes"], unit, suffix))
        warning = shard_warning(index, info["bytes"])
        if warning:
            log(warning)

    return closed


def write_unit(
    build,
    metas,
    out_index: int,
    unit: int,
    chunk_dirs: list[str],
    units_plan: str,
    stage_dir: str,
    written_path: str | None,
    log=print,
    stop_check=lambda: None,
    plan_table: str | None = None,
) -> dict:
    """Shards of one unit size; their summary goes to written_path (when given) and is returned.
    plan_table: the plan, which source.take needs (the chosen samples' places in the chunks)."""
    out = build.outputs[out_index]
    meta = metas[out.tokenizer_abspath]
    plan = inter.UnitsSummary.read(units_plan)
    position = plan.sizes.index(unit)
    expected = plan.counts[position]
    unit_dir = _fresh_unit_dir(stage_dir, unit)
    closed = _shard_closed(build, out, unit, log)
    masks = any(build.files[i].masks.train_on is not None for i in out.files)
    writer = ShardWriter(
        unit_dir, unit, out.samples_per_shard, meta.pad_id, meta.dtype, on_close=closed, masks=masks
    )
    total = 0
    progress = Progress(log, f"[unit-build] write unit {unit}", expected)
    lower = plan.sizes[position - 1] if position else -1
    read = lambda d: _unit_batches(d, unit, lower)  # noqa: E731
    batches = (
        _all_batches(chunk_dirs, read, stop_check)
        if not plan.take
        else _taken_batches(inter.Plan.read(plan_table), chunk_dirs, position, read, stop_check)
    )
    for lengths, tokens, bits in batches:
        writer.write(lengths, tokens, bits)
        total += len(lengths)
        progress.update(total, total * unit * meta.bytes_per_token)
    shards = writer.close()
    if total != expected:
        raise RuntimeError(f"unit {unit}: wrote {total} records but the plan counted {expected}")
    if total == 0:
        atomic_write_text(os.path.join(unit_dir, EMPTY_MARKER), empty_unit_text(unit))
    summary = {"output": out_index, "unit": unit, "records": total, "shards": shards}
    if written_path:
        atomic_write_text(written_path, json.dumps(summary))
    return summary


def _unit_batches(chunk_dir: str, unit: int, lower: int):
    """(lengths, flat tokens) of one chunk's samples for this unit, batch by batch: the chunk's own
    stream for the unit, or (sizes planned after tokenizing) the samples with lower < length <= unit."""
    own = inter.stream_path(chunk_dir, unit)
    if os.path.exists(own):
        for part in inter.iter_stream(own):
            lengths = inter.unarr(part["lengths"]).astype(np.int64)
            if len(lengths):
                yield lengths, inter.unarr(part["tokens"]), _bits(part, int(lengths.sum()))
        return
    for part in inter.iter_stream(inter.stream_path(chunk_dir, inter.ALL)):
        lengths = inter.unarr(part["lengths"]).astype(np.int64)
        sel = (lengths > lower) & (lengths <= unit)
        if sel.any():
            keep = np.repeat(sel, lengths)
            bits = _bits(part, int(lengths.sum()))
            yield lengths[sel], inter.unarr(part["tokens"])[keep], None if bits is None else bits[keep]


def _all_batches(chunk_dirs: list[str], read, stop_check):
    """Every batch of the chunks' streams (read(chunk_dir) gives one chunk's), in order."""
    for d in chunk_dirs:
        stop_check()
        yield from read(d)


def _taken_batches(table: inter.Plan, chunk_dirs: list[str], slot: int, read, stop_check):
    """source.take: the batches of one unit's samples in sample_id order, from the chunks' streams
    (read(chunk_dir) gives one chunk's batches of this unit). A chosen sample is found by its rank
    among the source samples of this unit (the order of the streams); the output's sequence of
    ranks is read in runs that increase (a repeat starts a new run), one pass over the chunks a run
    spans each (a file taken 3 times is read 3 times)."""
    src = table.take.src.astype(np.int64)
    in_slot = table.take.units == slot
    before = np.concatenate(([0], np.cumsum(in_slot)))  # source samples of this unit before each position
    if table.packing is None:
        src = src[table.units == slot]
    seq = before[src]  # ranks (every one of them is in this unit)
    edges = np.concatenate(([0], np.cumsum(table.take.chunks)))
    first = before[edges]  # rank of each chunk's first sample of this unit
    for run in np.split(seq, np.flatnonzero(np.diff(seq) <= 0) + 1):
        if not len(run):
            continue
        for c, d in enumerate(chunk_dirs):
            if first[c + 1] <= run[0] or first[c] > run[-1]:
                continue
            stop_check()
            pos = int(first[c])
            for lengths, tokens, bits in read(d):
                lo, hi = np.searchsorted(run, [pos, pos + len(lengths)])
                if hi > lo:
                    keep = np.zeros(len(lengths), dtype=bool)
                    keep[run[lo:hi] - pos] = True
                    per_token = np.repeat(keep, lengths)
                    yield lengths[keep], tokens[per_token], None if bits is None else bits[per_token]
                pos += len(lengths)
                if pos > run[-1]:
                    break


def _bits(part: dict, count: int) -> np.ndarray | None:
    """The part's loss-mask bits (one per token), when the build has source.train_on."""
    if "mask" not in part:
        return None
    return np.unpackbits(np.frombuffer(part["mask"], dtype=np.uint8), count=count, bitorder="little").astype(
        bool
    )


def write_slots(
    build,
    metas,
    out_index: int,
    slots: list[int],
    chunk_dirs: list[str],
    units_plan: str,
    stage_dir: str,
    written_path: str,
    log=print,
    stop_check=lambda: None,
    plan_table: str | None = None,
) -> dict:
    """One write job: the unit sizes at these positions of the output's sizes (which may have been
    planned from the data, and be fewer than the k asked for), one after another."""
    plan = inter.UnitsSummary.read(units_plan)
    sizes = plan.sizes
    fresh_dir(stage_dir)
    if plan.rows is not None:  # units.pack: one write job writes every row
        units = (
            [
                write_packed(
                    build, metas, out_index, chunk_dirs, plan_table, stage_dir, log=log, stop_check=stop_check
                )
            ]
            if 0 in slots
            else []
        )
        summary = {"output": out_index, "slots": list(slots), "units": units}
        atomic_write_text(written_path, json.dumps(summary))
        return summary
    units = [
        write_unit(
            build,
            metas,
            out_index,
            sizes[slot],
            chunk_dirs,
            units_plan,
            stage_dir,
            None,
            log=log,
            stop_check=stop_check,
            plan_table=plan_table,
        )
        for slot in slots
        if slot < len(sizes)
    ]
    summary = {"output": out_index, "slots": list(slots), "units": units}
    atomic_write_text(written_path, json.dumps(summary))
    return summary


def write_packed(
    build,
    metas,
    out_index: int,
    chunk_dirs: list[str],
    plan_table: str,
    stage_dir: str,
    log=print,
    stop_check=lambda: None,
) -> dict:
    """units.pack: every row of the output. The shards are laid out (pad_id) and the boundaries
    written from the plan, then the chunks' token streams are read in sample order and each
    sample's tokens scattered to its row and offset (mintdim.units.packing decided them)."""
    from ..units import packing

    out = build.outputs[out_index]
    meta = metas[out.tokenizer_abspath]
    plan = inter.Plan.read(plan_table)
    L, n_rows, n = plan.packing.row_length, plan.packing.n_rows, plan.n
    rows = plan.rows.astype(np.int64)
    status = plan.cut.status
    rows[np.isin(status, packing.LEFT_OUT)] = -1  # in no row: dropped (overflow), or untrained
    offsets = plan.packing.offsets.astype(np.int64)
    kept = plan.cut.kept.astype(np.int64)
    unit_dir = _fresh_unit_dir(stage_dir, L)
    closed = _shard_closed(build, out, L, log, packed=True)
    masks = any(build.files[i].masks.train_on is not None for i in out.files)
    writer = PackedWriter(
        unit_dir, L, out.samples_per_shard, n_rows, meta.pad_id, meta.dtype, masks=masks, on_close=closed
    )
    writer.write_boundaries(rows, offsets, kept)
    stream = build.files[out.files[0]].units.sizes[0]  # every sample of a packed output is in this one stream
    progress = Progress(log, f"[unit-build] write rows of {L}", n)
    trained_kept = {}  # truncated samples: trained tokens inside the row (source.train_on)
    sid = 0
    read = lambda d: _unit_batches(d, stream, -1)  # noqa: E731
    batches = (
        _taken_batches(plan, chunk_dirs, 0, read, stop_check)
        if plan.take is not None
        else _all_batches(chunk_dirs, read, stop_check)
    )
    for lengths, tokens, bits in batches:
        m = len(lengths)
        got = writer.scatter(
            rows[sid : sid + m], offsets[sid : sid + m], kept[sid : sid + m], lengths, tokens, bits
        )
        if got is not None:
            for j in np.flatnonzero(status[sid : sid + m] == packing.TRUNCATED).tolist():
                trained_kept[str(sid + j)] = int(got[j])
        sid += m
        progress.update(sid, sid * meta.bytes_per_token)
    if sid != n:
        raise RuntimeError(f"packed rows: read {sid} samples but the plan counted {n}")
    shards = writer.close()
    if n_rows == 0:
        atomic_write_text(os.path.join(unit_dir, EMPTY_MARKER), empty_unit_text(L))
    return {"output": out_index, "unit": L, "records": n_rows, "shards": shards, "trained_kept": trained_kept}
