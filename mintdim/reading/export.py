"""`mintdim export OUT --format hf|megatron --to DEST`: a finished output as files trainers load without code.

    from mintdim.reading.export import export       # also mintdim.export
    export("artifacts/gsm8k_units", "hf", "exports/gsm8k_hf")        # datasets.load_from_disk(DEST)
    export("artifacts/gsm8k_units", "megatron", "exports/gsm8k")     # exports/gsm8k.bin + .idx

hf (formats/hf_datasets.py), a Hugging Face `datasets` directory:
- bucketed output: one row per sample, in sample_id order: `input_ids` (its tokens, no padding),
  `labels` (the token, or -100 where the loss mask of source.train_on does not train it), `sample_id`.
- packed output: one row per packed row, in row order, without the row's trailing padding:
  `input_ids`, `labels` (-100 on untrained tokens and on each sample's first token, as
  PackedDataset.gather_rows gives them), `position_ids` (0, 1, ... restarting at each sample),
  `seq_lengths` (the samples' lengths: they add up to the row's length, as TRL's padding-free
  collator needs to rebuild position_ids) and `sample_ids`.
  Lists are int32 (ids, labels, positions, lengths), sample ids int64.
megatron (formats/megatron.py), Megatron-Core's indexed dataset PREFIX.bin/.idx: one sequence and one
  document per sample, in sample_id order, unpadded, in the output's token dtype (uint32: int32).
  A sample dropped from packed rows (units.overflow: drop) is an empty sequence, so sequence i is
  sample i. The format has no loss mask: with source.train_on the masks are written beside it in the
  same layout, PREFIX_mask.bin/.idx (uint8, 1 where the token is trained, one per token).

The output is verified first (reading/verify.py, as `mintdim verify OUT`). Every file is written
under a temporary name beside its destination, read in blocks of about BLOCK_TOKENS tokens
(bounded memory), and moved into place only when all are complete, never over an existing file
(os.link fails when the name exists); after a failure nothing is left: no temporary file, no
destination file, no directory the export made.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import shutil
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from .. import errors as E
from ..formats import hf_datasets as hfd
from ..formats import megatron
from ..formats import output as fmt
from ..progress import Progress
from .base import load_output
from .packed_reader import IGNORE, PackedDataset
from .reader import open as open_output

FORMATS = ("hf", "megatron")
BLOCK_TOKENS = 1 << 22  # tokens (padded slots for bucketed outputs) read per block: 16-64 MB of arrays
BUCKETED_COLUMNS = [("input_ids", "list<int32>"), ("labels", "list<int32>"), ("sample_id", "int64")]
PACKED_COLUMNS = [
    ("input_ids", "list<int32>"),
    ("labels", "list<int32>"),
    ("position_ids", "list<int32>"),
    ("seq_lengths", "list<int32>"),
    ("sample_ids", "list<int64>"),
]
DESCRIPTIONS = {
    "bucketed": "MintDim export of a bucketed output: one row per sample (input_ids without padding, labels "
    "with -100 where the loss mask does not train the token, sample_id).",
    "packed": "MintDim export of packed rows: one row per packed row without its padding (input_ids, labels "
    "with -100 on untrained tokens and on each sample's first token, position_ids restarting at each "
    "sample, seq_lengths, sample_ids).",
}


@dataclass
class ExportResult:
    format: str
    files: list[str] = field(default_factory=list)  # what was written, in place
    rows: int = 0  # hf rows, or megatron sequences
    tokens: int = 0


def export(out: str, format: str, to: str, *, log=None) -> ExportResult:  # noqa: A002  (the CLI's --format)
    """Verify the output directory `out`, then write it to `to` in `format` ("hf" or "megatron");
    see the module documentation. `log`: a callable receiving progress lines."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    out, to = os.fspath(out), os.fspath(to)
    log = log or (lambda line: None)
    load_output(out)  # the reader's error when `out` is not a finished output at all
    _check_destinations(out, _destinations(format, to))
    if format == "hf":
        _need_pyarrow()
    verified(out, log)
    ds = open_output(out)
    if format == "hf":
        return _export_hf(ds, out, to, log)
    return _export_megatron(ds, to, log)


def _destinations(format: str, to: str) -> list[str]:  # noqa: A002
    if format == "hf":
        return [to]
    masks = megatron.mask_prefix(to)
    return [megatron.bin_path(to), megatron.idx_path(to), megatron.bin_path(masks), megatron.idx_path(masks)]


def _check_destinations(out: str, paths: list[str]) -> None:
    """Refuse a destination that exists (an empty directory is new enough) or lies inside the output.
    A stale PREFIX_mask file is refused too, even for an output without masks: it would pass for them."""
    real_out = os.path.realpath(out)
    for path in paths:
        if os.path.lexists(path) and not (
            os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path)
        ):
            raise E.ExportError.exists(path)
        real = os.path.realpath(path)
        if real == real_out or real.startswith(real_out + os.sep):
            raise E.ExportError.inside_output(path, out)


