"""Parquet files and Hugging Face `datasets` directories as inputs.

The same records as JSONL, Parquet and a `datasets` directory build byte-identical shards, stats
and indexes (only the source file name differs); data errors name the file and the 1-based row and
column, in both languages; a damaged footer, a wrong column type, a missing column, an empty row
group or a `datasets` directory without state.json stop the build in pre-flight, before anything
is written; tokenize jobs split a Parquet file by row groups."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import (
    DATA,
    REPO,
    basic_config,
    build_in,
    gsm8k_rows,
    read_json,
    read_jsonl,
    tree_bytes,
    write_jsonl,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from test_stages import drive  # noqa: E402

from mintdim import errors as E  # noqa: E402
from mintdim.reading.verify import verify  # noqa: E402
from mintdim.sources import inputs  # noqa: E402

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")
CHATS = os.path.join(DATA, "chat", "gsm8k_chat.jsonl")
PAIRS_SIZES = [[128, 256, 512, 1024]]


# --- writing the three kinds -------------------------------------------------------------------------


def write_parquet(path, rows, row_group_size=64, schema=None) -> str:
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, str(path), row_group_size=row_group_size)
    return str(path)


def write_datasets_dir(path, rows, num_shards=3) -> str:
    """A directory exactly as `datasets` writes it (save_to_disk: Arrow stream files, state.json)."""
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(rows).save_to_disk(str(path), num_shards=num_shards)
    return str(path)


def three_kinds(tmp_path, rows) -> dict[str, str]:
    """The same records as a JSONL file, a Parquet file (several row groups) and a datasets directory."""
    return {
        "jsonl": write_jsonl(tmp_path / "src" / "data.jsonl", rows),
        "parquet": write_parquet(tmp_path / "src" / "data.parquet", rows),
        "datasets": write_datasets_dir(tmp_path / "src" / "data_hf", rows),
    }


def chat_rows(n=300) -> list[dict]:
    return [{"system": r["system"], "messages": r["messages"]} for r in read_jsonl(CHATS)[:n]]


def chat_config(path, out):
    return {
        "source": {"files": [path], "chat": {"system": "system"}, "train_on": [["assistant"]]},
        "tokenizer": {"hf_dir": {"path": TOK_DIR}},
        "units": {"sizes": [[256, 512, 768, 1024]], "build_batch": [64]},
        "output": {"dir": out, "samples_per_shard": [100]},
    }


def without_source_file(out) -> dict:
    """Every index of an output with source_file left out, and the manifest without source.files."""
    found = {}
    for name in ("sample_index.jsonl", "duplicate_index.jsonl", "unk_index.jsonl"):
        rows = read_jsonl(os.path.join(out, name))
        for row in rows:
            row.pop("source_file", None)
            for s in row.get("samples", []):
                s.pop("source_file")
        found[name] = rows
    manifest = read_json(os.path.join(out, "manifest.json"))
    manifest["source"].pop("files")
    found["manifest.json"] = manifest
    return found


def assert_same_output(a, b) -> None:
    ta, tb = tree_bytes(a), tree_bytes(b)
    assert sorted(ta) == sorted(tb)
    for name in ta:
        if name.endswith(".bin") or name in ("stats.json", "histogram.json"):
            assert ta[name] == tb[name], name
    assert without_source_file(a) == without_source_file(b)


# --- the same records, three kinds: identical outputs -----------------------------------------------------


def test_same_pairs_as_jsonl_parquet_and_datasets_dir_build_identical_outputs(tmp_path, monkeypatch):
    rows = gsm8k_rows(0, 300)
    rows[5] = dict(rows[5])
    rows[17] = dict(rows[5])  # a duplicate pair: the duplicate index says where, by row
    paths = three_kinds(tmp_path, rows)
    monkeypatch.chdir(tmp_path)
    outs = {}
    for kind, path in paths.items():
        outs[kind] = str(tmp_path / f"out_{kind}")
        drive(basic_config([os.path.relpath(path, tmp_path)], sizes=PAIRS_SIZES, out=outs[kind], sps=[64]))
    assert_same_output(outs["jsonl"], outs["parquet"])
    assert_same_output(outs["jsonl"], outs["datasets"])
    index = read_jsonl(os.path.join(outs["parquet"], "sample_index.jsonl"))
    assert [r["source_line"] for r in index] == list(range(1, 301))  # the 1-based row
    assert index[0]["source_file"] == "src/data.parquet"
    dups = read_jsonl(os.path.join(outs["datasets"], "duplicate_index.jsonl"))
    assert [[s["source_line"] for s in g["samples"]] for g in dups] == [[6, 18]]
    for out in outs.values():
        assert verify(out, source=True, all=True, root=str(tmp_path)).ok


def test_same_conversations_as_jsonl_parquet_and_datasets_dir_build_identical_outputs(tmp_path, monkeypatch):
    pytest.importorskip("jinja2")
    paths = three_kinds(tmp_path, chat_rows())
    monkeypatch.chdir(tmp_path)
    outs = {}
    for kind, path in paths.items():
        outs[kind] = str(tmp_path / f"out_{kind}")
        drive(chat_config(os.path.relpath(path, tmp_path), outs[kind]))
    assert_same_output(outs["jsonl"], outs["parquet"])
    assert_same_output(outs["jsonl"], outs["datasets"])
    stats = read_json(os.path.join(outs["datasets"], "stats.json"))
    assert stats["total_samples"] == 300 and stats["trained_tokens_by_role"]["assistant"] > 0
    for out in outs.values():
        assert verify(out, source=True, all=True, root=str(tmp_path)).ok


def test_parquet_and_datasets_dir_through_the_workflow_split_by_row_groups(tmp_path):
    """A real build (Snakemake, 2 cores) over small row groups: several tokenize jobs per file,
    and the output equals the one-chunk build's."""
    rows = gsm8k_rows(0, 300)
    paths = three_kinds(tmp_path, rows)
    cfg = basic_config(
        [paths["parquet"], paths["datasets"], paths["jsonl"]],
        sizes=PAIRS_SIZES,
        out=str(tmp_path / "split"),
        sps=[64],
        chunk_mb=0.01,
        work_dir=str(tmp_path / "w1"),
    )
    build_in(tmp_path, cfg, cores=2)
    [plan] = [
        os.path.join(base, "jobs.json")
        for base, _d, names in os.walk(tmp_path / "w1")
        if "jobs.json" in names
    ]
    chunks = read_json(plan)["chunks"]
    # row-group ranges of the Parquet file, batches of the directory
    assert len(chunks["0"]) > 1 and len(chunks["1"]) > 1
    whole = dict(cfg, chunk_mb=256, work_dir=str(tmp_path / "w2"))
    whole["output"] = dict(cfg["output"], dir=str(tmp_path / "whole"))
    build_in(tmp_path, whole, cores=1)
    assert tree_bytes(tmp_path / "split") == tree_bytes(tmp_path / "whole")
    index = read_jsonl(tmp_path / "split" / "sample_index.jsonl")
    assert [(r["source_file"], r["source_line"]) for r in index] == [
        (p, i) for p in (paths["parquet"], paths["datasets"], paths["jsonl"]) for i in range(1, 301)
    ]


