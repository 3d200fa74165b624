"""The unitoken kind (ffbpe model directories), training from the dataset, export to tokenizer.json,
and add-specials for real tokenizers that lack a PAD or UNK id.

Models are trained here, on real text shipped in the repository (GSM8K); the real Mistral, Llama 3 and
DeepSeek files are used only when ../assets (MINTDIM_ASSETS) holds them (tests skipped otherwise).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess

import numpy as np
import pytest
from conftest import (
    ASSETS,  # noqa: E402
    GSM8K,
    HF_JSON,
    read_json,
    read_jsonl,
    write_jsonl,
)

from mintdim import errors as E
from mintdim import pipeline
from mintdim.tokenizers import training
from mintdim.tokenizers.kinds import load
from mintdim.tokenizers.unitoken import SENTINEL


def gsm8k_texts(n: int | None = None) -> list[str]:
    out = []
    with open(GSM8K, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if n is not None and i >= n:
                break
            row = json.loads(line)
            out.append(row["question"] + "\n\n" + row["answer"])
    return out


EDGE_TEXTS = [
    "",
    " ",
    "  lead",
    "trail  ",
    "x\n\n",
    "\t\t",
    "a <pad> b",
    "<unk>",
    "<pad><pad>",
    "a<pad",
    "Tiếng Việt có dấu — 中文 🙂  ",
    "don't 're 123 456",
    "{braces} and <|tags|>",
]


def sha(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A byte-unit and a unicode-unit model trained on GSM8K, and a byte model with no <pad>."""
    from ffbpe import BpeTrainer, PreTokenizer

    root = tmp_path_factory.mktemp("models")
    texts = gsm8k_texts()
    byte = str(root / "byte")
    training.train_texts(iter(texts), byte, vocab_size=1500, unit="byte")
    uni = str(root / "unicode")
    training.train_texts(iter(texts + EDGE_TEXTS), uni, vocab_size=1500, unit="unicode")
    counter = PreTokenizer([]).word_counter()
    counter.add_source(iter(texts))
    trainer = BpeTrainer(["<unk>"], unit="byte", initial_alphabet="byte_level")
    trainer.add_word_counter(counter)
    trainer.train(800)
    nopad = str(root / "nopad")
    trainer.validate_model().save_pretrained(nopad)
    return {"byte": byte, "unicode": uni, "nopad": nopad}


# --- the kind -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["byte", "unicode"])
def test_ids_equal_ffbpe_encoder_on_real_text(models, unit):
    from ffbpe import BpeEncoder

    ref = BpeEncoder.from_pretrained(models[unit])
    tok = load("unitoken", models[unit])
    assert tok.kind == "unitoken" and tok.vocab_size == 1500
    assert (tok.unk_id, tok.pad_id) == (0, 1)
    texts = gsm8k_texts() + EDGE_TEXTS
    flat, lengths = tok.encode_batch(texts)
    assert flat.dtype == np.uint32 and len(lengths) == len(texts)
    ends = np.cumsum(lengths)
    for text, end, n in zip(texts, ends, lengths):
        assert flat[end - n : end].tolist() == ref.encode(text)
    assert tok.encode_ids(texts[:50]) == [ref.encode(t) for t in texts[:50]]
    assert int(flat.max()) < tok.vocab_size  # the batching sentinel never leaks


def test_special_strings_in_text_are_matched_like_hf(models):
    """DECISIONS: the library's plain encode; ffbpe matches its special tokens in text, as HF does."""
    tok = load("unitoken", models["byte"])
    ids = tok.encode_ids(["a <pad> b", "<unk>"])
    assert 1 in ids[0] and ids[1] == [0]


def test_text_holding_the_batch_sentinel_still_encodes_exactly(models):
    from ffbpe import BpeEncoder

    ref = BpeEncoder.from_pretrained(models["byte"])
    tok = load("unitoken", models["byte"])
    texts = ["before", f"x{SENTINEL}y", "after", SENTINEL]
    assert tok.encode_ids(texts) == [ref.encode(t) for t in texts]


