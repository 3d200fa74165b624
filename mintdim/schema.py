"""The config's JSON Schema (workflow/schemas/config.schema.yaml): the declared contract of shapes and types.

`findings(raw)` runs the one Draft 2020-12 validator (built once per process)
and returns every violation by its place in the config; mintdim/config.py words
them with the error catalogue, in its fixed order, between its rules across
fields. Two choices of type: an integer is a Python int (YAML's `16.0` and
`true` are not), and a number is never NaN (YAML's `.nan`), as MintDim always
required.
"""

from __future__ import annotations

import functools

from . import errors as E
from .paths import schema_file


def _validator(part: str | None = None):
    """The validator of the whole config, or of one of its $defs
    (e.g. train_value); built once per process."""
    return _build(part or "")


@functools.cache
def _build(part: str):
    import jsonschema  # here: every workflow job imports this module, only a config check validates
    import yaml

    # libyaml's loader where PyYAML has it: the pure-Python one takes 0.07 s CPU for this 9 KB file,
    # paid by pre-flight in every build (measured)
    with open(schema_file(), encoding="utf-8") as f:
        schema = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if part:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{part}"}
    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda _, v: isinstance(v, (int, float)) and not isinstance(v, bool) and v == v,
        }
    )
    return jsonschema.validators.extend(base, type_checker=types)(schema)


class Findings:
    """The schema's violations of one config. A violation is a jsonschema ValidationError: its keyword
    is `.validator`, the config's value there `.instance`, the failing (sub)schema `.schema`."""

    def __init__(self, errors=()):
        self.errors = [(tuple(e.absolute_path), e) for e in errors]

    def __bool__(self) -> bool:
        return bool(self.errors)

    def at(self, *path, keyword: str | None = None) -> list:
        """Violations of the value at exactly this path (optionally: of this keyword)."""
        return [e for p, e in self.errors if p == path and keyword in (None, e.validator)]

    def under(self, *path) -> list:
        """Violations of the value at this path or inside it."""
        return [e for p, e in self.errors if p[: len(path)] == path]

    def first(self):
        """The violation listed first by path (what the schema alone reports)."""
        return min(self.errors, key=lambda pe: list(map(str, pe[0])))[1]


NONE = Findings()


def findings(raw, part: str | None = None) -> Findings:
    return Findings(_validator(part).iter_errors(raw))


def unworded(found: Findings) -> E.MintDimError:
    """A violation no named problem words: jsonschema's text, with the error class of its block."""
    err = found.first()
    return E.schema_violation(list(err.absolute_path), err.message)
