"""Conversations as people write them: no message vanishes, tool calling, reasoning traces.

Rendered text and ids are held equal to transformers' apply_chat_template on the same messages after
MintDim's own preparation rules (a tool-call message without text gets content ""; tool-call
arguments given as a JSON string are parsed into an object); masks are held equal to spans computed
here from each template's own structure (Qwen3: <|im_start|>role\\n ... <|im_end|>; Llama-3.1:
header, body, <|eot_id|>) and the tokenizer's offsets (a token is trained when the character it
starts at lies in a span).

CI uses the committed Qwen3-template directory data/tokenizers/qwen3-template-bpe; the real Qwen3
and Llama-3.1 directories (and Llama-3.1-Instruct's tool-calling template) are used when
../assets beside the repository (MINTDIM_ASSETS; benchmarks/fetch_data.sh fetches them) holds them.
"""

from __future__ import annotations

import copy
import json
import os
import random

import pytest
from conftest import DATA, build_in, read_json, read_jsonl, read_mask, run_cli, write_jsonl

from mintdim import errors as E
from mintdim.config import resolve

transformers = pytest.importorskip("transformers")

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")
CHATS = os.path.join(DATA, "chat", "gsm8k_chat.jsonl")
from conftest import ASSETS  # noqa: E402
from test_chat import hf, ref  # noqa: E402,F401  (ref: the Qwen3 reference tokenizer, a fixture)

LLAMA_PAD = "<|reserved_special_token_0|>"


def _real(*parts):
    path = os.path.join(ASSETS, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} not present")
    return path


def llama_tool_template() -> str:
    """Llama-3.1-8B-Instruct's own chat template (tool calling), which the npm Llama-3.1 directory
    lacks: fetched beside the assets from PyPI ldp==0.43.0 (ldp/nn/chat_templates/
    llama3.1_chat_template_hf.jinja); not committed (Llama 3.1 Community License)."""
    with open(_real("hf", "llama3_1_tool_use", "chat_template.jinja"), encoding="utf-8") as f:
        return f.read()


def renderer(tok_dir=TOK_DIR, train_on=None, template=None, **opts):
    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", tok_dir)
    options = {"messages": "messages", "role": "role", "content": "content", **opts}
    return ChatRenderer(
        template or tok.chat_template, tok.special_tokens, options, train_on, tok.added_special()
    )


def chat_config(files, tok_dir=TOK_DIR, chat=None, train_on=None, out="out", **tok):
    cfg = {
        "source": {"files": list(files), "chat": {} if chat is None else chat},
        "tokenizer": {"hf_dir": {"path": tok_dir, **tok}},
        "units": {"sizes": [[256, 1024, 4096, 16384]], "build_batch": [16]},
        "output": {"dir": out, "samples_per_shard": [40]},
    }
    if train_on is not None:
        cfg["source"]["train_on"] = train_on
    return cfg


def read_tokens(out, row, dtype):
    import numpy as np

    shard = np.fromfile(os.path.join(out, row["shard_path"]), dtype=np.dtype(dtype).newbyteorder("<"))
    return shard.reshape(-1, row["unit_size"])[row["shard_row"]][: row["token_count"]]


def token_mask(tok, text, spans):
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], [any(a <= s < b for a, b in spans) for s, _ in enc["offset_mapping"]]


def prepared(messages):
    """MintDim's preparation rules, applied here before transformers: a tool-call message with content
    null or absent gets content ""; arguments given as a JSON string become the object it holds."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None}
        if "tool_calls" in m:
            m.setdefault("content", "")
            calls = []
            for c in m["tool_calls"]:
                f = dict(c["function"])
                if isinstance(f["arguments"], str):
                    f["arguments"] = json.loads(f["arguments"])
                calls.append({**c, "function": f})
            m["tool_calls"] = calls
        out.append(m)
    return out


def check_build(tmp_path, ref_tok, rows, spans_of, cfg, template=None):
    """Build `rows` with `cfg`; every sample's ids equal apply_chat_template and its mask equals
    spans_of(text, messages); returns the build's stats."""
    res = build_in(tmp_path, cfg, cores=2)
    out = str(tmp_path / cfg["output"]["dir"])
    dtype = read_json(os.path.join(out, "manifest.json"))["token_dtype"]
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    assert len(index) == len(rows)
    total = 0
    for row in index:
        rec = rows[row["sample_id"]]
        msgs = prepared(rec["messages"])
        kw = {"tools": rec.get("tools"), **rec.get("chat_template_kwargs", {})}
        if template is not None:
            kw["chat_template"] = template
        text = ref_tok.apply_chat_template(msgs, tokenize=False, **kw)
        ids = ref_tok.apply_chat_template(msgs, **kw)["input_ids"]
        assert read_tokens(out, row, dtype).tolist() == ids, row["sample_id"]
        if spans_of is not None:
            got_ids, want = token_mask(ref_tok, text, spans_of(text, msgs))
            assert got_ids == ids
            assert read_mask(out, row)[: row["token_count"]].tolist() == want, row["sample_id"]
            assert row["trained_tokens"] == sum(want)
            total += sum(want)
    stats = res.outputs[0].stats
    if spans_of is not None:
        assert stats["trained_tokens"] == total
    return stats


