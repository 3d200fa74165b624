"""Conversations (source.chat) and the hf_dir tokenizer kind, checked against transformers.

Rendered text and ids must equal transformers' apply_chat_template for the same tokenizer
directory; loss masks must equal an independent computation written here from the templates'
own structure (Qwen3: <|im_start|>role\\n ... <|im_end|>, with its <think> handling; Llama-3.1:
header, trimmed content, <|eot_id|>) and the tokenizer's own offsets, or transformers'
return_assistant_tokens_mask for a template carrying {% generation %} tags.

CI uses the committed directory data/tokenizers/qwen3-template-bpe (a small byte-level BPE with
Qwen3's real chat template); the real Qwen3 and Llama-3.1 directories and ShareGPT are used when
../assets beside the repository (MINTDIM_ASSETS; benchmarks/fetch_data.sh fetches them) holds them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from conftest import DATA, build_in, build_shipped, read_json, read_jsonl, read_mask, run_cli, write_jsonl

from mintdim import errors as E
from mintdim.config import resolve

transformers = pytest.importorskip("transformers")

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")
CHATS = os.path.join(DATA, "chat", "gsm8k_chat.jsonl")
QWEN3_TEMPLATE = os.path.join(DATA, "chat", "qwen3_chat_template.jinja")
from conftest import ASSETS, SHAREGPT_ROLES  # noqa: E402


def hf(path):
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers.AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def ref():
    return hf(TOK_DIR)


def openai_messages(row: dict) -> list[dict]:
    """data/chat/gsm8k_chat.jsonl rows: the record-level system prompt comes first."""
    return [{"role": "system", "content": row["system"]}] + row["messages"]


# Edge cases: system turn, several assistant turns, empty content, <think> blocks (earlier turn:
# dropped by Qwen3; last turn: re-rendered), non-Latin text, content ending in whitespace.
EDGE = [
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "and 3+3?"},
            {"role": "assistant", "content": "6 "},
        ]
    },
    {"messages": [{"role": "user", "content": "Say nothing."}, {"role": "assistant", "content": ""}]},
    {
        "messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": "<think>\nbecause 2 > 1\n</think>\n\nTwo is more."},
            {"role": "user", "content": "Sure?"},
            {"role": "assistant", "content": "<think>\nyes, check again\n</think>\n\nYes, sure.\n"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Chào buổi sáng! 早上好，世界"},
            {"role": "assistant", "content": "Xin chào 👋 你好 — Ünïcödé\t"},
        ]
    },
    {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Two "}, {"type": "text", "text": "parts"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "One answer."}]},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "  padded question  "},
            {"role": "assistant", "content": "\n\nleading newlines"},
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "\n"},
        ]
    },
]


def joined(messages):
    """Text parts joined with no separator: MintDim's rule, applied before both renderers."""
    out = []
    for m in messages:
        c = m["content"]
        out.append({**m, "content": "".join(p["text"] for p in c) if isinstance(c, list) else c})
    return out


# --- independent masks ---------------------------------------------------------------------


def qwen3_spans(text: str, messages: list[dict], trained: set[int]) -> list[tuple[int, int]]:
    """Character spans to train, from Qwen3's template structure (no tools): turn k is message k;
    an assistant turn after the last user query starts with <think>\\n; its content is what
    follows the empty think block, or the whole block (its reasoning) and everything after it."""
    starts = []
    at = text.find("<|im_start|>")
    while at >= 0:
        starts.append(at)
        at = text.find("<|im_start|>", at + 1)
    assert len(starts) == len(messages), "one turn per message"
    spans = []
    for k in sorted(trained):
        m = messages[k]
        head = text.index("\n", starts[k]) + 1
        end = (starts[k + 1] if k + 1 < len(starts) else len(text)) - len("<|im_end|>\n")
        assert text[end : end + len("<|im_end|>")] == "<|im_end|>"
        body = text[head:end]
        c = m["content"]
        if "</think>" in c:
            reasoning = c.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            rest = c.split("</think>")[-1].lstrip("\n")
        else:
            reasoning, rest = "", c
        if body.startswith("<think>\n") and m["role"] == "assistant":
            # source.chat.reasoning: train (the default): the block, <think> included
            if reasoning.strip("\n"):
                a = head
                assert text[a:end] == "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + rest.lstrip(
                    "\n"
                )
            else:
                a = head + len("<think>\n\n</think>\n\n")
                assert text[a:end] == rest.lstrip("\n")  # the template writes content.lstrip('\n') here
        else:
            a = head
            assert body == rest
        spans += [(a, end), (end, end + len("<|im_end|>"))]
    return spans


def llama3_spans(text: str, messages: list[dict], trained: set[int]) -> list[tuple[int, int]]:
    """Llama-3.1: <|start_header_id|>role<|end_header_id|>\\n\\n + content|trim + <|eot_id|>."""
    starts = []
    at = text.find("<|start_header_id|>")
    while at >= 0:
        starts.append(at)
        at = text.find("<|start_header_id|>", at + 1)
    assert len(starts) == len(messages)
    spans = []
    for k in sorted(trained):
        a = text.index("<|end_header_id|>\n\n", starts[k]) + len("<|end_header_id|>\n\n")
        body = messages[k]["content"].strip()
        assert text[a : a + len(body) + len("<|eot_id|>")] == body + "<|eot_id|>"
        spans += [(a, a + len(body)), (a + len(body), a + len(body) + len("<|eot_id|>"))]
    return spans


