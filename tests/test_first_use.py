"""What a new user meets on the first tries: a tokenizer path of the wrong kind, a misspelt key, a JSON
array for a JSONL file, a packed build with over-long samples, dropped samples in the summaries, forced and
dry runs. Each answer says what is wrong and what to do, in the catalogue's two languages, before any
job runs where it can."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from buildkit import build, cli, project  # noqa: F401  (cli: later tests)
from conftest import DATA, GSM8K, HF_JSON, basic_config, write_jsonl

from mintdim import errors as E
from mintdim.stages.preflight import preflight

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")


def _preflight_error(tmp_path, monkeypatch, cfg) -> E.MintDimError:
    """The error pre-flight raises for cfg, run in tmp_path; nothing is created there."""
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(E.MintDimError) as info:
        preflight(cfg)
    assert sorted(os.listdir(tmp_path)) == before
    return info.value


def _tok_error(tmp_path, monkeypatch, kind: str, path: str) -> E.MintDimError:
    cfg = basic_config(["d.jsonl"], tokenizer={kind: {"path": path}})
    return _preflight_error(tmp_path, monkeypatch, cfg)


def _data(tmp_path) -> str:
    return write_jsonl(tmp_path / "d.jsonl", [{"prompt": "What is one plus one?", "response": "Two."}])


# --- hf_dir given a file, a directory without its files ------------------------------------------------


def test_hf_dir_given_a_lone_json_file_says_what_a_tokenizer_directory_holds(tmp_path, monkeypatch):
    """Its parent holds no tokenizer: the fix must not name it (the next run said that directory "is
    missing")."""
    _data(tmp_path)
    os.mkdir(tmp_path / "tok")
    shutil.copy(HF_JSON, tmp_path / "tok" / "minilm.json")
    err = _tok_error(tmp_path, monkeypatch, "hf_dir", "tok/minilm.json")
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.TokenizerValidationError, en
    assert "Problem: hf_dir expects a tokenizer directory, but path tok/minilm.json is a file" in en
    assert "{hf_dir: {path: tok}}" not in en and "{hf_dir: {path: tok}}" not in vi
    assert "tok is not a tokenizer directory: it has no tokenizer.json, no tokenizer_config.json" in en
    assert "A tokenizer directory (hf_dir) holds tokenizer.json and tokenizer_config.json" in en
    fix = "tokenizer: {hf_json: {path: tok/minilm.json}}"
    assert fix in en and fix in vi
    assert "tok không phải thư mục tokenizer" in vi


def test_hf_dir_given_a_tokenizer_json_beside_no_config_names_the_missing_file(tmp_path, monkeypatch):
    _data(tmp_path)
    os.mkdir(tmp_path / "tok")
    shutil.copy(os.path.join(TOK_DIR, "tokenizer.json"), tmp_path / "tok" / "tokenizer.json")
    err = _tok_error(tmp_path, monkeypatch, "hf_dir", "tok/tokenizer.json")
    en = err.render("en")
    assert type(err) is E.TokenizerValidationError, en
    assert "{hf_dir: {path: tok}}" not in en
    assert "tok is not a tokenizer directory: it has no tokenizer_config.json" in en
    assert "tokenizer: {hf_json: {path: tok/tokenizer.json}}" in en
    # the directory itself: its missing file, by name, not the directory as "not found"
    err = _tok_error(tmp_path, monkeypatch, "hf_dir", "tok")
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.MintDimFileNotFoundError, en
    assert en.startswith(
        "MintDimFileNotFoundError: Required file was not found.\n\nContext: tokenizer\n\n"
        f"Missing file: {os.path.join('tok', 'tokenizer_config.json')}"
    )
    assert vi.startswith(
        "MintDimFileNotFoundError: Không tìm thấy file cần dùng.\n\nContext: tokenizer\n\n"
        f"File thiếu: {os.path.join('tok', 'tokenizer_config.json')}"
    )
    assert "A tokenizer directory (hf_dir) holds tokenizer.json and tokenizer_config.json" in en
    assert "Thư mục tokenizer (hf_dir) gồm tokenizer.json và tokenizer_config.json" in vi


def test_hf_dir_given_a_directory_without_tokenizer_json_names_it(tmp_path, monkeypatch):
    _data(tmp_path)
    os.mkdir(tmp_path / "tok")
    shutil.copy(os.path.join(TOK_DIR, "tokenizer_config.json"), tmp_path / "tok" / "tokenizer_config.json")
    err = _tok_error(tmp_path, monkeypatch, "hf_dir", "tok")
    en = err.render("en")
    assert type(err) is E.MintDimFileNotFoundError, en
    assert f"Missing file: {os.path.join('tok', 'tokenizer.json')}" in en
    assert "A tokenizer directory (hf_dir) holds tokenizer.json and tokenizer_config.json" in en
    # no directory at all: the path the config names, as before
    err = _tok_error(tmp_path, monkeypatch, "hf_dir", "nowhere")
    assert "Missing file: nowhere\n" in err.render("en") + "\n"


# --- hf_json given a directory; a misspelt kind ----------------------------------------------------------


def test_hf_json_given_a_tokenizer_directory_says_it_is_one_and_names_hf_dir(tmp_path, monkeypatch):
    _data(tmp_path)
    os.symlink(TOK_DIR, tmp_path / "qwen3")
    err = _tok_error(tmp_path, monkeypatch, "hf_json", "qwen3")
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.TokenizerValidationError, en
    assert en.startswith("TokenizerValidationError: Unsupported tokenizer format.")  # the spec's text first
    assert "qwen3 is a directory" in en and "qwen3 là một thư mục" in vi
    assert "tokenizer: {hf_dir: {path: qwen3}}" in en and "tokenizer: {hf_dir: {path: qwen3}}" in vi
    assert "tokenizer: {hf_json: {path: qwen3/tokenizer.json}}" in en


def test_a_misspelt_tokenizer_kind_gets_a_did_you_mean(tmp_path, monkeypatch):
    _data(tmp_path)
    err = _tok_error(tmp_path, monkeypatch, "hf_jsn", HF_JSON)
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.TokenizerValidationError, en
    assert en.startswith("TokenizerValidationError: Unsupported tokenizer format.")
    assert "Did you mean 'hf_json' instead of 'hf_jsn'?" in en
    assert "Có phải ý bạn là 'hf_json' thay vì 'hf_jsn'?" in vi
    err = _tok_error(tmp_path, monkeypatch, "bpe_model", "x")
    assert "Did you mean" not in err.render("en")  # nothing close: no guess


# --- input files by extension -----------------------------------------------------------------------------


def test_a_json_array_file_is_refused_in_preflight_with_the_conversion(tmp_path, monkeypatch):
    """It passed pre-flight, then failed in tokenize at line 1 ("line is not a JSON object")."""
    with open(GSM8K, encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(3)]
    (tmp_path / "data.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    cfg = basic_config(["data.json"], fields=[["question", "answer"]], templates=["{question}\n{answer}"])
    err = _preflight_error(tmp_path, monkeypatch, cfg)
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.SourceParseError, en
    assert en.startswith(
        "SourceParseError: Input file is not of a kind MintDim reads.\n\nFile: data.json\n\n"
    )
    assert vi.startswith(
        "SourceParseError: File đầu vào không thuộc loại MintDim đọc được.\n\nFile: data.json\n\n"
    )
    for ext in (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet", "datasets"):
        assert ext in en and ext in vi
    assert "holds a JSON array" in en and "json.load" in en and "mảng JSON" in vi
    assert err.file == "data.json"
    command = en.split("a line each: ", 1)[1].splitlines()[0]
    subprocess.run(command.replace("python ", f"{sys.executable} ", 1), shell=True, check=True, cwd=tmp_path)
    cfg["source"]["files"] = ["data.jsonl"]
    build, _metas = preflight(cfg)  # the fix as printed
    assert build.files[0].path == "data.jsonl" and (tmp_path / "data.jsonl").read_text().count("\n") == 3


@pytest.mark.parametrize(
    "name, content, hint",
    [
        ("data.json", '{"prompt": "a", "response": "b"}\n', "rename it to .jsonl"),
        ("data.txt", '{"prompt": "a", "response": "b"}\n', "rename it to .jsonl"),
        ("data.csv", "prompt,response\na,b\n", None),
    ],
)
def test_other_unknown_extensions_are_refused_before_any_job(tmp_path, monkeypatch, name, content, hint):
    (tmp_path / name).write_text(content, encoding="utf-8")
    err = _preflight_error(tmp_path, monkeypatch, basic_config([name]))
    en = err.render("en")
    assert type(err) is E.SourceParseError and f"File: {name}\n" in en, en
    assert (hint in en) if hint else ("rename" not in en and "JSON array" not in en)


def test_every_accepted_input_kind_still_passes(tmp_path, monkeypatch):
    import gzip

    monkeypatch.chdir(tmp_path)
    line = b'{"prompt": "What is one plus one?", "response": "Two."}\n'
    (tmp_path / "a.jsonl").write_bytes(line)
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(line))
    (tmp_path / "C.JSONL").write_bytes(line)
    build, _metas = preflight(basic_config(["a.jsonl", "b.jsonl.gz", "C.JSONL"]))
    assert len(build.files) == 3


# --- over-long samples with units.pack ---------------------------------------------------------------------


def _packed(tmp_path, **units):
    return project(
        tmp_path,
        units={"pack": [128], "build_batch": [16], **units},
        output={"dir": "out", "samples_per_shard": [8]},
    )


def test_overflow_in_packed_rows_advises_pack_not_unit_sizes(tmp_path):
    root = _packed(tmp_path)
    proc = build(root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    text = proc.stderr
    assert "UnitOverflowError: Sample token length exceeds max unit size." in text  # the spec's text
    assert "samples are longer than the row length 128" in text
    assert "suggest-units" not in text and "sizes: auto" not in text
    longest = int(text.split("the longest has ")[1].split(" tokens")[0])
    assert longest > 128
    assert f"Rows that hold every sample: units: {{pack: [{longest}]}} or longer." in text
    assert "units: {overflow: [drop]}" in text and "units: {overflow: [truncate]}" in text
    assert "mẫu dài nhất có" in build(root, "c.yaml", "--lang", "vi").stderr
    _packed(tmp_path, pack=[longest])  # the advice as printed: every sample fits
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]


# --- what a build with dropped samples says, packed shard lines ------------------------------------------


def test_dropped_samples_are_said_dropped_in_the_build_summary_and_inspect(tmp_path):
    """The build's last line said "built out: 40 samples" and inspect's `all` row 100 % while samples
    were left out (units.overflow: drop)."""
    root = project(tmp_path, units={"sizes": [[128]], "overflow": ["drop"], "build_batch": [16]})
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.load(open(os.path.join(root, "out", "stats.json"), encoding="utf-8"))
    dropped = stats["overflow"]["dropped"]
    kept = stats["total_samples"] - dropped
    assert 0 < dropped < 40 and kept == sum(stats["unit_distribution"].values())
    assert (
        f"[unit-build] built out: {kept} samples ({dropped} dropped: units.overflow), "
        f"{stats['total_tokens']} tokens, dtype uint16"
    ) in proc.stdout
    assert f"[unit-build] output out: {kept} samples ({dropped} dropped: units.overflow)" in proc.stderr
    shown = cli(root, "inspect", "out").stdout
    assert f"  samples     40 read: {kept} in the shards, {dropped} dropped" in shown
    lines = {
        line.split()[0]: line.split()
        for line in shown.splitlines()
        if line.split()[:1] in (["all"], ["dropped"])
    }
    assert lines["all"][1:3] == [f"{kept}", f"{100 * kept / 40:.1f}%"]
    assert lines["dropped"][1:3] == [f"{dropped}", f"{100 * dropped / 40:.1f}%"]
    again = build(root)  # already built: the same figures
    assert f"out: {kept} samples ({dropped} dropped: units.overflow)" in again.stdout


def test_packed_shard_lines_count_rows_and_samples(tmp_path):
    """A packed shard holds rows (samples_per_shard of them): its line said samples= for them."""
    root = project(
        tmp_path, units={"pack": [1024], "build_batch": [16]}, output={"dir": "out", "samples_per_shard": [2]}
    )
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import mintdim

    ds = mintdim.open(os.path.join(root, "out"))
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[unit-build] shard=")]
    assert len(lines) == len(ds.shard_paths) > 1
    rows_said = [int(line.split(" rows=")[1].split()[0]) for line in lines]
    samples_said = [int(line.split(" samples=")[1].split()[0]) for line in lines]
    assert rows_said[:-1] == [2] * (len(lines) - 1) and sum(rows_said) == ds.num_rows
    assert sum(samples_said) == ds.num_samples > ds.num_rows
    assert lines[0] == (
        f"[unit-build] shard=000000 rows=2 samples={samples_said[0]} "
        f"bytes={2 * 1024 * 2 / 2**20:.1f} MiB unit=1024"
    )


# --- --forcerun and --dry-run on a finished output ----------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = project(tmp_path_factory.mktemp("finished"))
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_forcerun_on_a_finished_output_says_what_it_did(finished):
    """It ran the stages again, then said "already built (...; nothing to do)"."""
    proc = build(finished, "c.yaml", "--forcerun", "write")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[unit-build] tokenize" in proc.stderr  # the work was done again
    assert "nothing to do" not in proc.stdout and "already built" not in proc.stdout
    assert (
        "[unit-build] built again (--forcerun write): the same bytes as the finished output, which "
        "stays; out: 40 samples"
    ) in proc.stdout


def _stamps(path) -> dict:
    return {name: os.stat(os.path.join(path, name)).st_mtime_ns for name in os.listdir(path)}


def test_dry_run_of_a_finished_output_says_it_is_built(finished):
    before = _stamps(os.path.join(finished, "out"))
    proc = build(finished, "c.yaml", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    assert "[unit-build] already built (same config and inputs; nothing to do) out: 40 samples" in proc.stdout
    assert "SNAKEMAKE" not in text and "mintdim_run" not in text and "Job stats" not in text
    assert _stamps(os.path.join(finished, "out")) == before


def test_dry_run_lists_the_planned_jobs_without_snakemakes_banner(tmp_path):
    root = project(tmp_path)
    proc = build(root, "c.yaml", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    assert "SNAKEMAKE\n=========" not in text and "Workflow ID" not in text and "Command:" not in text
    assert "mintdim_run" not in text and '"launcher"' not in text and "--config" not in text
    assert "Would remove temporary output" not in text and "Building DAG of jobs" not in text
    for rule in ("validate", "tokenize", "plan", "write", "aggregate", "finalize"):
        assert re.search(rf"^{rule}\s+1$", text, flags=re.M), rule
        assert re.search(rf"^rule {rule}:$", text, flags=re.M), rule
    assert "already built" not in text and not os.path.exists(os.path.join(root, "out"))
