"""What the two readers share (reader.py: unit sizes; packed_reader.py: packed rows), and the PyTorch
adapter (torch_data.py) builds on: an output's manifest and stats, sample-id checks, the memmaps a
dataset keeps open, the bucketed Batch and the batch sampler."""

from __future__ import annotations

import builtins
import json
import os
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .. import errors as E
from ..formats import output as fmt
from ..formats.records import FAILED_MARKER

_open = builtins.open
MAX_OPEN_SHARDS = 256  # memmaps kept open per dataset (each holds a file descriptor)


def check_sample_id(sample_id, n: int) -> int:
    """A sample id as an int, or IndexError when it is not in 0..n-1."""
    sid = int(sample_id)
    if not 0 <= sid < n:
        raise IndexError(f"sample_id {sample_id} out of range 0..{n - 1}")
    return sid


def span_buffer(total: int, dtype, out: np.ndarray | None) -> np.ndarray:
    """Where span() puts `total` tokens: a new array, or the first `total` of `out` (a caller's buffer,
    reused block after block: fresh memory costs its page faults again each time)."""
    if out is None:
        return np.empty(total, dtype=dtype)
    if len(out) < total:
        raise ValueError(f"out holds {len(out)} tokens, the span has {total}")
    return out[:total]


LEFT_OUT = "sample %d was left out (source.drop_untrained): its loss mask trains no token"


class OpenMaps(OrderedDict):
    """The memmaps a dataset keeps open, the least recently used closed past MAX_OPEN_SHARDS.
    Pickled empty: a DataLoader worker reopens what it reads."""

    def open(self, key, make):
        value = OrderedDict.get(self, key)
        if value is None:
            value = self[key] = make()
            while len(self) > MAX_OPEN_SHARDS:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return value

    def __reduce__(self):
        return (OpenMaps, ())


def load_output(path: str) -> tuple[dict, dict]:
    """(manifest, stats) of a finished output directory; the reader's errors when it is not one."""
    manifest = os.path.join(path, fmt.MANIFEST)
    if not os.path.isdir(path):
        raise E.MintDimFileNotFoundError.make("reader", path)
    if not os.path.isfile(manifest):
        if any(os.path.exists(os.path.join(path, d, FAILED_MARKER)) for d in os.listdir(path)):
            raise E.OutputValidationError.build_failed(path, FAILED_MARKER)
        raise E.MintDimFileNotFoundError.make("reader", manifest)
    with _open(manifest, "rb") as f:
        manifest = json.loads(f.read())
    stats = os.path.join(path, fmt.STATS)
    if not os.path.isfile(stats):
        raise E.MintDimFileNotFoundError.make("reader", stats)
    with _open(stats, "rb") as f:
        stats = json.loads(f.read())
    return manifest, stats


@dataclass
class Batch:
    """One bucketed batch: every sample of one unit, padded to unit_size."""

    unit_size: int
    sample_ids: np.ndarray  # (B,) int64
    tokens: np.ndarray  # (B, unit_size), the manifest dtype
    lengths: np.ndarray  # (B,) int64: tokens before padding
    loss_mask: np.ndarray | None = None  # (B, unit_size) bool: trained tokens (source.train_on), else None

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def mask(self) -> np.ndarray:
        """(B, unit_size) bool: True on real tokens, False on padding."""
        return np.arange(self.unit_size)[None, :] < self.lengths[:, None]


class BucketBatchSampler:
    """Batches of sample ids, each batch drawn from one unit (so its records share one width).

    Per epoch (seeded by `(seed, epoch)`; call `set_epoch` between epochs): the shards of
    each unit are put in a random order and the records inside each shard are shuffled,
    then cut into batches of `batch_size` (the last batch of a unit may be short, unless
    `drop_last`). With `shuffle`, the batches of all units are then put in one random order;
    without it, units come in size order and samples in id order.

    Distributed: every rank computes the same batch list and takes batches
    rank, rank + world_size, ... so ranks never share a sample. With `even` (the default
    when world_size > 1) the list is first cut to a multiple of world_size, so every rank
    gets the same number of batches (as DistributedDataParallel needs).
    `units` restricts the sampler to some unit sizes. `dataset`: a reader.py `Dataset`, or a
    packed_reader.py `PackedDataset` (its rows are one unit).
    """

    def __init__(
        self,
        dataset,
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        epoch: int = 0,
        drop_last: bool = False,
        rank: int = 0,
        world_size: int = 1,
        even: bool | None = None,
        units: list[int] | None = None,
    ):
        if int(batch_size) < 1:
            raise ValueError("batch_size must be a positive integer")
        if int(world_size) < 1 or not 0 <= int(rank) < int(world_size):
            raise ValueError(f"rank must be in 0..world_size-1 (rank={rank}, world_size={world_size})")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.epoch = int(epoch)
        self.drop_last = bool(drop_last)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.even = self.world_size > 1 if even is None else bool(even)
        sizes = dataset.sizes if units is None else [int(s) for s in units]
        for s in sizes:
            dataset.unit(s)  # KeyError for an unknown size
        self.unit_sizes = sizes

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _all_batches(self) -> list[np.ndarray]:
        ds = self.dataset
        rng = np.random.default_rng([self.seed, self.epoch])
        ids_by_unit = ds._unit_ids()
        batches: list[np.ndarray] = []
        for size in self.unit_sizes:
            ids = ids_by_unit[ds.sizes.index(size)]
            if len(ids) == 0:
                continue
            if self.shuffle:
                shards = [ids[k : k + ds.samples_per_shard] for k in range(0, len(ids), ds.samples_per_shard)]
                ids = np.concatenate([rng.permutation(shards[k]) for k in rng.permutation(len(shards))])
            stop = len(ids) - len(ids) % self.batch_size if self.drop_last else len(ids)
            batches += [ids[k : k + self.batch_size] for k in range(0, stop, self.batch_size)]
        if self.shuffle:
            batches = [batches[k] for k in rng.permutation(len(batches))]
        return batches

    def rank_batches(self) -> list[np.ndarray]:
        batches = self._all_batches()
        if self.world_size > 1:
            if self.even:
                batches = batches[: len(batches) - len(batches) % self.world_size]
            batches = batches[self.rank :: self.world_size]
        return batches

    def iter_arrays(self):
        yield from self.rank_batches()

    def __iter__(self):
        for b in self.rank_batches():
            yield b.tolist()

    def __len__(self) -> int:
        ds = self.dataset
        n = 0
        for size in self.unit_sizes:
            c = ds.unit(size).num_samples
            n += c // self.batch_size if self.drop_last else -(-c // self.batch_size)
        if self.world_size > 1:
            if self.even:
                return n // self.world_size
            return len(range(self.rank, n, self.world_size))
        return n
