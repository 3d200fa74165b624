"""Tokenize one chunk of one input file.

Stream lines -> parse -> render -> hash -> batch encode -> assign units ->
record UNK positions. Writes into its own directory:
  meta.msgpack        per-sample facts (local line, length, unit, hash) and UNK positions
  u<size>.msgpack     a msgpack stream, one {lengths, tokens} object per batch, of the samples
                      assigned to that unit (streamed: memory does not grow with the chunk)
  uall.msgpack        (units.sizes: auto) every sample's tokens: sizes are planned later
A record's own data error (a bad record: bad_records.is_bad_record) does not stop the
job: the meta lists it (local line, class, reason; the chunk's first one as its
whole error), and the plan stage, which sees every chunk, applies
source.on_bad_record: `error` fails naming them all, `skip` leaves them out.
With `error`, the records after the first bad one are only read and rendered
(to count the bad ones), no longer encoded. Other errors stop the job at once
with the file and line. A sample longer than the largest unit (units.overflow) is not an
error here: `drop` writes none of its tokens, `truncate` writes its first tokens
to the largest unit, and `error` records it in the meta like the others and
stops writing tokens (the plan stage, which sees every chunk, counts them all
and raises UnitOverflowError). The meta keeps every sample's whole length.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from functools import partial

import numpy as np

from .. import errors as E
from ..formats import intermediate as inter
from ..progress import without_cyclic_gc
from ..sources import inputs, jsonl
from ..sources import template as T
from ..tokenizers.engines import cache_dirs, utf8_offsets
from ..tokenizers.kinds import engine_of, field_end_markers, load, use_threads
from ..units import padding
from . import bad_records

UNBOUNDED = 2**40


class _Accumulator:
    """Collects a chunk's per-sample facts; streams each batch's tokens to the unit parts."""

    def __init__(
        self, sizes: list[int], dtype: str, part_names: list[str], part_dir: str, overflow: str | None = None
    ):
        self.sizes = sizes
        self.overflow = overflow or "error"  # units.overflow: what a sample longer than sizes[-1] gets
        self.overlong = False  # overflow: error and a sample too long: the build fails, no token is written
        self.part_names = part_names
        self.dtype = dtype
        self.lines: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.units: list[np.ndarray] = []
        self.hashes: list[bytes] = []
        self.unk_samples: list[np.ndarray] = []
        self.unk_counts: list[np.ndarray] = []
        self.unk_positions: list[np.ndarray] = []
        self.part_dir = part_dir
        shutil.rmtree(part_dir, ignore_errors=True)  # a killed earlier attempt's leftovers (ours)
        os.makedirs(part_dir)
        self.parts = [inter.StreamWriter(inter.stream_path(part_dir, name)) for name in part_names]
        self.trained: list[np.ndarray] = []  # per-sample trained-token counts (source.train_on)
        self.end_markers: list[str] = []  # source.train_eos: the end-of-turn tokens the template trains
        self.trained_roles: dict[str, int] = {}  # source.chat: trained tokens per role
        self.role_samples: list[
            tuple[int, dict]
        ] = []  # with source.take: per batch, role -> per-sample counts
        self.count = 0
        self.tokens = 0
        self.bad_lines: list[int] = []  # bad records (source.on_bad_record): local lines, classes, reasons
        self.bad_classes: list[str] = []
        self.bad_reasons: list[str] = []
        self.bad_first: dict | None = None  # the chunk's first bad record's error (_located's line)
        self.failed = False  # on_bad_record: error and a bad record: the build fails, nothing more is encoded


def bad_record(acc: _Accumulator, exc: Exception, local: int, located, entry) -> bool:
    """A record of the chunk that cannot become a sample (bad_records.is_bad_record; a lone surrogate that
    fails the UTF-8 encode is one too): listed in the meta; False for another error. located: the same
    error with its line (_located), computed for the chunk's first one only. With on_bad_record: error,
    the chunk encodes nothing more."""
    err = exc if isinstance(exc, E.MintDimError) else E.SourceParseError.line_surrogate(entry.path, 0)
    if not bad_records.is_bad_record(err):
        return False
    if acc.bad_first is None:
        acc.bad_first = located().to_dict()
    acc.bad_lines.append(local)
    acc.bad_classes.append(err.kind)
    acc.bad_reasons.append(bad_records.reason_of(err))
    acc.failed = acc.failed or entry.source.on_bad_record != "skip"
    return True


def apply_overflow(acc: _Accumulator, unit_idx: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The tokens written of each sample of a batch (its length, or less for a sample longer than the
    largest unit: truncate keeps sizes[-1], drop and error none). unit_idx is changed in place: a
    truncated sample goes to the largest unit; a dropped one keeps len(sizes), which no unit reads."""
    over = unit_idx >= len(acc.sizes)
    if not over.any():
        return lengths
    if acc.overflow == "truncate":
        unit_idx[over] = len(acc.sizes) - 1
        return np.minimum(lengths, acc.sizes[-1])
    acc.overlong = acc.overlong or acc.overflow == "error"
    return np.where(over, 0, lengths)


