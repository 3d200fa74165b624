"""Train stage (tokenizer.train_bpe): one BPE tokenizer trained on the rendered samples of its files.

Runs before validate. A model MintDim already trained into `out` from the same
files and options is reused; otherwise the model is trained into the build's
work directory and moved into `out` (new or empty). The marker it writes is the
job's Snakemake output; the validate job then loads the model and runs the
tokenizer checks (special tokens, dtype, tier-1 template literals) on it.
"""

from __future__ import annotations

import json
import os

from ..config import resolve
from ..formats.records import atomic_write_text
from ..tokenizers import training
from ..tokenizers.kinds import use_threads


def run(raw: dict, index: int, marker_path: str, log=print, threads: int = 1) -> dict:
    use_threads(threads)
    build = resolve(raw)
    group = training.groups(build)[index]
    if training.state(build, group) == "ready":
        log(
            f"[unit-build] train: reusing the tokenizer in {group.out} (trained from the same files and "
            "options)"
        )
        record = training.read_record(group.out_abs)
    else:
        staging = os.path.join(os.path.dirname(os.path.abspath(marker_path)), f"t{index}.model")
        record = training.train_group(build, group, staging, log=log)
        training.install(staging, group.out_abs)
    os.makedirs(os.path.dirname(os.path.abspath(marker_path)), exist_ok=True)
    atomic_write_text(
        marker_path, json.dumps({"out": group.out, "reference": record.get("reference")}, ensure_ascii=False)
    )
    return record
