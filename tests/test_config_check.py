"""The config check: the JSON schema first, then the rules across fields, in one fixed order.

A config with several problems reports the first in that order (what the config is, missing blocks,
shapes, mapping arity, values, rules on the resolved entries, and last any violation no step words),
with the same texts as before the schema moved first (each expected text below was printed by the
previous check, config._resolve + the schema as a safety net). No config in a test needs a file.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import GSM8K, HF_JSON, REPO
from mintdim import config, errors as E, schema


def base():
    return {"source": {"files": ["d/a.jsonl", "d/b.jsonl"], "fields": [["prompt", "response"]],
                       "templates": ["{prompt}\n{response}"]},
            "tokenizer": {"sentencepiece": {"path": "t/tok.model"}},
            "units": {"sizes": [[16, 32, 64]], "build_batch": [64]},
            "output": {"dir": "out", "samples_per_shard": [100]}}


def case(**changes):
    """base() with changes: a__b=value sets cfg[a][b]; the value "<del>" deletes the key."""
    cfg = base()
    for path, value in changes.items():
        keys = path.split("__")
        parent = cfg
        for k in keys[:-1]:
            parent = parent[k]
        if value == "<del>":
            del parent[keys[-1]]
        else:
            parent[keys[-1]] = value
    return cfg


CASES = {
 "unknown_key_before_missing": case(foo=1, units="<del>"),
 "missing_all_at_once_before_shapes": case(source__templates=[], output__dir="", source__fields="x",
                                           units__build_batch=None),
 "fields_before_tokenizer": case(source__fields=[["a"], 5], tokenizer={"sentencepiece": {"path": 5}}),
 "fields_index_order": case(source__fields=[["a", "a"], []]),
 "tokenizer_kinds_before_items": case(tokenizer={"sentencepiece": {"path": ""}, "hf_json": {"x": 1}}),
 "auto_range_before_build_batch_shape": case(units__sizes="auto", units__k=2, units__min_size=64, units__max_size=8,
                                             units__build_batch=5),
 "shape_before_arity": case(source__templates=["{prompt}"] * 3, output__samples_per_shard="100"),
 "arity_before_values": case(units__sizes=[[0]], output__samples_per_shard=[1, 2, 3]),
 "sizes_values_by_index_unsorted_first": case(units__sizes=[[32, 16], [0]]),
 "sizes_values_by_index_value_first": case(units__sizes=[[0], [32, 16]]),
 "values_before_collisions": case(output__samples_per_shard=[10, 20], units__build_batch=[0]),
 "collision_before_templates": case(output__samples_per_shard=[10, 20], source__templates=["{prompt}"]),
 "integers_are_ints": case(units__sizes=[[16.0, 32]]),
 "nan_is_not_a_number": case(chunk_mb=float("nan")),
 "train_vocab_size_float": case(tokenizer={"train_bpe": {"vocab_size": 300.0, "out": "tk"}}),
 "templates_before_unworded": case(source__train_on=None, source__templates=["{prompt}"]),
 "unworded_in_jsonschema_words": case(source__train_on=None),
 "unworded_auto_null": case(units__sizes="auto", units__k=2, units__multiple_of=None),
}


EXPECTED = {
    'unknown_key_before_missing': ('PipelineValidationError',
        "Problem: unknown config keys: ['foo']",
        "Vấn đề: key cấu hình không hợp lệ: ['foo']"),
    'missing_all_at_once_before_shapes': ('PipelineValidationError',
        'Missing:\n\n• source.templates\n• units.build_batch\n• output.dir',
        'Thiếu:\n\n• source.templates\n• units.build_batch\n• output.dir'),
    'fields_before_tokenizer': ('FieldMappingError',
        'Problem: fields must be a list of lists, e.g. [["prompt", "response"]]',
        'Vấn đề: fields phải là list các list, ví dụ [["prompt", "response"]]'),
    'fields_index_order': ('FieldMappingError',
        "Problem: fields[0] names a field twice: ['a', 'a']",
        "Vấn đề: fields[0] khai báo một field hai lần: ['a', 'a']"),
    'tokenizer_kinds_before_items': ('TokenizerValidationError',
        "Problem: declare exactly one tokenizer kind, got ['sentencepiece', 'hf_json']",
        "Vấn đề: chỉ khai báo đúng một loại tokenizer, hiện tại là ['sentencepiece', 'hf_json']"),
    'auto_range_before_build_batch_shape': ('UnitValidationError',
        'Problem: min_size is above max_size',
        'Vấn đề: min_size lớn hơn max_size'),
    'shape_before_arity': ('SamplesPerShardError',
        'Problem: samples_per_shard must be a list of positive ints, got str',
        'Vấn đề: samples_per_shard phải là list số nguyên dương, hiện tại là str'),
    'arity_before_values': ('SamplesPerShardError',
        'Problem: Received 2 input files but 3 samples_per_shard entries',
        'Vấn đề: Nhận 2 file đầu vào nhưng chỉ có 3 samples_per_shard'),
    'sizes_values_by_index_unsorted_first': ('UnitValidationError',
        'Problem: sizes[0] = [32, 16] is not sorted ascending',
        'Vấn đề: sizes[0] = [32, 16] không tăng dần'),
    'sizes_values_by_index_value_first': ('UnitValidationError',
        'Problem: sizes[0] = [0]',
        'Vấn đề: sizes[0] = [0]'),
    'values_before_collisions': ('UnitValidationError',
        'Problem: build_batch[0] = 0',
        'Vấn đề: build_batch[0] = 0'),
    'collision_before_templates': ('SamplesPerShardError',
        'Problem: files that share output out must share samples_per_shard (d/a.jsonl: 10, d/b.jsonl: 20)',
        'Vấn đề: các file dùng chung output out phải dùng chung samples_per_shard (d/a.jsonl: 10, d/b.jsonl: 20)'),
    'integers_are_ints': ('UnitValidationError',
        'Problem: sizes[0] = [16.0, 32]',
        'Vấn đề: sizes[0] = [16.0, 32]'),
    'nan_is_not_a_number': ('PipelineValidationError',
        'Problem: chunk_mb must be a positive number, got nan',
        'Vấn đề: chunk_mb phải là số dương, hiện tại là nan'),
    'train_vocab_size_float': ('TokenizerValidationError',
        'Problem: vocab_size must be an int >= 258, got 300.0',
        'Vấn đề: vocab_size phải là số nguyên >= 258, hiện tại là 300.0'),
    'templates_before_unworded': ('TemplateFieldMismatchError',
        'Field causing template mismatch: response Reason: fields declares response, but template does not use '
        '{response}',
        'Field gây lệch template: response Lý do: fields khai báo response, nhưng template không dùng {response}'),
    'unworded_in_jsonschema_words': ('PipelineValidationError',
        "Problem: source.train_on: None is not of type 'array'",
        "Vấn đề: source.train_on: None is not of type 'array'"),
    'unworded_auto_null': ('UnitValidationError',
        "Problem: units.multiple_of: None is not of type 'integer'",
        "Vấn đề: units.multiple_of: None is not of type 'integer'"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_several_problems_report_the_first_in_the_fixed_order(name):
    kind, en, vi = EXPECTED[name]
    with pytest.raises(E.MintDimError) as info:
        config.resolve(CASES[name])
    err = info.value
    assert err.kind == kind
    assert en in err.render("en") and vi in err.render("vi")
    if not schema.findings(CASES[name]):  # a rule across fields only: the schema alone finds nothing
        schema.validate(CASES[name])
        return
    with pytest.raises(type(err)) as again:  # else the schema alone reports the same error
        schema.validate(CASES[name])
    assert again.value.render("both") == err.render("both")


def test_a_valid_config_passes_the_schema_and_resolves_the_same_trusted_or_not():
    cfg = case(units__sizes="auto", units__k=3, units__cost="attention", source__train_on=[["response"]])
    assert not schema.findings(cfg)
    schema.validate(cfg)
    assert config.resolve(cfg).build_id == config.resolve(cfg, trusted=True).build_id


def test_a_stage_job_reading_validated_json_does_not_import_jsonschema(tmp_path):
    """Every stage job resolves validated.json (written after pre-flight passed): no schema step there."""
    path = tmp_path / "validated.json"
    path.write_text(json.dumps({"config": base(), "tokenizers": {}}))
    code = ("import sys; from mintdim.stages.validate import read_validated; "
            "build, _ = read_validated(sys.argv[1]); print(len(build.files), 'jsonschema' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=REPO)
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["2", "False"]


VIETNAMESE = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")


@pytest.mark.parametrize("module", ["config", "schema", "training", "specials", "export", "api", "stages/validate"])
def test_messages_live_in_the_catalogue(module):
    """No en/vi message pair is written inline: every Vietnamese text is in mintdim/errors.py."""
    path = os.path.join(REPO, "mintdim", f"{module}.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    probe = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assign)  # specials' probe text is data
             and any(getattr(t, "id", "") == "PROBE_TEXT" for t in a.targets) for n in ast.walk(a.value)}
    inline = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
              and id(n) not in probe and VIETNAMESE & set(n.value.lower())]
    assert not inline, inline


def test_preflight_trusts_a_config_that_passed_before_and_only_that_one(tmp_path):
    """The validate job re-runs pre-flight on the config the launcher just checked: the cache of that exact
    config lets it skip the schema step (no jsonschema import); any other config is checked in full."""
    cfg = {"source": {"files": [GSM8K], "fields": [["question", "answer"]], "templates": ["{question}\n{answer}"]},
           "tokenizer": {"hf_json": {"path": HF_JSON}}, "units": {"sizes": [[128, 512]], "build_batch": [64]},
           "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [100]},
           "work_dir": str(tmp_path / "work")}
    code = ("import json, sys; from mintdim.stages.validate import preflight, schema_checked, write_cache; "
            "cfg = json.loads(sys.argv[1]); trusted = schema_checked(cfg); "
            "build, metas = preflight(cfg, use_cache=True); write_cache(build, metas); "
            "print(trusted, 'jsonschema' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=REPO)

    def preflight_in_a_new_process(config_dict):
        res = subprocess.run([sys.executable, "-c", code, json.dumps(config_dict)], capture_output=True, text=True,
                             env=env, cwd=str(tmp_path))
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert preflight_in_a_new_process(cfg) == ["False", "True"]  # first time: the schema runs
    assert preflight_in_a_new_process(cfg) == ["True", "False"]  # same config: trusted, no jsonschema
    cfg["units"]["build_batch"] = [32]
    assert preflight_in_a_new_process(cfg) == ["False", "True"]  # another config: checked in full