# --- 1. nothing vanishes ----------------------------------------------------------------------------


def gsm8k_openai(n):
    return [
        {"messages": [{"role": "system", "content": r["system"]}] + r["messages"]}
        for r in read_jsonl(CHATS)[:n]
    ]


def test_a_role_the_template_skips_is_an_error_naming_file_line_message_and_role(tmp_path, ref):
    """The issue's case: OpenAI shape, no roles map, line 51 with role "tool_user": Qwen3's template
    skips roles it does not know, and the build used to finish with 85 fewer tokens."""
    rows = gsm8k_openai(60)
    rows[50]["messages"][1]["role"] = "tool_user"
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    cfg = chat_config([src], train_on=[["assistant"]])
    cfg["lang"] = "both"
    with pytest.raises(E.ChatTemplateError) as err:
        build_in(tmp_path, cfg, cores=1)
    en, vi = err.value.render("en"), err.value.render("vi")
    assert f"File: {src}" in en and "Line: 51" in en and "Message: 1 (role tool_user)" in en
    assert "not in the rendered conversation" in en and "assistant, system, tool, user" in en
    assert "source.chat.roles" in en and "source.chat.drop_roles" in en
    assert "Dòng: 51" in vi and "Tin nhắn: 1 (role tool_user)" in vi and "source.chat.drop_roles" in vi
    assert not os.path.exists(tmp_path / "out" / "stats.json")
    # the same without masks, and through the CLI: exit 1, the error printed
    res = run_cli(tmp_path, "build", _yaml(tmp_path, chat_config([src], out="out2")))
    assert res.returncode != 0 and "Line: 51" in res.stdout + res.stderr


def _yaml(tmp_path, cfg):
    import yaml

    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def test_a_misspelled_assistant_loses_a_trained_answer_no_more():
    r = renderer(train_on=["assistant"])
    rec = {"messages": [{"role": "user", "content": "2+2?"}, {"role": "assitant", "content": "4"}]}
    for fn in (r.render, r.render_with_spans):
        with pytest.raises(E.ChatTemplateError) as err:
            fn(rec, "data/c.jsonl", 7)
        en = err.value.render("en")
        assert "Line: 7" in en and "Message: 1 (role assitant)" in en, en


def test_drop_roles_lets_the_template_drop_a_role_and_the_rest_is_checked(tmp_path, ref):
    rows = gsm8k_openai(20)
    for k in (3, 11):
        rows[k]["messages"].insert(2, {"role": "tool_user", "content": "an aside the template skips"})
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    cfg = chat_config([src], chat={"drop_roles": ["tool_user"]}, train_on=[["assistant"]])
    stats = check_build(tmp_path, ref, rows, None, cfg)
    assert stats["total_samples"] == 20
    # the other messages are still checked: an unknown role not listed is an error
    r = renderer(drop_roles=["tool_user"])
    bad = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool_user", "content": "x"},
            {"role": "robot", "content": "beep"},
        ]
    }
    with pytest.raises(E.ChatTemplateError) as err:
        r.render(bad, "f", 2)
    assert "Message: 2 (role robot)" in err.value.render("en")


def test_the_check_reads_content_as_templates_write_it():
    """Found in order: trimmed content (Llama-3.x), earlier turns' reasoning dropped by design (Qwen3),
    JSON-escaped tool results (Llama-3.1's tojson), an empty message (nothing to find)."""
    trim = "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}<|end|>{% endfor %}"
    r = renderer(template=trim)
    assert (
        r.render(
            {"messages": [{"role": "user", "content": "  hi \n"}, {"role": "assistant", "content": ""}]},
            "f",
            1,
        )
        == "<|user|>hi<|end|><|assistant|><|end|>"
    )
    escaped = "{% for m in messages %}<|{{ m.role }}|>{{ m.content | tojson }}<|end|>{% endfor %}"
    r = renderer(template=escaped)
    rec = {
        "messages": [{"role": "tool", "content": 'say "hi"\n\\o/'}, {"role": "assistant", "content": "ok"}]
    }
    assert r.render(rec, "f", 1) == '<|tool|>"say \\"hi\\"\\n\\\\o/"<|end|><|assistant|>"ok"<|end|>'
    r = renderer()
    rec = {
        "messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": "<think>\nlong thought\n</think>\n\nBecause."},
            {"role": "user", "content": "Sure?"},
            {"role": "assistant", "content": "Yes."},
        ]
    }
    assert "long thought" not in r.render(rec, "f", 1)
    # out of order is not found: a template that writes the messages backwards
    backwards = "{% for m in messages|reverse %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    r = renderer(template=backwards)
    with pytest.raises(E.ChatTemplateError) as err:
        r.render(
            {"messages": [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]},
            "f",
            1,
        )
    assert "Message: 1 (role assistant)" in err.value.render("en")


