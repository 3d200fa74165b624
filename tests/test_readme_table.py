"""benchmarks/readme_table.py: the performance table of docs/performance.md is
rendered from compare.py's JSON results and replaces only what lies between the markers. No timing
is asserted: the figures are made up here and must come out where the table says."""

from __future__ import annotations

import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import compare as C  # noqa: E402
import readme_table as R  # noqa: E402

MINILM, J2 = "/a/hf/minilm/tokenizer.json", "/a/sp/ai21-j2/j2-tokenizer.model"


def run(wall, tokens=1000, rss=500.0, samples=61223):
    return {
        "wall_s": wall,
        "cpu_s": wall * 1.9,
        "peak_rss_mb": rss,
        "peak_pss_mb": rss * 0.8,
        "total_tokens": tokens,
        "samples": samples,
    }


def compare_result(
    label, tokenizer, scale, raw, build, cores1=None, peers=None, unavailable=None, rss=(500.0,), raw1=None
):
    """A compare.py --json result as compare_mode writes it (summaries made by compare.summarize)."""
    runs = {
        "raw": [run(w, samples=61223 * scale) for w in raw],
        "mintdim-c2": [run(w, rss=r) for w, r in zip(build, rss * len(build))],
    }
    if cores1:
        runs["mintdim-c1"] = [run(w) for w in cores1]
    if raw1:  # compare.py runs the raw encode on one thread too when it runs mintdim --cores 1
        runs["raw-c1"] = [run(w) for w in raw1]
    for name, walls in (peers or {}).items():
        runs[name] = [run(w) for w in walls]
    return {
        "mode": "compare",
        "input": "/a/data/sharegpt_pairs.jsonl",
        "input_mb": 102.36 * scale,
        "runs": runs,
        "summary": {k: C.summarize(v) for k, v in runs.items()},
        "unavailable_peers": unavailable or {},
        "label": label,
        "args": {"cores": 2, "runs": len(raw), "scale": scale, "tokenizer": tokenizer},
    }


@pytest.fixture
def data():
    meta = {
        "date": "2026-12-01 18:00 UTC",
        "cores": 2,
        "cpu": "AMD EPYC 7B13",
        "commit": "abc1234567",
        "load_at_start": [0.12, 0.3, 0.4],
        "command": "python benchmarks/readme_table.py --runs 3",
    }
    results = [
        compare_result(
            "MiniLM WordPiece",
            MINILM,
            1,
            raw=[16.0, 15.0, 17.0],
            build=[17.5, 17.0, 18.0],
            peers={"hf_datasets": [17.2, 17.4, 17.3], "datatrove": [21.0, 22.0, 21.5]},
            rss=(600.0,),
        ),
        compare_result(
            "MiniLM WordPiece",
            MINILM,
            4,
            raw=[60.0, 59.0, 61.0],
            build=[63.0, 62.0, 64.0],
            cores1=[118.0, 119.0, 117.0],
            rss=(660.0,),
            raw1=[105.0, 104.0, 106.0],
        ),
        compare_result(
            "ai21 j2 SentencePiece",
            J2,
            1,
            raw=[5.5, 5.4, 5.6],
            build=[7.0, 7.2, 7.1],
            peers={"hf_datasets": [7.3, 7.5, 7.4]},
            unavailable={"datatrove": "DocumentTokenizer only takes a Hugging Face tokenizer"},
        ),
        compare_result(
            "ai21 j2 SentencePiece",
            J2,
            4,
            raw=[22.0, 21.0, 23.0],
            build=[23.0, 24.0, 23.5],
            cores1=[44.0, 45.0, 46.0],
        ),
    ]
    return {"meta": meta, "results": results}


