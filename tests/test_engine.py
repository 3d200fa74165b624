"""The fast byte-level BPE engine (mintdim/tokenizers/engines.py): tiktoken gives the library's own ids,
or is not used.

CI: byte-level BPE tokenizers trained here on the shipped GSM8K file (a Llama-3 Split pattern with
NFC, and GPT-2's ByteLevel regex), compared with `tokenizers` on GSM8K, adversarial strings and
every Unicode code point in several contexts (the regex dialects: Oniguruma in `tokenizers`,
fancy-regex in tiktoken); files the engine must refuse; a build with and without the engine.
With ../assets beside the repository (MINTDIM_ASSETS; benchmarks/fetch_data.sh fetches them):
Llama-3.2, Llama-3.1 and Qwen3 on adversarial strings, the multilingual gettext catalogues under
/usr/share/locale and, with MINTDIM_SLOW=1, the full ShareGPT pairs.
"""

from __future__ import annotations

import glob
import json
import os
import unicodedata

import pytest
from conftest import DATA, GSM8K, HF_JSON, basic_config, build_in, read_json, write_jsonl

tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("tiktoken")

from conftest import ASSETS, SHAREGPT_CHAT  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, normalizers, pre_tokenizers, trainers  # noqa: E402
from tokenizers import models as hf_models  # noqa: E402

from mintdim.tokenizers import engines  # noqa: E402
from mintdim.tokenizers.kinds import load  # noqa: E402

SLOW = os.environ.get("MINTDIM_SLOW") == "1"
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>", "<|eot_id|>"]


def gsm8k_texts() -> list[str]:
    with open(GSM8K, encoding="utf-8") as f:
        return [(lambda o: o["question"] + "\n" + o["answer"])(json.loads(line)) for line in f]


def adversarial() -> list[str]:
    """Unicode edge cases, long runs, special-token strings inside text and next to it."""
    texts = [
        "",
        " ",
        "  ",
        "\n",
        "\r\n",
        "\r\n\r\n  \r\n",
        "\t\t x",
        "a\u00a0b\u2003c\u3000d\u2028e\u2029f\u0085g",
        "e\u0301 cafe\u0301 caf\u00e9 \u212b \u212a elvin \u1100\u1161\u11a8 "
        "\ud55c\uae00",  # NFC changes these
        "<|im_start|>\u0338 >\u0338 <\u0338",  # NFC composes '>' + U+0338 into U+226F
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f3f3\ufe0f\u200d\U0001f308 "
        "\u0915\u094d\u200d\u0937",
        "漢字とかなカナ、한국어, 中文標點。「引用」 ｆｕｌｌｗｉｄｔｈ １２３",
        "עברית שלום, العربية مرحبا \u200f\u202e reversed \u202c",
        "Ελληνικά, русский язык, ქართული, हिन्दी, தமிழ், ไทย ภาษา",
        "I'M HE'S they'RE we'VE you'LL she'D it'S 'ſ 'K 'İ ’s ʼs",
        " " * 5000,
        " " * 4999 + "x",
        "\n" * 3000,
        "\t \n" * 1000,
        "x" + " " * 3000 + "\ny",
        "1" * 5000,
        "12 345 6789 ٣٤٥ ۱۲۳ १२३ ①②③ ¼½ Ⅻ 𝟙𝟚𝟛",
        "a1b22c333d4444",
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "x<|im_start|>y",
        "<|im_start|><|im_start|>",
        "<|im_sta",
        "<|im_start",
        "<|im_start|",
        "|im_start|>",
        "<<|im_start|>>",
        "<|eot_id|><|eot_id|>x",
        " <|eot_id|> ",
        "<pad><unk>",
        "text<pad>text",
        "<tool_call>{}</tool_call>",
        "<tool_call",
        "!!!???...,,,;;; --- ___ ***",
        "\\\\\\ ``` code ```\n\tdef f(x):\n\t\treturn x",
        "\x00\x01\x1b[31m\x7f",
        "\ufeffBOM \ufffe\uffff",
        "\U000e0001\U000e0020 tags",
        "\U0010ffff\U000f0000",
    ]
    return texts


def code_point_texts(step: int = 1) -> list[str]:
    """Code points (not surrogates), each next to letters, digits, spaces, an apostrophe and newlines:
    every one of the BMP and, above it, every `step`-th (MINTDIM_SLOW=1: every one, ~30 s CPU a file)."""
    texts, chunk = [], []
    for cp in range(0, 0x110000):
        if 0xD800 <= cp < 0xE000 or (cp > 0xFFFF and cp % step):
            continue
        c = chr(cp)
        chunk.append(f"a{c} {c}{c}'{c}1{c} {c}\n{c}")
        if len(chunk) == 256:
            texts.append("".join(chunk))
            chunk = []
    texts.append("".join(chunk))
    return texts


