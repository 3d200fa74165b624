#!/usr/bin/env python
"""Compare `mintdim build` with the tokenizer's own batch encode and with peers.

    python benchmarks/compare.py --data FILE.jsonl --fields prompt,response \
        --template '{prompt}\\n{response}' --tokenizer PATH --cores 2 [--runs 3] \
        [--scale K] [--peers hf_datasets,datatrove] [--sizes 128,256,...] [--work DIR] \
        [--memory] [--json PATH]

Every measured tool runs as its own subprocess on the same rendered texts and
the same tokenizer; see benchmarks/README.md for what each row measures, the
targets and how to read the output. Needs `pip install -e '.[bench]'`
for the peers (raw and mintdim rows need only mintdim itself and psutil).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.abspath(__file__)
BATCH = 4096  # texts per tokenizer call in the raw reference
MB = 1024 * 1024
GIB = 1024**3
ALL_PEERS = ("hf_datasets", "datatrove")

# Targets (on ~107 MB ShareGPT pairs, 2 cores), two of them raised since first set.
T_RATIO_430MB = 1.08  # mintdim wall / raw wall, at ~430 MB (the 107 MB file x4; first 1.10)
T_RATIO_1GB = 1.05  # ... at ~1 GB
T_FIXED_S = 3.0  # mintdim wall - raw wall (at 107 MB)
T_SPEEDUP = 1.85  # wall(--cores 1) / wall(--cores 2) (first 1.8)
T_PEAK_RSS = GIB  # peak RSS of the whole build's process tree
T_MEM_GROWTH = 1.2  # peak RSS at 4x input / at 1x


# ---------------------------------------------------------------------------
# helpers shared by parent and children


def parse_template(text: str):
    """MintDim's template rules: `{name}` placeholders, `{{`/`}}` literal braces, all else literal.

    Returns (literals, names) with len(literals) == len(names) + 1.
    """
    literals, names, buf = [], [], []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                buf.append("{")
                i += 2
                continue
            close = text.find("}", i + 1)
            if close < 0:
                raise ValueError(f"template: unbalanced '{{' at {text[i:]!r}")
            literals.append("".join(buf))
            buf = []
            names.append(text[i + 1 : close])
            i = close + 1
        elif ch == "}":
            if text.startswith("}}", i):
                buf.append("}")
                i += 2
                continue
            raise ValueError(f"template: unbalanced '}}' at {text[i:]!r}")
        else:
            buf.append(ch)
            i += 1
    literals.append("".join(buf))
    return literals, names


def make_renderer(template: str):
    literals, names = parse_template(template)
    first, rest = literals[0], list(zip(names, literals[1:]))

    def render(values) -> str:
        out = [first]
        for name, lit in rest:
            out.append(values[name])
            out.append(lit)
        return "".join(out)

    return render


def _json_loads():
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - orjson is a mintdim dependency
        return json.loads


def open_jsonl(path: str):
    """Binary line iterator over .jsonl / .jsonl.gz / .jsonl.zst."""
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".zst"):
        import io

        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")))
    return open(path, "rb")


def read_rendered(path: str, fields: list[str], template: str) -> list[str]:
    """Render every non-blank line of a JSONL file (blank lines are skipped, as MintDim does)."""
    loads, render = _json_loads(), make_renderer(template)
    texts = []
    with open_jsonl(path) as f:
        for line in f:
            if not line.strip():
                continue
            obj = loads(line)
            texts.append(render({k: obj[k] for k in fields}))
    return texts


def tokenizer_kind(path: str) -> str:
    if path.endswith(".model"):
        return "sentencepiece"
    if path.endswith(".json"):
        return "hf_json"
    raise SystemExit(f"--tokenizer: cannot tell the kind of {path!r} (want .model or .json)")


def load_encoder(kind: str, path: str, threads: int):
    """A function list[str] -> list[list[int]] (or list of
    encodings' ids), no special tokens, no truncation."""
    if kind == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=path)
        return lambda texts: sp.encode(texts, num_threads=threads)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return lambda texts: [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)


# ---------------------------------------------------------------------------
# children (run as `compare.py _child KIND SPEC.json`)


def child_raw(spec: dict) -> None:
    import numpy as np

    t0, c0 = time.perf_counter(), cpu_self()
    texts = read_rendered(spec["data"], spec["fields"], spec["template"])
    encode = load_encoder(spec["kind"], spec["tokenizer"], spec["cores"])
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    t1, c1 = time.perf_counter(), cpu_self()
    lengths = []
    for i in range(0, len(texts), BATCH):
        lengths.extend(len(ids) for ids in encode(texts[i : i + BATCH]))  # touches .ids of every encoding
    t2, c2 = time.perf_counter(), cpu_self()
    arr = np.asarray(lengths, dtype=np.int64)
    np.save(os.path.join(spec["out"], "lengths.npy"), arr)
    write_json(
        spec["result"],
        {
            "encode_wall_s": t2 - t1,
            "encode_cpu_s": c2 - c1,
            "read_render_wall_s": t1 - t0,
            "read_render_cpu_s": c1 - c0,
            "samples": len(texts),
            "text_bytes": nbytes,
            "total_tokens": int(arr.sum()),
            "max_tokens": int(arr.max()) if len(arr) else 0,
        },
    )


_HF_STATE: dict = {}