def token_mask(tok, text: str, spans) -> tuple[list[int], list[bool]]:
    """A token is trained when the character it starts at lies inside a span (transformers' offsets)."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [any(a <= s < b for a, b in spans) for s, _ in enc["offset_mapping"]]
    return enc["input_ids"], mask


def read_tokens(out, row, dtype):
    shard = np.fromfile(os.path.join(out, row["shard_path"]), dtype=np.dtype(dtype).newbyteorder("<"))
    return shard.reshape(-1, row["unit_size"])[row["shard_row"]][: row["token_count"]]


def chat_config(files, tok_dir=TOK_DIR, chat=None, train_on=None, sizes=None, out="out", **tok):
    cfg = {
        "source": {"files": list(files), "chat": {} if chat is None else chat},
        "tokenizer": {"hf_dir": {"path": tok_dir, **tok}},
        "units": {"sizes": sizes or [[128, 256, 512, 1024, 4096]], "build_batch": [7]},
        "output": {"dir": out, "samples_per_shard": [50]},
    }
    if train_on is not None:
        cfg["source"]["train_on"] = train_on
    return cfg


# --- the hf_dir kind -----------------------------------------------------------------------------


def test_hf_dir_reads_the_directory_as_transformers_does(ref):
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", TOK_DIR)
    assert (
        tok.special_tokens
        == ref.special_tokens_map
        == {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    )
    assert tok.pad_id == ref.pad_token_id == 0
    assert tok.unk_id is None and ref.unk_token is None
    assert tok.encodes_every_string
    assert tok.vocab_size == len(ref)
    assert tok.chat_template == ref.chat_template == open(QWEN3_TEMPLATE, encoding="utf-8").read()
    texts = [json.dumps(r, ensure_ascii=False) for r in read_jsonl(CHATS)[:40]] + ["", "日本語 ☃ \x00 \ud7ff"]
    assert tok.encode_ids(texts) == [ref(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_hf_dir_legacy_special_tokens_map_and_template_file(tmp_path):
    """No added_tokens_decoder: special_tokens_map.json fills in (AddedToken dicts too);
    chat_template.jinja beside the tokenizer wins over the config's template."""
    from mintdim.tokenizers.kinds import load

    d = tmp_path / "tok"
    shutil.copytree(TOK_DIR, d)
    config = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("added_tokens_decoder")
    config.pop("pad_token")
    (d / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (d / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "pad_token": {
                    "content": "<|im_start|>",
                    "lstrip": False,
                    "normalized": False,
                    "rstrip": False,
                    "single_word": False,
                },
                "eos_token": "<|im_end|>",
            }
        ),
        encoding="utf-8",
    )
    (d / "chat_template.jinja").write_text(
        "{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}", encoding="utf-8"
    )
    ref = hf(str(d))
    tok = load("hf_dir", str(d))
    assert tok.special_tokens == ref.special_tokens_map
    assert tok.pad_id == ref.pad_token_id == ref.convert_tokens_to_ids("<|im_start|>")
    assert tok.chat_template == ref.chat_template
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    from mintdim.sources.chat import ChatRenderer

    r = ChatRenderer(
        tok.chat_template, tok.special_tokens, {"messages": "messages", "role": "role", "content": "content"}
    )
    assert r.render({"messages": msgs}, "f", 1) == ref.apply_chat_template(msgs, tokenize=False)


def _nopad_dir(tmp_path):
    d = tmp_path / "nopad"
    shutil.copytree(TOK_DIR, d)
    config = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("pad_token")
    (d / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(d)


def test_no_pad_names_existing_special_tokens_and_pad_token_must_exist(tmp_path):
    from mintdim.stages.preflight import preflight

    src = write_jsonl(tmp_path / "c.jsonl", [EDGE[0]])
    d = _nopad_dir(tmp_path)
    with pytest.raises(E.TokenizerSpecialTokenError) as err:
        preflight(chat_config([src], d), check_outputs=False)
    en, vi = err.value.render("en"), err.value.render("vi")
    assert "pad_id" in en and '"<|endoftext|>"' in en and 'pad_token: "<|endoftext|>"' in en
    assert "pad_token" in vi and "Cách sửa" in vi
    with pytest.raises(E.TokenizerSpecialTokenError) as err:
        preflight(chat_config([src], d, pad_token="<|pad|>"), check_outputs=False)
    assert '"<|pad|>" is not a token' in err.value.render("en")
    build, metas = preflight(chat_config([src], d, pad_token="<|endoftext|>"), check_outputs=False)
    meta = metas[os.path.abspath(d)]
    assert meta.pad_id == 0 and meta.unk_id is None


def test_a_tokenizer_that_can_produce_unknown_text_still_needs_unk(tmp_path):
    from tokenizers import Tokenizer, models

    from mintdim.stages.preflight import preflight

    d = tmp_path / "tiny"
    d.mkdir()
    Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "<pad>": 2}, merges=[])).save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({"pad_token": "<pad>"}), encoding="utf-8")
    src = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "a", "response": "b"}])
    cfg = chat_config([src], str(d))
    del cfg["source"]["chat"]
    cfg["source"].update(fields=[["prompt", "response"]], templates=["{prompt}{response}"])
    with pytest.raises(E.TokenizerSpecialTokenError) as err:
        preflight(cfg, check_outputs=False)
    assert "unk_id" in err.value.render("en")