def test_model_without_pad_is_refused_with_advice(models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = write_jsonl(tmp_path / "d.jsonl", [{"q": "one", "a": "two"}])
    job = (
        pipeline("unit-build")
        .source.jsonl(files=[src], fields=[["q", "a"]], templates=["{q} {a}"])
        .tokenizer.unitoken({"path": models["nopad"]})
        .units(sizes=[[16]], build_batch=[8])
        .output.dir("out", samples_per_shard=[10])
    )
    with pytest.raises(E.TokenizerSpecialTokenError) as info:
        job.validate()
    text = info.value.render("en")
    assert text.startswith(
        "TokenizerSpecialTokenError: Tokenizer library did not expose a required special "
        "token.\n\nSpecial token: pad_id"
    )
    assert "mintdim tokenizer add-specials" in text and "mintdim tokenizer add-specials" in info.value.render(
        "vi"
    )


def test_not_a_model_directory_and_missing_path(models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = write_jsonl(tmp_path / "d.jsonl", [{"q": "one", "a": "two"}])
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "file.json").write_text("{}")

    def job(path):
        return (
            pipeline("unit-build")
            .source.jsonl(files=[src], fields=[["q", "a"]], templates=["{q} {a}"])
            .tokenizer.unitoken({"path": path})
            .units(sizes=[[16]], build_batch=[8])
            .output.dir("out", samples_per_shard=[10])
        )

    with pytest.raises(E.TokenizerValidationError) as info:
        job("./empty_dir").validate()
    assert info.value.render("en").startswith("TokenizerValidationError: Unsupported tokenizer format.")
    assert "./empty_dir" in info.value.render("en") and "unitoken" in info.value.render("en")
    for path, parent in (("./file.json", "."), (os.path.join(models["byte"], "vocab.json"), models["byte"])):
        with pytest.raises(E.TokenizerValidationError) as info:
            job(path).validate()
        en = info.value.render("en")
        assert f"Problem: unitoken expects a tokenizer directory, but path {path} is a file" in en
        if parent == ".":  # not a model's directory: what one holds, not a fix that fails next
            assert ". is not a unitoken model directory: it has no ffbpe.json" in en
            assert "Fix: name its directory" not in en
        else:  # a model file: its directory is the fix
            assert f"Fix: name its directory: tokenizer: {{unitoken: {{path: {parent}}}}}" in en
    with pytest.raises(E.MintDimFileNotFoundError) as info:
        job("./no/such/model").validate()
    assert "Context: tokenizer" in info.value.render("en")
    with pytest.raises(E.TokenizerValidationError) as info:
        (
            pipeline("unit-build")
            .source.jsonl(files=[src], fields=[["q", "a"]], templates=["{q} {a}"])
            .tokenizer.unitoken({"path": models["byte"], "pad_id": 1})
            .units(sizes=[[16]], build_batch=[8])
            .output.dir("out", samples_per_shard=[10])
        ).validate()
    assert "unknown keys: ['pad_id']" in info.value.render("en")
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / ".mintdim")


def test_token_starts_for_loss_masks(models, tmp_path):
    """encode_batch_with_starts (source.train_on): the same ids, and character starts equal to Hugging Face's
    offsets of the exported byte-level tokenizer (multi-byte characters included); for a unicode model,
    equal to the decoded length of each prefix."""
    from mintdim.tokenizers.export import export

    texts = gsm8k_texts(300) + EDGE_TEXTS + ["早上好，世界", "Chào buổi sáng 🙂🙂"]
    tok = load("unitoken", models["byte"])
    flat, lengths, starts = tok.encode_batch_with_starts(texts)
    assert np.array_equal(flat, tok.encode_batch(texts)[0])
    export(models["byte"], str(tmp_path / "hf.json"))
    hf_flat, hf_lengths, hf_starts = load("hf_json", str(tmp_path / "hf.json")).encode_batch_with_starts(
        texts
    )
    assert np.array_equal(hf_flat, flat) and np.array_equal(hf_starts, starts)
    uni = load("unitoken", models["unicode"])
    short = gsm8k_texts(20)
    flat, lengths, starts = uni.encode_batch_with_starts(short)
    ends = np.cumsum(lengths)
    for _text, end, n in zip(short, ends, lengths):
        ids = flat[end - n : end].tolist()
        assert starts[end - n : end].tolist() == [len(uni.decode(ids[:k])) for k in range(n)]


# --- training -----------------------------------------------------------------------------------------------


def test_hot_pair_window_gives_the_same_model(tmp_path):
    texts = gsm8k_texts(400)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    training.train_texts(iter(texts), a, vocab_size=1200)
    stats = training.train_texts(iter(texts), b, vocab_size=1200, hot_pair_window_size=64)
    assert stats["hot_pair_window_stats"]["hydration_scans"] >= 1
    for name in ("ffbpe.json", "vocab.json", "merges.txt"):
        assert sha(os.path.join(a, name)) == sha(os.path.join(b, name))


