"""End-to-end builds through the real Snakemake workflow: the fluent API, the runner, `mintdim build`
and a direct `snakemake` run.

Every build is checked the way a user would check it: shards are parsed with numpy from the
manifest's dtype and each unit size, every record is compared with the tokenizer's own encode of
the rendered text (re-rendered here, independently of MintDim), padding follows token_count, and
sample/UNK/duplicate indexes, histogram and stats are recomputed from the inputs.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import socket
import sys
from functools import cache

import numpy as np
import pytest
import yaml
from conftest import (
    HF_JSON,
    SP_MODEL,
    basic_config,
    build_in,
    gsm8k_rows,
    read_json,
    read_jsonl,
    run_cli,
    run_snakemake,
    tree_bytes,
    write_jsonl,
)

import mintdim
from mintdim.run.runner import run_build

INDEX_FILES = (
    "manifest.json",
    "histogram.json",
    "stats.json",
    "sample_index.jsonl",
    "sample_index.idx",
    "duplicate_index.jsonl",
    "unk_index.jsonl",
)


# ---------------------------------------------------------------------------------------------
# helpers: data, independent rendering/encoding, and a full check of one output directory
# ---------------------------------------------------------------------------------------------


def render(template: str, row: dict) -> str:
    """The spec's template semantics, re-implemented: {name} substituted verbatim, {{ and }} literal."""

    def sub(m):
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        return row[m.group(1)]

    return re.sub(r"\{\{|\}\}|\{([^{}]+)\}", sub, template)


@cache
def _sp(path: str):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=path)