def test_hf_dir_with_field_templates_builds_and_verifies(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", [{"q": "What is 2+2?", "a": "4 ☃"}, {"q": "日本", "a": ""}])
    cfg = chat_config([src])
    del cfg["source"]["chat"]
    cfg["source"].update(fields=[["q", "a"]], templates=["Q: {q}\nA: {a}<|im_end|>"], train_on=[["a"]])
    build_in(tmp_path, cfg, cores=1)
    out = str(tmp_path / "out")
    manifest = read_json(os.path.join(out, "manifest.json"))
    assert manifest["tokenizer"]["type"] == "hf_dir" and manifest["tokenizer"]["unk_id"] is None
    assert read_jsonl(os.path.join(out, "unk_index.jsonl")) == []
    ref = hf(TOK_DIR)
    for row in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        r = [{"q": "What is 2+2?", "a": "4 ☃"}, {"q": "日本", "a": ""}][row["sample_id"]]
        text = f"Q: {r['q']}\nA: {r['a']}<|im_end|>"
        assert (
            read_tokens(out, row, manifest["token_dtype"]).tolist()
            == ref(text, add_special_tokens=False)["input_ids"]
        )
    res = run_cli(tmp_path, "verify", "out", "--source", "--all")
    assert res.returncode == 0, res.stdout + res.stderr
    import mintdim

    assert mintdim.open(out).unk_id is None


# --- rendering == transformers ---------------------------------------------------------------------


def test_rendering_and_ids_equal_apply_chat_template(ref):
    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", TOK_DIR)
    opts = {"messages": "messages", "role": "role", "content": "content", "system": "system"}
    r = ChatRenderer(tok.chat_template, tok.special_tokens, opts)
    rows = read_jsonl(CHATS) + EDGE
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    rows.append(
        {
            "messages": [
                {"role": "user", "content": "add 2 and 3"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}
                    ],
                },
                {"role": "tool", "content": "5"},
                {"role": "assistant", "content": "It is 5."},
            ],
            "tools": tools,
        }
    )
    rows.append(
        {
            "messages": [
                {"role": "user", "content": "think?"},
                {"role": "assistant", "content": "ok", "reasoning_content": "hmm"},
            ]
        }
    )
    with_tools = ChatRenderer(tok.chat_template, tok.special_tokens, {**opts, "extras": ["tools"]})
    for row in rows:
        msgs = joined(
            ([{"role": "system", "content": row["system"]}] if "system" in row else []) + row["messages"]
        )
        want = ref.apply_chat_template(msgs, tokenize=False, tools=row.get("tools"))
        got = (with_tools if "tools" in row else r).render(row, "f", 1)
        assert got == want
        assert tok.encode_ids([got])[0] == ref.apply_chat_template(msgs, tools=row.get("tools"))["input_ids"]


def test_bad_records_are_data_errors_with_message_index():
    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", TOK_DIR)
    r = ChatRenderer(
        tok.chat_template,
        tok.special_tokens,
        {
            "messages": "conversations",
            "role": "from",
            "content": "value",
            "roles": {"human": "user", "gpt": "assistant"},
            "train": "train",
        },
        ["assistant"],
    )
    ok = {"from": "human", "value": "hi"}
    cases = [
        ({"other": []}, None, "no key 'conversations'"),
        ({"conversations": []}, None, "empty list"),
        ({"conversations": "hi"}, None, "list of messages"),
        ({"conversations": [ok, {"value": "x"}]}, 1, "no role"),
        ({"conversations": [ok, {"from": "robot", "value": "x"}]}, 1, "unknown role 'robot'"),
        ({"conversations": [ok, {"from": "gpt", "value": 42}]}, 1, "found number"),
        ({"conversations": [ok, {"from": "gpt"}]}, 1, "found missing"),
        ({"conversations": [ok, {"from": "gpt", "value": []}]}, 1, "empty list of parts"),
        ({"conversations": [{"from": "human", "value": [{"type": "image", "url": "x.png"}]}]}, 0, "'image'"),
        ({"conversations": [ok, {"from": "gpt", "value": "x", "train": "yes"}]}, 1, "true or false"),
        ({"conversations": [ok, 7]}, 1, "JSON object"),
    ]
    for record, index, needle in cases:
        for fn in (r.render, r.render_with_spans):
            with pytest.raises(E.SampleSchemaError) as err:
                fn(record, "data/c.jsonl", 12)
            en, vi = err.value.render("en"), err.value.render("vi")
            assert "File: data/c.jsonl" in en and "Line: 12" in en and needle in en, en
            assert "Dòng: 12" in vi and "Vấn đề" in vi
            assert ("Message:" in en) == (index is not None) and (index is None or f"Message: {index}" in en)
            assert err.value.line == 12 and err.value.file == "data/c.jsonl"


