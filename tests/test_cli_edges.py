"""Commands typed as a new user types them: the documented forms, wrong values,
missing extras. Each case reproduces what was seen; each answer is one clear message, not a traceback."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from conftest import GSM8K

# --- case 4: `tokenizer train --template '{question}\n\n{answer}'` ---------------------------------


def test_train_template_escapes_mean_what_the_config_yaml_means(tmp_path, monkeypatch, capsys):
    """docs/tokenizers.md types the template in single quotes: the shell passes a backslash and an n.
    It must train on newlines, as the config's "{question}\\n\\n{answer}" does (it trained on a literal
    `\\n`)."""
    from mintdim.cli import main

    monkeypatch.chdir(tmp_path)
    typed = r"{question}\n\n{answer}"  # what the shell hands over for '{question}\n\n{answer}'
    assert (
        main(
            [
                "tokenizer",
                "train",
                "cli",
                "--vocab-size",
                "300",
                "--jsonl",
                GSM8K,
                "--fields",
                "question",
                "answer",
                "--template",
                typed,
                "--quiet",
                "--json",
            ]
        )
        == 0
    )
    by_cli = json.loads(capsys.readouterr().out)
    cfg = {
        "source": {
            "files": [GSM8K],
            "fields": [["question", "answer"]],
            "templates": ["{question}\n\n{answer}"],
        },
        "tokenizer": {"hf_json": {"path": "unused.json"}},
        "units": {"sizes": [[512]], "build_batch": [64]},
        "output": {"dir": "o", "samples_per_shard": [100]},
    }
    with open("c.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    assert (
        main(["tokenizer", "train", "cfg", "--vocab-size", "300", "--config", "c.yaml", "--quiet", "--json"])
        == 0
    )
    by_config = json.loads(capsys.readouterr().out)
    assert by_cli["unique_words"] == by_config["unique_words"]
    assert by_cli["vocab_size"] == by_config["vocab_size"] == 300
    record = json.load(open(os.path.join("cli", "mintdim-train.json"), encoding="utf-8"))
    assert record["reference"]["corpus"]["templates"] == ["{question}\n\n{answer}"]
    with (
        open(os.path.join("cli", "merges.txt"), "rb") as a,
        open(os.path.join("cfg", "merges.txt"), "rb") as b,
    ):
        assert a.read() == b.read()  # the same model


def test_train_jsonl_without_fields_says_what_is_missing_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from mintdim.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["tokenizer", "train", "tok", "--vocab-size", "300", "--jsonl", GSM8K, "--quiet"]) == 1
    assert capsys.readouterr().err == (
        "FieldMappingError: Invalid fields config.\n\n"
        "Problem: --jsonl needs --fields (the keys to render)\n\nRules:\n\n"
        "• fields is a list of lists of field names (strings)\n"
        "• len(fields) == 1 or len(fields) == file_count\n"
    )
    assert os.listdir(tmp_path) == []


def test_every_command_that_can_fail_takes_lang(tmp_path, monkeypatch, capsys):
    """`--lang vi|both` renders the error of any command, not only build's (tokenizer, inspect, verify,
    suggest-units had no --lang: their errors showed in English only)."""
    from mintdim.cli import main

    monkeypatch.chdir(tmp_path)
    assert (
        main(
            ["tokenizer", "train", "tok", "--vocab-size", "300", "--jsonl", GSM8K, "--quiet", "--lang", "vi"]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("FieldMappingError: ") and "--jsonl cần --fields (các key để render)" in err
    assert "--jsonl needs --fields" not in err and os.listdir(tmp_path) == []
    # (verify's findings about an output are a report, not an error: English, as its --json keys)
    for argv in (["inspect", "nowhere"], ["suggest-units", "nowhere", "-k", "2"]):
        said = {}
        for lang in ("en", "vi", "both"):
            assert main(argv + ["--lang", lang]) == 1, argv
            said[lang] = capsys.readouterr().err
            assert "MintDimFileNotFoundError: " in said[lang] and "Traceback" not in said[lang], said
        assert main(argv) == 1 and capsys.readouterr().err == said["en"]  # English without --lang
        assert said["vi"] != said["en"] and "nowhere" in said["vi"], said
        assert len(said["both"]) > len(said["en"]) and len(said["both"]) > len(said["vi"]), said


# --- case 5: tracebacks and missing hints -----------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A finished output of 40 GSM8K rows (the reliability tests' project)."""
    from test_reliability import build, project

    root = project(tmp_path_factory.mktemp("built"))
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def _cli(root, *args):
    from test_reliability import cli

    return cli(root, *args)


