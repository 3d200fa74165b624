"""Mixing with exact counts: source.take and source.seed.

take[i] is a fraction of file i's samples (a float; above 1 upsamples) or exactly that many samples
(an int). Above the file's size: whole repeats of the file plus a seeded choice for the remainder;
below it: a seeded choice without replacement. Chosen samples keep input order; a repeat is a new
sample (sample_index records `repeat`). The choice is recomputed here from the documented rule
(config/README.md), independently of MintDim's code."""

from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest
from conftest import basic_config, build_in, gsm8k_rows, read_json, read_jsonl, tree_bytes, write_jsonl
from test_stages import drive

import mintdim
from mintdim import errors as E
from mintdim.reading.suggest import suggest_units
from mintdim.reading.verify import verify

SIZES = [[128, 256, 512, 1024]]


def documented_choice(seed: int, file_index: int, available: int, remainder: int) -> list[int]:
    """config/README.md: PCG64 seeded with SeedSequence([seed, file_index]) draws one 64-bit key per
    sample; the `remainder` samples with the smallest (key, row) are chosen, in input order."""
    keys = np.random.PCG64(np.random.SeedSequence([seed, file_index])).random_raw(available)
    order = np.lexsort((np.arange(available), keys))
    return sorted(order[:remainder].tolist())


def files_a_b(tmp_path, a_rows=1000, b_rows=100):
    """A: 1,000 GSM8K pairs (Parquet when pyarrow is there, else JSONL), B: 100 more, as JSONL."""
    rows = gsm8k_rows(0, a_rows + b_rows)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows[:a_rows]), str(tmp_path / "a.parquet"), row_group_size=128)
        a = "a.parquet"
    except ImportError:
        a = os.path.basename(write_jsonl(tmp_path / "a.jsonl", rows[:a_rows]))
    write_jsonl(tmp_path / "b.jsonl", rows[a_rows:])
    return a, "b.jsonl"


def take_config(files, take, seed=None, out="out", **kw):
    cfg = basic_config(files, sizes=SIZES, out=out, sps=[128], **kw)
    cfg["source"]["take"] = take
    if seed is not None:
        cfg["source"]["seed"] = seed
    return cfg


def by_file(out) -> dict[str, list[tuple[int, int]]]:
    """(repeat, source_line) of every sample, per source file, in sample_id order."""
    found = collections.defaultdict(list)
    for r in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        found[r["source_file"]].append((r["repeat"], r["source_line"]))
    return dict(found)


def assert_tokens_are_the_sources(out, ref_out) -> None:
    """Every sample's stored tokens are those of its source line in a build without take."""
    ds, ref = mintdim.open(out), mintdim.open(ref_out)
    where = {
        (r["source_file"], r["source_line"]): r["sample_id"]
        for r in read_jsonl(os.path.join(ref_out, "sample_index.jsonl"))
    }
    for r in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        want = ref.tokens(where[(r["source_file"], r["source_line"])])
        assert np.array_equal(ds.tokens(r["sample_id"]), want), r


# --- exact means exact ------------------------------------------------------------------------------------


def test_half_of_a_and_three_times_b_bucketed(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path)
    monkeypatch.chdir(tmp_path)
    drive(take_config([a, b], [0.5, 300], seed=7))
    drive(basic_config([a, b], sizes=SIZES, out="ref", sps=[128]))
    got = by_file("out")
    assert got[a] == [(0, line + 1) for line in documented_choice(7, 0, 1000, 500)]
    assert len({line for _r, line in got[a]}) == 500
    assert got[b] == [(r, line) for r in range(3) for line in range(1, 101)]
    assert_tokens_are_the_sources("out", "ref")
    manifest = read_json("out/manifest.json")
    assert manifest["take"] == {
        "seed": 7,
        "files": [
            {"file": a, "file_index": 0, "take": 0.5, "available": 1000, "taken": 500, "whole_repeats": 0},
            {"file": b, "file_index": 1, "take": 300, "available": 100, "taken": 300, "whole_repeats": 3},
        ],
    }
    stats = read_json("out/stats.json")
    assert stats["total_samples"] == 800
    # repeats of one sample are duplicates by hash: B's 100 lines are 100 groups of 3 (its repeats 0, 1, 2)
    groups = [g for g in read_jsonl("out/duplicate_index.jsonl") if g["samples"][0]["source_file"] == b]
    assert len(groups) == 100 and all([s["repeat"] for s in g["samples"]] == [0, 1, 2] for g in groups)
    report = verify("out", source=True, all=True)
    assert report.ok, [str(p) for p in report.problems[:5]]


