"""The build's stages called directly, in order, without Snakemake; outputs checked as a user would.

preflight.preflight -> tokenize_chunk (each chunk) -> plan_output -> write_unit (each size)
-> aggregate_output -> finalize_output, exactly as scripts/*.py wire them.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
from conftest import (
    GSM8K,
    HF_JSON,
    REPO,
    SP_MODEL,
    basic_config,
    read_json,
    read_jsonl,
    tree_bytes,
    write_jsonl,
)
from stagekit import drive
from tokenizers import Tokenizer

from mintdim import __version__
from mintdim import errors as E
from mintdim.config import resolve
from mintdim.formats import output as indexes
from mintdim.formats import records, shards
from mintdim.formats.layout import Layout
from mintdim.sources import inputs, jsonl
from mintdim.stages.plan import plan_output
from mintdim.stages.preflight import preflight
from mintdim.stages.to_build import outputs_to_build
from mintdim.stages.tokenize import tokenize_chunk

KB_AS_MB = 1024 / (1024 * 1024)
SHARD_LINE = re.compile(
    r"^\[unit-build\] shard=(\d{6}) samples=(\d+) bytes=(\d+\.\d) MiB unit=(\d+)( output=.+)?$"
)


# --- driving the stages ----------------------------------------------------------------


def test_finalize_refuses_shards_the_plan_does_not_count(tmp_path, monkeypatch):
    """Aggregate counts the shards from the plan, beside the write jobs; finalize checks the write
    jobs' own summaries against that count before anything is placed."""
    monkeypatch.chdir(tmp_path)
    write_lines(
        "data/train.jsonl",
        [json.dumps({"prompt": f"p {i}", "response": "r " * (i % 40)}) for i in range(300)],
    )

    def lose_a_shard(written):
        for path in written:
            summary = read_json(path)
            for unit in summary["units"]:
                if unit.get("shards"):
                    unit["shards"] = unit["shards"][:-1]  # a write job that wrote one shard fewer
                    with open(path, "w", encoding="utf-8") as f:
                        json.dump(summary, f)
                    return
        raise AssertionError("no write job wrote a shard")

    cfg = basic_config(["./data/train.jsonl"], sps=[40], out="./artifacts/units")
    with pytest.raises(RuntimeError, match="shards written .* differ from the plan"):
        drive(cfg, before_finalize=lose_a_shard)
    assert not os.path.exists("artifacts/units") or os.listdir("artifacts/units") == []
    drive(cfg)  # the same build with the write jobs' true summaries is placed
    assert read_json("artifacts/units/stats.json")["total_samples"] == 300


def tokenize_all(raw: dict) -> None:
    """The tokenize stage over every chunk, then each output's plan: a record's data error is listed by the
    tokenize job of its chunk and raised by the plan, which counts the file's (source.on_bad_record)."""
    build, metas = preflight(raw)
    lay = Layout(build.work_dir, build.build_id)
    dirs: dict[int, list[str]] = {}
    for f in build.files:
        for k in range(len(inputs.chunk_bounds(f.abspath, build.chunk_mb))):
            tokenize_chunk(build, metas, f.index, k, lay.tok_dir(f.index, k), log=lambda m: None)
            dirs.setdefault(f.output, []).append(lay.tok_dir(f.index, k))
    for o, chunk_dirs in dirs.items():
        os.makedirs(os.path.dirname(lay.plan(o)), exist_ok=True)
        plan_output(build, o, chunk_dirs, lay.plan(o), lay.plan_units(o), log=lambda m: None)


# --- an independent expectation, from the input lines -------------------------------------


def expected_samples(lines: list[str], fields: list[str], template: str, encode) -> list[dict]:
    """Physical lines -> rendered text (str.format: plain templates only) and the tokenizer's own ids."""
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip(" \t\r\n"):
            continue
        obj = json.loads(line)
        text = template.format(**{k: obj[k] for k in fields})
        out.append({"line": number, "text": text, "ids": list(encode(text))})
    return out


def unit_of(count: int, sizes: list[int]) -> int:
    return min(s for s in sizes if s >= count)


def write_lines(path: str, lines: list[str], trailing: bool = True) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(("\n".join(lines) + ("\n" if trailing else "")).encode("utf-8"))
    return path


def read_records(out_dir: str, shard_path: str, unit: int, dtype: str) -> np.ndarray:
    data = np.fromfile(os.path.join(out_dir, shard_path), dtype=np.dtype(dtype).newbyteorder("<"))
    assert data.size % unit == 0
    return data.reshape(-1, unit)


