#!/usr/bin/env python
"""Run the published figure set with compare.py and rewrite the performance table of docs/performance.md.

    benchmarks/fetch_data.sh                 # the data and tokenizers, into ../assets beside the repository
    python benchmarks/readme_table.py [--assets ../assets] [--doc docs/performance.md] [--runs 3] [--cores 2]
    python benchmarks/readme_table.py --render-only results.json [--doc docs/performance.md]

The set, for the MiniLM tokenizer.json and the ai21 j2 SentencePiece model, every build
with the same many-unit config (--sizes, default 128 ... 32768 and 262144):
  1x  the ShareGPT pairs file (107 MB) with the peers (HF datasets, datatrove where installed);
  4x  the same file x4 without peers, with `mintdim --cores 1` as well (the scaling figure).
Each is one `compare.py ... --json` run (medians of --runs interleaved runs); peak RSS is the median
peak of the `mintdim --cores N` runs at 1x and at 4x. The results (with the run's date, core count,
CPU model, load and MintDim commit) go to --json; the table between the markers (cores, CPU model and
load, no date or commit: the page is reference, its history is git's)
`<!-- perf-table:start -->` and `<!-- perf-table:end -->` of --doc is replaced; nothing else in
the file changes (a file without exactly one pair of markers is refused before anything is measured).
--render-only re-renders that table from a saved --json file without measuring.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare as C  # noqa: E402  (the measuring itself: this script only chooses the runs and renders)

START = "<!-- perf-table:start -->"
END = "<!-- perf-table:end -->"
DOC = os.path.join("docs", "performance.md")  # the file whose table is rewritten, relative to the repository
MANY_UNITS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 262144]
PEER_NAMES = {"hf_datasets": "HF datasets", "datatrove": "datatrove"}


# --------------------------------------------------------------------------- the machine and the commit


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def mintdim_commit(doc: str = DOC) -> str:
    """Short hash of the checkout measured, `-dirty` when it has uncommitted changes to tracked files
    other than `doc` (which this script rewrites)."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout

    head = git("rev-parse", "--short=10", "HEAD").strip() or "unknown"
    # porcelain: 2 status letters, a space, the path
    changed = [
        ln
        for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()
        if ln[3:].strip() != os.path.relpath(os.path.abspath(doc), REPO)
    ]
    return head + ("-dirty" if changed else "")


def machine_meta(argv: list[str], doc: str = DOC) -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "commit": mintdim_commit(doc),
        "load_at_start": [round(x, 2) for x in load] if load else None,
        "python": platform.python_version(),
        "command": shlex.join(["python", "benchmarks/readme_table.py", *_measuring_args(argv)]),
        **({"baseline": label} if (label := _baseline_label(argv)) else {}),
    }


def _baseline_label(argv: list[str]) -> str | None:
    """What the `before` column measured: --baseline-label, else the commit of the baseline's checkout."""
    args = parse_args(argv)
    if not args.baseline:
        return None
    if args.baseline_label:
        return args.baseline_label
    done = subprocess.run(
        [args.baseline, "-c", "import mintdim, os; print(os.path.dirname(mintdim.__file__))"],
        capture_output=True,
        text=True,
    )
    where = done.stdout.strip()
    head = (
        subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], cwd=where or None, capture_output=True, text=True
        ).stdout.strip()
        if where
        else ""
    )
    return f"MintDim {head}" if head else "the --baseline interpreter's MintDim"


WHERE_OPTIONS = ("--json", "--doc", "--work", "--assets")
BASELINE_WORD = "PYTHON_OF_THE_EARLIER_CHECKOUT"  # what the recorded command says for --baseline's path


