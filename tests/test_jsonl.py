"""JSONL reading: byte-range chunks, line numbers, BOM/CRLF/blank lines, gz/zst, strict parsing, fields."""

from __future__ import annotations

import gzip
import json
import os
import random

import pytest
from conftest import write_jsonl

from mintdim import errors as E
from mintdim.sources import jsonl
from mintdim.sources.jsonl import BOM, ChunkReader, chunk_bounds, declared_values, parse_object

_WS = b" \t\r\n"
MB = 1024 * 1024


def naive_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based physical line number, raw line) of every non-blank line, the obvious way."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [(i + 1, line) for i, line in enumerate(lines) if line.strip(_WS)]


def read_all(path: str, chunk_mb: float) -> list[tuple[int, bytes]]:
    """Every chunk in order, local indexes turned into file line numbers the way the plan stage does."""
    out = []
    first = 1
    for start, end in chunk_bounds(path, chunk_mb):
        reader = ChunkReader(path, start, end, os.path.basename(path))
        items = list(reader)
        if items:
            assert reader.first_line() == first
        out += [(first + local, raw) for local, raw in items]
        first += reader.newlines
    return out


def _sizes_for(size: int) -> list[float]:
    """chunk_mb values giving 1 chunk, a few, many, and chunks of 1-3 bytes (smaller than any line)."""
    return [64, size / 3 / MB, size / 7 / MB, 17 / MB, 5 / MB, 1 / MB, 0.4 / MB]


