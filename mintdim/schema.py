"""The config's JSON Schema (workflow/schemas/config.schema.yaml), reported as MintDim errors.

config.resolve() runs first and gives the precise spec messages; the schema
is the declared contract and a safety net: any violation it still finds is
reported with the error class of the block it is in.
"""

from __future__ import annotations

import functools

from . import errors as E
from .paths import schema_file


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema  # here: every workflow job imports this module, only pre-flight validates
    import yaml

    with open(schema_file(), encoding="utf-8") as f:
        schema = yaml.safe_load(f)
    return jsonschema.Draft202012Validator(schema)


def validate(raw: dict) -> None:
    errs = sorted(_validator().iter_errors(raw), key=lambda e: list(map(str, e.absolute_path)))
    if not errs:
        return
    err = errs[0]
    where = ".".join(str(p) for p in err.absolute_path) or "config"
    en, vi = f"{where}: {err.message}", f"{where}: {err.message}"
    block = err.absolute_path[0] if err.absolute_path else None
    sub = err.absolute_path[1] if len(err.absolute_path) > 1 else None
    if block == "tokenizer":
        raise E.TokenizerValidationError.config(en, vi)
    if block == "units":
        raise E.UnitValidationError.make(en, vi)
    if block == "output" and sub == "samples_per_shard":
        raise E.SamplesPerShardError.make(en, vi)
    if block == "output":
        raise E.OutputValidationError.invalid(en, vi)
    if block == "source" and sub == "fields":
        raise E.FieldMappingError.invalid(en, vi)
    if block == "source" and sub == "templates":
        raise E.TemplateMappingError.invalid(en, vi)
    raise E.PipelineValidationError.invalid(en, vi)
