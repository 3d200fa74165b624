"""End-of-turn tokens of field templates (source.train_eos) and samples with nothing to train
(stats.json untrained_samples, source.drop_untrained).

Expected masks are computed here independently of MintDim: the tokenizer library's own offsets of
the whole rendered text, the trained field's span and the place of the end-of-turn token worked
out from the template by hand, and the token at that place checked to be that special token's id.
"""

import os
import shutil

import pytest
import sentencepiece as spm
from conftest import (
    ASSETS,
    DATA,
    HF_JSON,
    SP_MODEL,
    basic_config,
    build_in,
    read_json,
    read_jsonl,
    read_mask,
    run_cli,
    tree_bytes,
    write_jsonl,
)
from stagekit import drive
from tokenizers import Tokenizer

from mintdim import errors as E
from mintdim.config import resolve

QWEN_SMALL = os.path.join(DATA, "tokenizers", "qwen3-template-bpe")  # hf_dir, Qwen3's specials and template
LLAMA32 = os.path.join(ASSETS, "hf", "llama3.2", "tokenizer.json")
LLAMA31_DIR = os.path.join(ASSETS, "hf", "llama3_1")
QWEN3_DIR = os.path.join(ASSETS, "hf", "qwen3")

ROWS = [
    {"prompt": "Add 2 and 3.", "response": "The answer is 5."},
    {"prompt": "Say nothing.", "response": ""},  # an empty field: only the end-of-turn token is trained
    {"prompt": "Translate: good morning", "response": "Chào buổi sáng"},
    {"prompt": "Chinese please", "response": "早上好，世界"},
    {"prompt": "x" * 3, "response": "yes yes yes\n"},  # ends in white space
]
LLAMA_TEMPLATE = (
    "<|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{response}<|eot_id|>"
)
CHATML_TEMPLATE = "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n{response}<|im_end|>\n"


def by_hand(row, before: str, between: str, after: str, marker: str | None):
    """(text, trained span of the response, where the end-of-turn marker starts or None) of
    before + prompt + between + response + after, the marker being `after` less its leading white space."""
    text = before + row["prompt"] + between + row["response"] + after
    a = len(before + row["prompt"] + between)
    b = a + len(row["response"])
    at = b + (len(after) - len(after.lstrip(" \t\r\n"))) if marker else None
    if marker:
        assert text.startswith(marker, at)
    return text, (a, b), at


def hf_expected(path, text, span, at, marker):
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    enc = tok.encode(text, add_special_tokens=False)
    starts = [o[0] for o in enc.offsets]
    want = [span[0] <= s < span[1] for s in starts]
    if at is not None:
        k = starts.index(at)
        assert enc.ids[k] == tok.token_to_id(marker)  # one token: the special token itself
        want[k] = True
    return enc.ids, want


def stage_build(root, cfg) -> dict:
    """The build of cfg in root through the stage functions (stagekit.drive): its stats.json."""
    old = os.getcwd()
    os.chdir(str(root))
    try:
        drive(cfg)
    finally:
        os.chdir(old)
    return read_json(os.path.join(str(root), cfg["output"]["dir"], "stats.json"))


def build_and_check(
    tmp_path,
    tokenizer,
    template,
    rows,
    marker,
    expected,
    path,
    after,
    before,
    between,
    train_eos=None,
    name="out",
):
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    cfg = basic_config([src], templates=[template], tokenizer=tokenizer, sizes=[[64, 256]], out=name)
    cfg["source"]["train_on"] = [["response"]]
    if train_eos is not None:
        cfg["source"]["train_eos"] = [train_eos]
    stats = stage_build(tmp_path, cfg)
    out = str(tmp_path / name)
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    total = 0
    for row in index:
        text, span, at = by_hand(rows[row["sample_id"]], before, between, after, marker)
        ids, want = expected(path, text, span, at, marker)
        assert row["token_count"] == len(ids)
        mask = read_mask(out, row)
        assert mask[: len(ids)].tolist() == want, rows[row["sample_id"]]
        assert not mask[len(ids) :].any()
        assert row["trained_tokens"] == sum(want)
        total += sum(want)
    assert stats["trained_tokens"] == total
    return out, index


