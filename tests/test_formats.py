"""The format modules own their files: names, writers and readers agree with each other."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest

from mintdim.formats import intermediate as inter
from mintdim.formats import output as fmt
from mintdim.formats import sample_columns as sc
from mintdim.formats import shards as fs


def test_intermediate_stream_reads_back_with_the_public_reader(tmp_path):
    path = str(tmp_path / inter.stream_name(256))
    w = inter.StreamWriter(path)
    batches = [
        (np.array([3, 1], dtype=np.uint32), np.array([5, 6, 7, 8], dtype=np.uint16)),
        (np.array([2], dtype=np.uint32), np.array([9, 10], dtype=np.uint16)),
    ]
    for lengths, tokens in batches:
        w.append({"lengths": inter.arr(lengths, np.uint32), "tokens": inter.arr(tokens, np.uint16)})
    w.close()
    with open(path, "rb") as f, pytest.raises(msgpack.ExtraData):
        msgpack.unpackb(f.read())  # several objects in a row: why the reader exists
    got = list(inter.iter_objects(path))
    assert len(got) == 2
    for obj, (lengths, tokens) in zip(got, batches):
        assert obj["lengths"].tolist() == lengths.tolist() and obj["tokens"].dtype == np.dtype("<u2")
        assert obj["tokens"].tolist() == tokens.tolist()
    raw = next(inter.iter_objects(path, arrays=False))
    assert set(raw["tokens"]) == {"dtype", "data"}


def test_intermediate_names_and_read_chunk(tmp_path):
    assert inter.stream_name(128) == "u128.msgpack" and inter.stream_name(inter.ALL) == "uall.msgpack"
    d = str(tmp_path / "f0_c0")
    os.makedirs(d)
    inter.write(inter.meta_path(d), {"n": 2, "lengths": inter.arr(np.array([4, 2]), np.uint32)})
    w = inter.StreamWriter(inter.stream_path(d, 8))
    w.append(
        {"lengths": inter.arr(np.array([4, 2]), np.uint32), "tokens": inter.arr(np.arange(6), np.uint16)}
    )
    w.close()
    meta, streams = inter.read_chunk(d)
    assert meta["n"] == 2 and meta["lengths"].tolist() == [4, 2] and meta["format"] == inter.FORMAT_VERSION
    assert list(streams) == ["u8.msgpack"] and streams["u8.msgpack"][0]["tokens"].tolist() == list(range(6))


@pytest.mark.parametrize("size", [0, 255, 256, 65535, 65536, 300_000])
def test_intermediate_file_is_msgpack_of_the_object_byte_for_byte(tmp_path, size):
    """inter.write writes a large bytes value apart from the rest (the plan's columns are not held
    twice): the file is still what msgpack.packb makes of the object, at every bin length boundary."""
    rng = np.random.default_rng(size)
    obj = {
        "n": size,
        "hashes": rng.bytes(size),
        "lengths": inter.arr(rng.integers(0, 2**31, size // 4 + 1), np.uint32),
        "nested": {"skipped": [1, "line", {"raw": bytes(size)}], "text": "é" * size},
    }
    path = str(tmp_path / "plan.msgpack")
    inter.write(path, obj)
    with open(path, "rb") as f:
        assert f.read() == msgpack.packb({"format": inter.FORMAT_VERSION, **obj}, use_bin_type=True)
    assert inter.read(path)["hashes"] == obj["hashes"]


def test_shard_names_mask_path_and_records(tmp_path):
    assert fs.unit_dir(192) == "unit_192" and fs.shard_path(192, 3) == "unit_192/shard_000003.bin"
    assert fs.shard_index("shard_000012.bin") == 12 and fs.shard_index("mask_000012.bin") is None
    assert fs.mask_path(os.path.join("out", "unit_8", "shard_000002.bin")) == os.path.join(
        "out", "unit_8", "mask_000002.bin"
    )
    udir = tmp_path / "unit_8"
    udir.mkdir()
    w = fs.ShardWriter(str(udir), 8, 2, pad_id=1, dtype="uint16", masks=True)
    w.write(np.array([3, 8, 0]), np.arange(11, dtype=np.uint16), np.arange(11) % 2 == 0)
    assert [s["name"] for s in w.close()] == ["shard_000000.bin", "shard_000001.bin"]
    assert fs.list_shards(str(udir)) == ["shard_000000.bin", "shard_000001.bin"]
    recs = fs.open_records(str(udir / "shard_000000.bin"), 8, "uint16")
    assert recs.shape == (2, 8) and recs[0].tolist() == [0, 1, 2, 1, 1, 1, 1, 1]
    bits = fs.unpack_mask(np.asarray(fs.open_mask(fs.mask_path(str(udir / "shard_000000.bin")), 8)), 8)
    assert bits[0].tolist() == [True, False, True] + [False] * 5
    with open(udir / "shard_000001.bin", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ValueError):
        fs.open_records(str(udir / "shard_000001.bin"), 8, "uint16")


def test_output_names_writers_and_readers(tmp_path):
    assert fmt.INDEX_FILES == (
        "manifest.json",
        "histogram.json",
        "stats.json",
        "sample_index.jsonl",
        "sample_index.idx",
        "duplicate_index.jsonl",
        "unk_index.jsonl",
    )
    fmt.write_json(str(tmp_path / fmt.STATS), {"total_samples": 2})
    assert fmt.read_json(str(tmp_path), fmt.STATS) == {"total_samples": 2}
    w = fmt.JsonlWriter(str(tmp_path / fmt.SAMPLE_INDEX))
    for i, n in enumerate([5, 7]):
        w.write({"sample_id": i, "token_count": n})
    w.close()
    assert fmt.token_counts(str(tmp_path)).tolist() == [5, 7]
    assert [o["sample_id"] for o in fmt.iter_index(str(tmp_path))] == [0, 1]


class _Silent:
    def update(self, done, nbytes=None):
        return False


@pytest.mark.parametrize("trained", [False, True])
def test_the_sample_index_reader_reads_what_the_writer_writes(tmp_path, trained):
    """read_sample_index gives back every column write_sample_index was given, with several source files
    (one without samples, one non-ASCII name) and trained_tokens; it declines (None) what it does not
    read exactly: a name JSON escapes, a file not among the names, other keys than it was told."""
    import orjson

    rng = np.random.default_rng(5)
    n, sizes, sps = 3000, [16, 64, 256], 7
    lengths = rng.integers(0, 257, n)
    units = np.searchsorted(sizes, lengths)
    rows = np.empty(n, dtype=np.int64)
    for u in range(len(sizes)):
        rows[units == u] = np.arange(int((units == u).sum()))
    paths = ["a.jsonl", "empty.jsonl", "données/b.parquet"]
    file_ids = np.repeat([0, 2], [1000, n - 1000])
    lines = np.concatenate([np.arange(1, 1001) * 3, np.arange(1, n - 999)])
    hexes = rng.bytes(32 * n).hex()
    mask = rng.integers(0, 1000, n) if trained else None
    path = str(tmp_path / fmt.SAMPLE_INDEX)
    fmt.write_sample_index(
        path, hexes, lengths, sizes, units, rows, sps, file_ids, paths, lines, mask, _Silent(), block=1000
    )
    data = open(path, "rb").read()
    cols = fmt.read_sample_index(path, paths)
    assert cols is not None
    for chunk in (len(data) // 3, 4096, 700):  # lines carried from chunk to chunk, files changing between
        other = fmt.read_sample_index(path, paths, chunk=chunk)
        assert other["hash"] == cols["hash"]
        assert all(np.array_equal(other[k], cols[k]) for k in cols if k != "hash"), chunk
    assert fmt.read_sample_index(path, paths, chunk=100) is None  # a line longer than a chunk
    parsed = [orjson.loads(line) for line in data.splitlines()]
    want = {
        "sample_id": list(range(n)),
        "token_count": lengths.tolist(),
        "unit_size": [sizes[u] for u in units],
        "source_line": lines.tolist(),
        "shard_row": (rows % sps).tolist(),
        "shard": (rows // sps).tolist(),
        "shard_unit": [sizes[u] for u in units],
        "source_file": file_ids.tolist(),
    }
    if trained:
        want["trained_tokens"] = mask.tolist()
    assert set(cols) == set(want) | {"hash"}
    for key, value in want.items():
        assert cols[key].tolist() == value, key
    assert cols["hash"] == hexes == "".join(p["hash"] for p in parsed)
    assert [paths[f] for f in cols["source_file"]] == [p["source_file"] for p in parsed]
    assert fmt.read_sample_index(path, paths[:2]) is None  # a file not among the names
    assert fmt.read_sample_index(path, [paths[2], "empty.jsonl", "a.jsonl"]) is None  # out of order
    for cut in (b"", data[:-1], data.replace(b'"shard_row":', b'"shard_rows":', 1)):
        with open(path, "wb") as f:
            f.write(cut)
        assert fmt.read_sample_index(path, paths) is None
    quoted = ['a"q.jsonl', "empty.jsonl", paths[2]]  # JSON writes the quote escaped
    fmt.write_sample_index(
        path, hexes, lengths, sizes, units, rows, sps, file_ids, quoted, lines, mask, _Silent()
    )
    assert fmt.read_sample_index(path, quoted) is None


def test_large_arrays_reach_the_kernel_in_pieces_of_at_most_write_piece(tmp_path, monkeypatch):
    """A write() of 2 MB or more gets 2 MB page-cache folios, 10x slower where the kernel returns free
    memory to its host (files.WRITE_PIECE): every writer of large arrays hands them over in pieces,
    and the files hold the same bytes."""
    from mintdim import files
    from mintdim.formats import megatron

    sizes = []

    class RecordingFile(files.FileIO):
        def write(self, b):
            sizes.append(memoryview(b).nbytes)
            return super().write(b)

    class Recording(files.PieceWriter, RecordingFile):  # PieceWriter's pieces reach RecordingFile.write
        pass

    monkeypatch.setattr(files, "PieceWriter", Recording)
    n = 3 * files.WRITE_PIECE  # 6 MB of uint16 tokens, 12 MB as int32
    tokens = (np.arange(n, dtype=np.int64) % 30000).astype(np.uint16)
    lengths = np.full(n // 4096, 4096, dtype=np.int64)

    w = fs.ShardWriter(str(tmp_path), 4096, len(lengths), pad_id=0, dtype="uint16", masks=True)
    w.write(lengths, tokens, tokens % 3 == 0)
    w.close()
    shard = np.fromfile(tmp_path / fs.shard_name(0), dtype="<u2")
    assert np.array_equal(shard, tokens)
    bits = np.unpackbits(np.fromfile(tmp_path / fs.mask_name(0), dtype=np.uint8), bitorder="little")
    assert np.array_equal(bits.astype(bool), tokens % 3 == 0)

    mw = megatron.Writer(str(tmp_path / "m.bin"), np.dtype("<u2"))
    mw.add(lengths, tokens)
    mw.finish(str(tmp_path / "m.idx"))
    assert np.array_equal(np.fromfile(tmp_path / "m.bin", dtype="<u2"), tokens)

    stream = inter.StreamWriter(str(tmp_path / "s.msgpack"))
    stream.append({"tokens": inter.arr(tokens, np.uint16)})
    stream.close()
    assert np.array_equal(next(inter.iter_objects(str(tmp_path / "s.msgpack")))["tokens"], tokens)

    pa = pytest.importorskip("pyarrow")
    from mintdim.formats import hf_datasets as hfd

    schema = hfd.arrow_schema([("input_ids", "list<int32>")])
    (tmp_path / "hf").mkdir()
    hw = hfd.ShardWriter(str(tmp_path / "hf"), schema, [0, len(lengths)])
    offsets = pa.array(np.arange(len(lengths) + 1, dtype=np.int32) * 4096)
    hw.write(
        pa.record_batch([pa.ListArray.from_arrays(offsets, pa.array(tokens.astype(np.int32)))], schema=schema)
    )
    hw.close()
    with pa.memory_map(str(tmp_path / "hf" / hw.files[0])) as source:
        table = pa.ipc.open_stream(source).read_all()
    assert np.array_equal(table.column("input_ids").combine_chunks().flatten().to_numpy(), tokens)

    assert sizes and max(sizes) <= files.WRITE_PIECE
    # the shard, its masks, the .bin, the stream and the Arrow file all went through
    assert sum(sizes) > 4 * n


# --- sample_index.idx ---------------------------------------------------------------------------------------


def _columns(n: int, packed: bool, rng) -> dict:
    """Every column of a layout, random values of each column's range."""
    cols = {
        "status": rng.integers(0, 4, n),
        "shard": rng.integers(-1, 1000, n),
        "record": rng.integers(-1, 1 << 20, n),
        "token_count": rng.integers(0, 1 << 30, n),
        "source_token_count": rng.integers(0, 1 << 40, n),
        "source_file": rng.integers(0, 3, n),
        "source_line": rng.integers(1, 1 << 40, n),
        "trained_tokens": rng.integers(0, 1 << 30, n),
        "repeat": rng.integers(0, 5, n),
    }
    if packed:
        cols["row_offset"] = rng.integers(-1, 1 << 20, n)
        cols["row_samples"] = rng.permutation(n)
        cols["row_first"] = np.concatenate(([0], np.sort(rng.integers(0, n + 1, 7))))
    else:
        cols["unit"] = rng.integers(-1, 5, n)
    return cols


