"""End-of-turn tokens of field templates (source.train_eos) and samples with nothing to train
(stats.json untrained_samples, source.drop_untrained).

Expected masks are computed here independently of MintDim: the tokenizer library's own offsets of
the whole rendered text, the trained field's span and the place of the end-of-turn token worked
out from the template by hand, and the token at that place checked to be that special token's id.
"""

import os
import shutil

import numpy as np
import pytest
import sentencepiece as spm
from tokenizers import Tokenizer

from conftest import (ASSETS, DATA, HF_JSON, SP_MODEL, basic_config, build_in, read_json, read_jsonl, read_mask,
                      run_cli, tree_bytes, write_jsonl)
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
LLAMA_TEMPLATE = ("<|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n{response}<|eot_id|>")
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


def build_and_check(tmp_path, tokenizer, template, rows, marker, expected, path, after, before, between,
                    train_eos=None, name="out"):
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    cfg = basic_config([src], templates=[template], tokenizer=tokenizer, sizes=[[64, 256]], out=name)
    cfg["source"]["train_on"] = [["response"]]
    if train_eos is not None:
        cfg["source"]["train_eos"] = [train_eos]
    res = build_in(tmp_path, cfg, cores=1)
    out = str(tmp_path / name)
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    total = 0
    for row in index:
        text, span, at = by_hand(rows[row["sample_id"]], before, between, after, marker)
        ids, want = expected(path, text, span, at, marker)
        assert row["token_count"] == len(ids)
        mask = read_mask(out, row)
        assert mask[:len(ids)].tolist() == want, rows[row["sample_id"]]
        assert not mask[len(ids):].any()
        assert row["trained_tokens"] == sum(want)
        total += sum(want)
    assert res.outputs[0].stats["trained_tokens"] == total
    return out, index


def test_qwen3_template_directory_trains_im_end_after_the_answer(tmp_path):
    """The shipped hf_dir with Qwen3's specials: `{response}<|im_end|>` trains <|im_end|>, and the
    <|im_end|> after the (untrained) prompt stays untrained; train_eos: [false] keeps the old masks."""
    before, between, after = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n"
    tok = {"hf_dir": {"path": QWEN_SMALL}}
    path = os.path.join(QWEN_SMALL, "tokenizer.json")
    out, index = build_and_check(tmp_path, tok, CHATML_TEMPLATE, ROWS, "<|im_end|>", hf_expected, path, after,
                                 before, between)
    empty = next(r for r in index if ROWS[r["sample_id"]]["response"] == "")
    assert empty["trained_tokens"] == 1  # the end-of-turn token alone, as chat mode trains an empty answer
    off, _ = build_and_check(tmp_path, tok, CHATML_TEMPLATE, ROWS, None, hf_expected, path, after, before,
                             between, train_eos=False, name="off")
    assert next(r for r in read_jsonl(os.path.join(off, "sample_index.jsonl"))
                if ROWS[r["sample_id"]]["response"] == "")["trained_tokens"] == 0


def test_white_space_before_the_marker_and_a_marker_named_like_a_header_are_not_trained(tmp_path):
    """`{response}\\n<|im_end|>`: the newline is not trained, <|im_end|> is (chat mode's rule); a template
    whose trained field is followed by <|im_start|> (a start marker) trains nothing more."""
    tok = {"hf_dir": {"path": QWEN_SMALL}}
    path = os.path.join(QWEN_SMALL, "tokenizer.json")
    build_and_check(tmp_path, tok, "Q: {prompt}\nA: {response}\n<|im_end|>", ROWS, "<|im_end|>", hf_expected,
                    path, "\n<|im_end|>", "Q: ", "\nA: ")
    build_and_check(tmp_path, tok, "Q: {prompt}\nA: {response}<|im_start|>", ROWS, None, hf_expected, path,
                    "<|im_start|>", "Q: ", "\nA: ", name="start")