def test_qwen3_template_directory_trains_im_end_after_the_answer(tmp_path):
    """The shipped hf_dir with Qwen3's specials: `{response}<|im_end|>` trains <|im_end|>, and the
    <|im_end|> after the (untrained) prompt stays untrained; train_eos: [false] keeps the old masks."""
    before, between, after = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n"
    tok = {"hf_dir": {"path": QWEN_SMALL}}
    path = os.path.join(QWEN_SMALL, "tokenizer.json")
    out, index = build_and_check(
        tmp_path, tok, CHATML_TEMPLATE, ROWS, "<|im_end|>", hf_expected, path, after, before, between
    )
    empty = next(r for r in index if ROWS[r["sample_id"]]["response"] == "")
    assert empty["trained_tokens"] == 1  # the end-of-turn token alone, as chat mode trains an empty answer
    loss_mask = read_json(os.path.join(out, "manifest.json"))["loss_mask"]
    assert loss_mask["end_of_turn"] == {str(tmp_path / "d.jsonl"): ["<|im_end|>"]}
    assert "end-of-turn token" in loss_mask["rule"]
    off, _ = build_and_check(
        tmp_path,
        tok,
        CHATML_TEMPLATE,
        ROWS,
        None,
        hf_expected,
        path,
        after,
        before,
        between,
        train_eos=False,
        name="off",
    )
    assert "end_of_turn" not in read_json(os.path.join(off, "manifest.json"))["loss_mask"]
    assert (
        next(
            r
            for r in read_jsonl(os.path.join(off, "sample_index.jsonl"))
            if ROWS[r["sample_id"]]["response"] == ""
        )["trained_tokens"]
        == 0
    )


def test_white_space_before_the_marker_and_a_marker_named_like_a_header_are_not_trained(tmp_path):
    """`{response}\\n<|im_end|>`: the newline is not trained, <|im_end|> is (chat mode's rule); a template
    whose trained field is followed by <|im_start|> (a start marker) trains nothing more."""
    tok = {"hf_dir": {"path": QWEN_SMALL}}
    path = os.path.join(QWEN_SMALL, "tokenizer.json")
    build_and_check(
        tmp_path,
        tok,
        "Q: {prompt}\nA: {response}\n<|im_end|>",
        ROWS,
        "<|im_end|>",
        hf_expected,
        path,
        "\n<|im_end|>",
        "Q: ",
        "\nA: ",
    )
    build_and_check(
        tmp_path,
        tok,
        "Q: {prompt}\nA: {response}<|im_start|>",
        ROWS,
        None,
        hf_expected,
        path,
        "<|im_start|>",
        "Q: ",
        "\nA: ",
        name="start",
    )


def test_a_template_without_a_special_token_after_the_field_keeps_its_bytes(tmp_path):
    """train_eos defaults to true; a template that writes no end-of-turn token after a trained field
    builds the same bytes with train_eos: [true], [false] or the key left out."""
    src = write_jsonl(tmp_path / "d.jsonl", ROWS)
    trees = []
    for name, value in (("default", None), ("on", True), ("off", False)):
        cfg = basic_config(
            [src],
            templates=["{prompt}\n{response}</s>"],
            tokenizer={"hf_json": {"path": HF_JSON}},
            sizes=[[64]],
            out=name,
        )
        cfg["source"]["train_on"] = [["response"]]
        if value is not None:
            cfg["source"]["train_eos"] = [value]
        stage_build(tmp_path, cfg)
        trees.append(tree_bytes(tmp_path / name))
    assert trees[0] == trees[1] == trees[2]
    assert "end_of_turn" not in read_json(tmp_path / "default" / "manifest.json")["loss_mask"]


