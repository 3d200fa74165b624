#!/usr/bin/env python
"""The scale curve: `mintdim build` of one input repeated 1x, 4x, 16x (by default the ShareGPT pairs with
the ai21 j2 SentencePiece model, 2 cores), each size against the raw encode of the same texts.

    python benchmarks/scale.py [--sizes 1,4,16] [--runs 1] [--cores 2] [--json PATH] \\
        [--profile local-cluster] [--data ../assets/data/sharegpt_pairs.jsonl] \\
        [--tokenizer ../assets/sp/ai21-j2/j2-tokenizer.model]

Per size it prints the wall, MB/s, the ratio to the raw encode (compare.py's own `raw` row: read and render
untimed, the tokenizer's batch encode timed), the peak RSS of the largest single process and of the whole
process tree, each stage's jobs (wall, CPU and peak RSS from the timing records every job writes), the
time and memory of `mintdim.open(OUT)` plus reading sample 0 in a fresh process, and the load average
around every measurement; then the targets (wall per MB and largest-process RSS at the largest size
against the one before, and what each stage's peak RSS grows per sample). The repeats are compare.py's
`--scale` input: copy k > 0 of the file gets "[k] " before its first field, so every text stays distinct
and duplicate detection sees the file's own duplicates only. `--profile` builds the largest size once
more through that profile with at least 32 jobs (`chunk_mb` chosen so) and compares every output file's
bytes with the local build's. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402  (the raw encode, the scaled input and the process-tree sampler)

HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))
ASSETS = os.environ.get("MINTDIM_ASSETS") or os.path.join(os.path.dirname(REPO), "assets")
MB = C.MB
UNIT_SIZES = "128,256,512,1024,2048,4096,8192,16384,32768,262144"  # readme_table.py's set
STAGES = ("validate", "tokenize", "plan", "write", "aggregate", "finalize")
CLUSTER_JOBS = 32  # the cluster build's least number of jobs

# targets: the largest size against the one before it
T_WALL_PER_MB = 1.10  # wall per MB
T_LARGEST_RSS = 1.25  # the largest single process's peak RSS
T_BYTES_PER_SAMPLE = 32  # what plan's and aggregate's peak RSS may grow per sample


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


# --------------------------------------------------------------------------- children


def child_launch(result: str, cmd: list[str]) -> None:
    """Run cmd and record the peak RSS of the largest process among it and every descendant it (or they)
    waited for: getrusage(RUSAGE_CHILDREN).ru_maxrss is the largest of them, not a sum."""
    rc = subprocess.call(cmd)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    C.write_json(result, {"rc": rc, "largest_rss_mb": kids.ru_maxrss / 1024})  # kB on Linux
    sys.exit(rc)


def child_open(out: str, result: str) -> None:
    """mintdim.open(out) and sample 0's tokens, timed after the import; the process's peak RSS before the
    open (the import) and after the read."""
    import mintdim
    from mintdim.progress import peak_rss_mb

    before = peak_rss_mb()
    t0 = time.perf_counter()
    ds = mintdim.open(out)
    first = ds.tokens(0)
    wall = time.perf_counter() - t0
    C.write_json(
        result,
        {"open_s": wall, "rss_import_mb": before, "rss_mb": peak_rss_mb(), "first_tokens": int(len(first))},
    )


# --------------------------------------------------------------------------- one build


def write_config(d: str, data: str, args, chunk_mb: float | None = None) -> str:
    cfg = {
        "source": {"files": [data], "fields": [args.field_list], "templates": [args.template_text]},
        "tokenizer": {C.tokenizer_kind(args.tokenizer): {"path": os.path.abspath(args.tokenizer)}},
        "units": {"sizes": [args.unit_list], "build_batch": [4096]},
        "output": {"dir": os.path.join(d, "out"), "samples_per_shard": [10000]},
        "work_dir": os.path.join(d, "work"),
    }
    if chunk_mb:
        cfg["chunk_mb"] = chunk_mb
    import yaml

    path = os.path.join(d, "config.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, allow_unicode=True, sort_keys=False)
    return path


def job_records(d: str) -> list[dict]:
    """Every job's timing record of the build in d: rule, job name, wall s, CPU s, peak RSS MB."""
    jobs = []
    for path in sorted(glob.glob(os.path.join(d, "work", "*", "benchmarks", "*.tsv"))):
        with open(path, encoding="utf-8") as f:
            rec = next(csv.DictReader(f, delimiter="\t"))
        name = os.path.basename(path)[: -len(".tsv")]
        jobs.append(
            {
                "job": name,
                "rule": name.split("_")[0],
                "s": float(rec["s"]),
                "cpu_s": float(rec["cpu_time"]),
                "rss_mb": float(rec["max_rss"]) if rec["max_rss"] != "NA" else 0.0,
            }
        )
    return jobs


