"""One pre-flight per build: the launcher (`mintdim build`) or, for a direct `snakemake` run, Snakemake's
process runs it and records it; the Snakefile and the validate job read the record while nothing it read
changed, and run pre-flight again when the config or an input changed. Counted from the record, which
names each process that ran a pre-flight recorded there."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, SP_MODEL, basic_config, run_cli, run_snakemake, write_jsonl

from mintdim import errors as E
from mintdim.stages.preflight import preflight

ROWS = [{"prompt": f"What is {i} plus {i}?", "response": f"It is {2 * i}."} for i in range(30)]


def _project(root) -> dict:
    os.makedirs(os.path.join(root, "tok"))
    shutil.copy(SP_MODEL, os.path.join(root, "tok", "sp.model"))
    write_jsonl(os.path.join(root, "data", "pairs.jsonl"), ROWS)
    cfg = basic_config(
        ["./data/pairs.jsonl"],
        tokenizer={"sentencepiece": {"path": "./tok/sp.model"}},
        sizes=[[64, 128]],
        build_batch=[16],
        out="./artifacts/units",
        sps=[8],
    )
    with open(os.path.join(root, "cfg.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    return cfg


def _preflight_lines(root) -> list[str]:
    """The processes that ran a pre-flight, as the records under the project's work directory name them
    (`passed`: one per pre-flight recorded)."""
    lines = []
    for path in sorted(glob.glob(os.path.join(str(root), ".mintdim", "preflight", "*.json"))):
        with open(path, encoding="utf-8") as f:
            lines += json.load(f)["passed"]
    return lines


def test_mintdim_build_runs_preflight_once(tmp_path):
    _project(tmp_path)
    proc = run_cli(tmp_path, "build", "cfg.yaml", "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _preflight_lines(tmp_path)
    assert len(lines) == 1 and lines[0].startswith("mintdim build (pid "), lines
    assert os.path.isfile(tmp_path / "artifacts" / "units" / "stats.json")


def test_a_direct_snakemake_run_runs_preflight_once(tmp_path):
    cfg = _project(tmp_path)
    proc = run_snakemake(tmp_path, cfg, cores=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _preflight_lines(tmp_path)
    assert len(lines) == 1 and lines[0].startswith("Snakemake's process (pid "), lines


def _validate_job(root, config_file: str) -> subprocess.CompletedProcess:
    """The validate rule's command (workflow/rules/validate.smk), run by hand on a build's config.json."""
    cmd = [
        sys.executable,
        os.path.join(REPO, "scripts", "validate_config.py"),
        "--config-file",
        config_file,
        "--out",
        str(root / "validated.json"),
    ]
    return subprocess.run(cmd, cwd=str(root), capture_output=True, text=True)


@pytest.fixture
def built(tmp_path):
    """A project built by `mintdim build`, and the config.json it left in the build's directory."""
    _project(tmp_path)
    proc = run_cli(tmp_path, "build", "cfg.yaml", "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (config_file,) = glob.glob(str(tmp_path / ".mintdim" / "*" / "config.json"))
    return tmp_path, config_file


def test_the_validate_job_reads_the_record_and_checks_again_after_an_input_changed(built):
    root, config_file = built
    res = _validate_job(root, config_file)
    assert res.returncode == 0, res.stderr
    assert len(_preflight_lines(root)) == 1  # nothing changed: the launcher's record is read
    first = json.loads((root / "validated.json").read_text())

    write_jsonl(root / "data" / "pairs.jsonl", ROWS[:20])  # an input edited between runs
    res = _validate_job(root, config_file)
    assert res.returncode == 0, res.stderr
    lines = _preflight_lines(root)
    assert len(lines) == 2 and lines[1].startswith("the validate job (pid "), lines
    assert json.loads((root / "validated.json").read_text())["inputs"] != first["inputs"]


def test_the_validate_job_refuses_a_config_edited_between_runs_as_preflight_does(built):
    root, config_file = built
    with open(config_file, encoding="utf-8") as f:
        raw = json.load(f)
    raw["units"]["build_batch"] = [0]
    with open(config_file, "w", encoding="utf-8") as f:
        json.dump(raw, f)
    res = _validate_job(root, config_file)
    assert res.returncode == 1
    old = os.getcwd()
    os.chdir(root)
    try:
        with pytest.raises(E.MintDimError) as caught:
            preflight(raw, use_cache=True, check_outputs=False)
    finally:
        os.chdir(old)
    err = caught.value  # the same class and text as pre-flight's
    assert str(err).startswith("UnitValidationError: ") and str(err).strip() in res.stderr
    assert "build_batch[0] = 0" in res.stderr
    assert len(_preflight_lines(root)) == 1 and not (root / "validated.json").exists()
