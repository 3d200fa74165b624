"""Reading JSONL sources: byte-range chunks, line numbers, strict parsing, declared fields.

A chunk [start, end) of a plain file owns every line that begins inside it:
seek to start-1 and skip to the next newline, then take lines while they
begin before `end`. Compressed files are read whole, as one chunk.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os

import orjson

from .. import errors as E

BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"
_JSON_TYPES = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
    list: "array",
    dict: "object",
}


def compression_of(path: str) -> str | None:
    name = path.lower()  # as inputs.accepted takes the names
    if name.endswith(".gz"):
        return "gz"
    if name.endswith(".zst"):
        return "zst"
    return None


# With fewer chunks than cores in the whole build, a plain file at least this large is split
# across the cores even when it fits one chunk: two processes with one tokenizer thread each
# encode a few percent faster than one with two, and their per-sample Python work overlaps.
# Below it, one job with the cores as tokenizer threads starts faster than several.
MIN_SPLIT_MB = 16


def chunk_bounds(
    path: str, chunk_mb: float, parallel: int = 1, spread: bool = False
) -> list[tuple[int, int]]:
    """Byte ranges that tokenize jobs take: even splits of a plain file, the whole of a compressed one.

    Chunks hold at most `chunk_mb`. With `parallel` > 1 a split file gets a multiple of that many
    chunks, so the last round of tokenize jobs keeps every core busy; `spread` splits a file of
    MIN_SPLIT_MB or more across them too (the build has fewer chunks than cores otherwise).
    Output never depends on the chunking.
    """
    size = os.path.getsize(path)
    if compression_of(path) or size == 0:
        return [(0, size)]
    n = max(1, math.ceil(size / (chunk_mb * 1024 * 1024)))
    if parallel > 1 and (n > 1 or (spread and size >= MIN_SPLIT_MB * 1024 * 1024)):
        n = math.ceil(n / parallel) * parallel
    return [(k * size // n, (k + 1) * size // n) for k in range(n)]


# Pre-flight reads at most this much of a file (decompressed) to tell whether it holds no sample: an
# empty or blank file is then an error before any job starts; a longer run of white space is found by
# the plan stage, which sees every chunk's sample count.
EMPTY_SCAN_BYTES = 1 << 16


def no_samples(path: str) -> str | None:
    """Why a file surely holds no sample: "empty" (0 bytes) or "blank" (nothing but JSON white space, after
    a BOM), decided from its first EMPTY_SCAN_BYTES; None when it holds data, or when that prefix cannot
    tell (longer, or unreadable: the tokenize job reports a file it cannot read, with the line)."""
    if os.path.getsize(path) == 0:
        return "empty"
    compression = compression_of(path)
    try:
        with _open_stream(path, compression) if compression else open(path, "rb") as stream:
            head = stream.read(EMPTY_SCAN_BYTES + 1)
    except Exception:  # a corrupt stream, or zstandard not installed: decided when the file is read
        return None
    if len(head) > EMPTY_SCAN_BYTES:
        return None
    return None if head.removeprefix(BOM).strip(_WS) else "blank"


def _open_stream(path: str, compression: str):
    raw = open(path, "rb")
    if compression == "gz":
        return gzip.GzipFile(fileobj=raw)
    import zstandard

    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))


class ChunkReader:
    """Iterates (local_line_index, raw_line_bytes) over the non-blank lines a chunk owns.

    After iteration, `newlines` is the number of line ends in the owned region,
    so the plan stage can turn local indexes into file line numbers.
    """

    def __init__(self, path: str, start: int, end: int, display_path: str):
        self.path, self.start, self.end = path, start, end
        self.display = display_path
        self.compression = compression_of(path)
        self.newlines = 0
        self.bytes_read = 0

    def first_line(self) -> int:
        """1-based file line number of the chunk's first line (only needed on the error path)."""
        if self.start == 0 or self.compression:
            return 1
        count = 0
        with open(self.path, "rb") as f:
            f.seek(self.start - 1)
            f.readline()
            begin = f.tell()
            f.seek(0)
            left = begin
            while left > 0:
                block = f.read(min(left, 1 << 24))
                if not block:
                    break
                count += block.count(b"\n")
                left -= len(block)
        return count + 1

    # the interface every input kind's chunk reader has (mintdim/sources/inputs.py)
    def location(self, local: int) -> int:
        """1-based file line of the chunk's local line `local` (only needed on the error path)."""
        return self.first_line() + local

    def parse(self, raw: bytes, line: int) -> dict:
        return parse_object(raw, self.display, line)

    @property
    def span(self) -> int:
        return self.newlines

    def progress(self, processed: int, count: int) -> tuple[int, int]:
        """Progress counted in bytes: (bytes done, bytes of the chunk)."""
        return processed, self.end - self.start

    def __iter__(self):
        """(local index, line without its line end) of every non-blank line the chunk owns."""
        if self.compression:
            try:
                stream = _open_stream(self.path, self.compression)
            except OSError:
                raise E.SourceParseError.line_unreadable(self.display, 1)
            with stream:
                yield from self._scan(stream.readline, True, 0, math.inf, self.display)
            return
        # line by line: memory stays flat whatever the chunk size
        with open(self.path, "rb", buffering=1 << 20) as f:
            pos = 0
            if self.start > 0:
                f.seek(self.start - 1)
                f.readline()
                pos = f.tell()
            if pos >= self.end:
                return  # no line starts in this range (it began in the previous chunk, or the range is empty)
            yield from self._scan(f.readline, self.start == 0, pos, self.end, None)

    def _scan(self, readline, at_file_start: bool, pos: int, end, display: str | None):
        """Lines from `pos` while they start before `end`, counting line ends (blank lines too) and
        bytes; a BOM is dropped from the file's very first line. One flat loop: it runs once per
        sample. With `display` (a compressed stream), a stream that fails mid-way (corrupt, or not
        compressed at all: gzip raises an OSError) is a parse error there; a plain file's read
        error is the disk's, not the data's."""
        begin = pos
        i = 0
        try:
            while pos < end:
                try:
                    line = readline()
                except Exception:
                    if display is None:
                        raise
                    raise E.SourceParseError.line_compressed(display, i + 1) from None
                if not line:
                    return
                pos += len(line)
                if i == 0 and at_file_start and line.startswith(BOM):
                    line = line[3:]
                if line[-1:] == b"\n":
                    self.newlines += 1
                    line = line[:-1]
                if line.strip(_WS):
                    yield i, line
                i += 1
        finally:
            self.bytes_read = pos - begin