def test_a_dropped_system_prompt_key_and_the_whole_error_in_both_languages():
    no_system = (
        "{% for m in messages %}{% if m.role != 'system' %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endif %}"
        "{% endfor %}"
    )
    r = renderer(template=no_system, system="sys")
    with pytest.raises(E.ChatTemplateError) as err:
        r.render({"sys": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}, "data/c.jsonl", 3)
    assert err.value.render("en") == (
        "ChatTemplateError: A message is missing from the rendered conversation: the chat template dropped "
        "it.\n\nFile: data/c.jsonl\n\nLine: 3\n\nMessage: system prompt 'sys' (role system)\n\n"
        "Problem: its content is not in the rendered conversation (the template names the roles system); "
        "MintDim never drops a message silently\n\n"
        "Fix: map the role to one the template renders (source.chat.roles), or, to let the template drop "
        "this role's messages, list it: source.chat.drop_roles: [system]"
    )
    assert err.value.render("vi") == (
        "ChatTemplateError: Một tin nhắn bị thiếu trong hội thoại đã render: chat template đã bỏ nó.\n\n"
        "File: data/c.jsonl\n\nDòng: 3\n\nTin nhắn: system prompt 'sys' (role system)\n\n"
        "Vấn đề: nội dung của tin nhắn không có trong hội thoại đã render (template có các role system); "
        "MintDim không bao giờ âm thầm bỏ một tin nhắn\n\n"
        "Cách sửa: ánh xạ role sang một role mà template render (source.chat.roles), hoặc, để template bỏ "
        "các tin nhắn của role này, liệt kê nó: source.chat.drop_roles: [system]"
    )


def test_tool_calls_the_template_drops_are_an_error():
    """Llama-3.1's npm directory carries the plain Llama-3 template: it renders a tool call as an
    empty assistant turn (transformers too). MintDim names the call instead of losing it."""
    plain = (
        "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
        "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
    )
    r = renderer(template=plain)
    rec = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Hanoi"}},
                    }
                ],
            },
        ]
    }
    with pytest.raises(E.ChatTemplateError) as err:
        r.render(rec, "f", 4)
    en = err.value.render("en")
    assert "Message: 1 (role assistant)" in en and "get_weather" in en, en
    assert "get_weather" in err.value.render("vi")


# --- 2. tool calling ---------------------------------------------------------------------------------


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search the knowledge base",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order by id",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    },
]
CITIES = ["Hanoi", "Hồ Chí Minh", "Zürich", "東京", "São Paulo", "New York"]
QUESTIONS = [
    "What's the weather in {city}?",
    'Find docs about "{q}" please.',
    "What is {a} + {b}?",
    "Where is my order {o}?",
    "Compare the weather in {city} and {city2}, then add {a} and {b}.",
]
PREAMBLES = ["Let me check that.", "I'll look it up.\n", "Calling the tools now:", "Một chút nhé…"]
ANSWERS = [
    "It is {a} degrees in {city}.",
    'Here is what I found:\n- item one\n- item "two"',
    "The sum is {a}.",
    "Your order is on its way 🚚",
    "Done.\n\nAnything else?",
]


def _args(rng, name):
    if name == "get_weather":
        return {"city": rng.choice(CITIES), **({"unit": rng.choice("CF")} if rng.random() < 0.5 else {})}
    if name == "search_docs":
        return {
            "query": rng.choice(["chat templates", 'loss "masks"', "tokens\nper second"]),
            **({"limit": rng.randint(1, 9)} if rng.random() < 0.5 else {}),
        }
    if name == "add":
        return {"a": rng.randint(-50, 99), "b": round(rng.uniform(0, 10), 2)}
    return {"order_id": f"A-{rng.randint(1000, 9999)}"}


def _result(rng, name, args):
    if name == "get_weather":
        return json.dumps(
            {"city": args["city"], "temp": rng.randint(-5, 35), "sky": "clear"}, ensure_ascii=False
        )
    if name == "add":
        return str(args["a"] + args["b"])
    if name == "search_docs":
        return rng.choice(
            [
                '[{"title": "Masks", "snippet": "a token is \\"trained\\" when..."}]',
                "No results.",
                "Found 2 pages:\n1. Templates\n2. Tokens",
            ]
        )
    return json.dumps({"order": args["order_id"], "status": rng.choice(["shipped", "in transit"])})