def test_half_of_a_and_three_times_b_packed(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path)
    cfg = take_config([a, b], [0.5, 300], seed=7)
    cfg["units"] = {"pack": [1024], "build_batch": [64]}
    build_in(tmp_path, cfg, cores=2)
    ref = basic_config([a, b], out="ref", sps=[128], work_dir="w-ref")
    ref["units"] = {"pack": [1024], "build_batch": [64]}
    monkeypatch.chdir(tmp_path)
    drive(ref)  # every sample once, through the stage functions: the reference of its tokens
    got = by_file("out")
    assert got[a] == [(0, line + 1) for line in documented_choice(7, 0, 1000, 500)]
    assert got[b] == [(r, line) for r in range(3) for line in range(1, 101)]
    assert_tokens_are_the_sources("out", "ref")
    assert read_json("out/stats.json")["packing"]["samples"] == 800
    report = verify("out", source=True, all=True)
    assert report.ok, [str(p) for p in report.problems[:5]]


def test_whole_repeats_plus_a_seeded_remainder(tmp_path, monkeypatch):
    rows = gsm8k_rows(0, 40)
    write_jsonl(tmp_path / "b.jsonl", rows[:10])
    with open(tmp_path / "b.jsonl", "ab") as f:
        f.write(b"\n   \n")  # blank lines: not samples
    write_jsonl(tmp_path / "c.jsonl", rows[10:40])
    monkeypatch.chdir(tmp_path)
    drive(take_config(["c.jsonl", "b.jsonl"], [2.5, 25], seed=3))
    got = by_file("out")
    # c: 30 samples x 2.5 = 75 = 2 whole repeats + 15 chosen; b: 25 of 10 = 2 whole repeats + 5 chosen
    assert got["c.jsonl"] == [(r, n) for r in range(2) for n in range(1, 31)] + [
        (2, n + 1) for n in documented_choice(3, 0, 30, 15)
    ]
    assert got["b.jsonl"] == [(r, n) for r in range(2) for n in range(1, 11)] + [
        (2, n + 1) for n in documented_choice(3, 1, 10, 5)
    ]
    files = read_json("out/manifest.json")["take"]["files"]
    assert [(f["available"], f["taken"], f["whole_repeats"]) for f in files] == [(30, 75, 2), (10, 25, 2)]
    assert verify("out", source=True, all=True).ok


def test_same_seed_same_bytes_other_seed_same_counts(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path, 300, 40)
    monkeypatch.chdir(tmp_path)
    drive(take_config([a, b], [0.3, 50], seed=11, out="one", work_dir="w1"))
    drive(take_config([a, b], [0.3, 50], seed=11, out="two", work_dir="w2"))
    drive(take_config([a, b], [0.3, 50], seed=12, out="three", work_dir="w3"))
    assert tree_bytes("one") == tree_bytes("two")
    one, three = by_file("one"), by_file("three")
    assert [len(one[f]) for f in (a, b)] == [len(three[f]) for f in (a, b)] == [90, 50]
    assert one[a] != three[a] and one[b] != three[b]
    assert (
        read_json("one/stats.json")["total_samples"] == read_json("three/stats.json")["total_samples"] == 140
    )


