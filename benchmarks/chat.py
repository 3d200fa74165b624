#!/usr/bin/env python3
"""Conversations (source.chat): a MintDim build against the raw encode of the same rendered texts.

    python benchmarks/chat.py --data ../assets/data/sharegpt_conversations.jsonl \\
        --tokenizer ../assets/hf/qwen3 --cores 2 --runs 3

One run, interleaved, medians of --runs:
- raw: a fresh process reads the conversations already rendered (by MintDim's renderer, which
  the tests hold equal to transformers' apply_chat_template), loads tokenizer.json and encodes
  them with the library's own batch call (`encode_batch_fast`, RAYON_NUM_THREADS=cores, batches of
  1024); only the encode is timed: the limit any tool reaches;
- mintdim: `mintdim build` of the conversation file (render, encode, units, shards, indexes),
  whole command wall, without train_on and with train_on [["assistant"]] (loss masks);
- render: rendering every conversation once in this process (one thread), and rendering with
  the mask spans (render_with_spans), as a share of the build's CPU time;
- with --pairs (a JSONL of prompt/response records, e.g. ../assets/data/sharegpt_pairs.jsonl, its
  first --limit lines too): the field-template build `{prompt}\n{response}` with the same
  tokenizer, without and with train_on [["response"]], in the same rounds.
The default --chat is ShareGPT's shape with every assistant-like role mapped. The last lines give
the ratios of medians: with masks / raw encode (wall), with masks / without (wall and CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

SHAREGPT = {
    "messages": "conversations",
    "role": "from",
    "content": "value",
    "roles": {
        "human": "user",
        "user": "user",
        "gpt": "assistant",
        "assistant": "assistant",
        "chatgpt": "assistant",
        "bing": "assistant",
        "bard": "assistant",
        "system": "system",
    },
}
SIZES = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]
BATCH = 1024

RAW_CHILD = r"""
import json, resource, sys, time
from tokenizers import Tokenizer
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
texts = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
tok = Tokenizer.from_file(sys.argv[2]); tok.no_padding(); tok.no_truncation()
t0, c0 = time.perf_counter(), cpu()
n = 0
for i in range(0, len(texts), %d):
    n += sum(len(e.ids) for e in tok.encode_batch_fast(texts[i:i + %d], add_special_tokens=False))
print(json.dumps({"encode_s": time.perf_counter() - t0, "encode_cpu_s": cpu() - c0, "tokens": n}))
""" % (BATCH, BATCH)  # noqa: UP031  (the child's code has braces of its own)


def first_lines(path: str, limit: int | None) -> str:
    """The file's first `limit` lines in a temporary file of their own (removed at the end), or the file."""
    if not limit:
        return path
    with open(path, "rb") as src, tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as part:
        for _i, line in zip(range(limit), src):
            part.write(line)
    return part.name


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def render_all(data: str, tok_dir: str, chat: dict):
    import orjson

    from mintdim.sources.chat import ChatRenderer
    from mintdim.tokenizers.kinds import load

    tok = load("hf_dir", tok_dir)
    added = [t.content for t in tok.tok.get_added_tokens_decoder().values() if t.special]
    opts = {"messages": "messages", "role": "role", "content": "content", **chat}
    plain = ChatRenderer(tok.chat_template, tok.special_tokens, opts)
    masked = ChatRenderer(tok.chat_template, tok.special_tokens, opts, ["assistant"], added)
    with open(data, "rb") as f:
        rows = [orjson.loads(line) for line in f if line.strip()]
    t0 = time.process_time()
    texts = [plain.render(o, data, 0) for o in rows]
    t1 = time.process_time()
    for o in rows:
        masked.render_with_spans(o, data, 0)
    t2 = time.process_time()
    return texts, t1 - t0, t2 - t1