def test_every_bad_record_reads_the_same_in_both_languages():
    """Each data problem of a record, as a user reads it in English and in Vietnamese (lang: vi)."""
    from mintdim.sources.chat import ChatRenderer

    r = ChatRenderer(
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}",
        {},
        {
            "messages": "conversations",
            "role": "from",
            "content": "value",
            "train": "train",
            "system": "sys",
            "extras": ["tools"],
            "roles": {"human": "user", "gpt": "assistant", "system": "system"},
        },
        ["assistant"],
        ["<|end|>"],
    )
    ok = {"from": "human", "value": "hi"}
    cases = [
        (
            {"other": [], "x": 1},
            None,
            "the record has no key 'conversations' (keys: other, x)",
            "bản ghi không có key 'conversations' (các key: other, x)",
        ),
        (
            {"conversations": {"a": 1}},
            None,
            "'conversations' must be a list of messages, found JSON type object",
            "'conversations' phải là list tin nhắn, kiểu JSON hiện có: object",
        ),
        (
            {"conversations": []},
            None,
            "'conversations' is an empty list: a conversation needs at least one message",
            "'conversations' là list rỗng: hội thoại cần ít nhất một tin nhắn",
        ),
        (
            {"sys": 5, "conversations": [ok]},
            None,
            "the system prompt 'sys' must be a string, found JSON type number",
            "system prompt 'sys' phải là string, kiểu JSON hiện có: number",
        ),
        (
            {"conversations": [ok, 7]},
            1,
            "a message must be a JSON object, found JSON type number",
            "tin nhắn phải là JSON object, kiểu JSON hiện có: number",
        ),
        (
            {"conversations": [ok, {"value": "x"}]},
            1,
            "the message has no role (key 'from')",
            "tin nhắn không có role (key 'from')",
        ),
        (
            {"conversations": [ok, {"from": ["gpt"], "value": "x"}]},
            1,
            "the role (key 'from') must be a string, found JSON type array",
            "role (key 'from') phải là string, kiểu JSON hiện có: array",
        ),
        (
            {"conversations": [ok, {"from": "robot", "value": "x"}]},
            1,
            "unknown role 'robot' (source.chat.roles maps human, gpt, system)",
            "role 'robot' không xác định (source.chat.roles ánh xạ human, gpt, system)",
        ),
        (
            {"conversations": [ok, {"from": "gpt"}]},
            1,
            "content (key 'value') must be a string or a list of text parts, found missing",
            "content (key 'value') phải là string hoặc list các phần text, hiện có: missing",
        ),
        (
            {"conversations": [ok, {"from": "gpt", "value": "x", "train": 1}]},
            1,
            "the train flag (key 'train') must be true or false, found number",
            "cờ train (key 'train') phải là true hoặc false, hiện có: number",
        ),
        (
            {"sys": "S", "conversations": [{"from": "system", "value": "T"}, ok]},
            0,
            "the record has both a system prompt 'sys' and a system message",
            "bản ghi có cả system prompt 'sys' lẫn tin nhắn system",
        ),
        (
            {"conversations": [ok], "tools": ["get_weather"]},
            None,
            "'tools' must be a list of JSON objects (schemas)",
            "'tools' phải là list JSON object (schema)",
        ),
        (
            {"conversations": [ok, {"from": "gpt", "value": []}]},
            1,
            "content (key 'value') is an empty list of parts",
            "content (key 'value') là list rỗng",
        ),
        (
            {"conversations": [{"from": "human", "value": ["plain"]}]},
            0,
            'content part of type \'string\': only text parts ({"type": "text", "text": ...}) can be '
            "rendered",
            'phần content kiểu \'string\': chỉ render được phần text ({"type": "text", "text": ...})',
        ),
    ]
    assert (
        r.render({"sys": "S", "conversations": [ok]}, "data/c.jsonl", 1)
        == "<|system|>S<|end|><|user|>hi<|end|>"
    )
    for record, index, en_problem, vi_problem in cases:
        where_en = f"Message: {index}\n\n" if index is not None else ""
        where_vi = f"Tin nhắn: {index}\n\n" if index is not None else ""
        for fn in (r.render, r.render_with_spans):
            with pytest.raises(E.SampleSchemaError) as err:
                fn(record, "data/c.jsonl", 12)
            assert err.value.render("en") == (
                "SampleSchemaError: JSONL conversation is not valid.\n\n"
                f"File: data/c.jsonl\n\nLine: 12\n\n{where_en}Problem: {en_problem}"
            )
            assert err.value.render("vi") == (
                "SampleSchemaError: Hội thoại JSONL không hợp lệ.\n\n"
                f"File: data/c.jsonl\n\nDòng: 12\n\n{where_vi}Vấn đề: {vi_problem}"
            )


def test_template_exception_is_a_data_error_with_its_message(tmp_path):
    from mintdim.sources.chat import ChatRenderer

    gemma_like = (
        "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
        "{% endif %}<start_of_turn>{{ m.role }}\n{{ m.content | trim }}<end_of_turn>\n{% endfor %}"
    )
    r = ChatRenderer(
        gemma_like, {"eos_token": "<eos>"}, {"messages": "messages", "role": "role", "content": "content"}
    )
    with pytest.raises(E.ChatTemplateError) as err:
        r.render({"messages": [{"role": "assistant", "content": "x"}]}, "a.jsonl", 3)
    assert "roles must alternate" in err.value.render("en") and "Line: 3" in err.value.render("en")
    assert "roles must alternate" in err.value.render("vi") and "Dòng: 3" in err.value.render("vi")
    # the same in a build: the job stops, failure markers as for every data error
    tpl = tmp_path / "gemma.jinja"
    tpl.write_text(gemma_like, encoding="utf-8")
    src = write_jsonl(tmp_path / "c.jsonl", [EDGE[1], {"messages": [{"role": "assistant", "content": "x"}]}])
    with pytest.raises(E.ChatTemplateError) as err:
        build_in(tmp_path, chat_config([src], chat_template=str(tpl)), cores=1)
    assert "Line: 2" in str(err.value) and "roles must alternate" in str(err.value)
    assert not os.path.exists(tmp_path / "out" / "stats.json")
    assert any(
        os.path.exists(tmp_path / "out" / d / "UNIT_BUILD_FAILED.md") for d in os.listdir(tmp_path / "out")
    )


def test_a_span_that_cannot_be_located_is_an_error_never_a_guess():
    from mintdim.sources.chat import ChatRenderer

    upper = "{% for m in messages %}<|{{ m.role }}|>{{ m.content | upper }}<|end|>{% endfor %}"
    r = ChatRenderer(
        upper, {}, {"messages": "messages", "role": "role", "content": "content"}, ["assistant"], ["<|end|>"]
    )
    rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    # rewritten content is not in the rendering: no message is found
    for fn in (
        r.render,
        r.render_with_spans,
    ):
        with pytest.raises(E.ChatTemplateError) as err:
            fn(rec, "x.jsonl", 5)
        assert "Message: 0 (role user)" in err.value.render("en") and "Line: 5" in err.value.render("en")
    # a template that writes the content and more that depends
    # on it: the content is there, its span is not exact
    counted = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }} ({{ m.content | length }})<|end|>{% endfor %}"
    )
    r = ChatRenderer(
        counted,
        {},
        {"messages": "messages", "role": "role", "content": "content"},
        ["assistant"],
        ["<|end|>"],
    )
    with pytest.raises(E.ChatTemplateError) as err:
        r.render_with_spans(rec, "x.jsonl", 5)
    assert "Message: 1 (role assistant)" in err.value.render("en") and "Line: 5" in err.value.render("en")
    assert "cannot be located exactly" in err.value.render("en")
    # rendering alone is fine
    assert r.render(rec, "x.jsonl", 5) == "<|user|>hi (2)<|end|><|assistant|>hello (5)<|end|>"
    # where the part that depends on the content does not change (a length of 2, as the sentinel's), the
    # content is located: the end marker comes with it when it follows the content
    text, spans = r.render_with_spans(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "42"}]}, "x", 1
    )
    assert [(text[a:b], role) for a, b, _, role in spans] == [("42", "assistant")]


