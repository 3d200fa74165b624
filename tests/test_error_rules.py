"""Errors say only what applies.

A message's "Rules:" list names the rules of the key in question, never those of another key
(an `overflow` problem listed the rules of `sizes`; a role in train_on listed the rules of
`fields` in a conversation config). The spec's own texts keep their lists: UnitValidationError
for sizes and build_batch, TokenizerValidationError for the `config` component (tests/test_errors.py).
A directory tokenizer kind given a file says that a directory is expected and names the fix.
"""

from __future__ import annotations

import os
import re

import pytest
from conftest import DATA, basic_config, write_jsonl

from mintdim import config
from mintdim import errors as E
from mintdim.stages.preflight import preflight

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")


def base():
    return basic_config(["d/a.jsonl"], tokenizer={"sentencepiece": {"path": "t/tok.model"}})


def units(**changes):
    cfg = base()
    for key, value in changes.items():
        if value == "<del>":
            del cfg["units"][key]
        else:
            cfg["units"][key] = value
    return cfg


def chat(**source):
    cfg = base()
    cfg["source"] = {"files": ["d/a.jsonl"], "chat": {}, **source}
    cfg["tokenizer"] = {"hf_dir": {"path": "tokdir"}}
    return cfg


def fields(**source):
    cfg = base()
    cfg["source"].update(source)
    return cfg


def tokenizer(value):
    cfg = base()
    cfg["tokenizer"] = value
    return cfg


# name -> (config, error class, the key(s) in question: every rule of the list starts with one of them)
CASES = {
    "overflow_value_with_sizes": (units(overflow=["keep"]), E.UnitValidationError, ("overflow",)),
    "overflow_value_with_pack": (
        units(sizes="<del>", pack=[64], overflow=["keep"]),
        E.UnitValidationError,
        ("overflow",),
    ),
    "pack_value": (units(sizes="<del>", pack=[64.5]), E.UnitValidationError, ("pack",)),
    "pack_and_sizes": (units(pack=[64]), E.UnitValidationError, ("pack",)),
    "auto_needs_k": (units(sizes="auto"), E.UnitValidationError, ("k",)),
    "auto_multiple_of": (units(sizes="auto", k=2, multiple_of=0), E.UnitValidationError, ("multiple_of",)),
    "auto_cost": (units(sizes="auto", k=2, cost="cubic"), E.UnitValidationError, ("cost",)),
    "auto_only": (units(k=2), E.UnitValidationError, ("k",)),
    "auto_only_two": (units(k=2, cost="linear"), E.UnitValidationError, ("k", "cost")),
    "auto_min_above_max": (
        units(sizes="auto", k=2, min_size=64, max_size=8),
        E.UnitValidationError,
        ("min_size", "max_size"),
    ),
    "chat_train_on_role_typo": (
        chat(chat={"roles": {"human": "user", "gpt": "assitant"}}, train_on=[["assistant"]]),
        E.FieldMappingError,
        ("train_on",),
    ),
    "chat_train_on_role_not_string": (chat(train_on=[[""]]), E.FieldMappingError, ("train_on",)),
    "train_on_names_no_field": (fields(train_on=[["answer"]]), E.FieldMappingError, ("train_on",)),
    "train_on_arity": (
        fields(files=["d/a.jsonl", "d/b.jsonl", "d/c.jsonl"], train_on=[["prompt"], ["prompt"]]),
        E.FieldMappingError,
        ("train_on",),
    ),
    "train_on_shape": (fields(train_on=["prompt"]), E.FieldMappingError, ("train_on",)),
    "hf_dir_pad_token": (
        tokenizer({"hf_dir": {"path": "tokdir", "pad_token": 5}}),
        E.TokenizerValidationError,
        ("pad_token",),
    ),
    "hf_dir_chat_template": (
        tokenizer({"hf_dir": {"path": "tokdir", "chat_template": ""}}),
        E.TokenizerValidationError,
        ("chat_template",),
    ),
    "tokenizer_path_not_string": (
        tokenizer({"sentencepiece": {"path": 5}}),
        E.TokenizerValidationError,
        ("path",),
    ),
    "tokenizer_path_empty": (
        tokenizer({"sentencepiece": {"path": ""}}),
        E.TokenizerValidationError,
        ("path",),
    ),
    "train_bpe_unit": (
        tokenizer({"train_bpe": {"vocab_size": 300, "out": "tk", "unit": "char"}}),
        E.TokenizerValidationError,
        ("unit",),
    ),
    "train_bpe_vocab_size": (
        tokenizer({"train_bpe": {"vocab_size": 100, "out": "tk"}}),
        E.TokenizerValidationError,
        ("vocab_size",),
    ),
    "train_bpe_window": (
        tokenizer({"train_bpe": {"vocab_size": 300, "out": "tk", "hot_pair_window_size": 0}}),
        E.TokenizerValidationError,
        ("hot_pair_window_size",),
    ),
}


