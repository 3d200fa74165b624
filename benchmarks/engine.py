#!/usr/bin/env python3
"""The fast byte-level BPE engine (mintdim/tokenizers/engines.py) against `tokenizers`' own encode_batch_fast.

One run measures, on the same rendered texts and the same cores, interleaved round by round:
  hf-fast      tokenizers encode_batch_fast, RAYON_NUM_THREADS=N, batches of 4096 (encode only)
  tiktoken     MintDim's engine alone (tiktoken with the file's checked ranks), N threads (encode only)
  mintdim-cN   `mintdim build --cores N` with the engine (the whole build, pre-flight included)
  mintdim-lib  the same build with MINTDIM_ENGINE=tokenizers (the library path), for reference
and checks that both encoders give the same ids (SHA-256 over every id, in order) and that
every build has their token total. MintDim's hf_json kind needs UNK and PAD ids; files without
them (Llama-3, Qwen3) are given a copy naming existing special tokens as UNK and PAD (ids
unchanged: byte-level BPE with every byte in its vocabulary never emits UNK).

    python benchmarks/engine.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \\
        --template '{prompt}\\n{response}' --tokenizer ../assets/hf/llama3.2/tokenizer.json \\
        --tokenizer ../assets/hf/qwen3/tokenizer.json --cores 2 --runs 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402  (the shared measuring helpers)

HERE = os.path.abspath(__file__)


def child_encode(spec: dict) -> None:
    """Read and render (untimed), load, then encode every text; ids digest and timings to result.json."""
    import numpy as np

    texts = C.read_rendered(spec["data"], spec["fields"], spec["template"])
    t0, c0 = time.perf_counter(), C.cpu_self()
    if spec["engine"] == "tiktoken":
        from mintdim.tokenizers.engines import fast_encoder_for

        enc, reason = fast_encoder_for(spec["tokenizer"], threads=spec["cores"])
        if enc is None:
            raise SystemExit(f"not eligible: {reason}")
        encode = enc.encode_ids
    else:
        encode = C.load_encoder("hf_json", spec["tokenizer"], spec["cores"])
    t1, c1 = time.perf_counter(), C.cpu_self()
    digest = hashlib.sha256()
    lengths = []
    for i in range(0, len(texts), C.BATCH):
        for ids in encode(texts[i : i + C.BATCH]):
            lengths.append(len(ids))
            digest.update(np.asarray(ids, dtype=np.uint32).tobytes())
            digest.update(b"|")
    t2, c2 = time.perf_counter(), C.cpu_self()
    C.write_json(
        spec["result"],
        {
            "load_wall_s": t1 - t0,
            "load_cpu_s": c1 - c0,
            "encode_wall_s": t2 - t1,
            "encode_cpu_s": c2 - c1,
            "samples": len(texts),
            "total_tokens": int(sum(lengths)),
            "ids_sha256": digest.hexdigest(),
            "max_tokens": max(lengths, default=0),
        },
    )


def buildable_copy(src: str, root: str) -> str:
    """The tokenizer.json itself when it names UNK and PAD, else a copy naming existing special tokens."""
    with open(src, encoding="utf-8") as f:
        spec = json.load(f)
    if spec["model"].get("unk_token") and spec.get("padding"):
        return src
    specials = [a for a in spec.get("added_tokens") or [] if a.get("special")]
    pad = next((a for a in specials if "pad" in a["content"]), specials[-1])
    unk = next(a for a in reversed(specials) if a is not pad)
    spec["model"]["unk_token"] = unk["content"]
    spec["padding"] = {
        "strategy": "BatchLongest",
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": pad["id"],
        "pad_type_id": 0,
        "pad_token": pad["content"],
    }
    path = os.path.join(root, f"{abs(hash(src)) % 10**8}-tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    return path


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "_child":
        with open(sys.argv[3], encoding="utf-8") as f:
            child_encode(json.load(f))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True)
    p.add_argument("--template", required=True)
    p.add_argument(
        "--tokenizer", action="append", required=True, help="a byte-level BPE tokenizer.json (repeat)"
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--no-library-build", action="store_true", help="skip the mintdim-lib row")
    p.add_argument("--build-batch", type=int, default=4096)
    p.add_argument("--samples-per-shard", type=int, default=10000)
    p.add_argument("--chunk-mb", type=int, default=None)
    p.add_argument("--work", default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    C.byte_compile_mintdim()
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": args.cores,
        "cpu_count": os.cpu_count(),
        "tokenizers": {},
    }
    for tokenizer in args.tokenizer:
        a = argparse.Namespace(**{**vars(args), "tokenizer": tokenizer, "peers": "none", "scale": 1})
        b = C.Bench(a)
        try:
            build_tok = buildable_copy(b.tokenizer, b.root)
            rows: dict[str, list[dict]] = {
                "hf-fast": [],
                "tiktoken": [],
                f"mintdim-c{args.cores}": [],
                "mintdim-lib": [],
            }
            sizes = None
            for r in range(args.runs):
                for engine in ("hf", "tiktoken"):
                    d = b.run_dir(engine)
                    spec = b.spec_file(d, b.data, engine=engine)
                    m = C.measure(
                        [sys.executable, HERE, "_child", "encode", spec],
                        cwd=d,
                        env=b.env(),
                        log_path=os.path.join(d, "log.txt"),
                    )
                    res = os.path.join(d, "result.json")
                    if m["rc"] != 0 or not os.path.exists(res):
                        raise SystemExit(f"{engine} failed:\n{C.log_tail(m['log'])}")
                    with open(res, encoding="utf-8") as f:
                        m.update(json.load(f))
                    m["process_wall_s"], m["wall_s"], m["cpu_s"] = (
                        m["wall_s"],
                        m["encode_wall_s"],
                        m["encode_cpu_s"],
                    )
                    rows["hf-fast" if engine == "hf" else "tiktoken"].append(m)
                    if sizes is None:
                        sizes = C.default_sizes(m["max_tokens"])
                b.tokenizer = build_tok
                for name, engine_env in ((f"mintdim-c{args.cores}", "auto"), ("mintdim-lib", "tokenizers")):
                    if name == "mintdim-lib" and args.no_library_build:
                        continue
                    os.environ["MINTDIM_ENGINE"] = engine_env
                    try:
                        rows[name].append(b.run_mintdim(b.data, args.cores, sizes))
                    finally:
                        os.environ.pop("MINTDIM_ENGINE", None)
                b.tokenizer = os.path.abspath(tokenizer)
                hf, tk = rows["hf-fast"][-1], rows["tiktoken"][-1]
                print(
                    f"[{os.path.basename(os.path.dirname(tokenizer))} round {r + 1}] hf-fast "
                    f"{hf['wall_s']:.2f} s, tiktoken {tk['wall_s']:.2f} s, "
                    + ", ".join(
                        f"{k} {v[-1]['wall_s']:.2f} s"
                        for k, v in rows.items()
                        if k not in ("hf-fast", "tiktoken") and v
                    ),
                    flush=True,
                )
            report["tokenizers"][tokenizer] = print_summary(tokenizer, rows)
        finally:
            b.cleanup()
    if args.json:
        C.write_json(args.json, report)
    return 0


def print_summary(tokenizer: str, rows: dict[str, list[dict]]) -> dict:
    hf = rows["hf-fast"]
    base = C.median([m["wall_s"] for m in hf])
    digests = {m["ids_sha256"] for k in ("hf-fast", "tiktoken") for m in rows[k]}
    tokens = {m.get("total_tokens") for ms in rows.values() for m in ms}
    print(
        f"\n{tokenizer}: {hf[0]['samples']} samples, {hf[0]['total_tokens']} tokens; medians of {len(hf)} "
        f"runs; ids {'IDENTICAL' if len(digests) == 1 else 'DIFFERENT'} (sha256 "
        f"{sorted(digests)[0][:16]}...), token totals "
        f"{'equal' if len(tokens) == 1 else 'DIFFER: ' + str(tokens)}"
    )
    print("| row | wall s | / hf-fast | CPU s | peak RSS MB |\n|---|---|---|---|---|")
    out = {"ids_identical": len(digests) == 1, "tokens_equal": len(tokens) == 1, "rows": {}}
    for name, ms in rows.items():
        if not ms:
            continue
        if any("error" in m for m in ms):
            print(f"| {name} | failed: {C.error_line(next(m['error'] for m in ms if 'error' in m))} |")
            continue
        wall = C.median([m["wall_s"] for m in ms])
        cpu = C.median([m["cpu_s"] for m in ms])
        rss = C.median([m["peak_rss_mb"] for m in ms])
        print(f"| {name} | {wall:.2f} | {wall / base:.2f} | {cpu:.2f} | {rss:.0f} |")
        out["rows"][name] = {
            "wall_s": wall,
            "ratio": wall / base,
            "cpu_s": cpu,
            "peak_rss_mb": rss,
            "walls": [m["wall_s"] for m in ms],
        }
    return out


if __name__ == "__main__":
    sys.exit(main())