def test_train_flag_last_turn_and_system_key_choose_messages():
    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", TOK_DIR)
    base = {"messages": "messages", "role": "role", "content": "content", "system": "sys", "train": "train"}
    rec = {
        "sys": "S",
        "messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2", "train": True},
            {"role": "assistant", "content": "a2"},
            {"role": "user", "content": "q3"},
            {"role": "assistant", "content": "a3", "train": False},
        ],
    }

    def trained(opts, roles):
        r = ChatRenderer(tok.chat_template, tok.special_tokens, {**base, **opts}, roles)
        text, spans = r.render_with_spans(rec, "f", 1)
        return [text[a:b] for a, b, _, _ in spans]

    assert trained({}, ["assistant"]) == ["a1", "<|im_end|>", "q2", "<|im_end|>", "a2", "<|im_end|>"]
    assert trained({"last_turn": True}, ["assistant"]) == ["q2", "<|im_end|>", "a2", "<|im_end|>"]
    assert trained({}, ["system"]) == ["S", "<|im_end|>", "q2", "<|im_end|>"]
    with pytest.raises(E.SampleSchemaError) as err:  # a system prompt key and a system message
        ChatRenderer(tok.chat_template, tok.special_tokens, base, ["assistant"]).render(
            {"sys": "S", "messages": [{"role": "system", "content": "T"}]}, "f", 4
        )
    assert "both a system prompt" in err.value.render("en")


# --- config ----------------------------------------------------------------------------------------


def test_pinned_config_form_resolves(tmp_path):
    text = """
source:
  files: ["./data/chat.jsonl"]
  chat: {messages: "conversations", role: "from", content: "value",
         roles: {human: user, gpt: assistant, system: system}}
  train_on: [["assistant"]]
tokenizer:
  hf_dir: {path: "./tok/qwen3"}
units: {sizes: [[1024, 2048, 4096, 8192, 32768]], build_batch: [1024]}
output: {dir: "./out", samples_per_shard: [10000]}
"""
    raw = yaml.safe_load(text)
    build = resolve(raw)
    [f] = build.files
    assert f.chat["messages"] == "conversations" and f.chat["roles"]["gpt"] == "assistant"
    assert f.masks.train_on == ["assistant"] and f.tokenizer.kind == "hf_dir" and f.source.fields == []
    from mintdim.config import check_schema

    check_schema(raw)
    raw["source"]["chat"] = {}
    raw["tokenizer"]["hf_dir"].update(pad_token="<|endoftext|>", chat_template="./t.jinja")
    check_schema(raw)
    f = resolve(raw).files[0]
    assert f.chat == {"messages": "messages", "role": "role", "content": "content"}
    assert f.tokenizer.options == {"pad_token": "<|endoftext|>", "chat_template": "./t.jinja"}
    del raw["source"]["train_on"]
    assert resolve(raw).files[0].masks.train_on is None  # omitted: no mask files, as today
    raw["source"]["chat"] = {"last_turn": True}
    assert resolve(raw).files[0].masks.train_on == ["assistant"]  # last_turn alone: the assistant


def test_chat_mapped_by_file_beside_field_templates(tmp_path):
    raw = {
        "source": {
            "files": ["a.jsonl", "b.jsonl"],
            "chat": [None, {}],
            "fields": [["q", "a"]],
            "templates": ["{q} {a}"],
            "train_on": [["a"], ["assistant"]],
        },
        "tokenizer": {"hf_dir": {"path": TOK_DIR}},
        "units": {"sizes": [[64]], "build_batch": [8]},
        "output": {"dir": ["o1", "o2"], "samples_per_shard": [10]},
    }
    a, b = resolve(raw).files
    assert a.chat is None and a.source.fields == ["q", "a"] and a.masks.train_on == ["a"]
    assert b.chat == {"messages": "messages", "role": "role", "content": "content"} and b.masks.train_on == [
        "assistant"
    ]


@pytest.mark.parametrize(
    "change, cls, needle",
    [
        (
            lambda c: c["source"].update(chat={"speaker": "x"}),
            E.PipelineValidationError,
            "unknown keys in source.chat",
        ),
        (lambda c: c["source"].update(chat=[{}, {}, {}]), E.PipelineValidationError, "3 chat entries"),
        (lambda c: c["source"].update(chat={"roles": {"human": 1}}), E.PipelineValidationError, "roles"),
        (lambda c: c["source"].update(chat={"last_turn": "yes"}), E.PipelineValidationError, "last_turn"),
        (
            lambda c: c["source"].update(chat={"roles": {"gpt": "assistant"}}, train_on=[["user"]]),
            E.FieldMappingError,
            "never produces",
        ),
        (lambda c: c.update(tokenizer={"hf_json": {"path": "x.json"}}), E.TokenizerValidationError, "hf_dir"),
        (lambda c: c["tokenizer"]["hf_dir"].update(pad_token=""), E.TokenizerValidationError, "pad_token"),
        (lambda c: c["tokenizer"]["hf_dir"].update(vocab=3), E.TokenizerValidationError, "unknown keys"),
    ],
)
def test_chat_config_errors(change, cls, needle):
    cfg = chat_config(["a.jsonl", "b.jsonl"])
    change(cfg)
    with pytest.raises(cls) as err:
        resolve(cfg)
    assert needle in err.value.render("en")


def test_fluent_api_source_chat():
    from mintdim import pipeline

    job = (
        pipeline("unit-build")
        .source.chat(files=["c.jsonl"], chat={"system": "system"}, train_on=[["assistant"]])
        .tokenizer.hf_dir({"path": TOK_DIR})
        .units(sizes=[[512]], build_batch=[8])
        .output.dir("o", [10])
    )
    cfg = job.to_config()
    assert cfg["source"] == {"files": ["c.jsonl"], "chat": {"system": "system"}, "train_on": [["assistant"]]}
    assert resolve(cfg).files[0].chat["system"] == "system"


