"""Tokenizer loading: special ids from the library, in-file
padding/truncation off, exact batch encodes, dtype."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import sentencepiece as spm
from conftest import GSM8K, HF_JSON, SP_MODEL
from tokenizers import Tokenizer

from mintdim.tokenizers import kinds as T
from mintdim.tokenizers.kinds import HFJsonTokenizer, SentencePieceTokenizer, dtype_for_vocab, load


def gsm8k_texts(n: int = 30) -> list[str]:
    out = []
    with open(GSM8K, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            row = json.loads(line)
            out.append(row["question"] + "\n" + row["answer"])
    return out


def reference_hf() -> Tokenizer:
    tok = Tokenizer.from_file(HF_JSON)
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def sp_ref():
    return spm.SentencePieceProcessor(model_file=SP_MODEL)


# --- special ids and vocab -------------------------------------------------------


def test_sentencepiece_ids_match_library(sp_ref):
    tok = load("sentencepiece", SP_MODEL)
    assert isinstance(tok, SentencePieceTokenizer)
    assert tok.kind == "sentencepiece"
    assert tok.vocab_size == sp_ref.get_piece_size() == 2000
    assert tok.unk_id == sp_ref.unk_id() == 0
    assert tok.pad_id == sp_ref.pad_id() == 1


def test_hf_json_ids_match_library():
    ref = Tokenizer.from_file(HF_JSON)
    tok = load("hf_json", HF_JSON)
    assert isinstance(tok, HFJsonTokenizer)
    assert tok.kind == "hf_json"
    assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=True) == 30522
    assert tok.unk_id == ref.token_to_id(ref.model.unk_token) == 100
    assert tok.pad_id == ref.padding["pad_id"] == 0


def test_hf_without_padding_settings_has_no_pad(tmp_path):
    """DECISIONS: a `<pad>`/[PAD] token without padding settings is not a PAD id."""
    data = json.loads(open(HF_JSON, encoding="utf-8").read())
    data["padding"] = None
    path = tmp_path / "nopad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = load("hf_json", str(path))
    assert tok.pad_id is None
    assert tok.unk_id == 100


def test_hf_unigram_unk_from_serialization(tmp_path):
    from tokenizers import models

    hf = Tokenizer(
        models.Unigram(
            [("<pad>", 0.0), ("<unk>", 0.0), ("a", -1.0), ("b", -2.0)], unk_id=1, byte_fallback=False
        )
    )
    hf.enable_padding(pad_id=0, pad_token="<pad>")
    path = str(tmp_path / "uni.json")
    hf.save(path)
    tok = load("hf_json", path)
    assert tok.unk_id == 1
    assert tok.pad_id == 0
    assert tok.vocab_size == 4


def test_hf_bpe_without_unk_token_has_no_unk(tmp_path):
    from tokenizers import models

    hf = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    path = str(tmp_path / "bpe.json")
    hf.save(path)
    tok = load("hf_json", path)
    assert tok.unk_id is None
    assert tok.pad_id is None


def test_sentencepiece_without_pad_reports_none(tmp_path):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(gsm8k_texts(40)),
        model_writer=model,
        vocab_size=120,
        model_type="unigram",
        unk_id=0,
        pad_id=-1,
        bos_id=-1,
        eos_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    path = tmp_path / "nopad.model"
    path.write_bytes(model.getvalue())
    tok = load("sentencepiece", str(path))
    assert tok.pad_id is None
    assert tok.unk_id == 0
    assert tok.vocab_size == 120


# --- HF in-file padding / truncation switched off ------------------------------


def test_hf_in_file_truncation_and_padding_off():
    # the shipped file really does pad and truncate at 128: the library alone would give 128 tokens
    raw = Tokenizer.from_file(HF_JSON)
    assert raw.truncation is not None and raw.truncation["max_length"] == 128
    assert raw.padding is not None
    long_text = " ".join(gsm8k_texts(8))
    assert len(raw.encode(long_text, add_special_tokens=False).ids) == 128
    assert len(raw.encode("hi", add_special_tokens=False).ids) == 128

    tok = load("hf_json", HF_JSON)
    expected = reference_hf().encode(long_text, add_special_tokens=False).ids
    assert len(expected) > 128
    flat, lengths = tok.encode_batch([long_text, "hi"])
    assert int(lengths[0]) == len(expected) > 128
    assert flat[: lengths[0]].tolist() == expected
    assert lengths[1] == len(reference_hf().encode("hi", add_special_tokens=False).ids) < 128
    assert tok.encode_ids(["hi"]) == [reference_hf().encode("hi", add_special_tokens=False).ids]


# --- batch encodes equal per-text encodes --------------------------------------------


@pytest.mark.parametrize("kind, path", [("sentencepiece", SP_MODEL), ("hf_json", HF_JSON)])
def test_encode_batch_flat_equals_per_text(kind, path, sp_ref):
    texts = gsm8k_texts(25) + ["", "a", "  ", "世界 hello", ""]
    if kind == "sentencepiece":
        per_text = [sp_ref.encode(t) for t in texts]
    else:
        ref = reference_hf()
        per_text = [ref.encode(t, add_special_tokens=False).ids for t in texts]
    tok = load(kind, path)
    flat, lengths = tok.encode_batch(texts)
    assert isinstance(flat, np.ndarray) and isinstance(lengths, np.ndarray)
    assert flat.ndim == 1 and lengths.ndim == 1
    assert lengths.tolist() == [len(ids) for ids in per_text]
    assert flat.tolist() == [i for ids in per_text for i in ids]
    assert int(lengths.sum()) == len(flat)
    assert lengths[texts.index("")] == 0
    assert tok.encode_ids(texts) == [list(ids) for ids in per_text]


def test_encode_batch_empty_batch():
    for kind, path in [("sentencepiece", SP_MODEL), ("hf_json", HF_JSON)]:
        flat, lengths = load(kind, path).encode_batch([])
        assert len(flat) == 0 and len(lengths) == 0


def test_sentencepiece_threads_do_not_change_ids():
    texts = gsm8k_texts(40)
    one = load("sentencepiece", SP_MODEL, threads=1).encode_batch(texts)
    four = load("sentencepiece", SP_MODEL, threads=4).encode_batch(texts)
    assert one[0].tolist() == four[0].tolist() and one[1].tolist() == four[1].tolist()


# --- no special tokens added ------------------------------------------------------------


def test_hf_adds_no_cls_sep():
    ref = Tokenizer.from_file(HF_JSON)
    cls_id, sep_id = ref.token_to_id("[CLS]"), ref.token_to_id("[SEP]")
    tok = load("hf_json", HF_JSON)
    flat, lengths = tok.encode_batch(["hello world", "the answer is 42"])
    assert cls_id not in flat.tolist() and sep_id not in flat.tolist()
    assert flat[: lengths[0]].tolist() == [7592, 2088]
    # the library's default would add them
    assert reference_hf().encode("hello world").ids == [cls_id, 7592, 2088, sep_id]


def test_sentencepiece_adds_no_bos_eos(sp_ref):
    tok = load("sentencepiece", SP_MODEL)
    flat, _ = tok.encode_batch(gsm8k_texts(10))
    ids = set(flat.tolist())
    assert sp_ref.bos_id() not in ids and sp_ref.eos_id() not in ids


def test_special_token_strings_in_text_as_library_encodes_them(sp_ref):
    """DECISIONS: HF matches added special tokens in text; SentencePiece does not match control symbols."""
    hf = load("hf_json", HF_JSON)
    assert hf.encode_ids(["hello [PAD] world [UNK]"]) == [[7592, 0, 2088, 100]]
    sp = load("sentencepiece", SP_MODEL)
    ids = sp.encode_ids(["<s> x </s>"])[0]
    assert ids == sp_ref.encode("<s> x </s>")
    assert sp_ref.bos_id() not in ids and sp_ref.eos_id() not in ids


def test_unknown_characters_map_to_unk():
    sp = load("sentencepiece", SP_MODEL)
    flat, _ = sp.encode_batch(["世界"])
    assert sp.unk_id in flat.tolist()
    hf = load("hf_json", HF_JSON)
    flat, _ = hf.encode_batch(["☃"])
    assert flat.tolist() == [hf.unk_id]


# --- dtype ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vocab, dtype",
    [
        (1, "uint16"),
        (2000, "uint16"),
        (30522, "uint16"),
        (65535, "uint16"),
        (65536, "uint32"),
        (128256, "uint32"),
        (2**32 - 1, "uint32"),
    ],
)
def test_dtype_for_vocab_boundaries(vocab, dtype):
    assert dtype_for_vocab(vocab) == dtype


def test_dtype_for_vocab_too_large():
    assert dtype_for_vocab(2**32) is None
    assert dtype_for_vocab(2**40) is None


def test_kinds_and_extensions():
    assert T.KINDS == ("sentencepiece", "hf_json", "unitoken", "hf_dir")  # unitoken, hf_dir: directories
    assert T.EXTENSIONS == {"sentencepiece": ".model", "hf_json": ".json"}


def test_flat_ids_fit_their_dtype():
    for kind, path in [("sentencepiece", SP_MODEL), ("hf_json", HF_JSON)]:
        tok = load(kind, path)
        flat, _ = tok.encode_batch(gsm8k_texts(20))
        assert int(flat.max()) < tok.vocab_size
        assert np.array_equal(flat.astype(dtype_for_vocab(tok.vocab_size)).astype(np.uint32), flat)
