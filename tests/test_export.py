"""`mintdim export OUT --format hf|megatron --to DEST`: outputs trainers load without code.

The references are independent of the exporter: tokens from the tokenizer library itself (the shipped
example) or the reader / the mask files read straight from disk; the Megatron `.idx` is parsed here
from Megatron-Core's documented layout (megatron/core/datasets/indexed_dataset.py: _IndexWriter), and
the `datasets` directory is read with `datasets.load_from_disk` and compared with what
`datasets.Dataset.save_to_disk` itself writes for the same rows.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import struct

import numpy as np
import pytest
import yaml
from conftest import HF_JSON, REPO, basic_config, read_json, read_jsonl, read_mask, run_cli, tree_bytes
from test_packing import drive as drive_packed
from test_packing import packed_config, rows_file
from test_stages import drive as drive_bucketed

import mintdim
from mintdim import errors as E
from mintdim.reading.packed_reader import IGNORE

datasets = pytest.importorskip("datasets")
pytest.importorskip("pyarrow")

from mintdim.reading.export import export  # noqa: E402  (after the skips: the hf writer needs pyarrow)


def _shipped(tmp, name: str, **override) -> str:
    """A config of config/ built through the stage functions in `tmp` (data/ linked in); its output dir."""
    old = os.getcwd()
    os.chdir(tmp)
    try:
        if not os.path.exists("data"):
            os.symlink(os.path.join(REPO, "data"), "data")
        with open(os.path.join(REPO, "config", name), encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        cfg.update(override)
        (drive_packed if "pack" in cfg["units"] else drive_bucketed)(cfg)
        return os.path.join(str(tmp), cfg["output"]["dir"])
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory):
    """The shipped example (config/config.yaml): bucketed, MiniLM tokenizer.json, no loss masks."""
    return _shipped(tmp_path_factory.mktemp("gsm8k"), "config.yaml")


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    """The shipped conversation example (config/chat.yaml): bucketed, loss on assistant turns."""
    return _shipped(tmp_path_factory.mktemp("chat"), "chat.yaml")


@pytest.fixture(scope="module")
def chat_packed(tmp_path_factory):
    """config/chat.yaml with packed rows of 1024 tokens (masks, several shards)."""
    return _shipped(
        tmp_path_factory.mktemp("chatp"),
        "chat.yaml",
        units={"pack": [1024], "build_batch": [256]},
        output={"dir": "chat_packed", "samples_per_shard": [16]},
    )


@pytest.fixture(scope="module")
def dropped(tmp_path_factory):
    """Packed rows, no masks, some samples longer than a row dropped (units.overflow: drop)."""
    tmp = tmp_path_factory.mktemp("dropped")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        path, _rows = rows_file(tmp, 90, long_every=17)
        drive_packed(packed_config([path], overflow="drop"))
    finally:
        os.chdir(old)
    return str(tmp / "out")


@pytest.fixture(scope="module")
def bucketed_dropped(tmp_path_factory):
    """Unit sizes with loss masks (train_on: response), some samples longer than the largest unit
    dropped (units.overflow: drop): in no unit."""
    tmp = tmp_path_factory.mktemp("bdropped")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        path, _rows = rows_file(tmp, 60, long_every=11)
        cfg = basic_config([path], sizes=[[96, 160, 256]], build_batch=[16], sps=[7])
        cfg["units"]["overflow"] = ["drop"]
        cfg["source"]["train_on"] = [["response"]]
        drive_bucketed(cfg)
    finally:
        os.chdir(old)
    return str(tmp / "out")


def _mask_bits(out: str) -> dict[int, np.ndarray]:
    """Every sample's loss-mask bits read straight from the mask files (bucketed outputs)."""
    return {
        row["sample_id"]: read_mask(out, row)[: row["token_count"]]
        for row in read_jsonl(os.path.join(out, "sample_index.jsonl"))
    }


def _int32_list():
    return datasets.List(datasets.Value("int32"))