def _need_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise E.MissingExtraError.make("mintdim export --format hf", "arrow", "pyarrow") from None


def verified(out: str, log) -> None:
    """OutputValidationError naming every file that differs from checksums.sha256, or with verify's first
    problem, when the output fails `mintdim verify` (which checks sample_index.idx, the reader's index,
    against sample_index.jsonl)."""
    from .verify import verify

    report = verify(out, log=log)
    sums = report.checksums
    if sums is not None and (sums.differ or sums.missing or sums.extra):  # checked first: each file named
        raise E.OutputValidationError.checksums_differ(out, sums.differ, sums.missing, sums.extra)
    if not report.ok:
        raise E.OutputValidationError.failed_verification(out, report.count, report.problems[0].text(out))
    log(f"[export] verified {out}: {report.samples} samples, {report.shards} shards")


def blocks(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive (start, stop) ranges whose weights add up to about `budget` (at least one item each)."""
    ends = np.cumsum(np.asarray(weights, dtype=np.int64))
    out, start = [], 0
    while start < len(ends):
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + budget, side="right")))
        out.append((start, stop))
        start = stop
    return out


# --- placing files: temporary names, moved in only when complete -------------------------------------------


class Staging:
    """Temporary names beside each destination (`tmp[dest]`); `place(dest)` moves one into place without
    ever replacing a file. Leaving the block by an exception removes every temporary file, every file
    placed and every directory made for them; an OSError becomes ExportError.write_failed."""

    def __init__(self, shown: str, destinations: list[str]):
        self.shown = shown
        self.made: list[str] = []
        self.placed: list[str] = []
        self.tmp = {}
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        for dest in destinations:
            parent, name = os.path.split(os.path.abspath(dest))
            self._makedirs(parent)
            self.tmp[dest] = os.path.join(parent, f".{name}.{tag}.mintdim-export")

    def _makedirs(self, parent: str) -> None:
        missing = []
        while not os.path.isdir(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(missing):
            os.mkdir(d)
            self.made.append(d)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            return False
        for path in list(self.tmp.values()) + self.placed:
            _remove(path)
        for d in reversed(self.made):
            try:
                os.rmdir(d)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise E.ExportError.write_failed(self.shown, exc.strerror or exc) from exc
        return False

    def place(self, dest: str) -> None:
        tmp = self.tmp[dest]
        if os.path.isdir(tmp):
            try:
                os.rename(tmp, dest)  # onto an empty directory only (ENOTEMPTY, ENOTDIR, EISDIR otherwise)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise E.ExportError.exists(dest) from None
                raise
        else:
            try:
                os.link(tmp, dest)  # fails when dest exists, whatever it is
            except FileExistsError:
                raise E.ExportError.exists(dest) from None
            except OSError as exc:  # a file system without hard links
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
                    raise
                if os.path.lexists(dest):
                    raise E.ExportError.exists(dest) from None
                os.rename(tmp, dest)
            _remove(tmp)
        self.placed.append(dest)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


# --- hf ------------------------------------------------------------------------------------------------


def _export_hf(ds, out: str, dest: str, log) -> ExportResult:
    packed = isinstance(ds, PackedDataset)
    columns = PACKED_COLUMNS if packed else BUCKETED_COLUMNS
    tokens = int(ds.token_counts.sum())
    if packed:
        rows, batches = ds.num_rows, _packed_batches(ds, hfd.arrow_schema(columns))
        samples = ds.num_samples  # at most (a dropped sample is in no row): the count only sizes the files
        values = {
            "input_ids": tokens,
            "labels": tokens,
            "position_ids": tokens,
            "seq_lengths": samples,
            "sample_ids": samples,
        }
    else:  # a sample dropped for its length has no row
        rows, batches = int(np.count_nonzero(ds.unit_sizes)), _bucketed_batches(ds, hfd.arrow_schema(columns))
        values = {"input_ids": tokens, "labels": tokens}
    bounds = hfd.shard_bounds(rows, hfd.arrow_nbytes(rows, values, columns))
    with Staging(dest, [dest]) as staging:
        tmp = staging.tmp[dest]
        os.mkdir(tmp)
        writer = hfd.ShardWriter(tmp, hfd.arrow_schema(columns), bounds)
        progress = Progress(log, f"[export] {dest}", rows, "rows")
        try:
            for batch in batches:
                writer.write(batch)
                progress.update(writer.rows_written)
            writer.close()
        except BaseException:
            writer.abort()
            raise
        hfd.write_metadata(
            tmp,
            columns,
            writer.files,
            DESCRIPTIONS["packed" if packed else "bucketed"],
            _fingerprint(out, "hf"),
        )
        staging.place(dest)
    log(
        f"[export] {dest}: {rows} rows, {tokens} tokens, {len(writer.files)} Arrow file(s) "
        f"(datasets.load_from_disk)"
    )
    return ExportResult("hf", [dest], rows, tokens)


def _fingerprint(out: str, format: str) -> str:  # noqa: A002
    """state.json's _fingerprint: 16 hex digits of the output's
    manifest and stats (same output, same bytes)."""
    h = hashlib.sha256(f"mintdim {__version__} export {format}\n".encode())
    for name in (fmt.MANIFEST, fmt.STATS):
        with open(os.path.join(out, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _array(values: np.ndarray):
    """A pyarrow array over a numpy array's buffer (pa.array would import pandas when it is installed:
    0.3 s of an export)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _list_array(offsets: np.ndarray, values: np.ndarray):
    import pyarrow as pa

    offsets = np.ascontiguousarray(offsets, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.list_(pa.from_numpy_dtype(values.dtype)),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets)],
        children=[_array(values)],
    )


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _bucketed_batches(ds, schema):
    """One record batch per block of samples; a sample dropped for its length (in no unit) has no row.
    The ids and labels of every block go through the same two int32 buffers (pyarrow has written a
    batch when the next one is made): fresh arrays per block cost their page faults again."""
    import pyarrow as pa

    units = ds.sample_columns.unit
    spans = blocks(ds.unit_sizes, BLOCK_TOKENS)
    longest = max((int(ds.token_counts[a:b].sum()) for a, b in spans), default=0)
    ids_buf = np.empty(longest, dtype=np.int32)
    labels_buf = np.empty(longest, dtype=np.int32) if ds.has_loss_mask else None
    for start, stop in spans:
        counts, ids, bits = ds.span(start, stop, out=ids_buf)
        labels = ids
        if bits is not None:
            labels = labels_buf[: len(ids)]
            np.copyto(labels, ids)
            labels[~bits] = IGNORE
        kept = units[start:stop] >= 0
        offsets = _offsets(counts[kept])
        yield pa.record_batch(
            [
                _list_array(offsets, ids),
                _list_array(offsets, labels),
                _array(np.arange(start, stop, dtype=np.int64)[kept]),
            ],
            schema=schema,
        )


