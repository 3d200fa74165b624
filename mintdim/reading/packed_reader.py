"""Read an output of packed rows (units.pack) for training with variable-length attention.

    ds = mintdim.open("artifacts/sharegpt_packed")     # a PackedDataset when the manifest says packed
    ds.row_length, ds.num_rows, ds.num_samples
    ds.row(0), ds.row_boundaries(0), ds.row_sample_ids(0)
    ds.tokens(42)                                       # one sample's tokens (a view of its row)
    for batch in ds.batches(8, seed=0, rank=0, world_size=1):   # 8 rows per batch
        batch.tokens          # (B, row_length), pad_id after each row's samples
        batch.position_ids    # (B, row_length): 0, 1, 2, ... restarting at every sample (0 on padding)
        batch.labels          # (B, row_length): token ids to predict, -100 where there is no target:
                              #   padding, untrained tokens (source.train_on), and the FIRST token of
                              #   every sample (it is never predicted from the previous sample)
        batch.cu_seqlens      # (S + 1,) int32 over the batch's real tokens, padding left out, as
        batch.max_seqlen      #   FlashAttention's varlen functions take them
        batch.sample_ids      # (S,) the samples in that order
        batch.flat()          # padding-free 1-D input_ids / position_ids / labels

Boundaries come from the stored cu_XXXXXX.bin files (formats/shards.py), sample ids from
sample_index.idx (formats/sample_columns.py: ordered by row, then row_offset); the two are checked
against each other for every row read. Rows are batched like BucketBatchSampler batches records: per epoch the
shards and the rows inside each shard are shuffled by (seed, epoch), ranks take every
world_size-th batch. The PyTorch adapter: `torch_loader` (mintdim/reading/torch_data.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import errors as E
from ..formats import shards as fs
from ..formats.sample_columns import open_columns
from .base import LEFT_OUT, BucketBatchSampler, OpenMaps, check_sample_id, load_output, span_buffer

IGNORE = -100  # the label of a slot without a target (PyTorch's cross_entropy ignore_index)


@dataclass
class PackedBatch:
    """Rows of one batch with everything variable-length attention needs."""

    row_ids: np.ndarray  # (B,) int64
    tokens: np.ndarray  # (B, L) the manifest dtype
    row_lengths: np.ndarray  # (B,) int64: real tokens per row (the rest is padding)
    sample_ids: np.ndarray  # (S,) int64, row-major order
    seq_lengths: np.ndarray  # (S,) int64
    cu_seqlens: np.ndarray  # (S + 1,) int32 over the padding-free flattening
    max_seqlen: int
    position_ids: np.ndarray  # (B, L) int64
    labels: np.ndarray  # (B, L) int64, IGNORE where no target
    segment_ids: np.ndarray  # (B, L) int32: index of the slot's sample in sample_ids, -1 on padding
    trained: np.ndarray | None = None  # (B, L) bool: loss-mask bits as stored (source.train_on)

    def __len__(self) -> int:
        return len(self.row_ids)

    @property
    def loss_mask(self) -> np.ndarray:
        """(B, L) bool: slots whose label is a target."""
        return self.labels != IGNORE

    @property
    def attention_mask(self) -> np.ndarray:
        """(B, L) bool: real tokens (padding False). For attention within samples use the
        boundaries (cu_seqlens) or segment_ids, not this."""
        return self.segment_ids >= 0

    def flat(self) -> dict:
        """The batch without padding, as one sequence: input_ids, position_ids, labels (T,), with
        cu_seqlens / max_seqlen / sample_ids (the layout of HF DataCollatorWithFlattening)."""
        real = self.segment_ids >= 0
        return {
            "input_ids": self.tokens[real].astype(np.int64),
            "position_ids": self.position_ids[real],
            "labels": self.labels[real],
            "cu_seqlens": self.cu_seqlens,
            "max_seqlen": self.max_seqlen,
            "sample_ids": self.sample_ids,
        }


class _Rows:
    """What BucketBatchSampler needs of a unit: the number of rows."""

    def __init__(self, n: int):
        self.num_samples = n


class PackedDataset:
    """A finished output of packed rows. See the module docstring."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.manifest, self.stats = load_output(self.path)
        m = self.manifest
        units = m["units"]
        if units.get("layout") != "packed":
            raise E.OutputValidationError.not_packed(self.path)
        self.dtype = np.dtype(m["token_dtype"]).newbyteorder("<")
        self.pad_id = int(m["tokenizer"]["pad_id"])
        unk = m["tokenizer"]["unk_id"]
        # None: an hf_dir tokenizer with no UNK (byte-level)
        self.unk_id = int(unk) if unk is not None else None
        self.vocab_size = int(m["tokenizer"]["vocab_size"])
        self.row_length = int(units["row_length"])
        self.sizes = [self.row_length]  # one "unit": the rows (BucketBatchSampler batches row ids)
        self.samples_per_shard = int(m["output"]["samples_per_shard"])  # rows per shard
        self.num_samples = int(self.stats["total_samples"])
        self.num_tokens = int(self.stats["total_tokens"])
        self.num_rows = int(self.stats["packing"]["rows"])
        self.overflow = units.get("overflow", "error")
        udir = os.path.join(self.path, fs.unit_dir(self.row_length))
        names = fs.list_shards(udir)
        expected = -(-self.num_rows // self.samples_per_shard)
        if [fs.shard_index(x) for x in names] != list(range(expected)):
            raise E.OutputValidationError.shard_count(
                self.path, fs.unit_dir(self.row_length), expected, len(names)
            )
        self.shard_paths = [os.path.join(udir, x) for x in names]
        self._maps = OpenMaps()  # pickled empty (DataLoader workers)
        self._index = None  # the sample index's columns, opened on first use

    def __repr__(self) -> str:
        return (
            f"mintdim.PackedDataset({self.path!r}, samples={self.num_samples}, rows={self.num_rows}, "
            f"row_length={self.row_length}, dtype={self.dtype.name})"
        )

    def __len__(self) -> int:
        """Rows (the unit of batching)."""
        return self.num_rows

    @property
    def has_loss_mask(self) -> bool:
        return "loss_mask" in self.manifest

    def _cached(self, key, make):
        return self._maps.open(key, make)

    def _shard(self, k: int) -> np.memmap:
        return self._cached(
            ("t", k), lambda: fs.open_records(self.shard_paths[k], self.row_length, self.dtype)
        )

    def _mask(self, k: int) -> np.memmap:
        return self._cached(
            ("m", k), lambda: fs.open_mask(fs.mask_path(self.shard_paths[k]), self.row_length)
        )

    def _cu(self, k: int):
        return self._cached(
            ("c", k), lambda: fs.read_boundaries(fs.cu_path(self.shard_paths[k]), len(self._shard(k)))
        )

    # -- the per-sample lookup: sample_index.idx (formats/sample_columns.py) ----------------------

    def _lookup(self):
        """The sample index's columns, memory-mapped on first use: shard, record, row_offset, token_count
        and status per sample id; row_samples (sample ids by row, then offset) and row_first."""
        if self._index is None:
            self._index = open_columns(self.path, self.manifest, self.num_samples)
            if len(self._index.row_first) != self.num_rows + 1:
                raise E.OutputValidationError.index_file(
                    "index_file_damaged",
                    self._index.path,
                    E.OutputValidationError.texts(
                        "idx_rows", rows=len(self._index.row_first) - 1, total=self.num_rows
                    ),
                )
        return self._index

    @property
    def sample_columns(self):
        """The sample index's columns (formats/sample_columns.SampleColumns), one item per sample id:
        `.shard`, `.record` (-1: dropped), `.row_offset`, `.token_count`, `.status`, `.trained_tokens`,
        `.source_file` (into `.file_names`), `.source_line`..."""
        return self._lookup()

    @property
    def token_counts(self) -> np.ndarray:
        """Tokens written per sample, by sample_id (0 for a dropped sample)."""
        return self._lookup().token_count

    @property
    def untrained_ids(self) -> set[int]:
        """The samples source.drop_untrained left out (in no row)."""
        return set(np.flatnonzero(np.asarray(self._lookup().status) == 3).tolist())

    def _check_id(self, sample_id) -> int:
        return check_sample_id(sample_id, self.num_samples)

    def locate(self, sample_id: int) -> tuple[int, str, int]:
        """(row_length, shard path, row in the shard) of a sample, as Dataset.locate gives
        (unit_size, shard path, row); its slots in the row: `position`."""
        row, _offset, _count = self.position(sample_id)
        k, local = divmod(row, self.samples_per_shard)
        return self.row_length, self.shard_paths[k], local

    def position(self, sample_id: int) -> tuple[int, int, int]:
        """(global row, offset in the row, tokens) of a sample; ValueError for a dropped one."""
        sid = self._check_id(sample_id)
        cols = self._lookup()
        shard = int(cols.shard[sid])
        if shard < 0:
            if int(cols.status[sid]) == 3:
                raise ValueError(LEFT_OUT % sid)
            raise ValueError(f"sample {sid} was dropped (units.overflow: drop): it is longer than a row")
        row = shard * self.samples_per_shard + int(cols.record[sid])
        return row, int(cols.row_offset[sid]), int(cols.token_count[sid])

    def row(self, r: int) -> np.ndarray:
        """Row r (row_length tokens, a read-only view of its shard)."""
        k, local = divmod(int(r), self.samples_per_shard)
        return self._shard(k)[local]

    def row_boundaries(self, r: int) -> np.ndarray:
        """Row r's cumulative sequence lengths [0, ..., tokens in the row], from its cu file."""
        k, local = divmod(int(r), self.samples_per_shard)
        ptr, cu = self._cu(k)
        return fs.row_cu(ptr, cu, local)

    def row_sample_ids(self, r: int) -> np.ndarray:
        cols = self._lookup()
        return np.asarray(cols.row_samples[cols.row_first[r] : cols.row_first[r + 1]])

    def tokens(self, sample_id: int) -> np.ndarray:
        row, offset, count = self.position(sample_id)
        return self.row(row)[offset : offset + count]

    __getitem__ = tokens

    def loss_mask(self, sample_id: int) -> np.ndarray:
        """One sample's loss-mask bits as stored (True: trained), one per token."""
        if not self.has_loss_mask:
            raise ValueError("this build has no loss masks (source.train_on was not set)")
        row, offset, count = self.position(sample_id)
        k, local = divmod(row, self.samples_per_shard)
        return fs.unpack_mask(np.asarray(self._mask(k)[local]), self.row_length)[offset : offset + count]

    def span(
        self, start: int, stop: int, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Samples start..stop-1 as Dataset.span gives them: (tokens written per sample (0 for a dropped
        one), their tokens one after another, their loss-mask bits likewise or None); `out` as there."""
        cols = self._lookup()
        shard_of, row_in = cols.shard[start:stop], cols.record[start:stop]
        c = np.where(shard_of >= 0, cols.token_count[start:stop], 0).astype(np.int64)
        first = (np.cumsum(c) - c).tolist()
        tokens = span_buffer(int(c.sum()), self.dtype, out)
        bits = np.empty(len(tokens), dtype=bool) if self.has_loss_mask else None
        last = None
        for k, row, off, n, at in zip(
            shard_of.tolist(), row_in.tolist(), cols.row_offset[start:stop].tolist(), c.tolist(), first
        ):
            if n == 0:  # dropped, or no token
                continue
            if k != last:
                last, records = k, self._shard(k).view(np.ndarray)
                masks = self._mask(k).view(np.ndarray) if bits is not None else None
            tokens[at : at + n] = records[row, off : off + n]
            if masks is not None:
                bits[at : at + n] = np.unpackbits(masks[row], count=off + n, bitorder="little")[off:]
        return c, tokens, bits

    # -- batches ----------------------------------------------------------------------------------

    def gather_rows(self, row_ids) -> PackedBatch:
        rids = np.asarray(row_ids, dtype=np.int64).reshape(-1)
        if not len(rids):
            raise ValueError("gather_rows needs at least one row id")
        if rids.min() < 0 or rids.max() >= self.num_rows:
            raise IndexError(f"row ids out of range 0..{self.num_rows - 1}")
        L = self.row_length
        B = len(rids)
        tokens = np.empty((B, L), dtype=self.dtype)
        trained = np.zeros((B, L), dtype=bool) if self.has_loss_mask else None
        position_ids = np.zeros((B, L), dtype=np.int64)
        segment_ids = np.full((B, L), -1, dtype=np.int32)
        starts = np.zeros((B, L), dtype=bool)
        row_lengths = np.zeros(B, dtype=np.int64)
        sample_ids, seq_lengths = [], []
        base = 0
        for b, r in enumerate(rids.tolist()):
            tokens[b] = self.row(r)
            cu = self.row_boundaries(r).astype(np.int64)
            ids = self.row_sample_ids(r)
            lengths = np.diff(cu)
            if len(ids) != len(lengths) or not np.array_equal(lengths, self.token_counts[ids]):
                raise E.OutputValidationError.row_boundaries(self.path, r)
            used = int(cu[-1])
            row_lengths[b] = used
            segment_ids[b, :used] = np.repeat(np.arange(base, base + len(lengths), dtype=np.int32), lengths)
            base += len(lengths)
            position_ids[b, :used] = np.arange(used) - np.repeat(cu[:-1], lengths)
            starts[b, cu[:-1][lengths > 0]] = True
            if trained is not None:
                k, local = divmod(r, self.samples_per_shard)
                trained[b] = fs.unpack_mask(np.asarray(self._mask(k)[local]), L)
            sample_ids.append(ids)
            seq_lengths.append(lengths)
        sample_ids = np.concatenate(sample_ids).astype(np.int64)
        seq_lengths = np.concatenate(seq_lengths).astype(np.int64)
        cu_seqlens = np.zeros(len(seq_lengths) + 1, dtype=np.int32)
        cu_seqlens[1:] = np.cumsum(seq_lengths)
        target = (segment_ids >= 0) & ~starts
        if trained is not None:
            target &= trained
        labels = np.where(target, tokens.astype(np.int64), IGNORE)
        return PackedBatch(
            rids,
            tokens,
            row_lengths,
            sample_ids,
            seq_lengths,
            cu_seqlens,
            int(seq_lengths.max()) if len(seq_lengths) else 0,
            position_ids,
            labels,
            segment_ids,
            trained,
        )

    def _unit_ids(self) -> list[np.ndarray]:
        return [np.arange(self.num_rows, dtype=np.int64)]

    def unit(self, size: int) -> _Rows:
        if int(size) != self.row_length:
            raise KeyError(f"the rows are {self.row_length} tokens long, not {size}")
        return _Rows(self.num_rows)

    def sampler(self, batch_size: int, **kw) -> BucketBatchSampler:
        """Batches of row ids (see BucketBatchSampler: shuffle, seed, epoch, drop_last, rank, world_size)."""
        return BucketBatchSampler(self, batch_size, **kw)

    def batches(self, batch_size: int, **kw):
        """Iterate PackedBatch objects of batch_size rows."""
        for ids in self.sampler(batch_size, **kw).iter_arrays():
            yield self.gather_rows(ids)

    def torch_loader(self, batch_size: int, *, num_workers: int = 0, **kw):
        """A torch DataLoader of padding-free batches, as HF DataCollatorWithFlattening gives them
        (input_ids, position_ids, labels of shape (1, T); cu_seq_lens_q/k, max_length_q/k)."""
        try:
            from .torch_data import make_packed_loader
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            raise E.MissingExtraError.make("torch_loader()", "torch", "torch") from None
        return make_packed_loader(self, batch_size, num_workers=num_workers, **kw)