def train(path: str, pattern: str | None, nfc: bool, vocab: int = 1500) -> str:
    """A byte-level BPE tokenizer.json trained on GSM8K, with UNK and PAD as MintDim's hf_json kind needs."""
    tok = Tokenizer(hf_models.BPE(unk_token="<unk>"))
    if nfc:
        tok.normalizer = normalizers.NFC()
    if pattern:  # one Split, or several in sequence (DeepSeek's three)
        splits = [
            pre_tokenizers.Split(Regex(p), behavior="isolated")
            for p in ([pattern] if isinstance(pattern, str) else pattern)
        ]
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            splits + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=SPECIALS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(gsm8k_texts(), trainer)
    tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False)])
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    tok.save(path)
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bl")
    return {
        "llama3-nfc": train(str(d / "llama3-nfc.json"), LLAMA3_PATTERN, nfc=True),
        "gpt2": train(str(d / "gpt2.json"), None, nfc=False),
        "deepseek-splits": train(str(d / "deepseek.json"), list(engines.DEEPSEEK_SPLITS), nfc=False),
    }


def library(path: str) -> Tokenizer:
    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    return tok


def assert_same_ids(path: str, texts: list[str], threads: int = 1, batch: int = 2048) -> int:
    lib = library(path)
    fast, reason = engines.fast_encoder_for(path, lib, threads=threads)
    assert fast is not None, reason
    tokens = 0
    for i in range(0, len(texts), batch):
        part = texts[i : i + batch]
        want = [e.ids for e in lib.encode_batch_fast(part, add_special_tokens=False)]
        got = fast.encode_ids(part)
        for k, (a, b) in enumerate(zip(want, got)):
            assert a == b, f"text {i + k}: {part[k][:80]!r}"
        assert len(got) == len(part)
        tokens += sum(map(len, want))
    return tokens


@pytest.mark.parametrize("name", ["llama3-nfc", "gpt2", "deepseek-splits"])
def test_small_byte_level_files_are_eligible_and_encode_identically(small, name):
    assert assert_same_ids(small[name], gsm8k_texts() + adversarial()) > 100_000


@pytest.mark.parametrize("name", ["llama3-nfc", "gpt2", "deepseek-splits"])
def test_every_code_point_in_context(small, name):
    """The Split regexes' classes (\\p{L}, \\p{N}, \\s, case folding) agree between the two regex engines."""
    assert_same_ids(small[name], code_point_texts(step=1 if SLOW else 17))


def test_threads_do_not_change_ids(small):
    texts = gsm8k_texts()[:400] + adversarial()
    lib = library(small["llama3-nfc"])
    one, _ = engines.fast_encoder_for(small["llama3-nfc"], lib, threads=1)
    two, _ = engines.fast_encoder_for(small["llama3-nfc"], lib, threads=2)
    assert one.encode_ids(texts) == two.encode_ids(texts) == [e.ids for e in lib.encode_batch_fast(texts)]


def test_special_token_strings_are_matched_in_text_like_the_library(small):
    lib = library(small["llama3-nfc"])
    fast, _ = engines.fast_encoder_for(small["llama3-nfc"], lib)
    ids = fast.encode_ids(["x<|im_start|>y<tool_call><|im_sta"])[0]
    assert lib.token_to_id("<|im_start|>") in ids and lib.token_to_id("<tool_call>") in ids
    assert ids == lib.encode("x<|im_start|>y<tool_call><|im_sta", add_special_tokens=False).ids


def test_nfc_changed_texts_go_to_the_library_and_match(small):
    path = small["llama3-nfc"]
    calls = []
    lib = library(path)

    def counted():
        calls.append(1)
        return lib

    fast, _ = engines.fast_encoder_for(path, counted)
    texts = ["plain ascii", "caf\u00e9 already NFC", "cafe\u0301 not NFC", "<|im_start|>\u0338"]
    assert fast.encode_ids(texts) == [e.ids for e in lib.encode_batch_fast(texts, add_special_tokens=False)]
    assert calls  # only the texts NFC changes needed the library


def _edited(src: str, dst, edit) -> str:
    with open(src, encoding="utf-8") as f:
        spec = json.load(f)
    edit(spec)
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    return str(dst)


def _first_merge_last(spec):
    merges = spec["model"]["merges"]
    merges.append(merges.pop(0))


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda s: s["model"].update(byte_fallback=True), "byte_fallback"),
        (lambda s: s.update(normalizer={"type": "NFKC"}), "normalizer NFKC"),
        (lambda s: s.update(normalizer={"type": "Lowercase"}), "normalizer Lowercase"),
        (lambda s: s["added_tokens"][2].update(lstrip=True), "lstrip"),
        (lambda s: s["added_tokens"][3].update(normalized=True), "normalized"),
        (
            lambda s: s["added_tokens"].append(dict(s["added_tokens"][2], id=1500, content="<|im_start|>x")),
            "prefix",
        ),
        (lambda s: s["pre_tokenizer"]["pretokenizers"][0].update(behavior="Removed"), "isolated"),
        (lambda s: s["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True), "add_prefix_space"),
        (
            lambda s: s["pre_tokenizer"]["pretokenizers"].insert(0, s["pre_tokenizer"]["pretokenizers"][0]),
            "Split + ByteLevel",
        ),
        (_first_merge_last, "merges"),
        (lambda s: s["model"].update(dropout=0.1), "dropout"),
    ],
)
def test_ineligible_files_keep_the_library(small, tmp_path, edit, reason):
    path = _edited(small["llama3-nfc"], tmp_path / "edited.json", edit)
    fast, why = engines.fast_encoder_for(path, library(path))
    assert fast is None and reason in why
    tok = load("hf_json", path, engine="auto")
    assert tok.engine == "tokenizers" and reason in tok.engine_reason
    texts = gsm8k_texts()[:50] + adversarial()
    if reason != "dropout":  # random by design
        assert tok.encode_ids(texts) == [
            e.ids for e in library(path).encode_batch_fast(texts, add_special_tokens=False)
        ]


