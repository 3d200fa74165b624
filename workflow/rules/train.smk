# tokenizer.train_bpe: one job per trained tokenizer, before validate. Trains a BPE model (ffbpe) on the
# rendered samples of its files and saves it to the user's `out` (never a declared output: Snakemake would
# delete it before a rerun); the declared output is a marker in the work directory.
from mintdim.tokenizers import training as TRAINING


rule train_tokenizer:
    input:
        sources=lambda wc: TRAINING.sources(MINT.build, int(wc.tok)),
    output:
        temp(TRAINING.marker(LAYOUT.root, "{tok}")),
    log:
        LAYOUT.log("train_t{tok}"),
    wildcard_constraints:
        tok=r"\d+",
    conda:
        "../envs/mintdim.yaml"
    threads: max(1, CORES)
    resources:
        mem_mb=4096,
        runtime=240,
    params:
        py=PY,
        bench=bench("train_t{tok}"),
        script=script("train_tokenizer.py"),
        config=MINT.config_file,
    shell:
        "{params.py} {params.script} --config-file {params.config:q} --index {wildcards.tok} --out {output:q}"
        " --threads {threads} --log {log:q} --bench {params.bench:q}"