def _measuring_args(argv: list[str]) -> list[str]:
    """argv without the options that only say where things are on the machine that ran it (results, the
    doc, the scratch and asset directories): the recorded command is one any checkout can run."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in WHERE_OPTIONS:
            skip = True
        elif out and out[-1] == "--baseline":
            out.append(BASELINE_WORD)
        elif a.startswith("--baseline="):
            out += ["--baseline", BASELINE_WORD]
        elif not a.startswith(tuple(f"{o}=" for o in WHERE_OPTIONS)):
            out.append(a)
    return out


# --------------------------------------------------------------------------- running the set


def the_set(args) -> list[dict]:
    """One entry per compare.py run: label, scale, and its argument list (without --json)."""
    sizes = ",".join(str(s) for s in args.sizes)
    out = []
    for label, tok in ((args.minilm_label, args.minilm), (args.j2_label, args.j2)):
        common = [
            "--data",
            args.data,
            "--fields",
            args.fields,
            "--template",
            args.template,
            "--tokenizer",
            tok,
            "--cores",
            str(args.cores),
            "--runs",
            str(args.runs),
            "--sizes",
            sizes,
        ]
        common += ["--work", args.work] if args.work else []
        common += ["--baseline", args.baseline] if args.baseline else []
        out.append({"label": label, "argv": common + ["--scale", str(args.scale), "--no-cores1"]})
        out.append(
            {
                "label": label,
                "argv": common
                + ["--scale", str(4 * args.scale), "--peers", "none"]
                + (["--no-cores1"] if args.no_cores1 else []),
            }
        )
    if args.bpe:  # a byte-level BPE model (the exact tiktoken engine), at 1x against the peers
        out.append(
            {
                "label": args.bpe_label,
                "needs_pad_unk": True,
                "argv": [
                    "--data",
                    args.data,
                    "--fields",
                    args.fields,
                    "--template",
                    args.template,
                    "--tokenizer",
                    args.bpe,
                    "--cores",
                    str(args.cores),
                    "--runs",
                    str(args.runs),
                    "--sizes",
                    sizes,
                    "--scale",
                    str(args.scale),
                    "--no-cores1",
                ]
                + (["--work", args.work] if args.work else [])
                + (["--baseline", args.baseline] if args.baseline else []),
            }
        )
    return out


def run_set(args, argv: list[str]) -> dict:
    meta = machine_meta(argv, args.doc)
    results = []
    with tempfile.TemporaryDirectory(prefix="mintdim-readme-table-") as tmp:
        for i, item in enumerate(the_set(args)):
            path = os.path.join(tmp, f"run{i}.json")
            if item.get("needs_pad_unk"):  # Llama-3/Qwen3 files name no PAD/UNK: a copy naming existing
                # special tokens, as benchmarks/engine.py does (ids unchanged; every tool reads the copy)
                from engine import buildable_copy

                at = item["argv"].index("--tokenizer") + 1
                item["argv"][at] = buildable_copy(item["argv"][at], tmp)
            print(f"\n[readme-table] {item['label']}: compare.py {' '.join(item['argv'])}", flush=True)
            C.main(item["argv"] + ["--json", path])
            with open(path, encoding="utf-8") as f:
                res = json.load(f)
            res["label"] = item["label"]
            results.append(res)
    meta["finished"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"meta": meta, "results": results}


# --------------------------------------------------------------------------- rendering


def _s(x) -> str:
    return "-" if x is None else f"{x:.2f} s"


def _tool_cell(summary: dict, name: str, raw: dict, unavailable: dict) -> str:
    """`wall s = ratio` of a row, or why there is none (not run, unavailable, failed)."""
    if name in unavailable:
        return "n/a"
    s = summary.get(name)
    if s is None:
        return "-"
    if s.get("error") or s.get("wall_s") is None:
        return "failed"
    cell = f"{s['wall_s']:.2f} s = {s['wall_s'] / raw['wall_s']:.2f}x"
    if s.get("total_tokens") != raw.get("total_tokens"):
        cell += " (tokens differ from raw!)"
    return cell


def _raw_speedup(summary: dict, raw: dict) -> str:
    """` (raw 1.76x)`: the raw encode's own speedup from 1 thread to N, measured in the same run."""
    one = summary.get("raw-c1")
    if not one or one.get("error") or one.get("wall_s") is None:
        return ""
    return f" (raw {one['wall_s'] / raw['wall_s']:.2f}x)"


