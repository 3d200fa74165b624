"""The config schema agrees with the shipped example and the API; the CLI's usage paths."""

import os

import jsonschema
import pytest
import yaml
from conftest import REPO, basic_config, run_cli

from mintdim import config
from mintdim import errors as E
from mintdim.paths import schema_file


def _schema():
    with open(schema_file(), encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_schema_is_draft_2020_12_and_accepts_the_shipped_example():
    sch = _schema()
    assert sch["$schema"].endswith("2020-12/schema")
    with open(os.path.join(REPO, "config", "config.yaml"), encoding="utf-8") as f:
        example = yaml.safe_load(f)
    jsonschema.Draft202012Validator(sch).validate(example)
    config.check_schema(example)  # no MintDim error either


def test_schema_sets_no_defaults_on_required_blocks():
    sch = _schema()
    for block in ("source", "tokenizer", "units", "output"):
        assert "default" not in sch["properties"][block]


@pytest.mark.parametrize(
    "mutate, cls",
    [
        (lambda c: c["units"].update(sizes=[[0, 8]]), E.UnitValidationError),
        (lambda c: c["output"].update(samples_per_shard=["10"]), E.SamplesPerShardError),
        (lambda c: c["tokenizer"]["sentencepiece"].update(pad_id=0), E.TokenizerValidationError),
        (lambda c: c.update(lang="fr"), E.PipelineValidationError),
        (lambda c: c["source"].update(fields=[["a", "a"]]), E.FieldMappingError),
    ],
)
def test_schema_violations_map_to_the_block_error_class(mutate, cls, tmp_path):
    cfg = basic_config([str(tmp_path / "x.jsonl")])
    mutate(cfg)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_schema()).validate(cfg)
    with pytest.raises(cls):
        config.check_schema(cfg)


def test_cli_without_command_is_a_usage_error(tmp_path):
    res = run_cli(tmp_path)
    assert res.returncode == 2
    assert "build" in res.stdout


def test_cli_help_lists_the_build_options(tmp_path):
    res = run_cli(tmp_path, "build", "--help")
    assert res.returncode == 0
    for opt in ("--cores", "--profile", "--keep-intermediates", "--dry-run"):
        assert opt in res.stdout


def test_cli_missing_config_file_is_one_clear_message(tmp_path):
    res = run_cli(tmp_path, "build", "nope.yaml", "--cores", "1")
    assert res.returncode == 1
    assert "MintDimFileNotFoundError: Required file was not found." in res.stderr
    assert "Context: config" in res.stderr
    assert "Traceback" not in res.stderr
    assert os.listdir(tmp_path) == []


def test_cli_bad_yaml_is_a_pipeline_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("source: [unclosed\n")
    res = run_cli(tmp_path, "build", "bad.yaml")
    assert res.returncode == 1
    assert res.stderr.startswith("PipelineValidationError")
    assert "Traceback" not in res.stderr