# --- hf: bucketed ------------------------------------------------------------------------------------


def test_hf_bucketed_rows_are_the_tokenizers_own_encode(gsm8k, tmp_path):
    from tokenizers import Tokenizer

    dest = str(tmp_path / "hf")
    export(gsm8k, "hf", dest)
    d = datasets.load_from_disk(dest)
    assert isinstance(d, datasets.Dataset)
    assert d.features == datasets.Features(
        {"input_ids": _int32_list(), "labels": _int32_list(), "sample_id": datasets.Value("int64")}
    )
    tok = Tokenizer.from_file(os.path.join(REPO, "data", "tokenizers", "minilm-tokenizer.json"))
    assert HF_JSON.endswith("minilm-tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    with open(os.path.join(REPO, "data", "gsm8k", "test.jsonl"), encoding="utf-8") as f:
        texts = [f"{r['question']}\n\n{r['answer']}" for r in map(json.loads, f)]
    assert len(d) == len(texts) == 1319
    expected = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert d["sample_id"] == list(range(1319))
    assert d["input_ids"] == expected
    assert d["labels"] == expected  # no train_on: every token is a target


def test_hf_bucketed_labels_follow_the_loss_masks(chat, tmp_path):
    dest = str(tmp_path / "hf")
    export(chat, "hf", dest)
    d = datasets.load_from_disk(dest)
    ds = mintdim.open(chat)
    bits = _mask_bits(chat)
    assert len(d) == ds.num_samples == 300
    trained = untrained = 0
    for row in d:
        sid = row["sample_id"]
        tokens = ds.tokens(sid).astype(np.int64)
        assert row["input_ids"] == tokens.tolist()
        assert row["labels"] == np.where(bits[sid], tokens, IGNORE).tolist()
        trained += int(bits[sid].sum())
        untrained += int((~bits[sid]).sum())
    assert trained == read_json(os.path.join(chat, "stats.json"))["trained_tokens"] > 0 and untrained > 0


# --- hf: packed rows ------------------------------------------------------------------------------------


def test_hf_packed_rows_as_the_reader_gives_them(chat_packed, tmp_path):
    dest = str(tmp_path / "hf")
    export(chat_packed, "hf", dest)
    d = datasets.load_from_disk(dest)
    ds = mintdim.open(chat_packed)
    assert d.features == datasets.Features(
        {
            "input_ids": _int32_list(),
            "labels": _int32_list(),
            "position_ids": _int32_list(),
            "seq_lengths": _int32_list(),
            "sample_ids": datasets.List(datasets.Value("int64")),
        }
    )
    assert len(d) == ds.num_rows > 16  # several shards
    batch = ds.gather_rows(range(ds.num_rows))
    seen = []
    for r, row in enumerate(d):
        used = int(batch.row_lengths[r])
        assert row["input_ids"] == batch.tokens[r, :used].astype(np.int64).tolist()
        assert row["labels"] == batch.labels[r, :used].tolist()
        assert row["position_ids"] == batch.position_ids[r, :used].tolist()
        assert (batch.labels[r, used:] == IGNORE).all()  # the row's padding: nothing trained is left out
        assert row["seq_lengths"] == np.diff(ds.row_boundaries(r)).tolist()
        assert row["sample_ids"] == ds.row_sample_ids(r).tolist()
        # TRL's padding-free collator rebuilds position_ids from seq_lengths: the same numbers
        assert sum(row["seq_lengths"]) == len(row["input_ids"])
        assert np.concatenate([np.arange(n) for n in row["seq_lengths"]]).tolist() == row["position_ids"]
        seen += row["sample_ids"]
    assert sorted(seen) == list(range(ds.num_samples))
    targets = sum(int(np.count_nonzero(np.asarray(row) != IGNORE)) for row in d["labels"])
    assert targets == sum(int(ds.loss_mask(s)[1:].sum()) for s in range(ds.num_samples)) > 0


def test_hf_directory_is_what_datasets_save_to_disk_writes(chat_packed, gsm8k, tmp_path):
    """Same files, same dataset_info.json, same state.json (but the fingerprint), same Arrow schema and
    metadata, same table as `datasets` writes for the same rows and features."""
    import pyarrow as pa

    for name, out in (("packed", chat_packed), ("bucketed", gsm8k)):
        mine, theirs = str(tmp_path / f"{name}_mine"), str(tmp_path / f"{name}_theirs")
        export(out, "hf", mine)
        d = datasets.load_from_disk(mine)
        datasets.Dataset.from_dict(d.to_dict(), features=d.features).save_to_disk(theirs)
        assert sorted(os.listdir(mine)) == sorted(os.listdir(theirs))
        info, ref_info = (
            read_json(os.path.join(mine, "dataset_info.json")),
            read_json(os.path.join(theirs, "dataset_info.json")),
        )
        assert info.pop("description").startswith("MintDim export") and ref_info.pop("description") == ""
        assert info == ref_info
        state, ref_state = (
            read_json(os.path.join(mine, "state.json")),
            read_json(os.path.join(theirs, "state.json")),
        )
        assert re.fullmatch(r"[0-9a-f]{16}", state.pop("_fingerprint")) and ref_state.pop("_fingerprint")
        assert state == ref_state
        for f in state["_data_files"]:
            with (
                pa.memory_map(os.path.join(mine, f["filename"])) as a,
                pa.memory_map(os.path.join(theirs, f["filename"])) as b,
            ):
                ta, tb = pa.ipc.open_stream(a).read_all(), pa.ipc.open_stream(b).read_all()
            assert ta.schema.equals(tb.schema, check_metadata=True)
            assert ta.equals(tb)


def test_hf_export_is_deterministic(gsm8k, tmp_path):
    assert mintdim.export is export  # the Python API's name
    export(gsm8k, "hf", str(tmp_path / "a"))
    mintdim.export(gsm8k, "hf", str(tmp_path / "b"))
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")


def test_hf_rolls_data_files_as_save_to_disk_does(gsm8k, tmp_path, monkeypatch):
    """More than max_shard_size of Arrow data: data-0000k-of-0000n.arrow files of contiguous rows."""
    from mintdim.formats import hf_datasets

    monkeypatch.setattr(hf_datasets, "MAX_SHARD_BYTES", 200_000)
    dest = str(tmp_path / "hf")
    export(gsm8k, "hf", dest)
    files = sorted(n for n in os.listdir(dest) if n.endswith(".arrow"))
    assert len(files) > 2 and files[0] == f"data-00000-of-{len(files):05d}.arrow"
    d = datasets.load_from_disk(dest)
    assert d["sample_id"] == list(range(1319))
    ds = mintdim.open(gsm8k)
    assert d[1000]["input_ids"] == ds.tokens(1000).tolist()


def test_an_output_with_no_row_exports_empty_but_loadable(tmp_path, monkeypatch):
    """Every sample longer than a row and dropped: 0 rows (datasets' own save_to_disk writes no data file
    then, and load_from_disk fails; one file with the schema alone loads); 5 empty Megatron sequences."""
    monkeypatch.chdir(tmp_path)
    path, _rows = rows_file(tmp_path, 5, long_every=1)
    drive_packed(packed_config([path], overflow="drop"))
    export("out", "hf", "hf")
    d = datasets.load_from_disk("hf")
    assert len(d) == 0 and list(d.features) == [
        "input_ids",
        "labels",
        "position_ids",
        "seq_lengths",
        "sample_ids",
    ]
    export("out", "megatron", "mg")
    assert [len(s) for s in read_megatron("mg")] == [0] * 5


# --- megatron ----------------------------------------------------------------------------------------

# dtype codes of Megatron-Core's DType enum (indexed_dataset.py)
MEGATRON_DTYPES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.float32,
    8: np.uint16,
}