# --- builds: masks, stats, reader, verify, inspect ------------------------------------------------


def test_build_masks_equal_independent_computation(tmp_path, ref):
    rows = [{"system": r["system"], "messages": r["messages"]} for r in read_jsonl(CHATS)[:60]] + [
        {"messages": joined(r["messages"])} for r in EDGE
    ]
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    cfg = chat_config([src], chat={"system": "system"}, train_on=[["assistant"]])
    res = build_in(tmp_path, cfg, cores=2)
    out = str(tmp_path / "out")
    manifest = read_json(os.path.join(out, "manifest.json"))
    assert manifest["tokenizer"]["unk_id"] is None and manifest["loss_mask"]["train_on"] == [["assistant"]]
    total = 0
    for row in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        rec = rows[row["sample_id"]]
        msgs = ([{"role": "system", "content": rec["system"]}] if "system" in rec else []) + rec["messages"]
        text = ref.apply_chat_template(msgs, tokenize=False)
        spans = qwen3_spans(text, msgs, {i for i, m in enumerate(msgs) if m["role"] == "assistant"})
        ids, want = token_mask(ref, text, spans)
        assert read_tokens(out, row, manifest["token_dtype"]).tolist() == ids
        mask = read_mask(out, row)
        assert mask[: row["token_count"]].tolist() == want, row["sample_id"]
        assert not mask[row["token_count"] :].any()
        assert row["trained_tokens"] == sum(want)
        total += sum(want)
    stats = res.outputs[0].stats
    assert stats["trained_tokens"] == total == stats["trained_tokens_by_role"]["assistant"]
    assert stats["samples_with_unk"] == 0
    empty = next(
        r
        for r in read_jsonl(os.path.join(out, "sample_index.jsonl"))
        if rows[r["sample_id"]].get("messages")[-1]["content"] == ""
    )
    assert empty["trained_tokens"] == 1  # only <|im_end|>: the inserted empty think block is not trained
    res = run_cli(tmp_path, "verify", "out", "--source", "--all")
    assert res.returncode == 0, res.stdout + res.stderr
    import mintdim

    ds = mintdim.open(out)
    assert ds.has_loss_mask and ds.unk_id is None
    res = run_cli(tmp_path, "inspect", "out", "--sample", str(len(rows) - 5))  # EDGE[1]: empty answer
    assert res.returncode == 0, res.stderr
    assert "<|im_start|>assistant\n<think>\n\n</think>\n\n⟦<|im_end|>⟧" in res.stdout
    res = run_cli(tmp_path, "inspect", "out", "--sample", "0")
    assert "<|im_start|>assistant\n⟦" in res.stdout and "⟦<|im_start|>" not in res.stdout


def test_generation_tags_equal_return_assistant_tokens_mask(tmp_path, ref):
    template = open(QWEN3_TEMPLATE, encoding="utf-8").read()
    tagged = template
    # the assistant branch sets its body instead of writing it, then writes the header and, inside a
    # generation block, the body, any tool calls and <|im_end|>
    for old, new in [
        (
            "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + "
            "'\\n</think>\\n\\n' + content.lstrip('\\n') }}",
            "{%- set body = '<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + "
            "content.lstrip('\\n') %}",
        ),
        ("{{- '<|im_start|>' + message.role + '\\n' + content }}", "{%- set body = content %}"),
        (
            "        {%- if message.tool_calls %}",
            "        {{- '<|im_start|>' + message.role + '\\n' }}{% generation %}{{- body }}\n"
            "        {%- if message.tool_calls %}",
        ),
        (
            "        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}",
            "        {{- '<|im_end|>' }}{% endgeneration %}{{- '\\n' }}\n"
            '    {%- elif message.role == "tool" %}',
        ),
    ]:
        assert old in tagged, old
        tagged = tagged.replace(old, new)
    assert tagged.count("{% generation %}") == 1
    path = tmp_path / "tagged.jinja"
    path.write_text(tagged, encoding="utf-8")
    rows = [{"messages": openai_messages(r)} for r in read_jsonl(CHATS)[:30]] + [
        {"messages": joined(r["messages"])} for r in EDGE
    ]
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    build_in(tmp_path, chat_config([src], chat_template=str(path), train_on=[["assistant"]]), cores=1)
    out = str(tmp_path / "out")
    dtype = read_json(os.path.join(out, "manifest.json"))["token_dtype"]
    for row in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        msgs = rows[row["sample_id"]]["messages"]
        got = ref.apply_chat_template(
            msgs, chat_template=tagged, return_assistant_tokens_mask=True, return_dict=True
        )
        assert any(got["assistant_masks"])
        assert read_tokens(out, row, dtype).tolist() == got["input_ids"]
        assert read_mask(out, row)[: row["token_count"]].astype(int).tolist() == got["assistant_masks"]


def test_shipped_chat_example_builds(tmp_path):
    """config/chat.yaml from a copy of the repository's data: the README quick start."""
    res = build_shipped(tmp_path, "config/chat.yaml")
    assert res.returncode == 0, res.stdout + res.stderr
    out = tmp_path / "artifacts" / "gsm8k_chat_units"
    stats = read_json(out / "stats.json")
    assert (
        stats["total_samples"] == 300
        and stats["trained_tokens_by_role"]["assistant"] == stats["trained_tokens"] > 0
    )
    res = run_cli(tmp_path, "inspect", str(out), "--sample", "0")
    assert res.returncode == 0 and "<|im_start|>system\nYou are a careful math tutor" in res.stdout
    assert "roles: system, user, assistant*, user, assistant* (* trained)" in res.stdout


# --- real tokenizers and ShareGPT (optional: ../assets, MINTDIM_ASSETS) -------------------------------------


