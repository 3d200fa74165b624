"""`mintdim verify OUT [--source [--all]]` and `mintdim.reading.verify.verify()`: a finished output checks
clean, and each way of corrupting it (shards, indexes, stats, markers, the source files) is caught and named
with its file, and its sample where there is one."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from conftest import SP_MODEL, basic_config, examples, gsm8k_rows, read_json, read_jsonl, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stages import drive

from mintdim.reading.verify import Report, main_lines, verify

SIZES = [64, 128, 256, 512, 2048]  # 2048 receives nothing


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> str:
    """A finished output with several shards per unit, an empty unit, duplicates and UNK."""
    root = tmp_path_factory.mktemp("verify")
    rows = gsm8k_rows(0, 30)
    rows += [{"prompt": "日本語のテキスト", "response": "中文"}, dict(rows[3]), dict(rows[3]), dict(rows[7])]
    os.makedirs(root / "data")
    with open(root / "data" / "d.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    old = os.getcwd()
    os.chdir(root)
    try:
        drive(basic_config(["data/d.jsonl"], sizes=[SIZES], sps=[4], out="out"))
    finally:
        os.chdir(old)
    return str(root)


@pytest.fixture
def copy(good, tmp_path) -> tuple[str, str]:
    """A private copy of the project (source file and output): (root, output dir)."""
    root = str(tmp_path / "p")
    shutil.copytree(good, root, ignore=shutil.ignore_patterns(".mintdim"))
    return root, os.path.join(root, "out")


def problems(report: Report) -> list[str]:
    return [str(p) for p in report.problems]


def index(out) -> list[dict]:
    return read_jsonl(os.path.join(out, "sample_index.jsonl"))


def write_index(out, name, rows) -> None:
    """The rows as the build writes them (compact JSON, UTF-8): a changed value is all that differs."""
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)


def record_of(out, sample_id: int):
    rec = index(out)[sample_id]
    m = read_json(os.path.join(out, "manifest.json"))
    arr = np.memmap(
        os.path.join(out, rec["shard_path"]), dtype=np.dtype(m["token_dtype"]).newbyteorder("<"), mode="r+"
    ).reshape(-1, rec["unit_size"])
    return rec, arr


def test_a_finished_output_verifies_clean_also_against_its_source(good):
    out = os.path.join(good, "out")
    stats = read_json(os.path.join(out, "stats.json"))
    assert stats["duplicate_groups"] == 2 and stats["samples_with_unk"] >= 1  # the fixture covers both
    assert os.listdir(os.path.join(out, "unit_2048")) == ["EMPTY_UNIT.md"]
    r = verify(out)
    assert r.ok, problems(r)
    assert r.samples == 34 and r.shards >= 4
    r = verify(out, source=True, all=True, root=good)
    assert r.ok, problems(r)
    assert r.encoded == 34 and r.source_checked
    r = verify(out, source=True, sample=5, root=good)
    assert r.ok and r.encoded == 5


def test_cli_ok_and_json(good):
    proc = run_cli(good, "verify", "out", "--source", "--all")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[verify] out: OK (34 samples") and "34 samples re-encoded" in proc.stdout
    proc = run_cli(good, "verify", "out", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["ok"] is True and data["problems"] == 0


def test_cli_reports_each_problem_and_exits_1(copy):
    root, out = copy
    rec, arr = record_of(out, 5)
    arr[rec["shard_row"], rec["unit_size"] - 1] = 7  # padding overwritten
    arr.flush()
    proc = run_cli(root, "verify", "out")
    assert proc.returncode == 1
    assert (
        f"{rec['shard_path']}: sample 5: row {rec['shard_row']}: slot {rec['unit_size'] - 1} holds 7, "
        f"not pad_id 1" in proc.stderr
    )
    assert proc.stderr.startswith(f"{rec['shard_path']}: its bytes differ from its SHA-256 in checksums")
    assert proc.stdout.startswith("[verify] out: 2 problems (")  # checksums.sha256 first, then what is wrong
    proc = run_cli(root, "verify", "nowhere")
    assert proc.returncode == 1 and "nowhere: .: does not exist" not in proc.stdout
    assert proc.stderr == "nowhere: does not exist\n"  # the directory by its name, not as "."


def test_usage_error_is_exit_2(good):
    assert run_cli(good, "verify").returncode == 2


# --- corruptions: each caught, with file and sample ------------------------------------------------------


def _truncate_shard(out):
    rec = index(out)[0]
    path = os.path.join(out, rec["shard_path"])
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - rec["unit_size"] * 2)
    return rec["shard_path"], "size"


def _half_record(out):
    rec = index(out)[0]
    with open(os.path.join(out, rec["shard_path"]), "ab") as f:
        f.write(b"\x01\x00" * 3)
    return rec["shard_path"], "expected"


def _pad_overwritten(out):
    rec, arr = record_of(out, 9)
    arr[rec["shard_row"], rec["token_count"]] = 5
    arr.flush()
    return f"{rec['shard_path']}: sample 9", "not pad_id"


def _token_beyond_vocab(out):
    rec, arr = record_of(out, 2)
    arr[rec["shard_row"], 0] = 60000
    arr.flush()
    return f"{rec['shard_path']}: sample 2", "outside the vocabulary"


def _unk_written_into_tokens(out):
    rec, arr = record_of(out, 1)
    arr[rec["shard_row"], 0] = 0  # unk_id 0: now the UNK index is wrong
    arr.flush()
    return "unk_index.jsonl: sample 1", "missing"


def _token_count_changed(out):
    rows = index(out)
    rows[4]["token_count"] -= 1
    write_index(out, "sample_index.jsonl", rows)
    return "sample 4", "pad_id"


def _unit_size_wrong(out):
    rows = index(out)
    rows[3]["unit_size"] = 2048
    write_index(out, "sample_index.jsonl", rows)
    return "sample_index.jsonl: sample 3", "belongs in unit"


def _line_dropped(out):
    rows = index(out)
    del rows[6]
    write_index(out, "sample_index.jsonl", rows)
    return "sample_index.jsonl: sample 6", "sample_id 7, expected 6"


def _shard_path_wrong(out):
    rows = index(out)
    rows[8]["shard_row"] = rows[8]["shard_row"] + 1
    write_index(out, "sample_index.jsonl", rows)
    return "sample_index.jsonl: sample 8", "shard_row"


def _source_line_wrong(out):
    rows = index(out)
    rows[10]["source_line"] = 2
    write_index(out, "sample_index.jsonl", rows)
    return "sample_index.jsonl: sample 10", "input order"


def _bad_json_line(out):
    with open(os.path.join(out, "sample_index.jsonl"), "r+b") as f:
        f.write(b"[")  # the first line's opening brace
    return "sample_index.jsonl", "line 1 is not valid JSON"


def _histogram_changed(out):
    h = read_json(os.path.join(out, "histogram.json"))
    h["64"] += 1
    json.dump(h, open(os.path.join(out, "histogram.json"), "w"))
    return "histogram.json", "does not match"


def _stats_changed(out):
    s = read_json(os.path.join(out, "stats.json"))
    s["total_tokens"] += 3
    json.dump(s, open(os.path.join(out, "stats.json"), "w"))
    return "stats.json", "total_tokens"


def _duplicate_group_dropped(out):
    rows = read_jsonl(os.path.join(out, "duplicate_index.jsonl"))
    write_index(out, "duplicate_index.jsonl", rows[:1])
    return "duplicate_index.jsonl: sample 7", "missing the duplicate group"


def _duplicate_member_changed(out):
    rows = read_jsonl(os.path.join(out, "duplicate_index.jsonl"))
    rows[0]["samples"][1]["source_line"] += 1
    write_index(out, "duplicate_index.jsonl", rows)
    return "duplicate_index.jsonl: sample 3", "expected the group"


def _unk_positions_changed(out):
    rows = read_jsonl(os.path.join(out, "unk_index.jsonl"))
    rows[0]["unk_positions"] = rows[0]["unk_positions"][1:] + [999]
    write_index(out, "unk_index.jsonl", rows)
    return f"unk_index.jsonl: sample {rows[0]['sample_id']}", "unk_positions"


def _unk_entry_dropped(out):
    rows = read_jsonl(os.path.join(out, "unk_index.jsonl"))
    write_index(out, "unk_index.jsonl", rows[1:])
    return f"unk_index.jsonl: sample {rows[0]['sample_id']}", "missing"


def _extra_shard(out):
    rec = index(out)[0]
    unit_dir = os.path.join(out, f"unit_{rec['unit_size']}")
    n = len(os.listdir(unit_dir))
    shutil.copy(os.path.join(out, rec["shard_path"]), os.path.join(unit_dir, f"shard_{n:06d}.bin"))
    return f"unit_{rec['unit_size']}/shard_{n:06d}.bin", "not expected"


def _shard_missing(out):
    rec = index(out)[0]
    os.unlink(os.path.join(out, rec["shard_path"]))
    return rec["shard_path"], "missing"


def _empty_marker_removed(out):
    os.unlink(os.path.join(out, "unit_2048", "EMPTY_UNIT.md"))
    return "unit_2048", "EMPTY_UNIT.md"


def _failure_marker(out):
    with open(os.path.join(out, "unit_64", "UNIT_BUILD_FAILED.md"), "w") as f:
        f.write("# Unit build failed\n")
    return "unit_64/UNIT_BUILD_FAILED.md", "failure marker"


def _manifest_pad_changed(out):
    m = read_json(os.path.join(out, "manifest.json"))
    m["tokenizer"]["pad_id"] = 2
    json.dump(m, open(os.path.join(out, "manifest.json"), "w"))
    return "sample 0", "not pad_id 2"


def _manifest_dtype_changed(out):
    m = read_json(os.path.join(out, "manifest.json"))
    m["token_dtype"] = m["token_storage"]["dtype"] = "uint32"
    m["token_storage"]["bytes_per_token"] = 4
    json.dump(m, open(os.path.join(out, "manifest.json"), "w"))
    return "manifest.json", "does not follow vocab_size"


def _unit_dir_removed(out):
    shutil.rmtree(os.path.join(out, "unit_256"))
    return "unit_256", "declared unit directory is missing"


def _stray_file(out):
    open(os.path.join(out, "notes.txt"), "w").write("x")
    return "notes.txt", "unexpected entry"


CORRUPTIONS = [
    _truncate_shard,
    _half_record,
    _pad_overwritten,
    _token_beyond_vocab,
    _unk_written_into_tokens,
    _token_count_changed,
    _unit_size_wrong,
    _line_dropped,
    _shard_path_wrong,
    _source_line_wrong,
    _bad_json_line,
    _histogram_changed,
    _stats_changed,
    _duplicate_group_dropped,
    _duplicate_member_changed,
    _unk_positions_changed,
    _unk_entry_dropped,
    _extra_shard,
    _shard_missing,
    _empty_marker_removed,
    _failure_marker,
    _manifest_pad_changed,
    _manifest_dtype_changed,
    _unit_dir_removed,
    _stray_file,
]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=[c.__name__.strip("_") for c in CORRUPTIONS])
def test_each_corruption_is_caught_and_named(copy, corrupt):
    _root, out = copy
    where, what = corrupt(out)
    r = verify(out)
    assert not r.ok
    found = problems(r)
    assert any(where in p and what in p for p in found), found
    assert main_lines(r)[-1].startswith(f"[verify] {out}: {r.count} problem")


# --- only the source and the tokenizer can tell ----------------------------------------------------------


def test_a_swapped_token_is_caught_by_the_checksums_and_the_source_names_the_sample(copy):
    """A plausible token (no UNK, no pad) written over another: the files stay consistent with each other, so
    only checksums.sha256 tells without the source (verify used to say OK); --source still re-encodes."""
    root, out = copy
    rec, arr = record_of(out, 12)
    arr[rec["shard_row"], 1] = 3 if arr[rec["shard_row"], 1] != 3 else 4
    arr.flush()
    r = verify(out)
    assert problems(r) == [
        f"{rec['shard_path']}: its bytes differ from its SHA-256 in checksums.sha256 "
        "(changed since the build)"
    ]
    r = verify(out, source=True, all=True, root=root)
    assert any(
        f"{rec['shard_path']}: sample 12: row {rec['shard_row']}: tokens differ" in p and "slot 1" in p
        for p in problems(r)
    ), problems(r)


# --- checksums.sha256 ------------------------------------------------------------------------------------

SUMS = "checksums.sha256"
KINDS = (
    "shard_",
    "mask_",
    "cu_",
    "sample_index",
    "histogram",
    "duplicate_index",
    "unk_index",
    "stats",
    "manifest",
)


@pytest.fixture(scope="module")
def packed(good) -> str:
    """good's data as packed rows with loss masks: shards, cu_ boundaries and masks (and both indexes)."""
    from test_packing import packed_config

    old = os.getcwd()
    os.chdir(good)
    try:
        drive(packed_config(["data/d.jsonl"], row=512, sps=4, train_on=[["response"]], out="packed"))
    finally:
        os.chdir(old)
    return os.path.join(good, "packed")