@cache
def _hf(path: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def encoder(kind: str, path: str):
    if kind == "sentencepiece":
        return lambda text: list(_sp(path).encode(text))
    return lambda text: list(_hf(path).encode(text, add_special_tokens=False).ids)


def read_source_lines(path: str) -> list[tuple[int, bytes]]:
    """(1-based physical line, bytes) of every non-blank line, for .jsonl, .jsonl.gz, .jsonl.zst."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    elif path.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip(b" \t\r\n")]


def expected_samples(cwd, files: list[str], templates: list[str]) -> list[dict]:
    """Samples of one output in sample_id order: files in order (declared spelling), lines in order."""
    out = []
    for decl, template in zip(files, templates):
        for n, line in read_source_lines(os.path.join(str(cwd), decl)):
            text = render(template, json.loads(line))
            out.append({"text": text, "source_file": decl, "source_line": n})
    return out


def check_output(outdir, samples: list[dict], encode) -> dict:
    """Verify one finished output directory end to end. Returns the parsed pieces for further checks."""
    outdir = str(outdir)
    names = set(os.listdir(outdir))
    for name in INDEX_FILES:
        assert name in names, f"{name} missing in {outdir}"
    manifest = read_json(os.path.join(outdir, "manifest.json"))
    stats = read_json(os.path.join(outdir, "stats.json"))
    histogram = read_json(os.path.join(outdir, "histogram.json"))
    records = read_jsonl(os.path.join(outdir, "sample_index.jsonl"))
    dtype_name = manifest["token_dtype"]
    assert dtype_name in ("uint16", "uint32")
    assert manifest["token_storage"]["dtype"] == dtype_name
    dtype = np.dtype(dtype_name).newbyteorder("<")
    assert manifest["token_storage"]["bytes_per_token"] == dtype.itemsize
    assert manifest["hash"] == {"algorithm": "sha256"}
    assert manifest["pipeline"] == "unit-build"
    assert manifest["mintdim_version"] == mintdim.__version__
    tok = manifest["tokenizer"]
    pad, unk = tok["pad_id"], tok["unk_id"]
    assert (tok["vocab_size"] <= 65535) == (dtype_name == "uint16")
    sizes = manifest["units"]["sizes"]
    sps = manifest["output"]["samples_per_shard"]
    assert isinstance(sps, int) and sps > 0
    assert sorted(n for n in names if n.startswith("unit_")) == sorted(f"unit_{s}" for s in sizes)

    assert [r["sample_id"] for r in records] == list(range(len(samples)))
    per_unit: dict[int, list[int]] = {s: [] for s in sizes}
    ids_of = []
    shard_cache: dict[str, np.ndarray] = {}
    for rec, exp in zip(records, samples):
        ids = encode(exp["text"])
        ids_of.append(ids)
        tc = len(ids)
        assert rec["token_count"] == tc, (rec, exp)
        assert rec["hash"] == hashlib.sha256(exp["text"].encode("utf-8")).hexdigest()
        assert rec["source_file"] == exp["source_file"]
        assert rec["source_line"] == exp["source_line"]
        unit = min(s for s in sizes if s >= tc)
        assert rec["unit_size"] == unit
        k = len(per_unit[unit])
        per_unit[unit].append(rec["sample_id"])
        assert rec["shard_path"] == f"unit_{unit}/shard_{k // sps:06d}.bin"
        if "shard_row" in rec:
            assert rec["shard_row"] == k % sps
        path = os.path.join(outdir, rec["shard_path"])
        if path not in shard_cache:
            raw = np.fromfile(path, dtype=dtype)
            assert raw.size % unit == 0
            shard_cache[path] = raw.reshape(-1, unit)
        row = shard_cache[path][k % sps]
        assert row[:tc].tolist() == ids
        assert (row[tc:] == pad).all()

    shards_per_unit = {}
    for s in sizes:
        unit_dir = os.path.join(outdir, f"unit_{s}")
        files = sorted(os.listdir(unit_dir))
        n = len(per_unit[s])
        if n == 0:
            assert files == ["EMPTY_UNIT.md"], (s, files)
            shards_per_unit[s] = 0
            continue
        n_shards = -(-n // sps)
        assert files == [f"shard_{i:06d}.bin" for i in range(n_shards)], (s, files)
        for i, fname in enumerate(files):
            rows = os.path.getsize(os.path.join(unit_dir, fname)) // (s * dtype.itemsize)
            assert os.path.getsize(os.path.join(unit_dir, fname)) == rows * s * dtype.itemsize
            assert rows == (sps if i < n_shards - 1 else n - sps * (n_shards - 1))
        shards_per_unit[s] = n_shards

    dist = {str(s): len(per_unit[s]) for s in sizes}
    assert {str(k): v for k, v in histogram.items()} == dist
    assert {str(k): v for k, v in stats["unit_distribution"].items()} == dist
    assert stats["total_samples"] == len(samples)
    assert stats["total_tokens"] == sum(len(i) for i in ids_of)
    assert stats["token_dtype"] == dtype_name
    assert stats["bytes_per_token"] == dtype.itemsize

    # UNK index, recomputed from the tokenizer's own ids
    exp_unk = []
    for rec, exp, ids in zip(records, samples, ids_of):
        pos = [i for i, t in enumerate(ids) if t == unk]
        if pos:
            exp_unk.append(
                {
                    "sample_id": rec["sample_id"],
                    "hash": rec["hash"],
                    "source_file": exp["source_file"],
                    "source_line": exp["source_line"],
                    "unk_count": len(pos),
                    "unk_positions": pos,
                }
            )
    unk_rows = read_jsonl(os.path.join(outdir, "unk_index.jsonl"))
    assert [{k: r[k] for k in exp_unk[0]} for r in unk_rows] == exp_unk if exp_unk else unk_rows == []
    assert stats["samples_with_unk"] == len(exp_unk)
    assert stats["unk_tokens"] == sum(r["unk_count"] for r in exp_unk)

    # duplicate index, recomputed from the rendered texts
    groups: dict[str, list[int]] = {}
    for rec in records:
        groups.setdefault(rec["hash"], []).append(rec["sample_id"])
    exp_dup = [
        {
            "hash": h,
            "count": len(ids),
            "samples": [
                {
                    "sample_id": i,
                    "source_file": samples[i]["source_file"],
                    "source_line": samples[i]["source_line"],
                }
                for i in ids
            ],
        }
        for h, ids in sorted(groups.items(), key=lambda kv: kv[1][0])
        if len(ids) > 1
    ]
    dup_rows = read_jsonl(os.path.join(outdir, "duplicate_index.jsonl"))
    got_dup = [
        {
            "hash": g["hash"],
            "count": g["count"],
            "samples": [{k: s[k] for k in ("sample_id", "source_file", "source_line")} for s in g["samples"]],
        }
        for g in dup_rows
    ]
    assert got_dup == exp_dup
    assert stats["duplicate_groups"] == len(exp_dup)
    assert stats["duplicate_samples"] == sum(g["count"] for g in exp_dup)

    for base, _dirs, files in os.walk(outdir):
        assert "UNIT_BUILD_FAILED.md" not in files, base
    return {
        "manifest": manifest,
        "stats": stats,
        "records": records,
        "ids": ids_of,
        "per_unit": per_unit,
        "shards": shards_per_unit,
        "dtype": dtype,
    }


def msgpack_files(work_dir) -> list[str]:
    found = []
    for base, _dirs, files in os.walk(str(work_dir)):
        found += [os.path.join(base, f) for f in files if f.endswith(".msgpack")]
    return sorted(found)


def build_echo(workdir, config: dict, **kw):
    """The runner (as job.run() / mintdim build use it) from inside workdir, keeping its console lines."""
    lines: list[str] = []
    old = os.getcwd()
    os.chdir(str(workdir))
    try:
        result = run_build(config, echo=lines.append, **kw)
    finally:
        os.chdir(old)
    return result, lines


def shard_lines(text: str, units, dirs=()) -> list[tuple[int, int, int, str | None]]:
    """(shard, samples, unit, output-or-None) of every shard line in a console text.

    Unanchored and tolerant of a line whose newline arrives after another process's text (see
    test_shard_line_is_written_whole_to_unbuffered_stderr); unit and output are matched against the
    declared values. An ` output=` suffix naming no declared output is returned as "?".
    """
    unit_alt = "|".join(str(u) for u in sorted(units, key=lambda u: -len(str(u))))
    found = []
    for m in re.finditer(
        r"\[unit-build\] shard=(\d{6}) samples=(\d+) bytes=\d+\.\d MiB unit=(" + unit_alt + ")", text
    ):
        rest = text[m.end() :]
        out = None
        if rest.startswith(" output="):
            rest = rest[len(" output=") :]
            out = next((d for d in sorted(dirs, key=len, reverse=True) if rest.startswith(d)), "?")
        found.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), out))
    return found


def snapshot(root) -> dict[str, tuple[bytes, int]]:
    out = {}
    for base, dirs, files in os.walk(str(root)):
        for name in files + dirs:
            p = os.path.join(base, name)
            st = os.stat(p)
            data = open(p, "rb").read() if os.path.isfile(p) else b""
            out[os.path.relpath(p, str(root))] = (data, st.st_mtime_ns)
    return out


def json_texts(root) -> dict[str, str]:
    out = {}
    for rel, data in tree_bytes(root).items():
        if rel.endswith((".json", ".jsonl")):
            out[rel] = data.decode("utf-8")
    return out


TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\b1[6-9]\d{8}(\.\d+)?\b")


# ---------------------------------------------------------------------------------------------
# 1. the fluent API
# ---------------------------------------------------------------------------------------------


def test_api_sentencepiece_chain_is_lazy_dry_run_builds_nothing_and_run_builds(tmp_path, monkeypatch):
    from mintdim import pipeline

    write_jsonl(tmp_path / "data" / "train.jsonl", gsm8k_rows(0, 30))
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    job = (
        pipeline("unit-build")
        .source.jsonl(
            files=["./data/train.jsonl"],
            fields=[["prompt", "response"]],
            templates=["{prompt}\n\n{response}"],
        )
        .tokenizer.sentencepiece({"path": SP_MODEL})
        .units(sizes=[[64, 128, 256, 320]], build_batch=[8])
        .output.dir("./artifacts/instruction_units", samples_per_shard=[10])
    )
    # nothing is executed (or created) before run()
    assert sorted(os.listdir(tmp_path)) == before

    dry = job.run(cores=2, dry_run=True)
    assert dry.dry_run is True and dry.outputs == []
    assert not os.path.exists(tmp_path / "artifacts")
    assert msgpack_files(tmp_path / ".mintdim") == []
    # the dry-run plan: every declared job output lives in the work dir; the user's output
    # directory is never a Snakemake output (it is staged and moved into place)
    plan = open(dry.log, encoding="utf-8").read()
    outputs = [
        p.strip()
        for line in plan.splitlines()
        if line.strip().startswith("output:")
        for p in line.split(":", 1)[1].split(",")
    ]
    assert outputs, plan[-2000:]
    assert all(p.startswith(".mintdim" + os.sep) for p in outputs), outputs
    assert not any("artifacts" in p for p in outputs)

    result = job.run(cores=2)
    assert len(result.outputs) == 1
    out = result.outputs[0]
    assert out.dir == "./artifacts/instruction_units"
    assert os.path.samefile(out.path, tmp_path / "artifacts" / "instruction_units")
    samples = expected_samples(tmp_path, ["./data/train.jsonl"], ["{prompt}\n\n{response}"])
    got = check_output(
        tmp_path / "artifacts" / "instruction_units", samples, encoder("sentencepiece", SP_MODEL)
    )
    assert out.stats == got["stats"] == result.stats
    m = got["manifest"]
    assert m["tokenizer"] == {
        "type": "sentencepiece",
        "path": SP_MODEL,
        "vocab_size": 2000,
        "unk_id": 0,
        "pad_id": 1,
    }
    assert m["source"] == {
        "files": ["./data/train.jsonl"],
        "fields": [["prompt", "response"]],
        "templates": ["{prompt}\n\n{response}"],
    }
    assert m["units"] == {"sizes": [64, 128, 256, 320], "build_batch": 8}
    assert m["output"]["samples_per_shard"] == 10
    # default: intermediates deleted from the default work dir; the staging tree was moved away
    assert os.path.isdir(tmp_path / ".mintdim")
    assert glob.glob(str(tmp_path / ".mintdim" / "*" / "stage" / "*")) == []
    assert msgpack_files(tmp_path / ".mintdim") == []
    assert not result.already_built and result.reports_written == 0  # the report is opt-in
    # each job wrote its timing record (mintdim/progress.py write_timing): one per job of the build
    bench_dir = os.path.join(result.work_dir, result.build_id, "benchmarks")
    names = sorted(os.listdir(bench_dir))
    assert {"validate.tsv", "plan_o0.tsv", "aggregate_o0.tsv", "finalize_o0_g0.tsv"} <= set(names), names
    assert any(n.startswith("tokenize_f0_c") for n in names) and any(
        n.startswith("write_o0_p") for n in names
    )
    for name in names:
        head, row = open(os.path.join(bench_dir, name), encoding="utf-8").read().splitlines()
        cells = dict(zip(head.split("\t"), row.split("\t")))
        assert (
            0 < float(cells["cpu_time"]) <= 2 * float(cells["s"]) and 10 < float(cells["max_rss"]) < 4096
        ), name
    # the finished build's report, as `mintdim build --report`: the output is not built again
    again = job.run(cores=2, report=True)
    assert again.already_built and again.reports_written == 1 and again.stats == result.stats
    assert sorted(os.listdir(os.path.join(again.work_dir, again.build_id, "report", "o0")))[-2:] == [
        "stats.html",
        "stats.txt",
    ]


def test_api_hf_json_keep_intermediates_in_work_dir_and_in_file_truncation_ignored(tmp_path, monkeypatch):
    """MiniLM tokenizer.json truncates at 128 and pads to 128
    inside the file: MintDim must switch that off."""
    from mintdim import pipeline

    rows = gsm8k_rows(0, 12)
    rows.append({"prompt": rows[0]["prompt"] * 3, "response": rows[1]["response"] * 2})  # far beyond 128
    write_jsonl(tmp_path / "qa.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    job = (
        pipeline("unit-build", work_dir="wd")
        .source.jsonl(
            files=["qa.jsonl"], fields=[["prompt", "response"]], templates=["Q: {prompt}\nA: {response}"]
        )
        .tokenizer.hf_json({"path": HF_JSON})
        .units(sizes=[[128, 256, 512, 1024]], build_batch=[4])
        .output.dir("hf_out", samples_per_shard=[5])
    )
    assert not os.path.exists("wd") and not os.path.exists("hf_out")
    result = job.run(cores=2, keep_intermediates=True)
    samples = expected_samples(tmp_path, ["qa.jsonl"], ["Q: {prompt}\nA: {response}"])
    got = check_output(tmp_path / "hf_out", samples, encoder("hf_json", HF_JSON))
    assert result.stats == got["stats"]
    m = got["manifest"]
    assert m["tokenizer"]["type"] == "hf_json" and m["tokenizer"]["path"] == HF_JSON
    assert (m["tokenizer"]["unk_id"], m["tokenizer"]["pad_id"]) == (100, 0)
    assert m["token_dtype"] == "uint16"
    counts = [r["token_count"] for r in got["records"]]
    assert max(counts) > 256  # the long sample kept its full length (no truncation at 128)
    assert counts[-1] == len(encoder("hf_json", HF_JSON)(samples[-1]["text"]))
    assert got["records"][-1]["unit_size"] in (512, 1024)
    # no [CLS]=101 / [SEP]=102 added around any record
    for ids in got["ids"]:
        assert ids[0] != 101 and ids[-1] != 102
    assert any(c > 128 for c in counts) and any(c <= 128 for c in counts)
    # keep_intermediates: msgpack intermediates stay in the configured work dir, none in the default one
    kept = msgpack_files(tmp_path / "wd")
    assert kept, sorted(os.listdir(tmp_path / "wd"))
    assert not os.path.exists(tmp_path / ".mintdim")


# ---------------------------------------------------------------------------------------------
# 2. mapping forms, 3. input formats
# ---------------------------------------------------------------------------------------------


def test_fully_shared_three_files_plain_gz_zst_into_one_output(tmp_path):
    import zstandard

    rows = gsm8k_rows(100, 14)
    plain = write_jsonl(tmp_path / "data" / "a.jsonl", rows)
    raw = open(plain, "rb").read()
    with gzip.open(tmp_path / "data" / "b.jsonl.gz", "wb") as f:
        f.write(raw)
    with open(tmp_path / "data" / "c.jsonl.zst", "wb") as f:
        f.write(zstandard.ZstdCompressor().compress(raw))
    files = ["./data/a.jsonl", "data/b.jsonl.gz", "./data/c.jsonl.zst"]
    cfg = basic_config(
        files,
        fields=[["prompt", "response"]],
        templates=["{prompt}\n{response}"],
        sizes=[[64, 128, 256, 512]],
        build_batch=[5],
        out="shared",
        sps=[9],
    )
    result, lines = build_echo(tmp_path, cfg, cores=2)
    samples = expected_samples(tmp_path, files, ["{prompt}\n{response}"] * 3)
    got = check_output(tmp_path / "shared", samples, encoder("sentencepiece", SP_MODEL))
    n = len(rows)
    recs = got["records"]
    # sample_ids continue across files, in files order; source_file exactly as declared
    assert [r["source_file"] for r in recs] == [files[0]] * n + [files[1]] * n + [files[2]] * n
    assert [r["source_line"] for r in recs] == list(range(1, n + 1)) * 3
    assert [r["sample_id"] for r in recs] == list(range(3 * n))
    # compressed inputs give exactly the tokens of the plain file
    assert got["ids"][n : 2 * n] == got["ids"][:n] and got["ids"][2 * n :] == got["ids"][:n]
    assert [r["hash"] for r in recs[n : 2 * n]] == [r["hash"] for r in recs[:n]]
    # ... which makes every line a 3-way duplicate across files
    assert got["stats"]["duplicate_groups"] == n and got["stats"]["duplicate_samples"] == 3 * n
    assert got["manifest"]["source"]["files"] == files
    assert len(got["manifest"]["source"]["templates"]) == 3
    # single output: the shard line is exactly the spec's (no output= suffix)
    sl = shard_lines("\n".join(lines), [64, 128, 256, 512])
    assert sl and all(out is None for *_x, out in sl), sl
    assert sum(samples for _s, samples, _u, _o in sl) == 3 * n


def test_fully_mapped_two_files_two_outputs_isolated(tmp_path):
    shutil.copy(SP_MODEL, tmp_path / "b.model")
    a_rows = [{"instruction": r["prompt"], "input": "", "output": r["response"]} for r in gsm8k_rows(200, 11)]
    b_rows = [{"prompt": r["prompt"], "response": r["response"], "extra": 1} for r in gsm8k_rows(300, 9)]
    write_jsonl(tmp_path / "data" / "alpaca.jsonl", a_rows)
    write_jsonl(tmp_path / "data" / "sharegpt.jsonl", b_rows)
    files = ["./data/alpaca.jsonl", "./data/sharegpt.jsonl"]
    templates = ["{instruction}\n\n{input}\n\n{output}", "{prompt}\n{response}"]
    cfg = {
        "source": {
            "files": files,
            "fields": [["instruction", "input", "output"], ["prompt", "response"]],
            "templates": templates,
        },
        "tokenizer": {"sentencepiece": [{"path": SP_MODEL}, {"path": "./b.model"}]},
        "units": {"sizes": [[128, 192, 256, 320], [96, 128, 160, 192, 224, 320]], "build_batch": [4, 3]},
        "output": {
            "dir": ["./artifacts/alpaca_units", "./artifacts/sharegpt_units"],
            "samples_per_shard": [4, 3],
        },
    }
    result, lines = build_echo(tmp_path, cfg, cores=2)
    assert [o.dir for o in result.outputs] == cfg["output"]["dir"]
    for i, (f, tpl, d) in enumerate(zip(files, templates, cfg["output"]["dir"])):
        path = cfg["tokenizer"]["sentencepiece"][i]["path"]
        samples = expected_samples(tmp_path, [f], [tpl])
        got = check_output(tmp_path / d, samples, encoder("sentencepiece", os.path.join(str(tmp_path), path)))
        assert result.outputs[i].stats == got["stats"]
        m = got["manifest"]
        assert m["source"] == {"files": [f], "fields": [cfg["source"]["fields"][i]], "templates": [tpl]}
        assert m["units"] == {
            "sizes": cfg["units"]["sizes"][i],
            "build_batch": cfg["units"]["build_batch"][i],
        }
        assert m["output"]["samples_per_shard"] == cfg["output"]["samples_per_shard"][i]
        assert m["tokenizer"]["path"] == path
        assert {r["source_file"] for r in got["records"]} == {f}
        assert got["records"][0]["sample_id"] == 0  # ids restart per output
    assert sorted(os.listdir(tmp_path / "artifacts")) == ["alpaca_units", "sharegpt_units"]
    # several outputs: each shard line ends with " output=DIR"
    sl = shard_lines("\n".join(lines), {96, 128, 160, 192, 224, 256, 320}, cfg["output"]["dir"])
    assert sl and all(out in cfg["output"]["dir"] for *_x, out in sl), sl
    for d, sizes, sps in zip(cfg["output"]["dir"], cfg["units"]["sizes"], [4, 3]):
        mine = [(u, shard, samples) for shard, samples, u, out in sl if out == d]
        assert sorted(mine) == sorted(
            (u, i, os.path.getsize(tmp_path / d / f"unit_{u}" / f"shard_{i:06d}.bin") // (u * 2))
            for u in sizes
            for i in range(len(glob.glob(str(tmp_path / d / f"unit_{u}" / "*.bin"))))
        )
        assert all(samples <= sps for *_x, samples in mine)


class _RawRecorder(io.RawIOBase):
    """Stands in for the file descriptor under an unbuffered stderr: records each write call."""

    def __init__(self):
        self.writes: list[bytes] = []

    def writable(self):
        return True

    def write(self, b):
        self.writes.append(bytes(b))
        return len(b)


def test_shard_line_is_written_whole_to_unbuffered_stderr(monkeypatch):
    """Stage jobs share Snakemake's console and run in parallel. Python's unbuffered stderr (what
    PYTHONUNBUFFERED=1 gives, as in this environment and many containers) is a TextIOWrapper with
    write_through over the raw fd; print() then issues the text and its newline as two writes, and a
    parallel build was seen printing '... unit=160 output=./artifacts/sharegpt_unitsExecute 1 jobs...'
    (fixed in 43e54a3). A shard line must reach the console as one whole line, in one write."""
    from mintdim.formats.shards import shard_line
    from mintdim.progress import JobLog

    raw = _RawRecorder()
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(raw, encoding="utf-8", write_through=True))
    line = shard_line(12, 100000, int(241.8 * 2**20), 512, "./artifacts/alpaca_units")
    assert (
        line
        == "[unit-build] shard=000012 samples=100000 bytes=241.8 MiB unit=512 output=./artifacts/alpaca_units"
    )
    JobLog(None)(line)
    sys.stderr.flush()
    assert raw.writes == [(line + "\n").encode()]


def test_mixed_shared_and_mapped_spec_example_via_snakemake(tmp_path):
    """The spec's "Mixed shared and mapped" example, run with a direct `snakemake` command."""
    shutil.copy(SP_MODEL, tmp_path / "fineweb_edu_32k.model")
    rows = gsm8k_rows(400, 20)
    a = [{"prompt": r["prompt"][:150], "answer": r["response"][:120], "separator": "\n"} for r in rows[:12]]
    b = [{"prompt": r["prompt"][:150], "answer": r["response"][:120], "separator": " => "} for r in rows[12:]]
    write_jsonl(tmp_path / "data" / "train_a.jsonl", a)
    write_jsonl(tmp_path / "data" / "train_b.jsonl", b)
    tokenizer_cfg = {"path": "./fineweb_edu_32k.model"}
    files = ["./data/train_a.jsonl", "./data/train_b.jsonl"]
    cfg = {
        "source": {
            "files": files,
            "fields": [["prompt", "answer", "separator"]],
            "templates": ["{prompt}{separator}{answer}"],
        },
        "tokenizer": {"sentencepiece": [tokenizer_cfg, tokenizer_cfg]},
        "units": {"sizes": [[32, 64, 128, 256]], "build_batch": [64]},
        "output": {"dir": ["./output1", "./output2"], "samples_per_shard": [5]},
    }
    proc = run_snakemake(tmp_path, cfg, cores=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    enc = encoder("sentencepiece", str(tmp_path / "fineweb_edu_32k.model"))
    for f, d in zip(files, ["output1", "output2"]):
        samples = expected_samples(tmp_path, [f], ["{prompt}{separator}{answer}"])
        got = check_output(tmp_path / d, samples, enc)
        m = got["manifest"]
        assert m["source"]["files"] == [f]
        assert m["units"]["sizes"] == [32, 64, 128, 256]
        assert m["output"]["samples_per_shard"] == 5
        assert m["tokenizer"]["path"] == "./fineweb_edu_32k.model"
    sl = shard_lines(proc.stderr + "\n" + proc.stdout, [32, 64, 128, 256], ["./output1", "./output2"])
    assert sl, (proc.stdout + proc.stderr)[-3000:]
    assert {out for *_x, out in sl} == {"./output1", "./output2"}
    assert sum(samples for _s, samples, _u, out in sl if out == "./output1") == 12
    assert sum(samples for _s, samples, _u, out in sl if out == "./output2") == 8


def test_crlf_blank_lines_literal_braces_and_braces_in_values_into_empty_existing_dir(tmp_path):
    # HF vocabulary covers '{' and '}' (the shipped SentencePiece model does not)
    lines = [
        json.dumps({"q": "What is {x} here?", "a": "It is {{not}} a placeholder."}),
        "",
        "   ",
        json.dumps({"q": "Plain question", "a": "plain answer", "ignored": {"k": 1}}),
        "\t",
        json.dumps({"q": "Second {q} {a}", "a": "}{"}),
        "",
    ]
    write_jsonl(tmp_path / "crlf.jsonl", lines, newline="\r\n")
    raw = open(tmp_path / "crlf.jsonl", "rb").read()
    assert raw.count(b"\r\n") == len(lines)
    template = "{{{q}}} -> {{a}}: {a}"
    os.makedirs(tmp_path / "out")  # a pre-existing empty output dir is accepted
    cfg = basic_config(
        ["crlf.jsonl"],
        fields=[["q", "a"]],
        templates=[template],
        tokenizer={"hf_json": {"path": HF_JSON}},
        sizes=[[8, 16, 32]],
        sps=[2],
    )
    build_in(tmp_path, cfg, cores=2)
    samples = expected_samples(tmp_path, ["crlf.jsonl"], [template])
    assert [s["source_line"] for s in samples] == [1, 4, 6]  # physical lines; blank lines are not samples
    assert samples[0]["text"] == "{What is {x} here?} -> {a}: It is {{not}} a placeholder."
    assert samples[2]["text"] == "{Second {q} {a}} -> {a}: }{"
    got = check_output(tmp_path / "out", samples, encoder("hf_json", HF_JSON))
    assert [r["source_line"] for r in got["records"]] == [1, 4, 6]
    # ids decode back to the rendered text with single literal braces and the value's {x} intact
    decoded = _hf(HF_JSON).decode(got["ids"][0])
    assert decoded.startswith("{ what is { x } here? } - > { a } :")
    assert msgpack_files(tmp_path / ".mintdim") == []


# ---------------------------------------------------------------------------------------------
# 4. empty units, many shards, UNK, duplicates
# ---------------------------------------------------------------------------------------------


def test_many_shards_empty_units_unk_and_duplicates(tmp_path, pairs):
    rows = read_jsonl(pairs)
    rows += [
        {"prompt": "日本語のテキスト", "response": "中文 words mixed 한국어"},
        dict(rows[3]),
        {"prompt": "Ünïcödé ☃", "response": "plain"},
        dict(rows[3]),
        dict(rows[10]),
    ]
    write_jsonl(tmp_path / "many.jsonl", rows)
    sizes = [[8, 64, 128, 256, 512, 2048]]  # 8 and 2048 receive nothing
    cfg = basic_config(["many.jsonl"], sizes=sizes, sps=[7], build_batch=[16])
    result, lines = build_echo(tmp_path, cfg, cores=2)
    samples = expected_samples(tmp_path, ["many.jsonl"], ["{prompt}\n{response}"])
    got = check_output(tmp_path / "out", samples, encoder("sentencepiece", SP_MODEL))
    st = got["stats"]
    assert result.stats == st

    # empty units: marker, zeros listed in histogram and stats
    hist = read_json(tmp_path / "out" / "histogram.json")
    for s in ("8", "2048"):
        assert hist[s] == 0 and st["unit_distribution"][s] == 0
        assert os.listdir(tmp_path / "out" / f"unit_{s}") == ["EMPTY_UNIT.md"]
        assert open(tmp_path / "out" / f"unit_{s}" / "EMPTY_UNIT.md", encoding="utf-8").read().strip()

    # many shards: the biggest unit rolls over several shards, the last one smaller
    counts = {int(k): v for k, v in hist.items()}
    big = max(counts, key=counts.get)
    assert counts[big] > 14 and counts[big] % 7 != 0
    assert got["shards"][big] == -(-counts[big] // 7)
    files = sorted(os.listdir(tmp_path / "out" / f"unit_{big}"))
    rec_bytes = big * 2
    assert [os.path.getsize(tmp_path / "out" / f"unit_{big}" / f) // rec_bytes for f in files] == [7] * (
        len(files) - 1
    ) + [counts[big] % 7]
    # every sample_index row points at the record holding its tokens, via shard_path/shard_row
    for rec, ids in zip(got["records"], got["ids"]):
        arr = np.fromfile(tmp_path / "out" / rec["shard_path"], dtype="<u2").reshape(-1, rec["unit_size"])
        assert arr[rec["shard_row"]][: rec["token_count"]].tolist() == ids
    # the shard lines match the files on disk
    sl = shard_lines("\n".join(lines), sizes[0])
    assert all(out is None for *_x, out in sl)
    assert sorted((u, shard, samples) for shard, samples, u, _o in sl) == sorted(
        (u, i, os.path.getsize(tmp_path / "out" / f"unit_{u}" / f"shard_{i:06d}.bin") // (u * 2))
        for u, n in got["shards"].items()
        for i in range(n)
    )

    # UNK: CJK text -> unk id 0 (tier 2: recorded, not fatal)
    unk_rows = read_jsonl(tmp_path / "out" / "unk_index.jsonl")
    assert 60 in [r["sample_id"] for r in unk_rows]
    cjk = next(r for r in unk_rows if r["sample_id"] == 60)
    assert cjk["source_line"] == 61 and cjk["source_file"] == "many.jsonl"
    assert cjk["unk_positions"] == [i for i, t in enumerate(got["ids"][60]) if t == 0]
    assert cjk["unk_count"] == len(cjk["unk_positions"]) > 0
    assert st["samples_with_unk"] == len(unk_rows) >= 1
    assert st["unk_tokens"] == sum(r["unk_count"] for r in unk_rows)

    # duplicates: line 4 appears three times, line 11 twice
    dups = read_jsonl(tmp_path / "out" / "duplicate_index.jsonl")
    assert [[s["sample_id"] for s in g["samples"]] for g in dups] == [[3, 61, 63], [10, 64]]
    assert [[s["source_line"] for s in g["samples"]] for g in dups] == [[4, 62, 64], [11, 65]]
    assert st["duplicate_groups"] == 2 and st["duplicate_samples"] == 5


# ---------------------------------------------------------------------------------------------
# 6. determinism
# ---------------------------------------------------------------------------------------------


def _det_project(root, a_rows, b_rows):
    os.makedirs(root)
    write_jsonl(os.path.join(root, "data", "a.jsonl"), a_rows)
    write_jsonl(os.path.join(root, "data", "b.jsonl"), b_rows)
    return root


def test_output_identical_across_cores_and_chunking(tmp_path):
    a_rows = gsm8k_rows(500, 14)
    b_rows = gsm8k_rows(520, 9) + [{"prompt": "日本", "response": "x"}] + gsm8k_rows(500, 2)
    base = basic_config(
        ["./data/a.jsonl", "./data/b.jsonl"],
        sizes=[[64, 128, 256, 512]],
        build_batch=[3],
        out="./det_out",
        sps=[4],
    )
    trees = {}
    # c2again: the same build a second time, elsewhere, with its work dir given as an absolute path
    for name, cores, chunk in (("c1", 1, None), ("c2", 2, None), ("c2small", 2, 0.002), ("c2again", 2, None)):
        root = _det_project(str(tmp_path / name), a_rows, b_rows)
        cfg = dict(base, chunk_mb=chunk) if chunk else dict(base)
        if name == "c2again":
            cfg["work_dir"] = os.path.join(root, "abs_work_dir")
        build_in(root, cfg, cores=cores)
        trees[name] = tree_bytes(os.path.join(root, "det_out"))
        tok_logs = glob.glob(os.path.join(root, ".mintdim", "*", "logs", "tokenize_f*_c*.log"))
        assert (len(tok_logs) > 2) == (chunk is not None), tok_logs  # chunking really split the files
    # really chunked
    assert os.path.getsize(tmp_path / "c2small" / "data" / "a.jsonl") > 2 * 0.002 * 1024 * 1024
    assert trees["c1"] == trees["c2"]
    assert trees["c1"] == trees["c2small"]
    assert trees["c1"] == trees["c2again"]
    manifest = (tmp_path / "c2again" / "det_out" / "manifest.json").read_text(encoding="utf-8")
    host = socket.gethostname()
    assert not re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w.-])", manifest), host
    assert "abs_work_dir" not in manifest and str(tmp_path) not in manifest
    assert not TIMESTAMP.search(manifest)
    samples = expected_samples(
        tmp_path / "c1", ["./data/a.jsonl", "./data/b.jsonl"], ["{prompt}\n{response}"] * 2
    )
    got = check_output(tmp_path / "c2small" / "det_out", samples, encoder("sentencepiece", SP_MODEL))
    assert got["stats"]["samples_with_unk"] == 1 and got["stats"]["duplicate_groups"] == 2
    for rel, text in {
        **json_texts(tmp_path / "c2small" / "det_out"),
        **json_texts(tmp_path / "c2again" / "det_out"),
    }.items():
        assert str(tmp_path) not in text and os.path.realpath(str(tmp_path)) not in text, rel
        assert ".mintdim" not in text and "abs_work_dir" not in text, rel
        assert not TIMESTAMP.search(text), (rel, TIMESTAMP.search(text).group(0))


# ---------------------------------------------------------------------------------------------
# 7. safety
# ---------------------------------------------------------------------------------------------


def test_non_empty_output_dir_is_refused_before_anything_runs_and_left_untouched(tmp_path, pairs):
    os.makedirs(tmp_path / "out")
    (tmp_path / "out" / "mine.txt").write_bytes(b"user data\n")
    before = snapshot(tmp_path / "out")
    cfg = basic_config([pairs], sizes=[[64, 128, 256, 512]])
    with pytest.raises(mintdim.OutputValidationError) as exc:
        build_in(tmp_path, cfg, cores=2)
    assert "Output directory already exists and is not empty." in str(exc.value)
    assert snapshot(tmp_path / "out") == before
    assert not os.path.exists(tmp_path / ".mintdim")  # refused before anything ran
    # a direct snakemake run refuses too, and touches nothing
    proc = run_snakemake(tmp_path, cfg, cores=2)
    assert proc.returncode != 0
    assert "OutputValidationError" in proc.stderr + proc.stdout
    assert snapshot(tmp_path / "out") == before
    assert msgpack_files(tmp_path) == []


def test_rerun_of_successful_build_does_nothing(tmp_path, pairs):
    cfg = basic_config([pairs], sizes=[[64, 128, 256, 512]], sps=[25])
    build_in(tmp_path, cfg, cores=2)
    assert msgpack_files(tmp_path / ".mintdim") == []
    before = snapshot(tmp_path / "out")
    result, lines = build_echo(tmp_path, cfg, cores=2)
    assert result.already_built and lines == [], lines  # decided in pre-flight: Snakemake is not even started
    assert snapshot(tmp_path / "out") == before
    assert result.outputs[0].stats == read_json(tmp_path / "out" / "stats.json")


def test_failed_build_leaves_markers_and_rerun_with_fixed_data_succeeds(tmp_path):
    rows = gsm8k_rows(600, 8)
    good = [json.dumps(r) for r in rows]
    bad = good[:4] + ['{"prompt": "broken", "response": '] + good[4:]
    path = write_jsonl(tmp_path / "data.jsonl", bad)
    cfg = basic_config(["data.jsonl"], sizes=[[64, 128, 256, 512]], sps=[3])
    with pytest.raises(mintdim.SourceParseError) as exc:
        build_in(tmp_path, cfg, cores=2)
    msg = str(exc.value)
    assert "JSONL line could not be parsed." in msg and "data.jsonl" in msg and "Line: 5" in msg
    # all or nothing: every declared unit dir holds only the failure marker, no stats.json
    out = tmp_path / "out"
    assert not os.path.exists(out / "stats.json")
    assert sorted(os.listdir(out)) == ["unit_128", "unit_256", "unit_512", "unit_64"]
    for u in (64, 128, 256, 512):
        assert os.listdir(out / f"unit_{u}") == ["UNIT_BUILD_FAILED.md"]
    # fix the data, run the same config again into the same directory
    write_jsonl(path, good)
    build_in(tmp_path, cfg, cores=2)
    samples = expected_samples(tmp_path, ["data.jsonl"], ["{prompt}\n{response}"])
    got = check_output(out, samples, encoder("sentencepiece", SP_MODEL))
    assert got["stats"]["total_samples"] == 8
    assert msgpack_files(tmp_path / ".mintdim") == []


# ---------------------------------------------------------------------------------------------
# 8. the CLI outside the repository, and a direct snakemake run of the same config
# ---------------------------------------------------------------------------------------------


def _cli_project(root, rows):
    os.makedirs(os.path.join(root, "tok"))
    shutil.copy(SP_MODEL, os.path.join(root, "tok", "sp.model"))
    write_jsonl(os.path.join(root, "data", "pairs.jsonl"), rows)
    cfg = basic_config(
        ["./data/pairs.jsonl"],
        tokenizer={"sentencepiece": {"path": "./tok/sp.model"}},
        sizes=[[64, 128, 256, 512]],
        build_batch=[16],
        out="./artifacts/units",
        sps=[8],
    )
    with open(os.path.join(root, "cfg.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    return cfg


def test_cli_build_outside_repo_matches_direct_snakemake(tmp_path):
    rows = gsm8k_rows(700, 25)
    cli_dir, smk_dir = str(tmp_path / "cli"), str(tmp_path / "smk")
    cfg = _cli_project(cli_dir, rows)
    _cli_project(smk_dir, rows)
    assert not os.path.realpath(cli_dir).startswith(os.path.realpath(os.path.dirname(SP_MODEL)))
    proc = run_cli(cli_dir, "build", "cfg.yaml", "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[unit-build] built ./artifacts/units: 25 samples" in proc.stdout
    assert "Traceback" not in proc.stderr
    samples = expected_samples(cli_dir, ["./data/pairs.jsonl"], ["{prompt}\n{response}"])
    got = check_output(
        os.path.join(cli_dir, "artifacts", "units"),
        samples,
        encoder("sentencepiece", os.path.join(cli_dir, "tok", "sp.model")),
    )
    assert got["manifest"]["tokenizer"]["path"] == "./tok/sp.model"
    assert msgpack_files(os.path.join(cli_dir, ".mintdim")) == []

    proc2 = run_snakemake(smk_dir, cfg, cores=2)
    assert proc2.returncode == 0, proc2.stderr[-3000:]
    cli_tree = tree_bytes(os.path.join(cli_dir, "artifacts", "units"))
    assert cli_tree == tree_bytes(os.path.join(smk_dir, "artifacts", "units"))
    for rel, text in json_texts(os.path.join(cli_dir, "artifacts", "units")).items():
        assert str(tmp_path) not in text and os.path.realpath(str(tmp_path)) not in text, rel
        assert not TIMESTAMP.search(text), rel
