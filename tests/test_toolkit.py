"""The users' toolkit on a real build: the reader (mintdim.open), its batch sampler and PyTorch adapter,
`mintdim inspect`, the build report, progress lines, and a build through the local-cluster profile.

One GSM8K build (module fixture) serves every test; samples are checked against the tokenizer's own
encode of the rendered text, independently of MintDim.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
import yaml
from conftest import (
    GSM8K,
    HF_JSON,
    SNAKEFILE,
    assert_not_finished,
    build_in,
    read_json,
    read_jsonl,
    run_cli,
    tree_bytes,
)

import mintdim
from mintdim.progress import Progress

SIZES = [128, 256, 512]
SPS = 200


def config(out="out"):
    return {
        "source": {
            "files": [GSM8K],
            "fields": [["question", "answer"]],
            "templates": ["{question}\n\n{answer}"],
        },
        "tokenizer": {"hf_json": {"path": HF_JSON}},
        "units": {"sizes": [SIZES], "build_batch": [256]},
        "output": {"dir": out, "samples_per_shard": [SPS]},
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    ws = tmp_path_factory.mktemp("toolkit")
    result = build_in(ws, config())
    return {"ws": ws, "out": str(ws / "out"), "result": result}


@pytest.fixture(scope="module")
def expected():
    """Token ids of every GSM8K sample, encoded here with the tokenizer library itself."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(HF_JSON)
    tok.no_padding()
    tok.no_truncation()
    with open(GSM8K, encoding="utf-8") as f:
        texts = [f"{r['question']}\n\n{r['answer']}" for r in map(json.loads, f)]
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]


@pytest.fixture
def ds(built):
    return mintdim.open(built["out"])


# ------------------------------------------------------------------------------------------------
# reader
# ------------------------------------------------------------------------------------------------


def test_open_lists_units_counts_and_memmapped_shards(ds, built):
    stats = read_json(os.path.join(built["out"], "stats.json"))
    assert mintdim.read is mintdim.open
    assert len(ds) == ds.num_samples == 1319 == stats["total_samples"]
    assert ds.sizes == SIZES
    assert ds.dtype == np.dtype("<u2") and ds.pad_id == 0 and ds.unk_id == 100
    assert [u.size for u in ds.units] == SIZES
    assert {str(u.size): u.num_samples for u in ds.units} == stats["unit_distribution"]
    for unit in ds.units:
        shards = unit.shards
        assert len(shards) == -(-unit.num_samples // SPS) == stats["shards"][str(unit.size)]
        for k, mm in enumerate(shards):
            assert isinstance(mm, np.memmap) and mm.mode == "r"
            assert mm.dtype == np.dtype("<u2") and mm.shape[1] == unit.size
            assert mm.shape[0] == (SPS if k < len(shards) - 1 else unit.num_samples - SPS * k)
        assert sum(mm.shape[0] for mm in shards) == unit.num_samples
    assert ds.unit(256).size == 256
    with pytest.raises(KeyError):
        ds.unit(300)


def test_every_sample_round_trips_to_its_source_tokens(ds, expected, built):
    index = read_jsonl(os.path.join(built["out"], "sample_index.jsonl"))
    assert len(expected) == len(ds)
    for sid, ids in enumerate(expected):
        got = ds.tokens(sid)
        assert got.tolist() == ids, sid
        record = ds.record(sid)
        assert len(record) == index[sid]["unit_size"] == min(s for s in SIZES if s >= len(ids))
        assert np.all(record[len(ids) :] == ds.pad_id)
        size, path, row = ds.locate(sid)
        assert (os.path.relpath(path, built["out"]).replace(os.sep, "/"), row) == (
            index[sid]["shard_path"],
            index[sid]["shard_row"],
        )
    assert ds.token_counts.tolist() == [len(x) for x in expected]
    with pytest.raises(IndexError):
        ds.tokens(len(ds))


def test_the_reader_takes_its_lookup_from_sample_index_idx(built, tmp_path):
    """mintdim.open places every sample from sample_index.idx, fixed-width columns memory-mapped: with
    sample_index.jsonl emptied, each sample is still where the jsonl put it, with its token count."""
    out = str(tmp_path / "out")
    shutil.copytree(built["out"], out)
    index = _index_rows(out)
    open(os.path.join(out, "sample_index.jsonl"), "w").close()
    ds = mintdim.open(out)
    for sid in range(len(ds)):
        size, path, row = ds.locate(sid)
        where = (size, os.path.relpath(path, out).replace(os.sep, "/"), row, len(ds.tokens(sid)))
        assert where == tuple(index[sid][k] for k in ("unit_size", "shard_path", "shard_row", "token_count"))
    cols = ds.sample_columns
    assert isinstance(cols.token_count, np.memmap)
    assert (cols.unit.dtype, cols.shard.dtype, cols.record.dtype) == (
        np.dtype("<i2"),
        np.dtype("<i4"),
        np.dtype("<i4"),
    )
    assert cols.file_names == [GSM8K] and cols.source_line.tolist() == [r["source_line"] for r in index]


def test_an_output_built_before_sample_index_idx_opens_from_its_jsonl_with_a_warning(built, tmp_path):
    """Without sample_index.idx (an output of an earlier MintDim), the reader reads sample_index.jsonl into
    the same columns, and says so once; every column equals the binary index's."""
    from mintdim.formats import sample_columns

    out = str(tmp_path / "out")
    shutil.copytree(built["out"], out)
    os.remove(os.path.join(out, "sample_index.idx"))
    with pytest.warns(
        UserWarning, match="has no sample_index.idx .* Rebuild the output to open it in constant"
    ):
        old = mintdim.open(out)
        old.tokens(0)
    new = mintdim.open(built["out"])
    for name in sample_columns.COLUMNS:
        a, b = getattr(old.sample_columns, name), getattr(new.sample_columns, name)
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), name
    assert [old.tokens(i).tolist() for i in range(0, len(old), 50)] == [
        new.tokens(i).tolist() for i in range(0, len(new), 50)
    ]