def test_default_seed_is_zero_and_a_take_of_all_keeps_the_shards(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path, 200, 30)
    monkeypatch.chdir(tmp_path)
    drive(take_config([a, b], [0.25], out="zero", work_dir="w0"))
    drive(take_config([a, b], [0.25], seed=0, out="seeded", work_dir="w1"))
    assert tree_bytes("zero") == tree_bytes("seeded")
    drive(take_config([a, b], [1.0], out="all", work_dir="w2"))
    drive(basic_config([a, b], sizes=SIZES, out="plain", sps=[128], work_dir="w3"))
    shards = lambda out: {k: v for k, v in tree_bytes(out).items() if k.endswith(".bin")}  # noqa: E731
    assert shards("all") == shards("plain")
    assert all(r["repeat"] == 0 for r in read_jsonl("all/sample_index.jsonl"))
    assert "repeat" not in read_jsonl("plain/sample_index.jsonl")[0] and "take" not in read_json(
        "plain/manifest.json"
    )


def test_take_with_planned_sizes_and_loss_masks(tmp_path, monkeypatch):
    """units.sizes: auto plans the sizes from the chosen samples; each chosen sample's tokens and loss
    mask are its source's, through the workflow (2 cores, small chunks)."""
    a, b = files_a_b(tmp_path, 300, 40)
    cfg = take_config([a, b], [0.4, 90], seed=2, chunk_mb=0.02)
    cfg["units"] = {"sizes": "auto", "k": 3, "build_batch": [32]}
    cfg["source"]["train_on"] = [["response"]]
    build_in(tmp_path, cfg, cores=2)
    ref = basic_config([a, b], out="ref", sps=[128], work_dir="w-ref")
    ref["units"] = {"sizes": [[1024]], "build_batch": [32]}
    ref["source"]["train_on"] = [["response"]]
    monkeypatch.chdir(tmp_path)
    drive(ref)  # every sample once, through the stage functions: the reference of tokens and masks
    got = by_file("out")
    assert got[a] == [(0, n + 1) for n in documented_choice(2, 0, 300, 120)]
    assert got[b] == [(r, n) for r in range(2) for n in range(1, 41)] + [
        (2, n + 1) for n in documented_choice(2, 1, 40, 10)
    ]
    assert_tokens_are_the_sources("out", "ref")
    ds, rf = mintdim.open("out"), mintdim.open("ref")
    where = {
        (r["source_file"], r["source_line"]): r["sample_id"] for r in read_jsonl("ref/sample_index.jsonl")
    }
    for r in read_jsonl("out/sample_index.jsonl"):
        assert np.array_equal(
            ds.loss_mask(r["sample_id"]), rf.loss_mask(where[(r["source_file"], r["source_line"])])
        )
    assert read_json("out/manifest.json")["units"]["planned"]["k"] == 3
    assert verify("out", source=True, all=True).ok


