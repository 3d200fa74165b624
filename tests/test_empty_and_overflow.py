"""Empty inputs and over-long samples.

- An input file with no samples (0 bytes, only blank lines, a BOM, a compressed file of nothing)
  is a SourceParseError in pre-flight; one that pre-flight's bounded scan cannot decide is caught
  by the plan stage with the same error. `source.allow_empty: true` builds the other files and
  says so in the console and in stats.json. suggest-units on an output of no samples says so.
- `units.overflow: error | drop | truncate` with unit sizes (declared or auto): `error` counts
  every over-long sample (the first ten by file:line) and points at suggest-units and sizes: auto;
  `drop` and `truncate` (to the largest unit) record counts and ids in stats.json as packed rows
  do, and `mintdim verify` checks them. Expected token ids come from SentencePiece itself.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest
import sentencepiece as spm
from conftest import (
    SP_MODEL,
    basic_config,
    build_in,
    gsm8k_rows,
    read_json,
    read_jsonl,
    read_mask,
    run_cli,
    tree_bytes,
    write_jsonl,
)
from stagekit import drive

import mintdim
from mintdim import errors as E
from mintdim.reading.suggest import suggest_units
from mintdim.reading.verify import verify
from mintdim.sources import jsonl
from mintdim.stages.preflight import preflight

SIZES = [96, 160, 192]
N_ROWS = 80


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(model_file=SP_MODEL)


def pairs_file(path, n=N_ROWS):
    rows = gsm8k_rows(0, n)
    return write_jsonl(path, rows), rows


def ids_of(sp, row) -> list[int]:
    return sp.encode(row["prompt"] + "\n" + row["response"])


def over_config(files, overflow=None, out="out", sizes=None, **kw) -> dict:
    cfg = basic_config(files, sizes=[sizes or SIZES], build_batch=[16], sps=[7], out=out, **kw)
    if overflow:
        cfg["units"]["overflow"] = [overflow]
    return cfg


# --- empty inputs -------------------------------------------------------------------------------

EMPTY_EN = "SourceParseError: JSONL file holds no samples.\n\nFile: {path}\n\nReason: {reason}"
EMPTY_VI = "SourceParseError: File JSONL không có mẫu nào.\n\nFile: {path}\n\nLý do: {reason}"
ZERO = ("the file is empty (0 bytes)", "file rỗng (0 byte)")
BLANK = (
    "the file holds no line with data (only white space or blank lines)",
    "file không có dòng nào chứa dữ liệu (chỉ có khoảng trắng hoặc dòng trống)",
)


@pytest.mark.parametrize(
    "name,data,reason",
    [
        ("empty.jsonl", b"", ZERO),
        ("blank.jsonl", b"\n  \n\t\r\n\n", BLANK),
        ("bom.jsonl", b"\xef\xbb\xbf\n", BLANK),
        ("empty.jsonl.gz", gzip.compress(b"\n \n"), BLANK),
    ],
    ids=["zero-bytes", "blank-lines", "bom-only", "gzip-of-blank-lines"],
)
def test_an_input_file_with_no_samples_is_a_preflight_error(tmp_path, monkeypatch, name, data, reason):
    monkeypatch.chdir(tmp_path)
    good, _ = pairs_file(tmp_path / "good.jsonl", 5)
    (tmp_path / name).write_bytes(data)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(E.SourceParseError) as info:
        preflight(basic_config([good, f"./{name}"]))
    err = info.value
    assert err.render("en").startswith(EMPTY_EN.format(path=f"./{name}", reason=reason[0]))
    assert err.render("vi").startswith(EMPTY_VI.format(path=f"./{name}", reason=reason[1]))
    assert "source.allow_empty: true" in err.render("en") and "source.allow_empty: true" in err.render("vi")
    assert sorted(os.listdir(tmp_path)) == before  # pre-flight creates nothing


def test_mintdim_build_of_an_empty_file_exits_1_and_builds_nothing(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    cfg = basic_config(["empty.jsonl"])
    with open(tmp_path / "c.yaml", "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    proc = run_cli(tmp_path, "build", "c.yaml", "--cores", "1")
    assert proc.returncode == 1, proc.stderr
    assert (
        "SourceParseError: JSONL file holds no samples." in proc.stderr and "File: empty.jsonl" in proc.stderr
    )
    assert not (tmp_path / "out").exists()


def test_a_file_of_blank_lines_beyond_the_preflight_scan_fails_in_the_plan_stage(tmp_path, monkeypatch):
    """Pre-flight reads a bounded prefix; a longer file of white space passes it, and the plan stage,
    which sees every chunk's sample count, raises the same error (never a silent 0-sample output)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(jsonl, "EMPTY_SCAN_BYTES", 16)
    good, _ = pairs_file(tmp_path / "good.jsonl", 5)
    (tmp_path / "blank.jsonl").write_bytes(b"\n" * 40 + b"   \n" * 10)
    cfg = basic_config([good, "./blank.jsonl"], chunk_mb=32 / 2**20)  # several chunks, each without a sample
    preflight(cfg)  # undecided: passes
    with pytest.raises(E.SourceParseError) as info:
        drive(cfg)
    assert info.value.render("en").startswith(EMPTY_EN.format(path="./blank.jsonl", reason=BLANK[0]))
    assert not os.path.exists("out/stats.json")