def _fill(rng, text):
    return text.format(
        city=rng.choice(CITIES),
        city2=rng.choice(CITIES),
        q=rng.choice(["jinja", "qwen"]),
        a=rng.randint(1, 40),
        b=rng.randint(1, 40),
        o=f"A-{rng.randint(1000, 9999)}",
    )


def agent_conversations(n, seed, parallel=True, text_with_calls=True, reasoning=False):
    """n generated agent conversations: optional system prompt, one or two user turns, each with 0-3
    steps of tool calls (parallel: 1-3 calls a step) and their results, then an answer. Arguments as
    an object or a JSON string; a call's content null, absent, "" or (text_with_calls) some text."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        msgs = [{"role": "system", "content": "You are a helpful agent."}] if rng.random() < 0.4 else []
        for turn in range(rng.choice([1, 1, 2])):
            msgs.append({"role": "user", "content": _fill(rng, rng.choice(QUESTIONS))})
            for step in range(rng.choice([0, 1, 1, 2, 3])):
                calls = []
                for c in range(rng.choice([1, 1, 2, 3]) if parallel else 1):
                    tool = rng.choice(TOOLS)["function"]["name"]
                    args = _args(rng, tool)
                    calls.append(
                        {
                            "id": f"call_{k}_{turn}_{step}_{c}",
                            "type": "function",
                            "function": {
                                "name": tool,
                                "arguments": json.dumps(args, ensure_ascii=False)
                                if rng.random() < 0.5
                                else args,
                            },
                        }
                    )
                m = {"role": "assistant", "tool_calls": calls}
                r = rng.random()
                if r < 0.3:
                    m["content"] = None
                elif r < 0.6 or not text_with_calls:
                    if r >= 0.45:
                        m["content"] = ""
                else:
                    m["content"] = rng.choice(PREAMBLES)
                if reasoning and rng.random() < 0.7:
                    m["reasoning_content"] = f"I should call {calls[0]['function']['name']} first."
                msgs.append(m)
                for call in calls:
                    args = call["function"]["arguments"]
                    args = json.loads(args) if isinstance(args, str) else args
                    msgs.append(
                        {
                            "role": "tool",
                            "tool_call_id": call["id"],
                            "name": call["function"]["name"],
                            "content": _result(rng, call["function"]["name"], args),
                        }
                    )
            answer = {"role": "assistant", "content": _fill(rng, rng.choice(ANSWERS))}
            if reasoning and rng.random() < 0.7:
                answer["reasoning_content"] = "\nThe results are in; now I answer.\n"
            msgs.append(answer)
        rows.append({"messages": msgs, "tools": rng.sample(TOOLS, rng.randint(2, 4))})
    return rows


def qwen3_turn_spans(text, messages, trained_roles=("assistant",), reasoning="train"):
    """Qwen3: each assistant message is one <|im_start|>assistant turn, in order; its trained span runs
    from the start of its body to the end of <|im_end|>: after the <think> block when the block is
    empty or reasoning is masked, from <think> when the block holds reasoning and reasoning is trained.
    Tool results: the text between <tool_response>\\n and \\n</tool_response>, in order."""
    spans = []
    heads, at = [], text.find("<|im_start|>assistant\n")
    while at >= 0:
        heads.append(at + len("<|im_start|>assistant\n"))
        at = text.find("<|im_start|>assistant\n", at + 1)
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert len(heads) == len(assistants)
    if "assistant" in trained_roles:
        for head in heads:
            end = text.index("<|im_end|>", head)
            start = head
            if text.startswith("<think>\n", head):
                close = text.index("\n</think>\n\n", head) + len("\n</think>\n\n")
                has_reasoning = text[head + len("<think>\n") : close - len("\n</think>\n\n")].strip() != ""
                if not has_reasoning or reasoning == "mask":
                    start = close
            spans.append((start, end + len("<|im_end|>")))
    if "tool" in trained_roles:
        at = text.find("<tool_response>\n")
        while at >= 0:
            a = at + len("<tool_response>\n")
            spans.append((a, text.index("\n</tool_response>", a)))
            at = text.find("<tool_response>\n", a)
    return spans


def llama3_turn_spans(text, messages, trained_roles=("assistant",)):
    """Llama-3.1: every assistant turn's body (trimmed content, or the tool call's JSON) and <|eot_id|>;
    a tool result (role ipython) is written as a JSON string: the text inside its quotes."""
    spans = []
    for role in trained_roles:
        head = {
            "assistant": "<|start_header_id|>assistant<|end_header_id|>\n\n",
            "tool": "<|start_header_id|>ipython<|end_header_id|>\n\n",
        }[role]
        at = text.find(head)
        while at >= 0:
            a = at + len(head)
            end = text.index("<|eot_id|>", a)
            spans.append((a, end + len("<|eot_id|>")) if role == "assistant" else (a + 1, end - 1))
            at = text.find(head, a)
    return spans


def test_tool_call_with_null_content_renders_as_transformers(ref):
    """The issue's case: an assistant tool call with content null (OpenAI's shape) raised
    'dict object' has no attribute 'content'. Content null or absent is rendered as ""; arguments
    as an object or a JSON string."""
    r = renderer(extras=["tools"], train_on=["assistant"])
    base = [
        {"role": "user", "content": "weather in Hanoi?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Hanoi"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": '{"temp": 31}'},
        {"role": "assistant", "content": "31 degrees."},
    ]
    absent = copy.deepcopy(base)
    del absent[1]["content"]
    as_object = copy.deepcopy(base)
    as_object[1]["tool_calls"][0]["function"]["arguments"] = {"city": "Hanoi"}
    for msgs in (base, absent, as_object):
        rec = {"messages": msgs, "tools": TOOLS[:1]}
        want = ref.apply_chat_template(prepared(msgs), tools=TOOLS[:1], tokenize=False)
        assert r.render(rec, "f", 1) == want
        text, spans = r.render_with_spans(rec, "f", 1)
        assert text == want
        assert [text[a:b] for a, b, _, _ in spans] == [
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Hanoi"}}\n</tool_call>',
            "<|im_end|>",
            "31 degrees.",
            "<|im_end|>",
        ]
    with pytest.raises(Exception):  # noqa: B017  transformers itself cannot render content null with Qwen3's template
        ref.apply_chat_template(base, tools=TOOLS[:1], tokenize=False)


def test_bad_tool_calls_are_data_errors_with_message_index():
    r = renderer(extras=["tools"])
    user = {"role": "user", "content": "hi"}
    cases = [
        ("oops", "'tool_calls' must be a list of tool calls, found JSON type string"),
        (
            ["add"],
            "a tool call must be a JSON object with a function {name, arguments}, found JSON type string",
        ),
        ([{"function": {"arguments": {}}}], "a tool call's function has no name (a string)"),
        (
            [{"function": {"name": "add", "arguments": "{not json"}}],
            "arguments of tool call 'add' must be a JSON object or a string holding one",
        ),
        (
            [{"function": {"name": "add", "arguments": "[1, 2]"}}],
            "arguments of tool call 'add' must be a JSON object",
        ),
    ]
    for calls, needle in cases:
        rec = {"messages": [user, {"role": "assistant", "content": None, "tool_calls": calls}]}
        with pytest.raises(E.SampleSchemaError) as err:
            r.render(rec, "data/c.jsonl", 9)
        en, vi = err.value.render("en"), err.value.render("vi")
        assert "Line: 9" in en and "Message: 1" in en and needle in en, en
        assert "Dòng: 9" in vi and "Tin nhắn: 1" in vi
    # the flat shape {name, arguments} is read as {"type": "function", "function": {...}}
    flat = {"messages": [user, {"role": "assistant", "tool_calls": [{"name": "add", "arguments": {"a": 1}}]}]}
    nested = {
        "messages": [
            user,
            {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}],
            },
        ]
    }
    assert r.render(flat, "f", 1) == r.render(nested, "f", 1)


def test_a_bad_tool_call_reads_the_same_in_both_languages():
    r = renderer()
    rec = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "add", "arguments": "[1]"}}]},
        ],
        "chat_template_kwargs": {"k": 1},
    }
    with pytest.raises(E.SampleSchemaError) as err:
        r.render(rec, "data/c.jsonl", 4)
    head_en, head_vi = (
        "SampleSchemaError: JSONL conversation is not valid.",
        "SampleSchemaError: Hội thoại JSONL không hợp lệ.",
    )
    assert err.value.render("en") == (
        f"{head_en}\n\nFile: data/c.jsonl\n\nLine: 4\n\nMessage: 1\n\nProblem: "
        "arguments of tool call 'add' must be a JSON object or a string holding one, "
        "found a string holding JSON type array"
    )
    assert err.value.render("vi") == (
        f"{head_vi}\n\nFile: data/c.jsonl\n\nDòng: 4\n\nTin nhắn: 1\n\nVấn đề: "
        "arguments của tool call 'add' phải là JSON object hoặc string chứa JSON object, "
        "hiện có: string chứa kiểu JSON array"
    )
    rec = {
        "messages": [{"role": "user", "content": "hi"}],
        "chat_template_kwargs": {"messages": [], "tools": []},
    }
    with pytest.raises(E.SampleSchemaError) as err:
        r.render(rec, "data/c.jsonl", 4)
    assert err.value.render("en") == (
        f"{head_en}\n\nFile: data/c.jsonl\n\nLine: 4\n\nProblem: "
        "'chat_template_kwargs' may not set messages, tools: MintDim passes messages, "
        "tools, documents and add_generation_prompt itself"
    )
    assert err.value.render("vi") == (
        f"{head_vi}\n\nFile: data/c.jsonl\n\nDòng: 4\n\nVấn đề: "
        "'chat_template_kwargs' không được đặt messages, tools: MintDim tự truyền "
        "messages, tools, documents và add_generation_prompt"
    )


def test_located_spans_of_agent_conversations_equal_the_templates_structure():
    """render_with_spans finds tool-call turns, reasoning and tool results where Qwen3's template puts
    them; also one message at a time, as for a record whose rendering holds the character the
    one-extra-render reading marks with (U+F0000, here in the system prompt)."""
    r = renderer(train_on=["assistant", "tool"], extras=["tools"], system="system")
    rows = agent_conversations(80, seed=11, reasoning=True) + REASONING_ROWS
    rows += [
        dict(x, system="Mark \U000f0000.")
        for x in rows[:40]
        if all(m["role"] != "system" for m in x["messages"])
    ]
    checked = 0
    for line, row in enumerate(rows, 1):
        text, spans = r.render_with_spans(row, "a.jsonl", line)
        want = qwen3_turn_spans(text, r.messages(row)[0], ("assistant", "tool"))
        got = {i for a, b, *_ in spans for i in range(a, b)}
        assert got == {i for a, b in want for i in range(a, b)}, (line, row)
        checked += len(want)
    assert checked > 600


@pytest.mark.parametrize("train_on", [["assistant"], ["assistant", "tool"], ["tool"]])
def test_agent_conversations_equal_transformers_qwen3_template(tmp_path, ref, train_on):
    rows = agent_conversations(110, seed=7 + len(train_on))
    src = write_jsonl(tmp_path / "agents.jsonl", rows)
    cfg = chat_config([src], chat={"extras": ["tools"]}, train_on=[train_on])
    stats = check_build(tmp_path, ref, rows, lambda t, m: qwen3_turn_spans(t, m, train_on), cfg)
    assert set(stats["trained_tokens_by_role"]) == set(train_on)
    calls = sum(len(m.get("tool_calls", [])) for r in rows for m in r["messages"])
    parallel = sum(len(m.get("tool_calls", [])) > 1 for r in rows for m in r["messages"])
    assert calls > 150 and parallel > 20
    if train_on == ["assistant"]:
        res = run_cli(tmp_path, "verify", "out", "--source", "--all")
        assert res.returncode == 0, res.stdout + res.stderr


def test_real_agent_conversations_equal_transformers_qwen3(tmp_path):
    tok_dir = _real("hf", "qwen3")
    rows = agent_conversations(220, seed=21)
    src = write_jsonl(tmp_path / "agents.jsonl", rows)
    cfg = chat_config([src], tok_dir, chat={"extras": ["tools"]}, train_on=[["assistant"]])
    check_build(tmp_path, hf(tok_dir), rows, qwen3_turn_spans, cfg)


@pytest.mark.parametrize("train_on", [["assistant"], ["tool"]])
def test_real_agent_conversations_equal_transformers_llama3_1(tmp_path, train_on):
    """Llama-3.1's tool template: one call per message (it raises on parallel calls), the content of a
    tool-call message is not written (so a call carries no text), tool results written with tojson."""
    tok_dir, template = _real("hf", "llama3_1"), llama_tool_template()
    path = tmp_path / "llama31_tools.jinja"
    path.write_text(template, encoding="utf-8")
    rows = agent_conversations(220, seed=5, parallel=False, text_with_calls=False)
    src = write_jsonl(tmp_path / "agents.jsonl", rows)
    cfg = chat_config(
        [src],
        tok_dir,
        chat={"extras": ["tools"]},
        train_on=[train_on],
        pad_token=LLAMA_PAD,
        chat_template=str(path),
    )
    check_build(tmp_path, hf(tok_dir), rows, lambda t, m: llama3_turn_spans(t, m, train_on), cfg, template)


def test_real_llama3_1_parallel_calls_and_text_with_calls_are_errors():
    tok_dir, template = _real("hf", "llama3_1"), llama_tool_template()
    r = renderer(tok_dir, template=template, extras=["tools"])
    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    user = {"role": "user", "content": "add"}
    with pytest.raises(E.ChatTemplateError) as err:
        r.render(
            {"messages": [user, {"role": "assistant", "tool_calls": [call, call]}], "tools": TOOLS}, "f", 3
        )
    assert "only supports single tool-calls" in err.value.render("en")
    with pytest.raises(E.ChatTemplateError) as err:  # the template writes the call, not the text beside it
        r.render(
            {
                "messages": [user, {"role": "assistant", "content": "Adding.", "tool_calls": [call]}],
                "tools": TOOLS,
            },
            "f",
            3,
        )
    assert "Message: 1 (role assistant)" in err.value.render("en")


# --- 3. reasoning traces -----------------------------------------------------------------------------


REASONING_ROWS = [
    # two assistant turns after the last user query, both with reasoning: both blocks are rendered
    {
        "messages": [
            {"role": "user", "content": "What is 17 * 3?"},
            {
                "role": "assistant",
                "reasoning_content": "Use the tool.",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "add", "arguments": {"a": 17, "b": 34}}}
                ],
            },
            {"role": "tool", "content": "51"},
            {"role": "assistant", "reasoning_content": "\nThe tool says 51.\n", "content": "It is 51."},
        ],
        "tools": TOOLS[2:3],
    },
    # two answers with reasoning, a user turn between: the first block is dropped by the template
    {
        "messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "reasoning_content": "first thought", "content": "Because."},
            {"role": "user", "content": "Sure?"},
            {"role": "assistant", "reasoning_content": "second thought", "content": "Yes."},
        ]
    },
    # reasoning inside the content, under the `thinking` alias, empty, and none
    {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "3+3?"},
            {"role": "assistant", "thinking": "add", "content": "6"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "reasoning_content": "", "content": "hey"},
        ]
    },
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
]


@pytest.mark.parametrize("policy", ["train", "mask"])
def test_reasoning_train_or_mask_equals_independent_spans(tmp_path, ref, policy):
    rows = REASONING_ROWS + agent_conversations(40, seed=3, reasoning=True)
    src = write_jsonl(tmp_path / "r.jsonl", rows)
    chat = {"extras": ["tools"]} if policy == "train" else {"extras": ["tools"], "reasoning": "mask"}
    cfg = chat_config([src], chat=chat, train_on=[["assistant"]])
    check_build(tmp_path, ref, rows, lambda t, m: qwen3_turn_spans(t, m, reasoning=policy), cfg)
    r = renderer(
        train_on=["assistant"], extras=["tools"], **({} if policy == "train" else {"reasoning": "mask"})
    )
    text, spans = r.render_with_spans(REASONING_ROWS[0], "f", 1)
    got = [text[a:b] for a, b, _, _ in spans]
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 17, "b": 34}}\n</tool_call>'
    if policy == "train":  # the whole block, its opening tag included, in both turns
        assert got == [
            "<think>\nUse the tool.\n</think>\n\n" + call,
            "<|im_end|>",
            "<think>\nThe tool says 51.\n</think>\n\nIt is 51.",
            "<|im_end|>",
        ]
    else:
        assert got == [call, "<|im_end|>", "It is 51.", "<|im_end|>"]
    text, spans = r.render_with_spans(REASONING_ROWS[1], "f", 1)
    got = [text[a:b] for a, b, _, _ in spans]
    assert "first thought" not in text and "second thought" in text
    assert got == [
        "Because.",
        "<|im_end|>",
        "<think>\nsecond thought\n</think>\n\nYes." if policy == "train" else "Yes.",
        "<|im_end|>",
    ]
    text, spans = r.render_with_spans(REASONING_ROWS[5], "f", 1)  # the inserted empty block: never trained
    assert [text[a:b] for a, b, _, _ in spans] == ["hello", "<|im_end|>"]


def test_real_reasoning_qwen3_two_turns_equal_transformers(tmp_path):
    tok_dir = _real("hf", "qwen3")
    rows = REASONING_ROWS + agent_conversations(60, seed=4, reasoning=True)
    src = write_jsonl(tmp_path / "r.jsonl", rows)
    cfg = chat_config([src], tok_dir, chat={"extras": ["tools"]}, train_on=[["assistant"]])
    check_build(tmp_path, hf(tok_dir), rows, qwen3_turn_spans, cfg)


KWARGS_TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if enable_thinking is defined and enable_thinking is false %}<|no_think|>{% endif %}"
    "{% if style is defined %}<|style|>{{ style }}{% endif %}"
)


def test_chat_template_kwargs_per_record_and_config_wide(tmp_path, ref):
    path = tmp_path / "kw.jinja"
    path.write_text(KWARGS_TEMPLATE, encoding="utf-8")
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    rows = [
        {"messages": msgs},
        {"messages": msgs, "chat_template_kwargs": {"enable_thinking": True}},
        {"messages": msgs, "chat_template_kwargs": {"style": "terse"}},
    ]
    src = write_jsonl(tmp_path / "k.jsonl", rows)
    cfg = chat_config(
        [src], chat={"chat_template_kwargs": {"enable_thinking": False}}, chat_template=str(path)
    )
    build_in(tmp_path, cfg, cores=1)
    out = str(tmp_path / "out")
    dtype = read_json(os.path.join(out, "manifest.json"))["token_dtype"]
    wants = [
        {"enable_thinking": False},
        {"enable_thinking": True},
        {"enable_thinking": False, "style": "terse"},
    ]
    texts = set()
    for row in read_jsonl(os.path.join(out, "sample_index.jsonl")):
        kw = wants[row["sample_id"]]
        texts.add(ref.apply_chat_template(msgs, chat_template=KWARGS_TEMPLATE, tokenize=False, **kw))
        assert (
            read_tokens(out, row, dtype).tolist()
            == ref.apply_chat_template(msgs, chat_template=KWARGS_TEMPLATE, **kw)["input_ids"]
        )
    assert len(texts) == 3
    r = renderer(template=KWARGS_TEMPLATE)
    for bad, needle in (
        ({"chat_template_kwargs": ["x"]}, "'chat_template_kwargs' must be a JSON object"),
        ({"chat_template_kwargs": {"tools": []}}, "'chat_template_kwargs' may not set tools"),
    ):
        with pytest.raises(E.SampleSchemaError) as err:
            r.render({"messages": msgs, **bad}, "f", 5)
        assert needle in err.value.render("en") and "Line: 5" in err.value.render("en"), err.value.render(
            "en"
        )


def test_real_llama3_1_date_string_from_chat_template_kwargs(tmp_path):
    tok_dir, template = _real("hf", "llama3_1"), llama_tool_template()
    path = tmp_path / "llama31_tools.jinja"
    path.write_text(template, encoding="utf-8")
    rows = [
        {
            "messages": [
                {"role": "user", "content": "What day is it?"},
                {"role": "assistant", "content": "Monday."},
            ],
            "chat_template_kwargs": {"date_string": "02 Dec 2024"},
        },
        {"messages": [{"role": "user", "content": "And now?"}, {"role": "assistant", "content": "Tuesday."}]},
    ]
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    cfg = chat_config(
        [src],
        tok_dir,
        chat={"chat_template_kwargs": {"date_string": "01 Jan 2025"}},
        train_on=[["assistant"]],
        pad_token=LLAMA_PAD,
        chat_template=str(path),
    )
    want = copy.deepcopy(rows)
    want[1]["chat_template_kwargs"] = {"date_string": "01 Jan 2025"}
    check_build(tmp_path, hf(tok_dir), want, llama3_turn_spans, cfg, template)


# --- config ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chat, needle",
    [
        ({"drop_roles": "tool_user"}, "source.chat.drop_roles must be a list of roles (strings)"),
        ({"drop_roles": [""]}, "source.chat.drop_roles must be a list of roles (strings)"),
        ({"reasoning": "drop"}, "source.chat.reasoning must be train or mask, got 'drop'"),
        ({"chat_template_kwargs": ["enable_thinking"]}, "source.chat.chat_template_kwargs must be a mapping"),
        (
            {"chat_template_kwargs": {"messages": []}},
            "source.chat.chat_template_kwargs may not set ['messages']",
        ),
    ],
)
def test_new_chat_keys_are_checked(chat, needle):
    cfg = chat_config(["a.jsonl"], chat=chat)
    with pytest.raises(E.PipelineValidationError) as err:
        resolve(cfg)
    assert needle in err.value.render("en"), err.value.render("en")
    assert "source.chat" in err.value.render("vi")


def test_new_chat_keys_resolve_and_stay_out_of_the_build_id_when_unset():
    plain = resolve(chat_config(["a.jsonl"]))
    cfg = chat_config(
        ["a.jsonl"],
        chat={
            "drop_roles": ["tool_user"],
            "reasoning": "mask",
            "chat_template_kwargs": {"enable_thinking": False},
        },
    )
    f = resolve(cfg).files[0]
    assert f.chat["drop_roles"] == ["tool_user"] and f.chat["reasoning"] == "mask"
    assert f.chat["chat_template_kwargs"] == {"enable_thinking": False}
    assert plain.files[0].chat == {"messages": "messages", "role": "role", "content": "content"}


def test_the_docs_table_of_message_shapes_names_tests_that_exist():
    """docs/chat.md's table: each shape the issue lists, each with tests that are defined here."""
    import re

    from conftest import REPO

    with open(os.path.join(REPO, "docs", "chat.md"), encoding="utf-8") as f:
        doc = f.read()
    table = doc[doc.index("## Message shapes") : doc.index("## Where a trained message is")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| shape")]
    shapes = [row.split("|")[1].strip() for row in rows]
    for shape in ("plain", "system", "multi-turn", "tools", "parallel tool calls", "reasoning", "images"):
        assert shape in shapes
    defined = set()
    for name in ("test_chat.py", "test_chat_agents.py"):
        with open(os.path.join(REPO, "tests", name), encoding="utf-8") as f:
            defined |= set(re.findall(r"^def (test_\w+)", f.read(), re.M))
    for row in rows:
        named = re.findall(r"`(test_\w+)`", row)
        assert named and set(named) <= defined, (row, set(named) - defined)