@pytest.mark.skipif(not os.path.isfile(LLAMA32), reason="Llama-3.2 tokenizer.json not fetched")
def test_llama3_2_directory_trains_eot_id(tmp_path):
    """The issue's template on a Llama-3.2 hf_dir whose config names the base model's EOS
    (<|end_of_text|>): <|eot_id|> is found by its name."""
    d = tmp_path / "llama3.2"
    d.mkdir()
    shutil.copy(LLAMA32, d / "tokenizer.json")
    (d / "tokenizer_config.json").write_text(
        '{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}'
    )
    before, between = (
        "<|start_header_id|>user<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    )
    tok = {"hf_dir": {"path": str(d), "pad_token": "<|finetune_right_pad_id|>"}}
    _out, index = build_and_check(
        tmp_path, tok, LLAMA_TEMPLATE, ROWS, "<|eot_id|>", hf_expected, LLAMA32, "<|eot_id|>", before, between
    )
    assert all(r["trained_tokens"] >= 1 for r in index)


@pytest.mark.skipif(not os.path.isdir(LLAMA31_DIR), reason="Llama-3.1 directory not fetched")
def test_llama3_1_directory_trains_eot_id(tmp_path):
    before, between = (
        "<|start_header_id|>user<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    )
    tok = {"hf_dir": {"path": LLAMA31_DIR, "pad_token": "<|reserved_special_token_0|>"}}
    build_and_check(
        tmp_path,
        tok,
        LLAMA_TEMPLATE,
        ROWS,
        "<|eot_id|>",
        hf_expected,
        os.path.join(LLAMA31_DIR, "tokenizer.json"),
        "<|eot_id|>",
        before,
        between,
    )


@pytest.mark.skipif(not os.path.isdir(QWEN3_DIR), reason="Qwen3 directory not fetched")
def test_qwen3_directory_trains_im_end(tmp_path):
    before, between, after = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n"
    build_and_check(
        tmp_path,
        {"hf_dir": {"path": QWEN3_DIR}},
        CHATML_TEMPLATE,
        ROWS,
        "<|im_end|>",
        hf_expected,
        os.path.join(QWEN3_DIR, "tokenizer.json"),
        after,
        before,
        between,
    )


def with_user_defined(path, pieces) -> str:
    """A copy of the shipped SentencePiece model with user-defined symbols appended (as Gemma's
    <end_of_turn>): SentencePiece matches those in text, never its control symbols."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    model = pb.ModelProto()
    with open(SP_MODEL, "rb") as f:
        model.ParseFromString(f.read())
    for text in pieces:
        piece = model.pieces.add()
        piece.piece, piece.score, piece.type = text, 0.0, pb.ModelProto.SentencePiece.USER_DEFINED
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return str(path)


def sp_expected(path, text, span, at, marker):
    proc = spm.SentencePieceProcessor(model_file=str(path))
    got = proc.encode_as_offset_mapping(text)
    starts = [o[0] for o in got["offsets"]]
    want = [span[0] <= s < span[1] for s in starts]
    if at is not None:
        k = starts.index(at)
        assert got["ids"][k] == proc.piece_to_id(marker)
        want[k] = True
    return got["ids"], want


def test_sentencepiece_user_defined_end_marker_is_trained_control_eos_is_text(tmp_path):
    model = with_user_defined(tmp_path / "ud.model", ["<start_of_turn>", "<end_of_turn>"])
    tok = {"sentencepiece": {"path": model}}
    template = "<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n{response}<end_of_turn>"
    build_and_check(
        tmp_path,
        tok,
        template,
        ROWS,
        "<end_of_turn>",
        sp_expected,
        model,
        "<end_of_turn>",
        "<start_of_turn>user\n",
        "<end_of_turn>\n<start_of_turn>model\n",
    )
    # </s> is a control symbol: in a template it is text (pieces <, /, s, >), and nothing of it is trained
    build_and_check(
        tmp_path,
        {"sentencepiece": {"path": SP_MODEL}},
        "{prompt}\n{response}</s>",
        ROWS,
        None,
        sp_expected,
        SP_MODEL,
        "</s>",
        "",
        "\n",
        name="control",
    )


@pytest.mark.parametrize(
    "value, needle",
    [(True, "list"), ([True, False, True], "2 input files but 3"), (["yes"], "true or false")],
)
def test_train_eos_and_drop_untrained_errors_are_clear_and_bilingual(value, needle):
    for key in ("train_eos", "drop_untrained"):
        cfg = basic_config(["a.jsonl", "b.jsonl"], templates=["{prompt}\n{response}"])
        cfg["source"]["train_on"] = [["response"]]
        cfg["source"][key] = value
        with pytest.raises(E.PipelineValidationError) as err:
            resolve(cfg)
        assert needle in err.value.render("en") and f"source.{key}" in err.value.render("en")
        assert f"source.{key}" in err.value.render("vi")


# --- samples with nothing to train --------------------------------------------------------------------------

CUT_ROWS = [
    {"prompt": "Add 2 and 3.", "response": "The answer is 5."},
    {"prompt": "Say nothing.", "response": ""},  # nothing to train
    {"prompt": " ".join(["word"] * 40), "response": "cut away"},  # the response is past the largest unit
    {"prompt": "Translate: good morning", "response": "Chào buổi sáng"},
    {"prompt": "Empty again", "response": ""},
    {"prompt": "Chinese please", "response": "早上好，世界"},
]
LIMIT = 32


def untrained_by_hand(rows, limit=LIMIT):
    """Ids of the rows whose first `limit` tokens (MiniLM's own offsets of `{prompt}\\n{response}`) start
    none inside the response."""
    tok = Tokenizer.from_file(HF_JSON)
    tok.no_truncation()
    tok.no_padding()
    found = []
    for i, row in enumerate(rows):
        a = len(row["prompt"]) + 1
        b = a + len(row["response"])
        starts = [
            o[0] for o in tok.encode(row["prompt"] + "\n" + row["response"], add_special_tokens=False).offsets
        ]
        if not any(a <= s < b for s in starts[:limit]):
            found.append(i)
    return found


def cut_config(tmp_path, rows, name, layout, drop=None):
    src = write_jsonl(tmp_path / "cut.jsonl", rows)
    cfg = basic_config([os.path.basename(src)], tokenizer={"hf_json": {"path": HF_JSON}}, out=name, sps=[2])
    cfg["source"]["train_on"] = [["response"]]
    if drop is not None:
        cfg["source"]["drop_untrained"] = [drop]
    if layout == "packed":
        cfg["units"] = {"pack": [LIMIT], "overflow": ["truncate"], "build_batch": [4]}
    else:
        cfg["units"] = {"sizes": [[16, LIMIT]], "overflow": ["truncate"], "build_batch": [4]}
    path = tmp_path / f"{name}.yaml"
    import yaml

    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return path.name


@pytest.mark.parametrize("layout", ["units", "packed"])
def test_untrained_samples_are_counted_warned_and_shown_by_inspect(tmp_path, layout):
    want = untrained_by_hand(CUT_ROWS)
    assert want == [1, 2, 4]
    res = run_cli(tmp_path, "build", cut_config(tmp_path, CUT_ROWS, "out", layout), "--cores", "1")
    assert res.returncode == 0, res.stderr
    stats = read_json(tmp_path / "out" / "stats.json")
    assert stats["untrained_samples"] == len(want) and stats["untrained_ids"] == want
    assert "untrained_dropped" not in stats
    index = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    assert [r["sample_id"] for r in index if r["trained_tokens"] == 0] == want
    warning = next(line for line in (res.stdout + res.stderr).splitlines() if "train no token" in line)
    assert warning.startswith("[unit-build:warning] out: 3 samples train no token (ids 1, 2, 4)")
    assert "source.drop_untrained: [true]" in warning
    shown = run_cli(tmp_path, "inspect", "out")
    assert shown.returncode == 0, shown.stderr
    assert "3 samples train none (ids 1, 2, 4)" in shown.stdout
    header = next(line for line in shown.stdout.splitlines() if line.strip().startswith("unit"))
    assert header.split()[-2:] == ["trained", "untrained"]
    all_row = next(line for line in shown.stdout.splitlines() if line.strip().startswith("all"))
    assert all_row.split()[-2:] == [f"{stats['trained_tokens']:,}", "3"]
    sample = run_cli(tmp_path, "inspect", "out", "--sample", "1")
    assert ", 0 trained" in sample.stdout.splitlines()[0]


@pytest.mark.parametrize("layout", ["units", "packed"])
def test_drop_untrained_leaves_them_out_as_overflow_drop_does(tmp_path, layout):
    import yaml

    import mintdim

    want = untrained_by_hand(CUT_ROWS)
    keep_config = (tmp_path / cut_config(tmp_path, CUT_ROWS, "keep", layout)).read_text()
    stage_build(tmp_path, yaml.safe_load(keep_config))  # the same samples, kept
    res = run_cli(
        tmp_path, "build", cut_config(tmp_path, CUT_ROWS, "drop", layout, drop=True), "--cores", "1"
    )
    assert res.returncode == 0, res.stderr
    assert "3 left out of the shards (source.drop_untrained)" in res.stdout + res.stderr
    keep, drop = (read_jsonl(tmp_path / d / "sample_index.jsonl") for d in ("keep", "drop"))
    assert [r["sample_id"] for r in drop] == list(range(len(CUT_ROWS)))  # every sample keeps its id
    for a, b in zip(keep, drop):
        if b["sample_id"] in want:
            assert b["untrained"] == "dropped" and "overflow" not in b
            assert b["token_count"] == 0 and b["trained_tokens"] == 0
            assert (b["shard_path"], b["shard_row"]) == (None, None)
            assert b["source_token_count"] == a.get("source_token_count", a["token_count"])
        else:
            assert "untrained" not in b and b["trained_tokens"] == a["trained_tokens"] > 0
    stats = read_json(tmp_path / "drop" / "stats.json")
    assert (stats["untrained_samples"], stats["untrained_ids"], stats["untrained_dropped"]) == (3, want, 3)
    assert stats["total_samples"] == len(CUT_ROWS)
    assert stats["total_tokens"] == sum(r["token_count"] for r in drop)
    assert read_json(tmp_path / "drop" / "manifest.json")["source"]["drop_untrained"] == [True]
    kept_ds, ds = mintdim.open(str(tmp_path / "keep")), mintdim.open(str(tmp_path / "drop"))
    for sid in range(len(CUT_ROWS)):
        if sid in want:
            with pytest.raises(ValueError, match="left out \\(source.drop_untrained\\)"):
                ds.tokens(sid)
        else:
            assert ds.tokens(sid).tolist() == kept_ds.tokens(sid).tolist()
            assert ds.loss_mask(sid).tolist() == kept_ds.loss_mask(sid).tolist()
    batched = [int(s) for b in ds.batches(2, shuffle=False) for s in b.sample_ids]
    assert sorted(batched) == [s for s in range(len(CUT_ROWS)) if s not in want]
    ok = run_cli(tmp_path, "verify", "drop")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # verify recomputes the figures: a changed count is found
    path = tmp_path / "drop" / "stats.json"
    import json

    path.write_text(json.dumps(dict(stats, untrained_samples=2)))
    bad = run_cli(tmp_path, "verify", "drop")
    assert bad.returncode != 0 and "untrained_samples is 2, the mask bits give 3" in bad.stdout + bad.stderr


def test_without_the_options_a_build_without_train_on_has_no_untrained_keys(tmp_path):
    cfg = basic_config(
        [write_jsonl(tmp_path / "p.jsonl", CUT_ROWS)],
        tokenizer={"hf_json": {"path": HF_JSON}},
        out="nomask",
        sizes=[[16, LIMIT]],
    )
    cfg["units"]["overflow"] = ["truncate"]
    stats = stage_build(tmp_path, cfg)
    assert not any(k.startswith("untrained") for k in stats)


SHAREGPT_PAIRS = os.path.join(ASSETS, "data", "sharegpt_pairs.jsonl")
MINILM = os.path.join(ASSETS, "hf", "minilm", "tokenizer.json")


@pytest.mark.skipif(
    not (os.path.isfile(SHAREGPT_PAIRS) and os.path.isfile(MINILM)), reason="assets not fetched"
)
def test_real_sharegpt_pairs_untrained_samples_equal_an_independent_count(tmp_path):
    """The first 5,000 ShareGPT pairs in packed rows of 2048 with overflow: truncate: every sample whose
    response starts past its first 2048 tokens (or is empty) trains nothing."""
    import json

    with open(SHAREGPT_PAIRS, encoding="utf-8") as f:
        lines = [next(f) for _ in range(5000)]
    (tmp_path / "pairs.jsonl").write_text("".join(lines), encoding="utf-8")
    rows = [json.loads(line) for line in lines]
    tok = Tokenizer.from_file(MINILM)
    tok.no_truncation()
    tok.no_padding()
    texts = [r["prompt"] + "\n" + r["response"] for r in rows]
    want = []
    for i, (r, enc) in enumerate(zip(rows, tok.encode_batch(texts, add_special_tokens=False))):
        a, b = len(r["prompt"]) + 1, len(texts[i])
        if not any(a <= o[0] < b for o in enc.offsets[:2048]):
            want.append(i)
    cfg = basic_config(["pairs.jsonl"], tokenizer={"hf_json": {"path": MINILM}}, out="out", sps=[1000])
    cfg["source"]["train_on"] = [["response"]]
    cfg["units"] = {"pack": [2048], "overflow": ["truncate"], "build_batch": [1024]}
    res = build_in(tmp_path, cfg, cores=2)
    stats = res.outputs[0].stats
    assert stats["untrained_samples"] == len(want) == 45
    assert stats["untrained_ids"] == want


def test_conversations_without_a_trained_turn_are_counted_and_left_out(tmp_path):
    """source.chat: a conversation with no assistant message trains nothing (train_on: assistant)."""
    import mintdim

    convs = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        {"messages": [{"role": "user", "content": "no answer here"}]},
        {"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]},
    ]
    src = write_jsonl(tmp_path / "c.jsonl", convs)
    for name, drop in (("keep", None), ("drop", True)):
        cfg = {
            "source": {"files": [src], "chat": {}, "train_on": [["assistant"]]},
            "tokenizer": {"hf_dir": {"path": QWEN_SMALL}},
            "units": {"sizes": [[64, 128]], "build_batch": [8]},
            "output": {"dir": name, "samples_per_shard": [10]},
        }
        if drop:
            cfg["source"]["drop_untrained"] = [True]
        stats = stage_build(tmp_path, cfg)
        assert (stats["untrained_samples"], stats["untrained_ids"]) == (1, [1])
        assert run_cli(tmp_path, "verify", name).returncode == 0
    assert read_json(tmp_path / "drop" / "stats.json")["untrained_dropped"] == 1
    ds = mintdim.open(str(tmp_path / "drop"))
    with pytest.raises(ValueError):
        ds.tokens(1)
    keep = mintdim.open(str(tmp_path / "keep"))
    assert ds.tokens(2).tolist() == keep.tokens(2).tolist()