@pytest.mark.parametrize("n", [0, 1, 9, 1000])
@pytest.mark.parametrize("packed", [False, True])
def test_sample_index_idx_reads_back_what_was_written(tmp_path, n, packed):
    """Round trip: every column, the layout, the sample count and the file names (non-ASCII kept), from a
    memory map; the header is the documented one; no optional column the writer was not given."""
    rng = np.random.default_rng(n)
    cols = _columns(n, packed, rng)
    names = ["a.jsonl", "dữ liệu/b.parquet", 'c "quoted".jsonl']
    path = str(tmp_path / sc.NAME)
    sc.write(path, "packed" if packed else "units", cols, names)
    got = sc.read(path)
    assert (got.layout, got.n, got.file_names) == ("packed" if packed else "units", n, names)
    for name, values in cols.items():
        column = getattr(got, name)
        assert column.dtype == np.dtype(sc.COLUMNS[name]) and column.tolist() == values.tolist(), name
    assert got.unit is None if packed else got.row_offset is None
    data = open(path, "rb").read()
    assert data[:8] == b"MINTSIDX" and int.from_bytes(data[8:12], "little") == sc.VERSION
    assert int.from_bytes(data[24:32], "little") == n
    sc.write(
        str(tmp_path / "plain.bin"),
        "units",
        {k: v for k, v in _columns(n, False, rng).items() if k not in ("trained_tokens", "repeat")},
        names,
    )
    plain = sc.read(str(tmp_path / "plain.bin"))
    assert plain.trained_tokens is None and plain.repeat is None


