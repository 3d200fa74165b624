"""source.on_bad_record: which errors are a record's own (a bad record), the one-line reason a skipped
record is listed with, and the errors that stop a build for its bad records (their texts:
mintdim/catalogue/output.py). The tokenize stage finds them; the plan stage, which sees every chunk,
decides."""

from __future__ import annotations

from .. import errors as E
from ..catalogue.output import LINE_LABELS

BAD_SHOWN = 10  # bad records listed by file:line when a file's bad records stop the build
BAD_REASONS_SHOWN = 5  # the most frequent reasons listed when a file holds more than max_skipped
# the classes of a record's own data errors (source.on_bad_record: skip leaves such a record out);
# ChatTemplateError.unlocated is the template's (it rewrites a trained message), never a record's
BAD_RECORD_CLASSES = (
    "SourceParseError",
    "SampleSchemaError",
    "TemplateFieldMismatchError",
    "ChatTemplateError",
)
_REASON_LABELS = ("Reason: ", "Problem: ", "Template message: ")
_PLACE_LABELS = ("File: ", "Line: ", "Row: ", "Message: ")


def is_bad_record(err: E.MintDimError) -> bool:
    """A record's own data error (source.on_bad_record), not the config's, the tokenizer's or the file's."""
    return err.kind in BAD_RECORD_CLASSES and not getattr(err, "not_a_record", False)


def reason_of(err: E.MintDimError) -> str:
    """One line saying what is wrong with a record (skipped_index.jsonl `reason`): the Reason, Problem or
    Template message of its English text; without one, its other parts but the place (file, line)."""
    parts = err.en.split("\n\n")
    found = [p[len(label) :] for p in parts for label in _REASON_LABELS if p.startswith(label)]
    if not found:
        found = ["; ".join(p for p in parts if not p.startswith(_PLACE_LABELS))]
    return " ".join(found[0].split())


def relocated(data: dict, line: int) -> dict:
    """An error's to_dict() told at another line of its file: its Line (Row) paragraph in both languages
    and its `line`. A tokenize job tells a bad record's line within its chunk; the plan knows the real one."""
    old = data["line"]
    out = dict(data, line=line)
    for key, labels in LINE_LABELS.items():
        for label in labels:
            out[key] = out[key].replace(f"\n\n{label}: {old}\n\n", f"\n\n{label}: {line}\n\n", 1)
    return out


def _listed(bad: list[tuple[str, int, str]]) -> list[str]:
    return [f"{path}:{line} ({kind})" for path, line, kind in bad[:BAD_SHOWN]]


def bad_records_counted(
    first: dict, bad: list[tuple[str, int, str]], count: int, path: str, lang: str = "en"
) -> E.MintDimError:
    """on_bad_record: error (the default): the first bad record's error, then how many the file holds, the
    first BAD_SHOWN by file:line with their class, and the way to build without them. first: that error's
    to_dict(); bad: (path, line, class) in input order."""
    err = E.MintDimError.from_dict(first, lang)
    return E.extended(
        err,
        "bad_counted",
        path=path,
        many=err.texts("bad_record" if count == 1 else "bad_records", count=count),
        first=err.texts("bad_first", n=BAD_SHOWN) if count > BAD_SHOWN else "",
        bad=_listed(bad),
    )


def too_many_bad_records(
    first: dict,
    bad: list[tuple[str, int, str]],
    reasons: list[tuple[int, str, str]],
    count: int,
    records: int,
    limit,
    path: str,
    lang: str = "en",
) -> E.MintDimError:
    """on_bad_record: skip, and a file holds more bad records than max_skipped allows (or nothing else):
    the first bad record's error, the count, the most frequent reasons ((count, class, reason)), the
    first BAD_SHOWN, and what to change."""
    err = E.MintDimError.from_dict(first, lang)
    top = [f"{n} × {kind}: {reason}" for n, kind, reason in reasons[:BAD_REASONS_SHOWN]]
    if count == records:
        return E.extended(err, "bad_all", path=path, records=records, reasons=top)
    allowed = err.texts(
        "bad_fraction" if isinstance(limit, float) else "bad_count", limit=limit, records=records
    )
    return E.extended(
        err,
        "bad_too_many",
        path=path,
        count=count,
        records=records,
        allowed=allowed,
        reasons=top,
        shown=min(count, BAD_SHOWN),
        bad=_listed(bad),
    )
