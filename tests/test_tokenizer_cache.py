"""Tokenizer facts cached by content across work directories (MINTDIM_CACHE_DIR; stages/tokenizer_facts.py,
mintdim/tokenizers/engines.py): a fresh work dir does not load the model again just to learn its vocab
size, PAD, UNK and dtype; a changed file is not served from the cache; a corrupt or unwritable cache is
ignored; the output bytes are the same with and without it."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import HF_JSON, SP_MODEL, basic_config, build_in, read_json, tree_bytes

from mintdim.stages import preflight
from mintdim.tokenizers import engines


def _config(data, tokenizer, tag):
    return basic_config(
        [data], tokenizer=tokenizer, sizes=[[64, 128, 256, 2048]], out=f"out-{tag}", work_dir=f"work-{tag}"
    )


def _outputs(root, tag) -> dict[str, bytes]:
    """The output's bytes; the manifest without the fields that name this build's own paths."""
    out = os.path.join(str(root), f"out-{tag}")
    tree = tree_bytes(out)
    manifest = json.loads(tree.pop("manifest.json"))
    manifest["output"] = manifest["source"] = None
    manifest["tokenizer"].pop("path", None)
    tree["manifest"] = json.dumps(manifest, sort_keys=True).encode()
    return tree


def _no_loading(monkeypatch):
    def refused(*a, **k):
        raise AssertionError("pre-flight loaded the tokenizer")

    monkeypatch.setattr(preflight, "load", refused)


@pytest.mark.parametrize("kind, path", [("sentencepiece", SP_MODEL), ("hf_json", HF_JSON)])
def test_a_fresh_work_dir_does_not_load_the_model_again(tmp_path, monkeypatch, pairs, kind, path):
    tok = str(shutil.copy(path, tmp_path / os.path.basename(path)))
    cfg = lambda tag: _config(pairs, {kind: {"path": tok}}, tag)  # noqa: E731
    build_in(tmp_path, cfg("a"))
    facts = os.listdir(os.path.join(os.environ["MINTDIM_CACHE_DIR"], "tokenizer-facts"))
    assert len(facts) == 1
    with monkeypatch.context() as m:
        _no_loading(m)
        build_in(tmp_path, cfg("b"))  # a new work dir: its own tokenizer-facts.json is absent
        assert os.path.isfile(tmp_path / "work-b" / "tokenizer-facts.json")
    monkeypatch.setenv("MINTDIM_CACHE_DIR", str(tmp_path / "empty-cache"))  # the same build without the cache
    build_in(tmp_path, cfg("c"))
    assert _outputs(tmp_path, "a") == _outputs(tmp_path, "b") == _outputs(tmp_path, "c")


def test_a_template_not_checked_before_loads_the_model(tmp_path, monkeypatch, pairs):
    """The cache holds the templates whose literals passed; a new literal is checked with the model."""
    tok = str(shutil.copy(SP_MODEL, tmp_path / "sp.model"))
    build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "a"))
    cfg = _config(pairs, {"sentencepiece": {"path": tok}}, "b")
    cfg["source"]["templates"] = ["Q: {prompt}\nA: {response}"]
    calls = []
    real = preflight.load
    monkeypatch.setattr(preflight, "load", lambda *a, **k: calls.append(1) or real(*a, **k))
    build_in(tmp_path, cfg)
    assert calls


def test_a_changed_file_is_not_served_from_the_cache(tmp_path, pairs):
    """Same path, same size, same mtime, another PAD id: the facts follow the content."""
    tok = str(tmp_path / "tok.json")
    shutil.copy(HF_JSON, tok)
    build_in(tmp_path, _config(pairs, {"hf_json": {"path": tok}}, "a"))
    assert read_json(tmp_path / "out-a" / "manifest.json")["tokenizer"]["pad_id"] == 0
    st = os.stat(tok)
    with open(tok, encoding="utf-8") as f:
        text = f.read()
    assert text.count('"pad_id":0,') == 1
    with open(tok, "w", encoding="utf-8") as f:
        f.write(text.replace('"pad_id":0,', '"pad_id":1,'))
    os.utime(tok, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(tok).st_size == st.st_size
    build_in(tmp_path, _config(pairs, {"hf_json": {"path": tok}}, "b"))
    assert read_json(tmp_path / "out-b" / "manifest.json")["tokenizer"]["pad_id"] == 1


def _corrupt_every_entry(root: str) -> int:
    n = 0
    for base, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(base, name)
            with open(p, "r+b") as f:
                data = bytearray(f.read())
                data[len(data) // 2] ^= 0xFF
                f.seek(0)
                f.write(data)
            n += 1
    return n


def test_a_corrupt_entry_is_ignored(tmp_path, monkeypatch, pairs):
    tok = str(shutil.copy(SP_MODEL, tmp_path / "sp.model"))
    build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "a"))
    assert _corrupt_every_entry(os.environ["MINTDIM_CACHE_DIR"]) == 1
    calls = []
    real = preflight.load
    monkeypatch.setattr(preflight, "load", lambda *a, **k: calls.append(1) or real(*a, **k))
    build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "b"))
    assert calls  # the model was loaded again, and the entry rewritten
    assert _outputs(tmp_path, "a") == _outputs(tmp_path, "b")
    with monkeypatch.context() as m:
        _no_loading(m)
        build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "c"))
    assert _outputs(tmp_path, "a") == _outputs(tmp_path, "c")


def test_an_unwritable_cache_changes_nothing(tmp_path, monkeypatch, pairs):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("MINTDIM_CACHE_DIR", str(blocker))
    tok = str(shutil.copy(SP_MODEL, tmp_path / "sp.model"))
    build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "a"))
    monkeypatch.setenv("MINTDIM_CACHE_DIR", str(tmp_path / "cache"))
    build_in(tmp_path, _config(pairs, {"sentencepiece": {"path": tok}}, "b"))
    assert _outputs(tmp_path, "a") == _outputs(tmp_path, "b")
    assert blocker.read_text().startswith("a file")


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("MINTDIM_CACHE_DIR", str(tmp_path / "m"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert engines.user_cache_dir() == str(tmp_path / "m")
    monkeypatch.delenv("MINTDIM_CACHE_DIR")
    assert engines.user_cache_dir() == str(tmp_path / "x" / "mintdim")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert engines.user_cache_dir() == str(tmp_path / "h" / ".cache" / "mintdim")


def test_entries_carry_a_checksum(tmp_path):
    path = str(tmp_path / "e")
    assert engines.write_entry(path, b"facts")
    assert engines.read_entry(path) == b"facts"
    with open(path, "ab") as f:
        f.write(b"!")
    assert engines.read_entry(path) is None
    assert engines.read_entry(str(tmp_path / "absent")) is None