def rules(text: str, head: str) -> list[str]:
    """The bullets of the text's rules list (head: 'Rules:' or 'Quy tắc:')."""
    assert head in text, text
    block = text.split(f"{head}\n\n", 1)[1].split("\n\n", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("• ")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_rules_list_names_only_the_key_in_question(name):
    cfg, cls, keys = CASES[name]
    with pytest.raises(E.MintDimError) as info:
        config.resolve(cfg)
    err = info.value
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    for text, head in ((err.render("en"), "Rules:"), (err.render("vi"), "Quy tắc:")):
        bullets = rules(text, head)
        assert bullets, text
        for bullet in bullets:
            assert re.split(r"[ :\[]", bullet, maxsplit=1)[0] in keys, (
                f"{bullet!r} is not a rule of {keys}:\n{text}"
            )


def test_the_spec_texts_keep_their_rules(tmp_path):
    """sizes and build_batch are the spec's own UnitValidationError; its three rules stay."""
    for cfg in (units(sizes=[[0, 16]]), units(build_batch=[0])):
        with pytest.raises(E.UnitValidationError) as info:
            config.resolve(cfg)
        assert rules(info.value.render("en"), "Rules:") == [
            "sizes must be positive integers",
            "sizes must be sorted ascending",
            "build_batch must be a positive integer",
        ]


@pytest.mark.parametrize("kind", ["hf_dir", "unitoken"])
def test_a_directory_kind_given_a_file_says_a_directory_is_expected(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "d.jsonl", [{"prompt": "a", "response": "b"}])
    os.symlink(TOK_DIR, "tok")
    declared = "tok/tokenizer.json"
    cfg = basic_config(["d.jsonl"], tokenizer={kind: {"path": declared}})
    with pytest.raises(E.MintDimError) as info:
        preflight(cfg)
    err = info.value
    en, vi = err.render("en"), err.render("vi")
    assert type(err) is E.TokenizerValidationError, en
    assert "not found" not in en and "Missing file" not in en
    assert en.startswith(
        "TokenizerValidationError: Invalid tokenizer config.\n\nComponent: path\n\n"
        f"Problem: {kind} expects a tokenizer directory, but path {declared} is a file"
    )
    assert vi.startswith(
        "TokenizerValidationError: Cấu hình tokenizer không hợp lệ.\n\nThành phần: path\n\n"
        f"Vấn đề: {kind} cần một thư mục tokenizer, nhưng path {declared} là một file"
    )
    if kind == "hf_dir":  # its directory is one: the fix names it
        assert f"Fix: name its directory: tokenizer: {{{kind}: {{path: tok}}}}" in en
        assert f"Cách sửa: chỉ định thư mục chứa nó: tokenizer: {{{kind}: {{path: tok}}}}" in vi
    else:  # an hf_dir directory is no unitoken model: not named as the fix, what one holds is said
        assert "{unitoken: {path: tok}}" not in en and "{unitoken: {path: tok}}" not in vi
        assert "tok is not a unitoken model directory: it has no ffbpe.json." in en
        assert "A unitoken model directory holds ffbpe.json, vocab.json and merges.txt" in en
    assert all(bullet.startswith("path ") for bullet in rules(en, "Rules:") + rules(vi, "Quy tắc:"))
    assert sorted(os.listdir(tmp_path)) == ["d.jsonl", "tok"]