def test_three_splits_other_than_deepseeks_keep_the_library(small, tmp_path):
    """The one-pattern form is proven for DeepSeek's three regexes only."""

    def edit(spec):
        spec["pre_tokenizer"]["pretokenizers"][2]["pattern"]["Regex"] = LLAMA3_PATTERN

    path = _edited(small["deepseek-splits"], tmp_path / "other.json", edit)
    fast, why = engines.fast_encoder_for(path, library(path))
    assert fast is None and "only DeepSeek's" in why


def test_normalized_added_tokens_without_a_normalizer(small, tmp_path):
    """With no normalizer the library matches the tokens without the `normalized` flag first, then the
    flagged ones in what is left; tiktoken all at once, leftmost. Allowed when no flagged token can
    start before an overlapping plain one; the ids then agree. Refused otherwise: they differ."""

    def add(plain, flagged):
        def edit(spec):
            for k, (content, norm) in enumerate([(plain, False), (flagged, True)]):
                spec["added_tokens"].append(
                    {
                        "id": 1501 + k,
                        "content": content,
                        "single_word": False,
                        "lstrip": False,
                        "rstrip": False,
                        "normalized": norm,
                        "special": False,
                    }
                )

        return edit

    # a plain one first, then overlap: fine
    ok = _edited(small["gpt2"], tmp_path / "ok.json", add("<a>|", "|b|"))
    texts = ["<a>|b|", "x|b|<a>|b|y", "<a>|b|<a>|", "|b|<a>|", "<a>|<a>|b|b|"] + gsm8k_texts()[:50]
    lib = library(ok)
    assert [e.ids for e in lib.encode_batch_fast(["<a>|b|"], add_special_tokens=False)][0] == [
        1501,
        lib.token_to_id("b"),
        lib.token_to_id("|"),
    ]
    assert assert_same_ids(ok, texts) > 0
    # "x|b|<a>": flagged first, overlapping
    bad = _edited(small["gpt2"], tmp_path / "bad.json", add("b|<a>", "x|b"))
    fast, why = engines.fast_encoder_for(bad, library(bad))
    assert fast is None and "overlap" in why
    inside = _edited(small["gpt2"], tmp_path / "inside.json", add("<a>", "x<a>y"))
    assert "overlap" in engines.fast_encoder_for(inside, library(inside))[1]


def test_merges_out_of_id_order_would_change_ids(small, tmp_path):
    """The merges-order check is needed: with the first merge listed last, the library's ids change
    while ranks taken from the ids (tiktoken's rule) would still give the old ones."""
    path = _edited(small["llama3-nfc"], tmp_path / "moved.json", _first_merge_last)
    texts = gsm8k_texts()[:200]
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    byte = {c: b for b, c in engines.bytes_to_unicode().items()}
    ranks = {
        bytes(byte[c] for c in t): i for t, i in spec["model"]["vocab"].items() if all(c in byte for c in t)
    }
    naive = engines.TiktokenEncoder(ranks, LLAMA3_PATTERN, {t: i for i, t in enumerate(SPECIALS)}, None)
    ascii_texts = [t for t in texts if t.isascii()]
    assert naive.encode_ids(ascii_texts) != [e.ids for e in library(path).encode_batch_fast(ascii_texts)]
    assert spec["model"]["merges"][-1] == json.load(open(small["llama3-nfc"]))["model"]["merges"][0]


def test_mintdim_exported_tokenizer_is_eligible_and_identical(tmp_path):
    """`mintdim tokenizer export` of a byte-unit model trained by MintDim (ffbpe) gets the engine."""
    from mintdim.tokenizers import training
    from mintdim.tokenizers.export import export

    training.train_texts(iter(gsm8k_texts()), str(tmp_path / "byte"), vocab_size=1500, unit="byte")
    export(str(tmp_path / "byte"), str(tmp_path / "hf.json"))
    assert assert_same_ids(str(tmp_path / "hf.json"), gsm8k_texts() + adversarial()) > 100_000


def test_decided_from_the_tokenizer_object_when_given_its_serialization(small):
    """A loader that changed the tokenizer after reading the file (hf_dir via transformers) passes
    to_str() of the object it uses: an added lstrip token makes it ineligible though the file is."""
    lib = library(small["gpt2"])
    lib.add_special_tokens([AddedToken("<extra>", lstrip=True)])
    assert engines.fast_encoder_for(small["gpt2"], lib)[0] is not None
    fast, why = engines.fast_encoder_for(small["gpt2"], lib, tokenizer_json=lib.to_str())
    assert fast is None and "lstrip" in why