def test_take_with_conversations_counts_trained_tokens_by_role(tmp_path, monkeypatch):
    pytest.importorskip("jinja2")
    from test_arrow_inputs import CHATS, chat_config

    rows = [{"system": r["system"], "messages": r["messages"]} for r in read_jsonl(CHATS)[:30]]
    write_jsonl(tmp_path / "c.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    cfg = chat_config("c.jsonl", "out")
    cfg["source"]["take"] = [70]
    drive(cfg)
    stats = read_json("out/stats.json")
    index = read_jsonl("out/sample_index.jsonl")
    assert len(index) == 70 and stats["trained_tokens"] == sum(r["trained_tokens"] for r in index)
    assert stats["trained_tokens_by_role"] == {"assistant": stats["trained_tokens"]}
    assert verify("out", source=True, all=True).ok


def test_verify_finds_a_selection_that_is_not_the_seeds(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path, 100, 10)
    monkeypatch.chdir(tmp_path)
    drive(take_config([a, b], [0.5, 20], seed=5))
    manifest = read_json("out/manifest.json")
    manifest["take"]["seed"] = 6  # the same counts, another seed's choice
    with open("out/manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    report = verify("out", source=True)
    assert not report.ok and any("take" in p.message for p in report.problems)


def test_suggest_units_counts_the_taken_samples(tmp_path, monkeypatch):
    a, b = files_a_b(tmp_path, 100, 10)
    monkeypatch.chdir(tmp_path)
    [answer] = suggest_units(take_config([a, b], [0.5, 25]), k=2)
    assert answer.samples == 75


# --- invalid takes: catalogue errors in pre-flight, nothing created ---------------------------------------


@pytest.mark.parametrize(
    "take, seed, needle",
    [
        ([0], None, "source.take[0]"),
        ([-3], None, "source.take[0]"),
        ([0.0], None, "source.take[0]"),
        ([1, -0.5], None, "source.take[1]"),
        (["half"], None, "source.take[0]"),
        ([True], None, "source.take[0]"),
        ([1, 2, 3], None, "3 take entries"),
        ("all", None, "source.take"),
        ([1], -1, "source.seed"),
        ([1], 1.5, "source.seed"),
        (None, 4, "source.seed"),
    ],
)
def test_invalid_takes_are_config_errors(tmp_path, take, seed, needle):
    write_jsonl(tmp_path / "a.jsonl", gsm8k_rows(0, 3))
    write_jsonl(tmp_path / "b.jsonl", gsm8k_rows(3, 3))
    cfg = basic_config(["a.jsonl", "b.jsonl"])
    if take is not None:
        cfg["source"]["take"] = take
    if seed is not None:
        cfg["source"]["seed"] = seed
    with pytest.raises(E.PipelineValidationError) as info:
        build_in(tmp_path, cfg, cores=1)
    en, vi = info.value.render("en"), info.value.render("vi")
    assert needle in en and ("source.seed" if "seed" in needle else "source.take") in vi and vi != en
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / ".mintdim")


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"])
def test_a_count_on_a_file_with_no_samples(tmp_path, content):
    write_jsonl(tmp_path / "a.jsonl", gsm8k_rows(0, 3))
    (tmp_path / "empty.jsonl").write_bytes(content)
    cfg = basic_config(["a.jsonl", "empty.jsonl"], sizes=SIZES)
    cfg["source"]["take"] = [2, 5]
    with pytest.raises(E.SourceParseError):  # an input with no sample is an error first
        build_in(tmp_path, cfg, cores=1)
    cfg["source"]["allow_empty"] = True  # built without it: a count of it is still refused
    with pytest.raises(E.PipelineValidationError) as info:
        build_in(tmp_path, cfg, cores=1)
    en = info.value.render("en")
    assert "source.take[1]" in en and "empty.jsonl" in en and "no samples" in en
    assert "empty.jsonl" in info.value.render("vi")
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / ".mintdim")
    cfg["source"]["take"] = [2, 0.5]  # a fraction of nothing is nothing
    build_in(tmp_path, cfg, cores=1)
    assert [r["source_file"] for r in read_jsonl(tmp_path / "out" / "sample_index.jsonl")] == ["a.jsonl"] * 2


def test_fluent_api_take_and_seed():
    from mintdim import pipeline
    from mintdim.config import resolve

    job = (
        pipeline("unit-build")
        .source.jsonl(
            files=["a.jsonl", "b.jsonl"], fields=[["q"]], templates=["{q}"], take=[0.5, 300], seed=7
        )
        .tokenizer.hf_json({"path": "t.json"})
        .units(sizes=[[64]], build_batch=[8])
        .output.dir("o", [10])
    )
    cfg = job.to_config()
    assert cfg["source"]["take"] == [0.5, 300] and cfg["source"]["seed"] == 7
    a, b = resolve(cfg).files
    assert (a.source.take, b.source.take, a.source.take_seed) == (0.5, 300, 7)
