"""source.on_bad_record / source.max_skipped: what a build does with records it cannot turn into a sample.

`error` (the default) fails as the spec says, naming the first bad record, and also counts every bad record
of the file and lists the first ten by file:line with their class. `skip` leaves them out: they get no
sample_id, are listed in skipped_index.jsonl and counted in stats.json, the console and `inspect`; `verify`
checks the counts. More than max_skipped in a file, or a file of nothing but bad records, fails.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import SP_MODEL, basic_config, build_in, gsm8k_rows, read_json, read_jsonl, run_cli, tree_bytes, write_jsonl
from mintdim import errors as E

BAD = {5: b'{"prompt": "a", "response": ', 13: b'{"prompt": "b"}', 26: b'["not", "an", "object"]'}


def dirty_file(path, n: int = 40, bad=BAD) -> tuple[str, list[int]]:
    """n lines of GSM8K pairs, with the lines of `bad` (1-based) replaced: (path, good lines)."""
    rows = gsm8k_rows(0, n)
    lines = [bad.get(i + 1, r) for i, r in enumerate(rows)]
    return write_jsonl(path, lines), [i + 1 for i in range(n) if i + 1 not in bad]


def skip_config(src, **source):
    cfg = basic_config([src], sizes=[[64, 128, 256, 512]])
    cfg["source"].update({"on_bad_record": ["skip"], **source})
    return cfg


def test_default_policy_counts_and_lists_every_bad_record(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")
    cfg = basic_config([src], sizes=[[64, 128, 256, 512]])
    cfg["lang"] = "both"
    with pytest.raises(E.SourceParseError) as err:
        build_in(tmp_path, cfg, cores=1)
    en, vi = err.value.render("en"), err.value.render("vi")
    assert "Line: 5" in en and "Reason: invalid JSON syntax" in en  # the spec's text of the first one
    assert "3 bad records" in en
    assert f"• {src}:5 (SourceParseError)" in en and f"• {src}:13 (SampleSchemaError)" in en
    assert f"• {src}:26 (SourceParseError)" in en
    assert "on_bad_record: [skip]" in en
    assert "3 bản ghi lỗi" in vi and "on_bad_record: [skip]" in vi and "Dòng: 5" in vi
    assert not os.path.exists(tmp_path / "out" / "stats.json")


def test_skip_leaves_bad_records_out_and_lists_them(tmp_path):
    src, good = dirty_file(tmp_path / "d.jsonl")
    cfg = skip_config(src, max_skipped=[3])
    res = build_in(tmp_path, cfg, cores=1)
    out = tmp_path / "out"
    index = read_jsonl(out / "sample_index.jsonl")
    assert [r["sample_id"] for r in index] == list(range(len(good)))  # dense, in input order
    assert [r["source_line"] for r in index] == good
    skipped = read_jsonl(out / "skipped_index.jsonl")
    assert [(r["source_file"], r["source_line"], r["error"]) for r in skipped] == [
        (src, 5, "SourceParseError"), (src, 13, "SampleSchemaError"), (src, 26, "SourceParseError")]
    assert skipped[0]["reason"] == "invalid JSON syntax"
    assert skipped[2]["reason"] == "line is not a JSON object"
    assert "response" in skipped[1]["reason"] and "\n" not in skipped[1]["reason"]
    stats = read_json(out / "stats.json")
    assert stats["skipped_records"] == 3
    assert stats["skipped_records_by_class"] == {"SampleSchemaError": 1, "SourceParseError": 2}
    assert res.outputs[0].stats["skipped_records"] == 3
    assert stats["total_samples"] == len(good)
    check = run_cli(tmp_path, "verify", "out")
    assert check.returncode == 0, check.stdout + check.stderr
    shown = run_cli(tmp_path, "inspect", "out")
    assert "skipped records: 3" in shown.stdout and "skipped_index.jsonl" in shown.stdout


def test_skip_is_the_same_bytes_whatever_the_cores_and_chunks(tmp_path):
    trees = []
    for k, (cores, chunk_mb) in enumerate([(1, 256), (2, 0.002)]):
        root = tmp_path / str(k)
        dirty_file(root / "d.jsonl", 120, {5: b"{", 44: b"{}", 45: b"7", 99: b'{"prompt": 1}'})
        cfg = skip_config("d.jsonl", max_skipped=[0.05])  # relative: the indexes of both builds name it alike
        cfg["chunk_mb"] = chunk_mb
        build_in(root, cfg, cores=cores)
        trees.append(tree_bytes(root / "out"))
    assert trees[0] == trees[1]
    assert trees[0]["skipped_index.jsonl"].count(b"\n") == 4


def test_more_than_max_skipped_fails_with_the_count_and_reasons(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")  # 3 of 40: more than the default 0.01 and than 2
    for limit, said in ((None, "0.01 of its 40 records"), ([2], "2 records")):
        cfg = skip_config(src, **({} if limit is None else {"max_skipped": limit}))
        with pytest.raises(E.SourceParseError) as err:
            build_in(tmp_path, cfg, cores=1)
        en = err.value.render("en")
        assert "Line: 5" in en and "3 of the 40 records" in en and said in en, en
        assert "• 1 × SourceParseError: invalid JSON syntax" in en and "• 1 × SampleSchemaError: " in en
        assert "• 1 × SourceParseError: line is not a JSON object" in en
        assert "source.max_skipped" in en
        assert not os.path.exists(tmp_path / "out" / "stats.json")


def test_a_file_of_nothing_but_bad_records_always_fails(tmp_path):
    src = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}] * 5)
    cfg = skip_config(src, max_skipped=[1.0])
    with pytest.raises(E.SampleSchemaError) as err:
        build_in(tmp_path, cfg, cores=1)
    en = err.value.render("en")
    assert "every record of" in en.lower() and "5" in en and "source.fields" in en


def test_a_clean_build_keeps_its_bytes_and_files_without_the_policy(tmp_path):
    rows = gsm8k_rows(0, 30)
    trees = []
    for k, extra in enumerate([{}, {"on_bad_record": ["error"]}, {"on_bad_record": ["skip"]}]):
        write_jsonl(tmp_path / str(k) / "d.jsonl", rows)
        cfg = basic_config(["d.jsonl"], sizes=[[64, 128, 256, 512]])
        cfg["source"].update(extra)
        build_in(tmp_path / str(k), cfg, cores=1)
        trees.append(tree_bytes(tmp_path / str(k) / "out"))
    assert trees[0] == trees[1]
    assert "skipped_index.jsonl" not in trees[0]
    assert trees[2]["skipped_index.jsonl"] == b""  # skip set: always written, empty when nothing was skipped
    assert json.loads(trees[2]["stats.json"])["skipped_records"] == 0
    assert set(trees[2]) - set(trees[0]) == {"skipped_index.jsonl"}


def test_verify_checks_the_skipped_counts(tmp_path):
    src, _good = dirty_file(tmp_path / "d.jsonl")
    build_in(tmp_path, skip_config(src, max_skipped=[3]), cores=1)
    path = tmp_path / "out" / "skipped_index.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    check = run_cli(tmp_path, "verify", "out")
    assert check.returncode != 0 and "skipped_index.jsonl" in check.stdout + check.stderr
    path.write_bytes(b"".join(lines[:2]) + lines[2].replace(b'"source_line":26', b'"source_line":6'))
    check = run_cli(tmp_path, "verify", "out")
    assert check.returncode != 0 and "sample" in check.stdout + check.stderr


@pytest.mark.parametrize("source, needle", [
    ({"on_bad_record": ["drop"]}, "on_bad_record"),
    ({"on_bad_record": "skip"}, "on_bad_record"),
    ({"on_bad_record": ["skip"], "max_skipped": [-1]}, "max_skipped"),
    ({"on_bad_record": ["skip"], "max_skipped": [1.5]}, "max_skipped"),
    ({"on_bad_record": ["skip"], "max_skipped": [True]}, "max_skipped"),
    ({"on_bad_record": ["skip", "skip", "skip"]}, "on_bad_record"),
    ({"max_skipped": [0.1]}, "on_bad_record"),
])
def test_policy_config_errors(tmp_path, source, needle):
    from mintdim.config import resolve

    cfg = basic_config(["a.jsonl", "b.jsonl"])
    cfg["source"].update(source)
    with pytest.raises(E.PipelineValidationError) as err:
        resolve(cfg)
    assert needle in err.value.render("en") and needle in err.value.render("vi")
