"""Packed rows (units.pack): the plan, the files, the reader, verify, and a proof of the boundaries.

The proof: a tiny random causal transformer (numpy, float64) gives every sample the same
per-token losses when it runs inside its packed row, with a block-diagonal causal mask built
from the stored boundaries (cu_XXXXXX.bin) and the reader's position_ids, as when it runs
alone; the samples' tokens and trained targets for the lone runs come from the tokenizer
library and the template, not from the output.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest
import sentencepiece as spm
from conftest import (
    SP_MODEL,
    assert_not_finished,
    basic_config,
    build_in,
    build_shipped,
    gsm8k_rows,
    read_json,
    read_jsonl,
    run_cli,
    tree_bytes,
    write_jsonl,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from stagekit import drive

import mintdim
import mintdim.formats.output
from mintdim import errors as E
from mintdim.config import resolve
from mintdim.formats import shards as fs
from mintdim.reading.packed_reader import IGNORE, PackedDataset
from mintdim.reading.verify import verify
from mintdim.units import packing

ROW = 384


def packed_config(files, *, row=ROW, overflow=None, sps=7, train_on=None, out="out", **kw) -> dict:
    cfg = basic_config(files, sps=[sps], out=out, **kw)
    cfg["units"] = {"pack": [row], "build_batch": [32], **({"overflow": [overflow]} if overflow else {})}
    if train_on:
        cfg["source"]["train_on"] = train_on
    return cfg


def rows_file(tmp_path, n=120, start=0, long_every=0):
    rows = gsm8k_rows(start, n)
    if long_every:  # some samples longer than a row
        for i in range(0, n, long_every):
            rows[i] = dict(rows[i], response=rows[i]["response"] * 20)
    return write_jsonl(tmp_path / "pairs.jsonl", rows), rows


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(model_file=SP_MODEL)


@pytest.fixture(scope="module")
def masked(tmp_path_factory):
    """A packed build with loss masks (train_on: response) and truncated samples."""
    tmp = tmp_path_factory.mktemp("masked")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        path, rows = rows_file(tmp, 150, long_every=23)
        drive(packed_config([path], overflow="truncate", train_on=[["response"]]))
    finally:
        os.chdir(old)
    return str(tmp / "out"), rows


# --- the proof: a tiny causal transformer ---------------------------------------------------------


class TinyCausalLM:
    """2 layers, 2 heads, d=16, learned positions, pre-norm, float64. forward(tokens, positions,
    allowed) -> logits; allowed[i, j]: may slot i attend to slot j."""

    def __init__(self, vocab: int, max_pos: int, d: int = 16, heads: int = 2, layers: int = 2, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.h = heads
        self.emb = rng.normal(0, 1, (vocab, d))
        self.pos = rng.normal(0, 1, (max_pos, d))
        self.layers = [
            {k: rng.normal(0, d**-0.5, (d, d)) for k in ("q", "k", "v", "o")}
            | {"w1": rng.normal(0, d**-0.5, (d, 2 * d)), "w2": rng.normal(0, (2 * d) ** -0.5, (2 * d, d))}
            for _ in range(layers)
        ]
        self.out = rng.normal(0, d**-0.5, (d, vocab))

    @staticmethod
    def _norm(x):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)

    def forward(self, tokens, positions, allowed):
        x = self.emb[tokens] + self.pos[positions]
        T, d = x.shape
        hd = d // self.h
        for p in self.layers:
            a = self._norm(x)
            q, k, v = ((a @ p[n]).reshape(T, self.h, hd).transpose(1, 0, 2) for n in ("q", "k", "v"))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
            s = np.where(allowed[None], s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            x = x + (s @ v).transpose(1, 0, 2).reshape(T, d) @ p["o"]
            x = x + np.maximum(self._norm(x) @ p["w1"], 0) @ p["w2"]
        return self._norm(x) @ self.out

    @staticmethod
    def token_losses(logits, targets):
        """-log p(targets[t] | slot t) for every slot."""
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        return -logp[np.arange(len(targets)), targets]


def lone_expectation(row: dict, sp, trained: bool):
    """Tokens of one sample from the tokenizer library, and which of them are targets: every
    token but the first, and (train_on: response) only those starting inside the response."""
    text = row["prompt"] + "\n" + row["response"]
    got = sp.encode_as_offset_mapping(text)
    ids = list(got["ids"])
    start = len(row["prompt"]) + 1
    target = [t > 0 and (not trained or start <= off[0] < len(text)) for t, off in enumerate(got["offsets"])]
    return ids, target


@pytest.mark.parametrize("trained", [False, True])
def test_losses_in_packed_rows_equal_each_sample_alone(tmp_path, monkeypatch, sp, trained):
    monkeypatch.chdir(tmp_path)
    path, rows = rows_file(tmp_path, 90)
    drive(packed_config([path], train_on=[["response"]] if trained else None))
    ds = mintdim.open("out")
    assert isinstance(ds, PackedDataset) and ds.num_rows < 90
    model = TinyCausalLM(ds.vocab_size, ROW)
    packed_losses, supervised_packed = {}, 0
    for batch in ds.batches(4, shuffle=False):
        for b, r in enumerate(batch.row_ids.tolist()):
            cu = ds.row_boundaries(r).astype(np.int64)  # the stored boundaries
            seg = np.full(ROW, -1)
            for j in range(len(cu) - 1):
                seg[cu[j] : cu[j + 1]] = j
            causal = np.tril(np.ones((ROW, ROW), dtype=bool))
            allowed = causal & (seg[:, None] == seg[None, :]) & (seg[:, None] >= 0)
            allowed |= np.eye(ROW, dtype=bool)  # padding attends to itself only (never read)
            logits = model.forward(batch.tokens[b].astype(np.int64), batch.position_ids[b], allowed)
            labels = batch.labels[b]
            supervised_packed += int(np.count_nonzero(labels != IGNORE))
            nxt = np.concatenate((labels[1:], [IGNORE]))  # slot t predicts the label at t + 1
            losses = model.token_losses(logits, np.where(nxt == IGNORE, 0, nxt))
            for j, sid in enumerate(ds.row_sample_ids(r).tolist()):
                a, e = int(cu[j]), int(cu[j + 1])
                packed_losses[sid] = {t - a: losses[t] for t in range(a, e) if nxt[t] != IGNORE}
                if e < int(cu[-1]):  # the next sample's first token is never a target of this one
                    assert labels[e] == IGNORE
    assert sorted(packed_losses) == list(range(len(rows)))
    supervised_alone, worst = 0, 0.0
    for sid, row in enumerate(rows):
        ids, target = lone_expectation(row, sp, trained)
        assert ds.tokens(sid).tolist() == ids
        n = len(ids)
        logits = model.forward(np.asarray(ids), np.arange(n), np.tril(np.ones((n, n), dtype=bool)))
        losses = model.token_losses(logits, np.asarray(ids[1:] + [0]))
        alone = {t: losses[t] for t in range(n - 1) if target[t + 1]}
        supervised_alone += len(alone)
        assert sorted(alone) == sorted(packed_losses[sid]), sid
        if alone:
            worst = max(worst, max(abs(alone[t] - packed_losses[sid][t]) for t in alone))
    assert worst <= 1e-9
    assert supervised_alone == supervised_packed > 0


# --- the plan: properties and the reference algorithm --------------------------------------------


def reference_bfd(lengths, C):
    """Best-fit decreasing one sample at a time (longest first, ties by id): row loads."""
    loads = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        fits = [r for r in range(len(loads)) if loads[r] + lengths[i] <= C]
        if fits:
            best = min(fits, key=lambda r: (C - loads[r], r))
            loads[best] += lengths[i]
        else:
            loads.append(lengths[i])
    return sorted(loads)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 64).flatmap(
        lambda C: st.tuples(
            st.just(C), st.lists(st.integers(0, C + 10), max_size=120), st.sampled_from(["drop", "truncate"])
        )
    )
)
def test_plan_properties(case):
    C, lengths, policy = case
    lengths = np.asarray(lengths, dtype=np.int64)
    p = packing.plan(lengths, C, policy)
    over = lengths > C
    assert np.array_equal(p.status != 0, over)
    assert np.array_equal(p.kept, np.where(over, 0 if policy == "drop" else C, lengths))
    live = np.flatnonzero(p.rows >= 0)
    assert np.array_equal(live, np.flatnonzero(~over) if policy == "drop" else np.arange(len(lengths)))
    # every sample exactly once, rows never over the length, contiguous from slot 0 in id order
    per_row, order = packing.row_boundaries(p.rows, p.offsets, p.kept, p.n_rows)
    assert sorted(order.tolist()) == live.tolist() and np.all(per_row > 0)
    loads = np.bincount(p.rows[live], weights=p.kept[live], minlength=p.n_rows).astype(np.int64)
    assert np.all(loads <= C)
    first = np.concatenate(([0], np.cumsum(per_row)))
    for r in range(p.n_rows):
        ids = order[first[r] : first[r + 1]]
        assert np.all(np.diff(ids) > 0)
        assert np.array_equal(p.offsets[ids], np.concatenate(([0], np.cumsum(p.kept[ids])[:-1])))
    # boundaries as stored: each row's cu ends at its tokens, and the pointers find every row
    block = fs.boundaries_block(per_row, (p.offsets + p.kept)[order])
    ptr, cu = block[: p.n_rows + 1].astype(np.int64), block[p.n_rows + 1 :]
    for r in range(p.n_rows):
        row_cu = fs.row_cu(ptr, cu, r)
        assert row_cu[0] == 0 and row_cu[-1] == loads[r] and np.all(np.diff(row_cu) >= 0)
        assert np.diff(row_cu).sum() == loads[r]
    # rows numbered by their smallest sample id; exactly best-fit decreasing's rows
    smallest = [order[first[r] : first[r + 1]].min() for r in range(p.n_rows)]
    assert smallest == sorted(smallest)
    assert sorted(loads.tolist()) == reference_bfd(p.kept[live].tolist(), C)
    again = packing.plan(lengths, C, policy)
    assert np.array_equal(again.rows, p.rows) and np.array_equal(again.offsets, p.offsets)


def test_plan_meets_the_targets_on_a_realistic_distribution():
    """Lognormal lengths like ShareGPT's (the real file: benchmarks/pack_plan.py, docs/packing.md)."""
    rng = np.random.default_rng(1)
    lengths = np.round(rng.lognormal(5.3, 1.1, 200_000)).astype(np.int64) + 1
    for C in (4096, 8192):
        p = packing.plan(lengths, C, "truncate")
        assert p.efficiency >= 0.995
        assert p.n_rows <= p.lower_bound * 1.001