def read_megatron(prefix: str) -> list[np.ndarray]:
    """An independent reader of PREFIX.idx / PREFIX.bin, from Megatron-Core's documented layout:
    b"MMIDIDX\\x00\\x00", <Q version 1, <B dtype code, <Q sequence count, <Q document count, then int32
    sequence lengths, int64 byte pointers, int64 document indices (count + 1 entries from 0)."""
    with open(prefix + ".idx", "rb") as f:
        raw = f.read()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    (version,) = struct.unpack("<Q", raw[9:17])
    code = raw[17]
    seqs, docs = struct.unpack("<QQ", raw[18:34])
    assert version == 1 and code in MEGATRON_DTYPES
    assert len(raw) == 34 + 4 * seqs + 8 * seqs + 8 * docs
    lengths = np.frombuffer(raw, dtype="<i4", count=seqs, offset=34)
    pointers = np.frombuffer(raw, dtype="<i8", count=seqs, offset=34 + 4 * seqs)
    documents = np.frombuffer(raw, dtype="<i8", count=docs, offset=34 + 12 * seqs)
    dtype = np.dtype(MEGATRON_DTYPES[code]).newbyteorder("<")
    assert documents.tolist() == list(range(seqs + 1))  # one document per sequence
    starts = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))[:-1]]) * dtype.itemsize
    assert pointers.tolist() == starts.tolist()
    data = np.fromfile(prefix + ".bin", dtype=dtype)
    assert len(data) == int(lengths.sum())
    return [
        data[p // dtype.itemsize : p // dtype.itemsize + n]
        for p, n in zip(pointers.tolist(), lengths.tolist())
    ]


def test_megatron_sequences_are_the_readers_samples(gsm8k, tmp_path):
    prefix = str(tmp_path / "mg" / "gsm8k")
    export(gsm8k, "megatron", prefix)
    seqs = read_megatron(prefix)
    ds = mintdim.open(gsm8k)
    assert len(seqs) == ds.num_samples == 1319
    assert all(np.array_equal(seqs[i], ds.tokens(i)) for i in range(ds.num_samples))
    assert seqs[0].dtype == np.uint16
    assert sorted(os.listdir(tmp_path / "mg")) == ["gsm8k.bin", "gsm8k.idx"]  # no masks: no train_on


def test_megatron_masks_beside_in_the_same_layout(chat, tmp_path):
    prefix = str(tmp_path / "chat")
    export(chat, "megatron", prefix)
    seqs, masks = read_megatron(prefix), read_megatron(prefix + "_mask")
    ds = mintdim.open(chat)
    bits = _mask_bits(chat)
    assert len(seqs) == len(masks) == ds.num_samples
    assert masks[0].dtype == np.uint8
    for i in range(ds.num_samples):
        assert np.array_equal(seqs[i], ds.tokens(i))
        assert masks[i].tolist() == bits[i].astype(np.uint8).tolist()


def test_megatron_packed_output_one_sequence_per_sample(chat_packed, dropped, tmp_path):
    for name, out in (("chat", chat_packed), ("dropped", dropped)):
        prefix = str(tmp_path / name)
        export(out, "megatron", prefix)
        ds = mintdim.open(out)
        seqs = read_megatron(prefix)
        assert len(seqs) == ds.num_samples
        gone = 0
        for i in range(ds.num_samples):
            try:
                assert np.array_equal(seqs[i], ds.tokens(i))
            except ValueError:  # dropped (longer than a row): an empty sequence keeps index = sample_id
                assert len(seqs[i]) == 0
                gone += 1
        if name == "chat":
            masks = read_megatron(prefix + "_mask")
            assert all(
                masks[i].tolist() == ds.loss_mask(i).astype(np.uint8).tolist() for i in range(ds.num_samples)
            )
        else:
            assert gone == read_json(os.path.join(out, "stats.json"))["packing"]["overflow"]["dropped"] > 0
            assert not os.path.exists(prefix + "_mask.idx")


def test_a_bucketed_output_with_dropped_samples_exports_both_formats(bucketed_dropped, tmp_path):
    """A sample dropped for its length is in no unit: hf gives it no row (the sample_id column says which
    samples are there), megatron an empty sequence (sequence i stays sample i), its mask likewise."""
    out = bucketed_dropped
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    gone = [r["sample_id"] for r in index if r.get("overflow") == "dropped"]
    kept = [r["sample_id"] for r in index if r.get("overflow") != "dropped"]
    assert gone and len(kept) > len(gone)
    ds = mintdim.open(out)
    bits = {r["sample_id"]: read_mask(out, r)[: r["token_count"]] for r in index if r["sample_id"] in kept}
    export(out, "hf", str(tmp_path / "hf"))
    d = datasets.load_from_disk(str(tmp_path / "hf"))
    assert d["sample_id"] == kept
    for row in d:
        i = row["sample_id"]
        assert row["input_ids"] == ds.tokens(i).tolist()
        assert row["labels"] == np.where(bits[i], ds.tokens(i).astype(np.int64), IGNORE).tolist()
    prefix = str(tmp_path / "mg")
    export(out, "megatron", prefix)
    seqs, masks = read_megatron(prefix), read_megatron(prefix + "_mask")
    assert len(seqs) == len(masks) == len(index)
    for i in range(len(index)):
        want = [] if i in gone else ds.tokens(i).tolist()
        assert seqs[i].tolist() == want
        assert masks[i].tolist() == ([] if i in gone else bits[i].astype(np.uint8).tolist())


def _ticking(monkeypatch) -> None:
    """Progress lines on every update: a clock that moves a minute per reading."""
    import types

    from mintdim import progress

    ticks = iter(range(0, 10**9, 60))
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))