def test_without_a_library_given_the_engine_loads_its_own_for_nfc_changed_texts(small):
    path = small["llama3-nfc"]
    fast, _ = engines.fast_encoder_for(path, threads=2)
    texts = adversarial() * 3
    assert fast.encode_ids(texts) == [
        e.ids for e in library(path).encode_batch_fast(texts, add_special_tokens=False)
    ]


def test_wordpiece_is_not_eligible():
    fast, why = engines.fast_encoder_for(HF_JSON, library(HF_JSON))
    assert fast is None and "WordPiece" in why
    assert load("hf_json", HF_JSON, engine="auto").engine == "tokenizers"


def test_build_jobs_read_the_checked_ranks_and_encode_as_the_checked_tokenizer(small, tmp_path):
    path = small["llama3-nfc"]
    cache = str(tmp_path / "engines")
    checked = load("hf_json", path, engine="auto", engine_cache=cache)
    assert checked.engine == "tiktoken" and len(os.listdir(cache)) == 1
    job = load("hf_json", path, engine="tiktoken", engine_cache=cache)
    texts = gsm8k_texts()[:300] + adversarial()
    assert job.encode_ids(texts) == checked.encode_ids(texts)


def test_the_cache_is_by_content(small, tmp_path):
    """A changed file (same path) is checked again: the cache is keyed by the file's SHA-256."""
    cache = str(tmp_path / "engines")
    path = _edited(small["llama3-nfc"], tmp_path / "t.json", lambda s: None)
    assert load("hf_json", path, engine="auto", engine_cache=cache).engine == "tiktoken"
    _edited(small["llama3-nfc"], path, _first_merge_last)
    tok = load("hf_json", path, engine="tiktoken", engine_cache=cache)
    assert tok.engine == "tokenizers" and "merges" in tok.engine_reason


