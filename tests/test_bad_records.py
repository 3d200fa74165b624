"""source.on_bad_record / source.max_skipped: what a build does with records it cannot turn into a sample.

`error` (the default) fails as the spec says, naming the first bad record, and also counts every bad record
of the file and lists the first ten by file:line with their class. `skip` leaves them out: they get no
sample_id, are listed in skipped_index.jsonl and counted in stats.json, the console and `inspect`; `verify`
checks the counts. More than max_skipped in a file, or a file of nothing but bad records, fails.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from conftest import (
    ASSETS,
    DATA,
    SHAREGPT_CHAT,
    SP_MODEL,
    basic_config,
    build_in,
    gsm8k_rows,
    read_json,
    read_jsonl,
    run_cli,
    tree_bytes,
    write_jsonl,
)

from mintdim import errors as E

BAD = {5: b'{"prompt": "a", "response": ', 13: b'{"prompt": "b"}', 26: b'["not", "an", "object"]'}


def dirty_file(path, n: int = 40, bad=BAD) -> tuple[str, list[int]]:
    """n lines of GSM8K pairs, with the lines of `bad` (1-based) replaced: (path, good lines)."""
    rows = gsm8k_rows(0, n)
    lines = [bad.get(i + 1, r) for i, r in enumerate(rows)]
    return write_jsonl(path, lines), [i + 1 for i in range(n) if i + 1 not in bad]


def skip_config(src, **source):
    cfg = basic_config([src], sizes=[[64, 128, 256, 512]])
    cfg["source"].update({"on_bad_record": ["skip"], **source})
    return cfg


def test_default_policy_counts_and_lists_every_bad_record(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")
    cfg = basic_config([src], sizes=[[64, 128, 256, 512]])
    cfg["lang"] = "both"
    with pytest.raises(E.SourceParseError) as err:
        build_in(tmp_path, cfg, cores=1)
    en, vi = err.value.render("en"), err.value.render("vi")
    assert "Line: 5" in en and "Reason: invalid JSON syntax" in en  # the spec's text of the first one
    assert "3 bad records" in en
    assert f"• {src}:5 (SourceParseError)" in en and f"• {src}:13 (SampleSchemaError)" in en
    assert f"• {src}:26 (SourceParseError)" in en
    assert "on_bad_record: [skip]" in en
    assert "3 bản ghi lỗi" in vi and "on_bad_record: [skip]" in vi and "Dòng: 5" in vi
    assert not os.path.exists(tmp_path / "out" / "stats.json")


def test_skip_leaves_bad_records_out_and_lists_them(tmp_path):
    src, good = dirty_file(tmp_path / "d.jsonl")
    cfg = skip_config(src, max_skipped=[3])
    res = build_in(tmp_path, cfg, cores=1)
    out = tmp_path / "out"
    index = read_jsonl(out / "sample_index.jsonl")
    assert [r["sample_id"] for r in index] == list(range(len(good)))  # dense, in input order
    assert [r["source_line"] for r in index] == good
    skipped = read_jsonl(out / "skipped_index.jsonl")
    assert [(r["source_file"], r["source_line"], r["error"]) for r in skipped] == [
        (src, 5, "SourceParseError"),
        (src, 13, "SampleSchemaError"),
        (src, 26, "SourceParseError"),
    ]
    assert skipped[0]["reason"] == "invalid JSON syntax"
    assert skipped[2]["reason"] == "line is not a JSON object"
    assert "response" in skipped[1]["reason"] and "\n" not in skipped[1]["reason"]
    stats = read_json(out / "stats.json")
    assert stats["skipped_records"] == 3
    assert stats["skipped_records_by_class"] == {"SampleSchemaError": 1, "SourceParseError": 2}
    assert res.outputs[0].stats["skipped_records"] == 3
    assert stats["total_samples"] == len(good)
    check = run_cli(tmp_path, "verify", "out", "--source", "--all")
    assert check.returncode == 0, check.stdout + check.stderr
    shown = run_cli(tmp_path, "inspect", "out")
    assert "skipped records: 3" in shown.stdout and "skipped_index.jsonl" in shown.stdout


def test_skip_is_the_same_bytes_whatever_the_cores_and_chunks(tmp_path):
    trees = []
    for k, (cores, chunk_mb) in enumerate([(1, 256), (2, 0.002)]):
        root = tmp_path / str(k)
        dirty_file(root / "d.jsonl", 120, {5: b"{", 44: b"{}", 45: b"7", 99: b'{"prompt": 1}'})
        cfg = skip_config("d.jsonl", max_skipped=[0.05])  # relative: the indexes of both builds name it alike
        cfg["chunk_mb"] = chunk_mb
        build_in(root, cfg, cores=cores)
        trees.append(tree_bytes(root / "out"))
    assert trees[0] == trees[1]
    assert trees[0]["skipped_index.jsonl"].count(b"\n") == 4


def test_the_first_bad_record_of_a_later_chunk_is_named_by_its_line_in_the_file(tmp_path):
    dirty_file(tmp_path / "d.jsonl", 120, {99: b'{"prompt": 1, "response": "r"}', 104: b"{"})
    cfg = basic_config(["d.jsonl"], sizes=[[64, 128, 256, 512]], chunk_mb=0.002)  # chunks of 2 KB
    cfg["lang"] = "both"
    with pytest.raises(E.SampleSchemaError) as err:
        build_in(tmp_path, cfg, cores=2)
    en, vi = err.value.render("en"), err.value.render("vi")
    assert "\n\nLine: 99\n\n" in en and "\n\nDòng: 99\n\n" in vi and err.value.line == 99
    assert "2 bad records" in en and "d.jsonl:104 (SourceParseError)" in en


def test_more_than_max_skipped_fails_with_the_count_and_reasons(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")  # 3 of 40: more than the default 0.01 and than 2
    for limit, said in ((None, "0.01 of its 40 records"), ([2], "2 records")):
        cfg = skip_config(src, **({} if limit is None else {"max_skipped": limit}))
        with pytest.raises(E.SourceParseError) as err:
            build_in(tmp_path, cfg, cores=1)
        en = err.value.render("en")
        assert "Line: 5" in en and "3 of the 40 records" in en and said in en, en
        assert "• 1 × SourceParseError: invalid JSON syntax" in en and "• 1 × SampleSchemaError: " in en
        assert "• 1 × SourceParseError: line is not a JSON object" in en
        assert "source.max_skipped" in en
        assert not os.path.exists(tmp_path / "out" / "stats.json")


def test_a_file_of_nothing_but_bad_records_always_fails(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}] * 5)
    cfg = skip_config(src, max_skipped=[1.0])
    with pytest.raises(E.SampleSchemaError) as err:
        build_in(tmp_path, cfg, cores=1)
    en = err.value.render("en")
    assert "every record of" in en.lower() and "5" in en and "source.fields" in en


def test_a_clean_build_keeps_its_bytes_and_files_without_the_policy(tmp_path):
    rows = gsm8k_rows(0, 30)
    trees = []
    for k, extra in enumerate([{}, {"on_bad_record": ["error"]}, {"on_bad_record": ["skip"]}]):
        write_jsonl(tmp_path / str(k) / "d.jsonl", rows)
        cfg = basic_config(["d.jsonl"], sizes=[[64, 128, 256, 512]])
        cfg["source"].update(extra)
        build_in(tmp_path / str(k), cfg, cores=1)
        trees.append(tree_bytes(tmp_path / str(k) / "out"))
    assert trees[0] == trees[1]
    assert "skipped_index.jsonl" not in trees[0]
    assert trees[2]["skipped_index.jsonl"] == b""  # skip set: always written, empty when nothing was skipped
    assert json.loads(trees[2]["stats.json"])["skipped_records"] == 0
    assert set(trees[2]) - set(trees[0]) == {"skipped_index.jsonl"}


def test_verify_source_finds_a_skipped_record_that_is_now_a_sample(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")
    build_in(tmp_path, skip_config(src, max_skipped=[3]), cores=1)
    path = tmp_path / "d.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[12] = b'{"prompt": "b", "response": "now whole"}\n'  # line 13, skipped by the build
    path.write_bytes(b"".join(lines))
    check = run_cli(tmp_path, "verify", "out", "--source")
    assert check.returncode != 0 and "line 13 is listed in skipped_index.jsonl" in check.stdout + check.stderr


def test_verify_checks_the_skipped_counts(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")
    build_in(tmp_path, skip_config(src, max_skipped=[3]), cores=1)
    path = tmp_path / "out" / "skipped_index.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    check = run_cli(tmp_path, "verify", "out")
    assert check.returncode != 0 and "skipped_index.jsonl" in check.stdout + check.stderr
    path.write_bytes(b"".join(lines[:2]) + lines[2].replace(b'"source_line":26', b'"source_line":6'))
    check = run_cli(tmp_path, "verify", "out")
    assert check.returncode != 0 and "sample" in check.stdout + check.stderr


def test_parquet_rows_are_skipped_by_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = gsm8k_rows(0, 30)
    responses = [None if i in (3, 17) else r["response"] for i, r in enumerate(rows)]
    pq.write_table(
        pa.table({"prompt": [r["prompt"] for r in rows], "response": responses}),
        str(tmp_path / "d.parquet"),
        row_group_size=8,
    )
    build_in(tmp_path, skip_config("d.parquet", max_skipped=[2]), cores=2)
    skipped = read_jsonl(tmp_path / "out" / "skipped_index.jsonl")
    assert [(r["source_row"], r["error"]) for r in skipped] == [
        (4, "SampleSchemaError"),
        (18, "SampleSchemaError"),
    ]
    assert "not a string" in skipped[0]["reason"] and "null" in skipped[0]["reason"]
    assert [r["source_line"] for r in read_jsonl(tmp_path / "out" / "sample_index.jsonl")] == [
        i + 1 for i in range(30) if i not in (3, 17)
    ]
    assert run_cli(tmp_path, "verify", "out", "--source", "--all").returncode == 0


def test_fluent_api_sets_the_policy(tmp_path, monkeypatch):
    from mintdim import pipeline

    monkeypatch.chdir(tmp_path)
    src, good = dirty_file(tmp_path / "d.jsonl")
    job = (
        pipeline("unit-build")
        .source.jsonl(
            files=[src],
            fields=[["prompt", "response"]],
            templates=["{prompt}\n{response}"],
            on_bad_record=["skip"],
            max_skipped=[3],
        )
        .tokenizer.sentencepiece({"path": SP_MODEL})
        .units(sizes=[[64, 128, 256, 512]], build_batch=[64])
        .output.dir(str(tmp_path / "o"), [100])
    )
    assert job.to_config()["source"]["on_bad_record"] == ["skip"]
    result = job.run()
    assert result.outputs[0].stats["skipped_records"] == 3
    assert result.outputs[0].stats["total_samples"] == len(good)


@pytest.mark.parametrize(
    "source, needle",
    [
        ({"on_bad_record": ["drop"]}, "on_bad_record"),
        ({"on_bad_record": "skip"}, "on_bad_record"),
        ({"on_bad_record": ["skip"], "max_skipped": [-1]}, "max_skipped"),
        ({"on_bad_record": ["skip"], "max_skipped": [1.5]}, "max_skipped"),
        ({"on_bad_record": ["skip"], "max_skipped": [True]}, "max_skipped"),
        ({"on_bad_record": ["skip", "skip", "skip"]}, "on_bad_record"),
        ({"max_skipped": [0.1]}, "on_bad_record"),
    ],
)
def test_policy_config_errors(tmp_path, source, needle):
    from mintdim.config import resolve

    cfg = basic_config(["a.jsonl", "b.jsonl"])
    cfg["source"].update(source)
    with pytest.raises(E.PipelineValidationError) as err:
        resolve(cfg)
    assert needle in err.value.render("en") and needle in err.value.render("vi")


def test_suggest_units_applies_the_policy(tmp_path):
    dirty_file(tmp_path / "d.jsonl")
    cfg = basic_config(["d.jsonl"], sizes=[[64, 128, 256, 512]])
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    res = run_cli(tmp_path, "suggest-units", "c.yaml", "-k", "2")
    assert res.returncode != 0 and "3 bad records" in res.stderr and "d.jsonl:26" in res.stderr
    cfg["source"].update(on_bad_record=["skip"], max_skipped=[3])
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    res = run_cli(tmp_path, "suggest-units", "c.yaml", "-k", "2")
    assert res.returncode == 0, res.stderr
    assert "37 samples" in res.stdout, res.stdout


# --- conversations: of the wrong shape, refused by the template, or with a message it drops -----------

TOK_DIR = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")
ALTERNATING = os.path.join(DATA, "chat", "alternating_roles_chat_template.jinja")


def hf(path):
    import logging

    transformers = pytest.importorskip("transformers")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers.AutoTokenizer.from_pretrained(path)


def read_tokens(out, row, dtype):
    """A sample's tokens read straight from its shard (independent of the reader)."""
    shard = np.fromfile(os.path.join(out, row["shard_path"]), dtype=np.dtype(dtype).newbyteorder("<"))
    return shard.reshape(-1, row["unit_size"])[row["shard_row"]][: row["token_count"]]