def test_rendered_texts_stream_chunk_by_chunk_with_data_errors_located(tmp_path):
    from types import SimpleNamespace

    rows = [{"q": f"question {i} " + "x" * 200, "a": f"answer {i}"} for i in range(3000)]
    rows[2500] = "{not json"
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    source = SimpleNamespace(fields=["q", "a"], template="Q: {q}\nA: {a}")
    entry = SimpleNamespace(index=0, path="./d.jsonl", abspath=path, source=source)
    build = SimpleNamespace(files=[entry], chunk_mb=0.05)
    stats = training.TextStats()
    it = training.iter_rendered(build, [0], stats)
    assert next(it) == "Q: " + rows[0]["q"] + "\nA: answer 0"
    with pytest.raises(E.SourceParseError) as info:
        for _ in it:
            pass
    assert info.value.line == 2501 and "./d.jsonl" in info.value.render("en")
    assert stats.samples == 2500


def _train_job(tmp_path, src, **tok):
    opts = {"vocab_size": 1000, "out": "./tok/bpe", **tok}
    return (
        pipeline("unit-build")
        .source.jsonl(files=[src], fields=[["question", "answer"]], templates=["Q: {question}\nA: {answer}"])
        .tokenizer.train_bpe(opts)
        .units(sizes=[[128, 256, 512, 1024]], build_batch=[200])
        .output.dir("./out", samples_per_shard=[400])
    )


@pytest.mark.parametrize(
    "tok,component",
    [
        ({"vocab_size": 100}, "train_bpe.vocab_size"),
        ({"vocab_size": True}, "train_bpe.vocab_size"),
        ({"unit": "char"}, "train_bpe.unit"),
        ({"out": ""}, "train_bpe.out"),
        ({"hot_pair_window_size": 0}, "train_bpe.hot_pair_window_size"),
        ({"path": "x"}, "train_bpe"),
        ({"out": "./out/tok"}, "train_bpe.out"),
    ],
)
def test_train_bpe_config_errors(tmp_path, monkeypatch, tok, component):
    monkeypatch.chdir(tmp_path)
    src = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(E.TokenizerValidationError) as info:
        _train_job(tmp_path, src, **tok).validate()
    en = info.value.render("en")
    assert en.startswith(f"TokenizerValidationError: Invalid tokenizer config.\n\nComponent: {component}\n\n")
    rules = en.split("Rules:\n\n")[1].split("\n\n")[0].splitlines()
    key = component.partition(".")[2]
    if key:  # a key's problem lists that key's rule only
        assert rules and all(r.startswith(f"• {key} ") for r in rules), rules
    else:  # the whole item's: every rule of train_bpe
        assert "• vocab_size is an int >= 258 (256 bytes + <unk> + <pad>)" in rules and len(rules) == 5
    assert info.value.render("vi").startswith("TokenizerValidationError: Cấu hình tokenizer không hợp lệ.")
    assert os.listdir(tmp_path) == ["d.jsonl"]


def test_train_bpe_preflight_before_training(tmp_path, monkeypatch):
    """The tokenizer does not exist yet: pre-flight still reports the spec's classes, and creates nothing."""
    monkeypatch.chdir(tmp_path)
    src = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}])
    build = _train_job(tmp_path, src).validate()  # passes, nothing trained yet
    assert (
        build.files[0].tokenizer.kind == "unitoken" and build.files[0].tokenizer.train["vocab_size"] == 1000
    )
    job = (
        pipeline("unit-build")
        .source.jsonl(files=[src], fields=[["question", "answer"]], templates=["<unk>{question}\n{answer}"])
        .tokenizer.train_bpe({"vocab_size": 1000, "out": "./tok/bpe"})
        .units(sizes=[[16]], build_batch=[8])
        .output.dir("./out", samples_per_shard=[10])
    )
    with pytest.raises(E.TemplateTokenizerError):
        job.validate()
    (tmp_path / "tok" / "bpe").mkdir(parents=True)
    (tmp_path / "tok" / "bpe" / "mine.txt").write_text("not MintDim's")
    with pytest.raises(E.OutputValidationError) as info:
        _train_job(tmp_path, src).validate()
    assert "Directory: ./tok/bpe" in info.value.render("en")
    assert (tmp_path / "tok" / "bpe" / "mine.txt").read_text() == "not MintDim's"
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / ".mintdim")