def table_rows(data: dict) -> tuple[list[str], list[list[str]], list[str]]:
    """Header, one row per compare.py run, and the notes under the table (RSS 4x / 1x per tokenizer)."""
    results = data["results"]
    cores = max((r["args"]["cores"] for r in results), default=2)
    before = any("baseline" in r["summary"] for r in results)
    header = [
        "input",
        "tokenizer",
        "raw encode",
        f"mintdim --cores {cores}",
        "fixed cost",
        "--cores 1",
        "speedup",
        "HF datasets",
        "datatrove",
        "peak RSS",
    ] + (["before"] if before else [])
    rows, rss = [], {}
    for r in results:
        summ, raw, n = r["summary"], r["summary"]["raw"], r["args"]["cores"]
        build = summ.get(f"mintdim-c{n}") or {}
        ok = bool(build) and not build.get("error") and build.get("wall_s") is not None
        one = summ.get("mintdim-c1") if n != 1 else None
        one_ok = bool(one) and not one.get("error") and one.get("wall_s") is not None
        samples = r["runs"]["raw"][0]["samples"] if r["runs"].get("raw") else None
        scale = r["args"]["scale"]
        mb = r["input_mb"] * C.MB / 1e6  # compare.py counts MiB; the docs name files in MB (107 MB)
        what = (f"{mb:,.0f} MB" if mb >= 10 else f"{mb:.1f} MB") + (f" (x{scale})" if scale > 1 else "")
        what += f", {samples:,} samples" if samples is not None else ""
        unavailable = r.get("unavailable_peers") or {}
        rows.append(
            [
                what,
                r.get("label") or os.path.basename(r["args"]["tokenizer"]),
                _s(raw["wall_s"]),
                _tool_cell(summ, f"mintdim-c{n}", raw, {}),
                _s(build["wall_s"] - raw["wall_s"]) if ok else "-",
                _tool_cell(summ, "mintdim-c1", raw, {}) if one is not None else "-",
                (f"{one['wall_s'] / build['wall_s']:.2f}x" + _raw_speedup(summ, raw))
                if ok and one_ok
                else "-",
                *(_tool_cell(summ, p, raw, unavailable) for p in PEER_NAMES),
                f"{build['peak_rss_mb']:,.0f} MB" if ok else "-",
            ]
            + ([_tool_cell(summ, "baseline", raw, {})] if before else [])
        )
        if ok:
            rss.setdefault(rows[-1][1], {})[scale] = build["peak_rss_mb"]
    notes = []
    for label, by_scale in rss.items():
        scales = sorted(by_scale)
        if len(scales) >= 2:
            lo, hi = scales[0], scales[-1]
            notes.append(
                f"{label}: peak RSS {by_scale[hi]:,.0f} MB at x{hi} / {by_scale[lo]:,.0f} MB at x{lo} "
                f"= {by_scale[hi] / by_scale[lo]:.2f}"
            )
    return header, rows, notes