def gsm8k_rows(n: int) -> list[dict]:
    rows = []
    with open(GSM8K, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            r = json.loads(line)
            rows.append({"prompt": r["question"], "response": r["answer"], "id": i})
    return rows


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


# --- the main build ---------------------------------------------------------------------------

SIZES = [16, 32, 128, 256, 320]
SPS = 7
TEMPLATE = "{prompt}\n{response}"


def main_lines() -> list[str]:
    g = gsm8k_rows(40)
    lines = [""]  # line 1 blank
    for i, row in enumerate(g):
        lines.append(dumps(row))
        if i in (4, 17):
            lines.append("   \t ")  # whitespace-only lines count for numbering
        if i == 9:
            lines += [
                dumps({"prompt": "hello 世界", "response": "ok", "meta": {"x": [1, 2]}}),  # UNK
                dumps({"prompt": "same text", "response": "again"}),
                dumps({"response": "again", "prompt": "same text"}),  # same rendered text, key order differs
                dumps({"prompt": "a\nb", "response": "c"}),
            ]
        if i == 25:
            lines += [
                dumps(g[3]),  # duplicate of an earlier long sample
                dumps({"prompt": "漢字 and 世界 x 世", "response": "y"}),  # several UNK
                dumps({"prompt": "a", "response": "b\nc"}),  # same rendered text as "a\nb" + "c"
                "",
            ]
    lines += [dumps({"prompt": "same text", "response": "again", "extra": None})]
    return lines


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(model_file=SP_MODEL)


@pytest.fixture(scope="module")
def main_build(tmp_path_factory, sp):
    root = tmp_path_factory.mktemp("main")
    lines = main_lines()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        write_lines("data/train.jsonl", lines)
        cfg = basic_config(
            ["./data/train.jsonl"],
            templates=[TEMPLATE],
            sizes=[SIZES],
            sps=[SPS],
            build_batch=[5],
            out="./artifacts/units",
            chunk_mb=2 * KB_AS_MB,
        )
        built = drive(cfg)
    exp = expected_samples(lines, ["prompt", "response"], TEMPLATE, sp.encode)
    hist = {s: sum(1 for e in exp if unit_of(len(e["ids"]), SIZES) == s) for s in SIZES}
    assert hist[32] == 0 and hist[16] > 0 and hist[128] > SPS  # the dataset covers what the tests need
    n_chunks = len(jsonl.chunk_bounds(str(root / "data/train.jsonl"), 2 * KB_AS_MB))
    assert n_chunks > 5
    out_dir = str(root / "artifacts/units")
    return {
        "root": str(root),
        "out": out_dir,
        "exp": exp,
        "built": built,
        "lines": lines,
        "samples": read_jsonl(os.path.join(out_dir, "sample_index.jsonl")),
        "manifest": read_json(os.path.join(out_dir, "manifest.json")),
        "stats": read_json(os.path.join(out_dir, "stats.json")),
        "histogram": read_json(os.path.join(out_dir, "histogram.json")),
        "dups": read_jsonl(os.path.join(out_dir, "duplicate_index.jsonl")),
        "unks": read_jsonl(os.path.join(out_dir, "unk_index.jsonl")),
    }


def test_output_tree(main_build):
    names = set(os.listdir(main_build["out"]))
    assert {
        "manifest.json",
        "histogram.json",
        "stats.json",
        "sample_index.jsonl",
        "duplicate_index.jsonl",
        "unk_index.jsonl",
    } <= names
    assert {f"unit_{s}" for s in SIZES} <= names
    for _base, _dirs, files in os.walk(main_build["out"]):
        assert records.FAILED_MARKER not in files


def test_sample_index_matches_input(main_build):
    exp, samples = main_build["exp"], main_build["samples"]
    assert len(samples) == len(exp)
    assert [s["sample_id"] for s in samples] == list(range(len(exp)))
    for s, e in zip(samples, exp):
        assert s["source_file"] == "./data/train.jsonl"  # as declared
        assert s["source_line"] == e["line"]
        assert s["token_count"] == len(e["ids"])
        assert s["unit_size"] == unit_of(len(e["ids"]), SIZES)
        assert s["hash"] == hashlib.sha256(e["text"].encode("utf-8")).hexdigest()
        assert re.fullmatch(r"unit_\d+/shard_\d{6}\.bin", s["shard_path"])
        assert s["shard_path"].startswith(f"unit_{s['unit_size']}/")


def test_source_lines_are_physical(main_build):
    lines = main_build["lines"]
    for s in main_build["samples"]:
        raw = lines[s["source_line"] - 1]
        assert raw.strip()
    assert main_build["samples"][0]["source_line"] == 2  # line 1 is blank
    # the row after the first whitespace-only line
    g5 = dumps(gsm8k_rows(6)[5])
    assert [s["source_line"] for s in main_build["samples"] if lines[s["source_line"] - 1] == g5] == [8]


def test_shard_files_are_fixed_width(main_build):
    out, dtype, bpt = (
        main_build["out"],
        main_build["manifest"]["token_dtype"],
        main_build["stats"]["bytes_per_token"],
    )
    assert dtype == "uint16" and bpt == 2
    per_shard: dict[str, int] = {}
    for s in main_build["samples"]:
        per_shard[s["shard_path"]] = per_shard.get(s["shard_path"], 0) + 1
    on_disk = {
        f"{u}/{f}"
        for u in os.listdir(out)
        if u.startswith("unit_")
        for f in os.listdir(os.path.join(out, u))
        if f.endswith(".bin")
    }
    assert on_disk == set(per_shard)
    for path, n_records in per_shard.items():
        unit = int(path.split("/")[0].split("_")[1])
        assert os.path.getsize(os.path.join(out, path)) == n_records * unit * bpt


def test_every_record_is_exact_tokens_then_pad(main_build, sp):
    out = main_build["out"]
    pad = main_build["manifest"]["tokenizer"]["pad_id"]
    assert pad == sp.pad_id() == 1
    cache = {}
    for s, e in zip(main_build["samples"], main_build["exp"]):
        if s["shard_path"] not in cache:
            cache[s["shard_path"]] = read_records(out, s["shard_path"], s["unit_size"], "uint16")
        record = cache[s["shard_path"]][s["shard_row"]]
        n = s["token_count"]
        assert record[:n].tolist() == sp.encode(e["text"])
        assert (record[n:] == pad).all()


def test_units_ordered_by_sample_id_and_rolled_by_samples_per_shard(main_build):
    samples = main_build["samples"]
    for size in SIZES:
        members = [s for s in samples if s["unit_size"] == size]
        # k-th sample of the unit (in sample_id order) is row k % sps of shard k // sps
        for k, s in enumerate(members):
            assert s["shard_path"] == f"unit_{size}/shard_{k // SPS:06d}.bin"
            assert s["shard_row"] == k % SPS
        shards_dir = os.path.join(main_build["out"], f"unit_{size}")
        names = sorted(f for f in os.listdir(shards_dir) if f.endswith(".bin"))
        expected_counts = [min(SPS, len(members) - i) for i in range(0, len(members), SPS)]
        assert names == [f"shard_{i:06d}.bin" for i in range(len(expected_counts))]
        for name, count in zip(names, expected_counts):
            assert os.path.getsize(os.path.join(shards_dir, name)) == count * size * 2
        if len(members) > SPS and len(members) % SPS:
            assert expected_counts[-1] < SPS  # the remainder shard is smaller


def test_histogram_and_unit_distribution_list_every_size(main_build):
    exp = main_build["exp"]
    want = {str(s): sum(1 for e in exp if unit_of(len(e["ids"]), SIZES) == s) for s in SIZES}
    assert main_build["histogram"] == want
    assert main_build["stats"]["unit_distribution"] == want
    assert want["32"] == 0


def test_empty_unit_has_marker_and_no_shards(main_build):
    d = os.path.join(main_build["out"], "unit_32")
    assert os.listdir(d) == [records.EMPTY_MARKER]
    assert os.path.getsize(os.path.join(d, "EMPTY_UNIT.md")) > 0
    for size in (16, 128, 256, 320):
        assert records.EMPTY_MARKER not in os.listdir(os.path.join(main_build["out"], f"unit_{size}"))


def test_duplicate_index(main_build):
    exp, samples = main_build["exp"], main_build["samples"]
    by_text: dict[str, list[int]] = {}
    for i, e in enumerate(exp):
        by_text.setdefault(e["text"], []).append(i)
    groups = sorted((ids for ids in by_text.values() if len(ids) > 1), key=lambda ids: ids[0])
    assert len(groups) == 3  # the repeated GSM8K row, "same text" x3, and "a\nb\nc" split two ways
    dups = main_build["dups"]
    assert [[m["sample_id"] for m in g["samples"]] for g in dups] == groups
    for g, ids in zip(dups, groups):
        assert g["count"] == len(ids)
        assert g["hash"] == hashlib.sha256(exp[ids[0]]["text"].encode()).hexdigest()
        assert all(samples[i]["hash"] == g["hash"] for i in ids)
        for m in g["samples"]:
            assert m["source_file"] == "./data/train.jsonl"
            assert m["source_line"] == exp[m["sample_id"]]["line"]
    stats = main_build["stats"]
    assert stats["duplicate_groups"] == 3
    assert stats["duplicate_samples"] == sum(len(g) for g in groups) == 7


def test_unk_index(main_build, sp):
    exp = main_build["exp"]
    unk = sp.unk_id()
    want = []
    for i, e in enumerate(exp):
        pos = [p for p, t in enumerate(e["ids"]) if t == unk]
        if pos:
            want.append({"sample_id": i, "unk_count": len(pos), "unk_positions": pos})
    assert len(want) == 2 and want[1]["unk_count"] >= 3
    unks = main_build["unks"]
    assert [{k: u[k] for k in ("sample_id", "unk_count", "unk_positions")} for u in unks] == want
    for u in unks:
        e = exp[u["sample_id"]]
        assert u["hash"] == hashlib.sha256(e["text"].encode()).hexdigest()
        assert u["source_file"] == "./data/train.jsonl" and u["source_line"] == e["line"]
        # the positions point at UNK ids inside the stored record
        s = main_build["samples"][u["sample_id"]]
        rec = read_records(main_build["out"], s["shard_path"], s["unit_size"], "uint16")[s["shard_row"]]
        assert all(rec[p] == unk for p in u["unk_positions"])
    stats = main_build["stats"]
    assert stats["samples_with_unk"] == 2
    assert stats["unk_tokens"] == sum(w["unk_count"] for w in want)


def test_stats_totals(main_build):
    exp, stats = main_build["exp"], main_build["stats"]
    assert {
        "total_samples",
        "total_tokens",
        "token_dtype",
        "bytes_per_token",
        "duplicate_groups",
        "duplicate_samples",
        "samples_with_unk",
        "unk_tokens",
        "unit_distribution",
    } <= set(stats)
    assert stats["total_samples"] == len(exp)
    assert stats["total_tokens"] == sum(len(e["ids"]) for e in exp)
    assert stats["token_dtype"] == "uint16"
    assert stats["bytes_per_token"] == 2


def test_manifest(main_build, sp):
    m = main_build["manifest"]
    assert m["pipeline"] == "unit-build"
    assert m["mintdim_version"] == __version__ == "0.1.5"
    assert m["tokenizer"] == {
        "type": "sentencepiece",
        "path": SP_MODEL,
        "vocab_size": sp.get_piece_size(),
        "unk_id": sp.unk_id(),
        "pad_id": sp.pad_id(),
    }
    assert m["token_storage"]["dtype"] == "uint16" and m["token_storage"]["bytes_per_token"] == 2
    assert m["units"] == {"sizes": SIZES, "build_batch": 5}
    assert isinstance(m["units"]["build_batch"], int)
    assert m["source"] == {
        "files": ["./data/train.jsonl"],
        "fields": [["prompt", "response"]],
        "templates": [TEMPLATE],
    }
    assert m["output"]["samples_per_shard"] == SPS
    assert m["token_dtype"] == "uint16"
    assert m["hash"] == {"algorithm": "sha256"}


def test_no_absolute_work_paths_or_timestamps_in_outputs(main_build):
    root = main_build["root"]
    for name in (
        "manifest.json",
        "stats.json",
        "histogram.json",
        "sample_index.jsonl",
        "duplicate_index.jsonl",
        "unk_index.jsonl",
    ):
        text = open(os.path.join(main_build["out"], name), encoding="utf-8").read()
        assert root not in text
        assert ".mintdim" not in text


def test_shard_observability_lines(main_build):
    logs = [line for line in main_build["built"].logs if line.startswith("[unit-build] shard=")]
    seen: dict[int, list[tuple[int, int, str]]] = {}
    for line in logs:
        m = SHARD_LINE.match(line)
        assert m, line
        assert m.group(5) is None  # one output: no output= suffix
        seen.setdefault(int(m.group(4)), []).append((int(m.group(1)), int(m.group(2)), m.group(3)))
    samples = main_build["samples"]
    for size in SIZES:
        members = [s for s in samples if s["unit_size"] == size]
        counts = [min(SPS, len(members) - i) for i in range(0, len(members), SPS)]
        want = [(k, c, f"{c * size * 2 / 2**20:.1f}") for k, c in enumerate(counts)]
        assert seen.get(size, []) == want
    assert "[unit-build] shard=000000 samples=7 bytes=0.0 MiB unit=128" in logs


def test_deterministic_whatever_the_chunking(main_build, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("data/train.jsonl", main_build["lines"])
    # one chunk, other batch size
    cfg = basic_config(
        ["./data/train.jsonl"],
        templates=[TEMPLATE],
        sizes=[SIZES],
        sps=[SPS],
        build_batch=[64],
        out="./artifacts/units",
    )
    drive(cfg)
    a = tree_bytes(main_build["out"])
    b = tree_bytes("artifacts/units")
    m_a, m_b = json.loads(a.pop("manifest.json")), json.loads(b.pop("manifest.json"))
    assert m_a["units"]["build_batch"] == 5 and m_b["units"]["build_batch"] == 64
    m_a["units"].pop("build_batch"), m_b["units"].pop("build_batch")
    assert m_a == m_b
    # checksums.sha256 lists manifest.json's own digest,
    # which differs with build_batch: every other line agrees
    sums_a, sums_b = (
        [x for x in t.pop("checksums.sha256").splitlines() if not x.endswith(b"  manifest.json")]
        for t in (a, b)
    )
    assert sums_a == sums_b and len(sums_a) == len(a)
    assert a.keys() == b.keys()
    for name in a:
        if name.endswith(".jsonl"):
            pa = [json.loads(x) for x in a[name].splitlines() if x.strip()]
            pb = [json.loads(x) for x in b[name].splitlines() if x.strip()]
            assert pa == pb, name
        elif name.endswith(".json"):
            assert json.loads(a[name]) == json.loads(b[name]), name
        else:
            assert a[name] == b[name], name


def test_intermediates_live_in_work_dir_only(main_build):
    work = os.path.join(main_build["root"], ".mintdim")
    assert os.path.isdir(work)
    assert set(os.listdir(main_build["root"])) == {"data", "artifacts", ".mintdim"}


# --- smaller builds ------------------------------------------------------------------------------


def test_zero_token_sample_goes_to_smallest_unit(tmp_path, monkeypatch, sp):
    monkeypatch.chdir(tmp_path)
    write_lines(
        "d.jsonl",
        [
            dumps({"a": "", "b": ""}),
            dumps({"a": "word", "b": " more"}),
            dumps({"a": "", "b": ""}),
            dumps({"a": "世", "b": ""}),
        ],
    )
    drive(
        basic_config(
            ["d.jsonl"], fields=[["a", "b"]], templates=["{a}{b}"], sizes=[[4, 8]], sps=[10], out="o"
        )
    )
    samples = read_jsonl("o/sample_index.jsonl")
    assert [s["token_count"] for s in samples] == [0, len(sp.encode("word more")), 0, len(sp.encode("世"))]
    assert samples[0]["unit_size"] == 4 and samples[2]["unit_size"] == 4
    # a 0-token sample right before an UNK sample does not shift the UNK positions
    want = [p for p, t in enumerate(sp.encode("世")) if t == sp.unk_id()]
    assert [(u["sample_id"], u["unk_positions"]) for u in read_jsonl("o/unk_index.jsonl")] == [(3, want)]
    assert samples[0]["hash"] == hashlib.sha256(b"").hexdigest()
    rec = read_records("o", samples[0]["shard_path"], 4, "uint16")
    assert rec[samples[0]["shard_row"]].tolist() == [sp.pad_id()] * 4
    # both empty samples are duplicates of each other
    dups = read_jsonl("o/duplicate_index.jsonl")
    assert [[m["sample_id"] for m in g["samples"]] for g in dups] == [[0, 2]]


def test_hf_tokenizer_build_no_truncation_no_special_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = gsm8k_rows(12)
    long_q = " ".join(r["prompt"] for r in rows[:6])
    data = [dumps({"q": long_q}), dumps({"q": "hello world"}), dumps({"q": "snow ☃ man"})]
    write_lines("d.jsonl", data)
    drive(
        basic_config(
            ["d.jsonl"],
            fields=[["q"]],
            templates=["Q: {q}"],
            sizes=[[8, 64, 512]],
            sps=[2],
            tokenizer={"hf_json": {"path": HF_JSON}},
            out="o",
        )
    )
    ref = Tokenizer.from_file(HF_JSON)
    ref.no_truncation()
    ref.no_padding()
    samples = read_jsonl("o/sample_index.jsonl")
    manifest = read_json("o/manifest.json")
    assert manifest["tokenizer"]["type"] == "hf_json"
    assert manifest["tokenizer"]["pad_id"] == 0 and manifest["tokenizer"]["unk_id"] == 100
    assert manifest["token_dtype"] == "uint16"
    for s, line in zip(samples, data):
        ids = ref.encode("Q: " + json.loads(line)["q"], add_special_tokens=False).ids
        assert s["token_count"] == len(ids)
        rec = read_records("o", s["shard_path"], s["unit_size"], "uint16")[s["shard_row"]]
        assert rec[: len(ids)].tolist() == ids
        assert (rec[len(ids) :] == 0).all()
        assert 101 not in ids and 102 not in ids
    assert samples[0]["token_count"] > 128 and samples[0]["unit_size"] == 512
    unks = read_jsonl("o/unk_index.jsonl")
    assert [u["sample_id"] for u in unks] == [2]
    assert unks[0]["unk_positions"] == [
        i for i, t in enumerate(ref.encode("Q: snow ☃ man", add_special_tokens=False).ids) if t == 100
    ]


def _big_vocab_tokenizer(path: str) -> None:
    """A WordLevel tokenizer with 70000 entries: vocab > 65535 forces uint32."""
    from tokenizers import models, pre_tokenizers

    vocab = {"[UNK]": 0, "[PAD]": 1}
    vocab.update({f"w{i}": i + 2 for i in range(70000)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.enable_padding(pad_id=1, pad_token="[PAD]")
    tok.save(path)


def test_uint32_build(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _big_vocab_tokenizer("big.json")
    write_lines(
        "d.jsonl", [dumps({"t": "w69999 w0 w65534"}), dumps({"t": "nope w70000 w65535"}), dumps({"t": ""})]
    )
    drive(
        basic_config(
            ["d.jsonl"],
            fields=[["t"]],
            templates=["{t}"],
            sizes=[[2, 4]],
            sps=[5],
            tokenizer={"hf_json": {"path": "big.json"}},
            out="o",
        )
    )
    m = read_json("o/manifest.json")
    assert m["token_dtype"] == "uint32" and m["token_storage"]["bytes_per_token"] == 4
    assert m["tokenizer"]["vocab_size"] == 70002 and m["tokenizer"]["path"] == "big.json"
    assert read_json("o/stats.json")["bytes_per_token"] == 4
    samples = read_jsonl("o/sample_index.jsonl")
    assert os.path.getsize("o/unit_4/shard_000000.bin") == 2 * 4 * 4
    assert os.path.getsize("o/unit_2/shard_000000.bin") == 1 * 2 * 4
    recs = read_records("o", "unit_4/shard_000000.bin", 4, "uint32")
    assert recs[0].tolist() == [70001, 2, 65536, 1]
    assert recs[1].tolist() == [0, 0, 65537, 1]
    assert read_records("o", "unit_2/shard_000000.bin", 2, "uint32")[0].tolist() == [1, 1]
    unks = read_jsonl("o/unk_index.jsonl")
    assert [(u["sample_id"], u["unk_positions"]) for u in unks] == [(1, [0, 1])]
    assert samples[2]["token_count"] == 0 and samples[2]["unit_size"] == 2


def test_several_files_one_output(tmp_path, monkeypatch, sp):
    monkeypatch.chdir(tmp_path)
    a = [dumps({"prompt": "p0", "response": "r0"}), "", dumps({"prompt": "p1", "response": "r1"})]
    b = [dumps({"q": "same"}), dumps({"q": "p0 r0"})]
    write_lines("in/a.jsonl", a)
    write_lines("in/b.jsonl", b, trailing=False)
    cfg = basic_config(
        ["./in/a.jsonl", "in/b.jsonl"],
        fields=[["prompt", "response"], ["q"]],
        templates=["{prompt} {response}", "{q}"],
        sizes=[[8, 16]],
        build_batch=[1, 3],
        sps=[2],
        out="shared",
        chunk_mb=8 * KB_AS_MB / 1024,
    )
    built = drive(cfg)
    assert len(built.build.outputs) == 1
    samples = read_jsonl("shared/sample_index.jsonl")
    assert [(s["sample_id"], s["source_file"], s["source_line"]) for s in samples] == [
        (0, "./in/a.jsonl", 1),
        (1, "./in/a.jsonl", 3),
        (2, "in/b.jsonl", 1),
        (3, "in/b.jsonl", 2),
    ]
    m = read_json("shared/manifest.json")
    assert m["source"]["files"] == ["./in/a.jsonl", "in/b.jsonl"]
    assert m["source"]["fields"] == [["prompt", "response"], ["q"]]
    assert m["source"]["templates"] == ["{prompt} {response}", "{q}"]
    assert m["units"]["build_batch"] == [1, 3]  # files disagree: a list per file
    dups = read_jsonl("shared/duplicate_index.jsonl")
    assert [[(x["sample_id"], x["source_file"]) for x in g["samples"]] for g in dups] == [
        [(0, "./in/a.jsonl"), (3, "in/b.jsonl")]
    ]
    # shards roll across files in sample_id order
    assert [s["shard_path"] for s in samples] == ["unit_8/shard_000000.bin"] * 2 + [
        "unit_8/shard_000001.bin"
    ] * 2
    recs = read_records("shared", "unit_8/shard_000001.bin", 8, "uint16")
    n = len(sp.encode("same"))
    assert recs[0][:n].tolist() == sp.encode("same")


def test_mapped_outputs_shard_line_names_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("a.jsonl", [dumps({"t": "one two"})] * 3)
    write_lines("b.jsonl", [dumps({"t": "three"})])
    built = drive(
        basic_config(
            ["a.jsonl", "b.jsonl"],
            fields=[["t"]],
            templates=["{t}"],
            sizes=[[8], [4, 8]],
            sps=[2, 5],
            out=["out_a", "out_b"],
        )
    )
    assert len(built.build.outputs) == 2
    lines = [line for line in built.logs if line.startswith("[unit-build] shard=")]
    assert "[unit-build] shard=000000 samples=2 bytes=0.0 MiB unit=8 output=out_a" in lines
    assert "[unit-build] shard=000001 samples=1 bytes=0.0 MiB unit=8 output=out_a" in lines
    assert any(line.endswith("unit=4 output=out_b") for line in lines)
    assert all(SHARD_LINE.match(line) for line in lines)
    assert read_json("out_a/histogram.json") == {"8": 3}
    assert read_json("out_b/histogram.json") == {"4": 1, "8": 0}
    assert os.listdir("out_b/unit_8") == ["EMPTY_UNIT.md"]
    assert read_json("out_a/manifest.json")["source"]["files"] == ["a.jsonl"]
    assert read_json("out_b/manifest.json")["output"]["samples_per_shard"] == 5
    # three identical samples in out_a form one group; b has none
    assert read_jsonl("out_a/duplicate_index.jsonl")[0]["count"] == 3
    assert read_jsonl("out_b/duplicate_index.jsonl") == []
    assert read_json("out_a/stats.json")["duplicate_samples"] == 3


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_compressed_input_gives_the_same_shards(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    lines = [
        "",
        dumps({"prompt": "hello", "response": "there"}),
        " ",
        dumps({"prompt": "x 世", "response": "y"}),
    ]
    payload = ("\ufeff" + "\n".join(lines) + "\n").encode("utf-8")  # a BOM at the start too
    if kind == "gz":
        with gzip.open(f"d.jsonl.{kind}", "wb") as f:
            f.write(payload)
    else:
        import zstandard

        with open(f"d.jsonl.{kind}", "wb") as f:
            f.write(zstandard.ZstdCompressor().compress(payload))
    write_lines("d.jsonl", lines)
    drive(basic_config([f"d.jsonl.{kind}"], sizes=[[8, 16]], out="z"))
    drive(basic_config(["d.jsonl"], sizes=[[8, 16]], out="p"))
    sz, sp_ = read_jsonl("z/sample_index.jsonl"), read_jsonl("p/sample_index.jsonl")
    assert [s["source_line"] for s in sz] == [2, 4] == [s["source_line"] for s in sp_]
    assert [s["source_file"] for s in sz] == [f"d.jsonl.{kind}"] * 2
    for s in sz:
        s.pop("source_file")
    for s in sp_:
        s.pop("source_file")
    assert sz == sp_
    tz, tp = tree_bytes("z"), tree_bytes("p")
    assert {k: v for k, v in tz.items() if k.endswith(".bin")} == {
        k: v for k, v in tp.items() if k.endswith(".bin")
    }


def test_empty_input_file(tmp_path, monkeypatch):
    """An empty input is an error (tests/test_empty_and_overflow.py); with source.allow_empty an output of
    no sample is still a whole, valid output."""
    monkeypatch.chdir(tmp_path)
    write_lines("e.jsonl", [], trailing=False)
    with pytest.raises(E.SourceParseError):
        drive(basic_config(["e.jsonl"], sizes=[[8, 16]], out="o"))
    cfg = basic_config(["e.jsonl"], sizes=[[8, 16]], out="o")
    cfg["source"]["allow_empty"] = True
    drive(cfg)
    assert read_json("o/histogram.json") == {"8": 0, "16": 0}
    stats = read_json("o/stats.json")
    assert stats["total_samples"] == 0 and stats["total_tokens"] == 0 and stats["empty_files"] == ["e.jsonl"]
    assert stats["unit_distribution"] == {"8": 0, "16": 0}
    assert read_jsonl("o/sample_index.jsonl") == []
    for s in (8, 16):
        assert os.listdir(f"o/unit_{s}") == ["EMPTY_UNIT.md"]


# --- data errors through the tokenize stage -------------------------------------------------------


def _many_lines_with(bad_line: int, bad: str, total: int = 40) -> list[str]:
    rows = [dumps({"prompt": f"question {i} about apples", "response": f"answer {i}"}) for i in range(total)]
    rows[bad_line - 1] = bad
    rows[2] = "  "  # blank lines before the bad one still count
    return rows


@pytest.mark.parametrize("chunk_kb", [64 * 1024, 0.3])
def test_lone_surrogate_in_declared_field_is_source_parse_error(tmp_path, monkeypatch, chunk_kb):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", _many_lines_with(31, '{"prompt": "bad \\ud800 here", "response": "r"}'))
    with pytest.raises(E.SourceParseError) as info:
        tokenize_all(basic_config(["./d.jsonl"], chunk_mb=chunk_kb * KB_AS_MB))
    msg = str(info.value)
    assert "File: ./d.jsonl" in msg and "Line: 31" in msg
    assert info.value.line == 31


def test_lone_surrogate_in_undeclared_field_is_fine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", [r'{"prompt": "ok", "response": "fine", "meta": "\ud800"}'])
    drive(basic_config(["d.jsonl"], out="o"))
    assert len(read_jsonl("o/sample_index.jsonl")) == 1


@pytest.mark.parametrize(
    "bad, error, text",
    [
        ('{"prompt": "x", "response": NaN}', E.SourceParseError, "Reason: invalid JSON syntax"),
        ('{"prompt": "x", "response": "y"', E.SourceParseError, "Reason: invalid JSON syntax"),
        ('["prompt", "response"]', E.SourceParseError, "Reason: line is not a JSON object"),
        ('{"prompt": "x"}', E.SampleSchemaError, "Missing fields: response"),
        ('{"prompt": "x", "response": 3}', E.SampleSchemaError, "Found JSON type: number"),
        ('{"prompt": "x", "response": null}', E.SampleSchemaError, "Found JSON type: null"),
        (
            '{"prompt": "x", "response": ' + "[" * 3000 + "]" * 3000 + "}",
            E.SourceParseError,
            "Reason: invalid JSON",
        ),
    ],
)
@pytest.mark.parametrize("chunk_kb", [64 * 1024, 0.25])
def test_data_errors_report_the_physical_line(tmp_path, monkeypatch, bad, error, text, chunk_kb):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", _many_lines_with(33, bad))
    with pytest.raises(error) as info:
        tokenize_all(basic_config(["./d.jsonl"], chunk_mb=chunk_kb * KB_AS_MB))
    assert text in str(info.value)
    assert "File: ./d.jsonl" in str(info.value) and "Line: 33" in str(info.value)


def test_invalid_utf8_reports_the_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [dumps({"prompt": f"q{i}", "response": "r"}).encode() for i in range(20)]
    rows[13] = b'{"prompt": "\xff\xfe", "response": "r"}'
    with open("d.jsonl", "wb") as f:
        f.write(b"\n".join(rows) + b"\n")
    with pytest.raises(E.SourceParseError) as info:
        tokenize_all(basic_config(["d.jsonl"], chunk_mb=0.2 * KB_AS_MB))
    assert "Line: 14" in str(info.value) and "Reason: invalid UTF-8" in str(info.value)


@pytest.mark.parametrize("chunk_kb", [64 * 1024, 0.25])
def test_unit_overflow_reports_line_and_counts(tmp_path, monkeypatch, sp, chunk_kb):
    monkeypatch.chdir(tmp_path)
    long = " ".join(["apples and oranges"] * 30)
    write_lines("d.jsonl", _many_lines_with(28, dumps({"prompt": long, "response": "r"})))
    n = len(sp.encode(long + "\nr"))
    with pytest.raises(E.UnitOverflowError) as info:  # counted by the plan stage, which sees every chunk
        drive(basic_config(["./d.jsonl"], sizes=[[16, 32]], chunk_mb=chunk_kb * KB_AS_MB))
    msg = str(info.value)
    assert "Sample: ./d.jsonl:28" in msg
    assert f"token_count: {n}" in msg and "max_unit_size: 32" in msg
    assert f"1 sample is longer than the largest unit size 32:\n\n• ./d.jsonl:28 ({n} tokens)" in msg


# --- shard format units -------------------------------------------------------------------------------


def test_shard_line_and_warning_text():
    assert (
        shards.shard_line(12, 100000, int(241.8 * 2**20), 512)
        == "[unit-build] shard=000012 samples=100000 bytes=241.8 MiB unit=512"
    )
    assert (
        shards.shard_line(0, 3, 0, 8, "out_a")
        == "[unit-build] shard=000000 samples=3 bytes=0.0 MiB unit=8 output=out_a"
    )
    assert shards.shard_warning(12, 512 * 2**20) is None
    assert shards.shard_warning(12, int(684.3 * 2**20)) == (
        "[unit-build:warning] shard=000012 size=684.3 MiB exceeds recommended 512 MiB.\n"
        "Build continues because sharding is controlled by samples_per_shard."
    )
    assert shards.shard_name(7) == "shard_000007.bin"


def test_pad_block():
    lengths = np.array([3, 0, 4, 1])
    tokens = np.array([5, 6, 7, 9, 9, 9, 9, 2], dtype=np.uint32)
    block = shards.pad_block(lengths, tokens, 4, 1, "uint16")
    assert block.dtype == np.dtype("<u2")
    assert block.tolist() == [[5, 6, 7, 1], [1, 1, 1, 1], [9, 9, 9, 9], [2, 1, 1, 1]]
    assert (
        shards.pad_block(np.array([0, 0]), np.zeros(0, np.uint32), 3, 7, "uint32").tolist() == [[7] * 3] * 2
    )


def test_shard_writer_rolls_by_count_and_reports(tmp_path):
    closed = []
    w = shards.ShardWriter(
        str(tmp_path),
        unit=3,
        samples_per_shard=4,
        pad_id=0,
        dtype="uint16",
        on_close=lambda i, info: closed.append((i, info)),
    )
    rng = np.random.default_rng(0)
    all_rows = []
    for batch in (5, 1, 4, 0, 1):  # 11 records over batches that straddle shard ends
        lengths = rng.integers(0, 4, size=batch)
        toks = rng.integers(2, 60000, size=int(lengths.sum())).astype(np.uint32)
        if batch:
            w.write(lengths, toks)
        ends = np.cumsum(lengths)
        for k, n in enumerate(lengths):
            seq = toks[ends[k] - n : ends[k]].tolist()
            all_rows.append(seq + [0] * (3 - n))
    info = w.close()
    assert [s["records"] for s in info] == [4, 4, 3]
    assert [s["name"] for s in info] == ["shard_000000.bin", "shard_000001.bin", "shard_000002.bin"]
    assert [i for i, _ in closed] == [0, 1, 2]
    got = []
    for s in info:
        data = np.fromfile(tmp_path / s["name"], dtype="<u2")
        assert data.nbytes == s["bytes"] == s["records"] * 3 * 2
        got += data.reshape(-1, 3).tolist()
    assert got == all_rows


def test_shard_writer_little_endian(tmp_path):
    w = shards.ShardWriter(str(tmp_path), unit=2, samples_per_shard=10, pad_id=1, dtype="uint32")
    w.write(np.array([1]), np.array([0x01020304], dtype=np.uint32))
    w.close()
    assert (tmp_path / "shard_000000.bin").read_bytes() == bytes([4, 3, 2, 1, 1, 0, 0, 0])


def test_duplicate_groups_unit():
    def d(s):
        return np.frombuffer(hashlib.sha256(s.encode()).digest(), dtype=np.uint8)

    texts = ["b", "a", "c", "a", "b", "d", "a", "e"]
    digests = np.stack([d(t) for t in texts])
    groups = [g.tolist() for g in indexes.duplicate_groups(digests)]
    assert groups == [[0, 4], [1, 3, 6]]
    assert indexes.duplicate_groups(np.stack([d("x")])) == []
    assert indexes.duplicate_groups(np.stack([d("x"), d("y")])) == []
    # digests equal only in their first bytes are not duplicates
    a, b = d("x").copy(), d("x").copy()
    b[31] ^= 1
    assert indexes.duplicate_groups(np.stack([a, b])) == []
    # ... and one that shares only its first 8 bytes with a true pair still leaves that pair whole
    assert [g.tolist() for g in indexes.duplicate_groups(np.stack([a, b, a, d("y"), b]))] == [[0, 2], [1, 4]]


def test_duplicate_index_exact_when_every_digest_shares_its_first_bytes(tmp_path, monkeypatch):
    """Aggregate finds duplicates among the samples whose first 8 digest bytes another sample shares,
    then by whole digests: with a digest whose first 8 bytes are the same for every text, the groups
    are still exactly the samples of equal text, split across several chunks and source files."""
    import types

    import mintdim.stages.tokenize as tokenize_stage

    class Sha256:  # SHA-256 with its first 8 bytes zeroed
        def __init__(self, data=b""):
            self._h = hashlib.sha256(data)

        def digest(self):
            return bytes(8) + self._h.digest()[8:]

    monkeypatch.setattr(tokenize_stage, "hashlib", types.SimpleNamespace(sha256=Sha256))
    monkeypatch.chdir(tmp_path)
    texts = [f"t{i % 7}" if i % 3 else f"u{i}" for i in range(60)]
    write_jsonl("data/a.jsonl", [{"prompt": t, "response": "r"} for t in texts[:35]])
    write_jsonl("data/b.jsonl", [{"prompt": t, "response": "r"} for t in texts[35:]])
    cfg = basic_config(["./data/a.jsonl", "./data/b.jsonl"], fields=[["prompt", "response"]] * 2)
    cfg["source"]["templates"] = ["{prompt}\n{response}"] * 2
    cfg["chunk_mb"] = 0.0002  # several chunks a file
    drive(cfg)
    by_text: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        by_text.setdefault(t, []).append(i)
    want = sorted((ids for ids in by_text.values() if len(ids) > 1), key=lambda ids: ids[0])
    dups = read_jsonl("out/duplicate_index.jsonl")
    assert [[m["sample_id"] for m in g["samples"]] for g in dups] == want
    for g, ids in zip(dups, want):
        whole = hashlib.sha256(f"{texts[ids[0]]}\nr".encode()).hexdigest()
        assert g["hash"] == "0" * 16 + whole[16:]
        files = ["./data/a.jsonl" if i < 35 else "./data/b.jsonl" for i in ids]
        lines = [i + 1 if i < 35 else i - 34 for i in ids]
        assert [(m["source_file"], m["source_line"]) for m in g["samples"]] == list(zip(files, lines))
    stats = read_json("out/stats.json")
    assert stats["duplicate_groups"] == len(want) == 7
    assert stats["duplicate_samples"] == sum(map(len, want))


# --- mintdim.formats.records --------------------------------------------------------------------------------


def _build_for(out_dirs, sizes=(8, 16)):
    files = [f"in{i}.jsonl" for i in range(len(out_dirs))]
    return resolve(basic_config(files, sizes=[list(sizes)], out=list(out_dirs)))


def test_state_absent_empty_foreign(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build = _build_for(["o"])
    wd = build.work_dir
    assert records.state(wd, os.path.abspath("missing")).kind == "absent"
    os.mkdir("empty")
    assert records.state(wd, os.path.abspath("empty")).kind == "empty"
    os.mkdir("user")
    (tmp_path / "user" / "notes.txt").write_text("mine")
    assert records.state(wd, os.path.abspath("user")).kind == "foreign"
    (tmp_path / "afile").write_text("x")
    assert records.state(wd, os.path.abspath("afile")).kind == "file"
    os.symlink("empty", "link")
    assert records.state(wd, os.path.abspath("link")).kind == "file"
    # looks like MintDim's markers, but MintDim never recorded this directory: still foreign
    os.makedirs("fake/unit_8")
    (tmp_path / "fake" / "unit_8" / records.FAILED_MARKER).write_text("x")
    assert records.state(wd, os.path.abspath("fake")).kind == "foreign"


def test_failure_markers_then_state_ours_failed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build = _build_for(["o"])
    err = E.UnitOverflowError.make("./x.jsonl", 3, 40, 16)
    written = records.write_failure_markers(build, err)
    absdir = os.path.abspath("o")
    assert sorted(written) == sorted([os.path.join(absdir, "unit_8"), os.path.join(absdir, "unit_16")])
    for s in (8, 16):
        assert os.listdir(f"o/unit_{s}") == [records.FAILED_MARKER]
        text = open(f"o/unit_{s}/{records.FAILED_MARKER}", encoding="utf-8").read()
        assert "UnitOverflowError" in text and "./x.jsonl:3" in text
    assert set(os.listdir("o")) == {"unit_8", "unit_16"}  # no stats.json, no shard
    assert records.state(build.work_dir, absdir).kind == "failed"
    # a rerun's pre-flight does not see it as "not empty": it is built again
    assert outputs_to_build(build) == [0]
    # markers again (a second failure) keep it failed
    records.write_failure_markers(build, err)
    assert records.state(build.work_dir, absdir).kind == "failed"


def test_write_failure_markers_never_touches_a_foreign_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("theirs/unit_8")
    (tmp_path / "theirs" / "data.bin").write_bytes(b"\x00\x01")
    (tmp_path / "theirs" / "unit_8" / "keep.txt").write_text("keep")
    before = tree_bytes("theirs")
    build = _build_for(["theirs", "mine"])
    written = records.write_failure_markers(build, E.BuildError.make("boom"))
    assert tree_bytes("theirs") == before
    assert set(os.listdir("theirs")) == {"unit_8", "data.bin"}
    assert records.read_record(build.work_dir, os.path.abspath("theirs")) == {}
    assert all(w.startswith(os.path.abspath("mine")) for w in written) and written
    assert records.state(build.work_dir, os.path.abspath("theirs")).kind == "foreign"
    assert records.state(build.work_dir, os.path.abspath("mine")).kind == "failed"
    records.clear_failure_markers(os.path.abspath("theirs"))
    assert tree_bytes("theirs") == before


def test_clear_failure_markers_only_removes_markers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build = _build_for(["o"])
    records.write_failure_markers(build, E.BuildError.make("boom"))
    absdir = os.path.abspath("o")
    records.clear_failure_markers(absdir)
    assert os.path.isdir(absdir) and os.listdir(absdir) == []
    # a user file beside the markers: nothing is removed
    records.write_failure_markers(build, E.BuildError.make("boom"))
    (tmp_path / "o" / "unit_8" / "user.txt").write_text("mine")
    before = tree_bytes("o")
    records.clear_failure_markers(absdir)
    assert tree_bytes("o") == before
    assert records.state(build.work_dir, absdir).kind == "foreign"


def test_complete_output_state_and_rerun_after_failure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", [dumps({"prompt": "a", "response": "b"})])
    cfg = basic_config(["d.jsonl"], sizes=[[8, 16]], out="o")
    build = resolve(cfg)
    records.write_failure_markers(build, E.BuildError.make("first attempt failed"))
    built = drive(cfg)  # the rerun replaces MintDim's own markers with the finished output
    absdir = os.path.abspath("o")
    st = records.state(built.build.work_dir, absdir)
    assert st.kind == "placed" and st.entry["build_id"] == built.build.build_id
    assert os.listdir("o/unit_16") == ["EMPTY_UNIT.md"]
    assert not any(records.FAILED_MARKER in files for _b, _d, files in os.walk("o"))
    assert read_json("o/stats.json")["total_samples"] == 1
    # a complete output is never marked as failed afterwards
    before = tree_bytes("o")
    assert records.write_failure_markers(built.build, E.BuildError.make("later")) == []
    assert tree_bytes("o") == before
    # and a second build into it is refused
    with pytest.raises(E.OutputValidationError):
        drive(basic_config(["d.jsonl"], sizes=[[8, 32]], out="o"))


class _Killed(BaseException):
    """Stands for SIGKILL arriving between two lines of finalize."""


def test_rerun_after_kill_inside_finalize_is_accepted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", [dumps({"prompt": "a", "response": "b"})])
    cfg = basic_config(["d.jsonl"], sizes=[[8, 16]], out="o")
    real = records.write_record

    def dying(work_dir, absdir, **data):
        if data.get("placed"):  # the output was placed; its record not yet written
            raise _Killed()
        return real(work_dir, absdir, **data)

    monkeypatch.setattr(records, "write_record", dying)
    with pytest.raises(_Killed):
        drive(cfg)
    monkeypatch.setattr(records, "write_record", real)
    assert os.path.isfile("o/stats.json")  # the finished tree was already moved into place
    build = resolve(cfg)
    # this same build's own completed output: a rerun must
    # not call it "not empty", and its finalize records it
    st = records.state(build.work_dir, os.path.abspath("o"))
    assert st.kind == "placing" and st.entry["build_id"] == build.build_id
    assert outputs_to_build(preflight(cfg)[0]) == [0]
    before = tree_bytes("o")
    drive(cfg)
    assert records.state(build.work_dir, os.path.abspath("o")).kind == "placed" and tree_bytes("o") == before


# --- unit assignment boundaries (a word-level tokenizer: token_count == number of words) --------------------


def test_unit_assignment_boundaries(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _big_vocab_tokenizer("big.json")
    counts = [0, 1, 2, 3, 4, 5, 6]
    write_lines("d.jsonl", [dumps({"t": " ".join(f"w{i}" for i in range(n))}) for n in counts])
    drive(
        basic_config(
            ["d.jsonl"],
            fields=[["t"]],
            templates=["{t}"],
            sizes=[[2, 4, 6]],
            sps=[100],
            tokenizer={"hf_json": {"path": "big.json"}},
            out="o",
        )
    )
    samples = read_jsonl("o/sample_index.jsonl")
    assert [s["token_count"] for s in samples] == counts
    assert [s["unit_size"] for s in samples] == [2, 2, 2, 4, 4, 6, 6]
    assert [s["shard_row"] for s in samples] == [0, 1, 2, 0, 1, 0, 1]


def test_unit_overflow_by_one_token(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _big_vocab_tokenizer("big.json")
    write_lines("d.jsonl", [dumps({"t": "w1 w2"}), dumps({"t": "w1 w2 w3"})])
    with pytest.raises(E.UnitOverflowError) as info:
        drive(
            basic_config(
                ["d.jsonl"],
                fields=[["t"]],
                templates=["{t}"],
                sizes=[[1, 2]],
                tokenizer={"hf_json": {"path": "big.json"}},
                out="o",
            )
        )
    assert "Sample: d.jsonl:2" in str(info.value)
    assert "token_count: 3" in str(info.value) and "max_unit_size: 2" in str(info.value)


def test_shard_writer_block_rows_do_not_change_bytes(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 6, size=50)
    toks = rng.integers(0, 1000, size=int(lengths.sum())).astype(np.uint32)
    results = []
    for rows in (8192, 3, 1):
        monkeypatch.setattr(shards, "BLOCK_ROWS", rows)
        d = tmp_path / f"b{rows}"
        d.mkdir()
        w = shards.ShardWriter(str(d), unit=5, samples_per_shard=16, pad_id=9, dtype="uint16")
        w.write(lengths[:20], toks[: int(lengths[:20].sum())])
        w.write(lengths[20:], toks[int(lengths[:20].sum()) :])
        assert [s["records"] for s in w.close()] == [16, 16, 16, 2]
        results.append(tree_bytes(str(d)))
    assert results[0] == results[1] == results[2]


def test_hf_literal_braces_verbatim_values_and_pad_inside_text(tmp_path, monkeypatch):
    """Escaped braces render as literal braces; values holding `{x}` or `[PAD]` are encoded as plain text."""
    monkeypatch.chdir(tmp_path)
    rows = [{"a": "{x}", "b": "value"}, {"a": "hello [PAD] world", "b": "{{b}}"}]
    write_lines("d.jsonl", [dumps(r) for r in rows])
    template = "{{json}}: {a} | {b} / {a}"
    drive(
        basic_config(
            ["d.jsonl"],
            fields=[["a", "b"]],
            templates=[template],
            sizes=[[32]],
            sps=[10],
            tokenizer={"hf_json": {"path": HF_JSON}},
            out="o",
        )
    )
    ref = Tokenizer.from_file(HF_JSON)
    ref.no_truncation()
    ref.no_padding()
    samples = read_jsonl("o/sample_index.jsonl")
    recs = read_records("o", "unit_32/shard_000000.bin", 32, "uint16")
    for s, r in zip(samples, rows):
        text = "{json}: " + r["a"] + " | " + r["b"] + " / " + r["a"]
        ids = ref.encode(text, add_special_tokens=False).ids
        assert s["hash"] == hashlib.sha256(text.encode()).hexdigest()
        assert s["token_count"] == len(ids)
        assert recs[s["shard_row"]][: len(ids)].tolist() == ids
    # "[PAD]" in a value becomes the pad id inside the sample, and is counted as a token (DECISIONS)
    ids = recs[1][: samples[1]["token_count"]].tolist()
    assert ids.count(0) == 2
    assert samples[1]["token_count"] == len(
        ref.encode("{json}: hello [PAD] world | {{b}} / hello [PAD] world", add_special_tokens=False).ids
    )


def test_template_literal_unk_fails_preflight_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines("d.jsonl", [dumps({"prompt": "a", "response": "b"})])
    with pytest.raises(E.TemplateTokenizerError) as info:
        drive(basic_config(["d.jsonl"], templates=["{prompt} 世界 {response}"], out="o"))
    assert "File index: 0" in str(info.value)
    assert sorted(os.listdir(".")) == ["d.jsonl"]


def test_interleaved_output_mapping(tmp_path, monkeypatch):
    """out = [A, B, A]: A holds files 0 and 2 (sample_id runs over both), B holds file 1."""
    monkeypatch.chdir(tmp_path)
    for name, words in (("f0", ["alpha", "beta"]), ("f1", ["gamma"]), ("f2", ["delta", "alpha"])):
        write_lines(f"{name}.jsonl", [dumps({"prompt": w, "response": "r"}) for w in words])
    built = drive(
        basic_config(
            ["f0.jsonl", "f1.jsonl", "f2.jsonl"],
            sizes=[[16]],
            sps=[3],
            out=["A", "B", "./A"],
            build_batch=[4],
        )
    )
    assert [o.files for o in built.build.outputs] == [[0, 2], [1]]
    a = read_jsonl("A/sample_index.jsonl")
    assert [(s["sample_id"], s["source_file"], s["source_line"]) for s in a] == [
        (0, "f0.jsonl", 1),
        (1, "f0.jsonl", 2),
        (2, "f2.jsonl", 1),
        (3, "f2.jsonl", 2),
    ]
    assert [s["shard_path"] for s in a] == ["unit_16/shard_000000.bin"] * 3 + ["unit_16/shard_000001.bin"]
    assert read_json("A/manifest.json")["source"]["files"] == ["f0.jsonl", "f2.jsonl"]
    assert read_json("A/manifest.json")["units"]["build_batch"] == 4
    assert read_json("B/manifest.json")["source"]["files"] == ["f1.jsonl"]
    assert [s["sample_id"] for s in read_jsonl("B/sample_index.jsonl")] == [0]
    dups = read_jsonl("A/duplicate_index.jsonl")
    assert [[(m["sample_id"], m["source_file"], m["source_line"]) for m in g["samples"]] for g in dups] == [
        [(0, "f0.jsonl", 1), (3, "f2.jsonl", 2)]
    ]
    lines = [line for line in built.logs if line.startswith("[unit-build] shard=")]
    assert sorted(line.rsplit(" output=", 1)[1] for line in lines) == ["A", "A", "B"]


# --- the intermediates' records ---------------------------------------------------------------------------

QWEN_DIR = os.path.join(os.path.dirname(GSM8K), "..", "tokenizers", "qwen3-template-bpe")
CHAT_FILE = os.path.join(os.path.dirname(GSM8K), "..", "chat", "gsm8k_chat.jsonl")


def _records_configs(tmp_path) -> dict[str, dict]:
    """Builds that together write every key of meta.msgpack, of the plan and of its units summary."""
    rows = gsm8k_rows(240)
    lines: list = [json.dumps(r) for r in rows]
    lines[5], lines[77] = '{"prompt": "broken', '{"prompt": "no response"}'  # bad records
    lines[12] = json.dumps({"prompt": rows[12]["prompt"], "response": ""})  # trains no token
    lines[30] = json.dumps({"prompt": rows[30]["prompt"], "response": rows[30]["response"] * 12})  # long
    write_jsonl(tmp_path / "a.jsonl", lines)
    write_jsonl(tmp_path / "empty.jsonl", [])
    skip = {"train_on": [["response"]], "on_bad_record": ["skip"], "max_skipped": [0.5]}
    qwen = {"hf_dir": {"path": QWEN_DIR}}
    units = basic_config(["a.jsonl", "empty.jsonl"], out="units", chunk_mb=0.02)
    units["source"] |= skip | {"drop_untrained": [True], "allow_empty": True}
    units["units"] = {"sizes": "auto", "k": 3, "max_size": 256, "overflow": ["truncate"], "build_batch": [32]}
    taken = basic_config(["a.jsonl"], out="taken", sizes=[[128, 256]], tokenizer=qwen)
    taken["source"] |= skip | {"take": [1.5], "templates": ["{prompt}\n{response}<|im_end|>"]}
    taken["units"]["overflow"] = ["drop"]
    untrained = basic_config(["a.jsonl"], out="untrained", sizes=[[128, 4096]])  # overflow: error
    untrained["source"] |= skip | {"drop_untrained": [True]}
    packed = basic_config(["a.jsonl"], out="packed", chunk_mb=0.02)
    packed["source"] |= skip | {"take": [0.8], "drop_untrained": [True]}
    packed["units"] = {"pack": [256], "overflow": ["truncate"], "build_batch": [32]}
    chat = {
        "source": {"files": [CHAT_FILE], "chat": {"system": "system"}, "train_on": [["assistant"]]},
        "tokenizer": qwen,
        "units": {"pack": [4096], "overflow": ["drop"], "build_batch": [64]},
        "output": {"dir": "chat", "samples_per_shard": [10]},
    }
    chat["source"]["take"] = [40]
    return {"units": units, "taken": taken, "untrained": untrained, "packed": packed, "chat": chat}


def test_the_stage_records_write_every_intermediate_back_byte_for_byte(tmp_path, monkeypatch):
    """meta.msgpack, the plan and its units summary, read into their records (formats/intermediate.py)
    and written again, are the bytes the stages wrote: the records hold every key, in the files' order,
    with the stored dtypes (docs/intermediates.md). The builds write every key the formats have."""
    from mintdim.formats import intermediate as inter

    monkeypatch.chdir(tmp_path)
    keys: dict[str, set] = {"meta": set(), "plan": set(), "units": set()}
    kinds = {
        "meta": (lambda p: inter.ChunkMeta.read(os.path.dirname(p)), "tok/*/meta.msgpack"),
        "plan": (inter.Plan.read, "plan/o*[0-9].msgpack"),
        "units": (inter.UnitsSummary.read, "plan/o*.units.json"),
    }
    for name, cfg in _records_configs(tmp_path).items():
        built = drive(cfg)
        root = Layout(built.build.work_dir, built.build.build_id).root
        for kind, (read, pattern) in kinds.items():
            found = sorted(glob.glob(os.path.join(root, pattern)))
            assert found, (name, kind)
            for path in found:
                again = str(tmp_path / "again")
                read(path).write(again)
                with open(path, "rb") as f, open(again, "rb") as g:
                    assert f.read() == g.read(), (name, path)
                with open(path, "rb") as f:
                    keys[kind] |= set(json.load(f) if kind == "units" else next(inter.iter_objects(path)))
    assert keys["meta"] >= {"trained", "trained_roles", "trained_roles_samples", "end_markers", "bad_first"}
    assert keys["plan"] >= {
        "skipped",
        "empty_files",
        "take",
        "status",
        "layout",
        "trained_roles",
        "end_markers",
    }
    assert keys["units"] == {
        "output",
        "sizes",
        "counts",
        "samples_per_shard",
        "shards",
        "auto",
        "layout",
        "rows",
        "take",
    }


def _build_tree_sums(workdir, config: str, tree: str) -> dict[str, str]:
    """`mintdim build CONFIG --keep-intermediates` of a shipped example with the package of `tree` (a source
    checkout), in a fresh copy of data/ and config/: the SHA-256 of every file of its chunks and plan
    (tok/, plan/ under the build's work directory) and of its output (artifacts/)."""
    shutil.copytree(os.path.join(REPO, "data"), os.path.join(str(workdir), "data"))
    shutil.copytree(os.path.join(REPO, "config"), os.path.join(str(workdir), "config"))
    env = dict(os.environ, PYTHONPATH=tree)
    cmd = [sys.executable, "-m", "mintdim", "build", config, "--cores", "2", "--keep-intermediates"]
    done = subprocess.run(cmd, cwd=str(workdir), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (tok,) = glob.glob(os.path.join(str(workdir), ".mintdim", "*", "tok"))
    kept = tree_bytes(os.path.dirname(tok))
    files = {rel: data for rel, data in kept.items() if rel.split(os.sep)[0] in ("tok", "plan")}
    files |= {
        f"artifacts/{rel}": data for rel, data in tree_bytes(os.path.join(str(workdir), "artifacts")).items()
    }
    return {
        rel: hashlib.sha256(data).hexdigest()
        for rel, data in files.items()
        if ".snakemake_timestamp" not in rel
    }


@pytest.mark.skipif(not os.environ.get("MINTDIM_BASELINE_TREE"), reason="MINTDIM_BASELINE_TREE is not set")
@pytest.mark.parametrize("config", ["config/config.yaml", "config/packed.yaml", "config/chat.yaml"])
def test_the_shipped_examples_keep_the_bytes_of_a_baseline_tree(tmp_path, config):
    """With MINTDIM_BASELINE_TREE (a checkout of an earlier commit): the shipped example built by it and by
    this tree writes the same chunks, plan and output, file for file (tests/README.md)."""
    baseline = _build_tree_sums(tmp_path / "baseline", config, os.environ["MINTDIM_BASELINE_TREE"])
    assert len(baseline) > 10 and any(k.startswith("plan/") for k in baseline)
    assert _build_tree_sums(tmp_path / "this", config, REPO) == baseline