def run_raw(texts_path: str, tok_dir: str, cores: int) -> tuple[float, float, int]:
    env = dict(os.environ, RAYON_NUM_THREADS=str(cores))
    out = subprocess.run(
        [sys.executable, "-c", RAW_CHILD, texts_path, os.path.join(tok_dir, "tokenizer.json")],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["encode_s"], got["encode_cpu_s"], got["tokens"]


def run_build(work: str, config: dict, cores: int, python: str | None = None) -> tuple[float, float, dict]:
    """python: another MintDim's interpreter (--baseline); default this checkout's."""
    shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
    shutil.rmtree(os.path.join(work, ".mintdim"), ignore_errors=True)
    path = os.path.join(work, "cfg.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    env = (
        dict(os.environ)
        if python
        else dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    )
    env.pop("RAYON_NUM_THREADS", None)
    c0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(
        [python or sys.executable, "-m", "mintdim", "build", path, "--cores", str(cores)],
        cwd=work,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    with open(os.path.join(work, "out", "stats.json"), encoding="utf-8") as f:
        return wall, cpu, json.load(f)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="a JSONL file of conversations")
    p.add_argument("--tokenizer", required=True, help="a tokenizer directory (hf_dir)")
    p.add_argument(
        "--chat", default=json.dumps(SHAREGPT), help="source.chat options as JSON (default: ShareGPT)"
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--baseline",
        default=None,
        metavar="PYTHON",
        help="also build with another MintDim's interpreter (its venv) in every round: before/after",
    )
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations of --data")
    p.add_argument("--pairs", default=None, help="also field-template builds of this prompt/response JSONL")
    args = p.parse_args()
    chat = json.loads(args.chat)
    data, tok_dir = first_lines(os.path.abspath(args.data), args.limit), os.path.abspath(args.tokenizer)
    pairs = first_lines(os.path.abspath(args.pairs), args.limit) if args.pairs else None
    texts, render_s, spans_s = render_all(data, tok_dir, chat)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(
        f"{len(texts)} conversations, {mb:.1f} MB rendered; render {render_s:.2f} s, "
        f"render with mask spans {spans_s:.2f} s (one thread)",
        flush=True,
    )
    base = {
        "source": {"files": [data], "chat": chat},
        "tokenizer": {"hf_dir": {"path": tok_dir}},
        "units": {"sizes": [SIZES], "build_batch": [BATCH]},
        "output": {"dir": "out", "samples_per_shard": [10000]},
    }
    masked = json.loads(json.dumps(base))
    masked["source"]["train_on"] = [["assistant"]]
    configs = {"build": base, "build+masks": masked}
    if pairs:
        fields = {"files": [pairs], "fields": [["prompt", "response"]], "templates": ["{prompt}\n{response}"]}
        configs["fields"] = {**base, "source": fields}
        configs["fields+masks"] = {**base, "source": {**fields, "train_on": [["response"]]}}
    names = list(configs) + (["baseline build", "baseline build+masks"] if args.baseline else [])
    res = {k: [] for k in ["raw"] + names}
    cpu = {k: [] for k in ["raw"] + names}
    with tempfile.TemporaryDirectory(prefix="mintdim-chat-bench-") as work:
        texts_path = os.path.join(work, "texts.jsonl")
        with open(texts_path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps(t, ensure_ascii=False) + "\n")
        del texts
        for r in range(args.runs):
            raw, raw_cpu, tokens = run_raw(texts_path, tok_dir, args.cores)
            res["raw"].append(raw)
            cpu["raw"].append(raw_cpu)
            line = [f"run {r + 1}: raw {raw:6.2f} s (cpu {raw_cpu:.2f})"]
            order = [(name, configs[name.replace("baseline ", "")]) for name in names]
            for name, cfg in order if r % 2 == 0 else order[::-1]:  # alternate the order: load drifts
                wall, c, stats = run_build(
                    work, cfg, args.cores, args.baseline if name.startswith("baseline") else None
                )
                if not name.startswith("fields"):  # the same texts
                    assert stats["total_tokens"] == tokens, (stats["total_tokens"], tokens)
                res[name].append(wall)
                cpu[name].append(c)
                line.append(f"{name} {wall:6.2f} s (cpu {c:.2f})")
            print(", ".join(line), f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    print(
        f"\nmedians of {args.runs}: raw encode {med['raw']:.2f} s; mintdim build {med['build']:.2f} s = "
        f"{med['build'] / med['raw']:.3f}x; with train_on assistant {med['build+masks']:.2f} s = "
        f"{med['build+masks'] / med['raw']:.3f}x"
    )
    print(
        "spread (min-max wall): "
        + ", ".join(f"{k} {min(v):.2f}-{max(v):.2f} s" for k, v in res.items())
        + "; with masks / without, per round: "
        + " ".join(f"{m / b:.3f}" for m, b in zip(res["build+masks"], res["build"]))
    )
    for path in (data, pairs) if args.limit else ():
        if path:
            os.unlink(path)
    mc = {k: statistics.median(v) for k, v in cpu.items()}
    print(
        f"CPU medians: raw encode {mc['raw']:.2f} s; build {mc['build']:.2f} s = "
        f"{mc['build'] / mc['raw']:.3f}x; with masks {mc['build+masks']:.2f} s = "
        f"{mc['build+masks'] / mc['raw']:.3f}x"
    )
    if args.baseline:
        for name in ("build", "build+masks"):
            print(
                f"{name}: this / baseline = {med[name] / med['baseline ' + name]:.3f} wall, "
                f"{mc[name] / mc['baseline ' + name]:.3f} CPU (medians of the same rounds)"
            )
    print(
        f"ratios of medians: with masks / raw encode {med['build+masks'] / med['raw']:.3f} wall; "
        f"with masks / without {med['build+masks'] / med['build']:.3f} wall, "
        f"{mc['build+masks'] / mc['build']:.3f} CPU"
        + (
            f"; field templates with train_on / without {med['fields+masks'] / med['fields']:.3f} wall, "
            f"{mc['fields+masks'] / mc['fields']:.3f} CPU"
            if pairs
            else ""
        )
        + f" (load average at the end {os.getloadavg()[0]:.1f})"
    )
    for name in ("build", "build+masks"):
        c = statistics.median(cpu[name])
        share = (render_s if name == "build" else spans_s) / c
        print(
            f"{name}: CPU {c:.2f} s, of which rendering{' with spans' if name != 'build' else ''} "
            f"{share:.1%} (measured alone)"
        )


if __name__ == "__main__":
    main()