def expected_skips(records: list[dict], ref, template: str | None) -> dict[int, str]:
    """line -> class of each record a build should skip, found with transformers alone: no turn
    (SampleSchemaError), apply_chat_template raises, or a message's content is not in its rendering
    (ChatTemplateError)."""
    roles = SHAREGPT_CHAT["roles"]
    skips = {}
    for line, rec in enumerate(records, 1):
        if not rec["conversations"]:
            skips[line] = "SampleSchemaError"
            continue
        msgs = [{"role": roles[t["from"]], "content": t["value"]} for t in rec["conversations"]]
        try:
            text = ref.apply_chat_template(msgs, tokenize=False, chat_template=template)
        except Exception:
            skips[line] = "ChatTemplateError"
            continue
        if any(m["content"].strip() not in text for m in msgs):
            skips[line] = "ChatTemplateError"
    return skips


def assert_kept_equal_transformers(out, records: list[dict], ref, template: str | None) -> int:
    """Every sample's ids equal apply_chat_template's of its record (batched, as transformers takes them)."""
    roles = SHAREGPT_CHAT["roles"]
    dtype = read_json(os.path.join(out, "manifest.json"))["token_dtype"]
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    for start in range(0, len(index), 256):
        rows = index[start : start + 256]
        convs = [
            [
                {"role": roles[t["from"]], "content": t["value"]}
                for t in records[r["source_line"] - 1]["conversations"]
            ]
            for r in rows
        ]
        want = ref.apply_chat_template(convs, chat_template=template)["input_ids"]
        for row, ids in zip(rows, want):
            assert read_tokens(out, row, dtype).tolist() == ids, row["source_line"]
    return len(index)