def test_train_bpe_build_then_the_same_build_from_the_saved_model(tmp_path, monkeypatch):
    """End to end (Snakemake, 2 cores): train on the build's own rendered samples, then tokenize with it;
    the saved model, referenced in the manifest, rebuilds the same shards as a unitoken tokenizer."""
    from ffbpe import BpeEncoder

    monkeypatch.chdir(tmp_path)
    rows = [json.loads(line) for line in open(GSM8K, encoding="utf-8")][:600]
    src = write_jsonl(tmp_path / "data" / "gsm.jsonl", rows)
    src = "./data/gsm.jsonl"
    result = _train_job(tmp_path, src, hot_pair_window_size=256).run(cores=2)
    manifest = read_json(tmp_path / "out" / "manifest.json")
    tok = manifest["tokenizer"]
    assert (tok["type"], tok["path"], tok["unk_id"], tok["pad_id"]) == ("unitoken", "./tok/bpe", 0, 1)
    assert tok["vocab_size"] == 1000 and manifest["token_dtype"] == "uint16"
    trained = tok["trained"]
    assert trained["corpus"]["files"] == [src] and trained["samples"] == 600
    assert trained["hot_pair_window_size"] == 256 and trained["special_tokens"] == ["<unk>", "<pad>"]
    assert sorted(os.listdir(tmp_path / "tok" / "bpe")) == [
        "ffbpe.json",
        "merges.txt",
        "mintdim-train.json",
        "vocab.json",
    ]
    # the shards hold ffbpe's own ids for the rendered samples, then pad
    ref = BpeEncoder.from_pretrained(str(tmp_path / "tok" / "bpe"))
    index = read_jsonl(tmp_path / "out" / "sample_index.jsonl")
    for row in index[:40]:
        sample = rows[row["sample_id"]]
        want = ref.encode(f"Q: {sample['question']}\nA: {sample['answer']}")
        shard = np.fromfile(tmp_path / "out" / row["shard_path"], dtype="<u2").reshape(-1, row["unit_size"])
        record = shard[row["shard_row"]]
        assert record[: row["token_count"]].tolist() == want
        assert set(record[row["token_count"] :].tolist()) <= {1}
    assert result.stats["total_samples"] == 600
    # reproducible: the same build with the saved model as a unitoken tokenizer, into another directory
    job = (
        pipeline("unit-build")
        .source.jsonl(files=[src], fields=[["question", "answer"]], templates=["Q: {question}\nA: {answer}"])
        .tokenizer.unitoken({"path": "./tok/bpe"})
        .units(sizes=[[128, 256, 512, 1024]], build_batch=[64])
        .output.dir("./out2", samples_per_shard=[400])
    )
    job.run(cores=1)
    for unit in (128, 256, 512, 1024):
        for name in sorted(os.listdir(tmp_path / "out" / f"unit_{unit}")):
            assert sha(tmp_path / "out" / f"unit_{unit}" / name) == sha(
                tmp_path / "out2" / f"unit_{unit}" / name
            )
    assert read_json(tmp_path / "out2" / "manifest.json")["tokenizer"]["type"] == "unitoken"
    assert "trained" not in read_json(tmp_path / "out2" / "manifest.json")["tokenizer"]


# --- export -------------------------------------------------------------------------------------------------


def test_export_to_tokenizer_json_gives_identical_ids_on_real_text(models, tmp_path):
    from mintdim.tokenizers.export import export

    out = str(tmp_path / "bpe.json")
    texts = gsm8k_texts()
    report = export(models["byte"], out, check_texts=texts[:100])
    assert report["vocab_size"] == 1500
    hf = load("hf_json", out)  # MintDim's own hf_json kind finds the same UNK and PAD
    uni = load("unitoken", models["byte"])
    assert (hf.unk_id, hf.pad_id, hf.vocab_size) == (uni.unk_id, uni.pad_id, uni.vocab_size)
    flat_hf, len_hf = hf.encode_batch(texts + EDGE_TEXTS)
    flat_u, len_u = uni.encode_batch(texts + EDGE_TEXTS)
    assert np.array_equal(len_hf, len_u) and np.array_equal(flat_hf, flat_u)
    with pytest.raises(E.MintDimError, match="never overwrites"):
        export(models["byte"], out)
    with pytest.raises(E.MintDimError, match="unicode-unit"):
        export(models["unicode"], str(tmp_path / "uni.json"))


# --- add-specials -------------------------------------------------------------------------------------------