def _write(tmp_path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


# --- chunk_bounds ---------------------------------------------------------


def test_chunk_bounds_partition_the_file(tmp_path):
    path = _write(tmp_path, "a.jsonl", b'{"t":"x"}\n' * 1000)
    size = os.path.getsize(path)
    for mb in [64, 0.001, 0.0005, 1 / MB]:
        bounds = chunk_bounds(path, mb)
        assert bounds[0][0] == 0 and bounds[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert all(s <= e for s, e in bounds)
    assert len(chunk_bounds(path, 64)) == 1
    assert len(chunk_bounds(path, size / 4 / MB)) == 4


def test_chunk_bounds_empty_and_compressed_are_one_chunk(tmp_path):
    empty = _write(tmp_path, "e.jsonl", b"")
    assert chunk_bounds(empty, 1 / MB) == [(0, 0)]
    assert list(ChunkReader(empty, 0, 0, "e.jsonl")) == []
    gz = str(tmp_path / "a.jsonl.gz")
    with gzip.open(gz, "wb") as f:
        f.write(b'{"t":"x"}\n' * 1000)
    assert chunk_bounds(gz, 1 / MB) == [(0, os.path.getsize(gz))]


# --- chunking against a naive split ---------------------------------------


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_every_line_exactly_once_in_order(tmp_path, trailing_newline):
    rows = [
        json.dumps({"t": "x" * (i * 7 % 23), "i": i, "u": "é世" * (i % 3)}, ensure_ascii=False).encode()
        for i in range(40)
    ]
    data = b"\n".join(rows) + (b"\n" if trailing_newline else b"")
    path = _write(tmp_path, "a.jsonl", data)
    expected = naive_lines(data)
    assert len(expected) == 40
    for mb in _sizes_for(len(data)):
        assert read_all(path, mb) == expected, mb


def test_random_files_against_naive_split(tmp_path):
    rng = random.Random(20240517)
    for trial in range(120):
        parts = []
        for _ in range(rng.randint(0, 15)):
            r = rng.random()
            if r < 0.12:
                parts.append(b"")
            elif r < 0.22:
                parts.append(rng.choice([b" ", b"\t", b"\r", b"  \t \r"]))
            else:
                parts.append(
                    json.dumps(
                        {"t": "a" * rng.randint(0, 40) + "ü" * rng.randint(0, 3)}, ensure_ascii=False
                    ).encode()
                )
        data = b"\n".join(parts)
        if parts and rng.random() < 0.6:
            data += b"\n"
        if rng.random() < 0.2:
            data = BOM + data
        if rng.random() < 0.2:
            data = data.replace(b"\n", b"\r\n")
        path = _write(tmp_path, f"r{trial}.jsonl", data)
        expected = naive_lines(data)
        for mb in [64, 1 / MB, 2 / MB, 3 / MB, 11 / MB, max(len(data), 1) / 2 / MB]:
            assert read_all(path, mb) == expected, (trial, mb, data)


def test_chunk_smaller_than_a_line_owns_nothing_or_the_whole_line(tmp_path):
    line = b'{"t":"' + b"y" * 200 + b'"}'
    data = line + b"\n" + line + b"\n"
    path = _write(tmp_path, "a.jsonl", data)
    owned = []
    for start, end in chunk_bounds(path, 10 / MB):
        got = list(ChunkReader(path, start, end, "a.jsonl"))
        assert all(raw == line for _, raw in got)  # a line is never cut
        owned += got
    assert len(owned) == 2


def test_newlines_sum_to_file_newlines(tmp_path):
    data = b'{"a":"1"}\n\n  \n{"a":"2"}\n{"a":"3"}'
    path = _write(tmp_path, "a.jsonl", data)
    for mb in _sizes_for(len(data)):
        total = 0
        for s, e in chunk_bounds(path, mb):
            r = ChunkReader(path, s, e, "a.jsonl")
            list(r)
            total += r.newlines
        assert total == data.count(b"\n")


def test_first_line(tmp_path):
    data = b'{"a":"1"}\n\n{"a":"2"}\n{"a":"3"}\n'
    path = _write(tmp_path, "a.jsonl", data)
    assert ChunkReader(path, 0, len(data), "a.jsonl").first_line() == 1
    third = data.index(b'{"a":"2"}')
    # a chunk starting exactly at a line start owns that line
    assert ChunkReader(path, third, len(data), "a.jsonl").first_line() == 3
    assert list(ChunkReader(path, third, len(data), "a.jsonl"))[0] == (0, b'{"a":"2"}')
    # a chunk starting mid-line begins at the next line
    r = ChunkReader(path, third + 2, len(data), "a.jsonl")
    assert r.first_line() == 4
    assert list(r) == [(0, b'{"a":"3"}')]


# --- BOM, CRLF, blank lines --------------------------------------------------


def test_bom_skipped_at_file_start_only(tmp_path):
    path = _write(tmp_path, "a.jsonl", BOM + b'{"a":"1"}\n' + b'{"a":"2"}\n')
    lines = list(ChunkReader(path, 0, os.path.getsize(path), "a.jsonl"))
    assert lines == [(0, b'{"a":"1"}'), (1, b'{"a":"2"}')]
    assert parse_object(lines[0][1], "a.jsonl", 1) == {"a": "1"}


def test_bom_in_the_middle_is_a_parse_error(tmp_path):
    path = _write(tmp_path, "a.jsonl", b'{"a":"1"}\n' + BOM + b'{"a":"2"}\n')
    lines = list(ChunkReader(path, 0, os.path.getsize(path), "a.jsonl"))
    assert lines[1] == (1, BOM + b'{"a":"2"}')
    with pytest.raises(E.SourceParseError) as info:
        parse_object(lines[1][1], "a.jsonl", 2)
    assert "Line: 2" in str(info.value)


def test_bom_only_at_start_also_with_small_chunks(tmp_path):
    data = BOM + b'{"a":"1"}\n{"a":"2"}\n'
    path = _write(tmp_path, "a.jsonl", data)
    for mb in _sizes_for(len(data)):
        got = read_all(path, mb)
        assert [raw for _, raw in got] == [b'{"a":"1"}', b'{"a":"2"}']


def test_crlf_lines_parse_and_keep_numbers(tmp_path):
    data = b'{"a":"1"}\r\n\r\n{"a":"2"}\r\n'
    path = _write(tmp_path, "a.jsonl", data)
    got = read_all(path, 64)
    assert [n for n, _ in got] == [1, 3]
    assert [parse_object(raw, "a.jsonl", n) for n, raw in got] == [{"a": "1"}, {"a": "2"}]


def test_lone_cr_is_not_a_line_end(tmp_path):
    path = _write(tmp_path, "a.jsonl", b'{"a":"1"}\r{"a":"2"}\n')
    got = read_all(path, 64)
    assert len(got) == 1  # lines end at \n only
    with pytest.raises(E.SourceParseError):
        parse_object(got[0][1], "a.jsonl", 1)


def test_whitespace_only_lines_skipped_but_counted(tmp_path):
    data = b'\n \n\t\n\r\n{"a":"1"}\n   \t  \n{"a":"2"}\n\n'
    path = _write(tmp_path, "a.jsonl", data)
    for mb in _sizes_for(len(data)):
        assert read_all(path, mb) == [(5, b'{"a":"1"}'), (7, b'{"a":"2"}')]


def test_empty_and_blank_only_files_have_no_samples(tmp_path):
    for name, data in [("e.jsonl", b""), ("b.jsonl", b"\n\n  \n"), ("bom.jsonl", BOM)]:
        path = _write(tmp_path, name, data)
        assert read_all(path, 64) == []


# --- compressed inputs -------------------------------------------------------


def _compressed_rows():
    return [b'{"a":"1"}', b"", b"  ", b'{"a":"2"}', b'{"a":"3"}']


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("bom", [False, True])
def test_compressed_read_as_one_chunk(tmp_path, kind, bom):
    data = (BOM if bom else b"") + b"\n".join(_compressed_rows()) + b"\n"
    path = str(tmp_path / f"a.jsonl.{kind}")
    if kind == "gz":
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        import zstandard

        with open(path, "wb") as f:
            f.write(zstandard.ZstdCompressor().compress(data))
    bounds = chunk_bounds(path, 1 / MB)
    assert bounds == [(0, os.path.getsize(path))]
    reader = ChunkReader(path, *bounds[0], "a.jsonl")
    got = list(reader)
    assert [(reader.first_line() + i, raw) for i, raw in got] == naive_lines(data)
    assert [i + 1 for i, _ in got] == [1, 4, 5]
    assert reader.newlines == data.count(b"\n")
    assert reader.first_line() == 1


def test_zst_streamed_frame_and_no_trailing_newline(tmp_path):
    import zstandard

    data = b'{"a":"1"}\n\n{"a":"2"}'
    path = str(tmp_path / "a.jsonl.zst")
    with open(path, "wb") as f:
        with zstandard.ZstdCompressor().stream_writer(f, closefd=False) as w:  # no content size in the header
            w.write(data)
    reader = ChunkReader(path, 0, os.path.getsize(path), "a.jsonl.zst")
    assert list(reader) == [(0, b'{"a":"1"}'), (2, b'{"a":"2"}')]


def test_corrupt_gz_is_source_parse_error(tmp_path):
    path = _write(tmp_path, "bad.jsonl.gz", b"this is not gzip at all\n")
    with pytest.raises(E.SourceParseError) as info:
        list(ChunkReader(path, 0, os.path.getsize(path), "./bad.jsonl.gz"))
    assert "File: ./bad.jsonl.gz" in str(info.value)


# --- parse_object -------------------------------------------------------------


def _reason(err) -> str:
    return str(err).split("Reason: ")[1].strip()


def test_parse_object_plain():
    assert parse_object(b'{"a": "x", "n": 1, "z": [1, {"b": null}]}', "f", 1) == {
        "a": "x",
        "n": 1,
        "z": [1, {"b": None}],
    }
    assert parse_object('{"a": "é世"}'.encode(), "f", 1) == {"a": "é世"}
    assert parse_object(b'{"a":"x"}\r', "f", 1) == {"a": "x"}


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}', b'{"a": nan}'])
def test_nan_and_infinity_rejected(raw):
    with pytest.raises(E.SourceParseError) as info:
        parse_object(raw, "./d.jsonl", 42)
    msg = str(info.value)
    assert "File: ./d.jsonl" in msg and "Line: 42" in msg
    assert _reason(info.value) == "invalid JSON syntax"


@pytest.mark.parametrize(
    "raw",
    [b'{"a": "x"', b"{'a': 'x'}", b'{"a": "x",}', b'{"a": "x"} {"b": 1}', b'{"a": "tab\there"}', b"{a: 1}"],
)
def test_invalid_json_rejected(raw):
    with pytest.raises(E.SourceParseError) as info:
        parse_object(raw, "f", 7)
    assert _reason(info.value) == "invalid JSON syntax"
    assert info.value.line == 7


@pytest.mark.parametrize(
    "raw", [b'{"a": "\xff"}', b'{"a": "\xc3"}', b"\xed\xa0\x80", b'{"a": "x", "b": "\xe4\xb8"}']
)
def test_invalid_utf8_reason(raw):
    with pytest.raises(E.SourceParseError) as info:
        parse_object(raw, "f", 3)
    assert _reason(info.value) == "invalid UTF-8"
    assert "Line: 3" in str(info.value)


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"3", b"null", b"true", b"[]"])
def test_non_object_reason(raw):
    with pytest.raises(E.SourceParseError) as info:
        parse_object(raw, "f", 9)
    assert _reason(info.value) == "line is not a JSON object"