def test_inspect_sample_out_of_range_is_a_usage_error(built):
    proc = _cli(built, "inspect", "out", "--sample", "99999")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "IndexError" not in proc.stderr
    assert "--sample 99999 is not a sample of out: its ids are 0 to 39 (40 samples)." in proc.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["--max-padding", "5"],
            "--max-padding takes a fraction below 1 (0.05) or a percentage (5%), got '5'.",
        ),
        (["--max-padding", "1.5"], "got '1.5'"),
        (["-k", "2", "--multiple-of", "0"], "--multiple-of takes a positive integer, got '0'."),
    ],
)
def test_suggest_units_values_that_cannot_be_meant_are_usage_errors(built, args, needle):
    proc = _cli(built, "suggest-units", "out", *args)
    assert proc.returncode == 2 and needle in proc.stderr


def test_suggest_units_takes_a_percentage(built):
    as_pct = _cli(built, "suggest-units", "out", "--max-padding", "5%", "--json")
    as_frac = _cli(built, "suggest-units", "out", "--max-padding", "0.05", "--json")
    assert as_pct.returncode == 0 and as_pct.stdout == as_frac.stdout


def test_a_command_ends_with_all_its_output_and_exit_code_whatever_its_streams_are(built, tmp_path):
    """What a command printed reaches a file (block-buffered) as it reaches a pipe, an error keeps its
    message and exit code, a reader that stops early (`| head -1`) gets its line and no traceback, and
    the files a command wrote are whole."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a file gets a buffered stdout

    def run(*args, **kw):
        return subprocess.run([sys.executable, "-m", "mintdim", *args], cwd=str(built), env=env, **kw)

    piped = _cli(built, "inspect", "out")
    assert piped.returncode == 0 and piped.stdout.count("\n") > 3
    with open(tmp_path / "stdout.txt", "wb") as out, open(tmp_path / "stderr.txt", "wb") as err:
        assert run("inspect", "out", stdout=out, stderr=err).returncode == 0
    assert (tmp_path / "stdout.txt").read_text(encoding="utf-8") == piped.stdout

    assert (
        run(
            "export", "out", "--format", "megatron", "--to", str(tmp_path / "mg"), capture_output=True
        ).returncode
        == 0
    )
    with open(tmp_path / "stderr.txt", "wb") as err:  # the same destination again: refused
        again = run(
            "export", "out", "--format", "megatron", "--to", str(tmp_path / "mg"), stdout=err, stderr=err
        )
    text = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert again.returncode == 1 and "ExportError" in text and "Traceback" not in text
    import numpy as np

    import mintdim
    from mintdim.formats import megatron

    ds = mintdim.open(os.path.join(built, "out"))
    tokens = np.fromfile(tmp_path / "mg.bin", dtype=megatron.stored_dtype(ds.dtype))
    assert len(tokens) == int(ds.token_counts.sum())  # the export's files are whole

    proc = subprocess.Popen(
        [sys.executable, "-m", "mintdim", "inspect", "out"],
        cwd=str(built),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and first and "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["inspect", "out"], ["build", "--help"]])
def test_output_that_cannot_be_written_is_an_error_of_one_line(built, args):
    """`mintdim --help >/dev/full` exited 0 with its text lost; `inspect` ended in a traceback."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "mintdim", *args],
            cwd=str(built),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr == "mintdim: [Errno 28] No space left on device\n", proc.stderr
    whole = subprocess.run(
        [sys.executable, "-m", "mintdim", *args], cwd=str(built), capture_output=True, text=True, timeout=120
    )
    assert whole.returncode == 0 and whole.stdout and whole.stderr == ""


def test_a_profile_whose_executor_plugin_is_missing_says_what_to_install(built, tmp_path):
    import importlib.util

    profile = tmp_path / "prof"
    profile.mkdir()
    (profile / "config.yaml").write_text("executor: mintdim-test-none\njobs: 2\n")
    proc = _cli(built, "build", "c.yaml", "--profile", str(profile))
    assert proc.returncode == 1 and "invalid choice" not in proc.stderr and "usage:" not in proc.stderr
    assert (
        "MissingExtraError" in proc.stderr
        and "pip install snakemake-executor-plugin-mintdim-test-none" in proc.stderr
    )
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None:
        pytest.skip("the slurm plugin is installed here: the shipped profile's case cannot be seen")
    proc = _cli(built, "build", "c.yaml", "--profile", "slurm")
    assert proc.returncode == 1 and "pip install 'mintdim[cluster]'" in proc.stderr