def _flip_one_bit(path: str) -> None:
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 0x01]))


def _files(out: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(b, n), out).replace(os.sep, "/")
        for b, _d, names in os.walk(out)
        for n in names
    )


def test_checksums_file_is_what_sha256sum_writes_and_checks(good, packed):
    import hashlib
    import subprocess

    for out in (os.path.join(good, "out"), packed):
        data = open(os.path.join(out, SUMS), "rb").read()
        sha = {
            rel: hashlib.sha256(open(os.path.join(out, rel), "rb").read()).hexdigest() for rel in _files(out)
        }
        want = "".join(f"{sha[rel]}  {rel}\n" for rel in _files(out) if rel != SUMS).encode()
        assert data == want  # every other file, sorted relative paths with '/', two spaces, LF
        if shutil.which("sha256sum"):
            proc = subprocess.run(
                ["sha256sum", "--strict", "-c", SUMS], cwd=out, capture_output=True, text=True
            )
            assert proc.returncode == 0 and proc.stdout.count(": OK\n") == len(_files(out)) - 1, proc.stdout


def test_one_flipped_bit_in_any_file_fails_verify_naming_that_file(good, packed, tmp_path):
    """Each kind of file of both layouts (shard, mask, cu_, each index, histogram, stats, manifest): one bit
    flipped, and verify names that file first, from checksums.sha256."""
    seen = set()
    for out in (os.path.join(good, "out"), packed):
        for rel in _files(out):
            kind = next((k for k in KINDS if os.path.basename(rel).startswith(k)), None)
            if kind is None or (kind, out) in seen or not os.path.getsize(os.path.join(out, rel)):
                continue
            seen.add((kind, out))
            copy = str(tmp_path / f"{len(seen)}")
            shutil.copytree(out, copy)
            _flip_one_bit(os.path.join(copy, rel))
            r = verify(copy)
            assert not r.ok and str(r.problems[0]) == (
                f"{rel}: its bytes differ from its SHA-256 in {SUMS} (changed since the build)"
            ), (rel, problems(r)[:3])
    assert {k for k, _o in seen} == set(KINDS)  # every kind met, in one layout or the other