def test_long_exports_tell_their_progress(chat_packed, gsm8k, tmp_path, monkeypatch):
    """A long verification and a long write print a progress line every few seconds (here every update):
    shards checked, then rows or sequences written, each with the total."""
    _ticking(monkeypatch)
    for out, fmt_name, what in (
        (gsm8k, "hf", "rows"),
        (gsm8k, "megatron", "sequences"),
        (chat_packed, "megatron", "sequences"),
    ):
        lines = []
        export(out, fmt_name, str(tmp_path / f"{fmt_name}_{os.path.basename(out)}"), log=lines.append)
        shards = [line for line in lines if line.startswith(f"[verify] {out}: ") and " shards (" in line]
        written = [line for line in lines if line.startswith("[export] ") and f" {what} (" in line]
        assert shards and written, lines
        total = int(re.search(r"/([\d,]+) shards", shards[-1]).group(1).replace(",", ""))
        assert total == len(
            [
                f
                for d in os.listdir(out)
                if d.startswith("unit_")
                for f in os.listdir(os.path.join(out, d))
                if f.startswith("shard_")
            ]
        )


def test_verify_tells_its_progress_on_stderr_and_keeps_json_clean(gsm8k, tmp_path, monkeypatch, capsys):
    from mintdim.cli import main

    _ticking(monkeypatch)
    assert main(["verify", gsm8k, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["ok"] is True
    assert f"[verify] {gsm8k}: " in captured.err and " shards (" in captured.err


def test_megatron_writer_widens_uint32_to_int32(tmp_path):
    """Megatron-Core has no uint32 code: a uint32 vocabulary is written as int32 (code 4)."""
    from mintdim.formats import megatron

    prefix = str(tmp_path / "big")
    w = megatron.Writer(prefix + ".bin", np.dtype("<u4"))
    w.add(np.array([2, 1], dtype=np.int64), np.array([151_000, 7, 99_999], dtype="<u4"))
    w.add(np.array([0], dtype=np.int64), np.array([], dtype="<u4"))
    w.finish(prefix + ".idx")
    seqs = read_megatron(prefix)
    assert [s.tolist() for s in seqs] == [[151_000, 7], [99_999], []]
    assert {s.dtype for s in seqs} == {np.dtype("<i4")}


def test_megatron_module_reader_reads_what_it_wrote(chat, tmp_path):
    from mintdim.formats import megatron

    prefix = str(tmp_path / "chat")
    export(chat, "megatron", prefix)
    for p in (prefix, prefix + "_mask"):
        assert [s.tolist() for s in megatron.read_sequences(p)] == [s.tolist() for s in read_megatron(p)]
    with open(prefix + ".idx", "r+b") as f:
        f.seek(9)
        f.write(struct.pack("<Q", 2))
    with pytest.raises(ValueError, match="not a version-1 Megatron index"):
        megatron.read_index(prefix + ".idx")


def test_megatron_real_indexed_dataset_reads_the_same_tokens(chat, dropped, tmp_path):
    """Megatron-Core's own reader, when it is installed (it needs torch; seen passing with torch 2.13.0 CPU
    and megatron-core 0.16.1, the last release for Python 3.11)."""
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    prefix = str(tmp_path / "chat")
    export(chat, "megatron", prefix)
    ds = mintdim.open(chat)
    real, mask = indexed.IndexedDataset(prefix), indexed.IndexedDataset(prefix + "_mask")
    assert len(real) == len(mask) == ds.num_samples
    for i in range(ds.num_samples):
        assert np.array_equal(real[i], ds.tokens(i))
        assert np.array_equal(mask[i].astype(bool), ds.loss_mask(i))
    export(dropped, "megatron", str(tmp_path / "dropped"))
    ds, real = mintdim.open(dropped), indexed.IndexedDataset(str(tmp_path / "dropped"))
    assert len(real) == ds.num_samples and real.document_indices.tolist() == list(range(ds.num_samples + 1))
    assert [len(real[i]) for i in range(len(real))] == ds.token_counts.tolist()


# --- refusals: nothing written, nothing overwritten ---------------------------------------------------


def _nothing_left(parent) -> None:
    assert os.listdir(parent) == [], os.listdir(parent)


def test_refuses_what_is_not_a_finished_output(tmp_path, gsm8k):
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(E.MintDimFileNotFoundError):
        export(str(tmp_path / "missing"), "hf", str(dest / "x"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(E.MintDimFileNotFoundError):
        export(str(tmp_path / "empty"), "megatron", str(dest / "x"))
    failed = tmp_path / "failed"
    (failed / "unit_128").mkdir(parents=True)
    (failed / "unit_128" / "UNIT_BUILD_FAILED.md").write_text("failed\n")
    with pytest.raises(E.OutputValidationError) as info:
        export(str(failed), "hf", str(dest / "x"))
    assert "its build failed" in info.value.render("en") and "build đã thất bại" in info.value.render("vi")
    _nothing_left(dest)


def test_refuses_an_output_that_fails_verification(gsm8k, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(gsm8k, bad)
    row = read_jsonl(os.path.join(bad, "sample_index.jsonl"))[5]
    shard = bad / row["shard_path"]
    data = np.fromfile(shard, dtype="<u2").reshape(-1, row["unit_size"])
    data[row["shard_row"], row["token_count"]] += 1  # a padding slot that no longer holds pad_id
    data.tofile(shard)
    dest = tmp_path / "dest"
    dest.mkdir()
    for fmt_name in ("hf", "megatron"):  # checksums.sha256 first: every changed file named
        with pytest.raises(E.OutputValidationError) as info:
            export(str(bad), fmt_name, str(dest / "x"))
        en, vi = info.value.render("en"), info.value.render("vi")
        assert "The output's files differ from its checksums.sha256" in en and "Nothing was exported" in en
        assert f"Changed (bytes differ from their SHA-256):\n\n• {row['shard_path']}\n\n" in en
        assert f"Đã thay đổi (bytes khác SHA-256 đã ghi):\n\n• {row['shard_path']}\n\n" in vi
    _nothing_left(dest)
    from mintdim.formats import checksums

    checksums.write(str(bad))  # the checksums recomputed over the change: verify's own checks still refuse it
    for fmt_name in ("hf", "megatron"):
        with pytest.raises(E.OutputValidationError) as info:
            export(str(bad), fmt_name, str(dest / "x"))
        en, vi = info.value.render("en"), info.value.render("vi")
        assert f"{bad} is not a finished MintDim output: mintdim verify found 1 problem" in en
        assert row["shard_path"] in en and "mintdim verify" in vi and "vấn đề" in vi
    _nothing_left(dest)


def test_the_checksums_error_names_changed_missing_and_unlisted_files_in_both_languages(gsm8k, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(gsm8k, bad)
    os.unlink(bad / "unk_index.jsonl")
    (bad / "notes.txt").write_text("mine")
    with open(bad / "stats.json", "a", encoding="utf-8") as f:
        f.write(" ")
    with pytest.raises(E.OutputValidationError) as info:
        export(str(bad), "megatron", str(tmp_path / "x"))
    en, vi = info.value.render("en"), info.value.render("vi")
    assert (
        "Changed (bytes differ from their SHA-256):\n\n• stats.json\n\nMissing:\n\n• unk_index.jsonl\n\n"
        "Not listed (not written by the build):\n\n• notes.txt\n\nNothing was exported."
    ) in en
    assert (
        "Đã thay đổi (bytes khác SHA-256 đã ghi):\n\n• stats.json\n\nBị thiếu:\n\n• unk_index.jsonl\n\n"
        "Không có trong danh sách (không do lần build ghi):\n\n• notes.txt\n\nKhông export gì."
    ) in vi
    many = E.OutputValidationError.checksums_differ(
        "out", [f"unit_64/shard_{k:06d}.bin" for k in range(25)], [], []
    )
    assert many.render("en").count("• unit_64/shard_") == 20  # the first 20, then how many more
    assert "• ... and 5 more (`mintdim verify out` lists them all)" in many.render("en")
    assert "• ... và 5 file khác (`mintdim verify out` liệt kê đủ)" in many.render("vi")
    assert not os.path.exists(tmp_path / "x.bin")


def test_never_overwrites_a_users_file(gsm8k, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep me")
    (tmp_path / "file").write_text("keep me too")
    for dest in ("taken", "file"):
        with pytest.raises(E.ExportError) as info:
            export(gsm8k, "hf", str(tmp_path / dest))
        assert info.value.render("en") == (
            f"ExportError: {tmp_path / dest} already exists; mintdim export never "
            "overwrites a file. Choose a new --to, or move it away."
        )
        assert info.value.render("vi") == (
            f"ExportError: {tmp_path / dest} đã tồn tại; mintdim export không bao giờ "
            "ghi đè file. Hãy chọn --to mới, hoặc chuyển nó đi chỗ khác."
        )
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep me"
    assert (tmp_path / "file").read_text() == "keep me too"
    for existing in ("p.idx", "p.bin", "p_mask.bin", "p_mask.idx"):
        d = tmp_path / existing.replace(".", "_")
        d.mkdir()
        (d / existing).write_text("mine")
        with pytest.raises(E.ExportError):
            export(gsm8k, "megatron", str(d / "p"))
        assert os.listdir(d) == [existing] and (d / existing).read_text() == "mine"
    (tmp_path / "empty").mkdir()  # an empty directory is new enough (as for `mintdim build`)
    export(gsm8k, "hf", str(tmp_path / "empty"))
    assert len(datasets.load_from_disk(str(tmp_path / "empty"))) == 1319


def test_refuses_a_destination_inside_the_output(gsm8k, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(gsm8k, out)
    for fmt_name, dest in (("hf", out / "hf"), ("megatron", out / "unit_128" / "x")):
        with pytest.raises(E.ExportError) as info:
            export(str(out), fmt_name, str(dest))
        assert "inside the output" in info.value.render("en") and "nằm trong output" in info.value.render(
            "vi"
        )
    assert mintdim.verify(str(out)).ok


@pytest.mark.parametrize("fmt_name", ["hf", "megatron"])
def test_a_failed_write_leaves_nothing(chat, tmp_path, monkeypatch, fmt_name):
    """Disk full in the middle: a catalogue error, no DEST, no temporary file, no directory it made."""
    from mintdim.formats import hf_datasets, megatron

    calls = []

    def full(*_a, **_k):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(*_a, **_k)

    if fmt_name == "hf":
        original = hf_datasets.ShardWriter.write
        monkeypatch.setattr(hf_datasets.ShardWriter, "write", full)
    else:
        original = megatron.Writer.add
        monkeypatch.setattr(megatron.Writer, "add", full)
    monkeypatch.setattr("mintdim.reading.export.BLOCK_TOKENS", 2000)  # several blocks
    dest = tmp_path / "made" / "deeper" / "x"
    with pytest.raises(E.ExportError) as info:
        export(chat, fmt_name, str(dest))
    assert len(calls) == 2
    assert "No space left on device" in info.value.render("en") and "không còn gì" in info.value.render("vi")
    _nothing_left(tmp_path)


def test_without_pyarrow_hf_says_how_to_install_it(gsm8k, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(E.MissingExtraError) as info:
        export(gsm8k, "hf", str(tmp_path / "x"))
    assert "pip install 'mintdim[arrow]'" in info.value.render("en")
    _nothing_left(tmp_path)


# --- the command --------------------------------------------------------------------------------------


def test_command_help_says_megatron_has_no_loss_mask(tmp_path):
    res = run_cli(tmp_path, "export", "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "no loss mask" in text and "PREFIX_mask.bin" in text and "Exit codes" in text
    assert run_cli(tmp_path, "export", "x", "--format", "parquet", "--to", "y").returncode == 2


def test_command_refuses_in_both_languages(gsm8k, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "f").write_text("x")
    res = run_cli(tmp_path, "export", gsm8k, "--format", "hf", "--to", "taken", "--lang", "both")
    assert res.returncode == 1 and res.stdout == ""
    assert "[english] ExportError: taken already exists" in res.stderr
    assert "[vietnam] ExportError: taken đã tồn tại" in res.stderr
    res = run_cli(tmp_path, "export", str(tmp_path), "--format", "megatron", "--to", "m")
    assert (
        res.returncode == 1
        and "MintDimFileNotFoundError" in res.stderr
        and not os.path.exists(tmp_path / "m.bin")
    )


def test_readme_export_example_runs_as_written(tmp_path):
    """The README's `mintdim export` lines, in a fresh copy of data/ and config/, after its two builds."""
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    lines = [line.split("#")[0].strip() for line in readme.splitlines() if line.startswith("mintdim export ")]
    assert len(lines) == 2 and {"--format hf", "--format megatron"} <= {
        " ".join(ln.split()[3:5]) for ln in lines
    }
    shutil.copytree(os.path.join(REPO, "data"), tmp_path / "data")
    shutil.copytree(os.path.join(REPO, "config"), tmp_path / "config")
    for config in ("config/config.yaml", "config/chat.yaml"):
        res = run_cli(tmp_path, "build", config, "--cores", "2")
        assert res.returncode == 0, res.stdout + res.stderr
    for line in lines:
        res = run_cli(tmp_path, *shlex.split(line)[1:])
        assert res.returncode == 0, line + "\n" + res.stdout + res.stderr
        assert "[export]" in res.stdout
    hf = next(ln for ln in lines if "--format hf" in ln).split("--to")[1].split()[0]
    assert len(datasets.load_from_disk(str(tmp_path / hf))) in (1319, 300)
    prefix = next(ln for ln in lines if "--format megatron" in ln).split("--to")[1].split()[0]
    assert len(read_megatron(str(tmp_path / prefix))) in (1319, 300)
