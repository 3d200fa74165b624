"""Read a finished MintDim output directory: units, shards, samples and bucketed batches.

    import mintdim
    ds = mintdim.open("artifacts/gsm8k_units")     # mintdim.read is the same function
    ds.num_samples, ds.sizes, ds.dtype              # 1319, [128, 192, 256, 512], dtype('uint16')
    ds.unit(192).shards[0]                           # np.memmap, shape (records, 192), read-only
    ds.tokens(42)                                    # sample 42's tokens, without padding
    for batch in ds.batches(32, seed=0, rank=0, world_size=1):
        batch.tokens                                 # (B, unit_size), every row of one unit

Nothing is read into memory: the per-sample lookup (unit, shard, record and token count
of every sample) is sample_index.idx, memory-mapped (formats/sample_columns.py).
Shards are memory-mapped with the manifest's dtype, little-endian, whatever the host.
The PyTorch adapter (`torch_dataset`, `torch_sampler`, `torch_loader`) imports torch
only when it is called.
"""

from __future__ import annotations

import os

import numpy as np

from .. import errors as E
from ..formats import shards as fs
from ..formats.sample_columns import open_columns
from .base import LEFT_OUT, Batch, BucketBatchSampler, OpenMaps, check_sample_id, load_output, span_buffer


def open(path: str):  # noqa: A001  (mintdim.open is the public name)
    """Open a finished output directory for reading: a `Dataset` (unit sizes), or a
    `mintdim.reading.packed_reader.PackedDataset` when the output holds packed rows (units.pack)."""
    manifest, _stats = load_output(os.fspath(path))
    if (manifest.get("units") or {}).get("layout") == "packed":
        from .packed_reader import PackedDataset

        return PackedDataset(path)
    return Dataset(path)


read = open


class Unit:
    """The shards of one unit size: `shards[k]` is a read-only memmap of shape (records, size)."""

    def __init__(self, dataset: Dataset, size: int, num_samples: int, shard_paths: list[str]):
        self._ds = dataset
        self.size = size
        self.num_samples = num_samples
        self.shard_paths = shard_paths

    def __len__(self) -> int:
        return self.num_samples

    def __repr__(self) -> str:
        return f"Unit(size={self.size}, samples={self.num_samples}, shards={len(self.shard_paths)})"

    @property
    def num_shards(self) -> int:
        return len(self.shard_paths)

    def shard(self, k: int) -> np.memmap:
        return self._ds._memmap(self.shard_paths[k], self.size)

    @property
    def shards(self) -> list[np.memmap]:
        return [self.shard(k) for k in range(self.num_shards)]

    def mask_shard(self, k: int) -> np.memmap:
        """Bit-packed loss masks of shard k: (records, ceil(size/8)) uint8, little bit order."""
        return self._ds._memmap(
            fs.mask_path(self.shard_paths[k]), fs.mask_width(self.size), np.dtype(np.uint8)
        )

    @property
    def sample_ids(self) -> np.ndarray:
        """Sample ids of this unit in record order (shard 0 row 0 first)."""
        return self._ds._unit_ids()[self._ds.sizes.index(self.size)]


