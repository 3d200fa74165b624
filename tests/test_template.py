"""Templates: `{name}` placeholders, `{{`/`}}` literal braces, verbatim substitution, syntax errors."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import basic_config

from mintdim import errors as E
from mintdim.config import resolve
from mintdim.sources.template import Template, TemplateSyntaxError, parse


def test_placeholders_and_literals():
    tpl = parse("{instruction}\n\n{input}\n\n{output}")
    assert tpl.names == ("instruction", "input", "output")
    assert tpl.literals == ("", "\n\n", "\n\n", "")
    text = tpl.render({"instruction": "Do it", "input": "x", "output": "done", "extra": "ignored"})
    assert text == "Do it\n\nx\n\ndone"


def test_render_is_pure_substitution_no_extra_characters():
    tpl = parse("{a}{b}")
    assert tpl.render({"a": "", "b": ""}) == ""
    assert tpl.render({"a": "1", "b": "2"}) == "12"
    assert parse("plain text only").render({}) == "plain text only"
    assert parse("").render({}) == ""


def test_literal_braces_unescaped():
    tpl = parse("{{json}}: {{{a}}} and }}{{")
    assert tpl.names == ("a",)
    assert tpl.render({"a": "v"}) == "{json}: {v} and }{"
    # same result as Python's own format for the plain cases
    assert tpl.render({"a": "v"}) == "{{json}}: {{{a}}} and }}{{".format(a="v")


def test_doubled_braces_around_a_name_are_not_a_placeholder():
    tpl = parse("{{a}}")
    assert tpl.names == ()
    assert tpl.render({}) == "{a}"
    assert tpl.static_parts == ["{a}"]


@pytest.mark.parametrize("value", ["{x}", "{a}", "{{", "}}", "{0}", "{a!r:>10}", "%s {} \\n"])
def test_values_with_braces_stay_verbatim(value):
    tpl = parse("[{a}|{b}]")
    assert tpl.render({"a": value, "b": "{b}"}) == f"[{value}|{{b}}]"


def test_repeated_placeholder_rendered_each_time():
    tpl = parse("{a}-{b}-{a}")
    assert tpl.names == ("a", "b", "a")
    assert tpl.render({"a": "X", "b": "Y"}) == "X-Y-X"


def test_static_parts_are_non_empty_literal_segments():
    assert parse("{a}\n{b}").static_parts == ["\n"]
    assert parse("Q: {a}\nA: {b}.").static_parts == ["Q: ", "\nA: ", "."]
    assert parse("{a}{b}").static_parts == []
    assert parse("{{{a}}}").static_parts == ["{", "}"]
    assert parse("no placeholders").static_parts == ["no placeholders"]


def test_unicode_names_and_literals():
    tpl = parse("câu hỏi: {câu}\t→ {đáp_án}")
    assert tpl.names == ("câu", "đáp_án")
    assert tpl.render({"câu": "1+1", "đáp_án": "2"}) == "câu hỏi: 1+1\t→ 2"


def test_template_is_frozen_value():
    tpl = parse("{a}")
    assert isinstance(tpl, Template)
    assert tpl == parse("{a}")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tpl.text = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "text, placeholder",
    [
        ("{a:>10} {b}", "{a:>10}"),  # format spec
        ("{a!r} {b}", "{a!r}"),  # conversion
        ("{} {a}", "{}"),  # empty / positional
        ("{a.b}", "{a.b}"),  # attribute access
        ("{a[0]}", "{a[0]}"),  # index access
        ("{a:}", "{a:}"),  # empty format spec
        ("x {a", "{a"),  # unclosed
        ("{a}{b", "{b"),  # unclosed at end
        ("a } b", "}"),  # lone closing brace
        ("{a}}", "}"),  # stray closing brace after a placeholder
        ("{a{b}", "{a{b}"),  # nested open brace
    ],
)
def test_syntax_errors_name_the_offending_placeholder(text, placeholder):
    with pytest.raises(TemplateSyntaxError) as info:
        parse(text)
    assert info.value.placeholder == placeholder
    assert info.value.reason


@pytest.mark.parametrize("text", ["{a:>10}", "{a!r}", "{}", "{a.b}", "{a"])
def test_syntax_error_is_template_field_mismatch_in_config(tmp_path, text):
    """DECISIONS: a template syntax error raises TemplateFieldMismatchError naming the placeholder."""
    cfg = basic_config([str(tmp_path / "x.jsonl")], fields=[["a"]], templates=[text])
    with pytest.raises(E.TemplateFieldMismatchError) as info:
        resolve(cfg)
    bad = parse_error_placeholder(text)
    assert bad in str(info.value)
    assert "Field causing template mismatch: " + bad in str(info.value)


def parse_error_placeholder(text: str) -> str:
    try:
        parse(text)
    except TemplateSyntaxError as bad:
        return bad.placeholder
    raise AssertionError(f"{text!r} parsed")


def test_field_mismatch_both_ways(tmp_path):
    path = str(tmp_path / "x.jsonl")
    with pytest.raises(E.TemplateFieldMismatchError) as info:
        resolve(
            basic_config(
                [path],
                fields=[["instruction", "input", "output"]],
                templates=["{instruction}\n\n{prompt}\n\n{output}"],
            )
        )
    assert "Field causing template mismatch: prompt" in str(info.value)
    assert "template uses {prompt}, but fields does not declare it" in str(info.value)
    with pytest.raises(E.TemplateFieldMismatchError) as info:
        resolve(basic_config([path], fields=[["prompt", "answer", "source"]], templates=["{prompt}{answer}"]))
    assert "Field causing template mismatch: source" in str(info.value)


def test_escaped_braces_are_not_placeholders_for_field_matching(tmp_path):
    path = str(tmp_path / "x.jsonl")
    build = resolve(basic_config([path], fields=[["a"]], templates=["{{b}} {a}"]))
    assert build.files[0].source.template == "{{b}} {a}"