def _hf_tokenize(batch):
    """datasets.map function: render the template and encode (tokenizer loaded once per worker)."""
    st = _HF_STATE
    if "encode" not in st:
        with open(os.environ["MINTDIM_BENCH_SPEC"], encoding="utf-8") as f:
            spec = json.load(f)
        threads = 1  # num_proc=N worker processes, one tokenizer thread each (TOKENIZERS_PARALLELISM=false)
        st["fields"] = spec["fields"]
        st["render"] = make_renderer(spec["template"])
        st["encode"] = load_encoder(spec["kind"], spec["tokenizer"], threads)
    fields, render = st["fields"], st["render"]
    columns = [batch[k] for k in fields]
    texts = [render(dict(zip(fields, row))) for row in zip(*columns)]
    return {"input_ids": st["encode"](texts)}


def child_hf_datasets(spec: dict) -> None:
    os.environ["MINTDIM_BENCH_SPEC"] = spec["spec_path"]
    import datasets
    import pyarrow.compute as pc

    datasets.disable_progress_bars()
    cache = os.path.join(spec["out"], "hf_cache")
    ds = datasets.load_dataset("json", data_files=spec["data"], split="train", cache_dir=cache)
    features = datasets.Features({"input_ids": datasets.Sequence(datasets.Value("int32"))})
    nproc = spec["cores"] if spec["cores"] > 1 else None
    ds = ds.map(_hf_tokenize, batched=True, num_proc=nproc, remove_columns=ds.column_names, features=features)
    ds.save_to_disk(os.path.join(spec["out"], "saved"))
    lengths = pc.list_value_length(ds.data.table.column("input_ids"))
    write_json(
        spec["result"],
        {
            "samples": len(ds),
            "total_tokens": int(pc.sum(lengths).as_py() or 0),
            "datasets_version": datasets.__version__,
        },
    )


_DT_STATE: dict = {}


def _dt_adapter(self, data: dict, path: str, id_in_file):
    """datatrove reader adapter: the document text is the rendered template."""
    st = _DT_STATE
    if "render" not in st:
        with open(os.environ["MINTDIM_BENCH_SPEC"], encoding="utf-8") as f:
            spec = json.load(f)
        st["fields"], st["render"] = spec["fields"], make_renderer(spec["template"])
    return {
        "text": st["render"]({k: data[k] for k in st["fields"]}),
        "id": f"{path}/{id_in_file}",
        "media": [],
        "metadata": {},
    }


def child_datatrove(spec: dict) -> None:
    os.environ["MINTDIM_BENCH_SPEC"] = spec["spec_path"]
    import datatrove
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    n = spec["cores"]
    out = os.path.join(spec["out"], "tokens")
    pipeline = [
        JsonlReader(spec["dt_parts"], adapter=_dt_adapter, add_file_path=False),
        DocumentTokenizer(
            output_folder=out,
            tokenizer_name_or_path=spec["dt_tokenizer"],
            eos_token=None,
            shuffle_documents=False,
        ),
    ]
    LocalPipelineExecutor(
        pipeline=pipeline, tasks=n, workers=n, logging_dir=os.path.join(spec["out"], "logs")
    ).run()
    total = 0
    for name in sorted(os.listdir(out)):
        if name.endswith(".metadata"):
            with open(os.path.join(out, name), encoding="utf-8") as f:
                total += int(f.read().splitlines()[1])
    write_json(
        spec["result"], {"total_tokens": total, "datatrove_version": getattr(datatrove, "__version__", "?")}
    )


CHILDREN = {"raw": child_raw, "hf_datasets": child_hf_datasets, "datatrove": child_datatrove}


def child_main(kind: str, spec_path: str) -> None:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    spec["spec_path"] = spec_path
    CHILDREN[kind](spec)


# --------------------------------------------------------------------------- measuring a process tree


def _pss_bytes(pid: int) -> int:
    """Proportional set size from /proc (shared pages split between
    the processes sharing them); 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


# The sampler shares the machine with what it measures, so it must cost little. psutil's
# children(recursive=True) reads every process's /proc stat to find the tree, and the PSS read
# walks each process's page tables (holding its memory map lock): sampling a 107 MB MiniLM build
# that way every 0.1 s took 3.44 s of CPU in 27 s, 13% of one of the 2 cores the build was using.
# On Linux the tree comes from /proc/<pid>/task/<tid>/children, RSS and CPU from statm and stat
# (counters, no walk) every sample, and PSS every PSS_EVERY-th sample.
PSS_EVERY = 5
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# Linux offers /proc/<pid>/task/<tid>/children when built with CONFIG_PROC_CHILDREN; else psutil.
_HAS_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _proc_tree(pid: int) -> list[int] | None:
    """pid and its descendants from /proc/*/task/*/children; None where the kernel has no such file."""
    if not _HAS_CHILDREN:
        return None
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:  # the process ended meanwhile
            continue
        for t in tasks:  # a process starts children from any of its threads (Snakemake: a pool)
            try:
                with open(f"/proc/{p}/task/{t}/children", "rb") as f:
                    todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):  # that thread ended meanwhile
                pass
    return out


def _stat_of(pid: int) -> tuple[int, float, int] | None:
    """(RSS bytes, user+sys CPU s, start time in ticks) from /proc statm and stat; None once gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            rss = int(f.read().split()[1]) * _PAGE
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return rss, (int(fields[11]) + int(fields[12])) / _TICK, int(fields[19])  # utime, stime, starttime
    except (OSError, ValueError, IndexError):
        return None