CHAT_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def _hf_dir(src: str, root) -> str:
    """A model directory (tokenizer.json + tokenizer_config.json naming PAD and UNK, a chat template)."""
    import shutil

    os.makedirs(root, exist_ok=True)
    shutil.copy(src, os.path.join(root, "tokenizer.json"))
    with open(os.path.join(root, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(
            {
                "pad_token": "<pad>",
                "unk_token": "<unk>",
                "eos_token": "<|im_end|>",
                "chat_template": CHAT_TEMPLATE,
            },
            f,
        )
    return str(root)


@pytest.mark.parametrize("kind", ["hf_dir", "hf_json", "chat"])
def test_tokenize_job_on_the_engine_does_not_load_the_library(small, tmp_path, monkeypatch, kind):
    """PAD, UNK, vocab size and dtype come from pre-flight's record (and a chat template's special
    tokens from the file): a job on the engine loads the library only for a text that needs it
    (none here: a file without a normalizer)."""
    from mintdim.formats import intermediate as inter
    from mintdim.stages.preflight import preflight
    from mintdim.stages.tokenize import tokenize_chunk

    path = small["gpt2"] if kind == "hf_json" else _hf_dir(small["gpt2"], tmp_path / "tok")
    monkeypatch.chdir(tmp_path)
    rows = [json.loads(line) for line in open(GSM8K, encoding="utf-8")]
    texts = [o["question"] + "\n\n" + o["answer"] for o in rows]
    cfg = basic_config(
        [GSM8K],
        fields=[["question", "answer"]],
        templates=["{question}\n\n{answer}"],
        tokenizer={"hf_json" if kind == "hf_json" else "hf_dir": {"path": path}},
        sizes=[[256, 8192]],
    )
    if kind == "chat":
        turns = [
            [{"role": "user", "content": o["question"]}, {"role": "assistant", "content": o["answer"]}]
            for o in rows
        ]
        cfg["source"] = {
            "files": [write_jsonl(tmp_path / "chats.jsonl", [{"messages": t} for t in turns])],
            "chat": {},
        }
        texts = ["".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in t) for t in turns]
    build, metas = preflight(cfg)
    meta = metas[build.files[0].tokenizer.abspath]
    lib = library(small["gpt2"])
    assert (meta.engine, meta.pad_id, meta.unk_id) == (
        "tiktoken",
        lib.token_to_id("<pad>"),
        lib.token_to_id("<unk>"),
    )

    def refused(*a, **k):
        raise AssertionError("the tokenize job loaded the tokenizers library")

    monkeypatch.setattr(
        tokenizers, "Tokenizer", type("Refused", (), {"from_file": refused, "from_str": refused})
    )
    log = []
    tokenize_chunk(build, metas, 0, 0, str(tmp_path / "chunk"), log=log.append)
    assert log[-1].endswith("(engine: tiktoken)")
    monkeypatch.undo()
    want = [len(e.ids) for e in lib.encode_batch_fast(texts, add_special_tokens=False)]
    assert inter.unarr(inter.read(inter.meta_path(str(tmp_path / "chunk")))["lengths"]).tolist() == want


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for p in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if os.path.isfile(p):
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def _tree_but_manifest(root: str) -> dict[str, bytes]:
    """The output's files but manifest.json (it names the engine), checksums.sha256 without its line."""
    tree = _tree(root)
    del tree["manifest.json"]
    sums = tree.pop("checksums.sha256").splitlines(keepends=True)
    tree["checksums.sha256"] = b"".join(x for x in sums if not x.endswith(b"  manifest.json\n"))
    assert len(sums) == len(tree)  # every file listed, the manifest's line taken out
    return tree


def test_build_with_engine_equals_library_build(small, tmp_path, monkeypatch):
    """Shards and indexes byte-identical with and without the engine; the manifest says which was used."""
    rows = [json.loads(line) for line in open(GSM8K, encoding="utf-8")]
    rows += [{"question": t, "answer": "<|im_start|>" + t[:20]} for t in adversarial() if t.strip()]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    trees, manifests = {}, {}
    for mode in ("auto", "tokenizers"):
        monkeypatch.setenv("MINTDIM_ENGINE", mode)
        cfg = basic_config(
            [data],
            fields=[["question", "answer"]],
            templates=["{question}\n\n{answer}"],
            tokenizer={"hf_json": {"path": small["llama3-nfc"]}},
            sizes=[[64, 128, 256, 8192]],
            out=f"out-{mode}",
            work_dir=f"work-{mode}",
        )
        build_in(tmp_path, cfg)
        out = str(tmp_path / f"out-{mode}")
        manifests[mode] = read_json(os.path.join(out, "manifest.json"))
        trees[mode] = _tree_but_manifest(out)
    assert trees["auto"] == trees["tokenizers"] and len(trees["auto"]) > 5
    assert manifests["auto"]["tokenizer"].pop("engine") == "tiktoken"
    assert "engine" not in manifests["tokenizers"]["tokenizer"]
    for m in manifests.values():
        m["source"] = m["output"] = None
    assert manifests["auto"] == manifests["tokenizers"]


def test_a_fresh_work_dir_does_not_check_the_file_again(small, tmp_path, monkeypatch):
    """The merges-vs-ranks check and its tables are cached by content (MINTDIM_CACHE_DIR): a build in a
    new work dir neither runs the check in pre-flight nor in a tokenize job (those would leave the tables
    in <work_dir>/engines), and gives the same bytes; corrupt tables are checked again, not used."""
    import shutil

    path = str(shutil.copy(small["llama3-nfc"], tmp_path / "tok.json"))
    cache = os.environ["MINTDIM_CACHE_DIR"]

    def cfg(tag):
        return basic_config(
            [GSM8K],
            fields=[["question", "answer"]],
            templates=["{question}\n\n{answer}"],
            tokenizer={"hf_json": {"path": path}},
            sizes=[[64, 128, 256, 8192]],
            out=f"out-{tag}",
            work_dir=f"work-{tag}",
        )

    def output(tag):
        tree = _tree(str(tmp_path / f"out-{tag}"))
        manifest = json.loads(tree.pop("manifest.json"))
        assert manifest["tokenizer"]["engine"] == "tiktoken"
        return tree

    build_in(tmp_path, cfg("a"))
    assert (
        len(os.listdir(tmp_path / "work-a" / "engines"))
        == len(os.listdir(os.path.join(cache, "engines")))
        == 1
    )

    def refused(*a, **k):
        raise AssertionError("the merges-vs-ranks check ran again")

    with monkeypatch.context() as m:
        m.setattr(engines, "buildable_ranks", refused)
        build_in(tmp_path, cfg("b"))
    assert not os.path.exists(tmp_path / "work-b" / "engines")  # no job checked the file either
    assert output("a") == output("b")
    for d in ("engines", "tokenizer-facts"):
        for name in os.listdir(os.path.join(cache, d)):
            with open(os.path.join(cache, d, name), "r+b") as f:
                f.seek(100)
                f.write(b"\xff\xfe")
    build_in(tmp_path, cfg("c"))
    assert len(os.listdir(tmp_path / "work-c" / "engines")) == 1  # checked again, tables rewritten
    assert output("a") == output("c")


# ---- offsets (loss masks) from the engine's ids ----

HARD = [
    "héllo wörld",
    "e\u0301 cafe\u0301 caf\u00e9",
    "😀😀 👨\u200d👩\u200d👧 🏳\ufe0f\u200d🌈 x",
    "早上好，世界。漢字とかなカナ、한국어",
    "Chào buổi sáng, tiếng Việt có dấu",
    " 😀",
    "\U0010ffff\U000f0000 z",
    "<|im_start|>assistant\n答え😀<|im_end|>\n",
    "x<|im_start|>ü<tool_call>é",
    "a\u00a0b\u2003c\u3000d\u0085e",
]


def library_offsets(path: str, texts: list[str]):
    encs = library(path).encode_batch(texts, add_special_tokens=False)
    return [e.ids for e in encs], [list(e.offsets) for e in encs]


def assert_same_offsets(tok, path: str, texts: list[str], batch: int = 512) -> int:
    """encode_batch_with_offsets of a tokenizer on the engine: the library's ids, (start, end) per token."""
    tokens = 0
    for i in range(0, len(texts), batch):
        part = texts[i : i + batch]
        flat, lengths, starts, ends = tok.encode_batch_with_offsets(part)
        ids, offsets = library_offsets(path, part)
        assert flat.tolist() == [x for one in ids for x in one] and lengths.tolist() == list(map(len, ids))
        pairs = [p for one in offsets for p in one]
        for k, (got, want) in enumerate(zip(zip(starts.tolist(), ends.tolist()), pairs)):
            assert got == tuple(want), (k, part, got, want)
        tokens += len(flat)
    return tokens


@pytest.mark.parametrize("name", ["llama3-nfc", "gpt2", "deepseek-splits"])
@pytest.mark.parametrize("threads", [1, 2])
def test_engine_offsets_equal_the_library(small, name, threads):
    """Each token's character span from the engine's ids equals the library's offsets: multi-byte characters
    split across tokens, added tokens in text, texts the NFC normalizer changes (the library's own)."""
    tok = load("hf_json", small[name], engine="auto", threads=threads)
    assert tok.offsets_engine == "tiktoken"
    texts = gsm8k_texts()[:300] + adversarial() + HARD + code_point_texts(step=17)
    assert assert_same_offsets(tok, small[name], texts) > 100_000
    _flat, _lengths, starts = tok.encode_batch_with_starts(HARD)
    assert starts.tolist() == [o[0] for one in library_offsets(small[name], HARD)[1] for o in one]


@pytest.mark.parametrize("name", ["llama3-nfc", "gpt2", "deepseek-splits"])
def test_masks_from_token_bytes_equal_masks_from_the_library_offsets(small, name):
    """The byte path of conversation masks (each token's first byte, each span's ends in bytes) trains the
    tokens the library's character offsets train, for random spans over texts with characters split
    across tokens, added tokens and texts the NFC normalizer changes (encoded by the library); spans that
    share tokens count them for the first, as the character path does."""
    import random

    import numpy as np

    from mintdim.stages.tokenize import chat_trained, chat_trained_bytes

    tok = load("hf_json", small[name], engine="auto")
    texts = adversarial() + HARD + code_point_texts(step=17)[:200] + ["", "a"]
    rng = random.Random(5)
    spans = []
    for t in texts:
        cuts = sorted(rng.randrange(len(t) + 1) for _ in range(2 * rng.randrange(4)))
        mine = [(a, b, 0, rng.choice(["assistant", "tool"])) for a, b in zip(cuts[::2], cuts[1::2])]
        if t and rng.random() < 0.2:  # overlapping spans
            mine.append((0, len(t), 0, "assistant"))
        spans.append(mine)
    assert any(not t.isascii() and unicodedata.normalize("NFC", t) != t for t in texts)
    ids, offsets = library_offsets(small[name], texts)
    lengths = np.asarray([len(one) for one in ids], dtype=np.int64)
    pairs = np.asarray([p for one in offsets for p in one], dtype=np.int64).reshape(-1, 2)
    for per_sample_a, per_sample_b in (({}, {}), (None, None)):
        want = chat_trained(pairs[:, 0], pairs[:, 1], lengths, spans, per_sample_a)
        flat, got_lengths, at, bases = tok.encode_batch_with_byte_starts(texts)
        assert flat.tolist() == [x for one in ids for x in one] and np.array_equal(got_lengths, lengths)
        got = chat_trained_bytes(texts, at, bases, lengths, spans, per_sample_b)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1] and np.array_equal(got[2], want[2])
        assert got[0].sum() > 1000 and got[2].sum() == got[0].sum()
        if per_sample_a is not None:
            assert per_sample_a.keys() == per_sample_b.keys()
            assert all(np.array_equal(per_sample_a[r], per_sample_b[r]) for r in per_sample_a)