def test_lone_surrogate_in_undeclared_field_accepted():
    obj = parse_object(b'{"text": "ok", "meta": "\\ud800"}', "f", 1)
    assert obj["text"] == "ok"
    assert obj["meta"] == "\ud800"
    assert declared_values(obj, ["text"], "f", 1)["text"] == "ok"


def test_valid_surrogate_pair_is_decoded():
    assert parse_object(b'{"a": "\\ud83d\\ude00"}', "f", 1) == {"a": "\U0001f600"}


@pytest.mark.parametrize("depth", [10, 200, 1100, 5000, 200000])
def test_deep_nesting_rejected_or_parsed_never_crashes(depth):
    raw = b'{"a": "x", "deep": ' + b"[" * depth + b"]" * depth + b"}"
    try:
        obj = parse_object(raw, "f", 5)
    except E.SourceParseError as err:
        assert err.line == 5
        assert _reason(err) == "invalid JSON syntax"
    else:
        assert obj["a"] == "x"


def test_deep_object_nesting_never_crashes():
    depth = 100000
    raw = b'{"a":' * depth + b'"x"' + b"}" * depth
    with pytest.raises(E.SourceParseError):
        parse_object(raw, "f", 1)


def test_duplicate_keys_last_wins():
    assert parse_object(b'{"a": "first", "b": "x", "a": "last"}', "f", 1) == {"a": "last", "b": "x"}
    # same on the slow path (an undeclared lone surrogate forces the stdlib parser)
    assert parse_object(b'{"a": "first", "m": "\\udc00", "a": "last"}', "f", 1)["a"] == "last"


