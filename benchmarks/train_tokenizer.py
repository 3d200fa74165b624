#!/usr/bin/env python
"""Training a tokenizer from the dataset: MintDim's train stage vs Hugging Face's and SentencePiece's
trainers, and encode throughput of the unitoken kind vs its tokenizer.json export.

    python benchmarks/train_tokenizer.py --data ../assets/data/sharegpt_pairs.jsonl --fields prompt,response \
        --template '{prompt}\\n{response}' --vocab-size 32000 [--limit-mb 32] [--cores 2] \
        [--trainers mintdim,mintdim-window,hf,sentencepiece] [--window 4096] [--json PATH]

Every trainer runs in its own fresh Python process and reads the same JSONL, renders the same template and
trains to the same vocabulary size with <unk> and <pad> reserved:

  mintdim        mintdim.stages.train.run: the body of the `train_tokenizer` Snakemake job (streaming rendered
                 samples into ffbpe's native word counter, BpeTrainer byte-level, save, record)
  mintdim-window the same with hot_pair_window_size (--window, default 4096): bounded trainer memory
  hf             tokenizers: ByteLevel(add_prefix_space=False)
                 + BpeTrainer(initial_alphabet=ByteLevel.alphabet())
                 via train_from_iterator over the same rendered texts (RAYON_NUM_THREADS=cores)
  sentencepiece  SentencePieceTrainer.train(sentence_iterator=..., model_type=bpe, byte_fallback=True,
                 num_threads=cores, max_sentence_length large enough for every sample)

Wall time covers reading, rendering, counting, training and saving; peak RSS is the process's own
peak resident set (VmHWM; each trainer is in-process, threads included). Then the trained MintDim model is
exported to tokenizer.json (mintdim tokenizer export) and both are timed encoding every rendered text
through MintDim's own kinds (unitoken: load("unitoken"), hf_json: load("hf_json")), batches of 4096, with
1 thread and with --cores threads; the ids of both are checked to be identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))
MB = 1024 * 1024
BATCH = 4096


def rendered(data: str, fields: list[str], template: str):
    from mintdim.sources import template as T

    tpl = T.parse(template)
    with open(data, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            obj = json.loads(line)
            yield tpl.render({k: obj[k] for k in fields})


def maxrss_mb() -> float:
    """Peak RSS of this child's own address space (VmHWM; ru_maxrss survives fork and exec)."""
    from mintdim.progress import peak_rss_mb

    peak = peak_rss_mb()
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------------------------- children


def child_mintdim(a) -> dict:
    from mintdim.stages import train

    opts = {"vocab_size": a.vocab_size, "out": a.out}
    if a.window:
        opts["hot_pair_window_size"] = a.window
    raw = {
        "source": {"files": [a.data], "fields": [a.fields], "templates": [a.template]},
        "tokenizer": {"train_bpe": opts},
        "units": {"sizes": [[1 << 20]], "build_batch": [BATCH]},
        "output": {"dir": os.path.join(a.work, "unused-output"), "samples_per_shard": [1]},
        "work_dir": os.path.join(a.work, "mintdim-work"),
    }
    t0 = time.perf_counter()
    record = train.run(
        raw, 0, os.path.join(a.work, "mintdim-work", "t0.json"), log=lambda m: None, threads=a.cores
    )
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "peak_rss_mb": maxrss_mb(),
        "vocab": record["run"]["vocab_size"],
        "count_s": record["run"]["count_seconds"],
        "train_s": record["run"]["train_seconds"],
    }


def child_hf(a) -> dict:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    t0 = time.perf_counter()
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=a.vocab_size,
        special_tokens=["<unk>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(rendered(a.data, a.fields, a.template), trainer=trainer)
    tok.save(a.out)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "peak_rss_mb": maxrss_mb(), "vocab": tok.get_vocab_size()}


def child_sentencepiece(a) -> dict:
    import sentencepiece as spm

    longest = max(len(t.encode("utf-8")) for t in rendered(a.data, a.fields, a.template))  # untimed
    t0 = time.perf_counter()
    with open(a.out, "wb") as model:
        spm.SentencePieceTrainer.train(
            sentence_iterator=rendered(a.data, a.fields, a.template),
            model_writer=model,
            vocab_size=a.vocab_size,
            model_type="bpe",
            byte_fallback=True,
            num_threads=a.cores,
            max_sentence_length=longest + 1,
            input_sentence_size=0,
            unk_id=0,
            pad_id=1,
            bos_id=-1,
            eos_id=-1,
            minloglevel=2,
        )
    wall = time.perf_counter() - t0
    sp = spm.SentencePieceProcessor(model_file=a.out)
    return {"wall_s": wall, "peak_rss_mb": maxrss_mb(), "vocab": sp.get_piece_size()}


def child_encode(a) -> dict:
    from mintdim.tokenizers.kinds import load

    texts = list(rendered(a.data, a.fields, a.template))
    size = sum(len(t.encode("utf-8")) for t in texts)
    tok = load(a.kind, a.out, threads=a.cores)
    digest = hashlib.sha256()
    tokens = 0
    t0 = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        flat, lengths = tok.encode_batch(texts[i : i + BATCH])
        digest.update(flat.astype("<u4").tobytes())
        digest.update(lengths.astype("<i8").tobytes())
        tokens += int(lengths.sum())
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "mb_per_s": size / MB / wall,
        "tokens": tokens,
        "ids_sha256": digest.hexdigest(),
        "peak_rss_mb": maxrss_mb(),
    }