def leave_untrained(
    acc: _Accumulator, unit_idx: np.ndarray, kept: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """source.drop_untrained on unit sizes: a sample written to a unit whose tokens train none is left out
    as overflow: drop leaves one out (unit_idx len(sizes), no token written); the plan marks it."""
    gone = (unit_idx < len(acc.sizes)) & (counts == 0)
    if not gone.any():
        return kept
    unit_idx[gone] = len(acc.sizes)
    return np.where(gone, 0, kept)


def kept_trained(trained: np.ndarray, lengths: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Trained tokens per sample among the tokens written (its first `kept`)."""
    sample_of = np.repeat(np.arange(len(lengths)), lengths)
    if kept is not lengths:
        first = np.cumsum(lengths) - lengths
        trained = trained & (np.arange(len(trained)) - first[sample_of] < kept[sample_of])
    return np.bincount(sample_of, weights=trained, minlength=len(lengths)).astype(np.int64)


def trained_tokens(starts: np.ndarray, lengths: np.ndarray, spans: list) -> np.ndarray:
    """Loss mask of a batch: a token is trained when the character it starts at lies inside
    the rendered span [a, b) of a trained field (spans: per sample, one (a, b) per occurrence)."""
    trained = np.zeros(len(starts), dtype=bool)
    if not len(starts) or not any(spans):
        return trained
    bounds = np.asarray(spans, dtype=np.int64).reshape(len(lengths), -1, 2)
    sample_of = np.repeat(np.arange(len(lengths)), lengths)
    for k in range(bounds.shape[1]):
        trained |= (starts >= bounds[sample_of, k, 0]) & (starts < bounds[sample_of, k, 1])
    return trained


def chat_trained(
    starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray, spans: list, per_sample: dict | None = None
) -> tuple[np.ndarray, dict, np.ndarray]:
    """Loss mask of a batch of conversations, its trained tokens per role and per sample. spans: per
    sample, (start, end, rule, role): rule 0 trains a token that starts inside [start, end) (the train_on
    rule), rule 1 one that overlaps it (transformers' {% generation %} rule). A token two spans share counts
    for the first. per_sample (a dict, source.take): filled with role -> trained tokens of each sample."""
    if all(rule == 0 for sample in spans for _a, _b, rule, _role in sample):  # every span at once
        k, a, b, roles = _flat_spans(spans)
        wide = int(max(starts.max(initial=0), b.max(initial=0))) + 1  # keys of sample k: k * wide + start
        keys = np.repeat(np.arange(len(lengths), dtype=np.int64) * wide, lengths) + starts
        lo, hi = np.searchsorted(keys, k * wide + a), np.searchsorted(keys, k * wide + b)
        return _ranges_trained(lo, hi, k, roles, lengths, per_sample)
    trained = np.zeros(len(starts), dtype=bool)
    roles: dict[str, int] = {}
    counts = np.zeros(len(lengths), dtype=np.int64)
    first = np.cumsum(lengths) - lengths
    for k, sample in enumerate(spans):
        if not sample:
            continue
        lo0, hi0 = int(first[k]), int(first[k] + lengths[k])
        s, e = starts[lo0:hi0], ends[lo0:hi0]
        for a, b, rule, role in sample:
            hi = int(np.searchsorted(s, b, side="left"))
            lo = (
                int(np.searchsorted(s, a, side="left"))
                if rule == 0
                else int(np.searchsorted(e, a, side="right"))
            )
            if hi > lo:
                seg = trained[lo0 + lo : lo0 + hi]
                new = int(len(seg) - seg.sum())
                roles[role] = roles.get(role, 0) + new
                counts[k] += new
                if per_sample is not None:
                    per_sample.setdefault(role, np.zeros(len(lengths), dtype=np.int64))[k] += new
                seg[:] = True
    return trained, roles, counts


def chat_trained_bytes(
    texts: list[str], starts: np.ndarray, bases: np.ndarray, lengths: np.ndarray, spans: list, per_sample=None
) -> tuple[np.ndarray, dict, np.ndarray]:
    """chat_trained of train_on-rule spans from the tokens' first bytes (starts, bases: the engine's
    byte_starts): a token starts in a character of [a, b) exactly when its first byte lies in the span's
    bytes [bases[k] + utf8(a), bases[k] + utf8(b)), so only the spans' ends are converted."""
    k, a, b, roles = _flat_spans(spans)
    j = 0  # the sample's first span in k, a, b
    for text, sample in zip(texts, spans):
        if sample and not text.isascii():  # an ASCII text's characters are its bytes
            at = utf8_offsets(text, [x for span in sample for x in span[:2]])
            a[j : j + len(sample)] = [at[span[0]] for span in sample]
            b[j : j + len(sample)] = [at[span[1]] for span in sample]
        j += len(sample)
    first = np.cumsum(lengths) - lengths
    # a token (of a text the library encoded) may start at its text's end: search within the sample's tokens
    lo = np.clip(np.searchsorted(starts, bases[k] + a), first[k], first[k] + lengths[k])
    hi = np.clip(np.searchsorted(starts, bases[k] + b), first[k], first[k] + lengths[k])
    return _ranges_trained(lo, hi, k, roles, lengths, per_sample)


def _flat_spans(spans: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """(sample, start, end) arrays and roles of a batch's spans, in order."""
    flat = [(k, a, b) for k, sample in enumerate(spans) for a, b, _rule, _role in sample]
    k, a, b = (np.fromiter((f[j] for f in flat), dtype=np.int64, count=len(flat)) for j in range(3))
    return k, a, b, [role for sample in spans for _a, _b, _rule, role in sample]


def _ranges_trained(lo, hi, k, roles_of: list, lengths: np.ndarray, per_sample: dict | None):
    """chat_trained's result from each span's tokens [lo, hi) (indexes into the batch's tokens, k: its
    sample): spans that share no token set their bits in one pass; otherwise span by span, in order."""
    n = int(lengths.sum())
    counts = np.maximum(hi - lo, 0)
    used = counts > 0
    order = np.argsort(lo[used], kind="stable")
    los, his = lo[used][order], hi[used][order]
    shared = bool((los[1:] < his[:-1]).any())
    if shared:  # spans share a token: the first one counts it (a role then counted, if with 0 tokens)
        trained = np.zeros(n, dtype=bool)
        for j in np.flatnonzero(used).tolist():
            seg = trained[lo[j] : hi[j]]
            counts[j] = len(seg) - int(seg.sum())
            seg[:] = True
    else:  # untrained, trained, untrained, ... between the spans' edges
        edges = np.empty(2 * len(los) + 2, dtype=np.int64)
        edges[0], edges[1:-1:2], edges[2:-1:2], edges[-1] = 0, los, his, n
        trained = np.repeat(np.arange(len(edges) - 1) % 2 == 1, np.diff(edges))
    roles: dict[str, int] = {}
    for sample, role, new, counted in zip(k.tolist(), roles_of, counts.tolist(), used.tolist()):
        if new or (shared and counted):
            roles[role] = roles.get(role, 0) + new
            if per_sample is not None:
                per_sample.setdefault(role, np.zeros(len(lengths), dtype=np.int64))[sample] += new
    return trained, roles, np.bincount(k, weights=counts, minlength=len(lengths)).astype(np.int64)


def _encode(acc: _Accumulator, tok, texts, entry, spans):
    """(flat ids, lengths, per-token trained bits or None, trained tokens per sample or None) of a batch;
    per-role counts are added to acc."""
    if spans is None:
        flat, lengths = tok.encode_batch(texts)
        return flat, lengths, None, None
    if entry.chat is not None:  # conversations: spans by message, counted by role
        # source.take: the plan sums the chosen samples'
        per_sample = {} if entry.source.take is not None else None
        if getattr(tok, "offsets_engine", None) and all(s[2] == 0 for sample in spans for s in sample):
            flat, lengths, starts, bases = tok.encode_batch_with_byte_starts(texts)
            trained, roles, counts = chat_trained_bytes(texts, starts, bases, lengths, spans, per_sample)
        else:
            flat, lengths, starts, ends = tok.encode_batch_with_offsets(texts)
            trained, roles, counts = chat_trained(starts, ends, lengths, spans, per_sample)
        for role, count in roles.items():
            acc.trained_roles[role] = acc.trained_roles.get(role, 0) + count
        if per_sample is not None:
            acc.role_samples.append((len(texts), per_sample))
        return flat, lengths, trained, counts
    # the ids and the offsets come from one encode call of the whole rendered text
    flat, lengths, starts = tok.encode_batch_with_starts(texts)
    return flat, lengths, trained_tokens(starts, lengths, spans), None


def _flush(acc: _Accumulator, tok, texts, lines, unk_id, entry, sizes_arr, spans=None):
    flat, lengths, trained, counts = _encode(acc, tok, texts, entry, spans)
    lines_arr = np.asarray(lines, dtype=np.int64)
    unit_idx = np.searchsorted(sizes_arr, lengths, side="left")
    kept = apply_overflow(acc, unit_idx, lengths)  # lengths itself when every sample fits
    if trained is not None:  # packed rows: the trained tokens among a row's worth (the plan truncates)
        row = kept if entry.units.pack is None else np.minimum(lengths, entry.units.pack)
        if counts is None or row is not lengths:  # conversations' whole samples: their spans' counts
            counts = kept_trained(trained, lengths, row)
        acc.trained.append(counts)
        if entry.masks.drop_untrained and entry.units.pack is None:  # packed rows: the plan leaves them out
            kept = leave_untrained(acc, unit_idx, kept, counts)
    starts = np.cumsum(lengths) - lengths  # each sample's first token in `flat`
    # UNK positions: 0-based indexes into each sample's own token sequence, among the tokens written
    unk_mask = flat == unk_id if unk_id is not None else None  # hf_dir byte-level: no UNK id at all
    if unk_mask is not None and unk_mask.any():
        where = np.flatnonzero(unk_mask)
        sample_of = np.searchsorted(starts, where, side="right") - 1
        if kept is not lengths:  # a sample cut by units.overflow: only the positions written
            inside = where - starts[sample_of] < kept[sample_of]
            where, sample_of = where[inside], sample_of[inside]
        samples, counts = np.unique(sample_of, return_counts=True)
        acc.unk_samples.append(samples + acc.count)
        acc.unk_counts.append(counts)
        acc.unk_positions.append(where - starts[sample_of])
    if not acc.overlong:  # overflow: error and a sample too long: the build fails, nothing to write
        _write_units(acc, flat, trained, starts, kept, unit_idx)
    acc.lines.append(lines_arr)
    acc.lengths.append(lengths)
    acc.units.append(unit_idx)
    acc.count += len(texts)
    acc.tokens += int(lengths.sum())


def _write_units(acc: _Accumulator, flat, trained, starts, kept, unit_idx) -> None:
    """Each unit's samples, tokens (their first `kept`) and mask bits, in input order: one gather over
    the batch, not a mask pass per unit. A unit index past the parts (a dropped sample) is not written."""
    order = np.argsort(unit_idx, kind="stable")
    grouped_lengths = kept[order]
    before = np.cumsum(grouped_lengths) - grouped_lengths  # where each sample starts once grouped
    gather = np.repeat(starts[order] - before, grouped_lengths)
    gather += np.arange(len(gather))
    grouped = flat[gather]
    grouped_bits = trained[gather] if trained is not None else None
    per_unit = np.bincount(unit_idx, minlength=len(acc.parts))[: len(acc.parts)]
    s0 = t0 = 0
    for u in np.flatnonzero(per_unit).tolist():
        unit_lengths = grouped_lengths[s0 : s0 + per_unit[u]]
        t1 = t0 + int(unit_lengths.sum())
        part = {"lengths": inter.arr(unit_lengths, np.uint32), "tokens": inter.arr(grouped[t0:t1], acc.dtype)}
        if grouped_bits is not None:  # one bit per token, little bit order, in token order
            part["mask"] = np.packbits(grouped_bits[t0:t1], bitorder="little").tobytes()
        acc.parts[u].append(part)
        s0 += per_unit[u]
        t0 = t1


def _role_samples(acc: _Accumulator) -> dict:
    """role -> trained tokens of every sample of the chunk, in order (zeros where a batch had none)."""
    roles = sorted({role for _n, per in acc.role_samples for role in per})
    return {
        role: _cat([per.get(role, np.zeros(n, dtype=np.int64)) for n, per in acc.role_samples], np.int64)
        for role in roles
    }


def _cat(parts, dtype):
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def tokenize_chunk(
    build,
    metas,
    file_index: int,
    chunk_index: int,
    out_dir: str,
    *,
    threads: int = 1,
    log=print,
    stop_check=lambda: None,
    bounds: tuple[int, int] | None = None,
) -> dict:
    with without_cyclic_gc():
        return _tokenize_chunk(
            build,
            metas,
            file_index,
            chunk_index,
            out_dir,
            threads=threads,
            log=log,
            stop_check=stop_check,
            bounds=bounds,
        )


def tokenizer_args(build, metas, entry) -> tuple[str, str, dict]:
    """How a tokenize job of this input loads its tokenizer: (kind, path, load()'s other arguments but
    threads)."""
    # pre-flight's verdict on a fast engine (None: the library); it gives loss masks' offsets too
    engine = getattr(metas[entry.tokenizer.abspath], "engine", None)
    return (
        entry.tokenizer.kind,
        entry.tokenizer.abspath,
        dict(
            engine=engine,
            engine_cache=cache_dirs(build.work_dir) if engine else None,
            **(entry.tokenizer.options or {}),
        ),
    )


def _tokenize_chunk(
    build,
    metas,
    file_index: int,
    chunk_index: int,
    out_dir: str,
    *,
    threads: int,
    log,
    stop_check,
    bounds: tuple[int, int] | None,
) -> dict:
    entry = build.files[file_index]
    meta = metas[entry.tokenizer.abspath]
    start, end = bounds or inputs.chunk_bounds(entry.abspath, build.chunk_mb)[chunk_index]
    use_threads(threads)
    kind, path, options = tokenizer_args(build, metas, entry)
    tok = load(kind, path, threads=threads, **options)
    tpl, ends = _template_of(entry, tok)
    fields = entry.source.fields
    acc = _accumulator_of(build, entry, meta, out_dir)
    sizes_arr = np.asarray(acc.sizes, dtype=np.int64)
    acc.end_markers = tpl.end_texts(frozenset(entry.masks.train_on), ends) if ends else []  # for the manifest
    reader = inputs.open_chunk(entry.abspath, start, end, entry.path, fields, entry.chat)
    parse = reader.parse
    batch = entry.units.build_batch
    texts: list[str] = []
    lines: list[int] = []
    trained_fields = frozenset(entry.masks.train_on) if entry.masks.train_on is not None else None
    # masks whenever train_on names fields; conversations: whenever train_on resolved to roles (even none)
    with_roles = entry.chat is not None and entry.masks.train_on is not None
    spans: list | None = [] if trained_fields or with_roles else None
    hashes = acc.hashes
    sha256 = hashlib.sha256
    t0 = time.monotonic()
    processed = 0
    label = f"[unit-build] tokenize {entry.path} chunk {chunk_index}"

    for local, raw in reader:
        try:
            obj = parse(raw, 0)
            if fields:
                jsonl.declared_values(obj, fields, entry.path, 0)
            if trained_fields is None:
                text = tpl.render(obj)
            else:
                text, sample_spans = tpl.render_with_spans(obj, trained_fields, ends)
            digest = sha256(text.encode("utf-8")).digest()
        except (E.MintDimError, UnicodeEncodeError) as exc:
            again = partial(_located, reader, local, raw, entry, tpl, trained_fields is not None)
            if not bad_record(acc, exc, local, partial(again, within=True), entry):
                raise again() from None  # with the real line
            continue
        processed += len(raw) + 1
        if acc.failed:  # the build fails: the rest of the chunk is only checked for more bad records
            if local % batch == 0:
                stop_check()
            continue
        texts.append(text)
        lines.append(local)
        hashes.append(digest)
        if spans is not None:
            spans.append(sample_spans)
        if len(texts) >= batch:
            stop_check()
            _flush(acc, tok, texts, lines, meta.unk_id, entry, sizes_arr, spans)
            texts, lines = [], []
            spans = [] if spans is not None else None
            log_progress(log, label, acc.count, time.monotonic() - t0, *reader.progress(processed, acc.count))
    if texts and not acc.failed:
        _flush(acc, tok, texts, lines, meta.unk_id, entry, sizes_arr, spans)
    write_chunk(acc, out_dir, entry, chunk_index, reader.span, meta.dtype)
    _log_chunk_done(log, label, acc, tok, time.monotonic() - t0)
    return {"samples": acc.count, "tokens": acc.tokens}


def _accumulator_of(build, entry, meta, out_dir: str) -> _Accumulator:
    """What collects the chunk's tokens, one part per unit size of the file's output."""
    if entry.units.sizes is None:  # sizes: auto -> one part; only max_size (if any) bounds a sample
        limit = padding.largest_size(build.outputs[entry.output].auto) or UNBOUNDED
        return _Accumulator([limit], meta.dtype, [inter.ALL], _partial(out_dir), entry.units.overflow)
    return _Accumulator(
        entry.units.sizes,
        meta.dtype,
        [str(size) for size in entry.units.sizes],
        _partial(out_dir),
        entry.units.overflow,
    )


def _log_chunk_done(log, label: str, acc, tok, elapsed: float) -> None:
    used = engine_of(tok)
    log(
        f"{label}: {acc.count} samples, {acc.tokens} tokens in {elapsed:.1f} s"
        + (f" (engine: {used})" if used else "")
    )


def _template_of(entry, tok):
    """(what renders a record of this file, the end-of-turn spans of its trained fields). A conversation:
    the model's chat template (source.chat), which finds its own end-of-turn tokens. Field templates with
    train_on and train_eos (default true): the end marker written right after each trained field."""
    if entry.chat is not None:
        from ..sources.chat import renderer_for

        return renderer_for(entry, tok).as_template(entry.path), ()
    tpl = T.parse(entry.source.template)
    if entry.masks.train_on is None or entry.masks.train_eos is False:
        return tpl, ()
    ends = tpl.end_spans(frozenset(entry.masks.train_on), field_end_markers(tok))
    return tpl, (ends if any(e is not None for e in ends) else ())


def _located(reader, local: int, raw: bytes, entry, tpl, spans: bool, within: bool = False) -> E.MintDimError:
    """A record's error with its line: parse, check and render it again with that line. Only a lone
    surrogate passes them all (it fails the UTF-8 encode after them). within: a JSONL line is told
    within the chunk (local + 1), not counted from the file's start (reading the file up to the chunk):
    the plan, which knows where each chunk starts, tells the real one (bad_records.relocated)."""
    line = local + 1 if within and isinstance(reader, jsonl.ChunkReader) else reader.location(local)
    try:
        again = jsonl.declared_values(reader.parse(raw, line), entry.source.fields, entry.path, line)
        if entry.chat is not None:  # the same render again, now with the real line number
            tpl.render_at(again, line, spans)
    except E.MintDimError as err:
        return err
    return E.SourceParseError.line_surrogate(entry.path, line)


def log_progress(
    log, label: str, count: int, elapsed: float, done: int, total: int, unit: str = "MB"
) -> None:
    """One line every few seconds: samples, throughput, share of the chunk, time left. done/total:
    bytes of a JSONL chunk, rows of a Parquet or datasets chunk (the reader's progress())."""
    if not hasattr(log, "progress"):
        return
    rate = done / elapsed if elapsed > 0 else 0.0
    share = min(1.0, done / total) if total else 1.0
    eta = (total - done) / rate if rate > 0 and total > done else 0.0
    speed = f"{rate / 1e6:.1f} MB/s" if unit == "MB" else f"{rate:.0f} rows/s"
    log.progress(f"{label}: {count} samples, {speed}, {share:.0%}, ETA {eta:.0f} s")


def _partial(out_dir: str) -> str:
    return out_dir.rstrip("/") + ".partial"


def write_chunk(acc: _Accumulator, out_dir: str, entry, chunk_index: int, newlines: int, dtype: str) -> None:
    """Close the unit streams, write the chunk's meta, and move the whole directory into place."""
    tmp = acc.part_dir
    for part in acc.parts:
        part.close()
    roles = (
        entry.chat is not None and entry.masks.train_on is not None
    )  # source.chat: trained tokens per role
    bad = bool(acc.bad_lines)
    inter.ChunkMeta(
        file=entry.index,
        chunk=chunk_index,
        n=acc.count,
        newlines=newlines,
        lines=_cat(acc.lines, np.int64),
        lengths=_cat(acc.lengths, np.int64),
        units=_cat(acc.units, np.int64),
        hashes=b"".join(acc.hashes),
        unk_samples=_cat(acc.unk_samples, np.int64),
        unk_counts=_cat(acc.unk_counts, np.int64),
        unk_positions=_cat(acc.unk_positions, np.int64),
        trained=_cat(acc.trained, np.int64) if entry.masks.train_on is not None else None,
        trained_roles=acc.trained_roles if roles else None,
        trained_roles_samples=_role_samples(acc) if acc.role_samples else None,
        end_markers=acc.end_markers or None,
        bad_lines=np.asarray(acc.bad_lines, dtype=np.int64) if bad else None,
        bad_classes=acc.bad_classes if bad else None,
        bad_reasons=acc.bad_reasons if bad else None,
        bad_first=acc.bad_first if bad else None,
    ).write(inter.meta_path(tmp))
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