# --- the files, overflow, determinism -------------------------------------------------------------


def test_files_layout_manifest_and_index(masked, sp):
    out, rows = masked
    m, stats = read_json(f"{out}/manifest.json"), read_json(f"{out}/stats.json")
    assert (
        m["units"]["layout"] == "packed" and m["units"]["row_length"] == ROW and m["units"]["sizes"] == [ROW]
    )
    assert m["units"]["overflow"] == "truncate" and m["loss_mask"]["record_bytes"] == "ceil(row_length / 8)"
    index = read_jsonl(f"{out}/sample_index.jsonl")
    truncated = [r["sample_id"] for r in index if r.get("overflow") == "truncated"]
    assert truncated == list(range(0, 150, 23)) == stats["packing"]["overflow"]["truncated_ids"]
    dtype = np.dtype(m["token_dtype"]).newbyteorder("<")
    n_rows = stats["packing"]["rows"]
    names = sorted(os.listdir(f"{out}/unit_{ROW}"))
    shards = -(-n_rows // 7)
    assert names == sorted(
        [fs.shard_name(k) for k in range(shards)]
        + [fs.cu_name(k) for k in range(shards)]
        + [fs.mask_name(k) for k in range(shards)]
    )
    for r in index:  # each sample's tokens at shard_path / shard_row / row_offset: the library's encode
        rec = np.fromfile(f"{out}/{r['shard_path']}", dtype=dtype).reshape(-1, ROW)[r["shard_row"]]
        text = rows[r["sample_id"]]["prompt"] + "\n" + rows[r["sample_id"]]["response"]
        ids = sp.encode(text)
        assert rec[r["row_offset"] : r["row_offset"] + r["token_count"]].tolist() == ids[:ROW]
        assert r["token_count"] == min(len(ids), ROW)
        if r["sample_id"] in truncated:
            assert r["source_token_count"] == len(ids) > ROW
    assert stats["packing"]["efficiency"] == stats["total_tokens"] / (n_rows * ROW)
    assert stats["padding"]["pad_tokens"] == n_rows * ROW - stats["total_tokens"]
    assert verify(out, source=True, all=True, root="/").ok


def test_overflow_error_drop_and_indexes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, rows = rows_file(tmp_path, 60, long_every=11)
    with pytest.raises(E.UnitOverflowError) as err:
        drive(packed_config([path], out="o_err"))
    assert "pairs.jsonl:1" in str(err.value) and f"max_unit_size: {ROW}" in str(err.value)
    drive(packed_config([path], overflow="drop", out="o_drop"))
    index = read_jsonl("o_drop/sample_index.jsonl")
    dropped = [r for r in index if r.get("overflow") == "dropped"]
    assert [r["sample_id"] for r in dropped] == list(range(0, 60, 11))
    assert all(
        r["shard_path"] is None
        and r["row_offset"] is None
        and r["token_count"] == 0
        and r["source_token_count"] > ROW
        for r in dropped
    )
    stats = read_json("o_drop/stats.json")
    assert stats["packing"]["overflow"]["dropped"] == len(dropped) and stats["total_samples"] == 60
    assert stats["unit_distribution"] == {str(ROW): 60 - len(dropped)}
    ds = mintdim.open("o_drop")
    with pytest.raises(ValueError, match="dropped"):
        ds.tokens(0)
    assert sum(len(ds.row_sample_ids(r)) for r in range(ds.num_rows)) == 60 - len(dropped)
    assert verify("o_drop", source=True, all=True).ok
    from mintdim.reading.summary import format_summary, summarize
    from mintdim.stages.report import render_html

    text = format_summary(summarize("o_drop"))
    assert f"{len(dropped)} dropped" in text and "efficiency" in text
    assert f"overflow drop: {len(dropped)} dropped" in render_html(summarize("o_drop"))


def test_every_sample_dropped_gives_an_empty_but_valid_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, _rows = rows_file(tmp_path, 5, long_every=1)
    drive(packed_config([path], overflow="drop"))
    assert sorted(os.listdir(f"out/unit_{ROW}")) == ["EMPTY_UNIT.md"]
    stats = read_json("out/stats.json")
    assert stats["packing"]["rows"] == 0 and stats["packing"]["overflow"]["dropped_ids"] == [0, 1, 2, 3, 4]
    ds = mintdim.open("out")
    assert ds.num_rows == 0 and list(ds.batches(2)) == []
    assert verify("out").ok


def test_same_bytes_whatever_the_chunking_and_cores(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, _rows = rows_file(tmp_path, 200, long_every=37)
    files = [path, shutil.copy(path, str(tmp_path / "copy.jsonl"))]  # a path once per output
    drive(packed_config(files, overflow="truncate", train_on=[["response"]], out="a"))
    drive(
        packed_config(
            files,
            overflow="truncate",
            train_on=[["response"]],
            out="b",
            chunk_mb=4 * 1024 / 2**20,
            work_dir=".w2",
        )
    )
    assert tree_bytes("a") == tree_bytes("b")
    assert verify("a").ok
    shutil.rmtree(".mintdim")
    # the Snakemake workflow, two cores: the write rule hands the plan table over
    result = build_in(
        tmp_path, packed_config(files, overflow="truncate", train_on=[["response"]], out="c"), cores=2
    )
    assert result.outputs[0].stats["packing"]["rows"] == read_json("a/stats.json")["packing"]["rows"]
    assert tree_bytes("a") == tree_bytes("c")


def test_conversations_pack_too(tmp_path, monkeypatch):
    """The shipped conversation example (config/chat.yaml: chat template, loss on assistant turns)
    with packed rows: masks, per-role counts, verify."""
    import yaml
    from conftest import REPO

    monkeypatch.chdir(tmp_path)
    os.symlink(os.path.join(REPO, "data"), "data")
    with open(os.path.join(REPO, "config", "chat.yaml"), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg["units"] = {"pack": [2048], "build_batch": [256]}
    cfg["output"] = {"dir": "chat_out", "samples_per_shard": [16]}
    drive(cfg)
    stats = read_json("chat_out/stats.json")
    assert stats["packing"]["rows"] == stats["packing"]["lower_bound_rows"]
    assert (
        stats["trained_tokens_by_role"] == {"assistant": stats["trained_tokens"]}
        and stats["trained_tokens"] > 0
    )
    ds = mintdim.open("chat_out")
    batch = ds.gather_rows(range(ds.num_rows))
    assert int((batch.labels != IGNORE).sum()) == sum(
        int(ds.loss_mask(s)[1:].sum()) for s in range(ds.num_samples)
    )
    assert verify("chat_out", source=True, all=True).ok


# --- the reader -----------------------------------------------------------------------------------


def test_reader_batches_positions_labels_and_boundaries(masked):
    out, rows = masked
    ds = mintdim.open(out)
    seen = []
    for batch in ds.batches(3, seed=5, rank=1, world_size=2):
        assert batch.tokens.shape == (len(batch.row_ids), ROW)
        flat = batch.flat()
        T = int(batch.cu_seqlens[-1])
        assert len(flat["input_ids"]) == T == int(batch.row_lengths.sum())
        assert batch.cu_seqlens.dtype == np.int32 and batch.max_seqlen == int(batch.seq_lengths.max())
        for j, sid in enumerate(batch.sample_ids.tolist()):
            a, e = int(batch.cu_seqlens[j]), int(batch.cu_seqlens[j + 1])
            assert flat["input_ids"][a:e].tolist() == ds.tokens(sid).tolist()
            assert flat["position_ids"][a:e].tolist() == list(range(e - a))
            assert flat["labels"][a] == IGNORE  # never predicted from the previous sample
            trained = ds.loss_mask(sid)
            want = np.where(trained, ds.tokens(sid).astype(np.int64), IGNORE)
            want[0] = IGNORE
            assert flat["labels"][a:e].tolist() == want.tolist()
        assert np.all(batch.labels[batch.segment_ids < 0] == IGNORE)
        seen += batch.sample_ids.tolist()
    assert len(seen) == len(set(seen))
    other = [s for b in ds.batches(3, seed=5, rank=0, world_size=2) for s in b.sample_ids.tolist()]
    assert not set(seen) & set(other)


def test_torch_adapter_without_torch_is_a_clear_error(masked):
    try:
        import torch  # noqa: F401

        pytest.skip("torch is installed")
    except ModuleNotFoundError:
        pass
    with pytest.raises(E.MissingExtraError, match=r"mintdim\[torch\]"):
        mintdim.open(masked[0]).torch_loader(2)


def test_torch_adapter_gives_flattening_batches(masked):
    torch = pytest.importorskip("torch")
    out, _rows = masked
    ds = mintdim.open(out)
    batch = next(iter(ds.torch_loader(2, shuffle=False)))
    ref = ds.gather_rows([0, 1])
    assert batch["input_ids"].shape == (1, int(ref.cu_seqlens[-1]))
    assert (
        torch.equal(batch["cu_seq_lens_q"], torch.from_numpy(ref.cu_seqlens))
        and batch["max_length_k"] == ref.max_seqlen
    )
    assert batch["labels"][0, 0].item() == -100


def test_suggest_units_shows_packed_padding_beside_the_buckets(masked, tmp_path, monkeypatch):
    from mintdim.reading.suggest import suggest_units

    out, rows = masked
    [a] = suggest_units(out, k=2, pack=(ROW, 4 * ROW))
    lengths = mintdim.formats.output.token_counts(out, source=True)
    assert a.current_sizes is None and a.samples == len(rows) and lengths.max() > ROW  # whole lengths
    p = packing.plan(lengths, 4 * ROW, "drop")
    assert a.packed[1] == {
        "row_length": 4 * ROW,
        "rows": p.n_rows,
        "lower_bound_rows": p.lower_bound,
        "total_slots": p.slots,
        "pad_tokens": p.slots - p.tokens,
        "padding_ratio": 1 - p.efficiency,
        "efficiency": p.efficiency,
        "longer_than_row": int((lengths > 4 * ROW).sum()),
    }
    assert a.packed[0]["longer_than_row"] == int((lengths > ROW).sum()) > 0
    monkeypatch.chdir(tmp_path)
    path, _ = rows_file(tmp_path, 30)
    [c] = suggest_units(packed_config([path], overflow="drop"), k=2, pack=(ROW,))  # a packed config
    assert c.samples == 30 and c.packed[0]["row_length"] == ROW


# --- verify catches what breaks the packing --------------------------------------------------------


def _corrupt_cu(out):
    path = f"{out}/unit_{ROW}/{fs.cu_name(0)}"
    data = np.fromfile(path, dtype="<i4")
    data[-1] -= 1
    data.tofile(path)
    return "cu_000000.bin"


def _corrupt_offset(out):
    index = read_jsonl(f"{out}/sample_index.jsonl")
    index[2]["row_offset"] += 1
    with open(f"{out}/sample_index.jsonl", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in index))
    return "row_offset"


def _corrupt_pad(out):
    index = read_jsonl(f"{out}/sample_index.jsonl")
    m = read_json(f"{out}/manifest.json")
    dtype = np.dtype(m["token_dtype"]).newbyteorder("<")
    data = np.fromfile(f"{out}/unit_{ROW}/shard_000000.bin", dtype=dtype).reshape(-1, ROW)
    used = np.zeros(len(data), dtype=np.int64)
    for r in index:
        if r["shard_path"] and r["shard_path"].endswith("shard_000000.bin"):
            used[r["shard_row"]] = max(used[r["shard_row"]], r["row_offset"] + r["token_count"])
    row = int(np.flatnonzero(used < ROW)[0])
    data[row, ROW - 1] = 5
    data.tofile(f"{out}/unit_{ROW}/shard_000000.bin")
    return "not pad_id"


def _corrupt_mask(out):
    path = f"{out}/unit_{ROW}/{fs.mask_name(0)}"
    data = np.fromfile(path, dtype=np.uint8)
    data[0] ^= 0xFF
    data.tofile(path)
    return "trained_tokens"


def _corrupt_stats(out):
    stats = read_json(f"{out}/stats.json")
    stats["packing"]["overflow"]["truncated_ids"] = []
    with open(f"{out}/stats.json", "w") as f:
        json.dump(stats, f)
    return "truncated_ids"


@pytest.mark.parametrize(
    "corrupt", [_corrupt_cu, _corrupt_offset, _corrupt_pad, _corrupt_mask, _corrupt_stats]
)
def test_verify_catches_packing_corruption(masked, tmp_path, corrupt):
    out = str(tmp_path / "copy")
    shutil.copytree(masked[0], out)
    needle = corrupt(out)
    report = verify(out)
    assert not report.ok and any(needle in str(p) for p in report.problems), [str(p) for p in report.problems]


def _says(use, out, en, vi):
    with pytest.raises(E.OutputValidationError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an output without sample_index.idx is read with a warning
        use(out)
    assert_not_finished(err.value, out, en, vi)


def test_reader_names_a_damaged_packed_output_in_both_languages(masked, tmp_path):
    """What mintdim.open and the packed dataset say about rows that are no longer as MintDim wrote them
    (the index cases: an output built before sample_index.idx, whose reader reads sample_index.jsonl)."""

    def damaged(name):
        out = str(tmp_path / name)
        shutil.copytree(masked[0], out)
        return out

    def write_index(out, rows):
        """An output built before sample_index.idx (its reader reads sample_index.jsonl), then damaged."""
        os.remove(os.path.join(out, "sample_index.idx"))
        with open(os.path.join(out, "sample_index.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)

    index = read_jsonl(os.path.join(masked[0], "sample_index.jsonl"))
    n = read_json(os.path.join(masked[0], "stats.json"))["total_samples"]
    out = damaged("shard")
    names = fs.list_shards(os.path.join(out, fs.unit_dir(ROW)))
    os.remove(os.path.join(out, fs.unit_dir(ROW), names[-1]))
    _says(
        mintdim.open,
        out,
        f"unit_{ROW} should hold {len(names)} shards, found {len(names) - 1}",
        f"unit_{ROW} phải có {len(names)} shard, thấy {len(names) - 1}",
    )
    out = damaged("order")
    write_index(out, [index[1], index[0]] + index[2:])
    _says(
        lambda o: mintdim.open(o).tokens(0),
        out,
        "sample_index.jsonl line 1 holds sample_id 1",
        "sample_index.jsonl dòng 1 có sample_id 1",
    )
    out = damaged("cut")
    write_index(out, index[:-1])
    _says(
        lambda o: mintdim.open(o).loss_mask(3),
        out,
        f"sample_index.jsonl lists {n - 1} samples, stats.json {n}",
        f"sample_index.jsonl có {n - 1} sample, stats.json {n}",
    )
    out = damaged("count")
    write_index(out, [dict(r, token_count=r["token_count"] + 1) if r["sample_id"] == 4 else r for r in index])
    row = mintdim.open(out).position(4)[0]
    _says(
        lambda o: mintdim.open(o).gather_rows([row]),
        out,
        f"row {row}: its boundaries disagree with sample_index.jsonl",
        f"hàng {row}: ranh giới không khớp sample_index.jsonl",
    )


def test_reader_names_an_output_of_unit_sizes_in_both_languages(tmp_path):
    """Unit sizes opened as packed rows; an empty unit's directory deleted."""
    path, _rows = rows_file(tmp_path, 20)
    build_in(tmp_path, basic_config([path], sizes=[[16, 1024]]))  # every sample is longer than 16 tokens
    out = str(tmp_path / "out")
    _says(
        PackedDataset,
        out,
        "its manifest does not declare packed rows (open it with mintdim.open)",
        "manifest không khai báo hàng đóng gói (mở bằng mintdim.open)",
    )
    assert os.listdir(os.path.join(out, "unit_16")) == ["EMPTY_UNIT.md"]  # no shard: the note says why
    shutil.rmtree(os.path.join(out, "unit_16"))
    _says(mintdim.open, out, "unit_16 is missing", "thiếu unit_16")


# --- config -----------------------------------------------------------------------------------------


def test_config_form_and_its_errors(tmp_path):
    cfg = packed_config(["a.jsonl"], overflow="drop")
    assert cfg["units"] == {"pack": [ROW], "build_batch": [32], "overflow": ["drop"]}
    b = resolve(cfg)
    assert (b.outputs[0].pack, b.outputs[0].overflow, b.outputs[0].sizes) == (ROW, "drop", [ROW])
    api = mintdim.pipeline("unit-build").units(pack=[4096], overflow=["drop"], build_batch=[4096])
    assert api.to_config()["units"] == {"pack": [4096], "overflow": ["drop"], "build_batch": [4096]}
    bad = [
        ({"pack": [ROW], "sizes": [[8]], "build_batch": [1]}, "pack replaces sizes", "pack thay cho sizes"),
        ({"pack": [0], "build_batch": [1]}, "positive row lengths", "độ dài hàng dương"),
        ({"pack": [8], "overflow": ["split"], "build_batch": [1]}, "error | drop | truncate", "error | drop"),
    ]
    for units, en, vi in bad:
        cfg["units"] = units
        with pytest.raises(E.UnitValidationError) as err:
            resolve(dict(cfg, lang="both"))
        assert en in str(err.value) and vi in str(err.value)
    cfg["units"] = {"sizes": [[8]], "overflow": ["drop"], "build_batch": [1]}  # unit sizes take overflow too
    assert (resolve(cfg).outputs[0].overflow, resolve(cfg).files[0].units.sizes) == ("drop", [8])
    two = packed_config(["a.jsonl", "b.jsonl"])
    two["units"]["pack"] = [128, 256]
    with pytest.raises(E.UnitMappingError):
        resolve(two)
    two["output"]["dir"] = ["o1", "o2"]
    assert [o.pack for o in resolve(two).outputs] == [128, 256]


def test_torch_adapter_equals_transformers_data_collator_with_flattening(masked):
    """The adapter's batch is what Hugging Face's DataCollatorWithFlattening makes of the same samples
    (each sample's tokens, labels = its trained tokens, -100 elsewhere), with flash-attention kwargs."""
    torch = pytest.importorskip("torch")
    collator_mod = pytest.importorskip("transformers.data.data_collator")
    out, _rows = masked
    ds = mintdim.open(out)
    batch = next(iter(ds.torch_loader(3, shuffle=False)))
    ids = [int(s) for r in range(3) for s in ds.row_sample_ids(r)]
    assert [int(s) for s in batch["sample_ids"]] == ids
    features = []
    for s in ids:
        tokens = ds.tokens(s).astype(np.int64)
        labels = np.where(ds.loss_mask(s), tokens, -100)
        features.append({"input_ids": tokens.tolist(), "labels": labels.tolist()})
    ref = collator_mod.DataCollatorWithFlattening(return_flash_attn_kwargs=True, return_tensors="pt")(
        features
    )
    for key in ("input_ids", "labels", "position_ids", "cu_seq_lens_q", "cu_seq_lens_k"):
        assert torch.equal(batch[key].to(ref[key].dtype), ref[key]), key
    assert int(batch["max_length_q"]) == int(ref["max_length_q"]) and int(batch["max_length_k"]) == int(
        ref["max_length_k"]
    )


def test_shipped_packed_example_builds_and_verifies(tmp_path):
    """config/packed.yaml from a copy of the repository's data, as the README runs it: GSM8K in rows of
    1024 with the answers trained; `mintdim verify --source --all` re-encodes every sample."""
    res = build_shipped(tmp_path, "config/packed.yaml")
    assert res.returncode == 0, res.stdout + res.stderr
    out = tmp_path / "artifacts" / "gsm8k_packed"
    assert read_json(out / "manifest.json")["units"]["layout"] == "packed"
    packed = read_json(out / "stats.json")["packing"]
    assert packed["row_length"] == 1024 and packed["samples"] == 1319
    # BFD: near the bound
    assert packed["lower_bound_rows"] <= packed["rows"] <= packed["lower_bound_rows"] + 2
    assert packed["tokens"] == read_json(out / "stats.json")["total_tokens"]
    res = run_cli(tmp_path, "verify", str(out), "--source", "--all")
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr
    ds = mintdim.open(str(out))
    batch = next(iter(ds.batches(4, seed=0)))
    for j, sid in enumerate(batch.sample_ids.tolist()):  # each answer trained, each question not
        a, e = int(batch.cu_seqlens[j]), int(batch.cu_seqlens[j + 1])
        mask = ds.loss_mask(sid)
        assert e - a == len(mask) and 0 < int(mask.sum()) < len(mask) and not mask[0] and mask[-1]
        assert batch.flat()["position_ids"][a:e].tolist() == list(range(e - a))


def test_packed_sample_index_idx_holds_what_sample_index_jsonl_says(masked, tmp_path):
    """Every column of the packed build's sample_index.idx (truncated samples, loss masks) equals the one
    sample_index.jsonl gives (an output without the binary file is read from it); each sample's place is its
    line's shard_path, shard_row and row_offset, and every row lists its samples by offset."""
    from mintdim.formats import sample_columns

    out = masked[0]
    ds = mintdim.open(out)
    cols = ds.sample_columns
    index = read_jsonl(os.path.join(out, "sample_index.jsonl"))
    assert cols.layout == "packed" and cols.n == len(index) and cols.unit is None
    for sid, row in enumerate(index):
        if row["shard_path"] is None:
            assert (int(cols.shard[sid]), int(cols.record[sid]), int(cols.row_offset[sid])) == (-1, -1, -1)
            continue
        shard = fs.shard_path(ROW, int(cols.shard[sid]))
        assert (shard, int(cols.record[sid]), int(cols.row_offset[sid])) == (
            row["shard_path"],
            row["shard_row"],
            row["row_offset"],
        )
        assert int(cols.source_token_count[sid]) == row.get("source_token_count", row["token_count"])
        assert int(cols.trained_tokens[sid]) == row["trained_tokens"]
    for r in range(ds.num_rows):
        ids = ds.row_sample_ids(r)
        assert [index[i]["row_offset"] for i in ids] == sorted(index[i]["row_offset"] for i in ids)
    old = str(tmp_path / "old")
    shutil.copytree(out, old)
    os.remove(os.path.join(old, "sample_index.idx"))
    with pytest.warns(UserWarning, match="has no sample_index.idx"):
        from_jsonl = mintdim.open(old).sample_columns
    for name in sample_columns.COLUMNS:
        a, b = getattr(from_jsonl, name), getattr(cols, name)
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), name
