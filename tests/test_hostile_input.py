"""Hostile input, the cases not covered elsewhere (see test_jsonl.py and test_errors.py for invalid UTF-8,
BOM, "\\ud800", CRLF, deep nesting, duplicate keys, non-string fields, empty files, no trailing newline):
NUL bytes, a file that is a JSON array, gzip and Parquet files misnamed .jsonl, a single 200 MB line,
and one build over a file that combines every valid oddity, checked with `verify --source --all`."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SP_MODEL, basic_config, read_jsonl
from test_stages import drive

from mintdim import errors as E
from mintdim.reading.verify import verify
from mintdim.sources import jsonl
from mintdim.sources.template import parse


def read_all(path: str, display: str, fields=("prompt", "response"), template="{prompt}\n{response}"):
    """Every line through the tokenize stage's steps: (line, rendered text) or the first error raised."""
    tpl = parse(template)
    out = []
    for start, end in jsonl.chunk_bounds(path, 64, 2):
        reader = jsonl.ChunkReader(path, start, end, display)
        for local, raw in reader:
            line = reader.first_line() + local
            obj = jsonl.declared_values(jsonl.parse_object(raw, display, line), list(fields), display, line)
            out.append((line, tpl.render(obj)))
    return out


def parse_error(tmp_path, data: bytes, name="data.jsonl") -> E.SourceParseError:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(E.SourceParseError) as info:
        read_all(str(path), name)
    assert info.value.file == name and f"File: {name}" in str(info.value)
    return info.value


# --- NUL bytes ------------------------------------------------------------------------------------------


def test_escaped_nul_in_a_field_is_text_raw_nul_is_a_parse_error(tmp_path):
    ok = tmp_path / "nul.jsonl"
    ok.write_bytes(b'{"prompt": "a\\u0000b", "response": "c"}\n')
    assert read_all(str(ok), "nul.jsonl") == [(1, "a\x00b\nc")]
    for line in (
        b'{"prompt": "a\x00b", "response": "c"}',
        b'{"prompt": "a",\x00 "response": "c"}',
        b"\x00",
        b'\x00{"prompt": "a", "response": "c"}',
    ):
        err = parse_error(tmp_path, b'{"prompt": "x", "response": "y"}\n' + line + b"\n")
        assert err.line == 2 and "Reason: invalid JSON syntax" in str(err)


# --- files that are not JSONL -----------------------------------------------------------------------------


def test_a_pretty_printed_json_array_file(tmp_path):
    data = json.dumps([{"prompt": "a", "response": "b"}, {"prompt": "c", "response": "d"}], indent=2).encode()
    err = parse_error(tmp_path, data)
    assert err.line == 1 and "invalid JSON syntax" in str(err)  # the line "["


def test_a_one_line_json_array_file(tmp_path):
    err = parse_error(tmp_path, json.dumps([{"prompt": "a", "response": "b"}]).encode() + b"\n")
    assert err.line == 1 and "Reason: line is not a JSON object" in str(err)


def test_a_gzip_file_misnamed_jsonl(tmp_path):
    data = gzip.compress(b'{"prompt": "a", "response": "b"}\n' * 50)
    err = parse_error(tmp_path, data)
    assert err.line >= 1 and ("invalid UTF-8" in str(err) or "invalid JSON syntax" in str(err))


def test_a_parquet_file_misnamed_jsonl(tmp_path):
    # a Parquet file's shape: magic, binary column chunks, footer, magic
    data = b"PAR1" + bytes(range(256)) * 8 + b"\x15\x04\x15\x00" + b"\x00\x00\x00\x10PAR1"
    err = parse_error(tmp_path, data)
    assert err.line == 1


