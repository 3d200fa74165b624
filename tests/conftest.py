"""Shared test helpers: the shipped small real files, JSONL writers, and ways to run a build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
GSM8K = os.path.join(DATA, "gsm8k", "test.jsonl")
SP_MODEL = os.path.join(DATA, "tokenizers", "gsm8k-unigram-2k.model")  # unk 0, pad 1, no byte fallback
HF_JSON = os.path.join(DATA, "tokenizers", "minilm-tokenizer.json")  # WordPiece, unk 100, pad 0
SNAKEFILE = os.path.join(REPO, "Snakefile")
# real tokenizers and datasets for the optional tests: benchmarks/fetch_data.sh DEST fetches them (default
# ../assets beside the repository); tests that need them skip when they are absent
ASSETS = os.environ.get("MINTDIM_ASSETS", os.path.join(os.path.dirname(REPO), "assets"))
# MINTDIM_TEST_LONG=1: property tests run their long form (more Hypothesis examples; tests/README.md)
LONG = os.environ.get("MINTDIM_TEST_LONG") == "1"


def examples(default: int, long: int) -> int:
    """A property test's number of Hypothesis examples: `default` in the README's run, `long` with
    MINTDIM_TEST_LONG=1."""
    return long if LONG else default


# ShareGPT's roles as published (ShareGPT V3 also has chatgpt, bing and bard) and its record shape, as
# source.chat takes them
SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "system": "system",
}
SHAREGPT_CHAT = {"messages": "conversations", "role": "from", "content": "value", "roles": SHAREGPT_ROLES}


def write_jsonl(path, rows, newline="\n") -> str:
    """rows: dicts (dumped as JSON) or raw str/bytes lines."""
    os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
    with open(path, "wb") as f:
        for row in rows:
            if isinstance(row, bytes):
                f.write(row + newline.encode())
            elif isinstance(row, str):
                f.write(row.encode("utf-8") + newline.encode())
            else:
                f.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + newline.encode())
    return str(path)


def basic_config(
    files,
    *,
    fields=None,
    templates=None,
    tokenizer=None,
    sizes=None,
    build_batch=None,
    out="out",
    sps=None,
    **extra,
) -> dict:
    cfg = {
        "source": {
            "files": list(files),
            "fields": fields or [["prompt", "response"]],
            "templates": templates or ["{prompt}\n{response}"],
        },
        "tokenizer": tokenizer or {"sentencepiece": {"path": SP_MODEL}},
        "units": {"sizes": sizes or [[16, 32, 64, 128]], "build_batch": build_batch or [64]},
        "output": {"dir": out, "samples_per_shard": sps or [100]},
    }
    cfg.update(extra)
    return cfg


def run_snakemake(workdir, config: dict, cores: int = 2, extra=()) -> subprocess.CompletedProcess:
    """A direct `snakemake` run, as a user would type it, with the config in a YAML file."""
    cfg_path = os.path.join(str(workdir), "mintdim-config.yaml")
    with open(cfg_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, allow_unicode=True)
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        str(workdir),
        "--configfile",
        cfg_path,
        "--cores",
        str(cores),
        "--workflow-profile",
        "none",
        *extra,
    ]
    return subprocess.run(cmd, cwd=str(workdir), capture_output=True, text=True)


def run_cli(workdir, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mintdim", *args], cwd=str(workdir), capture_output=True, text=True
    )


def build_shipped(workdir, config: str) -> subprocess.CompletedProcess:
    """`mintdim build CONFIG --cores 2` of a shipped example (config/*.yaml) in a copy of the repository's
    data/ and config/, as a fresh clone runs it."""
    shutil.copytree(os.path.join(REPO, "data"), os.path.join(str(workdir), "data"))
    shutil.copytree(os.path.join(REPO, "config"), os.path.join(str(workdir), "config"))
    return run_cli(workdir, "build", config, "--cores", "2")


def build_in(workdir, config: dict, **kw):
    """The Python API path (runner) from inside `workdir`."""
    from mintdim.run.runner import run_build

    old = os.getcwd()
    os.chdir(str(workdir))
    try:
        return run_build(config, echo=lambda line: None, **kw)
    finally:
        os.chdir(old)


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def tree_bytes(root) -> dict[str, bytes]:
    """Every file below root, by relative path: for byte-identity checks."""
    out = {}
    for base, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(base, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def assert_not_finished(err, out, en: str, vi: str) -> None:
    """err (an OutputValidationError) says, in both languages, that
    `out` is not a finished output because of en/vi."""
    assert err.render("en") == (
        "OutputValidationError: Invalid output directory.\n\n"
        f"Problem: {out} is not a finished MintDim output: {en}"
    )
    assert err.render("vi") == (
        "OutputValidationError: Thư mục output không hợp lệ.\n\n"
        f"Vấn đề: {out} không phải output MintDim đã hoàn tất: {vi}"
    )


def gsm8k_rows(start: int, count: int) -> list[dict]:
    """GSM8K lines start..start+count as prompt/response rows (real text, shipped in data/)."""
    rows = []
    with open(GSM8K, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= start + count:
                break
            if i >= start:
                r = json.loads(line)
                rows.append({"prompt": r["question"], "response": r["answer"]})
    return rows


@pytest.fixture
def pairs(tmp_path):
    """A small prompt/response file with real text from GSM8K."""
    rows = [dict(r, id=i) for i, r in enumerate(gsm8k_rows(0, 60))]
    return write_jsonl(tmp_path / "pairs.jsonl", rows)


def read_mask(out, row):
    """A sample's loss-mask record read straight from its mask file (independent of the reader)."""
    unit = row["unit_size"]
    path = os.path.join(out, row["shard_path"].replace("shard_", "mask_"))
    rec = np.fromfile(path, dtype=np.uint8).reshape(-1, (unit + 7) // 8)[row["shard_row"]]
    return np.unpackbits(rec, bitorder="little")[:unit].astype(bool)


@pytest.fixture(scope="session")
def clean_reference(tmp_path_factory, _session_cache_dir) -> dict:
    """buildkit.py's clean build (its `reference` fixture), once for every module that uses it."""
    from buildkit import clean_build

    return clean_build(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory):
    """MintDim's user cache (MINTDIM_CACHE_DIR, mintdim/tokenizers/engines.py) in a temporary directory,
    never the developer's ~/.cache/mintdim: module fixtures' builds use this one."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MINTDIM_CACHE_DIR", str(tmp_path_factory.mktemp("mintdim-cache")))
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory, monkeypatch):
    """Each test starts with an empty user cache: what one test cached never changes another's path."""
    monkeypatch.setenv("MINTDIM_CACHE_DIR", str(tmp_path_factory.mktemp("mintdim-cache")))