def _patch(path, at: int, data: bytes):
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)


def test_a_damaged_sample_index_idx_is_named_in_both_languages(built, tmp_path):
    """A header byte changed, a file cut short, a version this MintDim does not read: catalogue errors."""
    import struct

    out = str(tmp_path / "out")
    shutil.copytree(built["out"], out)
    path = os.path.join(out, "sample_index.idx")
    whole = open(path, "rb").read()
    size = len(whole)
    _patch(path, 30, b"\x07")  # inside the sample count
    with pytest.raises(mintdim.OutputValidationError) as err:
        mintdim.open(out).tokens(0)
    assert_not_finished(
        err.value,
        out,
        "sample_index.idx is damaged: its header's CRC-32 does not match the header's bytes. Rebuild the "
        "output (`mintdim verify` names every file that changed since the build)",
        "sample_index.idx bị hỏng: CRC-32 của header không khớp các byte của header. Hãy build lại "
        "output (`mintdim verify` chỉ ra mọi file đã thay đổi từ lúc build)",
    )
    with open(path, "wb") as f:
        f.write(whole[:-3])
    with pytest.raises(mintdim.OutputValidationError) as err:
        mintdim.open(out).tokens(0)
    assert_not_finished(
        err.value,
        out,
        f"sample_index.idx is cut short: {size - 3} bytes, its header and columns take {size}. Rebuild the "
        "output, or copy the file again if it was copied",
        f"sample_index.idx bị cắt cụt: {size - 3} byte, header và các cột của nó cần {size}. Hãy build lại "
        "output, hoặc chép lại file nếu nó được chép từ nơi khác",
    )
    with open(path, "wb") as f:
        f.write(whole[:8] + struct.pack("<I", 2) + whole[12:])
    with pytest.raises(mintdim.OutputValidationError) as err:
        mintdim.open(out).tokens(0)
    assert_not_finished(
        err.value,
        out,
        "sample_index.idx has format version 2, this MintDim reads version 1. Read the output with the "
        "MintDim that built it, or rebuild it with this one",
        "sample_index.idx có phiên bản định dạng 2, MintDim này đọc phiên bản 1. Hãy đọc output bằng "
        "MintDim đã build nó, hoặc build lại bằng MintDim này",
    )


def test_open_refuses_what_is_not_a_finished_output(tmp_path):
    with pytest.raises(mintdim.MintDimFileNotFoundError):
        mintdim.open(tmp_path / "missing")
    (tmp_path / "half" / "unit_8").mkdir(parents=True)
    (tmp_path / "half" / "unit_8" / "UNIT_BUILD_FAILED.md").write_text("failed")
    with pytest.raises(mintdim.OutputValidationError, match="failed"):
        mintdim.open(tmp_path / "half")


