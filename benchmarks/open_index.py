#!/usr/bin/env python3
"""Opening an output and reading its first sample, against the number of samples.

    python benchmarks/open_index.py                          # 10,000 and 1,000,000 samples, 5 rounds each
    python benchmarks/open_index.py --samples 10000 244892 1000000 --rounds 3 --jsonl

Makes a synthetic output of each size in a temporary directory (removed at the end): lengths drawn
lognormal (mu 5.3, sigma 1.1, plus 1; seed 0, ShareGPT pairs' shape) into unit sizes 128, 256, 512
and 1024 (longer samples: units.overflow truncate), two source files, 8,192 records per shard.
manifest.json and stats.json are written with the formats' JSON writer; sample_index.jsonl and
sample_index.idx with the build's own writers (formats/output.write_sample_index,
formats/sample_columns.write_built, given the arrays the aggregate stage gives them). The shards
are sparse files of the exact size (records x unit size x 2 bytes; their tokens read as pad 0):
a real build of 1,000,000 samples is minutes of tokenizing that the measure does not need.

Each round runs in a fresh process: `import mintdim` and `mintdim.open` resolved first (numpy and the
reader imported, as in any training job: not measured), then the wall time of
`ds = mintdim.open(OUT); ds.tokens(0)`, and the process's peak RSS (VmHWM) after it, with its RSS
after the import for reference. `--jsonl` also measures the same output without sample_index.idx
(an output of an earlier MintDim: the reader parses sample_index.jsonl). Prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [128, 256, 512, 1024]
SPS = 8192
FILES = ["data/pairs_a.jsonl", "data/pairs_b.jsonl"]


class _Quiet:
    def update(self, *a, **k):
        return False


def make_output(out: str, n: int) -> None:
    """A finished output of n samples as described in the module documentation."""
    import numpy as np

    sys.path.insert(0, ROOT)
    from mintdim.formats import output as fmt
    from mintdim.formats import sample_columns, shards

    rng = np.random.default_rng(0)
    whole = np.round(rng.lognormal(5.3, 1.1, n)).astype(np.int64) + 1
    kept = np.minimum(whole, SIZES[-1])
    status = (whole > SIZES[-1]).astype(np.uint8) * 2  # truncated
    units = np.searchsorted(np.asarray(SIZES), kept)
    rows = np.zeros(n, dtype=np.int64)
    counts = np.bincount(units, minlength=len(SIZES))
    for u in range(len(SIZES)):
        members = np.flatnonzero(units == u)
        rows[members] = np.arange(len(members))
    file_ids = (np.arange(n) >= n // 2).astype(np.int64)
    lines = np.where(file_ids == 0, np.arange(n) + 1, np.arange(n) - n // 2 + 1)
    hexes = rng.integers(0, 256, 32 * n, dtype=np.uint8).tobytes().hex()
    os.makedirs(out)
    fmt.write_sample_index(
        os.path.join(out, fmt.SAMPLE_INDEX), hexes, kept, SIZES, units, rows, SPS, file_ids, FILES,
        lines, None, _Quiet(), overflow=(status, whole) if status.any() else None,
    )  # fmt: skip
    # the fields of an intermediate.Plan the index writer reads (unit sizes, no take)
    plan = types.SimpleNamespace(
        lengths=whole, rows=rows, files=file_ids, lines=lines, units=units, samples_per_shard=SPS,
        take=None, packing=None,
    )  # fmt: skip
    sample_columns.write_built(out, plan, FILES, kept, status if status.any() else None)
    for u, size in enumerate(SIZES):
        udir = os.path.join(out, shards.unit_dir(size))
        os.makedirs(udir)
        for k in range(-(-int(counts[u]) // SPS)):
            records = min(SPS, int(counts[u]) - k * SPS)
            with open(os.path.join(udir, shards.shard_name(k)), "wb") as f:
                f.truncate(records * size * 2)  # sparse: the exact size, no bytes written
    dist = {str(s): int(c) for s, c in zip(SIZES, counts)}
    fmt.write_json(os.path.join(out, fmt.MANIFEST), _manifest())
    fmt.write_json(
        os.path.join(out, fmt.STATS),
        {"total_samples": n, "total_tokens": int(kept.sum()), "unit_distribution": dist},
    )


def _manifest() -> dict:
    return {
        "pipeline": "unit-build",
        "tokenizer": {"type": "hf_json", "path": "tokenizer.json", "vocab_size": 30522, "unk_id": 100,
                      "pad_id": 0},
        "token_storage": {"dtype": "uint16", "bytes_per_token": 2, "byte_order": "little"},
        "units": {"sizes": SIZES, "build_batch": 256, "overflow": "truncate"},
        "source": {"files": FILES, "fields": [["prompt", "response"]] * 2,
                   "templates": ["{prompt}\n{response}"] * 2},
        "output": {"samples_per_shard": SPS},
        "token_dtype": "uint16",
        "hash": {"algorithm": "sha256"},
    }  # fmt: skip


def _one(out: str) -> dict:
    """In a fresh process: import, then open the output and read sample 0."""
    import warnings

    sys.path.insert(0, ROOT)
    import mintdim
    from mintdim.progress import peak_rss_mb

    open_output = mintdim.open  # imports numpy and the reader: a training job's import, not the opening
    base = peak_rss_mb()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an output without sample_index.idx says so
        ds = open_output(out)
        first = ds.tokens(0)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_mb": peak_rss_mb(), "import_rss_mb": base, "tokens": len(first)}


def _without_idx(out: str, dest: str) -> None:
    """The same output without sample_index.idx (hard links: no copy)."""
    for base, _dirs, files in os.walk(out):
        rel = os.path.relpath(base, out)
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
        for name in files:
            if name != "sample_index.idx":
                os.link(os.path.join(base, name), os.path.join(dest, rel, name))


def _measure(out: str, rounds: int) -> dict:
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, __file__, "--one", out], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(rounds)
    ]
    return {k: statistics.median(r[k] for r in runs) for k in ("seconds", "rss_mb", "import_rss_mb")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jsonl", action="store_true", help="also without sample_index.idx (the jsonl)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(args.one)))
        return 0
    tmp = tempfile.mkdtemp(prefix="mintdim-open-index-")
    try:
        head = f"{'samples':>10} {'index':>18} {'idx MB':>7} {'open+tokens(0)':>15} {'peak RSS':>9}"
        print(head + f" {'after import':>13}")
        for n in args.samples:
            out = os.path.join(tmp, f"out_{n}")
            t0 = time.perf_counter()
            make_output(out, n)
            print(f"({n:,} samples: output made in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
            cases = [("sample_index.idx", out)]
            if args.jsonl:
                _without_idx(out, out + "_jsonl")
                cases.append(("sample_index.jsonl", out + "_jsonl"))
            size = os.path.getsize(os.path.join(out, "sample_index.idx")) / 1e6
            for label, path in cases:
                got = _measure(path, args.rounds)
                print(
                    f"{n:>10,} {label:>18} {size:>7.1f} {got['seconds']:>14.4f}s {got['rss_mb']:>7.1f}MB "
                    f"{got['import_rss_mb']:>11.1f}MB"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
