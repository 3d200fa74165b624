"""The write jobs' shard summaries (written/o<out>_p<part>.json), checked against the plan's stats.

Aggregate derives each unit's shard count from the plan (beside the write jobs, for bucketed
units); finalize checks that the shards the write jobs wrote are those counted.
"""

from __future__ import annotations

import json


def shard_counts(written_paths: list[str]) -> dict[str, int]:
    """Shards per unit size, as the write jobs report them (per-job or per-unit summaries)."""
    counts = {}
    for p in written_paths:
        with open(p, encoding="utf-8") as f:
            w = json.load(f)
        for u in w.get("units", [w]):
            if u["unit"] is not None:
                counts[str(u["unit"])] = len(u["shards"])
    return counts


def check_shard_counts(stats: dict, written_paths: list[str]) -> None:
    """The shards the write jobs wrote are the ones the stats (from the plan) announce."""
    wrote = {k: v for k, v in shard_counts(written_paths).items() if v}
    if wrote != {k: v for k, v in stats["shards"].items() if v}:
        raise RuntimeError(f"shards written {wrote} differ from the plan's {stats['shards']}")