CHILDREN = {
    "mintdim": child_mintdim,
    "mintdim-window": child_mintdim,
    "hf": child_hf,
    "sentencepiece": child_sentencepiece,
    "encode": child_encode,
}


# --------------------------------------------------------------------------------------------- parent


def run_child(mode: str, args, out: str, extra=(), env=None) -> dict:
    cmd = [
        sys.executable,
        HERE,
        "--child",
        mode,
        "--data",
        args.data,
        "--fields",
        ",".join(args.fields),
        "--template",
        args.template,
        "--vocab-size",
        str(args.vocab_size),
        "--cores",
        str(args.cores),
        "--work",
        args.work,
        "--out",
        out,
        "--window",
        str(args.window),
        *extra,
    ]
    res = subprocess.run(
        cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})), timeout=args.timeout
    )
    if res.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def limited_copy(data: str, limit_mb: float | None, work: str) -> str:
    if not limit_mb:
        return os.path.abspath(data)
    path = os.path.join(work, "corpus.jsonl")
    budget = int(limit_mb * MB)
    with open(data, "rb") as src, open(path, "wb") as dst:
        for line in src:
            if budget <= 0:
                break
            dst.write(line)
            budget -= len(line)
    return path


def same_vocab(ffbpe_dir: str, hf_json: str) -> bool:
    with open(os.path.join(ffbpe_dir, "vocab.json"), encoding="utf-8") as f:
        ours = json.load(f)
    with open(hf_json, encoding="utf-8") as f:
        theirs = json.load(f)["model"]["vocab"]
    return ours == theirs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--fields", required=True, help="comma-separated keys")
    p.add_argument("--template", required=True, help="backslash escapes decoded as typed in a shell")
    p.add_argument("--vocab-size", type=int, default=32000)
    p.add_argument("--limit-mb", type=float, default=None, help="use only the first N MB of --data")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--trainers", default="mintdim,mintdim-window,hf,sentencepiece")
    p.add_argument("--window", type=int, default=4096, help="hot_pair_window_size of the mintdim-window row")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--work", default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--kind", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.fields = a.fields.split(",")
    if a.child:
        print(json.dumps(CHILDREN[a.child](a)))
        return 0
    a.template = a.template.encode("latin-1", "backslashreplace").decode("unicode_escape")
    own_work = a.work is None
    a.work = a.work or tempfile.mkdtemp(prefix="mintdim-train-bench-")
    try:
        a.data = limited_copy(a.data, a.limit_mb, a.work)
        size = sum(len(t.encode("utf-8")) for t in rendered(a.data, a.fields, a.template))
        print(f"corpus: {a.data}, {size / MB:.1f} MB rendered; vocab {a.vocab_size}; cores {a.cores}")
        rows, models = {}, {}
        for name in a.trainers.split(","):
            out = os.path.join(
                a.work,
                {
                    "mintdim": "mintdim-model",
                    "mintdim-window": "mintdim-window-model",
                    "hf": "hf.json",
                    "sentencepiece": "sp.model",
                }[name],
            )
            b = argparse.Namespace(**{**vars(a), "window": a.window if name == "mintdim-window" else 0})
            rows[name] = run_child(name, b, out)
            models[name] = out
            r = rows[name]
            print(
                f"train {name:14s} wall {r['wall_s']:7.1f} s   peak RSS {r['peak_rss_mb']:7.0f} MB   "
                f"vocab {r['vocab']}",
                flush=True,
            )
        result = {"corpus_mb": size / MB, "vocab_size": a.vocab_size, "cores": a.cores, "train": rows}
        if "mintdim" in models and "mintdim-window" in models:
            result["window_same_model"] = all(
                open(os.path.join(models["mintdim"], n), "rb").read()
                == open(os.path.join(models["mintdim-window"], n), "rb").read()
                for n in ("vocab.json", "merges.txt")
            )
            print(f"hot_pair_window_size={a.window} gives the same model: {result['window_same_model']}")
        if "mintdim" in models and "hf" in models:
            result["same_vocab_as_hf"] = same_vocab(models["mintdim"], models["hf"])
            print(f"MintDim's vocabulary identical to HF BpeTrainer's: {result['same_vocab_as_hf']}")
        if "mintdim" in models:
            from mintdim.tokenizers.export import export

            exported = os.path.join(a.work, "mintdim-export.json")
            export(models["mintdim"], exported)
            enc = {}
            for kind, path in (("unitoken", models["mintdim"]), ("hf_json", exported)):
                for threads in sorted({1, a.cores}):
                    key = f"{kind} x{threads}"
                    b = argparse.Namespace(**{**vars(a), "cores": threads})
                    enc[key] = run_child(
                        "encode", b, path, extra=["--kind", kind], env={"RAYON_NUM_THREADS": str(threads)}
                    )
                    e = enc[key]
                    print(
                        f"encode {key:12s} {e['mb_per_s']:6.1f} MB/s   {e['tokens']} tokens   "
                        f"wall {e['wall_s']:.1f} s",
                        flush=True,
                    )
            result["encode"] = enc
            result["identical_ids"] = len({e["ids_sha256"] for e in enc.values()}) == 1
            print(f"identical ids (unitoken vs tokenizer.json export): {result['identical_ids']}")
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    finally:
        if own_work:
            shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    sys.exit(main())