def _real(name):
    path = os.path.join(ASSETS, *name.split("/"))
    if not os.path.exists(path):
        pytest.skip(f"{path} not present")
    return path


def _sample(path, n, seed):
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    rng = random.Random(seed)
    return [json.loads(line) for line in rng.sample(lines, n)]


@pytest.mark.parametrize(
    "tok_name, spans_of, extra",
    [
        ("hf/qwen3", qwen3_spans, {}),
        ("hf/llama3_1", llama3_spans, {"pad_token": "<|reserved_special_token_0|>"}),
    ],
)
def test_real_sharegpt_both_shapes_equal_transformers(tmp_path, tok_name, spans_of, extra):
    tok_dir = _real(tok_name)
    msgs_rows = _sample(_real("data/sharegpt_messages.jsonl"), 120, 1)
    conv_rows = _sample(_real("data/sharegpt_conversations.jsonl"), 120, 2)
    a = write_jsonl(tmp_path / "m.jsonl", msgs_rows)
    b = write_jsonl(tmp_path / "c.jsonl", conv_rows)
    chat = [
        {"roles": SHAREGPT_ROLES},
        {"messages": "conversations", "role": "from", "content": "value", "roles": SHAREGPT_ROLES},
    ]
    cfg = chat_config(
        [a, b], tok_dir, chat=chat, train_on=[["assistant"]], sizes=[[1024, 4096, 32768, 262144]], **extra
    )
    cfg["units"]["build_batch"] = [64]
    res = build_in(tmp_path, cfg, cores=2)
    ref = hf(tok_dir)
    out = str(tmp_path / "out")
    dtype = read_json(os.path.join(out, "manifest.json"))["token_dtype"]
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    assert len(index) == 240
    total = 0
    for row in index:
        rec = (msgs_rows + conv_rows)[row["sample_id"]]
        if "messages" in rec:
            msgs = [{"role": SHAREGPT_ROLES[m["role"]], "content": m["content"]} for m in rec["messages"]]
        else:
            msgs = [{"role": SHAREGPT_ROLES[m["from"]], "content": m["value"]} for m in rec["conversations"]]
        text = ref.apply_chat_template(msgs, tokenize=False)
        ids = ref.apply_chat_template(msgs)["input_ids"]
        assert read_tokens(out, row, dtype).tolist() == ids
        trained = {i for i, m in enumerate(msgs) if m["role"] == "assistant"}
        spans = spans_of(text, msgs, trained)
        want = [
            any(x <= s < y for x, y in spans)
            for s, _ in ref(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        ]
        assert read_mask(out, row)[: row["token_count"]].tolist() == want, row["sample_id"]
        total += sum(want)
    assert res.outputs[0].stats["trained_tokens_by_role"] == {"assistant": total}


def test_real_llama_without_pad_is_a_clear_error(tmp_path):
    from mintdim.stages.preflight import preflight

    tok_dir = _real("hf/llama3_1")
    src = write_jsonl(tmp_path / "c.jsonl", [EDGE[0]])
    with pytest.raises(E.TokenizerSpecialTokenError) as err:
        preflight(chat_config([src], tok_dir), check_outputs=False)
    en = err.value.render("en")
    assert 'pad_token: "<|reserved_special_token_0|>"' in en and '"<|end_of_text|>"' in en and "more" in en


def covered(spans) -> set[int]:
    """The characters a list of spans (start, end, ...) covers."""
    return {i for span in spans for i in range(span[0], span[1])}


def test_located_spans_equal_the_templates_structure_also_one_message_at_a_time():
    """render_with_spans finds each trained message (reasoning blocks too) where Qwen3's template
    structure puts it. A record whose rendering holds the character the one-extra-render reading marks
    with (U+F0000, here in the system prompt) is located one message at a time: the same spans."""
    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", TOK_DIR)
    opts = {"messages": "messages", "role": "role", "content": "content", "system": "system"}
    r = ChatRenderer(tok.chat_template, tok.special_tokens, opts, ["assistant", "user"])
    rows = read_jsonl(CHATS) + [{"messages": joined(e["messages"])} for e in EDGE]
    rows += [{"system": "Mark \U000f0000.", "messages": joined(e["messages"])} for e in EDGE[1:]]
    rows += [{"system": "Mark \U000f0000.", "messages": x["messages"]} for x in read_jsonl(CHATS)[:40]]
    trained = 0
    for line, row in enumerate(rows, 1):
        text, spans = r.render_with_spans(row, "c.jsonl", line)
        msgs, _extras, flags = r.messages(row)
        want = qwen3_spans(text, msgs, set(r.trained_messages(msgs, flags)))
        assert covered(spans) == covered(want), (line, row)
        trained += len(want) // 2
    assert trained > 600
    text, spans = r.render_with_spans({"messages": joined(EDGE[2]["messages"])}, "c.jsonl", 1)
    # the last answer's reasoning is trained with it; an earlier turn's block, which the template drops,
    # is absent
    assert [(text[a:b], role) for a, b, _rule, role in spans] == [
        ("Why?", "user"),
        ("<|im_end|>", "user"),
        ("Two is more.", "assistant"),
        ("<|im_end|>", "assistant"),
        ("Sure?", "user"),
        ("<|im_end|>", "user"),
        ("<think>\nyes, check again\n</think>\n\nYes, sure.\n", "assistant"),
        ("<|im_end|>", "assistant"),
    ]


def test_a_bad_record_in_a_build_names_its_line_and_message(tmp_path):
    rows = [
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]},
        "",
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "robot", "value": "x"}]},
    ]
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    cfg = chat_config(
        [src],
        chat={
            "messages": "conversations",
            "role": "from",
            "content": "value",
            "roles": {"human": "user", "gpt": "assistant"},
        },
        train_on=[["assistant"]],
    )
    cfg["lang"] = "both"
    with pytest.raises(E.SampleSchemaError) as err:
        build_in(tmp_path, cfg, cores=1)
    text = str(err.value)
    assert "Line: 3" in text and "Message: 1" in text and "unknown role 'robot'" in text
    assert "Dòng: 3" in text and "Tin nhắn: 1" in text
    assert not os.path.exists(tmp_path / "out" / "stats.json")