def test_a_post_processor_that_trims_offsets_keeps_the_library_offsets(small, tmp_path):
    """ByteLevel(trim_offsets=true) moves a token's start past its leading space: the engine still gives the
    ids, the offsets come from the library."""
    path = _edited(
        small["gpt2"],
        tmp_path / "trim.json",
        lambda s: s.update(
            post_processor={
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": True,
            }
        ),
    )
    tok = load("hf_json", path, engine="auto")
    assert tok.engine == "tiktoken" and tok.offsets_engine is None
    texts = ["one  two three", " x", "  y"] + HARD
    assert_same_offsets(tok, path, texts)
    untrimmed = load("hf_json", small["gpt2"], engine="auto").encode_batch_with_starts(texts)[2].tolist()
    assert untrimmed != tok.encode_batch_with_starts(texts)[2].tolist()  # the bytes' arithmetic: wrong here


def _masked_trees(tmp_path, monkeypatch, cfg_of) -> dict:
    """Output files and manifest of one masked build with the engine (MINTDIM_ENGINE=auto) and without."""
    trees, manifests = {}, {}
    for mode in ("auto", "tokenizers"):
        monkeypatch.setenv("MINTDIM_ENGINE", mode)
        build_in(tmp_path, cfg_of(mode))
        out = str(tmp_path / f"out-{mode}")
        manifests[mode] = read_json(os.path.join(out, "manifest.json"))
        trees[mode] = _tree_but_manifest(out)
    assert trees["auto"] == trees["tokenizers"]
    assert any(k.split("/")[-1].startswith("mask_") for k in trees["auto"])
    assert manifests["auto"]["tokenizer"].pop("engine") == "tiktoken"
    assert "engine" not in manifests["tokenizers"]["tokenizer"]
    for m in manifests.values():
        m["source"] = m["output"] = None
    assert manifests["auto"] == manifests["tokenizers"]
    return trees["auto"]