def test_slow_path_still_rejects_nan():
    with pytest.raises(E.SourceParseError):
        parse_object(b'{"m": "\\ud800", "a": NaN}', "f", 1)


# --- declared_values ------------------------------------------------------------


def test_declared_values_returns_fields_and_ignores_extras():
    obj = {"instruction": "i", "output": "o", "metadata": {"x": 1}}
    got = declared_values(obj, ["instruction", "output"], "f", 1)
    assert got["instruction"] == "i" and got["output"] == "o"


def test_missing_fields_lists_declared_missing_available():
    obj = {"instruction": "i", "output": "o", "metadata": "m"}
    with pytest.raises(E.SampleSchemaError) as info:
        declared_values(obj, ["instruction", "input", "output"], "./data/alpaca.jsonl", 18291)
    msg = str(info.value)
    assert msg == (
        "SampleSchemaError: JSONL sample is missing declared fields.\n\n"
        "File: ./data/alpaca.jsonl\n\nLine: 18291\n\n"
        "Declared fields: instruction input output\n\n"
        "Missing fields: input\n\n"
        "Available keys: instruction output metadata"
    )
    assert info.value.line == 18291


def test_all_missing_fields_listed():
    with pytest.raises(E.SampleSchemaError) as info:
        declared_values({"z": "1"}, ["a", "b", "c"], "f", 2)
    assert "Missing fields: a b c" in str(info.value)
    assert "Available keys: z" in str(info.value)


