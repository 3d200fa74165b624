"""Records from Arrow data: what Parquet files (parquet.py) and `datasets` directories (hfdatasets.py) share.

Both are read with pyarrow a record batch at a time, only the columns a file's config reads, so
memory holds one batch (a Parquet row group's pages while it is decoded), never a whole table.
A *unit* is what tokenize chunks are cut from: a row group of a Parquet file, a record batch of a
`datasets` directory's Arrow files. A chunk is a range [start, end) of units. Rows count from 1
across the whole input (all its row groups, or all its Arrow files in state.json order): the
`source_line` of the indexes and the Row of the errors.

A record is the dict a JSONL line with the same data parses to: a row's columns by name. Inside a
list or struct column a null field is left out (Arrow gives every struct element every field; the
JSONL line simply did not have it), while a null column value stays a null value.
"""

from __future__ import annotations

import bisect
import itertools
import math

from .. import errors as E

BATCH_ROWS = 1024  # rows per record batch read from a Parquet row group (memory: one batch of records)
STRING_TYPES = ("string", "large_string", "string_view")


def pyarrow():
    """pyarrow, or the install hint (the `arrow` extra)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise E.MissingExtraError.make(
            "Reading Parquet files and datasets directories", "arrow", "pyarrow==26.0.1"
        ) from None
    return pa


def is_string(t) -> bool:
    """A column whose values read as Python strings (also dictionary-encoded ones: pandas categoricals)."""
    pa = pyarrow()
    return str(t) in STRING_TYPES or (pa.types.is_dictionary(t) and str(t.value_type) in STRING_TYPES)


def is_list(t) -> bool:
    pa = pyarrow()
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def is_nested(t) -> bool:
    pa = pyarrow()
    return pa.types.is_nested(t)


def _strip_nulls(value):
    """A list or struct value without null struct fields, at any depth (list elements stay)."""
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def records(batch) -> list[dict]:
    """A record batch as JSONL-shaped dicts (see the module documentation)."""
    rows = batch.to_pylist()
    nested = [f.name for f in batch.schema if is_nested(f.type)]
    for name in nested:
        for row in rows:
            value = row[name]
            if value is not None:
                row[name] = _strip_nulls(value)
    return rows


def unit_ranges(
    sizes: list[int], chunk_mb: float, parallel: int = 1, spread: bool = False, min_split_mb: float = 16
) -> list[tuple[int, int]]:
    """Ranges of whole units for tokenize jobs, as jsonl.chunk_bounds splits bytes: at most about
    `chunk_mb` per chunk, a multiple of `parallel` chunks when a file is split (`spread`: split a file
    of min_split_mb or more across the cores too), never more chunks than units, none empty."""
    count, total = len(sizes), sum(sizes)
    if count <= 1:
        return [(0, count)]
    n = max(1, math.ceil(total / (chunk_mb * 1024 * 1024)))
    if parallel > 1 and (n > 1 or (spread and total >= min_split_mb * 1024 * 1024)):
        n = math.ceil(n / parallel) * parallel
    n = min(n, count)
    cumulative = list(itertools.accumulate(sizes))
    bounds = [0]
    # the k-th cut: after the first units that hold k/n of the bytes, one unit per chunk at least
    for k in range(1, n):
        cut = bisect.bisect_left(cumulative, k * total / n) + 1
        bounds.append(max(bounds[-1] + 1, min(cut, count - (n - k))))
    bounds.append(count)
    return list(zip(bounds, bounds[1:]))


class ArrowChunkReader:
    """(local row, record) of every row of units [start, end) of one input, in order: the tokenize
    loop's reader (jsonl.ChunkReader's interface: parse, location, span, progress)."""

    def __init__(self, source, start: int, end: int, display: str, columns: list[str] | None):
        self.source, self.start, self.end = source, start, end
        self.display = display
        self.columns = columns
        self.span = 0  # rows read (all rows are samples): the plan counts the file's rows with it
        self._first_row = None

    def first_row(self) -> int:
        """1-based row of the chunk's first row: the rows of the units before it, plus one."""
        if self._first_row is None:
            self._first_row = sum(rows for rows, _size in self.source.units()[: self.start]) + 1
        return self._first_row

    def location(self, local: int) -> E.Row:
        return E.Row(self.first_row() + local, self.source.KIND)

    def parse(self, raw: dict, line) -> dict:
        return raw  # a record already: its values were checked against the schema in pre-flight

    def progress(self, processed: int, count: int) -> tuple[int, int, str]:
        """Progress counted in rows: (rows done, rows of the chunk, "rows")."""
        return count, sum(rows for rows, _size in self.source.units()[self.start : self.end]), "rows"

    def __iter__(self):
        i = 0
        batches = self.source.batches(self.start, self.end, self.columns)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except E.MintDimError:
                raise
            except Exception as exc:  # pyarrow: a damaged page or batch, from here on
                raise E.SourceParseError.unreadable_rows(
                    self.display, self.location(i), reason(exc)
                ) from None
            rows, batch = records(batch), None  # the batch's Arrow memory goes before the next one is read
            for record in rows:
                yield i, record
                i += 1
            self.span = i
            rows = None


def reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def check_columns(display: str, kind: str, schema, fields: list[str], chat: dict | None) -> None:
    """Pre-flight, from the schema alone: the declared fields are string columns; a conversation's
    messages column is a list. Row 1: every row has the column's type, the first one first."""
    names = list(schema.names)
    row = E.Row(1, kind)
    if chat is not None:
        key = chat["messages"]
        if key not in names:
            raise E.SampleSchemaError.chat_no_messages(display, row, key, names)
        found = schema.field(key).type
        if not is_list(found):
            raise E.SampleSchemaError.chat_not_list(display, row, key, str(found))
        return
    missing = [name for name in fields if name not in names]
    if missing:
        raise E.SampleSchemaError.missing(display, row, fields, missing, names)
    for name in fields:
        found = schema.field(name).type
        if not is_string(found):
            raise E.SampleSchemaError.not_string(display, row, name, str(found))


def columns_of(fields: list[str], chat: dict | None, names: list[str]) -> list[str]:
    """The columns one input's records need: the declared fields, or a conversation's keys
    (messages, and the system prompt and extras where the input has them)."""
    if chat is None:
        return list(fields)
    wanted = [chat["messages"], chat.get("system"), *(chat.get("extras") or ())]
    return [
        name
        for name in dict.fromkeys(wanted)
        if name is not None and (name in names or name == chat["messages"])
    ]