class Dataset:
    """A finished output directory. See the module docstring for a tour."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.manifest, self.stats = load_output(self.path)
        m = self.manifest
        self.dtype = np.dtype(m["token_dtype"]).newbyteorder("<")
        self.pad_id = int(m["tokenizer"]["pad_id"])
        unk = m["tokenizer"]["unk_id"]
        # None: an hf_dir tokenizer with no UNK (byte-level)
        self.unk_id = int(unk) if unk is not None else None
        self.vocab_size = int(m["tokenizer"]["vocab_size"])
        self.sizes: list[int] = [int(s) for s in m["units"]["sizes"]]
        self.samples_per_shard = int(m["output"]["samples_per_shard"])
        self.num_samples = int(self.stats["total_samples"])
        self.num_tokens = int(self.stats["total_tokens"])
        counts = self.stats["unit_distribution"]
        self.units: list[Unit] = []
        for size in self.sizes:
            unit_dir = os.path.join(self.path, fs.unit_dir(size))
            names = fs.list_shards(unit_dir)
            n = int(counts.get(str(size), 0))
            expected = -(-n // self.samples_per_shard)
            if len(names) != expected or [fs.shard_index(x) for x in names] != list(range(expected)):
                raise E.OutputValidationError.shard_count(self.path, fs.unit_dir(size), expected, len(names))
            if not os.path.isdir(unit_dir):
                raise E.OutputValidationError.unit_missing(self.path, fs.unit_dir(size))
            self.units.append(Unit(self, size, n, [os.path.join(unit_dir, x) for x in names]))
        self._maps = OpenMaps()  # pickled empty (DataLoader workers): memmaps and the sample index reopen
        self._index = None  # the sample index's columns, opened on first use

    def __repr__(self) -> str:
        units = ", ".join(f"{u.size}: {u.num_samples}" for u in self.units)
        return (
            f"mintdim.Dataset({self.path!r}, samples={self.num_samples}, dtype={self.dtype.name}, "
            f"units={{{units}}})"
        )

    def __len__(self) -> int:
        return self.num_samples

    def unit(self, size: int) -> Unit:
        try:
            return self.units[self.sizes.index(int(size))]
        except ValueError:
            raise KeyError(f"no unit of size {size}; sizes are {self.sizes}") from None

    def _memmap(self, path: str, size: int, dtype=None) -> np.memmap:
        def make():
            try:
                return fs.open_records(path, size, self.dtype if dtype is None else dtype)
            except ValueError:
                raise E.OutputValidationError.partial_records(self.path, path, size) from None

        return self._maps.open(path, make)

    # -- the per-sample lookup ------------------------------------------------------------------

    def _lookup(self):
        """The sample index's columns (formats/sample_columns.py): unit, shard, record, token_count,
        status... per sample id, memory-mapped from sample_index.idx on first use."""
        if self._index is None:
            self._index = open_columns(self.path, self.manifest, self.num_samples)
        return self._index

    @property
    def sample_columns(self):
        """The sample index's columns (formats/sample_columns.SampleColumns): `.unit` (the index into
        `sizes`, -1 in no unit), `.shard`, `.record`, `.token_count`, `.status`, `.trained_tokens`,
        `.source_file` (into `.file_names`), `.source_line`... one item per sample id."""
        return self._lookup()

    def _unit_ids(self) -> list[np.ndarray]:
        units = np.asarray(self._lookup().unit)  # -1: in no unit (sorted first)
        order = np.argsort(units, kind="stable")
        bounds = np.searchsorted(units[order], np.arange(len(self.sizes) + 1))
        return [order[bounds[u] : bounds[u + 1]].astype(np.int64) for u in range(len(self.sizes))]

    @property
    def token_counts(self) -> np.ndarray:
        """Token count of every sample, indexed by sample_id (int32, read-only)."""
        return self._lookup().token_count

    @property
    def unit_sizes(self) -> np.ndarray:
        """Unit size of every sample, indexed by sample_id (int32; 0 for a sample dropped for its length)."""
        return np.asarray(self.sizes + [0], dtype=np.int32)[self._lookup().unit]

    @property
    def untrained_ids(self) -> set[int]:
        """The samples source.drop_untrained left out (in no unit)."""
        return set(np.flatnonzero(np.asarray(self._lookup().status) == 3).tolist())

    def _check_id(self, sample_id) -> int:
        return check_sample_id(sample_id, self.num_samples)

    def _unit_of(self, sid: int) -> Unit:
        """The unit of a sample; ValueError for one dropped for its length (units.overflow: drop)."""
        cols = self._lookup()
        u = int(cols.unit[sid])
        if u >= len(self.units):
            raise E.OutputValidationError.index_unit_size(self.path)
        if u < 0:
            if int(cols.status[sid]) == 3:
                raise ValueError(LEFT_OUT % sid)
            raise ValueError(
                f"sample {sid} was dropped (units.overflow: drop): it is longer than the largest "
                f"unit size {self.sizes[-1]}"
            )
        return self.units[u]

    def locate(self, sample_id: int) -> tuple[int, str, int]:
        """(unit_size, shard path, row in the shard) of one sample."""
        sid = self._check_id(sample_id)
        cols = self._lookup()
        unit = self._unit_of(sid)
        return unit.size, unit.shard_paths[int(cols.shard[sid])], int(cols.record[sid])

    def record(self, sample_id: int) -> np.ndarray:
        """One sample's full padded record (unit_size tokens), a read-only view of its shard."""
        size, path, row = self.locate(sample_id)
        return self._memmap(path, size)[row]

    def tokens(self, sample_id: int) -> np.ndarray:
        """One sample's tokens without padding (a read-only view of its shard)."""
        return self.record(sample_id)[: int(self._lookup().token_count[self._check_id(sample_id)])]

    __getitem__ = tokens

    @property
    def has_loss_mask(self) -> bool:
        """True when the build declared source.train_on (mask_XXXXXX.bin beside every shard)."""
        return "loss_mask" in self.manifest

    def loss_mask(self, sample_id: int) -> np.ndarray:
        """One sample's loss mask (bool, one per token, no padding): True where the token is trained."""
        if not self.has_loss_mask:
            raise ValueError("this build has no loss masks (source.train_on was not set)")
        sid = self._check_id(sample_id)
        cols = self._lookup()
        unit = self._unit_of(sid)
        bits = np.unpackbits(unit.mask_shard(int(cols.shard[sid]))[int(cols.record[sid])], bitorder="little")
        return bits[: int(cols.token_count[sid])].astype(bool)

    def span(
        self, start: int, stop: int, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Samples start..stop-1 without padding: (token counts (int64), their tokens one after another,
        their loss-mask bits (bool) likewise, or None without source.train_on). A sample dropped for its
        length (units.overflow: drop) counts 0 tokens. `out`: an array of any integer dtype, at least as
        long as the tokens, that receives them (the tokens returned are its first ones): `mintdim export`
        reuses one buffer block after block. Each sample's slice of its record is a view, and one
        concatenate copies them all (a vectorised gather of the same slots, with its index arrays, took
        5x longer on the 107 MB ShareGPT build: 24 M tokens, 61 k samples; a copy per sample in the loop,
        1.4x)."""
        cols = self._lookup()
        c = cols.token_count[start:stop].astype(np.int64)
        tokens = span_buffer(int(c.sum()), self.dtype, out)
        bits = np.empty(len(tokens), dtype=bool) if self.has_loss_mask else None
        units, shard_of, row_in = (cols.unit[start:stop], cols.shard[start:stop], cols.record[start:stop])
        views = {}  # (unit, shard) -> its records and masks as plain arrays (samples of all units interleave)
        parts, mask_parts = [], []
        for u, k, row, n in zip(units.tolist(), shard_of.tolist(), row_in.tolist(), c.tolist()):
            if not n:  # an empty or dropped sample (a dropped one is in no unit)
                continue
            pair = views.get((u, k))
            if pair is None:
                unit = self.units[u]
                pair = views[u, k] = (
                    unit.shard(k).view(np.ndarray),
                    unit.mask_shard(k).view(np.ndarray) if bits is not None else None,
                )
            records, masks = pair
            parts.append(records[row, :n])
            if masks is not None:
                mask_parts.append(np.unpackbits(masks[row], count=n, bitorder="little"))
        if parts:  # (out may be wider or narrower than the shards' dtype: casts as item assignment does)
            np.concatenate(parts, out=tokens, casting="unsafe")
            if bits is not None:
                np.concatenate(mask_parts, out=bits.view(np.uint8))
        return c, tokens, bits

    def gather(self, sample_ids) -> Batch:
        """A batch of samples that share one unit, padded records stacked in the given order."""
        ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
        cols = self._lookup()
        if len(ids) == 0:
            raise ValueError("gather needs at least one sample id")
        if ids.min() < 0 or ids.max() >= self.num_samples:
            raise IndexError(f"sample ids out of range 0..{self.num_samples - 1}")
        u = cols.unit[ids]
        if np.any(u != u[0]):
            raise ValueError("a batch must hold samples of one unit size (see batches())")
        unit = self._unit_of(int(ids[0]))
        out = np.empty((len(ids), unit.size), dtype=self.dtype)
        masks = np.empty((len(ids), -(-unit.size // 8)), dtype=np.uint8) if self.has_loss_mask else None
        shard_of, row_in = cols.shard[ids], cols.record[ids]
        for shard in np.unique(shard_of):
            sel = np.flatnonzero(shard_of == shard)
            out[sel] = unit.shard(int(shard))[row_in[sel]]
            if masks is not None:
                masks[sel] = unit.mask_shard(int(shard))[row_in[sel]]
        loss_mask = None
        if masks is not None:
            loss_mask = np.unpackbits(masks, axis=1, count=unit.size, bitorder="little").astype(bool)
        return Batch(unit.size, ids, out, cols.token_count[ids].astype(np.int64), loss_mask)

    # -- batches --------------------------------------------------------------------------------

    def sampler(self, batch_size: int, **kw) -> BucketBatchSampler:
        """A bucketed batch sampler over this dataset (see BucketBatchSampler)."""
        return BucketBatchSampler(self, batch_size, **kw)

    def batches(self, batch_size: int, **kw):
        """Iterate Batch objects; keyword arguments as for BucketBatchSampler."""
        for ids in self.sampler(batch_size, **kw).iter_arrays():
            yield self.gather(ids)

    # -- PyTorch (imported only here) -----------------------------------------------------------

    def torch_dataset(self, **kw):
        from .torch_data import TokenDataset

        return TokenDataset(self, **kw)

    def torch_sampler(self, batch_size: int, **kw):
        from .torch_data import TorchBucketSampler

        return TorchBucketSampler(self.sampler(batch_size, **kw))

    def torch_loader(self, batch_size: int, *, num_workers: int = 0, dtype=None, **kw):
        """A torch DataLoader yielding dict batches (input_ids, attention_mask, lengths, sample_ids)."""
        try:
            from .torch_data import make_loader
        except ModuleNotFoundError as exc:
            if exc.name != "torch":
                raise
            raise E.MissingExtraError.make("torch_loader()", "torch", "torch") from None
        return make_loader(self, batch_size, num_workers=num_workers, dtype=dtype, **kw)