@pytest.mark.parametrize(
    "value, name",
    [
        (1, "number"),
        (2.5, "number"),
        (True, "boolean"),
        (False, "boolean"),
        (None, "null"),
        ([], "array"),
        (["x"], "array"),
        ({}, "object"),
        ({"k": "v"}, "object"),
    ],
)
def test_non_string_field_names_json_type(value, name):
    with pytest.raises(E.SampleSchemaError) as info:
        declared_values({"a": "ok", "b": value}, ["a", "b"], "./x.jsonl", 4)
    msg = str(info.value)
    assert "Field: b" in msg
    assert f"Found JSON type: {name}" in msg
    assert "Line: 4" in msg


def test_non_string_type_from_parsed_line():
    obj = parse_object(b'{"a": 12, "b": "x"}', "f", 1)
    with pytest.raises(E.SampleSchemaError) as info:
        declared_values(obj, ["a", "b"], "f", 1)
    assert "Found JSON type: number" in str(info.value)


def test_empty_string_field_is_valid():
    assert declared_values({"a": ""}, ["a"], "f", 1)["a"] == ""


def test_write_jsonl_roundtrip_through_reader(tmp_path):
    """The shared writer and the reader agree (a guard for the helper the other tests rely on)."""
    rows = [{"a": "x"}, "   ", {"a": "é"}]
    path = write_jsonl(tmp_path / "w.jsonl", rows)
    got = read_all(path, 64)
    assert [(n, parse_object(raw, path, n)) for n, raw in got] == [(1, {"a": "x"}), (3, {"a": "é"})]


def test_module_constants():
    assert jsonl.BOM == b"\xef\xbb\xbf"
    assert jsonl.compression_of("a.jsonl.gz") == "gz"
    assert jsonl.compression_of("a.jsonl.zst") == "zst"
    assert jsonl.compression_of("a.jsonl") is None


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_multi_member_compressed_file_read_whole(tmp_path, kind):
    """`cat a.gz b.gz` (or several zstd frames) is one valid compressed file: every line is read."""
    parts = [b'{"a":"1"}\n', b'{"a":"2"}\n\n', b'{"a":"3"}\n']
    if kind == "gz":
        blob = b"".join(gzip.compress(p) for p in parts)
    else:
        import zstandard

        blob = b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)
    path = _write(tmp_path, f"m.jsonl.{kind}", blob)
    reader = ChunkReader(path, 0, len(blob), "m")
    assert list(reader) == [(0, b'{"a":"1"}'), (1, b'{"a":"2"}'), (3, b'{"a":"3"}')]
    assert reader.newlines == 4


@pytest.mark.parametrize("line", [b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe2\x80\xa8"])
def test_non_json_whitespace_line_is_not_blank(tmp_path, line):
    """Only JSON white space (space, tab, CR, LF) makes a line blank; anything else is a parse error."""
    path = _write(tmp_path, "a.jsonl", b'{"a":"1"}\n' + line + b"\n")
    got = read_all(path, 64)
    assert got[1] == (2, line)
    with pytest.raises(E.SourceParseError):
        parse_object(line, "a.jsonl", 2)