def test_chunk_bounds_are_row_group_ranges(tmp_path):
    rows = gsm8k_rows(0, 300)
    path = write_parquet(tmp_path / "a.parquet", rows, row_group_size=30)  # 10 row groups
    assert inputs.kind_of(path) == "parquet"
    assert inputs.chunk_bounds(path, 256) == [(0, 10)]
    split = inputs.chunk_bounds(path, 0.01, parallel=2)
    assert len(split) > 1 and len(split) % 2 == 0 and split[0][0] == 0 and split[-1][1] == 10
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(split, split[1:]))
    d = write_datasets_dir(tmp_path / "hf", rows, num_shards=2)
    assert inputs.kind_of(d) == "datasets"
    parts = inputs.chunk_bounds(d, 0.01, parallel=2)
    assert len(parts) > 1 and parts[0][0] == 0
    # every chunk's records, in order, are the file's records
    seen = []
    for start, end in parts:
        reader = inputs.open_chunk(d, start, end, "hf", ["prompt", "response"])
        for local, raw in reader:
            seen.append((int(reader.location(local)), reader.parse(raw, 0)["prompt"]))
    assert seen == [(i + 1, r["prompt"]) for i, r in enumerate(rows)]


def test_a_nested_null_counts_as_absent_a_top_level_null_is_a_value(tmp_path):
    """Arrow structs give every element every field: a message without `name` reads back without it
    (as the JSONL line had it), while a null string column is a null value."""
    rows = [
        {
            "messages": [
                {"role": "user", "content": "hi", "name": "ann"},
                {"role": "assistant", "content": "yo"},
            ]
        }
    ]
    path = write_parquet(tmp_path / "c.parquet", rows)
    reader = inputs.open_chunk(path, 0, 1, "c.parquet", ["messages"])
    [(local, raw)] = list(reader)
    assert reader.parse(raw, 0) == rows[0]


