"""The error catalogue: every MintDim error class, its English and Vietnamese texts, and where it is raised.

Pre-flight errors run in-process through the fluent API (no Snakemake starts:
`subprocess.Popen` is guarded, and the Snakemake process `mintdim build` starts before its
pre-flight is a stand-in that fails the test if it is ever handed a command line). A few run through a
YAML config with a direct `snakemake` run and through `mintdim build`. Data errors run end to end.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess

import pytest
import yaml
from conftest import (
    GSM8K,
    HF_JSON,
    SP_MODEL,
    basic_config,
    build_in,
    read_json,
    run_cli,
    run_snakemake,
    write_jsonl,
)

import mintdim
from mintdim import errors as E
from mintdim import pipeline

# ------------------------------------------------------------------------------------------------------------
# helpers


def snapshot(root, ignore=(".snakemake", "mintdim-config.yaml")) -> set[str]:
    """Every file and directory below root (relative), except Snakemake's own bookkeeping."""
    found = set()
    for base, dirs, files in os.walk(root):
        rel = os.path.relpath(base, root)
        dirs[:] = [d for d in dirs if not (rel == "." and d in ignore)]
        for name in dirs + files:
            if rel == "." and name in ignore:
                continue
            found.add(os.path.normpath(os.path.join(rel, name)))
    return found


def assert_spec_text(err: E.MintDimError, en: str, vi: str) -> None:
    """The spec's text, headed by the class name, in both languages; a line of advice may follow."""
    got_en, got_vi = err.render("en"), err.render("vi")
    assert got_en.startswith(en), f"English text differs.\n--- expected (prefix)\n{en}\n--- got\n{got_en}"
    assert got_vi.startswith(vi), f"Vietnamese text differs.\n--- expected (prefix)\n{vi}\n--- got\n{got_vi}"
    rest_en, rest_vi = got_en[len(en) :], got_vi[len(vi) :]
    assert rest_en == "" or rest_en.startswith("\n"), rest_en
    assert rest_vi == "" or rest_vi.startswith("\n"), rest_vi


def fluent(cfg: dict):
    """The fluent API job equivalent to a config dict (as basic_config returns it)."""
    opts = {k: cfg[k] for k in ("lang", "work_dir", "chunk_mb") if k in cfg}
    job = pipeline("unit-build", **opts)
    if "source" in cfg:
        job = job.source.jsonl(**cfg["source"])
    if "tokenizer" in cfg:
        ((kind, value),) = cfg["tokenizer"].items()
        job = getattr(job.tokenizer, kind)(value)
    if "units" in cfg:
        job = job.units(**cfg["units"])
    if "output" in cfg:
        out = dict(cfg["output"])
        job = job.output.dir(out.pop("dir", None), **out)
    return job


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """An empty working directory, made the cwd; Snakemake must never start in pre-flight tests."""
    monkeypatch.chdir(tmp_path)

    def no_snakemake(*args, **kwargs):
        raise AssertionError(f"pre-flight passed and a subprocess was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", no_snakemake)
    return tmp_path


