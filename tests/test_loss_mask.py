"""Loss masks (source.train_on): exact per-token masks beside the shards, per tokenizer kind.

Expected masks are computed here independently: the tokenizer library's own
offsets for the whole rendered text, and the character spans of the trained
fields worked out from the template by hand.
"""

import os

import numpy as np
import pytest
import sentencepiece as spm
from conftest import HF_JSON, SP_MODEL, basic_config, build_in, read_json, read_jsonl, read_mask, write_jsonl
from tokenizers import Tokenizer

from mintdim import errors as E
from mintdim.config import resolve

ROWS = [
    {"instruction": "Add 2 and 3.", "output": "The answer is 5."},
    {"instruction": "Say nothing.", "output": ""},  # empty trained field: all zeros
    {"instruction": "Translate to Vietnamese: good morning", "output": "Chào buổi sáng "},  # ends in a space
    {"instruction": "Chinese please", "output": "早上好，世界"},  # multi-byte characters
    {"instruction": "x" * 3, "output": "yes yes yes"},
]
TEMPLATE = "### Instruction:\n{instruction}\n### Response:\n{output}"


def spans(row, template=TEMPLATE, trained=("output",)):
    """Character spans of trained fields, found by rendering piece by piece."""
    from mintdim.sources.template import parse

    tpl = parse(template)
    pos, out, text = 0, [], tpl.literals[0]
    pos = len(text)
    for i, name in enumerate(tpl.names):
        value = row[name]
        if name in trained:
            out.append((pos, pos + len(value)))
        text += value + tpl.literals[i + 1]
        pos = len(text)
    return text, out


def hf_expected(text, sp):
    tok = Tokenizer.from_file(HF_JSON)
    tok.no_truncation()
    tok.no_padding()
    enc = tok.encode(text, add_special_tokens=False)
    return enc.ids, [any(a <= o[0] < b for a, b in sp) for o in enc.offsets]


def sp_expected(text, sp):
    proc = spm.SentencePieceProcessor(model_file=SP_MODEL)
    got = proc.encode_as_offset_mapping(text)
    return got["ids"], [any(a <= o[0] < b for a, b in sp) for o in got["offsets"]]


def read_tokens(out, row, dtype):
    shard = np.fromfile(os.path.join(out, row["shard_path"]), dtype=np.dtype(dtype).newbyteorder("<"))
    return shard.reshape(-1, row["unit_size"])[row["shard_row"]]


@pytest.mark.parametrize(
    "kind, path, expected", [("hf_json", HF_JSON, hf_expected), ("sentencepiece", SP_MODEL, sp_expected)]
)
def test_masks_match_independent_offsets(tmp_path, kind, path, expected):
    rows = ROWS + [{"instruction": r["instruction"] + " again", "output": r["output"] * 2} for r in ROWS]
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    cfg = basic_config(
        [src],
        fields=[["instruction", "output"]],
        templates=[TEMPLATE],
        tokenizer={kind: {"path": path}},
        sizes=[[16, 32, 64]],
        build_batch=[3],
        sps=[4],
    )
    cfg["source"]["train_on"] = [["output"]]
    res = build_in(tmp_path, cfg, cores=2)
    out = str(tmp_path / "out")
    manifest = read_json(os.path.join(out, "manifest.json"))
    assert manifest["loss_mask"]["train_on"] == [["output"]]
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    total = 0
    for row in index:
        text, sp = spans(rows[row["sample_id"]])
        ids, want = expected(text, sp)
        toks = read_tokens(out, row, manifest["token_dtype"])
        assert toks[: row["token_count"]].tolist() == ids  # the same single encode
        mask = read_mask(out, row)
        assert mask[: row["token_count"]].tolist() == want
        assert not mask[row["token_count"] :].any()  # padding bits are 0
        assert row["trained_tokens"] == sum(want)
        total += sum(want)
    assert res.outputs[0].stats["trained_tokens"] == total
    empty = next(r for r in index if rows[r["sample_id"]]["output"] == "")
    assert empty["trained_tokens"] == 0
    # every mask file has ceil(unit/8) bytes per record, as many records as its shard
    for unit in manifest["units"]["sizes"]:
        d = os.path.join(out, f"unit_{unit}")
        for name in os.listdir(d):
            if name.startswith("shard_"):
                records = os.path.getsize(os.path.join(d, name)) // (
                    unit * manifest["token_storage"]["bytes_per_token"]
                )
                assert os.path.getsize(os.path.join(d, name.replace("shard_", "mask_"))) == records * (
                    (unit + 7) // 8
                )


