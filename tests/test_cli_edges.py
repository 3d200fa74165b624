"""Commands typed as a new user types them (issue 14, cases 4-6): the README's forms, wrong values,
missing extras. Each case reproduces what was seen; each answer is one clear message, not a traceback."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from conftest import GSM8K


# --- case 4: `tokenizer train --template '{question}\n\n{answer}'` ---------------------------------


def test_train_template_escapes_mean_what_the_config_yaml_means(tmp_path, monkeypatch, capsys):
    """The README types the template in single quotes: the shell passes a backslash and an n. It must
    train on newlines, as the config's "{question}\\n\\n{answer}" does (it trained on a literal `\\n`)."""
    from mintdim.cli import main

    monkeypatch.chdir(tmp_path)
    typed = r"{question}\n\n{answer}"  # what the shell hands over for '{question}\n\n{answer}'
    assert main(["tokenizer", "train", "cli", "--vocab-size", "300", "--jsonl", GSM8K, "--fields", "question",
                 "answer", "--template", typed, "--quiet", "--json"]) == 0
    by_cli = json.loads(capsys.readouterr().out)
    cfg = {"source": {"files": [GSM8K], "fields": [["question", "answer"]], "templates": ["{question}\n\n{answer}"]},
           "tokenizer": {"hf_json": {"path": "unused.json"}}, "units": {"sizes": [[512]], "build_batch": [64]},
           "output": {"dir": "o", "samples_per_shard": [100]}}
    with open("c.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f)
    assert main(["tokenizer", "train", "cfg", "--vocab-size", "300", "--config", "c.yaml", "--quiet", "--json"]) == 0
    by_config = json.loads(capsys.readouterr().out)
    assert by_cli["unique_words"] == by_config["unique_words"]
    assert by_cli["vocab_size"] == by_config["vocab_size"] == 300
    record = json.load(open(os.path.join("cli", "mintdim-train.json"), encoding="utf-8"))
    assert record["reference"]["corpus"]["templates"] == ["{question}\n\n{answer}"]
    with open(os.path.join("cli", "merges.txt"), "rb") as a, open(os.path.join("cfg", "merges.txt"), "rb") as b:
        assert a.read() == b.read()  # the same model