def skip_chat_build(root, src: str, template: str | None, max_skipped=None, cores: int = 1, **tok):
    cfg = {
        "source": {
            "files": [src],
            "chat": SHAREGPT_CHAT,
            "train_on": [["assistant"]],
            "on_bad_record": ["skip"],
            **({"max_skipped": max_skipped} if max_skipped else {}),
        },
        "tokenizer": {
            "hf_dir": {"path": tok.pop("path", TOK_DIR), **({"chat_template": template} if template else {})}
        },
        "units": {"sizes": [[1024, 4096, 32768, 262144]], "build_batch": [256]},
        "output": {"dir": "out", "samples_per_shard": [2000]},
    }
    return cfg, (lambda: build_in(root, cfg, cores=cores))


def _turns(*roles_and_texts):
    return {"conversations": [{"from": r, "value": v} for r, v in roles_and_texts]}


# a message without content
CHATS = [
    _turns(("human", "What is 2 + 3?"), ("gpt", "It is 5.")),
    {"conversations": []},  # no message
    _turns(("gpt", "Hello, how can I help?"), ("human", "Add 4 and 4."), ("gpt", "8.")),  # gpt first
    _turns(("system", "You are terse.")),  # only a system message: the template drops it
    _turns(("system", "You are terse."), ("human", "Name a prime."), ("bing", "Seven.")),
    _turns(("human", "One"), ("human", "Two"), ("gpt", "Three")),  # two user turns
    _turns(("human", "Is 9 odd?"), ("chatgpt", "Yes.")),
    {"conversations": [{"from": "human"}]},
]