def test_torch_loader_without_torch_names_the_extra(built, monkeypatch):
    import builtins
    import sys

    import mintdim

    real = builtins.__import__

    def no_torch(name, *a, **kw):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    monkeypatch.delitem(sys.modules, "mintdim.reading.torch_data", raising=False)
    with pytest.raises(ImportError) as info:
        mintdim.open(os.path.join(built, "out")).torch_loader(4)
    assert "pip install 'mintdim[torch]'" in str(info.value)


def test_unknown_config_keys_get_a_did_you_mean():
    from conftest import basic_config

    from mintdim import errors as E
    from mintdim.config import resolve

    cfg = basic_config(["d.jsonl"])
    cfg["unit"] = cfg.pop("units")
    with pytest.raises(E.PipelineValidationError) as info:
        resolve(cfg)
    assert "unknown config keys: ['unit']" in str(
        info.value
    ) and "Did you mean 'units' instead of 'unit'?" in str(info.value)
    cfg = basic_config(["d.jsonl"])
    cfg["output"]["samples_per_shards"] = [10]
    with pytest.raises(E.PipelineValidationError) as info:
        resolve(cfg)
    assert "Did you mean 'samples_per_shard' instead of 'samples_per_shards'?" in str(info.value)
    assert "Có phải ý bạn là" in info.value.render("vi")


def test_a_missing_relative_input_names_the_directory_it_was_resolved_from(tmp_path):
    from test_reliability import build, project

    root = project(
        tmp_path,
        source={
            "files": ["data/missing.jsonl"],
            "fields": [["prompt", "response"]],
            "templates": ["{prompt}\n{response}"],
        },
    )
    proc = build(root)
    assert proc.returncode == 1 and "Missing file: data/missing.jsonl" in proc.stderr
    assert f"Resolved from: {root}" in proc.stderr


# --- case 6: debugging from mintdim build, the workflow's path, a short console ------------------------


def test_workflow_path_prints_the_snakefile_that_build_runs(tmp_path):
    from conftest import SNAKEFILE
    from test_reliability import cli

    proc = cli(tmp_path, "workflow-path")
    assert proc.returncode == 0 and proc.stdout.strip() == SNAKEFILE and os.path.isfile(proc.stdout.strip())
    proc = cli(tmp_path, "workflow-path", "--dir")
    assert os.path.isfile(os.path.join(proc.stdout.strip(), "Snakefile"))


def test_build_until_a_stage_keeps_its_files_then_the_build_completes(tmp_path):
    from conftest import tree_bytes
    from test_reliability import build, cli, msgpack_left, project

    from mintdim.reading.verify import verify

    root = project(tmp_path)
    proc = cli(root, "build", "c.yaml", "--cores", "2", "--until", "plan", "--keep-intermediates")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[unit-build] stopped after plan (--until)" in proc.stdout
    assert any(p.endswith(os.path.join("plan", "o0.msgpack")) for p in msgpack_left(root))
    assert not os.path.exists(os.path.join(root, "out")) or not os.listdir(os.path.join(root, "out"))
    assert not any("write" in p for p in msgpack_left(root))
    proc = build(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert verify(os.path.join(root, "out")).ok and tree_bytes(os.path.join(root, "out"))


def test_a_direct_snakemake_console_is_short_and_names_its_log(tmp_path):
    """It printed ~200 lines for 9 jobs (then), the whole config as JSON inside the validate command among
    them."""
    import subprocess

    from test_reliability import project, snakemake_cmd

    root = project(tmp_path)
    cmd = [c for c in snakemake_cmd(root) if c not in ("--workflow-profile", "none")]  # as a user runs it
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-3000:]
    assert '"samples_per_shard"' not in text and "--config '" not in text
    # 7 jobs: validate, tokenize, plan, write (one: a small input), aggregate, finalize, all (the
    # report is opt-in)
    assert "[unit-build] shard=000000 samples=10" in text and "7 of 7 steps (100%) done" in text
    assert len(text.splitlines()) < 100, len(text.splitlines())
    log = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Complete log(s): ")]
    assert log and os.path.isfile(log[0].strip())