def test_sample_index_idx_pickles_as_its_path(tmp_path):
    """A DataLoader worker receives the columns by pickle: it maps the file again (a few hundred bytes pass,
    not the columns)."""
    import pickle

    path = str(tmp_path / sc.NAME)
    sc.write(path, "units", _columns(100_000, False, np.random.default_rng(0)), ["a.jsonl"])
    cols = sc.read(path)
    blob = pickle.dumps(cols)
    assert len(blob) < 1000
    again = pickle.loads(blob)
    assert np.array_equal(again.token_count, cols.token_count) and isinstance(again.token_count, np.memmap)


def _written(tmp_path, n=50) -> tuple[str, bytes]:
    path = str(tmp_path / sc.NAME)
    sc.write(path, "units", _columns(n, False, np.random.default_rng(1)), ["a.jsonl"])
    return path, open(path, "rb").read()


def _refused(path) -> str:
    from mintdim import errors as E

    with pytest.raises(E.OutputValidationError) as err:
        sc.read(path)
    assert err.value.file == path
    return err.value.render("both")


def test_a_damaged_sample_index_idx_header_is_refused(tmp_path):
    """A changed header byte (CRC-32), another file's start (the mark), a column table that does not add up:
    the catalogue's error in both languages, naming the file."""
    path, data = _written(tmp_path)
    out = str(tmp_path)
    for at in (20, 28, 40, 80):  # layout, sample count, the first column's name, its offset
        with open(path, "wb") as f:
            f.write(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
        text = _refused(path)
        assert (
            f"Problem: {out} is not a finished MintDim output: sample_index.idx is damaged: its header's "
            "CRC-32 does not match the header's bytes. Rebuild the output" in text
        )
        assert f"Vấn đề: {out} không phải output MintDim đã hoàn tất: sample_index.idx bị hỏng: " in text
    with open(path, "wb") as f:
        f.write(b"PK\x03\x04" + data[4:])
    assert (
        "sample_index.idx is damaged: it does not start with the mark of a MintDim sample index"
        in _refused(path)
    )
    with open(path, "wb") as f:  # a header size that does not fit its column count (checked before the CRC)
        f.write(data[:16] + (int.from_bytes(data[16:20], "little") + 8).to_bytes(4, "little") + data[20:])
    assert "sample_index.idx is damaged: its header size" in _refused(path)


def test_a_truncated_sample_index_idx_is_refused(tmp_path):
    """Cut anywhere (header, column table, columns): the size it has and the size it needs."""
    path, data = _written(tmp_path)
    out = str(tmp_path)
    for keep in (0, 5, 30, 100, len(data) - 1):
        with open(path, "wb") as f:
            f.write(data[:keep])
        text = _refused(path)
        assert (
            f"Problem: {out} is not a finished MintDim output: sample_index.idx is cut short: {keep} bytes, "
            "its header and columns take " in text
        ), (keep, text)
        assert f"sample_index.idx bị cắt cụt: {keep} byte, header và các cột của nó cần " in text


def test_a_sample_index_idx_of_another_version_is_refused(tmp_path):
    path, data = _written(tmp_path)
    with open(path, "wb") as f:
        f.write(data[:8] + (7).to_bytes(4, "little") + data[12:])
    text = _refused(path)
    assert (
        "sample_index.idx has format version 7, this MintDim reads version 1. Read the output with the "
        "MintDim that built it, or rebuild it with this one" in text
    )
    assert "sample_index.idx có phiên bản định dạng 7, MintDim này đọc phiên bản 1." in text