def test_gzip_and_parquet_misnamed_jsonl_through_a_build(tmp_path, monkeypatch):
    """The same, as a user meets it: one clear spec error naming file and line, markers, no stats."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_bytes(gzip.compress(b'{"prompt": "a", "response": "b"}\n' * 5))
    with pytest.raises(E.SourceParseError) as info:
        drive(basic_config(["a.jsonl"], sizes=[[64]]))
    assert info.value.file == "a.jsonl" and info.value.line == 1


# --- one line of 200 MB --------------------------------------------------------------------------------

_BIG = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
from test_stages import drive
from conftest import basic_config
mb = int(sys.argv[2])
with open("big.jsonl", "wb") as f:
    f.write(b'{"prompt": "first", "response": "x"}\n')
    f.write(b'{"prompt": "big", "response": "y", "blob": "')
    for _ in range(mb):
        f.write(b"x" * (1 << 20))
    f.write(b'"}\n')
    f.write(b'{"prompt": "last", "response": "z"}')  # and no trailing newline
from mintdim.progress import peak_rss_mb  # VmHWM: ru_maxrss survives fork and exec on Linux, so it
def peak_kb():                            # started at the pytest process's size (over 1 GB late in the suite)
    mb = peak_rss_mb()
    return mb * 1024 if mb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = peak_kb()
t = time.monotonic()
drive(basic_config(["big.jsonl"], tokenizer={"sentencepiece": {"path": sys.argv[3]}},
                   sizes=[[16, 64]], sps=[2], chunk_mb=64))
print(json.dumps({"seconds": time.monotonic() - t,
                  "peak_mb": peak_kb() / 1024, "base_mb": base / 1024}))
"""


def test_a_single_200_mb_line_builds_with_bounded_memory(tmp_path):
    """A 200 MB line (a huge field that is not declared) between two small ones, split into 64 MB
    chunks: every line lands once, with its number, and the whole in-process build stays within a
    few times the line's size."""
    proc = subprocess.run(
        [sys.executable, "-c", _BIG, os.path.join(REPO, "tests"), "200", SP_MODEL],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    assert [(r["sample_id"], r["source_line"]) for r in rows] == [(0, 1), (1, 2), (2, 3)]
    assert verify(str(tmp_path / "out")).ok
    assert got["peak_mb"] < 1000, got  # 200 MB line: the line, its parse and a copy or two, not more
    assert got["seconds"] < 30, got


def test_a_single_200_mb_invalid_line_is_a_parse_error_with_its_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    with open(path, "wb") as f:
        f.write(b'{"prompt": "a", "response": "b"}\n\n')
        f.write(b'{"prompt": "' + b"x" * (200 << 20) + b"\n")  # never closed
        f.write(b'{"prompt": "c", "response": "d"}\n')
    with pytest.raises(E.SourceParseError) as info:
        read_all(str(path), "bad.jsonl")
    assert info.value.line == 3 and "invalid JSON syntax" in str(info.value)


# --- every valid oddity at once, end to end -----------------------------------------------------------------


def test_a_file_of_valid_oddities_builds_and_verifies_against_its_source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = [
        b'\xef\xbb\xbf{"prompt": "bom first", "response": "r"}',  # BOM at the start of the file
        b'{"prompt": "crlf line", "response": "r"}\r',  # CRLF
        b"",  # blank: not a sample, still counted
        b'{"prompt": "nul \\u0000 inside", "response": "r"}',  # escaped NUL
        b'{"prompt": "dup", "response": "first", "response": "last wins"}',  # duplicate keys
        b'{"prompt": "extra", "response": "r", "n": 1.5e300, "deep": [[[[[]]]]], "s": "\\ud800"}',
        b'   {"prompt": "spaces around", "response": "r"}   \t',
        b'{"prompt": "emoji \\ud83d\\ude00 pair", "response": "\xc3\xa9"}',  # a valid surrogate pair
        b'{"prompt": "no trailing newline", "response": "r"}',
    ]
    (tmp_path / "odd.jsonl").write_bytes(b"\n".join(lines))
    drive(basic_config(["odd.jsonl"], sizes=[[16, 64, 256]], sps=[3]))
    rows = read_jsonl("out/sample_index.jsonl")
    assert [r["source_line"] for r in rows] == [1, 2, 4, 5, 6, 7, 8, 9]
    assert rows[3]["hash"] == __import__("hashlib").sha256(b"dup\nlast wins").hexdigest()
    report = verify("out", source=True, all=True)
    assert report.ok, [str(p) for p in report.problems]
    assert report.encoded == 8