def test_a_template_without_a_special_token_after_the_field_keeps_its_bytes(tmp_path):
    """train_eos defaults to true; a template that writes no end-of-turn token after a trained field
    builds the same bytes with train_eos: [true], [false] or the key left out."""
    src = write_jsonl(tmp_path / "d.jsonl", ROWS)
    trees = []
    for name, value in (("default", None), ("on", True), ("off", False)):
        cfg = basic_config([src], templates=["{prompt}\n{response}</s>"], tokenizer={"hf_json": {"path": HF_JSON}},
                           sizes=[[64]], out=name)
        cfg["source"]["train_on"] = [["response"]]
        if value is not None:
            cfg["source"]["train_eos"] = [value]
        build_in(tmp_path, cfg, cores=1)
        trees.append(tree_bytes(tmp_path / name))
    assert trees[0] == trees[1] == trees[2]


@pytest.mark.skipif(not os.path.isfile(LLAMA32), reason="Llama-3.2 tokenizer.json not fetched")
def test_llama3_2_directory_trains_eot_id(tmp_path):
    """The issue's template on a Llama-3.2 hf_dir whose config names the base model's EOS
    (<|end_of_text|>): <|eot_id|> is found by its name."""
    d = tmp_path / "llama3.2"
    d.mkdir()
    shutil.copy(LLAMA32, d / "tokenizer.json")
    (d / "tokenizer_config.json").write_text('{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}')
    before, between = "<|start_header_id|>user<|end_header_id|>\n\n", \
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    tok = {"hf_dir": {"path": str(d), "pad_token": "<|finetune_right_pad_id|>"}}
    out, index = build_and_check(tmp_path, tok, LLAMA_TEMPLATE, ROWS, "<|eot_id|>", hf_expected, LLAMA32,
                                 "<|eot_id|>", before, between)
    assert all(r["trained_tokens"] >= 1 for r in index)


@pytest.mark.skipif(not os.path.isdir(LLAMA31_DIR), reason="Llama-3.1 directory not fetched")
def test_llama3_1_directory_trains_eot_id(tmp_path):
    before, between = "<|start_header_id|>user<|end_header_id|>\n\n", \
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    tok = {"hf_dir": {"path": LLAMA31_DIR, "pad_token": "<|reserved_special_token_0|>"}}
    build_and_check(tmp_path, tok, LLAMA_TEMPLATE, ROWS, "<|eot_id|>", hf_expected,
                    os.path.join(LLAMA31_DIR, "tokenizer.json"), "<|eot_id|>", before, between)


@pytest.mark.skipif(not os.path.isdir(QWEN3_DIR), reason="Qwen3 directory not fetched")
def test_qwen3_directory_trains_im_end(tmp_path):
    before, between, after = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n"
    build_and_check(tmp_path, {"hf_dir": {"path": QWEN3_DIR}}, CHATML_TEMPLATE, ROWS, "<|im_end|>", hf_expected,
                    os.path.join(QWEN3_DIR, "tokenizer.json"), after, before, between)


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
    build_and_check(tmp_path, tok, template, ROWS, "<end_of_turn>", sp_expected, model, "<end_of_turn>",
                    "<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n")
    # </s> is a control symbol: in a template it is text (pieces <, /, s, >), and nothing of it is trained
    build_and_check(tmp_path, {"sentencepiece": {"path": SP_MODEL}}, "{prompt}\n{response}</s>", ROWS, None,
                    sp_expected, SP_MODEL, "</s>", "", "\n", name="control")


@pytest.mark.parametrize("value, needle", [(True, "list"), ([True, False, True], "2 input files but 3"),
                                           (["yes"], "true or false")])
def test_train_eos_and_drop_untrained_errors_are_clear_and_bilingual(value, needle):
    for key in ("train_eos", "drop_untrained"):
        cfg = basic_config(["a.jsonl", "b.jsonl"], templates=["{prompt}\n{response}"])
        cfg["source"]["train_on"] = [["response"]]
        cfg["source"][key] = value
        with pytest.raises(E.PipelineValidationError) as err:
            resolve(cfg)
        assert needle in err.value.render("en") and f"source.{key}" in err.value.render("en")
        assert f"source.{key}" in err.value.render("vi")
