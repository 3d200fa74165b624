"""The config's JSON Schema (workflow/schemas/config.schema.yaml): the declared contract of shapes and types.

`findings(raw)` runs the one Draft 2020-12 validator (built once per process)
and returns every violation by its place in the config. Two choices of type: an
integer is a Python int (YAML's `16.0` and `true` are not), and a number is
never NaN (YAML's `.nan`), as MintDim always required.

The schema words its violations itself, with `x-error` annotations (a keyword
validators ignore, as `errorMessage` in ajv-errors): beside a property,

    x-error: Class.key(arg, ...)            every violation at or inside this value
    x-error: {keyword: Class.key(...), _: Class.key(...)}
                                            a violation of this value by that keyword; `_`: the rest

names the catalogue's message (mintdim/errors.py, mintdim/catalogue/) and its arguments. The innermost
annotation that covers a violation words it. Arguments (`ARGS`) are computed from the violation and the
annotated value; 'text' and None are literals. mintdim/config.py says in which order the messages are reported
(`Findings.word`), between its rules across fields.
"""

from __future__ import annotations

import functools
import re
from fnmatch import fnmatchcase

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

    def __init__(self, errors=(), raw=None, document=None):
        self.errors = [(tuple(e.absolute_path), e) for e in errors]
        self.raw, self.document = raw, document

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

    def word(self, keys: str, *path) -> None:
        """Raise the message of the first violation (at or inside `path`) whose `x-error` names one of
        `keys` (space-separated Class.key patterns, e.g. `PipelineValidationError.chat_*`), in the
        validator's order (the schema's). Nothing when there is none."""
        for place, err in self.errors:
            found = place[: len(path)] == path and annotation(err, self.document)
            if found and any(fnmatchcase(found[0].split("(")[0], key) for key in keys.split()):
                raise _message(found[0], err, place[: found[1]], self.raw)


NONE = Findings()


def findings(raw, part: str | None = None) -> Findings:
    validator = _validator(part)
    return Findings(validator.iter_errors(raw), raw, validator.schema)


def annotation(err, document: dict) -> tuple[str, int] | None:
    """The `x-error` that words a violation and the depth, in the config, of the value it is beside:
    the innermost along the violation's schema path (through $refs) that covers its keyword."""
    node, depth, steps = document, 0, list(err.absolute_schema_path)[:-1]
    found = None
    while True:
        while isinstance(node, dict) and "$ref" in node and (not steps or steps[0] not in node):
            found = _covers(node, err, depth) or found
            node = _resolve(document, node["$ref"])
        found = _covers(node, err, depth) or found
        if not steps:
            return found
        step = steps.pop(0)
        if step in ("properties", "dependentSchemas"):
            depth += step == "properties"
            node = node[step][steps.pop(0)]
        elif step in ("allOf", "anyOf", "oneOf", "prefixItems"):
            node = node[step][steps.pop(0)]
        else:  # items, additionalProperties consume a place in the config; if/then/else/not, none
            depth += step in ("items", "additionalProperties")
            node = node[step]


def _covers(node, err, depth: int) -> tuple[str, int] | None:
    words = node.get("x-error") if isinstance(node, dict) else None
    if isinstance(words, dict):
        at_value = depth == len(err.absolute_path)
        words = words.get(err.validator) if at_value and err.validator in words else words.get("_")
    return (words, depth) if words else None


def _resolve(document: dict, ref: str) -> dict:
    node = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _value(raw, place: tuple):
    for part in place:
        raw = raw[part]
    return raw


def _extras(err) -> list[str]:
    """The keys an additionalProperties violation names, in the config's order."""
    return [k for k in err.instance if k not in err.schema.get("properties", {})]


def _forbidden(err, value) -> list[str]:
    """The names of the value (list items or mapping keys) that the violated `not` forbids, in the
    value's order: its enum, or the keys its `anyOf: [{required: [...]}]` names."""
    ruled = err.validator_value
    ruled = ruled.get("contains", ruled)
    names = ruled.get("enum") or [key for sub in ruled.get("anyOf", ()) for key in sub["required"]]
    return [name for name in value if name in names]


def _where(raw, place: tuple) -> str:
    """A source.chat item as the messages name it: source.chat, or source.chat[i] in a list of more."""
    items = raw["source"]["chat"]
    if len(place) > 2 and isinstance(items, list) and len(items) > 1:
        return f"source.chat[{place[2]}]"
    return "source.chat"


def did_you_mean(unknown, known) -> E.Both:
    """A paragraph "Did you mean ...?" per unknown name that has a close known one (difflib)."""
    import difflib

    hints = []
    for name in unknown:
        close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
        if close:
            hints.append(E.MintDimError.texts("did_you_mean", name=name, close=close[0]))
    return E.Both("".join(h.en for h in hints), "".join(h.vi for h in hints))


# the arguments an `x-error` may name: (violation, annotated value, its place, the config) -> value
ARGS = {
    "value": lambda err, value, place, raw: value,
    "type": lambda err, value, place, raw: type(value).__name__,
    "index": lambda err, value, place, raw: place[-1],
    "name": lambda err, value, place, raw: place[-1],
    "keys": lambda err, value, place, raw: list(value),
    "extra": lambda err, value, place, raw: _extras(err)[0],
    "extras": lambda err, value, place, raw: _extras(err),
    "extras_sorted": lambda err, value, place, raw: sorted(_extras(err)),
    "known": lambda err, value, place, raw: list(err.schema["properties"]),
    "missing": lambda err, value, place, raw: [k for k in err.validator_value if k not in value],
    "enum": lambda err, value, place, raw: list(err.validator_value),
    "forbidden": lambda err, value, place, raw: _forbidden(err, value),
    "forbidden_sorted": lambda err, value, place, raw: sorted(_forbidden(err, value)),
    "where": lambda err, value, place, raw: _where(raw, place),
    "hints": lambda err, value, place, raw: did_you_mean(sorted(_extras(err)), err.schema["properties"]),
    "hint": lambda err, value, place, raw: did_you_mean(_extras(err)[:1], err.schema["properties"]),
}
_CALL = re.compile(r"(\w+)\.(\w+)\((.*)\)")


def _message(words: str, err, place: tuple, raw) -> E.MintDimError:
    """The catalogue error an `x-error` names, its arguments computed."""
    cls, key, args = _CALL.fullmatch(words).groups()
    value = _value(raw, place)
    given = [_argument(arg, err, value, place, raw) for arg in filter(None, map(str.strip, args.split(",")))]
    return getattr(getattr(E, cls), key)(*given)


def _argument(arg: str, err, value, place: tuple, raw):
    if arg.startswith("'"):
        return arg.strip("'")
    if arg == "None":
        return None
    return ARGS[arg](err, value, place, raw)


def unworded(found: Findings) -> E.MintDimError:
    """A violation no named problem words: jsonschema's own English (in both texts), with the error class
    of the block it is in."""
    err = found.first()
    path = list(err.absolute_path)
    text = f"{'.'.join(map(str, path)) or 'config'}: {err.message}"
    block, sub = (path + [None, None])[:2]
    if block == "tokenizer":
        return E.TokenizerValidationError.config(text, text)
    if block == "units":
        return E.UnitValidationError.invalid(text, [sub])
    if block == "output":
        cls = E.SamplesPerShardError if sub == "samples_per_shard" else E.OutputValidationError
        return cls.invalid(text)
    if block == "source" and sub in ("fields", "templates"):
        return (E.FieldMappingError if sub == "fields" else E.TemplateMappingError).invalid(text)
    return E.PipelineValidationError.invalid(text)