def test_loss_mask_build_on_the_engine_equals_the_library_build(small, tmp_path, monkeypatch):
    """train_on: the engine encodes; shards, masks and indexes are byte-identical to the library's build."""
    with open(GSM8K, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f][:300]
    rows += [{"question": t, "answer": h + t[:30]} for t in adversarial() if t.strip() for h in HARD[:3]]

    def cfg(mode):
        c = basic_config(
            [write_jsonl(tmp_path / "in.jsonl", rows)],
            fields=[["question", "answer"]],
            templates=["{question} {answer}\n"],
            tokenizer={"hf_json": {"path": small["llama3-nfc"]}},
            sizes=[[64, 256, 8192]],
            out=f"out-{mode}",
            work_dir=f"work-{mode}",
        )
        c["source"]["train_on"] = [["answer"]]
        return c

    _masked_trees(tmp_path, monkeypatch, cfg)


def _eligible_qwen3_template(tmp_path) -> str:
    """The shipped Qwen3-template directory with its added tokens `normalized: false`, as Qwen3's own file
    has them (the shipped copy's normalized ones, with an NFC normalizer, keep it on the library)."""
    import shutil

    d = tmp_path / "qwen3-template"
    shutil.copytree(os.path.join(DATA, "tokenizers", "qwen3-template-bpe"), d)
    _edited(
        str(d / "tokenizer.json"),
        d / "tokenizer.json",
        lambda s: [a.update(normalized=False) for a in s["added_tokens"]],
    )
    return str(d)


def test_chat_masks_on_the_engine_equal_the_library_build(tmp_path, monkeypatch):
    """Conversations with train_on (Qwen3's template): hard non-ASCII text, emoji, CJK, the template's
    special tokens: engine offsets equal the library's, and the masked build is byte-identical."""
    d = _eligible_qwen3_template(tmp_path)
    tok = load("hf_dir", d, engine="auto")
    assert tok.offsets_engine == "tiktoken"
    convs = [
        [{"role": "user", "content": h}, {"role": "assistant", "content": HARD[-1 - k] + " " + h}]
        for k, h in enumerate(HARD)
    ]
    convs += [
        [
            {"role": "system", "content": "Trả lời ngắn"},
            {"role": "user", "content": t[:200]},
            {"role": "assistant", "content": "<think>\n思考 😀\n</think>\n\n" + t[:100]},
        ]
        for t in adversarial()
    ]
    with open(os.path.join(DATA, "chat", "gsm8k_chat.jsonl"), encoding="utf-8") as f:
        chats = [json.loads(line) for line in f][:100]
    rows = [{"messages": c} for c in convs] + [{"messages": r["messages"]} for r in chats]
    src = write_jsonl(tmp_path / "c.jsonl", rows)
    from mintdim.sources.chat import ChatRenderer

    r = ChatRenderer(
        tok.chat_template, tok.special_tokens, {"messages": "messages", "role": "role", "content": "content"}
    )
    rendered = [r.render(o, src, 0) for o in rows]
    assert assert_same_offsets(tok, os.path.join(d, "tokenizer.json"), rendered) > 10_000

    def cfg(mode):
        return {
            "source": {"files": [src], "chat": {}, "train_on": [["assistant"]]},
            "tokenizer": {"hf_dir": {"path": d}},
            "units": {"sizes": [[256, 1024, 8192]], "build_batch": [16]},
            "output": {"dir": f"out-{mode}", "samples_per_shard": [40]},
            "work_dir": f"work-{mode}",
        }

    _masked_trees(tmp_path, monkeypatch, cfg)


# ---- real model files (skipped without ../assets, MINTDIM_ASSETS) ----

REAL = {
    "llama3.2": "hf/llama3.2/tokenizer.json",
    "llama3_1": "hf/llama3_1/tokenizer.json",
    "qwen3": "hf/qwen3/tokenizer.json",
    "deepseek": "hf/deepseek/tokenizer.json",
}


def real(name: str) -> str:
    path = os.path.join(ASSETS, REAL.get(name, name))
    if not os.path.isfile(path):
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_byte_level_files_adversarial_and_code_points(name):
    path = real(name)
    texts = adversarial() + [
        t.replace("<|im_start|>", s)
        for t in adversarial()
        for s in (
            "<|eot_id|>",
            "<|begin_of_text|>",
            "<|endoftext|>",
            "</think>",
            "<｜User｜>",
            "<｜end▁of▁sentence｜>",
            "<｜/table>｜DSML｜",
            "｜DSML｜<｜/table>｜",
            "<｜fim▁hole｜>",
            "<｜begin▁of▁sentence｜><｜User｜>",
        )
    ]
    assert_same_ids(path, texts + code_point_texts(step=1 if SLOW else 17))


def test_deepseek_three_splits_are_one_pattern():
    """DeepSeek's file: three Splits (digits, CJK runs, the rest), an empty normalizer and 46
    `normalized` added tokens, none able to start before an overlapping plain one: eligible."""
    path = real("hf/deepseek/tokenizer.json")
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    assert [p["type"] for p in spec["pre_tokenizer"]["pretokenizers"]] == ["Split"] * 3 + ["ByteLevel"]
    assert sum(bool(a["normalized"]) for a in spec["added_tokens"]) == 46
    fast, why = engines.fast_encoder_for(path, library(path))
    assert fast is not None, why


