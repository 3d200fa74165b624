"""A catalogue entry and a word in both languages (the types the tables are made of)."""

from __future__ import annotations

from typing import NamedTuple


class Both(NamedTuple):
    """A field whose value depends on the language: the English and the Vietnamese words."""

    en: str
    vi: str


class Msg(NamedTuple):
    """One catalogue entry (mintdim/catalogue/): `fields` names the arguments in call order (space
    separated; `Class.key(*args, **kw)` binds them; one not given is None), `en` and `vi` are `str.format`
    templates over those fields. `base` names the entry of the same class whose `{problem}` this text
    fills (e.g. "invalid": "Invalid pipeline configuration.\n\nProblem: {problem}").

    Besides `{x:bullets}`, `{x:comma}`, `{x:space}` and `{x:json}`, a template may hold optional parts:
    `{x:?key}` is the entry `key` (with the same fields) when field x has a value (not None, False or
    empty), else nothing. An entry `key@x` is a variant of `key`, used instead when field x has a value
    (`key@row`: when the line is a Row of a Parquet file or a `datasets` directory)."""

    fields: str
    en: str
    vi: str
    base: str = ""