def test_allow_empty_builds_the_other_files_and_says_so_in_the_console_and_stats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good, _ = pairs_file(tmp_path / "good.jsonl", 12)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    cfg = basic_config([good, "./empty.jsonl"], sizes=[[512]])
    cfg["source"]["allow_empty"] = True
    from mintdim.run.runner import run_build

    lines: list[str] = []
    result = run_build(cfg, cores=1, echo=lines.append)
    warning = [x for x in lines if x.startswith("[unit-build:warning]")]
    assert any("./empty.jsonl" in x and "no samples" in x and "source.allow_empty" in x for x in warning), (
        lines
    )
    stats = read_json("out/stats.json")
    assert stats["empty_files"] == ["./empty.jsonl"] and stats["total_samples"] == 12
    assert result.outputs[0].stats["empty_files"] == ["./empty.jsonl"]
    assert verify("out", source=True, all=True).ok


def test_allow_empty_with_no_sample_at_all_and_suggest_units_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    cfg = basic_config(["./empty.jsonl"])
    cfg["source"]["allow_empty"] = True
    api = mintdim.pipeline("unit-build").source.jsonl(
        files=["./empty.jsonl"],
        fields=[["prompt", "response"]],
        templates=["{prompt}\n{response}"],
        allow_empty=True,
    )
    assert api.to_config()["source"] == cfg["source"]
    logs = drive(cfg).logs
    assert any(x.startswith("[unit-build:warning]") and "./empty.jsonl" in x for x in logs), logs
    stats = read_json("out/stats.json")
    assert stats["total_samples"] == 0 and stats["empty_files"] == ["./empty.jsonl"]
    assert verify("out").ok
    for source in ("out", cfg):  # a finished output, and a config (tokenized by the build's stage)
        with pytest.raises(E.UsageError) as info:
            suggest_units(source, k=2)
        en, vi = info.value.render("en"), info.value.render("vi")
        assert "holds no samples" in en and "không có mẫu nào" in vi
        assert "Rules" not in en and "sizes must be" not in en
    from mintdim.cli import main

    assert main(["suggest-units", "out", "-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "UsageError: out holds no samples" in err and "Rules" not in err


def test_suggest_units_max_below_the_longest_sample_is_a_usage_error_without_unit_rules(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    good, _ = pairs_file(tmp_path / "good.jsonl", 12)
    drive(basic_config([good], sizes=[[512]]))
    with pytest.raises(E.UsageError) as info:
        suggest_units("out", k=2, max_size=50)
    assert "--max 50" in info.value.render("en") and "Rules" not in info.value.render("en")
    assert "--max 50" in info.value.render("vi")


# --- over-long samples in bucketed units ----------------------------------------------------------


def test_overflow_error_counts_every_overlong_sample_across_chunks(tmp_path, monkeypatch, sp):
    monkeypatch.chdir(tmp_path)
    path, rows = pairs_file(tmp_path / "pairs.jsonl")
    lengths = [len(ids_of(sp, r)) for r in rows]
    over = [i for i, n in enumerate(lengths) if n > SIZES[-1]]
    assert len(over) > 10
    with pytest.raises(E.UnitOverflowError) as info:
        drive(over_config([path], chunk_mb=8 * 1024 / 2**20))  # several chunks, several over-long in each
    en, vi = info.value.render("en"), info.value.render("vi")
    first = over[0]
    assert en.startswith(
        f"UnitOverflowError: Sample token length exceeds max unit size.\n\nSample: {path}:{first + 1}"
        f"\n\ntoken_count: {lengths[first]}\n\nmax_unit_size: {SIZES[-1]}\n\n"
        "Increase unit sizes and run again.\n\n"
    )
    assert vi.startswith(
        f"UnitOverflowError: Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: {path}:{first + 1}"
        f"\n\ntoken_count: {lengths[first]}\n\nmax_unit_size: {SIZES[-1]}\n\n"
        "Hãy tăng unit sizes rồi chạy lại.\n\n"
    )
    assert f"{len(over)} samples are longer than the largest unit size {SIZES[-1]}" in en
    assert f"{len(over)} mẫu dài hơn unit lớn nhất {SIZES[-1]}" in vi
    for i in over[:10]:
        assert (
            f"• {path}:{i + 1} ({lengths[i]} tokens)" in en and f"• {path}:{i + 1} ({lengths[i]} token)" in vi
        )
    for i in over[10:]:
        assert f"{path}:{i + 1} " not in en
    for text in (en, vi):
        assert "mintdim suggest-units" in text and "units: {sizes: auto" in text
        assert "overflow: [drop]" in text and "overflow: [truncate]" in text
    assert not os.path.exists("out/stats.json")


def test_overflow_error_is_the_default_and_the_same_through_snakemake(tmp_path, sp):
    path, rows = pairs_file(tmp_path / "pairs.jsonl")
    over = [i for i, r in enumerate(rows) if len(ids_of(sp, r)) > SIZES[-1]]
    with pytest.raises(E.UnitOverflowError) as info:
        build_in(tmp_path, over_config([str(path)]), cores=2)
    assert f"{len(over)} samples are longer than the largest unit size {SIZES[-1]}" in info.value.render("en")
    assert not (tmp_path / "out" / "stats.json").exists()


def test_overflow_drop_with_unit_sizes(tmp_path, monkeypatch, sp):
    monkeypatch.chdir(tmp_path)
    path, rows = pairs_file(tmp_path / "pairs.jsonl")
    lengths = [len(ids_of(sp, r)) for r in rows]
    over = [i for i, n in enumerate(lengths) if n > SIZES[-1]]
    drive(over_config([path], overflow="drop"))
    index = read_jsonl("out/sample_index.jsonl")
    assert [r["sample_id"] for r in index] == list(range(N_ROWS))
    for r in index:
        i = r["sample_id"]
        if i in over:
            assert (
                r["overflow"] == "dropped" and r["token_count"] == 0 and r["source_token_count"] == lengths[i]
            )
            assert r["unit_size"] is None and r["shard_path"] is None and r["shard_row"] is None
        else:
            assert "overflow" not in r and r["token_count"] == lengths[i]
    stats, manifest = read_json("out/stats.json"), read_json("out/manifest.json")
    assert stats["overflow"] == {
        "policy": "drop",
        "dropped": len(over),
        "truncated": 0,
        "truncated_tokens_lost": 0,
        "dropped_ids": over,
        "truncated_ids": [],
    }
    assert stats["total_samples"] == N_ROWS and sum(stats["unit_distribution"].values()) == N_ROWS - len(over)
    assert stats["total_tokens"] == sum(n for i, n in enumerate(lengths) if i not in over)
    assert manifest["units"]["overflow"] == "drop" and manifest["units"]["sizes"] == SIZES
    ds = mintdim.open("out")
    with pytest.raises(ValueError, match="dropped"):
        ds.tokens(over[0])
    seen = sorted(int(s) for b in ds.batches(5, shuffle=False) for s in b.sample_ids)
    assert seen == [i for i in range(N_ROWS) if i not in over]
    for i in seen:
        assert ds.tokens(i).tolist() == ids_of(sp, rows[i])
    assert verify("out", source=True, all=True).ok
    from mintdim.reading.sample_view import render_sample
    from mintdim.reading.summary import format_summary, summarize
    from mintdim.stages.report import render_html

    assert f"overflow    drop: {len(over)} dropped, 0 truncated" in format_summary(summarize("out"))
    assert f"drop: {len(over)} dropped, 0 truncated" in render_html(summarize("out"))
    assert "was dropped (units.overflow: drop)" in render_sample("out", over[0])


def test_overflow_truncate_with_unit_sizes_and_loss_masks(tmp_path, monkeypatch, sp):
    """Truncated to the largest unit: the first tokens of the library's encode, and the first bits of
    the mask the same sample gets when a unit holds it whole (an untruncated build of the same data)."""
    monkeypatch.chdir(tmp_path)
    path, rows = pairs_file(tmp_path / "pairs.jsonl")
    lengths = [len(ids_of(sp, r)) for r in rows]
    over = [i for i, n in enumerate(lengths) if n > SIZES[-1]]
    big = SIZES[-1]
    drive(over_config([path], overflow="truncate", out="t"))
    whole_cfg = over_config([path], out="whole", sizes=SIZES + [512])
    trunc_cfg = over_config([path], overflow="truncate", out="tm")
    for cfg in (whole_cfg, trunc_cfg):
        cfg["source"]["train_on"] = [["response"]]
        drive(cfg)
    for out in ("t", "tm"):
        index = read_jsonl(f"{out}/sample_index.jsonl")
        stats = read_json(f"{out}/stats.json")
        assert stats["overflow"] == {
            "policy": "truncate",
            "dropped": 0,
            "truncated": len(over),
            "truncated_tokens_lost": sum(lengths[i] - big for i in over),
            "dropped_ids": [],
            "truncated_ids": over,
        }
        assert stats["unit_distribution"][str(big)] == sum(1 for n in lengths if 160 < n) and stats[
            "total_tokens"
        ] == sum(min(n, big) for n in lengths)
        ds = mintdim.open(out)
        for r in index:
            i = r["sample_id"]
            assert ds.tokens(i).tolist() == ids_of(sp, rows[i])[:big]
            if i in over:
                assert r["overflow"] == "truncated" and r["token_count"] == big and r["unit_size"] == big
                assert r["source_token_count"] == lengths[i]
            else:
                assert "overflow" not in r
        assert verify(out, source=True, all=True).ok
    whole = {r["sample_id"]: r for r in read_jsonl("whole/sample_index.jsonl")}
    for r in read_jsonl("tm/sample_index.jsonl"):
        i = r["sample_id"]
        want = read_mask("whole", whole[i])[: min(lengths[i], big)]
        got = read_mask("tm", r)
        assert got[: len(want)].tolist() == want.tolist() and not got[len(want) :].any()
        assert r["trained_tokens"] == int(want.sum())
    stats = read_json("tm/stats.json")
    assert stats["trained_tokens"] == sum(r["trained_tokens"] for r in read_jsonl("tm/sample_index.jsonl"))


def test_overflow_with_sizes_auto_and_max_size(tmp_path, monkeypatch, sp):
    monkeypatch.chdir(tmp_path)
    path, rows = pairs_file(tmp_path / "pairs.jsonl")
    lengths = [len(ids_of(sp, r)) for r in rows]
    over = [i for i, n in enumerate(lengths) if n > 192]
    for policy in ("drop", "truncate"):
        cfg = basic_config([path], sps=[7], out=policy)
        cfg["units"] = {"sizes": "auto", "k": 3, "max_size": 192, "build_batch": [16], "overflow": [policy]}
        drive(cfg)
        stats, manifest = read_json(f"{policy}/stats.json"), read_json(f"{policy}/manifest.json")
        assert stats["overflow"][f"{policy}ped_ids" if policy == "drop" else "truncated_ids"] == over
        sizes = manifest["units"]["sizes"]
        assert max(sizes) <= 192 and (policy == "drop" or max(sizes) == 192)
        assert verify(policy, source=True, all=True).ok
    with pytest.raises(E.UnitOverflowError) as info:
        cfg = basic_config([path], sps=[7], out="err")
        cfg["units"] = {"sizes": "auto", "k": 3, "max_size": 192, "build_batch": [16]}
        drive(cfg)
    assert f"{len(over)} samples are longer than the largest unit size 192" in info.value.render("en")


def test_verify_checks_the_overflow_records_of_unit_sizes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, _rows = pairs_file(tmp_path / "pairs.jsonl")
    drive(over_config([path], overflow="drop"))
    assert verify("out").ok
    stats = read_json("out/stats.json")
    stats["overflow"]["dropped_ids"] = stats["overflow"]["dropped_ids"][1:]
    with open("out/stats.json", "w", encoding="utf-8") as f:
        json.dump(stats, f)
    report = verify("out")
    assert not report.ok and any("overflow.dropped_ids" in p.message for p in report.problems)
    drive(over_config([path], overflow="truncate", out="t", work_dir=".w2"))
    index = read_jsonl("t/sample_index.jsonl")
    victim = next(r for r in index if r.get("overflow") == "truncated")
    victim["source_token_count"] = SIZES[-1]  # a truncated sample that would have fitted
    with open("t/sample_index.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in index)
    report = verify("t")
    assert not report.ok and any("source_token_count" in p.message for p in report.problems)
    manifest = read_json("t/manifest.json")
    manifest["units"]["overflow"] = "drop"  # a truncated sample under the drop policy
    with open("t/manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    assert any("policy" in p.message for p in verify("t").problems)


def test_overflow_outputs_are_the_same_bytes_whatever_the_chunking_and_cores(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, _rows = pairs_file(tmp_path / "pairs.jsonl")
    a = over_config([path, shutil.copy(path, str(tmp_path / "copy.jsonl"))], overflow="truncate", out="a")
    a["source"]["train_on"] = [["response"]]
    drive(a)
    assert verify("a").ok
    b = dict(a, output={"dir": "b", "samples_per_shard": [7]}, chunk_mb=8 * 1024 / 2**20, work_dir=".w2")
    drive(b)
    assert tree_bytes("a") == tree_bytes("b")
    c = dict(a, output={"dir": "c", "samples_per_shard": [7]}, work_dir=".w3")
    build_in(tmp_path, c, cores=2)
    assert tree_bytes("a") == tree_bytes("c")


def test_a_build_without_overflow_keeps_its_bytes_and_build_id(tmp_path, monkeypatch):
    """overflow: [error] declared is the default: the same build id and no new keys in the output."""
    from mintdim.config import resolve

    monkeypatch.chdir(tmp_path)
    path, _rows = pairs_file(tmp_path / "pairs.jsonl", 20)
    plain = basic_config([path], sizes=[[512]])
    declared = basic_config([path], sizes=[[512]])
    declared["units"]["overflow"] = ["error"]
    assert resolve(plain).build_id == resolve(declared).build_id
    drive(plain)
    assert (
        "overflow" not in read_json("out/stats.json")
        and "overflow" not in read_json("out/manifest.json")["units"]
    )
    assert "empty_files" not in read_json("out/stats.json")
    assert all("overflow" not in r for r in read_jsonl("out/sample_index.jsonl"))