def sample_tree(proc, cpu_seen: dict, with_pss: bool = True) -> tuple[int, int | None]:
    """Summed RSS (and PSS, with_pss) of proc and all its descendants; records each process's user+sys CPU
    in cpu_seen."""
    pids = _proc_tree(proc.pid)
    if pids is None:
        return _sample_tree_psutil(proc, cpu_seen)
    rss = pss = 0
    for pid in pids:
        st = _stat_of(pid)
        if st is None:
            continue
        rss += st[0]
        cpu_seen[(pid, st[2])] = st[1]
        if with_pss:
            pss += _pss_bytes(pid)
    return rss, (pss if with_pss else None)


def _sample_tree_psutil(proc, cpu_seen: dict) -> tuple[int, int]:
    import psutil

    rss = pss = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0, 0
    for p in procs:
        try:
            with p.oneshot():
                rss += p.memory_info().rss
                t = p.cpu_times()
                cpu_seen[(p.pid, p.create_time())] = t.user + t.system
            pss += _pss_bytes(p.pid)
        except psutil.Error:
            pass
    return rss, pss


def measure(cmd: list[str], cwd: str, env: dict, log_path: str, interval: float = 0.1) -> dict:
    """Run cmd and measure its whole process tree.

    wall_s: wall time; cpu_s: user+sys CPU of the tree, from getrusage(RUSAGE_CHILDREN) deltas (exact for
    every descendant that was waited for), or from per-process samples when those add up to more (workers
    that are never waited for, e.g. under a forkserver, do not reach RUSAGE_CHILDREN); peak_rss_mb: peak of
    the tree's summed RSS, sampled every `interval` s (counts shared pages once per process: an upper
    bound); peak_pss_mb: the same with PSS (shared pages split), every PSS_EVERY-th sample.
    """
    import psutil

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cpu_seen: dict = {}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        ps = psutil.Process(proc.pid)
        peak = [0, 0]
        done = threading.Event()

        def sample():
            n = 0
            while not done.is_set():
                rss, pss = sample_tree(ps, cpu_seen, with_pss=n % PSS_EVERY == 0)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss or 0)
                n += 1
                done.wait(interval)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = proc.wait()
        done.set()
        th.join()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_waited = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    cpu_sampled = sum(cpu_seen.values())
    return {
        "rc": rc,
        "wall_s": wall,
        "cpu_s": max(cpu_waited, cpu_sampled),
        "cpu_waited_s": cpu_waited,
        "cpu_sampled_s": cpu_sampled,
        "peak_rss_mb": peak[0] / MB,
        "peak_pss_mb": peak[1] / MB,
        "log": log_path,
    }


def log_tail(path: str, n: int = 12) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# --------------------------------------------------------------------------- the benchmark (parent)


