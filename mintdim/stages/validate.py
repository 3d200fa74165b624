"""The validate stage: the build's pre-flight result and what each output is built from, in validated.json
for every later stage (read_validated)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from ..config import BuildConfig, resolve
from ..formats import records
from .preflight import checked, preflight  # noqa: F401  (preflight: the stage's check)
from .to_build import input_digests
from .tokenizer_facts import TokenizerMeta


def validated_record(build: BuildConfig, metas: dict[str, TokenizerMeta]) -> dict:
    return {
        "build_id": build.build_id,
        "config": build.raw,
        "tokenizers": {k: asdict(v) for k, v in metas.items()},
        # what each output is built from, as the build starts: recorded with the finished output
        "inputs": {str(o.index): input_digests(build, o) for o in build.outputs},
    }


def built_from(path: str, out_index: int) -> dict:
    """What validated.json recorded an output is built from (its inputs, the config), for its record."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {"inputs": data.get("inputs", {}).get(str(out_index)), "config": data.get("config")}


def read_validated(path: str) -> tuple[BuildConfig, dict[str, TokenizerMeta]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    build = resolve(data["config"], trusted=True)  # written after pre-flight passed
    metas = {k: TokenizerMeta(**v) for k, v in data["tokenizers"].items()}
    return build, metas


def run(raw: dict, out_path: str) -> None:
    """The validate job: the build's pre-flight, as recorded by the launcher or Snakemake's process, or run
    again when the config or an input changed since (preflight.checked); the outputs left to the run (the
    Snakefile checked them; a forced or replacing run may find them finished); what they are built from."""
    build, metas = checked(raw, "the validate job")
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    records.atomic_write_text(
        out_path, json.dumps(validated_record(build, metas), indent=1, ensure_ascii=False)
    )
