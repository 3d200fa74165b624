#!/usr/bin/env python3
"""Where a tokenize job's time goes beyond the encode call.

On chunk 0 of --data (chunk size --chunk-mb), one thread, CPU seconds (getrusage), each
measurement in a fresh process, rounds interleaved, medians:
  job      tokenize_chunk as a build job runs it (tokenizer load included)
  raw      the tokenizer's own batch encode of the same rendered texts, batches of --batch
  phases   read, JSON parse, field check, render, UTF-8 + SHA-256 over the chunk, each on its own
and, with --profile, a cProfile (CPU timer) of one job: the functions beyond the encode.
When pre-flight picks the fast engine (hf_json / hf_dir byte-level BPE), job and raw both use it.

    python benchmarks/tokenize_job.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/minilm/tokenizer.json --chunk-mb 16
    python benchmarks/tokenize_job.py ... --kind hf_dir --tokenizer ../assets/hf/qwen3 --chunk-mb 16
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def setup(spec: dict):
    from mintdim.sources import jsonl
    from mintdim.stages.preflight import preflight

    kind = spec.get("kind") or ("sentencepiece" if spec["tokenizer"].endswith(".model") else "hf_json")
    options = {"pad_token": spec["pad_token"]} if spec.get("pad_token") else {}
    raw = {
        "source": {"files": [spec["data"]], "fields": [spec["fields"]], "templates": [spec["template"]]},
        "tokenizer": {kind: {"path": spec["tokenizer"], **options}},
        "units": {"sizes": [[128 * 2**i for i in range(12)]], "build_batch": [spec["batch"]]},
        "output": {"dir": os.path.join(spec["work"], "out"), "samples_per_shard": [10000]},
        "work_dir": os.path.join(spec["work"], "work"),
        "chunk_mb": spec["chunk_mb"],
    }
    build, metas = preflight(raw)
    entry = build.files[0]
    start, end = jsonl.chunk_bounds(entry.abspath, build.chunk_mb)[0]
    return build, metas, entry, start, end


def child(mode: str, spec: dict) -> dict:
    os.environ["RAYON_NUM_THREADS"] = "1"
    from mintdim.sources import jsonl
    from mintdim.sources import template as T
    from mintdim.stages.tokenize import tokenize_chunk
    from mintdim.tokenizers.engines import cache_dir
    from mintdim.tokenizers.kinds import load

    build, metas, entry, start, end = setup(spec)
    tpl = T.parse(entry.source.template)
    out = os.path.join(spec["work"], f"chunk-{os.getpid()}")
    if mode == "job":
        c0 = cpu()
        tokenize_chunk(build, metas, 0, 0, out, threads=1, log=lambda *a: None)
        return {"job": cpu() - c0}
    lines = [raw for _, raw in jsonl.ChunkReader(entry.abspath, start, end, entry.path)]
    if mode == "raw":
        texts = [tpl.render(jsonl.parse_object(r, entry.path, 0)) for r in lines]
        c0 = cpu()
        engine = metas[
            entry.tokenizer.abspath
        ].engine  # the fast engine when pre-flight chose it (as the job)
        tok = load(
            entry.tokenizer.kind,
            entry.tokenizer.abspath,
            threads=1,
            engine=engine,
            engine_cache=cache_dir(build.work_dir) if engine else None,
            **(entry.tokenizer.options or {}),
        )
        c1 = cpu()
        for i in range(0, len(texts), spec["batch"]):
            tok.encode_ids(texts[i : i + spec["batch"]])
        return {"load": c1 - c0, "raw": cpu() - c1, "samples": len(texts), "mb": sum(map(len, lines)) / 1e6}
    if mode == "phases":
        res = {}
        c = cpu()
        lines = [raw for _, raw in jsonl.ChunkReader(entry.abspath, start, end, entry.path)]
        res["read"] = cpu() - c
        c = cpu()
        objs = [jsonl.parse_object(r, entry.path, 0) for r in lines]
        res["parse"] = cpu() - c
        c = cpu()
        for o in objs:
            jsonl.declared_values(o, entry.source.fields, entry.path, 0)
        res["check"] = cpu() - c
        c = cpu()
        texts = [tpl.render(o) for o in objs]
        res["render"] = cpu() - c
        c = cpu()
        for t in texts:
            hashlib.sha256(t.encode("utf-8")).digest()
        res["hash"] = cpu() - c
        return res
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)
    prof.enable()
    tokenize_chunk(build, metas, 0, 0, out, threads=1, log=lambda *a: None)
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    return {"profile": s.getvalue()}


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "_child":
        with open(sys.argv[3], encoding="utf-8") as f:
            print(json.dumps(child(sys.argv[2], json.load(f))))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True)
    p.add_argument("--template", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument(
        "--kind",
        choices=("hf_json", "hf_dir", "sentencepiece"),
        help="the tokenizer kind (default: sentencepiece for .model, else hf_json)",
    )
    p.add_argument("--pad-token", help="hf_dir: the existing token to pad with (a directory without one)")
    p.add_argument("--chunk-mb", type=int, default=16)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="mintdim-jobprof-")
    spec = {
        "data": os.path.abspath(args.data),
        "fields": [f for f in args.fields.split(",") if f],
        "template": args.template.encode("latin-1", "backslashreplace").decode("unicode_escape"),
        "tokenizer": os.path.abspath(args.tokenizer),
        "kind": args.kind,
        "pad_token": args.pad_token,
        "chunk_mb": args.chunk_mb,
        "batch": args.batch,
        "work": work,
    }
    spec_path = os.path.join(work, "spec.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    results: dict[str, list[float]] = {}
    info = {}
    try:
        for _ in range(args.rounds):
            for mode in ("job", "raw", "phases"):
                out = subprocess.run(
                    [sys.executable, HERE, "_child", mode, spec_path],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                got = json.loads(out.strip().splitlines()[-1])
                for k, v in got.items():
                    if k in ("samples", "mb"):
                        info[k] = v
                    else:
                        results.setdefault(k, []).append(v)
        med = {k: statistics.median(v) for k, v in results.items()}
        print(
            f"{os.path.basename(args.tokenizer)}, chunk 0: {info['samples']} samples, {info['mb']:.1f} MB, "
            f"medians of {args.rounds} (CPU s)"
        )
        print(
            f"job {med['job']:.3f} | raw encode {med['raw']:.3f} | job / raw {med['job'] / med['raw']:.3f} | "
            f"tokenizer load {med['load']:.3f}"
        )
        for k in ("read", "parse", "check", "render", "hash"):
            print(f"  {k:8s} {med[k]:.3f} s = {100 * med[k] / med['raw']:.1f}% of the encode")
        if args.profile:
            out = subprocess.run(
                [sys.executable, HERE, "_child", "profile", spec_path],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            print(json.loads(out.strip().splitlines()[-1])["profile"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