def per_stage(jobs: list[dict]) -> dict:
    """Per rule: jobs, summed wall and CPU, the largest job's peak RSS."""
    stages = {}
    for rule in STAGES:
        mine = [j for j in jobs if j["rule"] == rule]
        if mine:
            stages[rule] = {
                "jobs": len(mine),
                "s": sum(j["s"] for j in mine),
                "cpu_s": sum(j["cpu_s"] for j in mine),
                "rss_mb": max(j["rss_mb"] for j in mine),
            }
    return stages


def run_build(b: C.Bench, data: str, args, name: str, profile: str | None = None, chunk_mb=None) -> dict:
    """One `mintdim build` in a fresh run directory (kept: the caller reads and removes it)."""
    d = b.run_dir(name)
    cfg = write_config(d, data, args, chunk_mb)
    env = b.env()
    env.pop("RAYON_NUM_THREADS", None)  # each tokenize job sets its own
    build = [sys.executable, "-m", "mintdim", "build", cfg, "--cores", str(args.cores)]
    build += ["--profile", profile] if profile else []
    launch = os.path.join(d, "launch.json")
    before = load()
    m = C.measure([sys.executable, HERE, "_launch", launch, "--", *build], d, env, os.path.join(d, "log.txt"))
    m.update(dir=d, out=os.path.join(d, "out"), load_before=before, load_after=load())
    if m["rc"] != 0:
        raise SystemExit(f"mintdim build failed ({d}):\n{C.log_tail(m['log'], 30)}")
    with open(launch, encoding="utf-8") as f:
        m["largest_rss_mb"] = json.load(f)["largest_rss_mb"]
    with open(os.path.join(m["out"], "stats.json"), encoding="utf-8") as f:
        stats = json.load(f)
    m["samples"], m["total_tokens"] = stats["total_samples"], stats["total_tokens"]
    m["duplicate_groups"] = stats["duplicate_groups"]
    m["jobs"] = job_records(d)
    m["stages"] = per_stage(m["jobs"])
    m["cluster_submissions"] = len(glob.glob(os.path.join(d, ".snakemake", "local-cluster", "*.rc")))
    return m


def open_time(out: str, env: dict) -> dict:
    """`mintdim.open(out)` and sample 0, in a fresh process (after the import), twice: the better one."""
    best = None
    for _ in range(2):
        res = os.path.join(os.path.dirname(out), "open.json")
        before = load()
        subprocess.run([sys.executable, HERE, "_open", out, res], check=True, env=env)
        with open(res, encoding="utf-8") as f:
            r = json.load(f) | {"load": before}
        best = r if best is None or r["open_s"] < best["open_s"] else best
    return best


# --------------------------------------------------------------------------- digests


def digest_tree(root: str) -> dict[str, str]:
    """SHA-256 of every file under root (checksums.sha256 too), by relative path."""
    from mintdim.formats.checksums import NAME, digest, files_of

    paths = files_of(root) + ([NAME] if os.path.isfile(os.path.join(root, NAME)) else [])
    return {rel: digest(os.path.join(root, rel)) for rel in sorted(paths)}


