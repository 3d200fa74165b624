"""The kinds of input a build reads, behind one small interface: a source of records, each at a
location (a JSONL line, or a row of a Parquet file or `datasets` directory).

kind_of(path)         jsonl (.jsonl, .jsonl.gz, .jsonl.zst), parquet (.parquet), datasets (a directory
                      written by Dataset.save_to_disk); accepted(path): one of them (pre-flight
                      refuses any other name)
label, files_of, size_of  the kind as messages name it; the files that hold an input's content; their bytes
chunk_bounds(...)     (start, end) of each tokenize job: byte ranges of a JSONL file, ranges of
                      units (row groups of a Parquet file, record batches of a datasets directory)
                      of the others; the workflow passes them as --start/--end either way
open_chunk(...)       a chunk's reader. Iterating it gives (local, raw); parse(raw, line) is the
                      record (a dict; JSONL parses here, `line` for its errors); location(local)
                      the 1-based line, or row (errors.Row, so errors say Row); after iterating,
                      `span` is what the chunk covered (line ends, or rows), which the plan adds
                      up into line numbers; progress(bytes, samples) is (done, total) for the log
check(...)            pre-flight: the input reads and (Arrow kinds) its columns fit the config;
                      whether it holds a sample when asked
open_whole(...)       the reader of a whole input (verify --source)
records(...)          (location, record) of a whole input, in order (inspect)
Only the Arrow kinds import pyarrow (the `arrow` extra).
"""

from __future__ import annotations

import os

from .. import errors as E
from . import jsonl

JSONL, PARQUET, DATASETS = "jsonl", "parquet", "datasets"


def kind_of(path: str) -> str:
    if os.path.isdir(path):
        return DATASETS
    if path.lower().endswith(".parquet"):
        return PARQUET
    return JSONL


# the file names MintDim reads (case aside); any other is refused in pre-flight (stages/preflight.py)
ACCEPTED = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")


def accepted(path: str) -> bool:
    """A directory (a datasets directory: pre-flight checks it), or a file of an ACCEPTED name."""
    return os.path.isdir(path) or path.lower().endswith(ACCEPTED)


def shape_of(path: str) -> str | None:
    """What a file of another name holds, from its first character: "array" (a JSON array: `[`),
    "lines" (a JSON object: `{`, JSON Lines most likely), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).removeprefix(jsonl.BOM).lstrip(b" \t\r\n")
    except OSError:
        return None
    return {b"[": "array", b"{": "lines"}.get(head[:1])


def label(path: str) -> str:
    """The input kind as messages name it."""
    return {JSONL: "JSONL", PARQUET: "Parquet", DATASETS: "datasets"}[kind_of(path)]


def files_of(path: str) -> list[str]:
    """The files that hold an input's content: the file, or a datasets directory's state.json and the Arrow
    files it lists (what `already built` compares: stages/to_build.py input_digests)."""
    if kind_of(path) != DATASETS:
        return [path]
    from .hfdatasets import STATE, DatasetsSource

    try:
        return [os.path.join(path, STATE)] + DatasetsSource(path, path).files()
    except (E.MintDimError, OSError, ValueError):  # an unreadable state.json: its digest says it changed
        return [os.path.join(path, STATE)]


def size_of(path: str) -> int:
    """Bytes of an input on disk (a datasets directory: its files'), for the jobs' memory and grouping."""
    total = 0
    for p in files_of(path):
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total


def exists(path: str) -> bool:
    """The input is there (a file, or for a datasets directory a directory)."""
    return os.path.isdir(path) or os.path.isfile(path)


def arrow_source(path: str, display: str):
    """The Parquet file or datasets directory at `path` as an Arrow source (units, schema, batches)."""
    if kind_of(path) == PARQUET:
        from .parquet import ParquetSource

        return ParquetSource(path, display)
    from .hfdatasets import DatasetsSource

    return DatasetsSource(path, display)


def chunk_bounds(
    path: str, chunk_mb: float, parallel: int = 1, spread: bool = False
) -> list[tuple[int, int]]:
    """The tokenize jobs' (start, end): see the module documentation. Output never depends on them."""
    if kind_of(path) == JSONL:
        return jsonl.chunk_bounds(path, chunk_mb, parallel, spread)
    from . import arrow

    units = arrow_source(path, path).units()
    return arrow.unit_ranges([size for _rows, size in units], chunk_mb, parallel, spread, jsonl.MIN_SPLIT_MB)


def open_chunk(path: str, start: int, end: int, display: str, fields=(), chat: dict | None = None):
    if kind_of(path) == JSONL:
        return jsonl.ChunkReader(path, start, end, display)
    from . import arrow

    source = arrow_source(path, display)
    columns = arrow.columns_of(list(fields), chat, list(source.schema().names))
    return arrow.ArrowChunkReader(source, start, end, display, columns)


def check(path: str, display: str, fields=(), chat: dict | None = None, count: bool = False) -> bool | None:
    """Pre-flight of one input. Arrow kinds: the footer or state.json and Arrow files read, the
    declared columns are there with their types (errors name Row 1), no empty row group. Returns
    whether the input holds a sample: always for Arrow kinds (their metadata says), for JSONL only
    when `count` (it reads up to the first non-blank byte), else None."""
    if kind_of(path) == JSONL:
        return jsonl.has_sample(path, display) if count else None
    from . import arrow

    source = arrow_source(path, display)
    rows = source.check()
    if rows:
        arrow.check_columns(display, source.KIND, source.schema(), list(fields), chat)
    return rows > 0


def open_whole(path: str, display: str, fields=(), chat: dict | None = None):
    """The reader of a whole input (one chunk of all of it)."""
    end = os.path.getsize(path) if kind_of(path) == JSONL else len(arrow_source(path, display).units())
    return open_chunk(path, 0, end, display, fields, chat)


def records(path: str, display: str, fields=(), chat: dict | None = None):
    """(location, record) of every sample of a whole input, in order (data errors raise, as in a build)."""
    reader = open_whole(path, display, fields, chat)
    for local, raw in reader:
        where = reader.location(local)
        yield where, reader.parse(raw, where)