def test_conversations_skipped_are_exactly_those_the_template_cannot_render(tmp_path):
    write_jsonl(tmp_path / "c.jsonl", CHATS)
    _cfg, run = skip_chat_build(tmp_path, "c.jsonl", ALTERNATING, max_skipped=[0.75])
    run()
    out = str(tmp_path / "out")
    skipped = {r["source_line"]: r["error"] for r in read_jsonl(os.path.join(out, "skipped_index.jsonl"))}
    ref = hf(TOK_DIR)
    with open(ALTERNATING, encoding="utf-8") as f:
        template = f.read()
    want = expected_skips(
        [c if c["conversations"] != [{"from": "human"}] else {"conversations": []} for c in CHATS],
        ref,
        template,
    )
    want[8] = "SampleSchemaError"  # content missing: MintDim's own check of the record's shape
    assert (
        skipped
        == want
        == {
            2: "SampleSchemaError",
            3: "ChatTemplateError",
            4: "ChatTemplateError",
            6: "ChatTemplateError",
            8: "SampleSchemaError",
        }
    )
    assert assert_kept_equal_transformers(out, CHATS, ref, template) == 3
    assert [r["sample_id"] for r in read_jsonl(os.path.join(out, "sample_index.jsonl"))] == [0, 1, 2]
    assert run_cli(tmp_path, "verify", "out", "--source", "--all").returncode == 0


