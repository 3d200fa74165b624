# Helpers of the rule files, kept out of the Snakefile (the linter wants no functions beside rules).
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from mintdim.sources import inputs as INPUTS


def stage_python():
    """The Python that runs each stage: the one running Snakemake, or the rule's conda env's (--sdm conda)."""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        return "python"
    return sys.executable


def script(name):
    return os.path.join(workflow.basedir, "scripts", name)


def bench(name):
    """Per-job timing record under the build's work directory (mintdim/run/job.py write_timing)."""
    return os.path.join(LAYOUT.root, "benchmarks", f"{name}.tsv")


def stages_forced():
    """--forcerun, --forceall or --force given: outputs already built are targets too (finalize compares)."""
    ds = workflow.dag_settings
    return ds is not None and bool(ds.forceall or ds.forcerun or ds.forcetargets)


def report_dir(out):
    """Stats table and token-length plot of one output, for `snakemake --report report.html`."""
    return os.path.join(LAYOUT.root, "report", f"o{out}")


PY = stage_python()


def light_threads(wc):
    """Write jobs are short and mostly I/O: locally they take no core of their own (threads: 0), so the
    write jobs of several outputs run at once instead of in rounds of `cores`; on a cluster one core,
    as a cluster is asked for none (sbatch refuses --cpus-per-task=0). A function: Snakemake knows its
    executor when it builds the jobs, not when it reads this file (workflow.local_exec is True then).
    """
    return 0 if workflow.local_exec else 1


# --- resources: mem_mb (MB) and runtime (minutes) per job, from what each job holds ------------
# tokenize holds the tokenizer and one build_batch, streaming its chunk (j2 SentencePiece: ~130 MB
# peak at 32 and at 204 MB chunks; 1 MB per chunk MB is headroom); write holds one chunk's part of its unit
# and blocks of 8192 padded records; plan and aggregate hold ~100 bytes per sample of their output
# (estimated from its input size: compressed inputs count x5). Profiles may override (set-resources).


def input_mb(out):
    total = 0
    for i in MINT.build.outputs[int(out)].files:
        path = MINT.build.files[i].abspath
        packed = path.endswith((".gz", ".zst", ".parquet"))  # compressed: ~5x in memory
        total += INPUTS.size_of(path) * (5 if packed else 1)
    return total / 2**20


def unit_size(out, slot):
    """The slot-th unit size of an output (the largest allowed when sizes are planned from the data)."""
    o = MINT.build.outputs[int(out)]
    if o.sizes:
        return o.sizes[min(int(slot), len(o.sizes) - 1)]
    return int((o.auto or {}).get("max_size") or 8192)


def mem_tokenize(wc):
    return 768 + int(MINT.build.chunk_mb)


def mem_write(wc):
    """A write job writes its unit sizes one after another: the largest one counts."""
    largest = max(
        unit_size(wc.out, s) for s in MINT.write_slots(wc.out, wc.part).split(",")
    )
    return 512 + int(6 * MINT.build.chunk_mb) + (8192 * largest * 13) // 2**20


def mem_per_output(wc, base=1024, share=8):
    return base + int(input_mb(wc.out) / share)


def runtime_per_output(wc, base=10, mb_per_minute=500):
    return base + int(input_mb(wc.out) / mb_per_minute)
