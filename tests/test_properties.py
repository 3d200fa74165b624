"""Property-based tests (hypothesis) and fuzzing of what meets hostile input first.

- the template renderer: round trips, and the same text as str.format on plain templates;
- the config mapping: shared / mapped / wrong-arity blocks, outputs shared by several files;
- the planner, end to end through the stages: unit choice (boundaries, overflow), shard rolling,
  sample ids across files and chunks, against an independent model (a word-level tokenizer, so a
  sample's token count is its number of words), and `verify --source --all` on every output;
- the JSONL reader and renderer under random bytes and random JSON, cut into random chunks: the only
  outcomes are a sample or SourceParseError / SampleSchemaError naming the file and the physical line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile

import numpy as np
import pytest
from conftest import basic_config, examples, read_json, read_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stages import drive

from mintdim import errors as E
from mintdim.config import resolve
from mintdim.reading.verify import verify
from mintdim.sources import jsonl
from mintdim.sources.template import TemplateSyntaxError, parse

# examples: the README's run, and the long form (MINTDIM_TEST_LONG=1)
FAST = settings(max_examples=examples(100, 200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUILDS = settings(max_examples=examples(30, 120), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------
# templates
# ---------------------------------------------------------------------------------------------

NAME = st.text(
    st.characters(blacklist_characters=":!.[]{}", blacklist_categories=("Cs",)), min_size=1, max_size=6
)
LITERAL = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)


def escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


@FAST
@given(st.lists(st.tuples(LITERAL, NAME), max_size=5), LITERAL, st.data())
def test_template_round_trip_and_verbatim_render(pieces, last, data):
    text = "".join(escape(lit) + "{" + name + "}" for lit, name in pieces) + escape(last)
    tpl = parse(text)
    assert tpl.names == tuple(name for _lit, name in pieces)
    assert tpl.literals == tuple(lit for lit, _name in pieces) + (last,)
    assert tpl.static_parts == [p for p in tpl.literals if p]
    values = {
        name: data.draw(st.text(max_size=6) | st.sampled_from(["{x}", "{{", "}", "{a!r}"]))
        for _lit, name in pieces
    }
    assert tpl.render(values) == "".join(lit + values[name] for lit, name in pieces) + last


@FAST
@given(st.text(st.sampled_from("{}ab:!.[] \n"), max_size=14))
def test_template_parse_accepts_or_raises_only_its_syntax_error(text):
    try:
        tpl = parse(text)
    except TemplateSyntaxError as err:
        assert err.placeholder and err.placeholder in text
        return
    rebuilt = "".join(escape(lit) + "{" + name + "}" for lit, name in zip(tpl.literals, tpl.names))
    assert rebuilt + escape(tpl.literals[-1]) == text  # what was accepted reads back exactly


@FAST
@given(
    st.lists(st.tuples(LITERAL, st.from_regex(r"[a-z_][a-z0-9_]{0,4}", fullmatch=True)), max_size=4),
    LITERAL,
    st.lists(st.text(max_size=5), min_size=4, max_size=4),
)
def test_template_renders_like_str_format_on_plain_templates(pieces, last, vals):
    text = "".join(escape(lit) + "{" + name + "}" for lit, name in pieces) + escape(last)
    values = {name: vals[i % 4] for i, (_lit, name) in enumerate(pieces)}
    assert parse(text).render(values) == text.format(**values)


# ---------------------------------------------------------------------------------------------
# config mapping
# ---------------------------------------------------------------------------------------------

BLOCKS = ["fields", "templates", "tokenizer", "sizes", "build_batch", "dir", "samples_per_shard"]
ARITY_ERROR = {
    "fields": E.FieldMappingError,
    "templates": E.TemplateMappingError,
    "tokenizer": E.TokenizerMappingError,
    "sizes": E.UnitMappingError,
    "build_batch": E.UnitMappingError,
    "dir": E.OutputMappingError,
    "samples_per_shard": E.SamplesPerShardError,
}


@FAST
@given(st.data())
def test_config_mapping_shared_mapped_and_wrong_arity(data):
    n = data.draw(st.integers(1, 4), label="files")
    per_file = {
        "fields": [
            data.draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True)) for _ in range(n)
        ],
        "tokenizer": [{"path": data.draw(st.sampled_from(["t1.model", "t2.model"]))} for _ in range(n)],
        "sizes": [data.draw(st.sampled_from([[8, 16], [16, 32, 64], [128]])) for _ in range(n)],
        "build_batch": [data.draw(st.integers(1, 5)) for _ in range(n)],
        "dir": [data.draw(st.sampled_from(["out_a", "out_b"])) for _ in range(n)],
        "samples_per_shard": [data.draw(st.sampled_from([1, 10, 100])) for _ in range(n)],
    }
    forms = {b: data.draw(st.sampled_from(["shared", "mapped", "wrong"]), label=b) for b in BLOCKS}
    declared, effective = {}, {}
    for b in BLOCKS:
        values = per_file.get(b)
        if b == "templates":  # consistent with the fields of each file (or of the shared entry)
            values = ["<" + "|".join("{" + f + "}" for f in fs) + ">" for fs in effective["fields"]]
        if forms[b] == "shared":
            declared[b], effective[b] = [values[0]], [values[0]] * n
        elif forms[b] == "mapped":
            declared[b], effective[b] = list(values), list(values)
        else:
            k = data.draw(st.sampled_from([k for k in range(2, n + 3) if k != n]), label=f"{b} arity")
            declared[b], effective[b] = [values[i % n] for i in range(k)], list(values)
    cfg = {
        "source": {
            "files": [f"in{i}.jsonl" for i in range(n)],
            "fields": declared["fields"],
            "templates": declared["templates"],
        },
        "tokenizer": {
            "sentencepiece": declared["tokenizer"]
            if data.draw(st.booleans()) or len(declared["tokenizer"]) > 1
            else declared["tokenizer"][0]
        },
        "units": {"sizes": declared["sizes"], "build_batch": declared["build_batch"]},
        "output": {
            "dir": declared["dir"]
            if len(declared["dir"]) > 1 or data.draw(st.booleans())
            else declared["dir"][0],
            "samples_per_shard": declared["samples_per_shard"],
        },
    }
    wrong = [b for b in BLOCKS if forms[b] == "wrong"]
    if wrong:
        with pytest.raises(ARITY_ERROR[wrong[0]]):  # blocks are checked in a fixed order
            resolve(cfg)
        return
    # outputs in order of first appearance; files sharing one must share tokenizer, sizes, samples_per_shard
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(effective["dir"]):
        groups.setdefault(d, []).append(i)
    for members in groups.values():
        for key, cls in (
            ("tokenizer", E.TokenizerMappingError),
            ("sizes", E.UnitMappingError),
            ("samples_per_shard", E.SamplesPerShardError),
        ):
            if len({json.dumps(effective[key][i]) for i in members}) > 1:
                with pytest.raises(cls):
                    resolve(cfg)
                return
    for i in range(n):  # last: each file's template against its own fields
        if set(re.findall(r"{(\w)}", effective["templates"][i])) != set(effective["fields"][i]):
            with pytest.raises(E.TemplateFieldMismatchError):
                resolve(cfg)
            return
    b = resolve(cfg)
    for i, f in enumerate(b.files):
        assert f.source.fields == effective["fields"][i] and f.source.template == effective["templates"][i]
        assert f.tokenizer.path == effective["tokenizer"][i]["path"]
        assert f.units.sizes == effective["sizes"][i] and f.units.build_batch == effective["build_batch"][i]
        assert f.samples_per_shard == effective["samples_per_shard"][i]
        assert b.outputs[f.output].dir == effective["dir"][i]
    assert [o.dir for o in b.outputs] == list(groups)
    assert [o.files for o in b.outputs] == list(groups.values())


# ---------------------------------------------------------------------------------------------
# the planner, through the stages
# ---------------------------------------------------------------------------------------------

WORDS = 200


@pytest.fixture(scope="module")
def word_tokenizer(tmp_path_factory) -> str:
    """WordLevel: "w<i>" -> i + 2, anything else -> [UNK] 0, [PAD] 1; token_count == number of words."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[PAD]": 1}
    vocab.update({f"w{i}": i + 2 for i in range(WORDS)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.enable_padding(pad_id=1, pad_token="[PAD]")
    path = str(tmp_path_factory.mktemp("tok") / "words.json")
    tok.save(path)
    return path


WORD = st.one_of(st.integers(0, WORDS - 1).map(lambda i: f"w{i}"), st.sampled_from(["zz", "x1"]))
LINE = st.one_of(
    st.lists(WORD, max_size=14).map(lambda ws: ("row", ws)),
    st.sampled_from(["", "  ", "\t", "\r"]).map(lambda b: ("blank", b)),
)


def _ids(words: list[str]) -> list[int]:
    return [int(w[1:]) + 2 if re.fullmatch(r"w\d+", w) and int(w[1:]) < WORDS else 0 for w in words]


@BUILDS
@given(
    files=st.lists(st.lists(LINE, max_size=18), min_size=1, max_size=2),
    sizes=st.lists(st.integers(1, 16), min_size=1, max_size=4, unique=True).map(sorted),
    sps=st.integers(1, 6),
    chunk=st.sampled_from([None, 0.00005, 0.0003]),
    shared=st.booleans(),
    trailing=st.booleans(),
    allow_empty=st.booleans(),
)
def test_planner_units_shards_and_sample_ids_match_an_independent_model(
    word_tokenizer, files, sizes, sps, chunk, shared, trailing, allow_empty
):
    with tempfile.TemporaryDirectory() as root:
        old = os.getcwd()
        os.chdir(root)
        try:
            _plan_case(word_tokenizer, files, sizes, sps, chunk, shared, trailing, allow_empty)
        finally:
            os.chdir(old)


def _plan_case(tok_path, files, sizes, sps, chunk, shared, trailing, allow_empty):
    names = [f"d{i}.jsonl" for i in range(len(files))]
    expect: dict[str, list[dict]] = {}  # per output dir, in sample_id order
    for name, lines, i in zip(names, files, range(len(files))):
        body = [
            json.dumps({"t": " ".join(ws), "n": k}) if kind == "row" else ws
            for k, (kind, ws) in enumerate(lines)
        ]
        with open(name, "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(body) + ("\n" if trailing and body else ""))
        out = "out" if shared else f"out{i}"
        for k, (kind, ws) in enumerate(lines):
            if kind == "row":
                expect.setdefault(out, []).append({"file": name, "line": k + 1, "words": ws})
        expect.setdefault(out, [])
    cfg = basic_config(
        names,
        fields=[["t"]],
        templates=["{t}"],
        tokenizer={"hf_json": {"path": tok_path}},
        sizes=[sizes],
        sps=[sps],
        out="out" if shared else [f"out{i}" for i in range(len(files))],
        **({"chunk_mb": chunk} if chunk else {}),
    )
    empty = [name for name, lines in zip(names, files) if not any(kind == "row" for kind, _ws in lines)]
    if allow_empty:
        cfg["source"]["allow_empty"] = True
    elif empty:  # a file without a sample: pre-flight names the first one
        with pytest.raises(E.SourceParseError) as info:
            drive(cfg)
        assert info.value.file == empty[0] and "holds no samples" in str(info.value)
        return
    too_long = [s for out in expect.values() for s in out if len(s["words"]) > sizes[-1]]
    if too_long:
        with pytest.raises(E.UnitOverflowError) as info:
            drive(cfg)
        first = min(too_long, key=lambda s: (names.index(s["file"]), s["line"]))
        assert (info.value.file, info.value.line) == (first["file"], first["line"])
        assert f"token_count: {len(first['words'])}" in str(info.value)
        return
    drive(cfg)
    for out, samples in expect.items():
        index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
        assert [r["sample_id"] for r in index] == list(range(len(samples)))
        seen = {s: 0 for s in sizes}
        for rec, s in zip(index, samples):
            tc = len(s["words"])
            unit = min(u for u in sizes if u >= tc)
            k = seen[unit]
            seen[unit] += 1
            assert (rec["source_file"], rec["source_line"]) == (s["file"], s["line"])
            assert (rec["token_count"], rec["unit_size"]) == (tc, unit)
            assert (rec["shard_path"], rec["shard_row"]) == (f"unit_{unit}/shard_{k // sps:06d}.bin", k % sps)
            assert rec["hash"] == hashlib.sha256(" ".join(s["words"]).encode()).hexdigest()
            row = np.fromfile(os.path.join(out, rec["shard_path"]), dtype="<u2").reshape(-1, unit)[k % sps]
            assert row.tolist() == _ids(s["words"]) + [1] * (unit - tc)
        assert read_json(os.path.join(out, "histogram.json")) == {str(u): seen[u] for u in sizes}
        mine = [n for i, n in enumerate(names) if (out == "out" if shared else out == f"out{i}")]
        assert read_json(os.path.join(out, "stats.json")).get("empty_files", []) == [
            n for n in mine if n in empty
        ]
        for u in sizes:
            shards = sorted(f for f in os.listdir(os.path.join(out, f"unit_{u}")) if f.endswith(".bin"))
            assert shards == [f"shard_{j:06d}.bin" for j in range(-(-seen[u] // sps))]
        report = verify(out, source=True, all=True)
        assert report.ok, [str(p) for p in report.problems]


# ---------------------------------------------------------------------------------------------
# fuzzing the JSONL reader and the renderer
# ---------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=8,
)
FIELD = st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "\udfff", "a\x00b", "\ufeff", "{a}"]), JSON)


def _dump(obj, ascii_: bool) -> bytes:
    return json.dumps(obj, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")


def _mutate(line: bytes, data) -> bytes:
    if not line:
        return line
    at = data.draw(st.integers(0, len(line) - 1))
    return line[:at] + data.draw(st.binary(min_size=1, max_size=2)) + line[at + 1 :]


@st.composite
def hostile_line(draw):
    kind = draw(st.sampled_from(["bytes", "json", "object", "object", "mutated", "nested", "dupkeys"]))
    if kind == "bytes":
        return draw(st.binary(max_size=40))
    if kind == "json":
        return _dump(draw(JSON), draw(st.booleans()))
    obj = draw(st.fixed_dictionaries({}, optional={"a": FIELD, "b": FIELD, "c": JSON}))
    line = _dump(obj, draw(st.booleans()))
    if kind == "mutated":
        return _mutate(line, draw(st.data()))
    if kind == "nested":
        depth = draw(st.integers(1, 3000))
        return b'{"a": "x", "b": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "dupkeys":
        return b'{"a": 1, "b": "y", "a": ' + _dump(draw(FIELD), True) + b"}"
    return line


def _oracle(raw: bytes, display: str, line: int, tpl) -> tuple:
    """The expected outcome of one non-blank physical line, from the standard library alone."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ("SourceParseError", line)

    def no_constants(name):
        raise ValueError(name)

    try:
        obj = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return ("SourceParseError", line)
    if not isinstance(obj, dict):
        return ("SourceParseError", line)
    if any(k not in obj for k in ("a", "b")) or any(type(obj[k]) is not str for k in ("a", "b")):
        return ("SampleSchemaError", line)
    rendered = tpl.render(obj)
    try:
        rendered.encode("utf-8")
    except UnicodeEncodeError:
        return ("SourceParseError", line)
    return ("sample", rendered)


def _outcome(raw: bytes, display: str, line: int, tpl) -> tuple:
    """What the stage does with one line (tokenize_chunk's per-line steps)."""
    try:
        obj = jsonl.declared_values(jsonl.parse_object(raw, display, line), ["a", "b"], display, line)
        text = tpl.render(obj)
        text.encode("utf-8")
    except (E.SourceParseError, E.SampleSchemaError) as err:
        assert err.file == display and f"File: {display}" in str(err), str(err)
        assert f"Line: {line}" in str(err) or f"{display}:{line}" in str(err), str(err)
        return (type(err).__name__, err.line)
    except UnicodeEncodeError:
        return ("SourceParseError", line)
    return ("sample", text)


@FAST
@given(
    lines=st.lists(hostile_line(), max_size=12),
    bom=st.booleans(),
    trailing=st.booleans(),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    cuts=st.lists(st.integers(0, 10**6), max_size=4),
)
def test_fuzz_reader_and_renderer_give_a_sample_or_a_spec_error_with_file_and_line(
    lines, bom, trailing, newline, cuts
):
    data = (b"\xef\xbb\xbf" if bom else b"") + newline.join(lines) + (newline if trailing else b"")
    display = "./data/fuzz.jsonl"
    tpl = parse("{a}|{b}")
    physical = data.split(b"\n")
    if physical and physical[-1] == b"":
        physical.pop()
    expected = {}
    for n, raw in enumerate(physical, 1):
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if raw.strip(b" \t\r\n"):
            expected[n] = _oracle(raw, display, n, tpl)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "fuzz.jsonl")
        with open(path, "wb") as f:
            f.write(data)
        bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
        got = {}
        for start, end in zip(bounds, bounds[1:]):  # random chunks: each line exactly once
            reader = jsonl.ChunkReader(path, start, end, display)
            for local, raw in reader:
                n = reader.first_line() + local
                assert n not in got, f"line {n} read twice"
                got[n] = _outcome(raw, display, n, tpl)
    assert got == expected


@BUILDS
@given(lines=st.lists(hostile_line(), min_size=1, max_size=10), compress=st.sampled_from([None, "gz"]))
def test_fuzz_tokenize_stage_never_raises_anything_else(word_tokenizer, lines, compress):
    """The real tokenize and plan stages on hostile files: they finish, or the plan stops at the first bad
    line with a spec error naming the file and that line (never a traceback of another kind)."""
    from mintdim.formats.layout import Layout
    from mintdim.stages.plan import plan_output
    from mintdim.stages.preflight import preflight
    from mintdim.stages.tokenize import tokenize_chunk

    tpl = parse("{a} {b}")  # a space: the word tokenizer's vocabulary covers the template's literal
    data = b"\n".join(lines) + b"\n"
    name = "fuzz.jsonl" + (".gz" if compress else "")
    first_bad = None
    for n, raw in enumerate(data.split(b"\n")[:-1], 1):
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a BOM at the very start is skipped
            raw = raw[3:]
        if raw.strip(b" \t\r\n"):
            o = _oracle(raw, name, n, tpl)
            if o[0] != "sample":
                first_bad = o
                break
    with tempfile.TemporaryDirectory() as d:
        old = os.getcwd()
        os.chdir(d)
        try:
            with open(name, "wb") as f:
                if compress:
                    import gzip

                    f.write(gzip.compress(data))
                else:
                    f.write(data)
            cfg = basic_config(
                [name],
                fields=[["a", "b"]],
                templates=["{a} {b}"],
                tokenizer={"hf_json": {"path": word_tokenizer}},
                sizes=[[100000]],
            )
            if not any(raw.strip(b" \t\r\n") for raw in data.removeprefix(b"\xef\xbb\xbf").split(b"\n")):
                with pytest.raises(E.SourceParseError) as info:  # no line with data: no sample
                    preflight(cfg)
                assert info.value.file == name and "holds no samples" in str(info.value)
                return
            b, metas = preflight(cfg)
            lay = Layout(b.work_dir, b.build_id)
            try:  # the job lists its chunk's bad records; the plan, which sees the whole file, raises
                tokenize_chunk(
                    b, metas, 0, 0, lay.tok_dir(0, 0), bounds=(0, os.path.getsize(name)), log=lambda m: None
                )
                os.makedirs(os.path.dirname(lay.plan(0)), exist_ok=True)
                plan_output(b, 0, [lay.tok_dir(0, 0)], lay.plan(0), lay.plan_units(0), log=lambda m: None)
            except (E.SourceParseError, E.SampleSchemaError) as err:
                assert first_bad is not None, str(err)
                assert (type(err).__name__, err.line, err.file) == (first_bad[0], first_bad[1], name), str(
                    err
                )
                return
            assert first_bad is None
        finally:
            os.chdir(old)