class Bench:
    def __init__(self, args):
        self.args = args
        self.cores = args.cores
        self.fields = [f.strip() for f in args.fields.split(",") if f.strip()]
        self.template = decode_escapes(args.template)
        self.tokenizer = os.path.abspath(args.tokenizer)
        self.kind = tokenizer_kind(self.tokenizer)
        self.data = os.path.abspath(args.data)
        self.created_root = None
        self.root = self._make_root(args.work)
        self.counter = 0
        self.dt_tokenizer = None
        self.dt_parts = None

    # -- work dir: everything goes under a directory this script created, and only that is deleted
    def _make_root(self, work):
        if work:
            work = os.path.abspath(work)
            if not os.path.isdir(work):
                os.makedirs(work)
                self.created_root = work
            return tempfile.mkdtemp(prefix="mintdim-bench-", dir=work)
        return tempfile.mkdtemp(prefix="mintdim-bench-")

    def cleanup(self):
        if self.args.keep:
            print(f"\nwork dir kept: {self.root}")
            return
        shutil.rmtree(self.root, ignore_errors=True)
        if self.created_root and not os.listdir(self.created_root):
            os.rmdir(self.created_root)

    def run_dir(self, name: str) -> str:
        self.counter += 1
        d = os.path.join(self.root, f"run{self.counter:03d}-{name}")
        os.makedirs(d)
        return d

    def env(self, one_thread_per_process: bool = False, threads: int | None = None) -> dict:
        env = dict(os.environ)
        env["RAYON_NUM_THREADS"] = str(threads or self.cores)
        env["HF_HUB_OFFLINE"] = "1"
        env["HF_DATASETS_OFFLINE"] = "1"
        env["HF_HUB_DISABLE_TELEMETRY"] = "1"
        if one_thread_per_process and self.cores > 1:
            env["TOKENIZERS_PARALLELISM"] = "false"  # N worker processes x 1 tokenizer thread
        return env

    # -- inputs
    def scaled_input(self, k: int) -> str:
        """The input repeated k times; copy j > 0 gets "[j] " before its first field's value."""
        if k <= 1:
            return self.data
        path = os.path.join(self.root, f"input_x{k}.jsonl")
        if os.path.exists(path):
            return path
        import orjson

        t0 = time.perf_counter()
        first = self.fields[0]
        with open(path, "wb") as out:
            for j in range(k):
                with open_jsonl(self.data) as f:
                    for line in f:
                        if j == 0 or not line.strip():
                            out.write(line if line.endswith(b"\n") else line + b"\n")
                            continue
                        obj = orjson.loads(line)
                        obj[first] = f"[{j}] " + obj[first]
                        out.write(orjson.dumps(obj) + b"\n")
        print(
            f"[prep] wrote {k}x input {path} ({os.path.getsize(path) / MB:.1f} MB) in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        return path

    def datatrove_prep(self, data: str):
        """A tokenizer.json copy without truncation/padding/post-processor, and the input in N line-split
        parts (datatrove parallelises over files only)."""
        if self.dt_tokenizer is None:
            with open(self.tokenizer, encoding="utf-8") as f:
                tj = json.load(f)
            tj["truncation"] = None
            tj["padding"] = None
            tj["post_processor"] = None  # no [CLS]/[SEP]: the same ids as add_special_tokens=False
            self.dt_tokenizer = os.path.join(self.root, "datatrove-tokenizer.json")
            with open(self.dt_tokenizer, "w", encoding="utf-8") as f:
                json.dump(tj, f, ensure_ascii=False)
        parts = os.path.join(self.root, f"datatrove-parts-{abs(hash(data)) % 10**8}")
        if not os.path.isdir(parts):
            os.makedirs(parts)
            n = self.cores
            if n == 1 or data.endswith((".gz", ".zst")):
                os.symlink(data, os.path.join(parts, os.path.basename(data)))
            else:
                size = os.path.getsize(data)
                with open(data, "rb") as f:
                    for i in range(n):
                        end = size * (i + 1) // n
                        with open(os.path.join(parts, f"part{i:03d}.jsonl"), "wb") as out:
                            while f.tell() < end or i == n - 1:
                                line = f.readline()
                                if not line:
                                    break
                                out.write(line)
        return parts

    # -- the tools
    def spec_file(self, d: str, data: str, threads: int | None = None, **extra) -> str:
        spec = {
            "data": data,
            "fields": self.fields,
            "template": self.template,
            "tokenizer": self.tokenizer,
            "kind": self.kind,
            "cores": threads or self.cores,
            "out": d,
            "result": os.path.join(d, "result.json"),
        }
        spec.update(extra)
        path = os.path.join(d, "spec.json")
        write_json(path, spec)
        return path

    def run_child(
        self,
        name: str,
        data: str,
        one_thread: bool = False,
        keep: bool = False,
        threads: int | None = None,
        **extra,
    ) -> dict:
        """threads: the raw encode's threads (default --cores)."""
        d = self.run_dir(name if not threads else f"{name}-t{threads}")
        spec = self.spec_file(d, data, threads=threads, **extra)
        m = measure(
            [sys.executable, HERE, "_child", name, spec],
            cwd=d,
            env=self.env(one_thread, threads),
            log_path=os.path.join(d, "log.txt"),
        )
        res = os.path.join(d, "result.json")
        if m["rc"] == 0 and os.path.exists(res):
            with open(res, encoding="utf-8") as f:
                m.update(json.load(f))
            if name == "raw":
                import numpy as np

                m["lengths"] = np.load(os.path.join(d, "lengths.npy"))
        else:
            m["error"] = log_tail(m["log"])
        if not keep:
            shutil.rmtree(d, ignore_errors=True)
        return m

    def run_raw(self, data: str, threads: int | None = None) -> dict:
        m = self.run_child("raw", data, threads=threads)
        if "error" in m:
            raise SystemExit(f"raw encode failed:\n{m['error']}")
        m["process_wall_s"], m["process_cpu_s"] = m["wall_s"], m["cpu_s"]
        m["wall_s"], m["cpu_s"] = m["encode_wall_s"], m["encode_cpu_s"]  # the denominator: encode only
        return m

    def run_mintdim(
        self, data: str, cores: int, sizes: list[int], python: str = sys.executable, name: str | None = None
    ) -> dict:
        """python: the interpreter whose mintdim builds (--baseline: another checkout's venv)."""
        d = self.run_dir(name or f"mintdim-c{cores}")
        tok_key = "sentencepiece" if self.kind == "sentencepiece" else "hf_json"
        cfg = {
            "source": {"files": [data], "fields": [self.fields], "templates": [self.template]},
            "tokenizer": {tok_key: {"path": self.tokenizer}},
            "units": {"sizes": [sizes], "build_batch": [self.args.build_batch]},
            "output": {"dir": os.path.join(d, "out"), "samples_per_shard": [self.args.samples_per_shard]},
            "work_dir": os.path.join(d, "work"),
        }
        if self.args.chunk_mb:
            cfg["chunk_mb"] = self.args.chunk_mb
        import yaml

        cfg_path = os.path.join(d, "config.yaml")
        with open(cfg_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(cfg, f, allow_unicode=True, sort_keys=False)
        env = self.env()
        env.pop("RAYON_NUM_THREADS", None)  # mintdim gives each job its own threads
        m = measure(
            [python, "-m", "mintdim", "build", cfg_path, "--cores", str(cores)],
            cwd=d,
            env=env,
            log_path=os.path.join(d, "log.txt"),
        )
        stats = os.path.join(d, "out", "stats.json")
        if m["rc"] == 0 and os.path.exists(stats):
            with open(stats, encoding="utf-8") as f:
                s = json.load(f)
            m["total_tokens"], m["samples"] = s.get("total_tokens"), s.get("total_samples")
        else:
            m["error"] = log_tail(m["log"])
        if not self.args.keep:
            shutil.rmtree(d, ignore_errors=True)
        return m

    def run_peer(self, name: str, data: str) -> dict:
        if name == "hf_datasets":
            return self.run_child("hf_datasets", data, one_thread=True, keep=self.args.keep)
        parts = self.datatrove_prep(data)
        return self.run_child(
            "datatrove",
            data,
            one_thread=True,
            keep=self.args.keep,
            dt_parts=parts,
            dt_tokenizer=self.dt_tokenizer,
        )


def decode_escapes(s: str) -> str:
    """`\\n`, `\\t`, `\\\\`, `\\uXXXX` ... as typed in a shell; other characters (non-ASCII too) unchanged."""
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape")


def default_sizes(max_tokens: int) -> list[int]:
    sizes = [128]
    while sizes[-1] < max_tokens:
        sizes.append(sizes[-1] * 2)
    return sizes


def warn_sizes(sizes: list[int], lengths) -> None:
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > sizes[-1]:
        print(
            f"[sizes] warning: the longest sample has {longest} tokens > largest unit {sizes[-1]}: "
            f"mintdim will stop with UnitOverflowError",
            flush=True,
        )


def peer_status(name: str, kind: str) -> str | None:
    """None when the peer can run here, else why not."""
    import importlib.util

    mod = {"hf_datasets": "datasets", "datatrove": "datatrove"}[name]
    if importlib.util.find_spec(mod) is None:
        return f"`{mod}` is not installed (pip install -e '.[bench]')"
    if name == "datatrove" and kind != "hf_json":
        return (
            "DocumentTokenizer only takes a Hugging Face tokenizer (tokenizer.json), not a SentencePiece "
            ".model"
        )
    return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs: list[dict]) -> dict:
    ok = [r for r in runs if "error" not in r]
    return {
        "ok_runs": len(ok),
        "runs": len(runs),
        "wall_s": median([r["wall_s"] for r in ok]),
        "cpu_s": median([r["cpu_s"] for r in ok]),
        "peak_rss_mb": median([r["peak_rss_mb"] for r in ok]),
        "peak_pss_mb": median([r.get("peak_pss_mb") for r in ok]),
        "total_tokens": ok[0].get("total_tokens") if ok else None,
        "error": None if ok else (runs[0].get("error") if runs else "not run"),
    }


def verdict(value, target, better: str, unit: str = "", fmt: str = "{:.2f}") -> str:
    """'met' / 'MISSED' with the margin, for a value that must be
    <= (better='low') or >= (better='high') target."""
    if value is None:
        return "n/a"
    v, t = fmt.format(value) + unit, fmt.format(target) + unit
    if better == "low":
        ok, diff = value <= target, value - target
        rel = diff / target * 100 if target else 0.0
        sign = "<="
    else:
        ok, diff = value >= target, target - value
        rel = diff / target * 100 if target else 0.0
        sign = ">="
    margin = fmt.format(abs(diff)) + unit
    if ok:
        return f"{v} vs {sign} {t}: met (margin {margin})"
    return f"{v} vs {sign} {t}: MISSED by {margin} ({rel:.1f}% off)"


def error_line(text: str) -> str:
    """The most telling line of a failed run's log tail: a MintDim/Python error line, else the last line."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    for ln in lines:
        if "Error" in ln.split(":")[0] or ln.startswith("Error"):
            return ln
    return lines[-1] if lines else "(no output)"


def fmt(x, spec="{:.2f}", none="-"):
    return none if x is None else spec.format(x)


def print_table(rows: list[tuple[str, dict]], raw_wall: float, raw_tokens: int | None, build_row: str):
    head = (
        f"{'name':<16} {'wall s':>9} {'x raw':>7} {'CPU s':>9} {'RSS MB':>8} {'PSS MB':>8} {'fixed s':>8}"
        f"  tokens"
    )
    print(head)
    print("-" * len(head))
    for name, s in rows:
        if s["error"]:
            print(f"{name:<16} {'FAILED':>9}  {error_line(s['error'])}")
            continue
        ratio = s["wall_s"] / raw_wall if raw_wall else None
        fixed = s["wall_s"] - raw_wall if name == build_row else None
        tok = s.get("total_tokens")
        if name == "raw":
            check = f"{tok:,}"
        elif tok is None:
            check = "?"
        elif raw_tokens is not None and tok == raw_tokens:
            check = "= raw"
        else:
            check = f"{tok:,} != raw {raw_tokens:,}"
        print(
            f"{name:<16} {fmt(s['wall_s']):>9} {fmt(ratio, '{:.3f}'):>7} {fmt(s['cpu_s']):>9} "
            f"{fmt(s['peak_rss_mb'], '{:.0f}'):>8} {fmt(s['peak_pss_mb'], '{:.0f}'):>8} {fmt(fixed):>8}  "
            f"{check}" + (f"  ({s['ok_runs']}/{s['runs']} runs ok)" if s["ok_runs"] != s["runs"] else "")
        )


def compare_mode(b: Bench, args) -> dict:
    data = b.scaled_input(args.scale)
    in_mb = os.path.getsize(data) / MB
    peers, unavailable = [], {}
    for p in args.peers:
        why = peer_status(p, b.kind)
        if why:
            unavailable[p] = why
        else:
            peers.append(p)
    for p, why in unavailable.items():
        print(f"[peer] {p}: unavailable: {why}", flush=True)
    core_list = [b.cores] + ([1] if b.cores != 1 and not args.no_cores1 else [])
    runs = {"raw": []}
    if 1 in core_list[1:]:  # the scaling figure: the raw encode's own, on one thread, beside mintdim's
        runs["raw-c1"] = []
    for c in core_list:
        runs[f"mintdim-c{c}"] = []
    if args.baseline:  # another MintDim (its own venv), in the same rounds: before/after from one run
        runs["baseline"] = []
    for p in peers:
        runs[p] = []
    sizes = args.sizes
    for r in range(args.runs):
        print(f"[run {r + 1}/{args.runs}] raw", flush=True)
        m = b.run_raw(data)
        lengths = m.pop("lengths")
        runs["raw"].append(m)
        if sizes is None:
            sizes = default_sizes(int(lengths.max()) if len(lengths) else 1)
            print(
                f"[sizes] max tokens {int(lengths.max()) if len(lengths) else 0}: units {sizes}", flush=True
            )
        elif r == 0:
            warn_sizes(sizes, lengths)
        if "raw-c1" in runs:
            print(f"[run {r + 1}/{args.runs}] raw, 1 thread", flush=True)
            m1 = b.run_raw(data, threads=1)
            m1.pop("lengths")
            runs["raw-c1"].append(m1)
        for c in core_list:
            print(f"[run {r + 1}/{args.runs}] mintdim --cores {c}", flush=True)
            runs[f"mintdim-c{c}"].append(b.run_mintdim(data, c, sizes))
        if args.baseline:
            print(
                f"[run {r + 1}/{args.runs}] baseline mintdim --cores {b.cores} ({args.baseline})", flush=True
            )
            runs["baseline"].append(
                b.run_mintdim(data, b.cores, sizes, python=args.baseline, name="baseline")
            )
        for p in peers:
            print(f"[run {r + 1}/{args.runs}] {p}", flush=True)
            runs[p].append(b.run_peer(p, data))

    summary = {name: summarize(rs) for name, rs in runs.items()}
    raw = summary["raw"]
    raw_runs = runs["raw"]
    print()
    print(
        f"input {data}: {in_mb:.1f} MB, {raw_runs[0]['samples']:,} samples, "
        f"{raw_runs[0]['text_bytes'] / MB:.1f} MB rendered text, {raw['total_tokens']:,} tokens; "
        f"tokenizer {b.tokenizer} ({b.kind}); cores {b.cores}; medians of {args.runs} run(s)"
    )
    print(
        f"raw = encode only (read+render+tokenizer load before the timer: "
        f"{median([r['read_render_wall_s'] for r in raw_runs]):.2f} s; whole raw process "
        f"{median([r['process_wall_s'] for r in raw_runs]):.2f} s); "
        f"{raw['total_tokens'] / raw['wall_s'] / 1e6:.2f} M tokens/s, "
        f"{raw_runs[0]['text_bytes'] / MB / raw['wall_s']:.1f} MB/s"
    )
    print(f"units {sizes}, build_batch {args.build_batch}, samples_per_shard {args.samples_per_shard}\n")
    print_table(list(summary.items()), raw["wall_s"], raw["total_tokens"], f"mintdim-c{b.cores}")
    for p, why in unavailable.items():
        print(f"{p:<16} unavailable: {why}")

    # targets
    print("\ntargets (stated for ShareGPT pairs, 2 cores):")
    targets = {}
    mn = summary.get(f"mintdim-c{b.cores}")
    m1 = summary.get("mintdim-c1")
    if mn and not mn["error"]:
        ratio = mn["wall_s"] / raw["wall_s"]
        note = "" if 350 <= in_mb <= 700 else f"  [target is for ~430 MB; this input is {in_mb:.0f} MB]"
        targets["ratio_430mb"] = verdict(ratio, T_RATIO_430MB, "low", "x")
        print(f"  build wall / raw    <= {T_RATIO_430MB:.2f}x at ~430 MB: {targets['ratio_430mb']}{note}")
        if in_mb >= 800:
            targets["ratio_1gb"] = verdict(ratio, T_RATIO_1GB, "low", "x")
            print(f"  build wall / raw    <= {T_RATIO_1GB:.2f}x at ~1 GB:   {targets['ratio_1gb']}")
        fixed = mn["wall_s"] - raw["wall_s"]
        note = "" if 80 <= in_mb <= 140 else f"  [target is for ~107 MB; this input is {in_mb:.0f} MB]"
        targets["fixed_cost"] = verdict(fixed, T_FIXED_S, "low", " s")
        print(f"  fixed cost          <= {T_FIXED_S:.0f} s:            {targets['fixed_cost']}{note}")
        if m1 and not m1["error"] and b.cores != 1:
            speed = m1["wall_s"] / mn["wall_s"]
            targets["speedup"] = verdict(speed, T_SPEEDUP, "high", "x")
            print(f"  --cores {b.cores} vs --cores 1 >= {T_SPEEDUP:.2f}x faster:  {targets['speedup']}")
            r1 = summary.get("raw-c1")
            if r1 and not r1["error"]:  # what the machine gives the encode itself from its other cores
                targets["raw_speedup"] = r1["wall_s"] / raw["wall_s"]
                print(
                    f"  (the raw encode itself: 1 thread / {b.cores} threads = {targets['raw_speedup']:.2f}x)"
                )
        peak = max(s["peak_rss_mb"] for k, s in summary.items() if k.startswith("mintdim") and not s["error"])
        targets["peak_rss"] = verdict(peak, T_PEAK_RSS / MB, "low", " MB", "{:.0f}")
        print(f"  peak RSS            <= 1 GiB:           {targets['peak_rss']}")
        base = summary.get("baseline")
        if base and not base["error"]:
            targets["vs_baseline"] = mn["wall_s"] / base["wall_s"]
            print(
                f"  this mintdim / the baseline's (same rounds): {targets['vs_baseline']:.3f}x wall "
                f"({mn['wall_s']:.2f} s / {base['wall_s']:.2f} s)"
            )
        for p in peers:
            s = summary[p]
            if s["error"]:
                continue
            rel = mn["wall_s"] / s["wall_s"]
            targets[f"faster_than_{p}"] = verdict(rel, 1.0, "low", "x", "{:.3f}")
            print(f"  faster than {p:<12} (mintdim wall / {p} wall < 1): {targets[f'faster_than_{p}']}")
    else:
        print("  mintdim did not build: no target can be judged")
    return {
        "mode": "compare",
        "input": data,
        "input_mb": in_mb,
        "sizes": sizes,
        "runs": runs,
        "summary": summary,
        "unavailable_peers": unavailable,
        "targets": targets,
    }


def memory_mode(b: Bench, args) -> dict:
    """mintdim --cores N at 1x and 4x the input: peak RSS ratio (and wall / raw at each scale)."""
    d1 = b.scaled_input(args.scale)
    d4 = b.scaled_input(args.scale * 4)
    sizes = args.sizes
    raw = {}
    for label, data in (("4x", d4), ("1x", d1)):
        print(f"[memory] raw {label}", flush=True)
        m = b.run_raw(data)
        lengths = m.pop("lengths")
        raw[label] = m
        if sizes is None:  # from the 4x input, which holds every 1x sample too
            sizes = default_sizes(int(lengths.max()) if len(lengths) else 1)
            print(f"[sizes] max tokens {int(lengths.max())}: units {sizes}", flush=True)
        elif label == "4x":
            warn_sizes(sizes, lengths)
    runs = {"1x": [], "4x": []}
    for r in range(args.runs):
        for label, data in (("1x", d1), ("4x", d4)):
            print(f"[memory run {r + 1}/{args.runs}] mintdim --cores {b.cores} at {label}", flush=True)
            runs[label].append(b.run_mintdim(data, b.cores, sizes))
    summ = {k: summarize(v) for k, v in runs.items()}
    print()
    print(
        f"{'scale':<6} {'input MB':>9} {'raw s':>8} {'build s':>8} {'x raw':>7} {'CPU s':>8} {'RSS MB':>8} "
        f"{'PSS MB':>8}  tokens"
    )
    for label, data in (("1x", d1), ("4x", d4)):
        s, rw = summ[label], raw[label]
        if s["error"]:
            print(f"{label:<6} FAILED  {error_line(s['error'])}")
            continue
        check = (
            "= raw"
            if s["total_tokens"] == rw["total_tokens"]
            else f"{s['total_tokens']} != raw {rw['total_tokens']}"
        )
        print(
            f"{label:<6} {os.path.getsize(data) / MB:>9.1f} {rw['wall_s']:>8.2f} {s['wall_s']:>8.2f} "
            f"{s['wall_s'] / rw['wall_s']:>7.3f} {s['cpu_s']:>8.2f} {s['peak_rss_mb']:>8.0f} "
            f"{fmt(s['peak_pss_mb'], '{:.0f}'):>8}  {check}"
        )
    targets = {}
    if not summ["1x"]["error"] and not summ["4x"]["error"]:
        growth = summ["4x"]["peak_rss_mb"] / summ["1x"]["peak_rss_mb"]
        targets["rss_growth"] = verdict(growth, T_MEM_GROWTH, "low", "x")
        targets["peak_rss"] = verdict(
            max(summ["1x"]["peak_rss_mb"], summ["4x"]["peak_rss_mb"]), T_PEAK_RSS / MB, "low", " MB", "{:.0f}"
        )
        targets["ratio_4x"] = verdict(summ["4x"]["wall_s"] / raw["4x"]["wall_s"], T_RATIO_430MB, "low", "x")
        print("\ntargets:")
        print(f"  peak RSS 4x / 1x  <= {T_MEM_GROWTH:.1f}x: {targets['rss_growth']}")
        print(f"  peak RSS          <= 1 GiB: {targets['peak_rss']}")
        print(f"  build / raw at 4x <= {T_RATIO_430MB:.2f}x (target at ~430 MB): {targets['ratio_4x']}")
    return {
        "mode": "memory",
        "inputs": {"1x": d1, "4x": d4},
        "sizes": sizes,
        "raw": raw,
        "runs": runs,
        "summary": summ,
        "targets": targets,
    }


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Benchmark mintdim build against the tokenizer's raw batch encode and peers."
    )
    p.add_argument("--data", required=True, help="JSONL input (.jsonl, .jsonl.gz, .jsonl.zst)")
    p.add_argument("--fields", required=True, help="comma-separated JSON keys, e.g. prompt,response")
    p.add_argument(
        "--template", required=True, help=r"template with {field} placeholders; \n etc. are decoded"
    )
    p.add_argument("--tokenizer", required=True, help="SentencePiece .model or HF tokenizer.json")
    p.add_argument("--cores", type=int, default=2, help="cores for every tool (default 2)")
    p.add_argument("--runs", type=int, default=3, help="runs per tool; medians are reported (default 3)")
    p.add_argument("--scale", type=int, default=1, help="measure on the input repeated K times (default 1)")
    p.add_argument(
        "--peers",
        default=",".join(ALL_PEERS),
        help=f"comma-separated peers among {','.join(ALL_PEERS)}, or 'none' (default all)",
    )
    p.add_argument(
        "--sizes",
        default=None,
        help="unit sizes, e.g. 128,256,512 (default: powers of two from 128 "
        "up to one that fits the longest sample)",
    )
    p.add_argument("--build-batch", type=int, default=4096, help="units.build_batch of the mintdim config")
    p.add_argument("--samples-per-shard", type=int, default=10000, help="output.samples_per_shard")
    p.add_argument(
        "--chunk-mb", type=int, default=None, help="chunk_mb of the mintdim config (default: mintdim's)"
    )
    p.add_argument(
        "--work",
        default=None,
        help="directory for inputs and outputs (a fresh subdirectory is made "
        "and removed; default: the system temp dir)",
    )
    p.add_argument("--memory", action="store_true", help="memory check: mintdim at 1x and 4x the input")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--keep", action="store_true", help="keep the work dir and the peers' outputs")
    p.add_argument(
        "--baseline",
        default=None,
        metavar="PYTHON",
        help="also run `PYTHON -m mintdim build` (another checkout's venv) in every round, as the row "
        "`baseline`: before/after figures from one interleaved run",
    )
    p.add_argument(
        "--no-cores1",
        action="store_true",
        help="skip the mintdim --cores 1 run (the scaling figure), e.g. on large --scale inputs",
    )
    args = p.parse_args(argv)
    args.peers = (
        []
        if args.peers.strip().lower() in ("", "none")
        else [x.strip() for x in args.peers.split(",") if x.strip()]
    )
    for x in args.peers:
        if x not in ALL_PEERS:
            p.error(f"--peers: unknown peer {x!r} (known: {', '.join(ALL_PEERS)})")
    if args.sizes:
        try:
            args.sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            p.error("--sizes: comma-separated integers expected")
    if args.cores < 1 or args.runs < 1 or args.scale < 1:
        p.error("--cores, --runs and --scale must be >= 1")
    if not os.path.isfile(args.data):
        p.error(f"--data: no such file {args.data}")
    if not os.path.isfile(args.tokenizer):
        p.error(f"--tokenizer: no such file {args.tokenizer}")
    return args


def byte_compile_mintdim() -> None:
    """Compile MintDim's modules and stage scripts to bytecode once, as installing a package does.

    The peers and the tokenizers are installed packages whose bytecode pip wrote at install
    time. An editable MintDim has none until Python writes it on first import, and with
    PYTHONDONTWRITEBYTECODE set (as on some machines) never: then every process of every build
    compiles the package from source again (~25 ms per job, ~0.2 s per build), which no
    installed copy would do."""
    import compileall

    import mintdim
    from mintdim.paths import workflow_root

    pkg = os.path.dirname(os.path.abspath(mintdim.__file__))
    ok = compileall.compile_dir(pkg, quiet=1) and compileall.compile_dir(
        os.path.join(workflow_root(), "scripts"), quiet=1
    )
    print(
        f"[prep] byte-compiled {pkg} and its stage scripts{'' if ok else ' (some files failed)'}", flush=True
    )


def byte_compile_other(python: str) -> None:
    """The same for the --baseline interpreter's MintDim."""
    code = (
        "import compileall, os, mintdim; from mintdim.paths import workflow_root; "
        "pkg = os.path.dirname(os.path.abspath(mintdim.__file__)); compileall.compile_dir(pkg, quiet=1); "
        "compileall.compile_dir(os.path.join(workflow_root(), 'scripts'), quiet=1); print(pkg)"
    )
    # run outside this checkout: `python -c` puts the working directory first on sys.path, and from the
    # repository that is this MintDim's package, not the baseline's
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=tempfile.gettempdir())
    print(f"[prep] baseline: byte-compiled {done.stdout.strip() or done.stderr.strip()[-300:]}", flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    byte_compile_mintdim()
    if args.baseline:
        byte_compile_other(args.baseline)
    try:
        import psutil  # noqa: F401
    except ImportError:
        raise SystemExit("psutil is needed (it comes with snakemake, or pip install -e '.[bench]')")
    b = Bench(args)
    _, names = parse_template(b.template)
    if sorted(names) != sorted(b.fields):
        raise SystemExit(f"--template placeholders {names} are not exactly --fields {b.fields}")
    print(f"[bench] work dir {b.root}; template {b.template!r}", flush=True)
    try:
        result = memory_mode(b, args) if args.memory else compare_mode(b, args)
    finally:
        b.cleanup()
    if args.json:
        result["args"] = {k: v for k, v in vars(args).items()}
        result["template"] = b.template
        write_json(args.json, result)
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "_child":
        child_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