def test_a_missing_or_an_added_file_is_named(copy):
    _root, out = copy
    os.unlink(os.path.join(out, "unk_index.jsonl"))
    open(os.path.join(out, "unit_64", "extra.bin"), "wb").write(b"x")
    found = problems(verify(out))
    assert found[:2] == [
        f"unk_index.jsonl: listed in {SUMS}, missing",
        f"unit_64/extra.bin: not listed in {SUMS} (the build did not write it)",
    ], found


def test_an_output_written_before_checksums_verifies_with_a_note(copy):
    """No checksums.sha256 (MintDim wrote none before): every other check runs, the report says so."""
    root, out = copy
    os.unlink(os.path.join(out, SUMS))
    r = verify(out)
    assert r.ok and r.notes and SUMS in r.notes[0], problems(r)
    proc = run_cli(root, "verify", "out")
    assert proc.returncode == 0
    assert f"[verify] out: note: no {SUMS}: the output was written before" in proc.stderr
    assert proc.stdout.startswith("[verify] out: OK (34 samples") and "checksummed" not in proc.stdout
    rec, arr = record_of(out, 5)
    arr[rec["shard_row"], rec["unit_size"] - 1] = 7  # the structural checks still run
    arr.flush()
    assert any("not pad_id" in p for p in problems(verify(out)))


