"""`suggest-units`: the unit sizes that waste least padding for a dataset's exact token lengths.

Lengths come from a finished output (its sample_index.jsonl) or from a config,
tokenized by the build's own tokenize stage (no second implementation of
parsing, rendering or encoding). The optimiser is mintdim.units.padding (exact).
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from dataclasses import dataclass

import numpy as np

from .. import errors as E
from ..formats import output as fmt
from ..sources import inputs
from ..units import padding


@dataclass
class OutputSuggestion:
    output: str
    samples: int
    distinct_lengths: int
    current_sizes: list[int] | None
    current: padding.PaddingReport | None
    suggestion: padding.Suggestion
    packed: list = (
        None  # per row length: the packed layout's figures on the same lengths (mintdim.units.packing)
    )

    def as_dict(self) -> dict:
        s = self.suggestion
        return {
            "output": self.output,
            "samples": self.samples,
            "distinct_lengths": self.distinct_lengths,
            "current_sizes": self.current_sizes,
            "current_padding_ratio": self.current.padding_ratio if self.current else None,
            "suggested_sizes": s.sizes,
            "suggested_padding_ratio": s.report.padding_ratio,
            "suggested_slots": s.report.total_slots,
            "cost": s.cost,
            "objective": s.objective,
            "note": s.note,
            "padding_by_k": {str(k): v for k, v in s.by_k.items()},
            "packed": self.packed or [],
        }


def lengths_from_output(out_dir: str) -> tuple[np.ndarray, list[int] | None]:
    """Token counts from the output's sample index (a sample units.overflow cut: its whole length), and
    the output's unit sizes (None for packed rows)."""
    from .reader import open as open_dataset

    if not os.path.isfile(os.path.join(out_dir, fmt.SAMPLE_INDEX)):
        raise E.MintDimFileNotFoundError.make("output", os.path.join(out_dir, fmt.SAMPLE_INDEX))
    ds = open_dataset(out_dir)
    lengths = np.asarray(ds.sample_columns.source_token_count, dtype=np.int64)
    return lengths, None if ds.manifest["units"].get("layout") == "packed" else list(ds.sizes)


def lengths_from_config(
    raw: dict, cores: int | None = None
) -> list[tuple[str, np.ndarray, list[int] | None]]:
    """Tokenize every input of a config with the build's tokenize stage; lengths per output."""
    from ..formats import intermediate as inter
    from ..stages.plan import bad_of_chunk, check_bad_records
    from ..stages.preflight import preflight
    from ..stages.tokenize import tokenize_chunk

    auto = copy.deepcopy(raw)
    units = auto.setdefault("units", {}) if isinstance(auto, dict) else {}
    declared = units.get("sizes") if isinstance(units, dict) else None
    if isinstance(units, dict):
        for key in ("k", "multiple_of", "min_size", "max_size", "cost", "pack", "overflow"):
            units.pop(key, None)
        units.update(sizes="auto", k=1)
    build, metas = preflight(auto, check_outputs=False)
    threads = max(1, cores or os.cpu_count() or 1)
    os.makedirs(build.work_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suggest-", dir=build.work_dir)
    try:
        per_output: dict[int, list[np.ndarray]] = {o.index: [] for o in build.outputs}
        for f in build.files:
            parts, bad, line = [], {}, 1
            for k, bounds in enumerate(inputs.chunk_bounds(f.abspath, build.chunk_mb)):
                d = os.path.join(tmp, f"f{f.index}_c{k}")
                tokenize_chunk(
                    build, metas, f.index, k, d, threads=threads, log=lambda *a: None, bounds=bounds
                )
                meta = inter.ChunkMeta.read(d)
                parts.append(meta.lengths)
                bad_of_chunk(bad, meta, line)  # source.on_bad_record, as the build's plan applies it
                line += meta.newlines
                shutil.rmtree(d)
            lengths = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            check_bad_records(build, f, bad.get(f.index), len(lengths), log=lambda *a: None)
            if f.source.take is not None:  # source.take: the lengths of the samples the build would hold
                from ..sources import take

                lengths = lengths[take.select(f.source.take, len(lengths), f.source.take_seed, f.index)[0]]
            per_output[f.output].append(lengths)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = []
    for o in build.outputs:
        sizes = None
        if isinstance(declared, list) and declared:
            sizes = declared[0] if len(declared) == 1 else declared[o.files[0]]
        parts = per_output[o.index]
        result.append(
            (o.dir, np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64), sizes)
        )
    return result


def suggest_units(
    source,
    *,
    k: int | None = None,
    multiple_of: int = 1,
    min_size: int | None = None,
    max_size: int | None = None,
    max_padding: float | None = None,
    cost: str = "linear",
    cores: int | None = None,
    pack=(4096, 8192),
) -> list[OutputSuggestion]:
    """source: an output directory, a YAML config path, or a config dict. One answer per output."""
    if isinstance(source, dict):
        groups = lengths_from_config(source, cores)
    elif os.path.isdir(source):
        lengths, sizes = lengths_from_output(source)
        groups = [(source, lengths, sizes)]
    else:
        from ..config import load_config_file

        groups = lengths_from_config(load_config_file(source), cores)
    answers = []
    for name, lengths, sizes in groups:
        if not len(lengths):  # an output of no sample (source.allow_empty): nothing to suggest from
            raise E.UsageError.no_samples(name)
        if k is not None and k < 1:
            raise E.UsageError.positive("-k", str(k))
        values, counts = padding.histogram(lengths)
        try:
            found = padding.suggest(
                values=values,
                counts=counts,
                k=k,
                multiple_of=multiple_of,
                min_size=min_size,
                max_size=max_size,
                max_padding=max_padding,
                cost=cost,
            )
        except padding.AboveMax as exc:
            raise E.UsageError.above_max(exc.max_size, exc.longest, exc.needed) from None
        current = None
        if sizes and (not len(values) or values[-1] <= sizes[-1]):
            current = padding.measure(values, counts, sizes)
        answers.append(
            OutputSuggestion(
                name,
                int(counts.sum()),
                int(len(values)),
                sizes,
                current,
                found,
                [packed_figures(lengths, row) for row in pack or ()],
            )
        )
    return answers


def packed_figures(lengths: np.ndarray, row_length: int) -> dict:
    """The packed layout (units.pack) on these lengths: rows, padding, and the samples longer than
    a row (left out here, as overflow: drop would)."""
    from ..units import packing

    p = packing.plan(lengths, row_length, "drop")
    over = int(np.count_nonzero(p.status == packing.DROPPED))
    return {
        "row_length": int(row_length),
        "rows": p.n_rows,
        "lower_bound_rows": p.lower_bound,
        "total_slots": p.slots,
        "pad_tokens": p.slots - p.tokens,
        "padding_ratio": 1 - p.efficiency if p.slots else 0.0,
        "efficiency": p.efficiency,
        "longer_than_row": over,
    }