def has_sample(path: str, display: str) -> bool:
    """Does the file hold a sample, i.e. a byte other than JSON white space (after a BOM)? Reads up
    to the first one: a file with data answers at once."""
    compression = compression_of(path)
    try:
        stream = _open_stream(path, compression) if compression else open(path, "rb")
    except OSError:
        raise E.SourceParseError.line_unreadable(display, 1) from None
    with stream:
        first = True
        while True:
            try:
                block = stream.read(1 << 16)
            except Exception:
                if compression is None:
                    raise
                raise E.SourceParseError.line_compressed(display, 1) from None
            if not block:
                return False
            if first and block.startswith(BOM):
                block = block[3:]
            first = False
            if block.strip(_WS):
                return True


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def parse_object(raw: bytes, display: str, line: int) -> dict:
    """Strict RFC 8259 parse of one line into a JSON object, or SourceParseError."""
    try:
        obj = orjson.loads(raw)
    except Exception:
        # orjson refuses lone surrogate escapes anywhere; RFC 8259 and the stdlib allow them
        # outside declared fields, so only reject those when a declared field holds one.
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise E.SourceParseError.line_utf8(display, line) from None
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            raise E.SourceParseError.line_json(display, line) from None
    if not isinstance(obj, dict):
        raise E.SourceParseError.line_object(display, line)
    return obj


def declared_values(obj: dict, fields: list[str], display: str, line: int) -> dict:
    missing = [name for name in fields if name not in obj]
    if missing:
        raise E.SampleSchemaError.missing(display, line, fields, missing, list(obj))
    for name in fields:
        value = obj[name]
        if type(value) is not str:
            raise E.SampleSchemaError.not_string(display, line, name, _JSON_TYPES.get(type(value), "unknown"))
    return obj
