"""The config check: the JSON schema first, then the rules across fields, in one fixed order.

A config with several problems reports the first in that order (what the config is, missing blocks,
shapes, mapping arity, values, rules on the resolved entries, and last any violation no step words),
with the same texts as before the schema moved first (each expected text below was printed by the
previous check, config._resolve + the schema as a safety net; those of source.chat, tokenizer.hf_dir,
units.pack/overflow and 'did you mean' by main's check before the merge into this one, chat.check_block
included). No config in a test needs a file.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import GSM8K, HF_JSON, REPO

from mintdim import config, entries, schema
from mintdim import errors as E
from mintdim.units import packing


def base():
    return {
        "source": {
            "files": ["d/a.jsonl", "d/b.jsonl"],
            "fields": [["prompt", "response"]],
            "templates": ["{prompt}\n{response}"],
        },
        "tokenizer": {"sentencepiece": {"path": "t/tok.model"}},
        "units": {"sizes": [[16, 32, 64]], "build_batch": [64]},
        "output": {"dir": "out", "samples_per_shard": [100]},
    }


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


def chat_case(**changes):
    """base() as conversations (source.chat: {}, no fields/templates, an hf_dir tokenizer), with changes."""
    return case(
        **{
            "source__fields": "<del>",
            "source__templates": "<del>",
            "source__chat": {},
            "tokenizer": {"hf_dir": {"path": "tokdir"}},
            **changes,
        }
    )


CASES = {
    "unknown_key_before_missing": case(foo=1, units="<del>"),
    "missing_all_at_once_before_shapes": case(
        source__templates=[], output__dir="", source__fields="x", units__build_batch=None
    ),
    "fields_before_tokenizer": case(source__fields=[["a"], 5], tokenizer={"sentencepiece": {"path": 5}}),
    "fields_index_order": case(source__fields=[["a", "a"], []]),
    "tokenizer_kinds_before_items": case(tokenizer={"sentencepiece": {"path": ""}, "hf_json": {"x": 1}}),
    "auto_range_before_build_batch_shape": case(
        units__sizes="auto", units__k=2, units__min_size=64, units__max_size=8, units__build_batch=5
    ),
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
    "did_you_mean_in_a_block": case(units__packs=[4096]),
    "chat_item_before_missing": chat_case(source__chat={"speaker": "x"}, output="<del>"),
    "chat_arity_empty_list": chat_case(source__chat=[]),
    "chat_list_of_one_is_shared": chat_case(source__chat=[None]),
    "chat_mapped_null_needs_fields": chat_case(source__chat=[None, {}]),
    "chat_key_before_roles": chat_case(source__chat={"role": "", "roles": {}}),
    "chat_same_key_after_defaults": chat_case(source__chat={"role": "content"}),
    "chat_extras_shape_before_reserved": chat_case(source__chat={"extras": ["messages", "messages"]}),
    "chat_extras_reserved": chat_case(source__chat={"extras": ["tools", "messages"]}),
    "chat_train_on_roles": chat_case(
        source__chat={"roles": {"human": "user", "gpt": "assistant"}}, source__train_on=[["bot"]]
    ),
    "chat_train_on_role_strings": chat_case(source__train_on=[[""]]),
    "chat_needs_hf_dir": chat_case(tokenizer={"hf_json": {"path": "t.json"}}),
    "hf_dir_path_before_options": chat_case(tokenizer={"hf_dir": {"pad_token": 5}}),
    "hf_dir_option": chat_case(tokenizer={"hf_dir": {"path": "tokdir", "chat_template": ""}}),
    "hf_dir_templates_before_two_pads": case(
        tokenizer={"hf_dir": [{"path": "tk", "pad_token": "<a>"}, {"path": "tk", "pad_token": "<b>"}]},
        output__dir=["o1", "o2"],
        source__templates=["{prompt}"],
    ),
    "hf_dir_two_pads": case(
        tokenizer={"hf_dir": [{"path": "tk", "pad_token": "<a>"}, {"path": "tk"}]},
        output__dir=["o1", "o2"],
        source__templates=["{prompt}{response}"],
    ),
    "pack_and_sizes_before_shapes": case(units__pack=[4096], source__fields="x"),
    "overflow_collide_with_sizes": case(units__overflow=["drop", "truncate"]),
    "pack_values": case(units__sizes="<del>", units__pack=[4096.0]),
    "overflow_values": case(units__sizes="<del>", units__pack=[4096], units__overflow=["keep"]),
    "pack_arity_like_sizes": case(units__sizes="<del>", units__pack=[1, 2, 3]),
    "pack_sizes_collide_as_declared": case(
        units__sizes="<del>", units__pack=[4096, 8192], units__overflow=["drop"]
    ),
    "pack_overflow_collide": case(
        units__sizes="<del>", units__pack=[4096], units__overflow=["drop", "truncate"]
    ),
    "pack_planning_options_auto_only": case(units__sizes="<del>", units__pack=[4096], units__k=3),
    "chat_system_key_before_roles": chat_case(source__chat={"system": 3, "roles": {}}),
    "chat_item_by_item": chat_case(source__chat=[{"role": "content"}, {"roles": {}}]),
    "chat_kwargs_reserved_in_config_order": chat_case(
        source__chat={"chat_template_kwargs": {"tools": [], "messages": []}}
    ),
    "take_not_infinite": case(source__take=[float("inf")]),
}


EXPECTED = {
    "unknown_key_before_missing": (
        "PipelineValidationError",
        "Problem: unknown config keys: ['foo']",
        "Vấn đề: key cấu hình không hợp lệ: ['foo']",
    ),
    "missing_all_at_once_before_shapes": (
        "PipelineValidationError",
        "Missing:\n\n• source.templates\n• units.build_batch\n• output.dir",
        "Thiếu:\n\n• source.templates\n• units.build_batch\n• output.dir",
    ),
    "fields_before_tokenizer": (
        "FieldMappingError",
        'Problem: fields must be a list of lists, e.g. [["prompt", "response"]]',
        'Vấn đề: fields phải là list các list, ví dụ [["prompt", "response"]]',
    ),
    "fields_index_order": (
        "FieldMappingError",
        "Problem: fields[0] names a field twice: ['a', 'a']",
        "Vấn đề: fields[0] khai báo một field hai lần: ['a', 'a']",
    ),
    "tokenizer_kinds_before_items": (
        "TokenizerValidationError",
        "Problem: declare exactly one tokenizer kind, got ['sentencepiece', 'hf_json']",
        "Vấn đề: chỉ khai báo đúng một loại tokenizer, hiện tại là ['sentencepiece', 'hf_json']",
    ),
    "auto_range_before_build_batch_shape": (
        "UnitValidationError",
        "Problem: min_size is above max_size",
        "Vấn đề: min_size lớn hơn max_size",
    ),
    "shape_before_arity": (
        "SamplesPerShardError",
        "Problem: samples_per_shard must be a list of positive ints, got str",
        "Vấn đề: samples_per_shard phải là list số nguyên dương, hiện tại là str",
    ),
    "arity_before_values": (
        "SamplesPerShardError",
        "Problem: Received 2 input files but 3 samples_per_shard entries",
        "Vấn đề: Nhận 2 file đầu vào nhưng chỉ có 3 samples_per_shard",
    ),
    "sizes_values_by_index_unsorted_first": (
        "UnitValidationError",
        "Problem: sizes[0] = [32, 16] is not sorted ascending",
        "Vấn đề: sizes[0] = [32, 16] không tăng dần",
    ),
    "sizes_values_by_index_value_first": (
        "UnitValidationError",
        "Problem: sizes[0] = [0]",
        "Vấn đề: sizes[0] = [0]",
    ),
    "values_before_collisions": (
        "UnitValidationError",
        "Problem: build_batch[0] = 0",
        "Vấn đề: build_batch[0] = 0",
    ),
    "collision_before_templates": (
        "SamplesPerShardError",
        "Problem: files that share output out must share samples_per_shard (d/a.jsonl: 10, d/b.jsonl: 20)",
        "Vấn đề: các file dùng chung output out phải dùng chung samples_per_shard (d/a.jsonl: 10, "
        "d/b.jsonl: 20)",
    ),
    "integers_are_ints": (
        "UnitValidationError",
        "Problem: sizes[0] = [16.0, 32]",
        "Vấn đề: sizes[0] = [16.0, 32]",
    ),
    "nan_is_not_a_number": (
        "PipelineValidationError",
        "Problem: chunk_mb must be a positive number, got nan",
        "Vấn đề: chunk_mb phải là số dương, hiện tại là nan",
    ),
    "train_vocab_size_float": (
        "TokenizerValidationError",
        "Problem: vocab_size must be an int >= 258, got 300.0",
        "Vấn đề: vocab_size phải là số nguyên >= 258, hiện tại là 300.0",
    ),
    "templates_before_unworded": (
        "TemplateFieldMismatchError",
        "Field causing template mismatch: response Reason: fields declares response, but template does not "
        "use {response}",
        "Field gây lệch template: response Lý do: fields khai báo response, nhưng template không dùng "
        "{response}",
    ),
    "unworded_in_jsonschema_words": (
        "PipelineValidationError",
        "Problem: source.train_on: None is not of type 'array'",
        "Vấn đề: source.train_on: None is not of type 'array'",
    ),
    "unworded_auto_null": (
        "UnitValidationError",
        "Problem: units.multiple_of: None is not of type 'integer'",
        "Vấn đề: units.multiple_of: None is not of type 'integer'",
    ),
    "did_you_mean_in_a_block": (
        "PipelineValidationError",
        "Problem: unknown keys in units: ['packs']\n\nDid you mean 'pack' instead of 'packs'?",
        "Vấn đề: key không hợp lệ trong units: ['packs']\n\nCó phải ý bạn là 'pack' thay vì 'packs'?",
    ),
    "chat_item_before_missing": (
        "PipelineValidationError",
        "Problem: unknown keys in source.chat: ['speaker'] (known: messages, role, content, roles, system, "
        "extras, train, last_turn, drop_roles, reasoning, chat_template_kwargs)",
        "Vấn đề: key không hợp lệ trong source.chat: ['speaker'] (hợp lệ: messages, role, content, roles, "
        "system, extras, train, last_turn, drop_roles, reasoning, chat_template_kwargs)",
    ),
    "chat_arity_empty_list": (
        "PipelineValidationError",
        "Problem: source.chat: received 2 input files but 0 chat entries (1: shared, 2: one per file)",
        "Vấn đề: source.chat: nhận 2 file đầu vào nhưng có 0 mục chat (1: dùng chung, 2: mỗi file một mục)",
    ),
    "chat_list_of_one_is_shared": (
        "PipelineValidationError",
        "Problem: source.chat must be a mapping (e.g. {} for OpenAI messages), got NoneType",
        "Vấn đề: source.chat phải là mapping (ví dụ {} cho messages kiểu OpenAI), hiện tại là NoneType",
    ),
    "chat_mapped_null_needs_fields": (
        "PipelineValidationError",
        "Missing:\n\n• source.fields\n• source.templates",
        "Thiếu:\n\n• source.fields\n• source.templates",
    ),
    "chat_key_before_roles": (
        "PipelineValidationError",
        "Problem: source.chat.role must be a non-empty string (a JSON key), got ''",
        "Vấn đề: source.chat.role phải là string không rỗng (một key JSON), hiện tại là ''",
    ),
    "chat_same_key_after_defaults": (
        "PipelineValidationError",
        "Problem: source.chat: role and content name the same key 'content'",
        "Vấn đề: source.chat: role và content cùng là key 'content'",
    ),
    "chat_extras_shape_before_reserved": (
        "PipelineValidationError",
        "Problem: source.chat.extras must be a list of record keys (strings), e.g. [tools]",
        "Vấn đề: source.chat.extras phải là list key của bản ghi (string), ví dụ [tools]",
    ),
    "chat_extras_reserved": (
        "PipelineValidationError",
        "Problem: source.chat.extras may not name ['messages']: the template receives them from MintDim",
        "Vấn đề: source.chat.extras không được có ['messages']: MintDim truyền các biến này cho template",
    ),
    "chat_train_on_roles": (
        "FieldMappingError",
        "Problem: train_on[0] names role 'bot', which source.chat.roles never produces ['assistant', 'user']",
        "Vấn đề: train_on[0] có role 'bot', không thuộc các role mà source.chat.roles tạo ra "
        "['assistant', 'user']",
    ),
    "chat_train_on_role_strings": (
        "FieldMappingError",
        "Problem: train_on[0] names '': a conversation file trains roles (strings), e.g. [[\"assistant\"]]",
        "Vấn đề: train_on[0] có '': file hội thoại train theo role (string), ví dụ [[\"assistant\"]]",
    ),
    "chat_needs_hf_dir": (
        "TokenizerValidationError",
        "Problem: source.chat renders conversations with the model's chat template: use the hf_dir tokenizer "
        "kind (a tokenizer directory), not hf_json",
        "Vấn đề: source.chat render hội thoại bằng chat template của model: dùng loại tokenizer hf_dir "
        "(thư mục tokenizer), không phải hf_json",
    ),
    "hf_dir_path_before_options": (
        "TokenizerValidationError",
        "Problem: tokenizer config is missing key: path",
        "Vấn đề: config tokenizer thiếu key: path",
    ),
    "hf_dir_option": (
        "TokenizerValidationError",
        "Problem: chat_template must be a non-empty string, got ''",
        "Vấn đề: chat_template phải là string không rỗng, hiện tại là ''",
    ),
    "hf_dir_templates_before_two_pads": (
        "TemplateFieldMismatchError",
        "Field causing template mismatch: response Reason: fields declares response, but template does not "
        "use {response}",
        "Field gây lệch template: response Lý do: fields khai báo response, nhưng template không dùng "
        "{response}",
    ),
    "hf_dir_two_pads": (
        "TokenizerValidationError",
        "Problem: tokenizer tk is declared with two pad_token values",
        "Vấn đề: tokenizer tk được khai báo với hai giá trị pad_token",
    ),
    "pack_and_sizes_before_shapes": (
        "UnitValidationError",
        "Problem: declare either sizes or pack, not both (pack replaces sizes)",
        "Vấn đề: chỉ khai báo sizes hoặc pack, không cả hai (pack thay cho sizes)",
    ),
    "overflow_collide_with_sizes": (
        "UnitMappingError",
        "Output directory: out\n\nFiles and their overflow:\n\n• d/a.jsonl: drop\n• d/b.jsonl: truncate",
        "Thư mục output: out\n\nCác file và overflow của chúng:\n\n• d/a.jsonl: drop\n• d/b.jsonl: truncate",
    ),
    "pack_values": (
        "UnitValidationError",
        "Problem: pack must be a list of positive row lengths, e.g. [4096], got [4096.0]",
        "Vấn đề: pack phải là list độ dài hàng dương, ví dụ [4096], hiện tại là [4096.0]",
    ),
    "overflow_values": (
        "UnitValidationError",
        "Problem: overflow must be a list of error | drop | truncate, e.g. [drop], got ['keep']",
        "Vấn đề: overflow phải là list gồm error | drop | truncate, ví dụ [drop], hiện tại là ['keep']",
    ),
    "pack_arity_like_sizes": (
        "UnitMappingError",
        "Received 2 input files but 3 unit configs.",
        "Nhận 2 file đầu vào nhưng chỉ có 3 unit config.",
    ),
    "pack_sizes_collide_as_declared": (
        "UnitMappingError",
        "Output directory: out\n\nFiles and their unit sizes:\n\n• d/a.jsonl: [4096]\n• d/b.jsonl: [8192]",
        "Thư mục output: out\n\nCác file và unit sizes của chúng:\n\n• d/a.jsonl: [4096]\n"
        "• d/b.jsonl: [8192]",
    ),
    "pack_overflow_collide": (
        "UnitMappingError",
        "Output directory: out\n\nFiles and their pack and overflow:\n\n• d/a.jsonl: [4096, 'drop']\n"
        "• d/b.jsonl: [4096, 'truncate']",
        "Thư mục output: out\n\nCác file và pack and overflow của chúng:\n\n• d/a.jsonl: [4096, 'drop']\n"
        "• d/b.jsonl: [4096, 'truncate']",
    ),
    "pack_planning_options_auto_only": (
        "UnitValidationError",
        "Problem: ['k'] apply only with sizes: auto",
        "Vấn đề: ['k'] chỉ dùng được với sizes: auto",
    ),
    "chat_system_key_before_roles": (
        "PipelineValidationError",
        "Problem: source.chat.system must be a non-empty string (a JSON key), got 3",
        "Vấn đề: source.chat.system phải là string không rỗng (một key JSON), hiện tại là 3",
    ),
    "chat_item_by_item": (
        "PipelineValidationError",
        "Problem: source.chat[0]: role and content name the same key 'content'",
        "Vấn đề: source.chat[0]: role và content cùng là key 'content'",
    ),
    "chat_kwargs_reserved_in_config_order": (
        "PipelineValidationError",
        "Problem: source.chat.chat_template_kwargs may not set ['tools', 'messages']",
        "Vấn đề: source.chat.chat_template_kwargs không được đặt ['tools', 'messages']",
    ),
    "take_not_infinite": (
        "PipelineValidationError",
        "Problem: source.take[0] must be a fraction of the file's samples",
        "Vấn đề: source.take[0] phải là tỉ lệ số sample của file",
    ),
}


def _annotations(node):
    """Every `x-error` of a schema (sub)document: its strings, each `Class.key(args)`."""
    if isinstance(node, list):
        return [words for item in node for words in _annotations(item)]
    if not isinstance(node, dict):
        return []
    words = node.get("x-error") or {}
    found = list(words.values()) if isinstance(words, dict) else [words]
    return found + [w for value in node.values() for w in _annotations(value)]


def test_every_schema_annotation_names_a_message_and_arguments_the_check_knows():
    """The schema's `x-error`s word its violations: each names an error class of the catalogue, one of
    its messages, and arguments the check computes (or literals)."""
    import yaml

    from mintdim.paths import schema_file

    with open(schema_file(), encoding="utf-8") as f:
        found = _annotations(yaml.safe_load(f))
    assert len(found) > 50
    for words in found:
        cls, key, args = re.fullmatch(r"(\w+)\.(\w+)\((.*)\)", words).groups()
        assert callable(getattr(getattr(E, cls), key)), words
        for arg in filter(None, (a.strip() for a in args.split(","))):
            assert arg in schema.ARGS or arg == "None" or re.fullmatch(r"'\w+'", arg), words


@pytest.mark.parametrize("name", sorted(CASES))
def test_several_problems_report_the_first_in_the_fixed_order(name):
    kind, en, vi = EXPECTED[name]
    with pytest.raises(E.MintDimError) as info:
        config.resolve(CASES[name])
    err = info.value
    assert err.kind == kind
    assert en in err.render("en") and vi in err.render("vi")
    if not schema.findings(CASES[name]):  # a rule across fields only: the schema alone finds nothing
        config.check_schema(CASES[name])
        return
    with pytest.raises(type(err)) as again:  # else the schema alone reports the same error
        config.check_schema(CASES[name])
    assert again.value.render("both") == err.render("both")


def test_a_valid_config_passes_the_schema_and_resolves_the_same_trusted_or_not():
    cfg = case(units__sizes="auto", units__k=3, units__cost="attention", source__train_on=[["response"]])
    assert not schema.findings(cfg)
    config.check_schema(cfg)
    assert config.resolve(cfg).build_id == config.resolve(cfg, trusted=True).build_id


def test_a_stage_job_reading_validated_json_does_not_import_jsonschema(tmp_path):
    """Every stage job resolves validated.json (written after pre-flight passed): no schema step there."""
    path = tmp_path / "validated.json"
    path.write_text(json.dumps({"config": base(), "tokenizers": {}}))
    code = (
        "import sys; from mintdim.stages.validate import read_validated; "
        "build, _ = read_validated(sys.argv[1]); print(len(build.files), 'jsonschema' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=REPO)
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["2", "False"]


# the tone marks Vietnamese shares with other languages: "có", "dòng", "hàng"
VIETNAMESE = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹàáãèéìíòóõùúýĩũ")
MODULES = sorted(
    os.path.relpath(os.path.join(base, name), os.path.join(REPO, "mintdim"))[:-3].replace(os.sep, "/")
    for base, _dirs, files in os.walk(os.path.join(REPO, "mintdim"))
    for name in files
    if name.endswith(".py")
    and os.path.join(base, name) != os.path.join(REPO, "mintdim", "errors.py")
    and os.path.basename(base) != "catalogue"  # the catalogue's tables: the texts themselves
)


def test_the_catalogue_check_walks_the_whole_package():
    """Every module of the package is checked (a new subpackage too), the catalogue itself (errors.py and
    its texts, catalogue/) is not."""
    assert {
        "config",
        "api",
        "sources/chat",
        "reading/reader",
        "reading/packed_reader",
        "formats/records",
        "commands/tokenizer",
        "run/runner",
        "tokenizers/specials",
    } <= set(MODULES)
    assert "errors" not in MODULES and "catalogue/output" not in MODULES and len(MODULES) > 40


@pytest.mark.parametrize("module", MODULES)
def test_messages_live_in_the_catalogue(module):
    """No en/vi message pair is written inline: every Vietnamese text is in the catalogue's texts
    (mintdim/catalogue/)."""
    path = os.path.join(REPO, "mintdim", f"{module}.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    probe = {
        id(n)
        for a in ast.walk(tree)
        if isinstance(a, ast.Assign)  # specials' probe text is data
        and any(getattr(t, "id", "") == "PROBE_TEXT" for t in a.targets)
        for n in ast.walk(a.value)
    }
    inline = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in probe
        and VIETNAMESE & set(n.value.lower())
    ]
    assert not inline, inline


def test_preflight_trusts_a_config_that_passed_before_and_only_that_one(tmp_path):
    """The validate job re-runs pre-flight on the config the launcher just checked: the cache of that exact
    config lets it skip the schema step (no jsonschema import); any other config is checked in full."""
    cfg = {
        "source": {
            "files": [GSM8K],
            "fields": [["question", "answer"]],
            "templates": ["{question}\n{answer}"],
        },
        "tokenizer": {"hf_json": {"path": HF_JSON}},
        "units": {"sizes": [[128, 512]], "build_batch": [64]},
        "output": {"dir": str(tmp_path / "out"), "samples_per_shard": [100]},
        "work_dir": str(tmp_path / "work"),
    }
    code = (
        "import json, sys; from mintdim.stages.preflight import preflight; "
        "from mintdim.stages.tokenizer_facts import schema_checked, write_cache; "
        "cfg = json.loads(sys.argv[1]); trusted = schema_checked(cfg); "
        "build, metas = preflight(cfg, use_cache=True); write_cache(build, metas); "
        "print(trusted, 'jsonschema' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=REPO)

    def preflight_in_a_new_process(config_dict):
        res = subprocess.run(
            [sys.executable, "-c", code, json.dumps(config_dict)],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(tmp_path),
        )
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert preflight_in_a_new_process(cfg) == ["False", "True"]  # first time: the schema runs
    assert preflight_in_a_new_process(cfg) == ["True", "False"]  # same config: trusted, no jsonschema
    cfg["units"]["build_batch"] = [32]
    assert preflight_in_a_new_process(cfg) == ["False", "True"]  # another config: checked in full


def test_extensions_resolve_as_main_did_and_leave_unused_fields_out_of_the_build_id():
    """source.chat, hf_dir options and units.pack fill their entry fields; a config that uses none of them
    has entries without them in the build id (its id and work directory from before the extensions)."""
    plain = config.resolve(base())
    canon = [entries.canonical(f) for f in plain.files] + [entries.canonical(o) for o in plain.outputs]
    assert not any(set(entries.EXTENSION_FIELDS) & set(c) for c in canon)
    talk = config.resolve(
        chat_case(
            source__chat={"last_turn": True, "roles": {"gpt": "x"}},
            tokenizer={"hf_dir": {"path": "tokdir", "pad_token": "<p>"}},
        )
    )
    f = talk.files[0]
    assert (f.source.fields, f.source.template, f.masks.train_on, f.tokenizer.options) == (
        [],
        "",
        ["assistant"],
        {"pad_token": "<p>"},
    )
    assert f.chat == {
        "messages": "messages",
        "role": "role",
        "content": "content",
        "last_turn": True,
        "roles": {"gpt": "x"},
    }
    packed = config.resolve(
        case(
            units__sizes="<del>",
            units__pack=[4096, 8192],
            units__overflow=["error", "drop"],
            output__dir=["o1", "o2"],
        )
    )
    assert [(f.units.pack, f.units.overflow, f.units.sizes) for f in packed.files] == [
        (4096, "error", [4096]),
        (8192, "drop", [packing.NO_LIMIT]),
    ]
    assert [(o.pack, o.overflow, o.sizes, o.auto) for o in packed.outputs] == [
        (4096, "error", [4096], None),
        (8192, "drop", [8192], None),
    ]
    assert len({plain.build_id, talk.build_id, packed.build_id}) == 3