def _packed_batches(ds, schema):
    import pyarrow as pa

    for start, stop in blocks(np.full(ds.num_rows, ds.row_length), BLOCK_TOKENS):
        b = ds.gather_rows(np.arange(start, stop))
        real = b.segment_ids >= 0  # the row's samples; padding only after them
        offsets = _offsets(b.row_lengths)
        per_row = _offsets(np.array([len(ds.row_sample_ids(r)) for r in range(start, stop)], dtype=np.int64))
        yield pa.record_batch(
            [
                _list_array(offsets, b.tokens[real].astype(np.int32)),
                _list_array(offsets, b.labels[real].astype(np.int32)),
                _list_array(offsets, b.position_ids[real].astype(np.int32)),
                _list_array(per_row, b.seq_lengths.astype(np.int32)),
                _list_array(per_row, b.sample_ids.astype(np.int64)),
            ],
            schema=schema,
        )


# --- megatron ------------------------------------------------------------------------------------------


def _export_megatron(ds, prefix: str, log) -> ExportResult:
    masks = megatron.mask_prefix(prefix) if ds.has_loss_mask else None
    bin_file, idx_file = megatron.bin_path(prefix), megatron.idx_path(prefix)
    finals = [bin_file, idx_file] + ([megatron.bin_path(masks), megatron.idx_path(masks)] if masks else [])
    weights = ds.token_counts + 1 if isinstance(ds, PackedDataset) else ds.unit_sizes
    with Staging(prefix, finals) as staging:
        tmp, writers = staging.tmp, []
        try:
            writers.append(megatron.Writer(tmp[bin_file], ds.dtype))
            if masks:
                writers.append(megatron.Writer(tmp[megatron.bin_path(masks)], megatron.MASK_DTYPE))
            tokens = 0
            spans = blocks(weights, BLOCK_TOKENS)
            # one buffer for every block's tokens: fresh arrays
            # cost their page faults again, block after block
            buf = np.empty(
                max((int(ds.token_counts[a:b].sum()) for a, b in spans), default=0), dtype=ds.dtype
            )
            progress = Progress(log, f"[export] {prefix}.bin", ds.num_samples, "sequences")
            for start, stop in spans:
                counts, block, bits = ds.span(start, stop, out=buf)
                writers[0].add(counts, block)
                if masks:
                    writers[1].add(counts, bits.view(np.uint8))
                tokens += len(block)
                progress.update(stop)
            writers[0].finish(tmp[idx_file])
            if masks:
                writers[1].finish(tmp[megatron.idx_path(masks)])
        except BaseException:
            for w in writers:
                w.abort()
            raise
        # the dataset's own .idx last: a reader never sees it without .bin
        for dest in finals[2:] + finals[:2]:
            staging.place(dest)
    dtype = megatron.stored_dtype(ds.dtype).name
    log(
        f"[export] {prefix}.bin/.idx: {ds.num_samples} sequences, {tokens} tokens, dtype {dtype}"
        + (f"; loss masks in {masks}.bin/.idx (uint8)" if masks else "; no loss masks (no source.train_on)")
    )
    return ExportResult("megatron", finals, ds.num_samples, tokens)