def _older(damage):
    """An output built before sample_index.idx (its reader reads sample_index.jsonl), then damaged."""

    def older(out):
        os.remove(os.path.join(out, "sample_index.idx"))
        damage(out)

    return older


def _index_rows(out):
    return read_jsonl(os.path.join(out, "sample_index.jsonl"))


def _write_index(out, rows):
    with open(os.path.join(out, "sample_index.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def _no_manifest_failed_build(out):
    os.remove(os.path.join(out, "manifest.json"))
    with open(os.path.join(out, "unit_128", "UNIT_BUILD_FAILED.md"), "w") as f:
        f.write("failed\n")


def _drop_last_shard(out):
    names = sorted(n for n in os.listdir(os.path.join(out, "unit_128")) if n.startswith("shard_"))
    os.remove(os.path.join(out, "unit_128", names[-1]))


def _grow_first_shard(out):
    with open(os.path.join(out, "unit_256", "shard_000000.bin"), "ab") as f:
        f.write(b"\0")


# (damage, what the user then does, problem in English, problem in Vietnamese); the built output's unit_128
# holds 3 shards (SPS 200)
DAMAGED = {
    "failed build": (
        _no_manifest_failed_build,
        lambda out: mintdim.open(out),
        "its build failed (see UNIT_BUILD_FAILED.md in its unit directories)",
        "lần build đã thất bại (xem UNIT_BUILD_FAILED.md trong các thư mục unit)",
    ),
    "shard deleted": (
        _drop_last_shard,
        lambda out: mintdim.open(out),
        "unit_128 should hold 3 shards, found 2",
        "unit_128 phải có 3 shard, thấy 2",
    ),
    "shard grown": (
        _grow_first_shard,
        lambda out: mintdim.open(out).unit(256).shards,
        "{out}/unit_256/shard_000000.bin is not a whole number of 256-token records",
        "{out}/unit_256/shard_000000.bin không phải số nguyên lần bản ghi 256 token",
    ),
    "index reordered": (
        _older(lambda out: _write_index(out, (lambda r: [r[1], r[0]] + r[2:])(_index_rows(out)))),
        lambda out: mintdim.open(out).tokens(5),
        "sample_index.jsonl line 1 holds sample_id 1",
        "sample_index.jsonl dòng 1 có sample_id 1",
    ),
    "index cut": (
        _older(lambda out: _write_index(out, _index_rows(out)[:-1])),
        lambda out: mintdim.open(out).tokens(5),
        "sample_index.jsonl lists 1318 samples, stats.json 1319",
        "sample_index.jsonl có 1318 sample, stats.json 1319",
    ),
    "index unit size": (
        _older(
            lambda out: _write_index(
                out, [dict(r, unit_size=300) if r["sample_id"] == 7 else r for r in _index_rows(out)]
            )
        ),
        lambda out: next(mintdim.open(out).batches(8)),
        "sample_index.jsonl names a unit size the manifest does not declare",
        "sample_index.jsonl có unit size không khai báo trong manifest",
    ),
    "index shard row": (
        _older(
            lambda out: _write_index(
                out,
                [
                    dict(r, shard_row=r["shard_row"] + 1) if r["sample_id"] == 7 else r
                    for r in _index_rows(out)
                ],
            )
        ),
        lambda out: mintdim.open(out).tokens(0),
        "sample_index.jsonl shard_row disagrees with the shard layout",
        "shard_row trong sample_index.jsonl không khớp bố cục shard",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_output_is_named_in_both_languages(built, tmp_path, case):
    """What mintdim.open and the dataset say about an output that is no longer as MintDim wrote it (the
    index cases: an output built before sample_index.idx, whose reader reads sample_index.jsonl)."""
    damage, use, en, vi = DAMAGED[case]
    out = str(tmp_path / "out")
    shutil.copytree(built["out"], out)
    damage(out)
    with pytest.raises(mintdim.OutputValidationError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        use(out)
    assert_not_finished(err.value, out, en.format(out=out), vi.format(out=out))


# ------------------------------------------------------------------------------------------------
# batches and the sampler
# ------------------------------------------------------------------------------------------------


def _unit_of(ds):
    return {sid: int(s) for sid, s in enumerate(ds.unit_sizes)}


def test_batches_are_one_unit_each_and_cover_every_sample_once(ds, expected):
    unit_of = _unit_of(ds)
    seen = []
    for batch in ds.batches(32, seed=3):
        assert len({unit_of[s] for s in batch.sample_ids.tolist()}) == 1
        assert batch.tokens.shape == (len(batch), batch.unit_size) and batch.tokens.dtype == ds.dtype
        for row, sid, n, mask in zip(batch.tokens, batch.sample_ids, batch.lengths, batch.mask):
            assert row[:n].tolist() == expected[sid] and int(mask.sum()) == n
        seen += batch.sample_ids.tolist()
    assert sorted(seen) == list(range(len(ds)))


def test_sampler_is_seeded_shuffled_per_epoch_and_drop_last(ds):
    a = [b.tolist() for b in ds.sampler(16, seed=1).iter_arrays()]
    b = [b.tolist() for b in ds.sampler(16, seed=1).iter_arrays()]
    c = [b.tolist() for b in ds.sampler(16, seed=1, epoch=1).iter_arrays()]
    assert a == b and a != c
    ordered = [b.tolist() for b in ds.sampler(16, shuffle=False).iter_arrays()]
    assert sum(ordered, []) == sum((ds.unit(s).sample_ids.tolist() for s in SIZES), [])
    assert sorted(sum(a, [])) == list(range(len(ds)))
    s = ds.sampler(16, seed=1, drop_last=True)
    kept = [x.tolist() for x in s.iter_arrays()]
    assert all(len(x) == 16 for x in kept) and len(kept) == len(s)
    assert len(set(sum(kept, []))) == sum(u.num_samples // 16 * 16 for u in ds.units)
    # records are shuffled inside shards, and shards are visited in a shuffled order
    unit = ds.unit(256)
    order = [sid for x in a for sid in x if sid in set(unit.sample_ids.tolist())]
    assert order != sorted(order)


@pytest.mark.parametrize("world", [2, 3])
def test_rank_split_gives_disjoint_equal_shares(ds, world):
    whole = ds.sampler(8, seed=5)
    everything = [x.tolist() for x in whole.iter_arrays()]
    shares = [
        [x.tolist() for x in ds.sampler(8, seed=5, rank=r, world_size=world).iter_arrays()]
        for r in range(world)
    ]
    flat = [sum(s, []) for s in shares]
    for i in range(world):
        for j in range(i + 1, world):
            assert not set(flat[i]) & set(flat[j])
    assert len({len(s) for s in shares}) == 1  # even: every rank the same number of batches
    assert len(shares[0]) == len(ds.sampler(8, seed=5, rank=0, world_size=world)) == len(everything) // world
    kept = everything[: len(everything) - len(everything) % world]
    assert sorted(sum(shares, []), key=lambda b: b[0]) == sorted(kept, key=lambda b: b[0])
    uneven = [
        sum(
            (x.tolist() for x in ds.sampler(8, seed=5, rank=r, world_size=world, even=False).iter_arrays()),
            [],
        )
        for r in range(world)
    ]
    assert sorted(sum(uneven, [])) == list(range(len(ds)))
    with pytest.raises(ValueError):
        ds.sampler(8, rank=world, world_size=world)


# ------------------------------------------------------------------------------------------------
# PyTorch
# ------------------------------------------------------------------------------------------------


def test_importing_mintdim_does_not_import_torch_or_matplotlib():
    code = (
        "import sys, mintdim; ds = mintdim.open; "
        "print(any(m in sys.modules for m in ('torch', 'matplotlib')))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "False", res.stderr


def test_the_build_and_its_light_jobs_do_not_import_numpy():
    """`mintdim build`, Snakemake's process (run.dag) and the validate and finalize jobs do not
    need numpy; its import (~0.15 s CPU) was paid by each of them, one after the other, in every build.
    mintdim.verify still works, imported on first use."""
    code = (
        "import sys, mintdim, mintdim.cli, mintdim.run.runner, mintdim.run.dag, mintdim.stages.validate, "
        "mintdim.stages.finalize; print('numpy' in sys.modules); print(callable(mintdim.verify), "
        "'numpy' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.split() == ["False", "True", "True"], res.stderr


def test_torch_loader_covers_each_rank_with_its_own_samples(ds, expected):
    torch = pytest.importorskip("torch")
    seen = []
    for rank in range(2):
        loader = ds.torch_loader(32, seed=2, rank=rank, world_size=2)
        loader.batch_sampler.set_epoch(1)
        mine = []
        for batch in loader:
            assert batch["input_ids"].dtype == torch.int64 and batch["attention_mask"].dtype == torch.bool
            assert batch["input_ids"].shape[1] in SIZES
            for row, n, sid in zip(batch["input_ids"], batch["lengths"], batch["sample_ids"]):
                assert row[:n].tolist() == expected[int(sid)] and int(row[n:].abs().sum()) == 0
            mine += batch["sample_ids"].tolist()
        assert len(loader) == len(ds.sampler(32, seed=2, rank=rank, world_size=2))
        assert not set(mine) & set(seen)
        seen += mine
    item = ds.torch_dataset()[5]
    assert item["input_ids"][: item["length"]].tolist() == expected[5]
    from mintdim.reading.torch_data import TorchBucketSampler

    assert isinstance(ds.torch_sampler(8), torch.utils.data.Sampler) and isinstance(
        ds.torch_sampler(8), TorchBucketSampler
    )


def test_torch_loader_with_worker_processes(ds, expected):
    pytest.importorskip("torch")
    loader = ds.torch_loader(64, seed=0, num_workers=2, units=[512])
    ids = []
    for batch in loader:
        for row, n, sid in zip(batch["input_ids"], batch["lengths"], batch["sample_ids"]):
            assert row[:n].tolist() == expected[int(sid)]
        ids += batch["sample_ids"].tolist()
    assert sorted(ids) == ds.unit(512).sample_ids.tolist()
    import pickle

    ds.tokens(3)  # memmaps open: a pickled copy (spawned workers) reads the same samples
    clone = pickle.loads(pickle.dumps(ds))
    assert [clone.tokens(i).tolist() for i in range(len(ds))] == expected


# ------------------------------------------------------------------------------------------------
# mintdim inspect, the report, progress
# ------------------------------------------------------------------------------------------------


def test_inspect_prints_counts_padding_and_histogram(built, expected):
    res = run_cli(built["ws"], "inspect", "out")
    assert res.returncode == 0, res.stderr
    text = res.stdout
    lengths = np.array([len(x) for x in expected])
    units = np.array([min(s for s in SIZES if s >= n) for n in lengths])
    overall = 1 - lengths.sum() / units.sum()
    assert "samples     1,319" in text and f"tokens      {lengths.sum():,}" in text
    assert f"padding {100 * overall:.1f}%" in text and "uint16" in text
    assert "duplicates  0 groups, 0 samples" in text and "UNK         0 samples, 0 tokens" in text
    for s in SIZES:
        n = int((units == s).sum())
        pad = 1 - lengths[units == s].sum() / (n * s)
        row = next(line.split() for line in text.splitlines() if line.split()[:1] == [str(s)])
        assert row[1] == f"{n:,}" and row[5] == f"{100 * pad:.1f}%"
        assert f"--- unit {s}" in text
    bars = [line for line in text.splitlines() if " | " in line]
    assert sum(int(line.rsplit(None, 1)[1].replace(",", "")) for line in bars) == 1319
    js = json.loads(run_cli(built["ws"], "inspect", "out", "--json").stdout)
    assert js["samples"] == 1319 and abs(js["padding_ratio"] - overall) < 1e-12
    assert [u["samples"] for u in js["units"]] == [int((units == s).sum()) for s in SIZES]


def test_inspect_exit_codes(tmp_path):
    res = run_cli(tmp_path, "inspect", "nowhere")
    assert (
        res.returncode == 1
        and res.stderr.startswith("MintDimFileNotFoundError")
        and "Traceback" not in res.stderr
    )
    assert run_cli(tmp_path, "inspect").returncode == 2


def test_report_is_opt_in_and_target_reports_writes_it(built):
    """A plain build runs no report job and makes no report directory (it only lengthened
    the build). `mintdim build --report` on the finished build, or the target `reports` (`snakemake
    --cores 2 reports`), writes the same table and plot from the finished output, and `snakemake
    --report report.html reports` gathers them. The output itself is untouched."""
    res = built["result"]
    build_root = os.path.join(built["ws"], res.work_dir, res.build_id)
    root = os.path.join(build_root, "report", "o0")
    assert not os.path.exists(os.path.join(build_root, "report"))
    assert not [n for n in os.listdir(os.path.join(build_root, "benchmarks")) if n.startswith("report")]
    before = tree_bytes(built["out"])
    with open(built["ws"] / "cfg.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(config(), f)
    # the finished build's report
    res_cli = run_cli(built["ws"], "build", "cfg.yaml", "--cores", "2", "--report")
    assert res_cli.returncode == 0, res_cli.stderr[-2000:]
    assert (
        f"[unit-build] report out: {os.path.join(res.work_dir, res.build_id, 'report', 'o0')} (stats.html"
        in res_cli.stderr
    )
    assert (
        "[unit-build] already built (same config and inputs; report written) out: 1319 samples"
        in res_cli.stdout
    )
    res_again = run_cli(built["ws"], "build", "cfg.yaml", "--cores", "2", "--report")  # report there too
    assert (
        "[unit-build] already built (same config and inputs; nothing to do) out: 1319 samples"
        in res_again.stdout
    )
    by_cli = tree_bytes(root)
    assert {"stats.html", "stats.txt"} <= set(by_cli)
    shutil.rmtree(os.path.join(build_root, "report"))
    cfg = os.path.join(build_root, "config.yaml")
    snakemake = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        str(built["ws"]),
        "--configfile",
        cfg,
        "--workflow-profile",
        "none",
    ]
    run = subprocess.run(
        snakemake + ["--cores", "2", "reports"], cwd=str(built["ws"]), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "rule report:" in run.stderr and "rule tokenize:" not in run.stderr  # only the report job ran
    assert tree_bytes(root) == by_cli  # the same files either way
    png = os.path.join(root, "lengths.png")
    table = open(os.path.join(root, "stats.html"), encoding="utf-8").read()
    assert "<table>" in table and "1,319" in table and "padding" in table
    if importlib.util.find_spec("matplotlib") is None:
        assert not os.path.exists(png)
    else:
        with open(png, "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width >= 600 and height >= 400
    run = subprocess.run(
        snakemake + ["--report", "report.html", "reports"],
        cwd=str(built["ws"]),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    html = open(built["ws"] / "report.html", encoding="utf-8").read()
    assert "stats.html" in html
    assert ("lengths.png" in html) == os.path.exists(png)
    assert tree_bytes(built["out"]) == before


def test_progress_is_silent_at_first_then_one_line_per_period():
    now = [0.0]
    lines = []
    p = Progress(lines.append, "[unit-build] write unit 192", 1000, clock=lambda: now[0])
    for t, done in [(1, 100), (4.9, 200), (5.0, 250), (6, 300), (9.9, 400), (10.5, 500)]:
        now[0] = t
        p.update(done, nbytes=done * 192 * 2)
    assert len(lines) == 2
    assert lines[0].startswith("[unit-build] write unit 192: 250/1,000 records (25%), ")
    assert "MB/s" in lines[0] and lines[0].endswith("ETA 15 s")
    assert lines[1].startswith("[unit-build] write unit 192: 500/1,000 records (50%)")
    q = Progress(lines.append, "x", 10, "samples indexed", clock=lambda: now[0])
    now[0] += 60
    q.update(6)
    assert lines[-1] == "x: 6/10 samples indexed (60%), 0.1 samples indexed/s, ETA 40 s"


# ------------------------------------------------------------------------------------------------
# the cluster path, end to end
# ------------------------------------------------------------------------------------------------


def test_local_cluster_profile_builds_the_same_bytes(built, tmp_path):
    pytest.importorskip("snakemake_executor_plugin_cluster_generic")
    with open(tmp_path / "cfg.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(config(), f)
    res = run_cli(tmp_path, "build", "cfg.yaml", "--profile", "local-cluster", "--cores", "2")
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = os.listdir(tmp_path / ".snakemake" / "local-cluster")
    codes = [
        open(tmp_path / ".snakemake" / "local-cluster" / n).read().strip() for n in jobs if n.endswith(".rc")
    ]
    assert codes and set(codes) == {"0"}  # jobs went through submit.sh and ended well
    assert tree_bytes(tmp_path / "out") == tree_bytes(built["out"])


def test_report_stage_without_matplotlib_writes_the_table_only(built, tmp_path, monkeypatch):
    from mintdim.stages.report import write_report

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    done = tmp_path / "done.json"
    done.write_text(json.dumps({"output": "out", "path": built["out"]}))
    lines = []
    summary = write_report(str(done), str(tmp_path / "rep"), log=lines.append)
    assert sorted(os.listdir(tmp_path / "rep")) == ["stats.html", "stats.txt"]
    assert "no plot: matplotlib not installed" in lines[0] and summary["samples"] == 1319
