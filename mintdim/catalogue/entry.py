"""A catalogue entry and a word in both languages (the types the tables are made of)."""

from __future__ import annotations

from typing import NamedTuple


class Both(NamedTuple):
    """A field whose value depends on the language: the English and the Vietnamese words."""

    en: str
    vi: str


class Msg(NamedTuple):
    """One catalogue entry (mintdim/catalogue/): `fields` names the arguments in call order (space
    separated; `Class.key(*args, **kw)` binds them), `en` and `vi` are `str.format` templates over those
    fields. `base` names the entry of the same class whose `{problem}` this text fills (e.g. "invalid":
    "Invalid pipeline configuration.\n\nProblem: {problem}")."""

    fields: str
    en: str
    vi: str
    base: str = ""