# --- ShareGPT V3 as published (optional: MINTDIM_ASSETS) ---------------------------------------------


def sharegpt_v3(tmp_path) -> str:
    """Every whole record of the published JSON array, one a line (benchmarks/fetch_data.sh writes the same
    data/sharegpt_v3.jsonl); converted here from the array when only the download is there."""
    made = os.path.join(ASSETS, "data", "sharegpt_v3.jsonl")
    if os.path.exists(made):
        return made
    raw = os.path.join(ASSETS, "data", "raw", "ShareGPT_V3_unfiltered_cleaned_split.json")
    if not os.path.exists(raw):
        pytest.skip(f"{raw} not present")
    with open(raw, encoding="utf-8") as f:
        text = f.read()
    decoder, gap, pos = json.JSONDecoder(), re.compile(r"[\s,]*"), text.index("[") + 1
    path = str(tmp_path / "sharegpt_v3.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        while True:  # the array is cut short at its end: its whole records
            pos = gap.match(text, pos).end()
            try:
                record, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                break
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


@pytest.mark.parametrize(
    "template, max_skipped", [(None, None), (ALTERNATING, [0.5])], ids=["qwen3", "alternating"]
)
def test_real_sharegpt_v3_as_published_builds_with_skip(tmp_path, template, max_skipped):
    tok_dir = os.path.join(ASSETS, "hf", "qwen3")
    if not os.path.isdir(tok_dir):
        pytest.skip(f"{tok_dir} not present")
    src = sharegpt_v3(tmp_path)
    with open(src, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert len(records) == 17671 and sum(not r["conversations"] for r in records) == 126
    odd = [r for r in records if any(t["from"] not in ("human", "gpt", "system") for t in r["conversations"])]
    assert len(odd) == 13
    ref = hf(tok_dir)
    text = None
    if template:
        with open(template, encoding="utf-8") as f:
            text = f.read()
    want = expected_skips(records, ref, text)
    cfg, run = skip_chat_build(tmp_path, src, template, max_skipped, cores=2, path=tok_dir)
    res = run()
    out = str(tmp_path / "out")
    skipped = {r["source_line"]: r["error"] for r in read_jsonl(os.path.join(out, "skipped_index.jsonl"))}
    assert skipped == want
    assert res.outputs[0].stats["skipped_records"] == len(want)
    assert assert_kept_equal_transformers(out, records, ref, text) == len(records) - len(want)
    # the same build with the default policy: the first bad record, the count and the first ten lines
    del cfg["source"]["on_bad_record"]
    cfg["source"].pop("max_skipped", None)
    cfg["output"]["dir"] = "out_default"
    with pytest.raises(E.MintDimError) as err:
        build_in(tmp_path, cfg, cores=2)
    en, first = err.value.render("en"), min(want)  # Qwen3's: line 72, no turn; the alternating one's: line 5
    assert err.value.kind == want[first] and f"Line: {first}\n" in en
    assert f"holds {len(want)} bad records" in en and "on_bad_record: [skip]" in en
    assert [int(m) for m in re.findall(r"^• .*:(\d+) \(\w+\)$", en, re.MULTILINE)] == sorted(want)[:10]