DOC = "# Project\n\nintro\n\n## Performance\n\nbefore\n\n{start}\nold table\n| a | b |\n{end}\n\nafter\n"


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_table_between_the_markers_from_compare_results(tmp_path, data):
    path = tmp_path / "performance.md"
    path.write_text(DOC.format(start=R.START, end=R.END), encoding="utf-8")
    R.write_doc(str(path), data)
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(R.START + "\n")
    block, tail = rest.split(R.END)
    assert head == "# Project\n\nintro\n\n## Performance\n\nbefore\n\n" and tail == "\n\nafter\n"
    assert "old table" not in block
    assert block.startswith(
        "Measured on 2 cores (AMD EPYC 7B13), medians of 3 interleaved run(s), load average at start 0.12."
    )
    assert (
        "`benchmarks/fetch_data.sh` (once: the data into ../assets), then `python benchmarks/readme_table.py "
        "--runs 3`" in block
    )
    table = [ln for ln in block.splitlines() if ln.startswith("|")]
    assert cells(table[0]) == [
        "input",
        "tokenizer",
        "raw encode",
        "mintdim --cores 2",
        "fixed cost",
        "--cores 1",
        "speedup",
        "HF datasets",
        "datatrove",
        "peak RSS",
    ]
    assert len(table) == 2 + 4
    rows = [cells(ln) for ln in table[2:]]
    # medians: raw 16.0, build 17.5 (ratio 1.09375), hf 17.3, datatrove 21.5; 102.36 MiB = 107 MB
    assert rows[0] == [
        "107 MB, 61,223 samples",
        "MiniLM WordPiece",
        "16.00 s",
        "17.50 s = 1.09x",
        "1.50 s",
        "-",
        "-",
        "17.30 s = 1.08x",
        "21.50 s = 1.34x",
        "600 MB",
    ]
    assert rows[1] == [
        "429 MB (x4), 244,892 samples",
        "MiniLM WordPiece",
        "60.00 s",
        "63.00 s = 1.05x",
        "3.00 s",
        "118.00 s = 1.97x",
        "1.87x (raw 1.75x)",
        "-",
        "-",
        "660 MB",
    ]
    assert rows[2][3:] == ["7.10 s = 1.29x", "1.60 s", "-", "-", "7.40 s = 1.35x", "n/a", "500 MB"]
    assert rows[3][5:7] == ["45.00 s = 2.05x", "1.91x"]
    assert "MiniLM WordPiece: peak RSS 660 MB at x4 / 600 MB at x1 = 1.10" in block
    # the same data renders the same block: a second run only replaces the table
    R.write_doc(str(path), data)
    assert path.read_text(encoding="utf-8") == text


def test_failed_and_token_mismatch_are_shown_not_hidden(data):
    r = data["results"][0]
    r["summary"]["datatrove"] = C.summarize([{"error": "Traceback ...", "wall_s": None}])
    r["summary"]["hf_datasets"]["total_tokens"] = 999
    row = cells([ln for ln in R.render(data).splitlines() if ln.startswith("| 107 MB")][0])
    assert row[7] == "17.30 s = 1.08x (tokens differ from raw!)" and row[8] == "failed"


@pytest.mark.parametrize(
    "text",
    [
        "no markers",
        f"{R.START}\nonly the start\n",
        f"{R.END}\n{R.START}\n",
        f"{R.START}\n{R.END}\n{R.START}\n{R.END}\n",
    ],
)
def test_the_doc_must_hold_one_pair_of_markers(tmp_path, data, text, monkeypatch):
    path = tmp_path / "performance.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit, match="perf-table:start"):
        R.write_doc(str(path), data)
    assert path.read_text(encoding="utf-8") == text
    monkeypatch.setattr(R, "run_set", lambda *a: pytest.fail("measured before checking the markers"))
    for rel in ("data/sharegpt_pairs.jsonl", "hf/minilm/tokenizer.json", "sp/ai21-j2/j2-tokenizer.model"):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    with pytest.raises(SystemExit, match="perf-table:start"):  # refused before a run of 40 minutes
        R.main(["--assets", str(tmp_path), "--doc", str(path)])


def test_render_only_rewrites_the_table_from_a_saved_json(tmp_path, data):
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(data), encoding="utf-8")
    path = tmp_path / "performance.md"
    path.write_text(DOC.format(start=R.START, end=R.END), encoding="utf-8")
    assert R.main(["--render-only", str(saved), "--doc", str(path)]) == 0
    assert "| 107 MB, 61,223 samples | MiniLM WordPiece | 16.00 s |" in path.read_text(encoding="utf-8")


def test_the_table_lives_in_docs_performance_not_in_the_readme():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert R.START not in readme and R.END not in readme  # the README links docs/performance.md
    default = R.parse_args(["--render-only", "results.json"]).doc  # no asset is looked for
    assert os.path.abspath(default) == os.path.join(REPO, "docs", "performance.md")
    with open(os.path.join(REPO, "docs", "performance.md"), encoding="utf-8") as f:
        doc = f.read()
    if R.START not in doc and R.END not in doc:
        pytest.skip(
            "docs/performance.md holds no table markers yet (readme_table.py refuses to measure until it "
            "does)"
        )
    R.check_markers(doc, "docs/performance.md")


def test_the_recorded_command_names_no_path_of_the_machine(tmp_path):
    """The command under the table is one any checkout runs:
    where results, scratch and assets go is left out."""
    for rel in ("data/sharegpt_pairs.jsonl", "hf/minilm/tokenizer.json", "sp/ai21-j2/j2-tokenizer.model"):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "d.md").write_text(f"{R.START}\n{R.END}\n")
    argv = [
        "--assets",
        str(tmp_path),
        f"--work={tmp_path}/scratch",
        "--json",
        str(tmp_path / "p.json"),
        "--doc",
        str(tmp_path / "d.md"),
        "--runs",
        "3",
    ]
    assert R.machine_meta(argv)["command"] == "python benchmarks/readme_table.py --runs 3"