def _sp_model(tmp_path, model_type: str) -> str:
    import sentencepiece as spm

    lines = [json.loads(line)["question"] for line in open(GSM8K, encoding="utf-8")][:600]
    buf = io.BytesIO()
    # pad_id -1: no pad, as Mistral
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, vocab_size=300, model_type=model_type, minloglevel=2
    )
    path = tmp_path / f"nopad-{model_type}.model"
    path.write_bytes(buf.getvalue())
    return str(path)


def _same_ids(kind, a, b, texts):
    old, new = load(kind, a), load(kind, b)
    assert old.encode_ids(texts) == new.encode_ids(texts)
    return old, new


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_add_specials_sentencepiece(tmp_path, model_type):
    from mintdim.tokenizers.specials import add_specials

    src = _sp_model(tmp_path, model_type)
    before = sha(src)
    out = str(tmp_path / "padded.model")
    report = add_specials(src, out)
    assert report["added"] == {"pad_id": 300} and report["vocab_size"] == [300, 301]
    old, new = _same_ids("sentencepiece", src, out, gsm8k_texts() + EDGE_TEXTS)
    assert old.pad_id is None and new.pad_id == 300 and new.unk_id == old.unk_id
    assert all(old.sp.id_to_piece(i) == new.sp.id_to_piece(i) for i in range(300))
    assert sha(src) == before  # IN untouched
    with pytest.raises(E.MintDimError, match="never overwrites"):
        add_specials(src, out)


