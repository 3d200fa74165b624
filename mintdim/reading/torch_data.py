"""PyTorch adapter for a MintDim output (imports torch: install the `torch` extra).

    ds = mintdim.open("artifacts/gsm8k_units")
    loader = ds.torch_loader(32, seed=0, rank=rank, world_size=world)   # DataLoader
    for epoch in range(3):
        loader.batch_sampler.set_epoch(epoch)
        for batch in loader:
            batch["input_ids"]        # LongTensor (B, unit_size), padded with pad_id
            batch["attention_mask"]   # BoolTensor (B, unit_size)
            batch["lengths"], batch["sample_ids"]

Or the parts: `TokenDataset` (a map-style Dataset indexed by sample_id) with
`TorchBucketSampler` as the DataLoader's `batch_sampler` and `collate` as its collate_fn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler
from torch.utils.data import Dataset as _TorchDataset
from torch.utils.data._utils.collate import default_collate

if TYPE_CHECKING:  # annotations only: the readers import this module (lazily), never the reverse
    from .base import Batch, BucketBatchSampler


def _batch_dict(batch: Batch, dtype) -> dict:
    ids = torch.from_numpy(batch.tokens.astype(np.int64, copy=True))
    out = {
        "input_ids": ids if dtype in (None, torch.int64) else ids.to(dtype),
        "attention_mask": torch.from_numpy(batch.mask),
        "lengths": torch.from_numpy(batch.lengths.astype(np.int64)),
        "sample_ids": torch.from_numpy(batch.sample_ids.astype(np.int64)),
    }
    if batch.loss_mask is not None:  # source.train_on: HF-style labels (-100: no loss) and the 0/1 mask
        mask = torch.from_numpy(batch.loss_mask)
        out["loss_mask"] = mask.to(torch.int64)
        out["labels"] = torch.where(mask, ids, torch.full_like(ids, -100))
    return out


class TokenDataset(_TorchDataset):
    """Map-style dataset over a reader `Dataset` (mintdim/reading/reader.py): item `sample_id` is its
    padded record and length.

    `dataset[i]` -> {"input_ids": (unit_size,), "attention_mask", "length", "sample_id"}.
    With a bucketed batch sampler the DataLoader fetches a whole batch through
    `__getitems__` (one gather per shard) and gets one dict of stacked tensors.
    """

    def __init__(self, dataset, dtype=None):
        self.dataset = dataset
        self.dtype = dtype

    def __len__(self) -> int:
        return self.dataset.num_samples

    def __getitem__(self, sample_id: int) -> dict:
        d = _batch_dict(self.dataset.gather([int(sample_id)]), self.dtype)
        item = {
            "input_ids": d["input_ids"][0],
            "attention_mask": d["attention_mask"][0],
            "length": d["lengths"][0],
            "sample_id": d["sample_ids"][0],
        }
        for key in ("labels", "loss_mask"):
            if key in d:
                item[key] = d[key][0]
        return item

    def __getitems__(self, sample_ids):
        sizes = self.dataset.unit_sizes[np.asarray(sample_ids, dtype=np.int64)]
        if len(sizes) and np.all(sizes == sizes[0]):
            return _batch_dict(self.dataset.gather(sample_ids), self.dtype)
        return [self[i] for i in sample_ids]  # mixed units: items (use TorchBucketSampler to batch by unit)


def collate(data):
    """Pass a batch fetched by `__getitems__` through; stack a list of items otherwise."""
    if isinstance(data, dict):
        return data
    return default_collate(data)


class TorchBucketSampler(Sampler):
    """A torch `Sampler` of batches (lists of sample ids, one unit each); see BucketBatchSampler."""

    def __init__(self, sampler: BucketBatchSampler):
        super().__init__()
        self.sampler = sampler

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def make_loader(dataset, batch_size: int, *, num_workers: int = 0, dtype=None, **sampler_kw) -> DataLoader:
    return DataLoader(
        TokenDataset(dataset, dtype=dtype),
        batch_sampler=TorchBucketSampler(dataset.sampler(batch_size, **sampler_kw)),
        collate_fn=collate,
        num_workers=num_workers,
    )


# --- packed rows (units.pack) ---------------------------------------------------------------------


def packed_batch_dict(batch) -> dict:
    """A PackedBatch as HF DataCollatorWithFlattening(return_flash_attn_kwargs=True) returns a batch:
    input_ids, position_ids, labels (1, T) without padding (labels -100 on the first token of every
    sample and on untrained tokens), cu_seq_lens_q/k (S + 1,) int32, max_length_q/k; plus
    sample_ids (S,)."""
    flat = batch.flat()
    cu = torch.from_numpy(flat["cu_seqlens"].astype(np.int32))
    return {
        "input_ids": torch.from_numpy(flat["input_ids"])[None, :],
        "position_ids": torch.from_numpy(flat["position_ids"])[None, :],
        "labels": torch.from_numpy(flat["labels"])[None, :],
        "cu_seq_lens_q": cu,
        "cu_seq_lens_k": cu.clone(),
        "max_length_q": int(flat["max_seqlen"]),
        "max_length_k": int(flat["max_seqlen"]),
        "sample_ids": torch.from_numpy(flat["sample_ids"]),
    }


class PackedRowDataset(_TorchDataset):
    """Map-style over row ids; a batch sampler's list of rows comes back as one flattened batch."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return self.dataset.num_rows

    def __getitem__(self, row: int) -> dict:
        return packed_batch_dict(self.dataset.gather_rows([int(row)]))

    def __getitems__(self, rows):
        return packed_batch_dict(self.dataset.gather_rows(rows))


def make_packed_loader(dataset, batch_size: int, *, num_workers: int = 0, **sampler_kw) -> DataLoader:
    return DataLoader(
        PackedRowDataset(dataset),
        batch_sampler=TorchBucketSampler(dataset.sampler(batch_size, **sampler_kw)),
        collate_fn=collate,
        num_workers=num_workers,
    )
