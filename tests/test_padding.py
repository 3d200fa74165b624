"""Padding: the figures in stats.json, the exact unit-size optimiser, suggest-units and sizes: auto."""

import itertools
import json

import numpy as np
import pytest
from conftest import HF_JSON, basic_config, build_in, read_json, read_jsonl, run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from mintdim import errors as E
from mintdim import suggest_units
from mintdim.units import padding as P


def brute_force(values, counts, k, multiple_of=1, min_size=None, cost="linear"):
    """The least cost over every set of at most k unit sizes drawn from the smallest allowed unit (a
    multiple of multiple_of, at least min_size) of each sample length: an optimal set uses only those."""
    m = multiple_of
    cands = sorted({max(m, -(-max(v, min_size or 1) // m) * m) for v in values})
    best = None
    for r in range(1, min(k, len(cands)) + 1):
        for head in itertools.combinations(cands[:-1], r - 1):
            o = P.objective(values, counts, list(head) + [cands[-1]], cost)
            best = o if best is None else min(best, o)
    return best


histograms = st.lists(
    st.tuples(st.integers(0, 300), st.integers(1, 50)), min_size=1, max_size=9, unique_by=lambda t: t[0]
).map(lambda pairs: sorted(pairs))


@settings(max_examples=300, deadline=None)
@given(
    hist=histograms,
    k=st.integers(1, 5),
    multiple_of=st.sampled_from([1, 1, 4, 8, 64]),
    min_size=st.sampled_from([None, None, 16, 100]),
    cost=st.sampled_from(["linear", "attention"]),
)
def test_optimiser_equals_brute_force(hist, k, multiple_of, min_size, cost):
    values = [v for v, _ in hist]
    counts = [c for _, c in hist]
    found = P.suggest(
        values=values, counts=counts, k=k, multiple_of=multiple_of, min_size=min_size, cost=cost
    )
    best = brute_force(values, counts, k, multiple_of, min_size, cost=cost)
    assert found.objective == best
    assert P.objective(values, counts, found.sizes, cost) == best  # the sizes really give that cost
    assert found.sizes == sorted(set(found.sizes))
    assert all(s % multiple_of == 0 for s in found.sizes)
    assert found.sizes[-1] >= max(values)
    if min_size:
        assert found.sizes[0] >= min_size
    assert len(found.sizes) <= k


def test_measure_matches_hand_count():
    rep = P.measure([3, 5, 8], [2, 1, 1], [4, 8])
    assert [(u.size, u.samples, u.tokens, u.slots) for u in rep.units] == [(4, 2, 6, 8), (8, 2, 13, 16)]
    assert rep.total_slots == 24 and rep.pad_tokens == 5
    assert rep.padding_ratio == pytest.approx(5 / 24)


def test_max_padding_gives_the_smallest_k_that_reaches_it():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 500, size=3000)
    found = P.suggest(lengths, max_padding=0.05)
    assert found.report.padding_ratio <= 0.05
    k = len(found.sizes)
    assert P.suggest(lengths, k=k - 1).report.padding_ratio > 0.05


def test_max_size_too_small_is_an_error_and_fewer_candidates_than_k_uses_all():
    with pytest.raises(ValueError):
        P.suggest([10, 300], k=2, max_size=256)
    found = P.suggest([10, 10, 20], k=5)
    assert found.sizes == [10, 20] and found.note


def test_optimiser_is_fast_on_millions_of_samples():
    lengths = np.random.default_rng(0).lognormal(6, 1, size=2_000_000).astype(np.int64)
    found = P.suggest(lengths, k=32)  # ~10k distinct lengths; exact
    assert len(found.sizes) == 32


@pytest.fixture
def built(tmp_path, pairs):
    res = build_in(tmp_path, basic_config([pairs], sizes=[[64, 128, 256, 512]], out="out"), cores=2)
    return tmp_path, res


def test_stats_padding_figures_agree_with_the_index(built):
    ws, _ = built
    stats = read_json(ws / "out" / "stats.json")
    rows = read_jsonl(ws / "out" / "sample_index.jsonl")
    pad = stats["padding"]
    slots = sum(r["unit_size"] for r in rows)
    tokens = sum(r["token_count"] for r in rows)
    assert pad["total_slots"] == slots and pad["pad_tokens"] == slots - tokens
    assert pad["padding_ratio"] == pytest.approx((slots - tokens) / slots)
    for size, unit in pad["per_unit"].items():
        mine = [r for r in rows if r["unit_size"] == int(size)]
        assert unit["samples"] == len(mine) == stats["unit_distribution"][size]
        assert unit["slots"] == len(mine) * int(size)
    # the spec's keys are untouched
    for key in ("total_samples", "total_tokens", "duplicate_groups", "unit_distribution"):
        assert key in stats


def test_suggest_units_from_an_output_api_and_cli(built):
    ws, _ = built
    [answer] = suggest_units(str(ws / "out"), k=4, multiple_of=8)
    rows = read_jsonl(ws / "out" / "sample_index.jsonl")
    values, counts = P.histogram([r["token_count"] for r in rows])
    assert answer.suggestion.objective == brute_force(values, counts, 4, 8) if len(values) <= 12 else True
    assert answer.current_sizes == [64, 128, 256, 512]
    assert answer.suggestion.report.padding_ratio <= answer.current.padding_ratio
    res = run_cli(ws, "suggest-units", "out", "-k", "4", "--multiple-of", "8", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)[0]
    assert data["suggested_sizes"] == answer.suggestion.sizes
    assert data["current_padding_ratio"] == pytest.approx(answer.current.padding_ratio)


def test_suggest_units_from_a_config_uses_exact_token_counts(tmp_path, pairs, built):
    ws, _ = built
    cfg = basic_config([pairs], sizes=[[64, 128, 256, 512]], out="elsewhere")
    [from_config] = suggest_units(cfg, k=3)
    [from_output] = suggest_units(str(ws / "out"), k=3)
    assert from_config.suggestion.sizes == from_output.suggestion.sizes
    assert from_config.samples == from_output.samples


def test_build_with_auto_sizes_plans_them_and_records_them(tmp_path):
    rows = [{"prompt": "word " * n, "response": "x"} for n in [1, 2, 3, 50, 51, 52, 200, 201, 5, 7]]
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    cfg = basic_config([src], tokenizer={"hf_json": {"path": HF_JSON}}, out="auto_out")
    cfg["units"] = {"sizes": "auto", "k": 3, "multiple_of": 8, "build_batch": [4]}
    res = build_in(tmp_path, cfg, cores=2)
    manifest = read_json(tmp_path / "auto_out" / "manifest.json")
    stats = res.outputs[0].stats
    sizes = manifest["units"]["sizes"]
    assert manifest["units"]["planned"]["k"] == 3 and all(s % 8 == 0 for s in sizes)
    lengths = [r["token_count"] for r in read_jsonl(tmp_path / "auto_out" / "sample_index.jsonl")]
    assert sizes == P.suggest(lengths, k=3, multiple_of=8).sizes
    assert list(stats["unit_distribution"]) == [str(s) for s in sizes]
    for s in sizes:
        assert (tmp_path / "auto_out" / f"unit_{s}").is_dir()


def test_auto_options_need_sizes_auto_and_k(tmp_path):
    cfg = basic_config(["x.jsonl"])
    cfg["units"]["k"] = 4
    with pytest.raises(E.UnitValidationError):
        from mintdim.config import resolve

        resolve(cfg)
    cfg["units"] = {"sizes": "auto", "build_batch": [8]}
    with pytest.raises(E.UnitValidationError) as err:
        resolve(cfg)
    assert "needs k" in str(err.value)