def test_the_set_is_the_issues(tmp_path):
    """1x with peers (no --cores 1), 4x without peers with --cores 1, for MiniLM and j2; one many-unit config;
    the assets' paths default under --assets."""
    for rel in ("data/sharegpt_pairs.jsonl", "hf/minilm/tokenizer.json", "sp/ai21-j2/j2-tokenizer.model"):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    args = R.parse_args(["--assets", str(tmp_path)])
    runs = R.the_set(args)
    assert [r["label"] for r in runs] == ["MiniLM WordPiece"] * 2 + ["ai21 j2 SentencePiece"] * 2
    for r, tok, scale in zip(
        runs, ["hf/minilm/tokenizer.json"] * 2 + ["sp/ai21-j2/j2-tokenizer.model"] * 2, [1, 4, 1, 4]
    ):
        a = C.parse_args(r["argv"])  # compare.py accepts it as given
        assert a.tokenizer == str(tmp_path / tok) and a.data == str(tmp_path / "data/sharegpt_pairs.jsonl")
        assert (a.scale, a.runs, a.cores) == (scale, 3, 2)
        assert (a.peers, a.no_cores1) == ((["hf_datasets", "datatrove"], True) if scale == 1 else ([], False))


def test_a_byte_level_bpe_model_in_the_assets_adds_one_1x_run_against_the_peers(tmp_path):
    for rel in (
        "data/sharegpt_pairs.jsonl",
        "hf/minilm/tokenizer.json",
        "sp/ai21-j2/j2-tokenizer.model",
        "hf/llama3.2/tokenizer.json",
    ):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    runs = R.the_set(R.parse_args(["--assets", str(tmp_path)]))
    assert [r["label"] for r in runs][-1] == "Llama-3.2 byte-level BPE (engine)" and len(runs) == 5
    a = C.parse_args(runs[-1]["argv"])
    assert a.tokenizer == str(tmp_path / "hf/llama3.2/tokenizer.json") and a.scale == 1 and a.no_cores1
    assert a.peers == ["hf_datasets", "datatrove"]
    assert len(R.the_set(R.parse_args(["--assets", str(tmp_path), "--bpe", "none"]))) == 4


def test_the_sampler_sees_the_whole_process_tree(tmp_path):
    """compare.measure's sampler (/proc children, statm and stat) finds a grandchild, its memory and
    its CPU: a shell starts Python, which holds 80 MB and spins 0.4 s of CPU."""
    code = (
        "import time; b = bytearray(80 << 20); b[::4096] = b'x' * len(b[::4096]); t = time.process_time()\n"
        "while time.process_time() - t < 0.4: pass\ntime.sleep(0.5)"
    )
    cmd = ["sh", "-c", f'{sys.executable} -c "{code}"; true']  # the `; true` keeps sh as the parent
    m = C.measure(cmd, str(tmp_path), dict(os.environ), str(tmp_path / "log.txt"), interval=0.05)
    assert m["rc"] == 0, open(tmp_path / "log.txt").read()
    assert m["peak_rss_mb"] >= 80 and m["peak_pss_mb"] >= 80, m
    assert m["cpu_s"] >= 0.4 and m["cpu_sampled_s"] >= 0.3, m


def test_a_baseline_adds_a_before_column_and_the_command_hides_its_path(tmp_path, data):
    """--baseline PYTHON: every compare.py run of the set builds with that MintDim too, the table gets a
    `before` column (its wall and ratio to raw, same rounds), and the recorded command names no path."""
    for rel in ("data/sharegpt_pairs.jsonl", "hf/minilm/tokenizer.json", "sp/ai21-j2/j2-tokenizer.model"):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    args = R.parse_args(["--assets", str(tmp_path), "--baseline", "/old/venv/bin/python", "--no-cores1"])
    for r in R.the_set(args):
        a = C.parse_args(r["argv"])
        assert a.baseline == "/old/venv/bin/python" and a.no_cores1
    command = R.machine_meta(
        ["--assets", str(tmp_path), "--baseline", "/old/venv/bin/python"]
        + ["--baseline-label", "MintDim 03e172f", "--runs", "3"]
    )["command"]
    assert command == (
        f"python benchmarks/readme_table.py --baseline {R.BASELINE_WORD} "
        "--baseline-label 'MintDim 03e172f' --runs 3"
    )
    for r, walls in zip(
        data["results"], ([18.0, 19.0, 18.5], [70.0, 66.0, 68.0], [8.0, 8.0, 8.0], [25.0, 24.0, 26.0])
    ):
        r["runs"]["baseline"] = [run(w) for w in walls]
        r["summary"]["baseline"] = C.summarize(r["runs"]["baseline"])
    data["meta"]["baseline"] = "MintDim 03e172f"
    block = R.render(data)
    table = [cells(ln) for ln in block.splitlines() if ln.startswith("|")]
    assert (
        table[0][-1] == "before" and table[2][-1] == "18.50 s = 1.16x" and table[3][-1] == "68.00 s = 1.13x"
    )
    assert "`before` is MintDim 03e172f in the same rounds" in block