def test_named_templates_tool_use_when_the_record_passes_tools(tmp_path, ref):
    """A config with named templates: "tool_use" for records with tools, "default" otherwise."""
    from mintdim.sources.chat import renderer_for
    from mintdim.tokenizers.kinds import load

    d = tmp_path / "named"
    shutil.copytree(TOK_DIR, d)
    config = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    default = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    config["chat_template"] = [
        {"name": "default", "template": default},
        {"name": "tool_use", "template": "TOOLS {{ tools | tojson }}\n" + default},
    ]
    (d / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    reference = hf(str(d))
    tok = load("hf_dir", str(d))
    entry = SimpleNamespace(
        tokenizer=SimpleNamespace(path=str(d)),
        masks=SimpleNamespace(train_on=["assistant"]),
        chat={"messages": "messages", "role": "role", "content": "content", "extras": ["tools"]},
    )
    r = renderer_for(entry, tok)
    msgs = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    tools = [{"type": "function", "function": {"name": "f"}}]
    for rec, kw in (({"messages": msgs}, {}), ({"messages": msgs, "tools": tools}, {"tools": tools})):
        want = reference.apply_chat_template(msgs, tokenize=False, **kw)
        assert r.render(rec, "f", 1) == want
        text, spans = r.render_with_spans(rec, "f", 1)
        assert text == want and [text[a:b] for a, b, _, _ in spans] == ["y", "<|im_end|>"]
    assert r.render({"messages": msgs, "tools": tools}, "f", 1).startswith("TOOLS [")


# Templates that do something with a trained content besides writing it: its span must be where the
# content (as the template trims it) lands, whatever the template did with it on the way; a layout
# that depends on the content is an error, never a guess.
CONTENT_TEMPLATES = {
    "trim": "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}<|end|>{% endfor %}",
    "concatenated, stripped": (
        "{% for m in messages %}{{ ('<|' + m.role + '|>' + m.content).rstrip() + '<|end|>' }}{% endfor %}"
    ),
    "lstrip, branch on a test": (
        "{% for m in messages %}{% if '</think>' in m.content %}X{% endif %}{% if m.content or 1 %}"
        "<|{{ m.role }}|>{{ m.content.lstrip('\\n') }}{% endif %}<|end|>{% endfor %}"
    ),
    "joined with ~": "{% for m in messages %}{{ '<|' ~ m.role ~ '|>' ~ m.content }}<|end|>{% endfor %}",
    "through a macro": (
        "{% macro turn(m) %}<|{{ m.role }}|>{{ m.content }}{% endmacro %}"
        "{% for m in messages %}{{ turn(m) }}<|end|>{% endfor %}"
    ),
    "read as upper, written as is": (
        "{% for m in messages %}{% set shout = m.content.upper() %}<|{{ m.role }}|>{{ m.content }}<|end|>"
        "{% endfor %}"
    ),
}


@pytest.mark.parametrize("name", sorted(CONTENT_TEMPLATES))
def test_spans_where_the_content_lands_whatever_the_template_does_with_it(name):
    from mintdim.sources.chat import ChatRenderer

    opts = {"messages": "messages", "role": "role", "content": "content"}
    r = ChatRenderer(CONTENT_TEMPLATES[name], {}, opts, ["assistant"], ["<|end|>"])
    answers = ["\n  Fine, thanks.  ", "user", "<|end|>", "", "A\n"]
    messages = [
        m
        for a in answers
        for m in ({"role": "user", "content": "hi user"}, {"role": "assistant", "content": a})
    ]
    text, spans = r.render_with_spans({"messages": messages}, "x.jsonl", 1)
    assert text == r.render({"messages": messages}, "x.jsonl", 1)
    # independently: each assistant turn's text, as the template writes it, sits right before its <|end|>
    pos, expected = 0, []
    for a in answers:
        written = {
            "trim": a.strip(),
            "concatenated, stripped": a.rstrip(),
            "lstrip, branch on a test": a.lstrip("\n"),
        }
        written = written.get(name, a)
        head = text.index("<|assistant|>", pos) + len("<|assistant|>")
        assert text.startswith(written + "<|end|>", head)
        expected += [
            (head, head + len(written), 0, "assistant"),
            (head + len(written), head + len(written) + 7, 0, "assistant"),
        ]
        pos = head + len(written) + 7
    assert spans == expected


def test_a_layout_that_depends_on_the_content_is_an_error_never_a_guess():
    from mintdim.sources.chat import ChatRenderer

    long_first = (
        "{% for m in messages %}{% if m.content | length > 4 %}<|long|>{% endif %}{{ m.content }}<|end|>"
        "{% endfor %}"
    )
    opts = {"messages": "messages", "role": "role", "content": "content"}
    r = ChatRenderer(long_first, {}, opts, ["assistant"], ["<|end|>"])
    rec = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a longer answer"}]
    }
    assert r.render(rec, "x.jsonl", 2) == "hi<|end|><|long|>a longer answer<|end|>"
    with pytest.raises(E.ChatTemplateError) as err:
        r.render_with_spans(rec, "x.jsonl", 2)
    assert "cannot be located exactly" in err.value.render("en") and "Line: 2" in err.value.render("en")
    # the content written as is and again inside JSON: not one span
    twice = "{% for m in messages %}{{ m.content }}<|end|>{{ m | tojson }}{% endfor %}"
    r = ChatRenderer(twice, {}, opts, ["assistant"], ["<|end|>"])
    with pytest.raises(E.ChatTemplateError) as err:
        r.render_with_spans(rec, "x.jsonl", 3)
    assert "cannot be located exactly" in err.value.render("en") and "Line: 3" in err.value.render("en")