@pytest.fixture
def ws_data(tmp_path, monkeypatch):
    """An empty working directory, made the cwd, for builds that run Snakemake."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def preflight_error(ws, cfg_or_job, cls, *, via="run"):
    """Run pre-flight through the API and return the error; asserts its class and that nothing was created."""
    before = snapshot(ws)
    with pytest.raises(E.MintDimError) as info:
        if via == "config":  # the config dict as a YAML file holds it, through the runner
            build_in(ws, cfg_or_job, cores=1)
        else:
            job = cfg_or_job if hasattr(cfg_or_job, "run") else fluent(cfg_or_job)
            job.run(cores=1) if via == "run" else job.validate()
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}:\n{err}"
    assert str(err).startswith(f"{cls.__name__}: ")
    assert snapshot(ws) == before, "a failing pre-flight must create nothing"
    assert not os.path.exists(ws / ".mintdim")
    return err


def rows(n=40, start=0):
    return [
        {"prompt": f"What is {i} plus one?", "response": f"It is {i + 1}.", "id": i}
        for i in range(start, start + n)
    ]


def src(ws, name="data/train.jsonl", n=3):
    """A small valid input file at a relative path; returns the path as declared."""
    write_jsonl(ws / name, rows(n))
    return f"./{name}"


ALL_MISSING = [
    "source.files",
    "source.fields",
    "source.templates",
    "tokenizer",
    "units.sizes",
    "units.build_batch",
    "output.dir",
    "output.samples_per_shard",
]


def missing_text(keys):
    bullets = "\n".join(f"• {k}" for k in keys)
    return (
        f"PipelineValidationError: Pipeline configuration is incomplete.\n\nMissing:\n\n{bullets}",
        f"PipelineValidationError: Pipeline chưa được cấu hình đầy đủ.\n\nThiếu:\n\n{bullets}",
    )


# ------------------------------------------------------------------------------------------------------------
# error classes are importable from mintdim and mintdim.errors


SPEC_CLASSES = [
    "PipelineValidationError",
    "MintDimFileNotFoundError",
    "SourceParseError",
    "SampleSchemaError",
    "TokenizerValidationError",
    "TokenizerSpecialTokenError",
    "TokenizerMappingError",
    "FieldMappingError",
    "TemplateMappingError",
    "TemplateFieldMismatchError",
    "TemplateTokenizerError",
    "UnitMappingError",
    "OutputMappingError",
    "UnitValidationError",
    "UnitOverflowError",
    "OutputValidationError",
    "TokenDTypeValidationError",
    "SamplesPerShardError",
]


@pytest.mark.parametrize("name", SPEC_CLASSES)
def test_error_class_importable(name):
    cls = getattr(mintdim, name)
    assert cls is getattr(E, name)
    assert issubclass(cls, E.MintDimError) and issubclass(cls, Exception)


# ------------------------------------------------------------------------------------------------------------
# PipelineValidationError


def test_pipeline_nothing_configured_lists_every_block(ws):
    err = preflight_error(ws, pipeline("unit-build"), E.PipelineValidationError)
    assert_spec_text(err, *missing_text(ALL_MISSING))
    # the spec's own combined rendering
    both = err.render("both")
    assert both.startswith("[english] PipelineValidationError: Pipeline configuration is incomplete.")
    assert "\n\n[vietnam] PipelineValidationError: Pipeline chưa được cấu hình đầy đủ." in both


def test_pipeline_lists_only_missing_blocks_in_spec_order(ws):
    job = (
        pipeline("unit-build")
        .units(sizes=[[16, 32]], build_batch=[8])
        .source.jsonl(files=[src(ws)], templates=["{prompt}\n{response}"])
    )
    err = preflight_error(ws, job, E.PipelineValidationError)
    expected = ["source.fields", "tokenizer", "output.dir", "output.samples_per_shard"]
    assert_spec_text(err, *missing_text(expected))
    for present in ("source.files", "source.templates", "units.sizes", "units.build_batch"):
        assert f"• {present}" not in err.render("en")


def test_pipeline_missing_samples_per_shard_only(ws):
    cfg = basic_config([src(ws)])
    del cfg["output"]["samples_per_shard"]
    err = preflight_error(ws, cfg, E.PipelineValidationError)
    assert_spec_text(err, *missing_text(["output.samples_per_shard"]))
    assert err.render("en").count("•") == 1


def test_pipeline_missing_units_and_tokenizer_in_config_dict(ws):
    cfg = basic_config([src(ws)])
    del cfg["units"], cfg["tokenizer"]
    err = preflight_error(ws, cfg, E.PipelineValidationError, via="validate")
    assert_spec_text(err, *missing_text(["tokenizer", "units.sizes", "units.build_batch"]))


def test_unknown_pipeline_name():
    with pytest.raises(E.PipelineValidationError) as info:
        pipeline("unit-bild")
    assert "unit-bild" in info.value.render("en")
    assert "unit-build" in info.value.render("en")  # says what is supported
    assert "unit-bild" in info.value.render("vi")
    assert info.value.render("vi") != info.value.render("en")


# ------------------------------------------------------------------------------------------------------------
# MintDimFileNotFoundError


def test_missing_source_file_spec_text(ws):
    cfg = basic_config(["./data/train.jsonl"])
    err = preflight_error(ws, cfg, E.MintDimFileNotFoundError)
    assert_spec_text(
        err,
        "MintDimFileNotFoundError: Required file was not found.\n\nContext: source\n\n"
        "Missing file: ./data/train.jsonl",
        "MintDimFileNotFoundError: Không tìm thấy file cần dùng.\n\nContext: source\n\n"
        "File thiếu: ./data/train.jsonl",
    )


def test_missing_second_source_file_is_named(ws):
    cfg = basic_config([src(ws), "./data/other.jsonl"])
    err = preflight_error(ws, cfg, E.MintDimFileNotFoundError)
    assert "Missing file: ./data/other.jsonl" in err.render("en")
    assert "File thiếu: ./data/other.jsonl" in err.render("vi")


def test_missing_tokenizer_file(ws):
    cfg = basic_config([src(ws)], tokenizer={"sentencepiece": {"path": "./tokenizer/tokenizer.model"}})
    err = preflight_error(ws, cfg, E.MintDimFileNotFoundError)
    assert_spec_text(
        err,
        "MintDimFileNotFoundError: Required file was not found.\n\nContext: tokenizer\n\n"
        "Missing file: ./tokenizer/tokenizer.model",
        "MintDimFileNotFoundError: Không tìm thấy file cần dùng.\n\nContext: tokenizer\n\n"
        "File thiếu: ./tokenizer/tokenizer.model",
    )


def test_missing_hf_tokenizer_file(ws):
    cfg = basic_config([src(ws)], tokenizer={"hf_json": {"path": "./tokenizer/tokenizer.json"}})
    err = preflight_error(ws, cfg, E.MintDimFileNotFoundError)
    assert "Context: tokenizer" in err.render("en")
    assert "File thiếu: ./tokenizer/tokenizer.json" in err.render("vi")


# ------------------------------------------------------------------------------------------------------------
# TokenizerValidationError

TOK_RULES_EN = (
    "Rules:\n\n• config must be a dict with key: path\n• path must be a string\n"
    "• unk_id and pad_id are loaded from the tokenizer library"
)
TOK_RULES_VI = (
    "Quy tắc:\n\n• config phải là dict có key: path\n• path phải là string\n"
    "• unk_id và pad_id được lấy từ thư viện tokenizer"
)
UNSUPPORTED_EN = (
    "TokenizerValidationError: Unsupported tokenizer format.\n\nSupported formats:\n\n"
    "• sentencepiece (.model)\n• huggingface tokenizer (.json)"
)
UNSUPPORTED_VI = (
    "TokenizerValidationError: Định dạng tokenizer chưa được hỗ trợ.\n\nCác định dạng hiện hỗ trợ:\n\n"
    "• sentencepiece (.model)\n• huggingface tokenizer (.json)"
)


def test_tokenizer_manual_pad_id_spec_text(ws):
    job = fluent(basic_config([src(ws)])).tokenizer.sentencepiece({"path": SP_MODEL, "pad_id": 1})
    err = preflight_error(ws, job, E.TokenizerValidationError)
    assert_spec_text(
        err,
        "TokenizerValidationError: Invalid tokenizer config.\n\nComponent: config\n\n"
        "Problem: tokenizer config has unknown keys: ['pad_id']. unk_id and pad_id are loaded from the "
        f"tokenizer library.\n\n{TOK_RULES_EN}",
        "TokenizerValidationError: Cấu hình tokenizer không hợp lệ.\n\nThành phần: config\n\n"
        "Vấn đề: config tokenizer có key không hợp lệ: ['pad_id']. unk_id và pad_id được lấy từ thư viện "
        f"tokenizer.\n\n{TOK_RULES_VI}",
    )


def test_tokenizer_manual_unk_id_in_hf_config(ws):
    job = fluent(basic_config([src(ws)])).tokenizer.hf_json({"path": HF_JSON, "unk_id": 100})
    err = preflight_error(ws, job, E.TokenizerValidationError)
    assert "unknown keys: ['unk_id']" in err.render("en")
    assert "key không hợp lệ: ['unk_id']" in err.render("vi")


@pytest.mark.parametrize("value", [SP_MODEL, [SP_MODEL], 42], ids=["bare-path", "list-of-paths", "int"])
def test_tokenizer_config_not_a_dict(ws, value):
    job = fluent(basic_config([src(ws)])).tokenizer.sentencepiece(value)
    err = preflight_error(ws, job, E.TokenizerValidationError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith(
        "TokenizerValidationError: Invalid tokenizer config.\n\nComponent: config\n\nProblem: "
    )
    assert "must be a dict" in en and en.endswith(TOK_RULES_EN)
    assert vi.startswith("TokenizerValidationError: Cấu hình tokenizer không hợp lệ.\n\nThành phần: config")
    assert TOK_RULES_VI in vi


def test_tokenizer_config_missing_path(ws):
    cfg = basic_config([src(ws), src(ws, "data/b.jsonl")])
    job = fluent(cfg).tokenizer.sentencepiece([{"path": SP_MODEL}, {}])
    err = preflight_error(ws, job, E.TokenizerValidationError)
    en = err.render("en")
    assert en.startswith("TokenizerValidationError: Invalid tokenizer config.")
    assert "missing key: path" in en and TOK_RULES_EN in en
    assert "thiếu key: path" in err.render("vi")


def test_tokenizer_config_empty_dict_is_missing_path(ws):
    """A declared tokenizer whose dict lacks path is a tokenizer config error, as it is inside a list."""
    job = fluent(basic_config([src(ws)])).tokenizer.sentencepiece({})
    err = preflight_error(ws, job, E.TokenizerValidationError)
    assert "missing key: path" in err.render("en")


@pytest.mark.parametrize("path", [123, ["a.model"], None], ids=["int", "list", "null"])
def test_tokenizer_path_not_a_string(ws, path):
    cfg = basic_config([src(ws), src(ws, "data/b.jsonl")])
    job = fluent(cfg).tokenizer.sentencepiece([{"path": SP_MODEL}, {"path": path}])
    err = preflight_error(ws, job, E.TokenizerValidationError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith("TokenizerValidationError: Invalid tokenizer config.")
    assert "path must be a string" in en.split("Rules:")[0]
    assert "path phải là string" in vi.split("Quy tắc:")[0]


@pytest.mark.parametrize(
    "kind,path",
    [("sentencepiece", HF_JSON), ("hf_json", SP_MODEL), ("sentencepiece", "tokenizer.vocab")],
    ids=["sp-given-json", "hf-given-model", "vocab-file"],
)
def test_tokenizer_wrong_extension_is_unsupported_format(ws, kind, path):
    cfg = basic_config([src(ws)], tokenizer={kind: {"path": path}})
    err = preflight_error(ws, cfg, E.TokenizerValidationError)
    assert_spec_text(err, UNSUPPORTED_EN, UNSUPPORTED_VI)


def test_tokenizer_unknown_kind_is_unsupported_format(ws):
    cfg = basic_config([src(ws)], tokenizer={"tiktoken": {"path": "x.tiktoken"}})
    err = preflight_error(ws, cfg, E.TokenizerValidationError, via="config")
    assert_spec_text(err, UNSUPPORTED_EN, UNSUPPORTED_VI)


@pytest.mark.parametrize(
    "kind,name,content",
    [
        ("sentencepiece", "broken.model", b"this is not a sentencepiece model\x00\x01"),
        ("hf_json", "broken.json", b'{"version": "1.0", "model": '),
        ("hf_json", "weird.json", b'{"hello": "world"}'),
    ],
    ids=["sp-garbage", "hf-truncated", "hf-not-a-tokenizer"],
)
def test_tokenizer_corrupt_file(ws, kind, name, content):
    (ws / "tok").mkdir()
    (ws / "tok" / name).write_bytes(content)
    cfg = basic_config([src(ws)], tokenizer={kind: {"path": f"./tok/{name}"}})
    err = preflight_error(ws, cfg, E.TokenizerValidationError)
    assert err.render("en").startswith("TokenizerValidationError: ")
    assert err.render("vi").startswith("TokenizerValidationError: ")
    assert f"./tok/{name}" in err.render("en")  # says which file
    assert f"./tok/{name}" in err.render("vi")


# ------------------------------------------------------------------------------------------------------------
# TokenizerSpecialTokenError


def _tiny_sp_model_bytes(**options) -> bytes:
    import sentencepiece as spm

    with open(GSM8K, encoding="utf-8") as f:
        lines = [json.loads(line)["question"] for _, line in zip(range(200), f)]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=200, model_type="unigram", **options
    )
    return model.getvalue()


SPECIAL_EN = "TokenizerSpecialTokenError: Tokenizer library did not expose a required special token.\n\n"
SPECIAL_VI = "TokenizerSpecialTokenError: Thư viện tokenizer không cung cấp special token bắt buộc.\n\n"


def test_sentencepiece_without_pad(ws):
    (ws / "tok").mkdir()
    (ws / "tok" / "nopad.model").write_bytes(_tiny_sp_model_bytes(pad_id=-1))
    cfg = basic_config([src(ws)], tokenizer={"sentencepiece": {"path": "./tok/nopad.model"}})
    err = preflight_error(ws, cfg, E.TokenizerSpecialTokenError)
    assert_spec_text(err, SPECIAL_EN + "Special token: pad_id", SPECIAL_VI + "Special token: pad_id")


def test_sentencepiece_with_pad_passes_preflight(ws):
    """Control for the case above: the same tiny model with a pad piece is accepted."""
    (ws / "tok").mkdir()
    (ws / "tok" / "pad.model").write_bytes(_tiny_sp_model_bytes(pad_id=3))
    cfg = basic_config(
        [src(ws)], templates=["{prompt} {response}"], tokenizer={"sentencepiece": {"path": "./tok/pad.model"}}
    )
    build = fluent(cfg).validate()
    assert build.files[0].tokenizer.path == "./tok/pad.model"


def test_hf_json_without_padding(ws):
    with open(HF_JSON, encoding="utf-8") as f:
        data = json.load(f)
    assert data.get("padding"), "the shipped tokenizer.json is expected to carry padding settings"
    data.pop("padding")
    (ws / "tok").mkdir()
    (ws / "tok" / "nopad.json").write_text(json.dumps(data), encoding="utf-8")
    cfg = basic_config([src(ws)], tokenizer={"hf_json": {"path": "./tok/nopad.json"}})
    err = preflight_error(ws, cfg, E.TokenizerSpecialTokenError)
    assert_spec_text(err, SPECIAL_EN + "Special token: pad_id", SPECIAL_VI + "Special token: pad_id")


def test_hf_json_without_unk(ws):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[PAD]": 0, "w": 1, "h": 2, "a": 3, "t": 4, "i": 5, "s": 6}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    (ws / "tok").mkdir()
    tok.save(str(ws / "tok" / "nounk.json"))
    cfg = basic_config([src(ws)], tokenizer={"hf_json": {"path": "./tok/nounk.json"}})
    err = preflight_error(ws, cfg, E.TokenizerSpecialTokenError)
    assert_spec_text(err, SPECIAL_EN + "Special token: unk_id", SPECIAL_VI + "Special token: unk_id")


# ------------------------------------------------------------------------------------------------------------
# mapping arity: 3 files, 2 of something


def three_files(ws):
    return [src(ws, f"data/{n}.jsonl") for n in ("a", "b", "c")]


def arity_texts(what_en, what_vi, shared_en, mapped_en, shared_vi, mapped_vi):
    return (
        f"Received 3 input files but 2 {what_en}.\n\nMintDim supports:\n\n• {shared_en}\n• {mapped_en}",
        f"Nhận 3 file đầu vào nhưng chỉ có 2 {what_vi}.\n\nMintDim hỗ trợ:\n\n• {shared_vi}\n• {mapped_vi}",
    )


def test_tokenizer_mapping_arity_spec_text(ws):
    job = fluent(basic_config(three_files(ws))).tokenizer.sentencepiece(
        [{"path": SP_MODEL}, {"path": SP_MODEL}]
    )
    err = preflight_error(ws, job, E.TokenizerMappingError)
    en, vi = arity_texts(
        "tokenizers",
        "tokenizer",
        "1 tokenizer shared across all files",
        "N tokenizers for N files",
        "1 tokenizer dùng chung cho tất cả file",
        "N tokenizer cho N file",
    )
    assert_spec_text(err, "TokenizerMappingError: " + en, "TokenizerMappingError: " + vi)


def test_a_file_declared_twice_for_one_output_is_refused_before_anything_runs(ws):
    """The indexes name a sample's file by its declared path: the same path twice in one output built an
    output that mintdim verify (and so export) refused. Pre-flight refuses it, saying what to do instead."""
    path = src(ws, "data/a.jsonl")
    src(ws, "data/b.jsonl")
    cfg = basic_config(
        [path, "./data/b.jsonl", path],
        templates=["{prompt} {response}", "{prompt}\n{response}", "{response}: {prompt}"],
    )
    err = preflight_error(ws, cfg, E.OutputMappingError)
    assert err.render("en").startswith(
        "OutputMappingError: A file is declared twice for one output directory."
    )
    assert f"File: {path} (source.files items 0 and 2, counting from 0)" in err.render("en")
    assert "source.take (2.0 takes every sample twice)" in err.render("en")
    assert err.render("vi").startswith(
        "OutputMappingError: Một file được khai báo hai lần cho cùng một thư mục output."
    )


def test_one_file_in_two_outputs_builds_outputs_that_verify(ws_data):
    ws = ws_data
    path = src(ws, "data/a.jsonl")
    cfg = basic_config(
        [path, path], templates=["{prompt} {response}", "{response}: {prompt}"], out=["o1", "o2"]
    )
    build_in(ws, cfg, cores=1)
    for out in ("o1", "o2"):
        assert mintdim.verify(str(ws / out), source=True, root=str(ws)).ok


def test_tokenizer_mapping_more_tokenizers_than_files(ws):
    files = [src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")]
    job = fluent(basic_config(files)).tokenizer.sentencepiece([{"path": SP_MODEL}] * 3)
    err = preflight_error(ws, job, E.TokenizerMappingError)
    assert err.render("en").startswith("TokenizerMappingError: Received 2 input files but 3 tokenizers.")
    assert err.render("vi").startswith("TokenizerMappingError: Nhận 2 file đầu vào nhưng chỉ có 3 tokenizer.")


def test_field_mapping_arity_spec_text(ws):
    cfg = basic_config(three_files(ws), fields=[["prompt", "response"], ["prompt", "response"]])
    err = preflight_error(ws, cfg, E.FieldMappingError)
    en, vi = arity_texts(
        "field configs",
        "cấu hình fields",
        "1 field config shared across all files",
        "N field configs for N files",
        "1 fields dùng chung cho tất cả file",
        "N fields cho N file",
    )
    assert_spec_text(err, "FieldMappingError: " + en, "FieldMappingError: " + vi)


def test_template_mapping_arity_spec_text(ws):
    cfg = basic_config(three_files(ws), templates=["{prompt}\n{response}", "{prompt} {response}"])
    err = preflight_error(ws, cfg, E.TemplateMappingError)
    en, vi = arity_texts(
        "templates",
        "template",
        "1 template shared across all files",
        "N templates for N files",
        "1 template dùng chung cho tất cả file",
        "N template cho N file",
    )
    assert_spec_text(err, "TemplateMappingError: " + en, "TemplateMappingError: " + vi)


UNIT_ARITY = arity_texts(
    "unit configs",
    "unit config",
    "1 unit config shared across all files",
    "N unit configs for N input files",
    "1 unit config dùng chung cho tất cả file",
    "N unit config cho N file",
)


@pytest.mark.parametrize(
    "units",
    [dict(sizes=[[16, 32], [16, 64]], build_batch=[8]), dict(sizes=[[16, 32]], build_batch=[8, 16])],
    ids=["sizes", "build_batch"],
)
def test_unit_mapping_arity_spec_text(ws, units):
    cfg = basic_config(three_files(ws), sizes=units["sizes"], build_batch=units["build_batch"])
    err = preflight_error(ws, cfg, E.UnitMappingError)
    assert_spec_text(err, "UnitMappingError: " + UNIT_ARITY[0], "UnitMappingError: " + UNIT_ARITY[1])


def test_output_mapping_arity_spec_text(ws):
    cfg = basic_config(three_files(ws), out=["./out1", "./out2"])
    err = preflight_error(ws, cfg, E.OutputMappingError)
    en, vi = arity_texts(
        "output directories",
        "thư mục output",
        "1 shared output directory",
        "N output directories for N input files",
        "1 output dùng chung",
        "N output cho N file",
    )
    assert_spec_text(err, "OutputMappingError: " + en, "OutputMappingError: " + vi)


SPS_RULES_EN = (
    "Rules:\n\n• each samples_per_shard[i] is a positive int\n"
    "• len(samples_per_shard) == 1 or len(samples_per_shard) == file_count"
)
SPS_RULES_VI = (
    "Quy tắc:\n\n• mỗi samples_per_shard[i] phải là số nguyên dương\n"
    "• len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số file"
)


def test_samples_per_shard_arity_spec_text(ws):
    cfg = basic_config(three_files(ws), sps=[10, 20])
    err = preflight_error(ws, cfg, E.SamplesPerShardError)
    assert_spec_text(
        err,
        "SamplesPerShardError: Invalid samples_per_shard.\n\n"
        f"Problem: Received 3 input files but 2 samples_per_shard entries\n\n{SPS_RULES_EN}",
        "SamplesPerShardError: samples_per_shard không hợp lệ.\n\n"
        f"Vấn đề: Nhận 3 file đầu vào nhưng chỉ có 2 samples_per_shard\n\n{SPS_RULES_VI}",
    )


def test_samples_per_shard_value_spec_text(ws):
    cfg = basic_config([src(ws)], sps=[0])
    err = preflight_error(ws, cfg, E.SamplesPerShardError)
    assert_spec_text(
        err,
        "SamplesPerShardError: Invalid samples_per_shard.\n\n"
        f"Problem: samples_per_shard[0] must be a positive int, got 0\n\n{SPS_RULES_EN}",
        "SamplesPerShardError: samples_per_shard không hợp lệ.\n\n"
        f"Vấn đề: samples_per_shard[0] phải là số nguyên dương, hiện tại là 0\n\n{SPS_RULES_VI}",
    )


@pytest.mark.parametrize(
    "sps",
    [[-5], [1.5], [True], ["100"], 100, [100, 0]],
    ids=["negative", "float", "bool", "string", "scalar", "second-zero"],
)
def test_samples_per_shard_bad_values(ws, sps):
    files = [src(ws)] if not (isinstance(sps, list) and len(sps) == 2) else [src(ws), src(ws, "data/b.jsonl")]
    cfg = basic_config(files, sps=sps, out=["o1", "o2"] if len(files) == 2 else "out")
    err = preflight_error(ws, cfg, E.SamplesPerShardError)
    assert err.render("en").startswith("SamplesPerShardError: Invalid samples_per_shard.\n\nProblem: ")
    assert err.render("en").endswith(SPS_RULES_EN)
    assert err.render("vi").startswith("SamplesPerShardError: samples_per_shard không hợp lệ.\n\nVấn đề: ")
    if isinstance(sps, list) and len(sps) == 2:
        assert "samples_per_shard[1]" in err.render("en")


def test_mapping_arity_accepts_one_or_n(ws):
    """len 1 is shared, len N is mapped; a mix of both is accepted (control for the arity errors)."""
    files = three_files(ws)
    cfg = basic_config(
        files,
        fields=[["prompt", "response"]] * 3,
        templates=["{prompt}\n{response}"],
        sizes=[[16, 32, 64, 128]],
        build_batch=[8, 16, 32],
        out=["o1", "o2", "o3"],
        sps=[5],
    )
    build = fluent(cfg).validate()
    assert [f.units.build_batch for f in build.files] == [8, 16, 32]
    assert len(build.outputs) == 3


# ------------------------------------------------------------------------------------------------------------
# collisions: files that share one output directory


def test_collision_tokenizer_in_shared_output(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    (ws / "tok").mkdir()
    shutil.copyfile(SP_MODEL, ws / "tok" / "copy.model")
    job = fluent(basic_config([a, b], out="./shared_out")).tokenizer.sentencepiece(
        [{"path": SP_MODEL}, {"path": "./tok/copy.model"}]
    )
    err = preflight_error(ws, job, E.TokenizerMappingError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith(
        "TokenizerMappingError: Files that share one output directory must share its tokenizer"
    )
    for text in (en, vi):
        assert "./shared_out" in text and a in text and b in text
    assert "./tok/copy.model" in en
    assert vi.startswith(
        "TokenizerMappingError: Các file dùng chung một thư mục output phải dùng chung tokenizer"
    )


def test_collision_unit_sizes_in_shared_output(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    cfg = basic_config([a, b], sizes=[[16, 32], [16, 64]], out="./shared_out")
    err = preflight_error(ws, cfg, E.UnitMappingError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith("UnitMappingError: Files that share one output directory must share its unit sizes")
    assert vi.startswith(
        "UnitMappingError: Các file dùng chung một thư mục output phải dùng chung unit sizes"
    )
    for text in (en, vi):
        assert "./shared_out" in text and a in text and b in text


def test_collision_samples_per_shard_in_shared_output(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    cfg = basic_config([a, b], sps=[10, 20], out="./shared_out")
    err = preflight_error(ws, cfg, E.SamplesPerShardError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith("SamplesPerShardError: Invalid samples_per_shard.")
    assert "share" in en and "samples_per_shard" in en
    for text in (en, vi):
        assert "./shared_out" in text and a in text and b in text
    assert "dùng chung" in vi


def test_collision_by_resolved_output_path(ws):
    """'./out' and 'out' are one directory: its files must agree."""
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    cfg = basic_config([a, b], sizes=[[16, 32], [16, 64]], out=["./out", "out"])
    err = preflight_error(ws, cfg, E.UnitMappingError)
    assert "must share its unit sizes" in err.render("en")


def test_no_collision_for_same_resolved_tokenizer_or_differing_build_batch(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    (ws / "tok").mkdir()
    shutil.copyfile(SP_MODEL, ws / "tok" / "t.model")
    job = fluent(basic_config([a, b], build_batch=[8, 16], out="./shared_out")).tokenizer.sentencepiece(
        [{"path": "./tok/t.model"}, {"path": "tok/t.model"}]
    )
    build = job.validate()
    assert len(build.outputs) == 1 and build.outputs[0].files == [0, 1]


# ------------------------------------------------------------------------------------------------------------
# TemplateFieldMismatchError


def test_template_undeclared_placeholder_spec_text(ws):
    src(ws, "data/train.jsonl")
    cfg = basic_config(
        ["./data/train.jsonl"],
        fields=[["instruction", "input", "output"]],
        templates=["{instruction}\n\n{prompt}\n\n{output}"],
    )
    err = preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    assert_spec_text(
        err,
        "TemplateFieldMismatchError: Source file: ./data/train.jsonl\n\n"
        "API declaration for this file: fields = ['instruction', 'input', 'output'] "
        'template = "{instruction}\\n\\n{prompt}\\n\\n{output}"\n\n'
        "Field causing template mismatch: prompt Reason: template uses {prompt}, but fields does not "
        "declare it",
        "TemplateFieldMismatchError: File nguồn: ./data/train.jsonl\n\n"
        "Khai báo API cho file này: fields = ['instruction', 'input', 'output'] "
        'template = "{instruction}\\n\\n{prompt}\\n\\n{output}"\n\n'
        "Field gây lệch template: prompt Lý do: template dùng {prompt}, nhưng fields không khai báo field "
        "này",
    )


def test_template_declared_field_unused_spec_example(ws):
    path = src(ws)
    cfg = basic_config(
        [path],
        fields=[["prompt", "answer", "separator", "source"]],
        templates=["{prompt}{separator}{answer}"],
    )
    err = preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith(f"TemplateFieldMismatchError: Source file: {path}\n\n")
    assert "Field causing template mismatch: source Reason: " in en
    assert "Field gây lệch template: source Lý do: " in vi
    assert vi.startswith(f"TemplateFieldMismatchError: File nguồn: {path}")


def test_template_mismatch_names_the_mapped_file(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    cfg = basic_config(
        [a, b],
        fields=[["prompt", "response"], ["prompt", "answer"]],
        templates=["{prompt}\n{response}", "{prompt}\n{response}"],
        out=["o1", "o2"],
    )
    err = preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    en = err.render("en")
    assert en.startswith(f"TemplateFieldMismatchError: Source file: {b}\n\n")
    assert "fields = ['prompt', 'answer']" in en


def test_escaped_braces_are_literal_not_placeholders(ws):
    """`{{prompt}}` is the literal text {prompt}: the declared field prompt is then unused."""
    cfg = basic_config([src(ws)], fields=[["prompt", "response"]], templates=["{{prompt}} {response}"])
    err = preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    assert "Field causing template mismatch: prompt" in err.render("en")


@pytest.mark.parametrize(
    "template,offender",
    [
        ("{prompt:>10}\n{response}", "{prompt:>10}"),
        ("{prompt!r}\n{response}", "{prompt!r}"),
        ("{prompt}\n{}{response}", "{}"),
        ("{prompt.b}\n{response}", "{prompt.b}"),
        ("{prompt[0]}\n{response}", "{prompt[0]}"),
        ("{prompt}\n{response", "{response"),
        ("{prompt}\n{response}}", "}"),
        ("{prompt}\n{{response}", "}"),
    ],
    ids=[
        "format-spec",
        "conversion",
        "empty",
        "attribute",
        "index",
        "unclosed",
        "stray-close",
        "half-escaped",
    ],
)
def test_template_syntax_errors(ws, template, offender):
    path = src(ws)
    cfg = basic_config([path], templates=[template])
    err = preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    en, vi = err.render("en"), err.render("vi")
    assert en.startswith(f"TemplateFieldMismatchError: Source file: {path}\n\n")
    assert f"Field causing template mismatch: {offender} Reason: " in en
    assert f"Field gây lệch template: {offender} Lý do: " in vi
    assert f"template = {json.dumps(template, ensure_ascii=False)}" in en


# ------------------------------------------------------------------------------------------------------------
# TemplateTokenizerError (tier 1)


def template_tokenizer_texts(index, template):
    quoted = json.dumps(template, ensure_ascii=False)
    return (
        f"TemplateTokenizerError: Template static parts produce UNK when encoded by the tokenizer.\n\n"
        f"File index: {index}\n\nTemplate: {quoted}\n\n"
        "Problem: template literal characters are not fully covered by tokenizer vocabulary\n\n"
        "Fix: adjust template literal characters or use a tokenizer that covers them",
        f"TemplateTokenizerError: Phần literal của template tạo UNK khi tokenize.\n\n"
        f"Vị trí file: {index}\n\nTemplate: {quoted}\n\n"
        "Vấn đề: ký tự literal trong template không được tokenizer bao phủ\n\n"
        "Cách sửa: chỉnh ký tự literal hoặc dùng tokenizer bao phủ được",
    )


def test_template_literal_unk_spec_text(ws):
    template = "{prompt}\n\u4e16\n{response}"
    cfg = basic_config([src(ws)], templates=[template])
    err = preflight_error(ws, cfg, E.TemplateTokenizerError)
    assert_spec_text(err, *template_tokenizer_texts(0, template))
    assert 'Template: "{prompt}\\n世\\n{response}"' in err.render("en")


def test_template_literal_unk_names_file_index(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    template = "Q: {prompt} \u4e16 A: {response}"
    cfg = basic_config([a, b], templates=["{prompt}\n{response}", template], out=["o1", "o2"])
    err = preflight_error(ws, cfg, E.TemplateTokenizerError)
    assert_spec_text(err, *template_tokenizer_texts(1, template))


def test_template_literal_unk_with_hf_tokenizer(ws):
    template = "{prompt}\u2603{response}"  # a snowman: not in the MiniLM WordPiece vocabulary
    cfg = basic_config([src(ws)], templates=[template], tokenizer={"hf_json": {"path": HF_JSON}})
    err = preflight_error(ws, cfg, E.TemplateTokenizerError)
    assert_spec_text(err, *template_tokenizer_texts(0, template))


def test_template_literals_covered_pass(ws):
    """Control: literals the tokenizer covers pass tier 1, and data UNK is not a pre-flight matter."""
    cfg = basic_config([src(ws)], templates=["Question: {prompt}\n\nAnswer: {response}"])
    build = fluent(cfg).validate()
    assert build.files[0].source.template == "Question: {prompt}\n\nAnswer: {response}"


# ------------------------------------------------------------------------------------------------------------
# UnitValidationError

UNIT_EN = (
    "UnitValidationError: Invalid unit config.\n\nRules:\n\n• sizes must be positive integers\n"
    "• sizes must be sorted ascending\n• build_batch must be a positive integer"
)
UNIT_VI = (
    "UnitValidationError: Unit config không hợp lệ.\n\nQuy tắc:\n\n• sizes phải là các số nguyên dương\n"
    "• sizes phải tăng dần\n• build_batch phải là số nguyên dương"
)


@pytest.mark.parametrize(
    "sizes,build_batch",
    [
        ([[0, 16]], [8]),
        ([[-16, 32]], [8]),
        ([[64, 32]], [8]),
        ([[16, 128, 64]], [8]),
        ([16, 32], [8]),
        ([[True, 16]], [8]),
        ([[16.0, 32]], [8]),
        ([["16", "32"]], [8]),
        ([[]], [8]),
        ([[16, 32]], 8),
        ([[16, 32]], [0]),
        ([[16, 32]], [-1]),
        ([[16, 32]], [True]),
        ([[16, 32]], [2.5]),
        ("16,32", [8]),
    ],
    ids=[
        "zero",
        "negative",
        "descending",
        "unsorted",
        "flat-list",
        "bool-size",
        "float-size",
        "string-size",
        "empty-sizes",
        "scalar-build-batch",
        "zero-batch",
        "negative-batch",
        "bool-batch",
        "float-batch",
        "string-sizes",
    ],
)
def test_unit_validation(ws, sizes, build_batch):
    cfg = basic_config([src(ws)], sizes=sizes, build_batch=build_batch)
    err = preflight_error(ws, cfg, E.UnitValidationError)
    assert_spec_text(err, UNIT_EN, UNIT_VI)


# ------------------------------------------------------------------------------------------------------------
# OutputValidationError


def test_output_not_empty_spec_text(ws):
    (ws / "artifacts" / "token_shards").mkdir(parents=True)
    (ws / "artifacts" / "token_shards" / "notes.txt").write_text("mine", encoding="utf-8")
    cfg = basic_config([src(ws)], out="./artifacts/token_shards")
    err = preflight_error(ws, cfg, E.OutputValidationError)
    assert_spec_text(
        err,
        "OutputValidationError: Output directory already exists and is not empty.\n\n"
        "Directory: ./artifacts/token_shards\n\nUse a new output directory.",
        "OutputValidationError: Thư mục output đã tồn tại và không rỗng.\n\n"
        "Thư mục: ./artifacts/token_shards\n\nHãy dùng thư mục output mới.",
    )
    assert os.listdir(ws / "artifacts" / "token_shards") == ["notes.txt"]
    assert (ws / "artifacts" / "token_shards" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_output_not_empty_second_output_named(ws):
    a, b = src(ws, "data/a.jsonl"), src(ws, "data/b.jsonl")
    (ws / "out2" / "unit_16").mkdir(parents=True)  # looks like MintDim's, but MintDim never made it
    cfg = basic_config([a, b], out=["./out1", "./out2"])
    err = preflight_error(ws, cfg, E.OutputValidationError)
    assert "Directory: ./out2" in err.render("en")
    assert "Thư mục: ./out2" in err.render("vi")


def test_output_path_is_an_existing_file(ws):
    (ws / "taken").write_text("x", encoding="utf-8")
    err = preflight_error(ws, basic_config([src(ws)], out="./taken"), E.OutputValidationError)
    assert "./taken" in err.render("en") and "./taken" in err.render("vi")
    assert (ws / "taken").read_text(encoding="utf-8") == "x"


def test_output_empty_existing_dir_is_accepted(ws):
    (ws / "out").mkdir()
    build = fluent(basic_config([src(ws)], out="./out")).validate()
    assert build.outputs[0].dir == "./out"


# ------------------------------------------------------------------------------------------------------------
# TokenDTypeValidationError


def test_dtype_for_vocab_boundaries():
    from mintdim.tokenizers.kinds import dtype_for_vocab

    assert dtype_for_vocab(1) == "uint16"
    assert dtype_for_vocab(65535) == "uint16"
    assert dtype_for_vocab(65536) == "uint32"
    assert dtype_for_vocab(2**32 - 1) == "uint32"
    assert dtype_for_vocab(2**32 + 1) is None
    assert dtype_for_vocab(10**12) is None


def test_dtype_error_text():
    err = E.TokenDTypeValidationError.make(5_000_000_000)
    assert_spec_text(
        err,
        "TokenDTypeValidationError: Tokenizer vocabulary is too large for supported token dtypes.\n\n"
        "Supported dtypes:\n\n• uint16\n• uint32",
        "TokenDTypeValidationError: Vocab của tokenizer quá lớn so với dtype token được hỗ trợ.\n\n"
        "Các dtype hiện hỗ trợ:\n\n• uint16\n• uint32",
    )


def test_dtype_error_raised_by_preflight(ws, monkeypatch):
    """A vocabulary beyond uint32 (faked: a real one cannot be loaded here) fails pre-flight."""
    from mintdim.tokenizers import kinds as tokenizers

    monkeypatch.setattr(tokenizers.SentencePieceTokenizer, "vocab_size", property(lambda self: 2**33))
    err = preflight_error(ws, basic_config([src(ws)]), E.TokenDTypeValidationError)
    assert err.render("en").startswith("TokenDTypeValidationError: Tokenizer vocabulary is too large")


# ------------------------------------------------------------------------------------------------------------
# shapes and types: the error class of the block


@pytest.mark.parametrize(
    "patch,cls",
    [
        (lambda c: c["source"].update(fields=["prompt", "response"]), E.FieldMappingError),
        (lambda c: c["source"].update(fields=[["prompt", 5]]), E.FieldMappingError),
        (lambda c: c["source"].update(templates="{prompt}\n{response}"), (E.TemplateMappingError,)),
        (lambda c: c["source"].update(templates=[42]), (E.TemplateMappingError,)),
        (lambda c: c["output"].update(samples_per_shard=True), E.SamplesPerShardError),
        (lambda c: c["output"].update(dir=5), E.OutputValidationError),
        (lambda c: c["source"].update(fields="prompt"), E.FieldMappingError),
        (lambda c: c["units"].update(build_batch="64"), E.UnitValidationError),
        (lambda c: c["output"].update(samples_per_shard="100"), E.SamplesPerShardError),
        (lambda c: c.update(tokenizer=SP_MODEL), E.TokenizerValidationError),
        (
            lambda c: c.update(tokenizer={"sentencepiece": {"path": SP_MODEL}, "hf_json": {"path": HF_JSON}}),
            E.TokenizerValidationError,
        ),
        (lambda c: c["source"].update(files="./data/train.jsonl"), E.PipelineValidationError),
        (lambda c: c.update(lang="fr"), E.PipelineValidationError),
        (lambda c: c.update(colour="blue"), E.PipelineValidationError),
    ],
    ids=[
        "flat-fields",
        "non-string-field",
        "string-templates",
        "non-string-template",
        "bool-sps",
        "int-output-dir",
        "string-fields",
        "string-build-batch",
        "string-sps",
        "tokenizer-bare-path",
        "two-tokenizer-kinds",
        "string-files",
        "bad-lang",
        "unknown-top-key",
    ],
)
def test_wrong_shape_raises_block_class(ws, patch, cls):
    cfg = basic_config([src(ws)])
    patch(cfg)
    classes = cls if isinstance(cls, tuple) else (cls,)
    before = snapshot(ws)
    with pytest.raises(E.MintDimError) as info:
        build_in(ws, cfg, cores=1)
    assert type(info.value) in classes, f"{type(info.value).__name__}: {info.value}"
    assert snapshot(ws) == before


def test_failing_preflight_creates_no_custom_work_dir(ws):
    cfg = basic_config([src(ws)], templates=["{prompt}\n{nope}"], work_dir="./build_tmp", out="./artifacts/x")
    preflight_error(ws, cfg, E.TemplateFieldMismatchError)
    assert not (ws / "build_tmp").exists() and not (ws / "artifacts").exists()


def test_preflight_error_is_deterministic(ws):
    """Several config errors at once: the fixed order reports the same one every time."""
    cfg = basic_config(["./data/none.jsonl"], sizes=[[32, 16]], sps=[0], templates=["{prompt}{nope}"])
    texts = set()
    for _ in range(3):
        with pytest.raises(E.MintDimError) as info:
            fluent(cfg).validate()
        texts.add(info.value.render("both"))
    assert len(texts) == 1


# ------------------------------------------------------------------------------------------------------------
# lang in-process


def test_lang_vi_in_process(ws):
    job = pipeline("unit-build", lang="vi")
    with pytest.raises(E.PipelineValidationError) as info:
        job.run(cores=1)
    text = str(info.value)
    assert text.startswith("PipelineValidationError: Pipeline chưa được cấu hình đầy đủ.\n\nThiếu:")
    assert "incomplete" not in text


def test_lang_both_in_process(ws):
    cfg = basic_config(["./data/train.jsonl"], lang="both")
    with pytest.raises(E.MintDimFileNotFoundError) as info:
        fluent(cfg).run(cores=1)
    text = str(info.value)
    assert text.startswith("[english] MintDimFileNotFoundError: Required file was not found.")
    assert "\n\n[vietnam] MintDimFileNotFoundError: Không tìm thấy file cần dùng." in text
    assert text.index("[english]") < text.index("[vietnam]")


def test_unknown_pipeline_in_vietnamese():
    with pytest.raises(E.PipelineValidationError) as info:
        pipeline("nope", lang="vi")
    assert str(info.value) == info.value.render("vi")


# ------------------------------------------------------------------------------------------------------------
# the same config errors through a YAML config: direct snakemake, and the CLI


def _assert_clean_failure(proc, ws, before, cls_name, text):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert text in proc.stderr
    assert proc.stderr.rstrip().endswith(text.rstrip().splitlines()[-1]), "the MintDim message must come last"
    assert snapshot(ws) == before, "pre-flight failure must create nothing but .snakemake/"
    assert cls_name in proc.stderr


@pytest.mark.parametrize("case", ["missing-units", "missing-source", "template", "output-not-empty"])
def test_config_error_direct_snakemake(tmp_path, case):
    ws = tmp_path
    path = src(ws)
    if case == "missing-units":
        cfg = basic_config([path])
        del cfg["units"]
        cls, text = E.PipelineValidationError, missing_text(["units.sizes", "units.build_batch"])[0]
    elif case == "missing-source":
        cfg = basic_config(["./data/nothere.jsonl"])
        # the spec's text, then one line of advice
        cls, text = (
            E.MintDimFileNotFoundError,
            (
                "MintDimFileNotFoundError: Required file was not found.\n\n"
                "Context: source\n\nMissing file: ./data/nothere.jsonl\n\n"
                f"Resolved from: {ws} (relative paths start from the directory you "
                "run in)"
            ),
        )
    elif case == "template":
        cfg = basic_config([path], templates=["{prompt}\n{answer}"])
        cls, text = (
            E.TemplateFieldMismatchError,
            (
                "Field causing template mismatch: answer Reason: template uses {answer}, but fields does not "
                "declare it"
            ),
        )
    else:
        (ws / "busy").mkdir()
        (ws / "busy" / "keep.bin").write_bytes(b"\x00")
        cfg = basic_config([path], out="./busy")
        cls, text = (
            E.OutputValidationError,
            (
                "OutputValidationError: Output directory already exists and is not "
                "empty.\n\nDirectory: ./busy\n\nUse a new output directory."
            ),
        )
    before = snapshot(ws)
    proc = run_snakemake(ws, cfg, cores=1)
    _assert_clean_failure(proc, ws, before, cls.__name__, text)
    assert not (ws / ".mintdim").exists()


def _write_cfg(ws, cfg, name="cfg.yaml"):
    with open(ws / name, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, allow_unicode=True)
    return name


def test_cli_config_error_one_clear_message(tmp_path):
    ws = tmp_path
    cfg = basic_config([src(ws)], tokenizer={"sentencepiece": {"path": SP_MODEL, "pad_id": 1}})
    name = _write_cfg(ws, cfg)
    before = snapshot(ws)
    proc = run_cli(ws, "build", name, "--cores", "1")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        "TokenizerValidationError: Invalid tokenizer config.\n\nComponent: config\n\n"
        "Problem: tokenizer config has unknown keys: ['pad_id']."
    )
    assert proc.stderr.count("TokenizerValidationError") == 1
    assert snapshot(ws) == before


def test_cli_missing_blocks(tmp_path):
    ws = tmp_path
    name = _write_cfg(ws, {"source": {"files": [src(ws)]}, "output": {"dir": "out"}})
    proc = run_cli(ws, "build", name, "--cores", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    expected = missing_text(
        [
            "source.fields",
            "source.templates",
            "tokenizer",
            "units.sizes",
            "units.build_batch",
            "output.samples_per_shard",
        ]
    )[0]
    assert proc.stderr.strip().startswith(expected)
    assert not (ws / "out").exists() and not (ws / ".mintdim").exists()


def test_cli_missing_config_file(tmp_path):
    proc = run_cli(tmp_path, "build", "nope.yaml", "--cores", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("MintDimFileNotFoundError: Required file was not found.")
    assert "Missing file: nope.yaml" in proc.stderr


def test_cli_config_not_a_mapping(tmp_path):
    (tmp_path / "cfg.yaml").write_text("- source\n- units\n", encoding="utf-8")
    proc = run_cli(tmp_path, "build", "cfg.yaml", "--cores", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("PipelineValidationError: ")


def test_cli_lang_option_with_config_not_a_mapping(tmp_path):
    """--lang must not turn a bad config file into a traceback."""
    (tmp_path / "cfg.yaml").write_text("- source\n- units\n", encoding="utf-8")
    proc = run_cli(tmp_path, "build", "cfg.yaml", "--cores", "1", "--lang", "vi")
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1
    assert proc.stderr.startswith("PipelineValidationError: ")
    assert "Pipeline" in proc.stderr and "Traceback" not in proc.stdout


def test_cli_lang_vi_from_config(tmp_path):
    ws = tmp_path
    name = _write_cfg(ws, basic_config(["./data/train.jsonl"], lang="vi"))
    proc = run_cli(ws, "build", name, "--cores", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(
        "MintDimFileNotFoundError: Không tìm thấy file cần dùng.\n\nContext: source\n\n"
        "File thiếu: ./data/train.jsonl"
    )
    assert "Required file was not found" not in proc.stderr


def test_cli_lang_both_option(tmp_path):
    ws = tmp_path
    name = _write_cfg(ws, basic_config([src(ws)], sizes=[[32, 16]]))
    proc = run_cli(ws, "build", name, "--cores", "1", "--lang", "both")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("[english] " + UNIT_EN)
    assert "\n\n[vietnam] " + UNIT_VI in err


# ------------------------------------------------------------------------------------------------------------
# data errors, end to end


def assert_failed_outputs(ws, outputs: dict[str, list[int]], cls_name: str):
    """Every declared unit directory holds UNIT_BUILD_FAILED.md naming the error; no stats.json, no shard."""
    for out, sizes in outputs.items():
        root = ws / out
        assert root.is_dir(), f"{out} should hold the failure markers"
        for size in sizes:
            marker = root / f"unit_{size}" / "UNIT_BUILD_FAILED.md"
            assert marker.is_file(), f"missing {marker}"
            assert cls_name in marker.read_text(encoding="utf-8")
        for base, _dirs, files in os.walk(root):
            for name in files:
                assert name != "stats.json", os.path.join(base, name)
                assert not name.endswith(".bin"), os.path.join(base, name)


def assert_built(ws, out: str, sizes: list[int], total: int):
    root = ws / out
    stats = read_json(root / "stats.json")
    assert stats["total_samples"] == total
    for size in sizes:
        assert not (root / f"unit_{size}" / "UNIT_BUILD_FAILED.md").exists()


def padded_rows(n):
    """Rows long enough that a 0.001 MB chunk (1048 bytes) holds a few of them."""
    return [
        {
            "prompt": f"Natalia sold clips to {i} of her friends in April.",
            "response": f"She sold {i} clips.",
            "id": i,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "raw,reason",
    [
        (b'{"prompt": "a", "response": "b",}', "invalid JSON syntax"),
        (b"{'prompt': 'a'}", "invalid JSON syntax"),
        (b'{"prompt": Infinity, "response": "b"}', "invalid JSON syntax"),
        (b'{"prompt": -Infinity, "response": "b"}', "invalid JSON syntax"),
        (b'{"prompt": "a", "response": "b"} {"x": 1}', "invalid JSON syntax"),
        (b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "invalid JSON syntax"),
        (b'\xef\xbb\xbf{"prompt": "a"}', None),  # a BOM is only skipped at the very start of a file
        (b'{"prompt": "\xff"}', "invalid UTF-8"),
        (b'"just a string"', None),
        (b"42", None),
        (b"null", None),
        (b"[]", None),
    ],
    ids=[
        "trailing-comma",
        "single-quotes",
        "infinity",
        "minus-infinity",
        "two-values",
        "nesting-too-deep",
        "bom-mid-file",
        "bad-utf8",
        "string",
        "number",
        "null",
        "array",
    ],
)
def test_parse_rules_in_process(raw, reason):
    from mintdim.sources.jsonl import parse_object

    with pytest.raises(E.SourceParseError) as info:
        parse_object(raw, "./data/x.jsonl", 7)
    en = info.value.render("en")
    assert en.startswith(
        "SourceParseError: JSONL line could not be parsed.\n\nFile: ./data/x.jsonl\n\nLine: 7\n\n"
    )
    assert "Dòng: 7" in info.value.render("vi")
    if reason:
        assert en.endswith(f"Reason: {reason}") or f"Reason: {reason}\n" in en


def test_parse_rules_accept_surrogate_outside_declared_fields():
    from mintdim.sources.jsonl import declared_values, parse_object

    obj = parse_object(b'{"prompt": "a", "response": "b", "note": "\\ud800"}', "x.jsonl", 1)
    assert declared_values(obj, ["prompt", "response"], "x.jsonl", 1)["prompt"] == "a"


@pytest.mark.parametrize(
    "value,found",
    [(5, "number"), (1.5, "number"), (None, "null"), (True, "boolean"), ([1], "array"), ({"a": 1}, "object")],
)
def test_schema_rules_in_process(value, found):
    from mintdim.sources.jsonl import declared_values

    with pytest.raises(E.SampleSchemaError) as info:
        declared_values({"prompt": "a", "response": value}, ["prompt", "response"], "./x.jsonl", 3)
    en, vi = info.value.render("en"), info.value.render("vi")
    assert "File: ./x.jsonl\n\nLine: 3" in en and "Dòng: 3" in vi
    assert "response" in en and found in en
    assert "response" in vi and found in vi


def test_schema_missing_lists_all_missing_in_declared_order():
    from mintdim.sources.jsonl import declared_values

    with pytest.raises(E.SampleSchemaError) as info:
        declared_values({"z": "1", "b": "2"}, ["a", "b", "c"], "./x.jsonl", 2)
    assert_spec_text(
        info.value,
        "SampleSchemaError: JSONL sample is missing declared fields.\n\nFile: ./x.jsonl\n\nLine: 2\n\n"
        "Declared fields: a b c\n\nMissing fields: a c\n\nAvailable keys: z b",
        "SampleSchemaError: Sample JSONL thiếu fields đã khai báo.\n\nFile: ./x.jsonl\n\nDòng: 2\n\n"
        "Fields đã khai báo: a b c\n\nFields bị thiếu: a c\n\nKeys hiện có: z b",
    )


def test_source_parse_error_in_later_chunk_then_rerun(ws_data):
    ws = ws_data
    good = padded_rows(40)
    bad = list(good)
    bad[5] = "   \t"  # a blank line: skipped, but still counted as a physical line
    bad[36] = '{"prompt": "unterminated, "response": "x"}'
    path = write_jsonl(ws / "data" / "alpaca.jsonl", bad)
    from mintdim.sources.jsonl import chunk_bounds

    chunks = chunk_bounds(path, 0.001)
    offset = sum(len(line) + 1 for line in open(path, "rb").read().split(b"\n")[:36])
    assert len(chunks) >= 3 and offset >= chunks[1][0], "the bad line must sit in a later chunk"

    cfg = basic_config(["./data/alpaca.jsonl"], chunk_mb=0.001)
    with pytest.raises(E.SourceParseError) as info:
        build_in(ws, cfg, cores=2)
    err = info.value
    assert_spec_text(
        err,
        "SourceParseError: JSONL line could not be parsed.\n\nFile: ./data/alpaca.jsonl\n\nLine: 37\n\n"
        "Reason: invalid JSON syntax",
        "SourceParseError: Không đọc được dòng JSONL.\n\nFile: ./data/alpaca.jsonl\n\nDòng: 37\n\n"
        "Lý do: JSON không hợp lệ",
    )
    assert_failed_outputs(ws, {"out": [16, 32, 64, 128]}, "SourceParseError")
    marker = (ws / "out" / "unit_16" / "UNIT_BUILD_FAILED.md").read_text(encoding="utf-8")
    assert err.render("en") in marker and err.render("vi") in marker  # the same message the caller got

    fixed = list(good)
    fixed[5] = "   \t"
    write_jsonl(ws / "data" / "alpaca.jsonl", fixed)
    result = build_in(ws, cfg, cores=2)
    assert result.outputs[0].stats["total_samples"] == 39
    assert_built(ws, "out", [16, 32, 64, 128], 39)


@pytest.mark.parametrize(
    "line,reason_en",
    [
        (b'{"prompt": "caf\xe9", "response": "x"}', "invalid UTF-8"),
        (b'["prompt", "response"]', None),
        (b'{"prompt": "a", "response": "b", "score": NaN}', "invalid JSON syntax"),
        (b'{"prompt": "\\ud800", "response": "b"}', None),
        (b'{"prompt": "a", "response": "b"', "invalid JSON syntax"),
    ],
    ids=["invalid-utf8", "json-array", "nan", "lone-surrogate-in-field", "gzip-truncated-object"],
)
def test_source_parse_error_kinds(ws_data, line, reason_en, request):
    ws = ws_data
    lines = [json.dumps(r).encode() for r in rows(12)]
    lines[8] = line
    raw = b"".join(x + b"\n" for x in lines)
    name = "data/x.jsonl"
    os.makedirs(ws / "data")
    if "gzip" in request.node.callspec.id:
        import gzip

        name = "data/x.jsonl.gz"
        (ws / name).write_bytes(gzip.compress(raw))
    else:
        (ws / name).write_bytes(raw)
    cfg = basic_config([name])
    with pytest.raises(E.SourceParseError) as info:
        build_in(ws, cfg, cores=2)
    en, vi = info.value.render("en"), info.value.render("vi")
    assert en.startswith(
        f"SourceParseError: JSONL line could not be parsed.\n\nFile: {name}\n\nLine: 9\n\nReason: "
    )
    assert vi.startswith(
        f"SourceParseError: Không đọc được dòng JSONL.\n\nFile: {name}\n\nDòng: 9\n\nLý do: "
    )
    if reason_en:
        assert f"Reason: {reason_en}" in en
    assert_failed_outputs(ws, {"out": [16, 32, 64, 128]}, "SourceParseError")


def test_sample_schema_missing_field_spec_text_via_fluent_api(ws_data):
    ws = ws_data
    data = [
        {"instruction": f"Say {i}.", "input": "", "output": f"{i}", "metadata": {"k": i}} for i in range(30)
    ]
    data[17] = {"instruction": "Add.", "output": "3", "metadata": {"src": "x"}}
    write_jsonl(ws / "data" / "alpaca.jsonl", data)
    job = (
        pipeline("unit-build", chunk_mb=0.001, lang="vi")
        .source.jsonl(
            files=["./data/alpaca.jsonl"],
            fields=[["instruction", "input", "output"]],
            templates=["{instruction}\n\n{input}\n\n{output}"],
        )
        .tokenizer.sentencepiece({"path": SP_MODEL})
        .units(sizes=[[16, 32, 64]], build_batch=[4])
        .output.dir("./artifacts/instruction_units", samples_per_shard=[10])
    )
    with pytest.raises(E.SampleSchemaError) as info:
        job.run(cores=2)
    assert_spec_text(
        info.value,
        "SampleSchemaError: JSONL sample is missing declared fields.\n\nFile: ./data/alpaca.jsonl\n\n"
        "Line: 18\n\nDeclared fields: instruction input output\n\nMissing fields: input\n\n"
        "Available keys: instruction output metadata",
        "SampleSchemaError: Sample JSONL thiếu fields đã khai báo.\n\nFile: ./data/alpaca.jsonl\n\n"
        "Dòng: 18\n\nFields đã khai báo: instruction input output\n\nFields bị thiếu: input\n\n"
        "Keys hiện có: instruction output metadata",
    )
    assert str(info.value) == info.value.render("vi")  # lang="vi" reaches the caller's exception
    assert_failed_outputs(ws, {"artifacts/instruction_units": [16, 32, 64]}, "SampleSchemaError")

    data[17] = {"instruction": "Add.", "input": "1 2", "output": "3", "metadata": {"src": "x"}}
    write_jsonl(ws / "data" / "alpaca.jsonl", data)
    result = job.run(cores=2)
    assert result.outputs[0].stats["total_samples"] == 30
    assert_built(ws, "artifacts/instruction_units", [16, 32, 64], 30)


def test_sample_schema_non_string_field_direct_snakemake_vi(tmp_path):
    ws = tmp_path
    data = rows(10)
    data[3] = {"prompt": 5, "response": "five"}
    write_jsonl(ws / "data" / "x.jsonl", data)
    cfg = basic_config(["./data/x.jsonl"], lang="vi")
    proc = run_snakemake(ws, cfg, cores=2)
    assert proc.returncode != 0
    err = proc.stderr
    assert "Traceback" not in err
    expected = E.SampleSchemaError.not_string("./data/x.jsonl", 4, "prompt", "number").render("vi")
    assert expected.startswith("SampleSchemaError: ") and "Dòng: 4" in expected
    # the spec's text, then the file's count of bad records (source.on_bad_record), last
    counted = expected + (
        "\n\n./data/x.jsonl có 1 bản ghi lỗi (bản ghi không thành sample được):\n\n"
        "• ./data/x.jsonl:4 (SampleSchemaError)\n\n"
    )
    assert counted in err and err.rstrip().endswith("(mặc định [0.01])"), (
        "the MintDim message, in Vietnamese, last"
    )
    assert_failed_outputs(ws, {"out": [16, 32, 64, 128]}, "SampleSchemaError")


def test_sample_schema_non_string_field_api(ws_data):
    ws = ws_data
    data = rows(10)
    data[6] = {"prompt": "p", "response": ["a", "b"]}
    write_jsonl(ws / "data" / "x.jsonl", data)
    with pytest.raises(E.SampleSchemaError) as info:
        build_in(ws, basic_config(["data/x.jsonl"]), cores=2)
    en, vi = info.value.render("en"), info.value.render("vi")
    assert en.startswith("SampleSchemaError: ")
    assert "File: data/x.jsonl\n\nLine: 7" in en
    assert "response" in en and "array" in en
    assert "Dòng: 7" in vi and "response" in vi and "array" in vi


def test_unit_overflow_two_outputs_chunked_then_rerun(ws_data):
    import sentencepiece as spm

    ws = ws_data
    write_jsonl(ws / "data" / "a.jsonl", padded_rows(20))
    long_text = " ".join(["Natalia sold clips to forty eight of her friends in April"] * 3)
    b_rows = padded_rows(30)
    b_rows[25] = {"prompt": long_text, "response": "done"}
    write_jsonl(ws / "data" / "b.jsonl", b_rows)
    cfg = basic_config(
        ["./data/a.jsonl", "./data/b.jsonl"],
        sizes=[[16, 32], [32, 48]],
        build_batch=[4],
        out=["./out_a", "./out_b"],
        chunk_mb=0.001,
    )
    expected_count = len(spm.SentencePieceProcessor(model_file=SP_MODEL).encode(f"{long_text}\ndone"))
    assert expected_count > 48
    with pytest.raises(E.UnitOverflowError) as info:
        build_in(ws, cfg, cores=2)
    assert_spec_text(
        info.value,
        f"UnitOverflowError: Sample token length exceeds max unit size.\n\nSample: ./data/b.jsonl:26\n\n"
        f"token_count: {expected_count}\n\nmax_unit_size: 48\n\nIncrease unit sizes and run again.",
        f"UnitOverflowError: Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: ./data/b.jsonl:26\n\n"
        f"token_count: {expected_count}\n\nmax_unit_size: 48\n\nHãy tăng unit sizes rồi chạy lại.",
    )
    # all or nothing: the output of the good file fails too
    assert_failed_outputs(ws, {"out_a": [16, 32], "out_b": [32, 48]}, "UnitOverflowError")

    cfg_fixed_data = padded_rows(30)
    write_jsonl(ws / "data" / "b.jsonl", cfg_fixed_data)
    build_in(ws, cfg, cores=2)
    assert_built(ws, "out_a", [16, 32], 20)
    assert_built(ws, "out_b", [32, 48], 30)


def test_data_error_through_cli_lang_both(tmp_path):
    ws = tmp_path
    data = rows(10)
    data[2] = {"prompt": " ".join(["word"] * 80), "response": "x"}
    write_jsonl(ws / "data" / "x.jsonl", data)
    name = _write_cfg(ws, basic_config(["./data/x.jsonl"], sizes=[[16, 32]], lang="both"))
    proc = run_cli(ws, "build", name, "--cores", "2")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    err = proc.stderr
    assert (
        "[english] UnitOverflowError: Sample token length exceeds max unit size.\n\nSample: ./data/x.jsonl:3"
        in err
    )
    assert (
        "[vietnam] UnitOverflowError: Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: ./data/x.jsonl:3"
        in err
    )
    assert err.count("UnitOverflowError:") == 2, err  # one message, in two languages
    assert "Error in rule" not in err and "Error in rule" not in proc.stdout  # no raw Snakemake dump
    assert_failed_outputs(ws, {"out": [16, 32]}, "UnitOverflowError")

    # as the message says: increase unit sizes and run again (same output directory)
    name = _write_cfg(ws, basic_config(["./data/x.jsonl"], sizes=[[16, 256]], lang="both"))
    proc = run_cli(ws, "build", name, "--cores", "2")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert_built(ws, "out", [16, 256], 10)
    assert not (ws / "out" / "unit_32").exists(), "a marker of the failed build's unit sizes is left behind"


def test_runner_loads_a_tokenizer_once_per_work_dir_until_the_file_changes(ws_data, monkeypatch):
    """A second build in the same work dir trusts what the first pre-flight learned of the same
    tokenizer file (a large model takes ~0.4 s to load); a file changed since is loaded and checked
    again, so a broken replacement still fails pre-flight with the spec's error."""
    import time

    from mintdim.stages import preflight

    tok = ws_data / "tok.model"
    shutil.copy(SP_MODEL, tok)
    data = src(ws_data)
    build_in(
        ws_data, basic_config([data], tokenizer={"sentencepiece": {"path": "./tok.model"}}, out="./out1")
    )

    loads = []
    real_load = preflight.load
    monkeypatch.setattr(preflight, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    build_in(
        ws_data, basic_config([data], tokenizer={"sentencepiece": {"path": "./tok.model"}}, out="./out2")
    )
    assert loads == []
    assert read_json(ws_data / "out2" / "stats.json")["total_samples"] == 3

    tok.write_bytes(b"not a sentencepiece model")
    os.utime(tok, ns=(time.time_ns(), time.time_ns()))
    with pytest.raises(E.TokenizerValidationError):
        build_in(
            ws_data, basic_config([data], tokenizer={"sentencepiece": {"path": "./tok.model"}}, out="./out3")
        )
    assert len(loads) == 1 and not os.path.exists(ws_data / "out3")