def test_dictionary_encoded_and_large_string_columns_are_strings(tmp_path, monkeypatch):
    rows = gsm8k_rows(0, 20)
    table = pa.Table.from_pylist(rows)
    table = table.set_column(0, "prompt", table.column("prompt").dictionary_encode())
    table = table.set_column(1, "response", table.column("response").cast(pa.large_string()))
    pq.write_table(table, str(tmp_path / "a.parquet"))
    write_jsonl(tmp_path / "a.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    drive(basic_config(["a.parquet"], sizes=PAIRS_SIZES, out="p"))
    drive(basic_config(["a.jsonl"], sizes=PAIRS_SIZES, out="j"))
    assert_same_output("p", "j")


_READ_ALL = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from mintdim.progress import peak_rss_mb
from mintdim.sources import inputs
import pyarrow.parquet  # the library's own size is not the data's
base = peak_rss_mb()
count = chars = 0
for bounds in inputs.chunk_bounds("big.parquet", 64, 2):
    reader = inputs.open_chunk("big.parquet", *bounds, "big.parquet", ["prompt", "response"])
    for local, raw in reader:
        record = reader.parse(raw, 0)
        count += 1
        chars += len(record["response"])
print(json.dumps({"rows": count, "chars": chars, "peak_mb": peak_rss_mb(), "base_mb": base}))
"""


def test_a_large_parquet_file_is_read_in_bounded_memory(tmp_path):
    """300 MB of text in 40 row groups, read through the tokenize stage's readers: memory holds a row
    group and a batch of records, not the table."""
    import random

    rng = random.Random(0)
    words = [format(rng.getrandbits(64), "x") for _ in range(4096)]
    text = " ".join(words)  # ~70 KB of hex words; zstd-compressed lightly below
    rows_per_group = 100
    schema = pa.schema([("prompt", pa.string()), ("response", pa.string())])
    with pq.ParquetWriter(str(tmp_path / "big.parquet"), schema, compression="none") as w:
        for g in range(40):
            rows = [{"prompt": f"p{g}.{i}", "response": text[i:] + text[:i]} for i in range(rows_per_group)]
            w.write_table(pa.Table.from_pylist(rows, schema=schema))
    size_mb = os.path.getsize(tmp_path / "big.parquet") / 2**20
    assert size_mb > 250
    res = subprocess.run(
        [sys.executable, "-c", _READ_ALL, os.path.join(REPO, "tests")],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["rows"] == 4000 and got["chars"] == 4000 * len(text)
    assert got["peak_mb"] - got["base_mb"] < 100, got  # one row group is ~7 MB; the file 280 MB


# --- hostile inputs: catalogue errors with the file and the row, nothing written --------------------------


def _preflight_error(tmp_path, cfg, cls):
    """The error a build raises, and that it created nothing (no output, no work directory)."""
    with pytest.raises(cls) as info:
        build_in(tmp_path, cfg, cores=1)
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / ".mintdim")
    return info.value


def test_a_truncated_parquet_file(tmp_path):
    path = write_parquet(tmp_path / "a.parquet", gsm8k_rows(0, 50))
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:-100])
    err = _preflight_error(
        tmp_path,
        basic_config(["a.parquet"], fields=[["question", "answer"]], templates=["{question} {answer}"]),
        E.SourceParseError,
    )
    en, vi = err.render("en"), err.render("vi")
    assert err.file == "a.parquet" and err.line == 1
    assert "Parquet row could not be read" in en and "File: a.parquet" in en and "Row: 1" in en
    assert "footer" in en and "Hàng: 1" in vi and "File: a.parquet" in vi


def test_a_list_column_where_a_string_is_expected(tmp_path):
    rows = [{"prompt": "p", "response": ["a", "b"]}] * 3
    write_parquet(tmp_path / "a.parquet", rows)
    err = _preflight_error(tmp_path, basic_config(["a.parquet"]), E.SampleSchemaError)
    en, vi = err.render("en"), err.render("vi")
    assert err.file == "a.parquet" and err.line == 1
    assert "Row: 1" in en and "Column: response" in en and "list<" in en
    assert "Hàng: 1" in vi and "Cột: response" in vi


def test_an_empty_row_group(tmp_path):
    table = pa.Table.from_pylist(gsm8k_rows(0, 10))
    with pq.ParquetWriter(str(tmp_path / "a.parquet"), table.schema) as w:
        w.write_table(table.slice(0, 4))
        w.write_table(table.slice(0, 0))
        w.write_table(table.slice(4, 6))
    assert pq.ParquetFile(str(tmp_path / "a.parquet")).metadata.row_group(1).num_rows == 0
    err = _preflight_error(
        tmp_path, basic_config(["a.parquet"], fields=[["prompt", "response"]]), E.SourceParseError
    )
    en = err.render("en")
    assert err.line == 5 and "Row: 5" in en and "row group 1" in en and "empty" in en
    assert "Hàng: 5" in err.render("vi")


def test_an_empty_parquet_file_holds_no_samples(tmp_path, monkeypatch):
    """pyarrow writes an empty table as one row group of 0 rows: an input with no sample, like an empty
    JSONL: an error in pre-flight, or with source.allow_empty a build without it."""
    schema = pa.schema([("prompt", pa.string()), ("response", pa.string())])
    write_parquet(tmp_path / "e.parquet", [], schema=schema)
    write_parquet(tmp_path / "a.parquet", gsm8k_rows(0, 5))
    monkeypatch.chdir(tmp_path)
    cfg = basic_config(["e.parquet", "a.parquet"], sizes=PAIRS_SIZES)
    with pytest.raises(E.SourceParseError) as info:
        drive(cfg)
    assert info.value.render("en").startswith(
        "SourceParseError: Parquet file holds no samples.\n\nFile: e.parquet"
    )
    assert "Reason: it has no row" in info.value.render(
        "en"
    ) and "Lý do: không có hàng nào" in info.value.render("vi")
    cfg["source"]["allow_empty"] = True
    drive(cfg)
    index = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    assert [(r["source_file"], r["source_line"]) for r in index] == [("a.parquet", i) for i in range(1, 6)]


def test_a_damaged_row_group_names_its_first_row(tmp_path, monkeypatch):
    """A footer that reads, and a page header that does not (overwritten): found while reading, with
    the first row of the row group that cannot be decoded; the build fails with its markers."""
    path = write_parquet(tmp_path / "a.parquet", gsm8k_rows(0, 90), row_group_size=30)
    where = pq.ParquetFile(path).metadata.row_group(1).column(1).data_page_offset
    with open(path, "r+b") as f:
        f.seek(where)
        f.write(b"\xff" * 24)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(E.SourceParseError) as info:
        drive(basic_config(["a.parquet"], sizes=PAIRS_SIZES))
    en = info.value.render("en")
    assert info.value.line == 31 and "Row: 31" in en and "cannot be decoded" in en


def test_a_datasets_directory_without_state_json(tmp_path):
    d = write_datasets_dir(tmp_path / "hf", gsm8k_rows(0, 20), num_shards=1)
    os.remove(os.path.join(d, "state.json"))
    err = _preflight_error(tmp_path, basic_config(["hf"]), E.MintDimFileNotFoundError)
    en = err.render("en")
    assert "hf/state.json" in en and "save_to_disk" in en
    assert "hf/state.json" in err.render("vi")
    datasets = pytest.importorskip("datasets")
    datasets.DatasetDict({"train": datasets.Dataset.from_list(gsm8k_rows(0, 5))}).save_to_disk(
        str(tmp_path / "dd")
    )
    err = _preflight_error(tmp_path, basic_config(["dd"]), E.MintDimFileNotFoundError)
    assert (
        "DatasetDict" in err.render("en")
        and "dd/train" in err.render("en")
        and "dd/train" in err.render("vi")
    )


def test_a_missing_column(tmp_path):
    write_parquet(tmp_path / "a.parquet", [{"prompt": "p", "answer": "a"}])
    err = _preflight_error(tmp_path, basic_config(["a.parquet"]), E.SampleSchemaError)
    en = err.render("en")
    assert "Row: 1" in en and "Missing columns: response" in en and "Available columns: prompt answer" in en


def test_a_null_value_names_its_row_across_row_groups_and_arrow_files(tmp_path, monkeypatch):
    rows = gsm8k_rows(0, 100)
    rows[76] = dict(rows[76], response=None)
    write_parquet(tmp_path / "a.parquet", rows, row_group_size=30)
    write_datasets_dir(tmp_path / "hf", rows, num_shards=3)
    monkeypatch.chdir(tmp_path)
    for name in ("a.parquet", "hf"):
        with pytest.raises(E.SampleSchemaError) as info:
            drive(basic_config([name], sizes=PAIRS_SIZES, out=f"out_{name}", chunk_mb=0.001))
        en = info.value.render("en")
        assert info.value.file == name and info.value.line == 77
        assert "Row: 77" in en and "Column: response" in en and "null" in en


def test_a_bad_conversation_names_its_row_and_message(tmp_path, monkeypatch):
    rows = chat_rows(40)
    rows[33] = {
        "system": rows[33]["system"],
        "messages": [{"role": "user", "content": "hi"}, {"role": None, "content": "x"}],
    }
    write_datasets_dir(tmp_path / "hf", rows, num_shards=2)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(E.SampleSchemaError) as info:
        drive(chat_config("hf", "out"))
    en = info.value.render("en")
    assert info.value.line == 34 and "Row: 34" in en and "Message: 1" in en and "no role" in en


def test_a_conversation_column_that_is_not_a_list(tmp_path):
    write_parquet(tmp_path / "c.parquet", [{"messages": "hello"}])
    with pytest.raises(E.SampleSchemaError) as info:
        build_in(tmp_path, chat_config("c.parquet", "out"), cores=1)
    en = info.value.render("en")
    assert "Row: 1" in en and "must be a list of messages" in en and not os.path.exists(tmp_path / "out")


def test_pyarrow_missing_gives_the_install_hint(tmp_path):
    write_parquet(tmp_path / "a.parquet", gsm8k_rows(0, 3))
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.path.insert(0, sys.argv[1])\n"
        "from conftest import basic_config\n"
        "from mintdim.stages.preflight import preflight\n"
        "from mintdim import errors as E\n"
        "try:\n    preflight(basic_config(['a.parquet']), check_outputs=False)\n"
        "except E.MissingExtraError as err:\n    print(err.render('both'))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, os.path.join(REPO, "tests")],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
    )
    assert "pip install 'mintdim[arrow]'" in res.stdout and "pyarrow" in res.stdout, res.stderr


def test_jsonl_builds_do_not_import_pyarrow(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", gsm8k_rows(0, 3))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from conftest import basic_config\n"
        "from test_stages import drive\n"
        "drive(basic_config(['a.jsonl'], sizes=[[1024]]))\n"
        "print('pyarrow' in sys.modules)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, os.path.join(REPO, "tests")],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
    )
    assert res.stdout.strip().splitlines()[-1] == "False", res.stderr


def test_shipped_mix_example_builds_and_verifies(tmp_path):
    """config/mix.yaml from a copy of the repository's data: the README's example of input kinds and take."""
    from conftest import build_shipped, run_cli

    res = build_shipped(tmp_path, "config/mix.yaml")
    assert res.returncode == 0, res.stdout + res.stderr
    out = tmp_path / "artifacts" / "mix_units"
    manifest = read_json(out / "manifest.json")
    kinds = [inputs.kind_of(str(tmp_path / f)) for f in manifest["source"]["files"]]
    assert kinds == ["parquet", "datasets", "jsonl"]
    assert [f["taken"] for f in manifest["take"]["files"]] == [660, 600, 100]
    res = run_cli(tmp_path, "verify", str(out), "--source")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_cli(tmp_path, "suggest-units", "config/mix.yaml", "-k", "2")
    assert res.returncode == 0 and "1360 samples" in res.stdout, res.stdout + res.stderr