def test_field_used_twice_and_mapped_train_on(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", ROWS)
    b = write_jsonl(tmp_path / "b.jsonl", [{"q": "why?", "r": "because"}])
    cfg = basic_config(
        [a, b],
        fields=[["instruction", "output"], ["q", "r"]],
        templates=["{output} | {instruction} | {output}", "{q}->{r}"],
        tokenizer={"hf_json": {"path": HF_JSON}},
        sizes=[[64]],
        out="o",
    )
    cfg["source"]["train_on"] = [["output"], ["q"]]
    build_in(tmp_path, cfg, cores=1)
    index = read_jsonl(tmp_path / "o" / "sample_index.jsonl")
    first = index[0]
    text, sp = spans(ROWS[0], "{output} | {instruction} | {output}")
    assert len(sp) == 2
    ids, want = hf_expected(text, sp)
    assert read_mask(str(tmp_path / "o"), first)[: len(ids)].tolist() == want
    last = index[-1]
    text, sp = spans({"q": "why?", "r": "because"}, "{q}->{r}", trained=("q",))
    ids, want = hf_expected(text, sp)
    assert read_mask(str(tmp_path / "o"), last)[: len(ids)].tolist() == want


def test_without_train_on_nothing_changes(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", ROWS)
    cfg = basic_config(
        [src],
        fields=[["instruction", "output"]],
        templates=[TEMPLATE],
        tokenizer={"hf_json": {"path": HF_JSON}},
        sizes=[[64]],
    )
    build_in(tmp_path, cfg, cores=1)
    out = tmp_path / "out"
    assert not any(name.startswith("mask_") for name in os.listdir(out / "unit_64"))
    assert "trained_tokens" not in read_jsonl(out / "sample_index.jsonl")[0]
    assert "loss_mask" not in read_json(out / "manifest.json")
    assert "trained_tokens" not in read_json(out / "stats.json")


@pytest.mark.parametrize(
    "train_on, needle",
    [([["nope"]], "'nope'"), ([["output"], ["output"]], "train_on"), ("output", "list of lists")],
)
def test_train_on_errors_are_clear_and_bilingual(train_on, needle):
    cfg = basic_config(["x.jsonl"], fields=[["instruction", "output"]], templates=[TEMPLATE])
    cfg["source"]["train_on"] = train_on
    with pytest.raises(E.FieldMappingError) as err:
        resolve(cfg)
    assert needle in err.value.render("en")
    assert "train_on" in err.value.render("vi")


def test_reader_torch_and_inspect_show_the_mask(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", ROWS)
    cfg = basic_config(
        [src],
        fields=[["instruction", "output"]],
        templates=[TEMPLATE],
        tokenizer={"hf_json": {"path": HF_JSON}},
        sizes=[[32, 64]],
        sps=[2],
    )
    cfg["source"]["train_on"] = [["output"]]
    build_in(tmp_path, cfg, cores=1)
    import mintdim

    ds = mintdim.open(str(tmp_path / "out"))
    assert ds.has_loss_mask
    for sid in range(len(ROWS)):
        text, sp = spans(ROWS[sid])
        ids, want = hf_expected(text, sp)
        assert ds.tokens(sid).tolist() == ids
        assert ds.loss_mask(sid).tolist() == want
    for batch in ds.batches(2, shuffle=False):
        for k, sid in enumerate(batch.sample_ids):
            n = int(batch.lengths[k])
            assert batch.loss_mask[k, :n].tolist() == ds.loss_mask(int(sid)).tolist()
            assert not batch.loss_mask[k, n:].any()
    from conftest import run_cli

    res = run_cli(tmp_path, "inspect", "out", "--sample", "0")
    assert res.returncode == 0, res.stderr
    body = res.stdout.split("\n\n", 1)[1]
    assert "⟦" in body and "5" in body.split("⟦", 1)[1]  # the answer is inside the brackets
    assert "instruction" in body.split("⟦", 1)[0].lower()  # the prompt is outside
    torch = pytest.importorskip("torch")
    batch = next(iter(ds.torch_loader(2, shuffle=False)))
    labels, mask, ids = batch["labels"], batch["loss_mask"], batch["input_ids"]
    assert torch.equal(labels[mask.bool()], ids[mask.bool()])
    assert bool((labels[~mask.bool()] == -100).all())