def test_source_changed_after_the_build_is_caught(copy):
    root, out = copy
    path = os.path.join(root, "data", "d.jsonl")
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    obj = json.loads(lines[15])
    obj["response"] += " (edited)"
    lines[15] = json.dumps(obj) + "\n"
    lines.append(json.dumps({"prompt": "a new line", "response": "x"}) + "\n")
    open(path, "w", encoding="utf-8").writelines(lines)
    r = verify(out, source=True, root=root)
    found = problems(r)
    assert any(
        "sample_index.jsonl: sample 15: hash differs from the rendered text of data/d.jsonl:16" in p
        for p in found
    ), found
    assert any(p.startswith("data/d.jsonl: line 35 has no sample") for p in found), found


def test_hash_changed_in_the_index_is_caught_against_the_source(copy):
    root, out = copy
    rows = index(out)
    rows[20]["hash"] = "0" * 64
    write_index(out, "sample_index.jsonl", rows)
    r = verify(out, source=True, root=root, sample=0)
    assert any("sample_index.jsonl: sample 20: hash differs" in p for p in problems(r)), problems(r)


def test_missing_source_or_tokenizer_is_reported_not_raised(copy):
    root, out = copy
    os.unlink(os.path.join(root, "data", "d.jsonl"))
    m = read_json(os.path.join(out, "manifest.json"))
    m["tokenizer"]["path"] = "./nowhere.model"
    json.dump(m, open(os.path.join(out, "manifest.json"), "w"))
    r = verify(out, source=True, root=root)
    found = problems(r)
    assert any(p.startswith("data/d.jsonl: source file not found") for p in found), found
    assert any("tokenizer './nowhere.model' cannot be loaded" in p for p in found), found