def gettext_texts(limit: int | None = None) -> list[str]:
    """Every translated message of the gettext catalogues under /usr/share/locale (Debian packages'
    translations, ~190 languages), 40 messages to a text."""
    import gettext

    texts = []
    for p in sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")):
        try:
            with open(p, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:  # noqa: BLE001 - a catalogue Python cannot read is simply not used
            continue
        values = [v for v in catalog.values() if isinstance(v, str) and v]
        texts += ["\n".join(values[i : i + 40]) for i in range(0, len(values), 40)]
    if not texts:
        pytest.skip("no gettext catalogues under /usr/share/locale")
    return texts[:limit] if limit else texts


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_on_multilingual_catalogues(name):
    path = real(name)
    texts = gettext_texts(None if SLOW else 3000)
    assert sum(not t.isascii() for t in texts) > len(texts) // 3
    assert_same_ids(path, texts)


@pytest.mark.skipif(not SLOW, reason="MINTDIM_SLOW=1: the full ShareGPT pairs (107 MB) per tokenizer")
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_on_full_sharegpt_pairs(name):
    path = real(name)
    data = os.path.join(ASSETS, "data", "sharegpt_pairs.jsonl")
    if not os.path.isfile(data):
        pytest.skip("no ShareGPT pairs")
    with open(data, encoding="utf-8") as f:
        texts = [(lambda o: f"{o['prompt']}\n{o['response']}")(json.loads(line)) for line in f]
    assert len(texts) == 61223
    assert_same_ids(path, texts, threads=2, batch=4096)


@pytest.mark.parametrize(
    "name, extra", [("qwen3", {}), ("llama3_1", {"pad_token": "<|reserved_special_token_0|>"})]
)
def test_real_conversation_masks_on_the_engine_equal_the_library(tmp_path, monkeypatch, name, extra):
    """300 ShareGPT conversations (many not ASCII), rendered with their trained spans by the model's own
    template: the engine's offsets and the masks they give equal the library's, bit for bit, and the
    masked build (train_on assistant) is byte-identical with and without the engine."""
    import random

    import numpy as np

    from mintdim.sources.chat import ChatRenderer
    from mintdim.stages.tokenize import chat_trained, chat_trained_bytes

    d = os.path.dirname(real(f"hf/{name}/tokenizer.json"))
    data = os.path.join(ASSETS, "data", "sharegpt_conversations.jsonl")
    if not os.path.isfile(data):
        pytest.skip("no ShareGPT conversations")
    with open(data, encoding="utf-8") as f:
        lines = f.readlines()
    rows = [json.loads(line) for line in random.Random(37).sample(lines, 300)]
    rows = [r for r in rows if all(m.get("from") in SHAREGPT_CHAT["roles"] for m in r["conversations"])]
    tok = load("hf_dir", d, engine="auto", threads=2, **extra)
    assert tok.offsets_engine == "tiktoken"
    r = ChatRenderer(tok.chat_template, tok.special_tokens, SHAREGPT_CHAT, ["assistant"], tok.added_special())
    texts, spans = zip(*(r.render_with_spans(o, data, 0) for o in rows))
    assert sum(not t.isascii() for t in texts) > 50
    flat, lengths, starts, ends = tok.encode_batch_with_offsets(list(texts))
    ids, offsets = library_offsets(os.path.join(d, "tokenizer.json"), list(texts))
    pairs = np.asarray([p for one in offsets for p in one], dtype=np.int64).reshape(-1, 2)
    assert flat.tolist() == [x for one in ids for x in one]
    assert np.array_equal(starts, pairs[:, 0]) and np.array_equal(ends, pairs[:, 1])
    got, got_roles, got_counts = chat_trained(starts, ends, lengths, list(spans))
    want, want_roles, want_counts = chat_trained(pairs[:, 0], pairs[:, 1], lengths, list(spans))
    assert np.array_equal(got, want) and got_roles == want_roles and got.sum() > 100_000
    assert np.array_equal(got_counts, want_counts) and got_counts.sum() == got.sum()
    # the byte path (each token's first byte, the spans' ends converted): the same mask and counts
    _flat, _lengths, at, bases = tok.encode_batch_with_byte_starts(list(texts))
    by_bytes = chat_trained_bytes(list(texts), at, bases, lengths, list(spans))
    assert np.array_equal(by_bytes[0], want) and by_bytes[1] == want_roles
    assert np.array_equal(by_bytes[2], want_counts)
    src = write_jsonl(tmp_path / "c.jsonl", rows)

    def cfg(mode):
        return {
            "source": {"files": [src], "chat": SHAREGPT_CHAT, "train_on": [["assistant"]]},
            "tokenizer": {"hf_dir": {"path": d, **extra}},
            "units": {"sizes": [[1024, 4096, 32768, 262144]], "build_batch": [64]},
            "output": {"dir": f"out-{mode}", "samples_per_shard": [100]},
            "work_dir": f"work-{mode}",
        }

    _masked_trees(tmp_path, monkeypatch, cfg)