def test_add_specials_hf_json_byte_level_bpe_without_unk_or_pad(tmp_path):
    """Like Llama 3 / DeepSeek: a byte-level BPE tokenizer.json with neither unk nor padding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from mintdim.tokenizers.specials import add_specials

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator(
        gsm8k_texts(500),
        trainers.BpeTrainer(
            vocab_size=600,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=["<|eot|>"],
            show_progress=False,
        ),
    )
    src = str(tmp_path / "nounk.json")
    hf.save(src)
    before = sha(src)
    out = str(tmp_path / "fixed.json")
    report = add_specials(src, out)
    assert report["added"] == {"pad_id": 600, "unk_id": 601}
    old, new = _same_ids(
        "hf_json", src, out, gsm8k_texts() + [t for t in EDGE_TEXTS if "<pad>" not in t and "<unk>" not in t]
    )
    assert (old.unk_id, old.pad_id) == (None, None) and (new.pad_id, new.unk_id) == (600, 601)
    old_vocab = old.tok.get_vocab(with_added_tokens=True)
    assert all(new.tok.token_to_id(t) == i for t, i in old_vocab.items())
    assert sha(src) == before


def test_add_specials_hf_json_pad_only_keeps_minilm_ids(tmp_path):
    from mintdim.tokenizers.specials import add_specials

    data = json.loads(open(HF_JSON, encoding="utf-8").read())
    data["padding"] = None
    src = tmp_path / "nopad.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    report = add_specials(str(src), str(tmp_path / "pad.json"), pad="<|pad|>")
    assert report["added"] == {"pad_id": 30522}
    _same_ids("hf_json", str(src), str(tmp_path / "pad.json"), gsm8k_texts(300))
    with pytest.raises(E.MintDimError, match="already in the vocabulary"):
        add_specials(str(src), str(tmp_path / "pad2.json"), pad="[PAD]")
    with pytest.raises(E.MintDimError, match="already has unk_id 100"):
        add_specials(str(src), str(tmp_path / "pad3.json"), unk="<unk>")


def test_add_specials_unitoken_directory_then_build_preflight_accepts_it(models, tmp_path, monkeypatch):
    from mintdim.tokenizers.specials import add_specials

    out = str(tmp_path / "withpad")
    report = add_specials(models["nopad"], out)
    assert report["added"] == {"pad_id": 800}
    _same_ids("unitoken", models["nopad"], out, gsm8k_texts())
    monkeypatch.chdir(tmp_path)
    src = write_jsonl(tmp_path / "d.jsonl", [{"q": "one", "a": "two"}])
    build = (
        pipeline("unit-build")
        .source.jsonl(files=[src], fields=[["q", "a"]], templates=["{q} {a}"])
        .tokenizer.unitoken({"path": out})
        .units(sizes=[[16]], build_batch=[8])
        .output.dir("out", samples_per_shard=[10])
    ).validate()
    assert build.files[0].tokenizer.kind == "unitoken"


def _asset(*parts) -> str:
    path = os.path.join(ASSETS, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} not present")
    return path


def _sharegpt_texts(n=200) -> list[str]:
    path = os.path.join(ASSETS, "data", "sharegpt_pairs.jsonl")
    if not os.path.exists(path):
        return gsm8k_texts(n)
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if len(out) >= n:
                break
            row = json.loads(line)
            out.append(row["prompt"] + "\n" + row["response"])
    return out


@pytest.mark.parametrize(
    "parts,kind,added",
    [
        (("sp", "mistral", "tokenizer.model.v1"), "sentencepiece", {"pad_id": 32000}),
        (("hf", "llama3.2", "tokenizer.json"), "hf_json", {"pad_id": 128257, "unk_id": 128258}),
        (("hf", "deepseek", "tokenizer.json"), "hf_json", None),
    ],
    ids=["mistral", "llama3.2", "deepseek"],
)
def test_add_specials_real_tokenizers(tmp_path, parts, kind, added):
    from mintdim.tokenizers.specials import add_specials

    src = _asset(*parts)
    before = sha(src)
    out = str(tmp_path / ("fixed.model" if kind == "sentencepiece" else "fixed.json"))
    report = add_specials(src, out)
    if added:
        assert report["added"] == added
    old, new = _same_ids(kind, src, out, _sharegpt_texts() + gsm8k_texts(200))
    assert new.unk_id is not None and new.pad_id is not None
    assert sha(src) == before


# --- the command --------------------------------------------------------------------------------------------


def test_cli_tokenizer_train_export_add_specials(tmp_path, monkeypatch, capsys):
    from mintdim.cli import main

    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "tokenizer",
                "train",
                "tok",
                "--vocab-size",
                "600",
                "--jsonl",
                GSM8K,
                "--fields",
                "question",
                "answer",
                "--template",
                "{question}\n{answer}",
                "--quiet",
            ]
        )
        == 0
    )
    assert "[tokenizer] trained tok: vocab 600" in capsys.readouterr().out
    record = read_json(tmp_path / "tok" / "mintdim-train.json")
    assert record["reference"]["corpus"]["templates"] == ["{question}\n{answer}"]
    assert main(["tokenizer", "export", "tok", "tok.json", "--check", GSM8K]) == 0
    assert "identical ids on 1320 texts" in capsys.readouterr().out
    assert main(["tokenizer", "add-specials", "tok", "tok2"]) == 1
    assert "nothing to add" in capsys.readouterr().err
    assert (
        main(["tokenizer", "train", "tok", "--vocab-size", "600", "--jsonl", GSM8K, "--fields", "question"])
        == 1
    )
    assert "never overwrites" in capsys.readouterr().err
    assert main(["tokenizer", "train", "tok3", "--vocab-size", "600"]) == 2
    assert not os.path.exists(tmp_path / "tok2") and not os.path.exists(tmp_path / "tok3")


def test_cli_is_installed_and_documents_the_tools(tmp_path):
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "mintdim", "tokenizer", "add-specials", "--help"],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
    )
    assert res.returncode == 0 and "--pad TOKEN" in res.stdout and "--unk TOKEN" in res.stdout


def test_tokenizer_tool_error_is_in_the_catalogue_with_both_languages(tmp_path):
    from mintdim.tokenizers import specials

    assert specials.TokenizerToolError is E.TokenizerToolError is E.ERROR_CLASSES["TokenizerToolError"]
    existing = tmp_path / "tok.json"
    existing.write_text("{}")
    with pytest.raises(E.TokenizerToolError) as info:
        specials.add_specials(HF_JSON, str(existing))
    err = info.value
    assert err.render("en") == (
        f"TokenizerToolError: {existing} already exists; MintDim never overwrites a file. Choose a new OUT."
    )
    assert err.render("vi") == (
        f"TokenizerToolError: {existing} đã tồn tại; MintDim không bao giờ ghi đè file. Hãy chọn OUT mới."
    )
    assert existing.read_text() == "{}"
    odd = tmp_path / "tok.bin"
    odd.write_bytes(b"\x00\x01")
    with pytest.raises(E.TokenizerToolError) as info:
        specials.kind_of(str(odd))
    assert info.value.render("vi") == (
        f"TokenizerToolError: {odd}: không phải SentencePiece .model, tokenizer.json "
        "(.json) hay thư mục model unitoken"
    )
    back = E.MintDimError.from_dict(err.to_dict(), lang="vi")  # crosses a process boundary unchanged
    assert type(back) is E.TokenizerToolError and back.render("vi") == err.render("vi")