def test_wrong_tokenizer_facts_are_caught(copy, tmp_path):
    root, out = copy
    shutil.copy(SP_MODEL, os.path.join(root, "sp.model"))
    m = read_json(os.path.join(out, "manifest.json"))
    m["tokenizer"]["path"] = "sp.model"
    m["tokenizer"]["unk_id"] = 5
    json.dump(m, open(os.path.join(out, "manifest.json"), "w"))
    r = verify(out, source=True, root=root, sample=3)
    assert any("manifest.json: tokenizer unk_id is 5, the tokenizer file says 0" in p for p in problems(r))


def test_not_an_output_directory(tmp_path):
    r = verify(str(tmp_path))
    assert not r.ok and {p.file for p in r.problems} >= {"manifest.json", "stats.json"}
    (tmp_path / "f").write_text("x")
    assert problems(verify(str(tmp_path / "f"))) == [".: not a directory"]


def _build_with_masks() -> None:
    """out/: nine pairs with source.train_on (masks beside the shards), built in the current directory."""
    rows = [{"prompt": f"Question {i} about apples", "response": f"Answer {i} apples"} for i in range(9)]
    with open("d.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    cfg = basic_config(["d.jsonl"], sizes=[[16, 32]], sps=[4], out="out")
    cfg["source"]["train_on"] = [["response"]]
    drive(cfg)


def test_loss_masks_are_checked_when_the_manifest_declares_them(tmp_path, monkeypatch):
    """source.train_on: a mask_XXXXXX.bin beside each shard (ceil(unit/8) bytes a record, no bit after
    token_count); without it, a mask file is a stray file."""
    monkeypatch.chdir(tmp_path)
    _build_with_masks()
    assert "loss_mask" in read_json("out/manifest.json")
    r = verify("out", source=True, all=True)
    assert r.ok, problems(r)
    rec = index("out")[6]
    mask = os.path.join("out", rec["shard_path"].replace("shard_", "mask_"))
    width = -(-rec["unit_size"] // 8)
    with open(mask, "r+b") as f:
        f.seek(rec["shard_row"] * width + width - 1)
        f.write(b"\x80")  # the record's last slot: after token_count
    assert any(
        f"sample 6: row {rec['shard_row']}: mask bit set after token_count" in p
        for p in problems(verify("out"))
    )
    with open(mask, "r+b") as f:
        f.truncate(width)
    assert any("expected" in p and "mask_" in p for p in problems(verify("out")))
    m = read_json("out/manifest.json")
    del m["loss_mask"]
    json.dump(m, open("out/manifest.json", "w"))
    assert any("mask_000000.bin: unexpected file" in p for p in problems(verify("out")))


CHANGED_INDEX = f"sample_index.jsonl: its bytes differ from its SHA-256 in {SUMS} (changed since the build)"


def verdict(out) -> list[str]:
    """verify's problems with an output, other than that its sample_index.jsonl changed since the build."""
    return [p for p in problems(verify(out)) if p != CHANGED_INDEX]


def respaced(out) -> str:
    """A copy of the output whose sample_index.jsonl has each line JSON reads written with JSON's default
    spacing (", ", ": "), which the build never writes; a line JSON does not read stays as it is."""
    copied = out.rstrip(os.sep) + "-respaced"
    shutil.copytree(out, copied)
    path = os.path.join(copied, "sample_index.jsonl")
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    for i, line in enumerate(lines):
        try:
            lines[i] = json.dumps(json.loads(line)).encode()
        except ValueError:
            pass
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    return copied


def test_the_index_is_judged_by_its_json_values_not_its_bytes(good, copy):
    """verify reads sample_index.jsonl with array operations when every line is as the build writes it
    (formats/output.read_sample_index); the line-by-line check gives the same columns. A changed value
    sends it to the line-by-line check, which words the problem (the corruptions above go through
    write_index, which writes the build's bytes)."""
    out = os.path.join(good, "out")
    assert verify(out).ok
    _root, changed = copy
    original = index(changed)
    write_index(changed, "sample_index.jsonl", original)
    with (
        open(os.path.join(out, "sample_index.jsonl"), "rb") as a,
        open(os.path.join(changed, "sample_index.jsonl"), "rb") as b,
    ):
        # write_index writes the build's bytes: what follows tests the array check
        assert a.read() == b.read()
    for key, value in (
        ("shard_row", None),
        ("sample_id", 5.0),
        ("hash", "A" * 64),
        ("source_line", 0),
        ("token_count", 3),
        ("shard_path", "unit_64/shard_000009.bin"),
    ):
        rows = [dict(r) for r in original]
        if value is None:
            del rows[5][key]  # an optional key: the line-by-line check accepts its absence
        else:
            rows[5][key] = value
        write_index(changed, "sample_index.jsonl", rows)
        found = problems(verify(changed))
        assert found[0].startswith(f"sample_index.jsonl: its bytes differ from its SHA-256 in {SUMS}"), found
        rest = found[1:]  # what the line-by-line check finds: nothing for these two (5.0 == 5 for that check)
        assert (not rest) == (key in ("shard_row", "sample_id")), (key, found)
    # what the line-by-line check lets pass but the array check does not take: another key order or
    # spacing, an unknown key, a trained_tokens that is not an int
    for change in (
        {"note": 1},
        {"trained_tokens": "7"},
        {"shard_row": None, "note": 1},
        {"order": True},
        {"spaces": True},
    ):
        rows = [dict(r) for r in original]
        if "order" in change:
            rows[5] = dict(reversed(list(rows[5].items())))
        elif "spaces" not in change:
            rows[5].update(change)
        if change.get("shard_row", 0) is None:
            del rows[5]["shard_row"]  # as many keys as the other lines, one of them another
        write_index(changed, "sample_index.jsonl", rows)
        if "spaces" in change:
            with open(os.path.join(changed, "sample_index.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps(rows[-1] | {"sample_id": len(rows)}) + "\n")  # json.dumps's ", " and ": "
            found = verdict(changed)
            assert found and found == verdict(respaced(changed)), found  # one sample too many
            shutil.rmtree(changed + "-respaced")
            continue
        assert problems(verify(changed)) == [CHANGED_INDEX], change  # the index's own checks pass
    with open(os.path.join(changed, "sample_index.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in original[:3])
        f.write(json.dumps([original[3]]) + "\n")  # a line that is a JSON list, not an object
        f.writelines(json.dumps(r) + "\n" for r in original[4:])
    assert "sample_index.jsonl: line 4 is not a JSON object" in problems(verify(changed))


def test_trained_tokens_are_checked_against_the_mask_bits(tmp_path, monkeypatch):
    """source.train_on, bucketed: each sample's trained_tokens in sample_index.jsonl, and the total in
    stats.json, are what its mask bits give."""
    monkeypatch.chdir(tmp_path)
    _build_with_masks()
    assert verify("out").ok
    original = index("out")
    changed = [dict(r) for r in original]
    changed[6]["trained_tokens"] += 1
    write_index("out", "sample_index.jsonl", changed)
    want = (
        f"sample 6: trained_tokens {original[6]['trained_tokens'] + 1}, the mask bits give "
        f"{original[6]['trained_tokens']}"
    )
    assert any(want in p for p in problems(verify("out"))), problems(verify("out"))
    write_index("out", "sample_index.jsonl", original)
    stats = read_json("out/stats.json")
    stats["trained_tokens"] += 1
    json.dump(stats, open("out/stats.json", "w"))
    assert any("stats.json: trained_tokens" in p for p in problems(verify("out"))), problems(verify("out"))


@pytest.mark.parametrize(
    "pattern,replacement,slow_ok",
    [
        (rb'"token_count":(\d+)', rb'"token_count":0\1', False),  # a leading zero: not JSON
        (rb'"source_line":(\d+)', rb'"source_line":-\1', False),  # a sign
        (rb'"source_line":(\d+)', rb'"source_line":\1.0', False),  # a float (not an int for the check)
        (rb'"shard_row":(\d+)', rb'"shard_row":\1e0', True),  # 1e0 == 1.0 == 1 for the optional key
        (rb'"source_line":(\d+)', rb'"source_line":\1 ', True),  # a space
        (rb'"hash":"([0-9a-f]+)"', lambda m: b'"hash":"' + m.group(1).upper() + b'"', False),
        (
            rb'"source_file":"data/d.jsonl"',
            rb'"source_file":"data\/d.jsonl"',
            True,
        ),  # an escape, the same name
        (rb'"source_file":"data/d.jsonl"', rb'"source_file":"data/d.jsonlx"', False),
        (rb"shard_(\d+)", rb"shard_0\1", False),  # 7 digits: not the shard's name
        (rb'"shard_row":(\d+)', rb'"shard_row":123456789012345678901', False),  # past int64
        (rb"}\n", rb"}\r\n", True),  # CRLF
        (rb'"sample_id":(\d+)', rb'"sample_id": \1', True),
    ],
)
def test_bytes_json_reads_the_same_or_not_at_all(good, copy, pattern, replacement, slow_ok):
    """Byte changes JSON reads the same (accepted, as JSON reads them) or not at all (a problem)."""
    import re

    _root, changed = copy
    path = os.path.join(changed, "sample_index.jsonl")
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    lines[6] = re.sub(pattern, replacement, lines[6], count=1)
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    found = verdict(changed)
    assert (not found) == slow_ok, found
    assert found == verdict(respaced(changed))


_BYTES = b'0123456789 -.eE+"\\,:{}[]\nafAF\x00\x1f\xc3\xa9_/'


@settings(
    max_examples=examples(60, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, 10**9),
            st.sampled_from(["put", "insert", "delete"]),
            st.sampled_from([bytes([b]) for b in _BYTES]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_an_edited_index_is_judged_as_json_reads_it(good, tmp_path_factory, edits):
    """Bytes of sample_index.jsonl changed, inserted or deleted anywhere: verify finds the problems it
    finds in the same values spaced as the build never spaces them; it never reads a line otherwise than
    the JSON parser does, nor takes values it refuses in another spacing."""
    out = os.path.join(good, "out")
    with open(os.path.join(out, "sample_index.jsonl"), "rb") as f:
        data = bytearray(f.read())
    for at, how, byte in edits:
        at %= len(data) + (how == "insert")
        if how == "put":
            data[at : at + 1] = byte
        elif how == "insert":
            data[at:at] = byte
        else:
            del data[at]
    changed = os.path.join(str(tmp_path_factory.mktemp("edited")), "out")
    shutil.copytree(out, changed)
    with open(os.path.join(changed, "sample_index.jsonl"), "wb") as f:
        f.write(bytes(data))
    assert verdict(changed) == verdict(respaced(changed)), bytes(data)


def test_the_shard_checks_find_what_a_row_by_row_check_finds(good, copy):
    """verify's shard checks against the plain per-row definition: rows of a shard rewritten at random
    (slots after token_count pad or not, unk_id anywhere), every padding length from full to empty; a
    row with anything but pad_id from its token_count on is named with its first such slot, and a sample
    whose unk_id positions differ from unk_index.jsonl's is named there."""
    out = os.path.join(good, "out")
    manifest = read_json(os.path.join(out, "manifest.json"))
    pad, unk = manifest["tokenizer"]["pad_id"], manifest["tokenizer"]["unk_id"]
    rows = index(out)
    listed = {r["sample_id"]: r["unk_positions"] for r in read_jsonl(os.path.join(out, "unk_index.jsonl"))}
    shard = max({r["shard_path"] for r in rows}, key=lambda p: sum(r["shard_path"] == p for r in rows))
    members = sorted((r for r in rows if r["shard_path"] == shard), key=lambda r: r["shard_row"])
    _root, changed = copy
    rng = np.random.default_rng(0)
    for _trial in range(25):
        shutil.rmtree(changed)
        shutil.copytree(out, changed)
        rec, arr = record_of(changed, members[0]["sample_id"])
        width, stray, unks = rec["unit_size"], {}, {}
        for r in members:
            row, tc = arr[r["shard_row"]], r["token_count"]
            cols = rng.choice(width, size=int(rng.integers(0, 3)), replace=False).tolist()
            edges = [c for c in (tc - 1, tc) if 0 <= c < width and rng.random() < 0.3]  # either side
            for col in cols + edges:
                row[col] = rng.choice([pad, unk, 5])
            after = np.flatnonzero(np.asarray(row[tc:]) != pad)
            if len(after):
                stray[r["shard_row"]] = (tc + int(after[0]), int(row[tc + after[0]]), tc)
            unks[r["sample_id"]] = [c for c in range(tc) if row[c] == unk]
        arr.flush()
        del arr
        report = verify(changed)
        assert len(report.problems) == report.count  # every problem is listed
        in_shard = {p.message for p in report.problems if p.file == shard and p.message.startswith("row ")}
        unk_named = {p.sample for p in report.problems if p.file == "unk_index.jsonl"}
        want_stray = {
            f"row {row}: slot {first} holds {value}, not pad_id {pad} (token_count {tc})"
            for row, (first, value, tc) in stray.items()
        }
        assert in_shard == want_stray
        assert unk_named == {sid for sid, want in unks.items() if want != listed.get(sid, [])}


# --- sample_index.idx, the readers' index, against sample_index.jsonl -------------------------------------


def column_at(path: str, name: str) -> tuple[int, str]:
    """(byte offset, dtype) of a column of sample_index.idx, read from its column table as the format
    documents it (40 header bytes, then 48 per column: name 24, dtype 8, count 8, offset 8)."""
    import struct

    data = open(path, "rb").read()
    columns = struct.unpack_from("<I", data, 32)[0]
    for k in range(columns):
        name_b, dtype_b, _count, at = struct.unpack_from("<24s8sQQ", data, 40 + 48 * k)
        if name_b.rstrip(b"\0").decode() == name:
            return at, dtype_b.rstrip(b"\0").decode()
    raise KeyError(name)


def test_verify_names_a_binary_index_that_disagrees_with_the_jsonl(copy):
    """One token count changed in sample_index.idx (its header intact): the two indexes disagree, and verify
    names the file, the column and the sample; checksums.sha256 names the file too."""
    _root, out = copy
    path = os.path.join(out, "sample_index.idx")
    at, dtype = column_at(path, "token_count")
    width = np.dtype(dtype).itemsize
    want = index(out)[5]["token_count"]
    with open(path, "r+b") as f:
        f.seek(at + 5 * width)
        f.write(np.asarray([want + 1], dtype=dtype).tobytes())
    found = problems(verify(out))
    assert f"sample_index.idx: its bytes differ from its SHA-256 in {SUMS} (changed since the build)" in found
    assert (
        f"sample_index.idx: sample 5: token_count is {want + 1}, sample_index.jsonl gives {want}" in found
    ), found


def test_verify_names_a_jsonl_that_disagrees_with_the_binary_index(copy):
    """sample_index.jsonl's token_count of sample 5 lowered: besides the shard's check (a token where
    padding should be), the binary index no longer agrees, and verify says which column and sample."""
    _root, out = copy
    rows = index(out)
    want = rows[5]["token_count"]
    rows[5]["token_count"] = want - 1
    write_index(out, "sample_index.jsonl", rows)
    found = problems(verify(out))
    assert (
        f"sample_index.idx: sample 5: token_count is {want}, sample_index.jsonl gives {want - 1}" in found
    ), found


def test_verify_names_a_damaged_binary_index(copy):
    _root, out = copy
    path = os.path.join(out, "sample_index.idx")
    with open(path, "r+b") as f:
        f.seek(24)  # the sample count: the header's CRC-32 no longer matches
        f.write(b"\x09")
    found = problems(verify(out))
    assert (
        "sample_index.idx: is damaged: its header's CRC-32 does not match the header's bytes. Rebuild the "
        "output (`mintdim verify` names every file that changed since the build)" in found
    ), found


def test_an_output_written_before_the_binary_index_verifies_with_a_note(copy):
    """No sample_index.idx (and no checksums.sha256, which would list it): an earlier MintDim's output;
    verify says so in a note and finds nothing wrong; the reader opens it from sample_index.jsonl."""
    import warnings

    import mintdim

    _root, out = copy
    os.unlink(os.path.join(out, SUMS))
    os.unlink(os.path.join(out, "sample_index.idx"))
    r = verify(out)
    assert r.ok, problems(r)
    assert any(
        n.startswith("no sample_index.idx: this output was built before MintDim wrote it") for n in r.notes
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = mintdim.open(out)
        assert [len(ds.tokens(i)) for i in range(len(ds))] == [row["token_count"] for row in index(out)]
    assert any("has no sample_index.idx" in str(w.message) for w in caught)