def render(data: dict) -> str:
    """The Markdown between the markers: what was run where, the table, the notes."""
    meta, results = data["meta"], data["results"]
    runs = sorted({r["args"]["runs"] for r in results})
    header, rows, notes = table_rows(data)
    load = meta.get("load_at_start")
    lines = [
        f"Measured on {meta['cores']} cores ({meta['cpu']}), "
        f"medians of {'/'.join(map(str, runs))} interleaved run(s)"
        + (f", load average at start {load[0]:.2f}" if load else "")
        + ". Wall seconds; `= 1.08x` is the ratio "
        "to the raw encode (the tokenizer's own batch encode of the same rendered texts); fixed cost is the "
        "build minus raw; speedup is `--cores 1` / `--cores N` (in brackets the raw encode's own, 1 thread / "
        "N threads); peak RSS is the build's whole process tree; "
        "`-` not run, `n/a` the peer cannot run here or with this tokenizer. "
        + (
            f"`before` is {meta['baseline']} in the same rounds (`--baseline`). "
            if meta.get("baseline")
            else ""
        )
        + "Regenerate with "
        f"`benchmarks/fetch_data.sh` (once: the data into ../assets), then `{meta['command']}` "
        "(benchmarks/README.md).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if notes:
        lines += ["", "; ".join(notes) + "."]
    return "\n".join(lines) + "\n"


def check_markers(text: str, where: str) -> None:
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise SystemExit(f"{where}: wants exactly one {START} line followed by one {END} line")


def replace_between_markers(text: str, block: str, where: str = DOC) -> str:
    check_markers(text, where)
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{block}{END}{tail}"


def write_doc(path: str, data: dict) -> None:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = replace_between_markers(text, render(data), path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- command line


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--assets",
        default=os.path.join(REPO, "..", "assets"),
        help="directory of the real assets (default ../assets beside the repository)",
    )
    p.add_argument("--data", default=None, help="JSONL input (default ASSETS/data/sharegpt_pairs.jsonl)")
    p.add_argument("--fields", default="prompt,response")
    p.add_argument("--template", default=r"{prompt}\n{response}", help="as compare.py's --template")
    p.add_argument("--minilm", default=None, help="tokenizer.json (default ASSETS/hf/minilm/tokenizer.json)")
    p.add_argument(
        "--j2", default=None, help="SentencePiece model (default ASSETS/sp/ai21-j2/j2-tokenizer.model)"
    )
    p.add_argument(
        "--bpe",
        default=None,
        help="a byte-level BPE tokenizer.json run at 1x with the peers (default "
        "ASSETS/hf/llama3.2/tokenizer.json when present; 'none' to skip)",
    )
    p.add_argument("--sizes", default=",".join(map(str, MANY_UNITS)), help="unit sizes of every build")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=3, help="runs per tool and input (medians)")
    p.add_argument("--scale", type=int, default=1, help="the small input's scale; the large one is 4x that")
    p.add_argument("--work", default=None, help="compare.py --work (default: the system temp dir)")
    p.add_argument(
        "--doc",
        default=os.path.join(REPO, DOC),
        help=f"file whose table is replaced (default {DOC}; it must hold the markers {START} and {END})",
    )
    p.add_argument(
        "--json", default=None, help="also write every result with the run's date and machine here"
    )
    p.add_argument(
        "--baseline",
        default=None,
        metavar="PYTHON",
        help="also build with another MintDim (its "
        "interpreter, e.g. a virtualenv of an earlier commit) in the same rounds: a `before` column",
    )
    p.add_argument(
        "--baseline-label",
        default=None,
        help="what the `before` column names (default: the commit of the baseline's checkout)",
    )
    p.add_argument(
        "--no-cores1",
        action="store_true",
        help="no `mintdim --cores 1` at 4x (no speedup column: about half the set's time)",
    )
    p.add_argument(
        "--render-only",
        metavar="JSON",
        default=None,
        help="measure nothing: render the table from a --json file of an earlier run",
    )
    args = p.parse_args(argv)
    args.data = args.data or os.path.join(args.assets, "data", "sharegpt_pairs.jsonl")
    # the rows are named after the tokenizers of the set; another file is named by its file name
    args.minilm_label = "MiniLM WordPiece" if not args.minilm else os.path.basename(args.minilm)
    args.j2_label = "ai21 j2 SentencePiece" if not args.j2 else os.path.basename(args.j2)
    args.minilm = args.minilm or os.path.join(args.assets, "hf", "minilm", "tokenizer.json")
    args.j2 = args.j2 or os.path.join(args.assets, "sp", "ai21-j2", "j2-tokenizer.model")
    default_bpe = os.path.join(args.assets, "hf", "llama3.2", "tokenizer.json")
    args.bpe_label = "Llama-3.2 byte-level BPE (engine)" if not args.bpe else os.path.basename(args.bpe)
    args.bpe = (
        None if args.bpe == "none" else args.bpe or (default_bpe if os.path.isfile(default_bpe) else None)
    )
    try:
        args.sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError:
        p.error("--sizes: comma-separated integers expected")
    if not args.render_only:
        for name in ("data", "minilm", "j2", "bpe"):
            if getattr(args, name) is not None and not os.path.isfile(getattr(args, name)):
                p.error(f"--{name}: no such file {getattr(args, name)} (see --assets)")
    if not os.path.isfile(args.doc):
        p.error(f"--doc: no such file {args.doc}")
    return args


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    with open(args.doc, encoding="utf-8") as f:
        check_markers(f.read(), args.doc)  # before the runs: a measuring of 40 minutes must land somewhere
    if args.render_only:
        with open(args.render_only, encoding="utf-8") as f:
            data = json.load(f)
    else:
        data = run_set(args, argv)
        if args.json:
            C.write_json(args.json, data)
            print(f"\n[readme-table] results written to {args.json}")
    write_doc(args.doc, data)
    print(f"\n[readme-table] table written to {args.doc}:\n\n{render(data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