def compare_trees(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """What differs between two digests of output trees (empty: the same files, byte for byte)."""
    diff = [f"only in the local build: {p}" for p in a if p not in b]
    diff += [f"only in the cluster build: {p}" for p in b if p not in a]
    diff += [f"differs: {p}" for p in a if p in b and a[p] != b[p]]
    return diff


# --------------------------------------------------------------------------- one size


def measure_size(b: C.Bench, args, k: int, want_digests: bool) -> dict:
    """--runs rounds of the raw encode then the build of the input repeated k times; medians."""
    data = b.scaled_input(k)
    raws, builds = [], []
    for r in range(args.runs):
        if not args.no_raw:
            print(f"[x{k} run {r + 1}/{args.runs}] raw encode (load {load()})", flush=True)
            before = load()
            raw = b.run_raw(data)
            raw.pop("lengths")
            raws.append(raw | {"load_before": before, "load_after": load()})
        print(
            f"[x{k} run {r + 1}/{args.runs}] mintdim build --cores {args.cores} (load {load()})", flush=True
        )
        m = run_build(b, data, args, f"x{k}")
        m["open"] = open_time(m["out"], b.env())
        if r == 0 and want_digests:
            m["digests"] = digest_tree(m["out"])
        if not args.keep:
            shutil.rmtree(m["dir"], ignore_errors=True)
        builds.append(m)
    if raws and raws[0]["total_tokens"] != builds[0]["total_tokens"]:
        raise SystemExit(
            f"x{k}: the build wrote {builds[0]['total_tokens']} tokens, raw {raws[0]['total_tokens']}"
        )
    return {"k": k, "input": data, "input_mb": os.path.getsize(data) / MB, "raw": raws, "builds": builds}


def med(xs):
    return statistics.median(xs)


def summarize(size: dict) -> dict:
    builds, raws = size["builds"], size["raw"]
    wall = med([m["wall_s"] for m in builds])
    raw = med([r["wall_s"] for r in raws]) if raws else None
    stages = {}
    for rule in STAGES:
        got = [m["stages"][rule] for m in builds if rule in m["stages"]]
        if got:
            stages[rule] = {key: med([g[key] for g in got]) for key in ("jobs", "s", "cpu_s", "rss_mb")}
    largest_job = max(builds[0]["jobs"], key=lambda j: j["rss_mb"])
    return {
        "k": size["k"],
        "input_mb": size["input_mb"],
        "samples": builds[0]["samples"],
        "tokens": builds[0]["total_tokens"],
        "duplicate_groups": builds[0]["duplicate_groups"],
        "raw_s": raw,
        "wall_s": wall,
        "x_raw": wall / raw if raw else None,
        "mb_s": size["input_mb"] / wall,
        "s_per_mb": wall / size["input_mb"],
        "cpu_s": med([m["cpu_s"] for m in builds]),
        "largest_rss_mb": med([m["largest_rss_mb"] for m in builds]),
        "largest_is": largest_job["job"]
        if largest_job["rss_mb"] >= builds[0]["largest_rss_mb"] - 1
        else "the launcher or Snakemake",
        "tree_rss_mb": med([m["peak_rss_mb"] for m in builds]),
        "tree_pss_mb": med([m["peak_pss_mb"] for m in builds]),
        "open_s": med([m["open"]["open_s"] for m in builds]),
        "open_rss_mb": med([m["open"]["rss_mb"] for m in builds]),
        "open_import_rss_mb": med([m["open"]["rss_import_mb"] for m in builds]),
        "stages": stages,
        "load": [f"{r['load_before']}->{r['load_after']}" for r in raws]
        + [f"{m['load_before']}->{m['load_after']}" for m in builds],
    }


# --------------------------------------------------------------------------- printing


def print_sizes(rows: list[dict]) -> None:
    head = (
        f"{'size':<5} {'input MB':>9} {'samples':>10} {'raw s':>8} {'build s':>8} {'x raw':>6} {'MB/s':>6} "
        f"{'s/MB':>7} {'largest RSS':>11} {'tree RSS':>9} {'tree PSS':>9} {'open s':>7} {'open RSS':>9}"
        "  load 1/5 min"
    )
    print(head)
    print("-" * len(head))
    for s in rows:
        print(
            f"{str(s['k']) + 'x':<5} {s['input_mb']:>9.1f} {s['samples']:>10,} {C.fmt(s['raw_s']):>8} "
            f"{s['wall_s']:>8.2f} {C.fmt(s['x_raw'], '{:.3f}'):>6} {s['mb_s']:>6.2f} {s['s_per_mb']:>7.4f} "
            f"{s['largest_rss_mb']:>8.0f} MB {s['tree_rss_mb']:>6.0f} MB {s['tree_pss_mb']:>6.0f} MB "
            f"{s['open_s']:>7.3f} {s['open_rss_mb']:>6.0f} MB  {', '.join(s['load'])}"
        )
    for s in rows:
        print(
            f"  {s['k']}x: the largest process is {s['largest_is']}; {s['tokens']:,} tokens; "
            f"{s['duplicate_groups']} duplicate groups"
        )


def print_stages(rows: list[dict]) -> None:
    print(
        "\nper stage (timing records of the jobs: wall and CPU summed over a stage's jobs, peak RSS of its "
        "largest job)"
    )
    head = f"{'size':<5} {'stage':<10} {'jobs':>5} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}"
    print(head)
    print("-" * len(head))
    for s in rows:
        for rule, st in s["stages"].items():
            print(
                f"{str(s['k']) + 'x':<5} {rule:<10} {st['jobs']:>5.0f} {st['s']:>8.2f} {st['cpu_s']:>8.2f} "
                f"{st['rss_mb']:>12.1f}"
            )


def growth(a: dict, b: dict) -> dict:
    """What each stage's peak RSS (and the largest process's) grew per sample from size a to size b."""
    extra = b["samples"] - a["samples"]
    per = {
        rule: (b["stages"][rule]["rss_mb"] - a["stages"][rule]["rss_mb"]) * MB / extra
        for rule in b["stages"]
        if rule in a["stages"]
    }
    per["largest process"] = (b["largest_rss_mb"] - a["largest_rss_mb"]) * MB / extra
    return per


def print_growth(rows: list[dict]) -> dict:
    print("\npeak RSS growth per added sample (bytes), between consecutive sizes")
    out = {}
    for a, b in zip(rows, rows[1:]):
        g = growth(a, b)
        out[f"{a['k']}x->{b['k']}x"] = g
        print(f"  {a['k']}x -> {b['k']}x: " + ", ".join(f"{k} {v:.1f}" for k, v in g.items()))
    return out


def targets(rows: list[dict]) -> dict:
    """The largest size against the one before it."""
    if len(rows) < 2:
        return {}
    a, b = rows[-2], rows[-1]
    found = {
        "wall_per_mb": C.verdict(b["s_per_mb"] / a["s_per_mb"], T_WALL_PER_MB, "low", "x", "{:.3f}"),
        "largest_rss": C.verdict(
            b["largest_rss_mb"] / a["largest_rss_mb"], T_LARGEST_RSS, "low", "x", "{:.3f}"
        ),
    }
    for rule in b["stages"]:
        if rule in a["stages"]:
            ratio = b["stages"][rule]["rss_mb"] / a["stages"][rule]["rss_mb"]
            found[f"{rule}_rss"] = C.verdict(ratio, T_LARGEST_RSS, "low", "x", "{:.3f}")
    g = growth(a, b)
    for rule in ("plan", "aggregate"):
        if rule in g:
            found[f"{rule}_bytes_per_sample"] = C.verdict(g[rule], T_BYTES_PER_SAMPLE, "low", " B", "{:.1f}")
    print(f"\ntargets ({b['k']}x against {a['k']}x):")
    print(f"  wall per MB              <= {T_WALL_PER_MB:.2f}x: {found['wall_per_mb']}")
    print(f"  largest process peak RSS <= {T_LARGEST_RSS:.2f}x: {found['largest_rss']}")
    for rule in b["stages"]:
        if f"{rule}_rss" in found:
            print(f"  {rule + ' peak RSS':<24} <= {T_LARGEST_RSS:.2f}x: {found[rule + '_rss']}")
    for rule in ("plan", "aggregate"):
        if f"{rule}_bytes_per_sample" in found:
            print(
                f"  {rule} growth per sample  <= {T_BYTES_PER_SAMPLE} B: {found[rule + '_bytes_per_sample']}"
            )
    return found


# --------------------------------------------------------------------------- the cluster build


def cluster_build(b: C.Bench, args, size: dict) -> dict:
    """The largest size once more through args.profile, chunk_mb chosen for at least CLUSTER_JOBS tokenize
    jobs; every output file's SHA-256 against the local build's."""
    chunk_mb = max(1, int(size["input_mb"] // CLUSTER_JOBS))
    print(
        f"\n[x{size['k']} {args.profile}] mintdim build --profile {args.profile}, chunk_mb {chunk_mb} "
        f"(load {load()})",
        flush=True,
    )
    m = run_build(b, size["input"], args, f"x{size['k']}-cluster", profile=args.profile, chunk_mb=chunk_mb)
    diff = compare_trees(size["builds"][0]["digests"], digest_tree(m["out"]))
    if not args.keep:
        shutil.rmtree(m["dir"], ignore_errors=True)
    stages = m["stages"]
    largest = max(m["jobs"], key=lambda j: j["rss_mb"])
    per_rule = ", ".join(f"{rule} {st['jobs']}" for rule, st in stages.items())
    print(
        f"\n{args.profile}: {size['k']}x, chunk_mb {chunk_mb}: {len(m['jobs'])} jobs "
        f"({per_rule}), {m['cluster_submissions']} "
        f"submissions to the profile's submit command; wall {m['wall_s']:.2f} s "
        f"({m['load_before']}->{m['load_after']}); largest job {largest['job']} {largest['rss_mb']:.0f} MB"
    )
    files = len(size["builds"][0]["digests"])
    print(
        "  output: "
        + (
            f"the same bytes as the local build, all {files} files"
            if not diff
            else "DIFFERS from the local build:"
        )
    )
    for line in diff[:20]:
        print(f"    {line}")
    jobs_ok = C.verdict(len(m["jobs"]), CLUSTER_JOBS, "high", " jobs", "{:.0f}")
    print(f"  jobs >= {CLUSTER_JOBS}: {jobs_ok}")
    m.pop("digests", None)
    return {
        "chunk_mb": chunk_mb,
        "build": m,
        "identical": not diff,
        "differences": diff,
        "files": files,
        "jobs_target": jobs_ok,
    }


# --------------------------------------------------------------------------- the plot


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [s["samples"] for s in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(n, [s["s_per_mb"] for s in rows], "o-", label="mintdim build")
    if all(s["raw_s"] for s in rows):
        left.plot(n, [s["raw_s"] / s["input_mb"] for s in rows], "s--", label="raw encode")
    left.set(xscale="log", xlabel="samples", ylabel="wall seconds per MB", title="time per MB")
    left.set_ylim(bottom=0)
    left.legend()
    right.plot(n, [s["largest_rss_mb"] for s in rows], "o-", label="largest process")
    for rule in ("tokenize", "plan", "write", "aggregate"):
        right.plot(
            n, [s["stages"].get(rule, {}).get("rss_mb", float("nan")) for s in rows], ".--", label=rule
        )
    right.set(xscale="log", xlabel="samples", ylabel="peak RSS (MB)", title="peak RSS per process")
    right.set_ylim(bottom=0)
    right.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"\nplot written to {path}")


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="The scale curve of mintdim build: 1x, 4x, 16x the input.")
    p.add_argument("--data", default=os.path.join(ASSETS, "data", "sharegpt_pairs.jsonl"))
    p.add_argument("--fields", default="prompt,response")
    p.add_argument("--template", default=r"{prompt}\n{response}", help=r"backslash escapes decoded")
    p.add_argument("--tokenizer", default=os.path.join(ASSETS, "sp", "ai21-j2", "j2-tokenizer.model"))
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--sizes", default="1,4,16", help="repeats of the input, ascending (default 1,4,16)")
    p.add_argument("--runs", type=int, default=1, help="rounds per size (raw, then build); medians")
    p.add_argument(
        "--unit-sizes", default=UNIT_SIZES, help=f"units.sizes of the builds (default {UNIT_SIZES})"
    )
    p.add_argument("--profile", default=None, help="also build the largest size through this profile")
    p.add_argument("--work", default=None, help="where the inputs and builds go (a fresh subdirectory)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--plot", default=None, help="write the curve as a PNG (needs matplotlib)")
    p.add_argument("--no-raw", action="store_true", help="no raw encode (no ratio column): the build alone")
    p.add_argument("--digests", action="store_true", help="record every output file's SHA-256 in --json")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    args.sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
    args.field_list = [x.strip() for x in args.fields.split(",") if x.strip()]
    args.template_text = C.decode_escapes(args.template)
    args.unit_list = [int(x) for x in args.unit_sizes.split(",") if x.strip()]
    for name in ("data", "tokenizer"):
        if not os.path.isfile(getattr(args, name)):
            p.error(f"--{name}: no such file {getattr(args, name)} (benchmarks/fetch_data.sh fetches it)")
    return args


def machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPUs ({cpu}), {memory:.0f} GiB"


def save(args, result: dict) -> None:
    if args.json:
        C.write_json(
            args.json, {"args": {k: v for k, v in vars(args).items()}, "machine": machine(), **result}
        )


def main(argv=None) -> int:
    args = parse_args(argv)
    C.byte_compile_mintdim()
    bench = argparse.Namespace(
        cores=args.cores,
        fields=args.fields,
        template=args.template,
        tokenizer=args.tokenizer,
        data=args.data,
        work=args.work,
        keep=args.keep,
    )
    b = C.Bench(bench)
    print(f"[scale] {machine()}; load {load()}; work dir {b.root}", flush=True)
    result = {"sizes": [], "summary": [], "cluster": None}
    rows = result["summary"]
    try:
        for k in args.sizes:
            last = k == args.sizes[-1]
            size = measure_size(b, args, k, args.digests or (last and args.profile is not None))
            rows.append(summarize(size))
            result["sizes"].append(size)
            print_sizes(rows[-1:])  # each size as soon as it is measured; all of them again at the end
            print_stages(rows[-1:])
            save(args, result)
            if last and args.profile:
                result["cluster"] = cluster_build(b, args, size)
                save(args, result)
            if k > 1 and not args.keep:
                os.remove(size["input"])
        print(
            f'\n{args.data} repeated {", ".join(f"{k}x" for k in args.sizes)} (copy k > 0: "[k] " '
            f"before {args.field_list[0]}), {args.tokenizer}, --cores {args.cores}, units {args.unit_list}; "
            f"medians of {args.runs} round(s); MB = 2^20 bytes; {machine()}\n"
        )
        print_sizes(rows)
        print_stages(rows)
        result["growth"] = print_growth(rows)
        result["targets"] = targets(rows)
        if args.plot:
            plot(rows, args.plot)
    finally:
        b.cleanup()
    save(args, result)
    if args.json:
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "_launch" and sys.argv[3] == "--":
        child_launch(sys.argv[2], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "_open":
        child_open(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "_child":
        C.child_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
