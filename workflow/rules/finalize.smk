# One job per output directory: the write and aggregate jobs' directories are linked into one tree, which
# is placed in the user's output directory (never a declared output: Snakemake deletes declared outputs
# before a rerun). Its output is the completion record of the generation the DAG asks for (MINT.done_target).
rule finalize:
    input:
        validated=LAYOUT.validated,
        agg=LAYOUT.aggregated("{out}"),
        written=lambda wc: MINT.written(wc.out),
        parts=lambda wc: MINT.parts(wc.out),
    output:
        LAYOUT.done("{out}", "{gen}"),
    log:
        LAYOUT.log("finalize_o{out}_g{gen}"),
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=256,
        runtime=10,
    params:
        py=PY,
        bench=bench("finalize_o{out}_g{gen}"),
        script=script("finalize_output.py"),
        tree=lambda wc: LAYOUT.tree(wc.out),
        replace="--replace" if RUN.get("rebuild") else "",
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --gen {wildcards.gen} --agg {input.agg:q} --tree {params.tree:q} --done {output:q} --log {log:q}"
        " --bench {params.bench:q} --written {input.written:q} --parts {input.parts:q} {params.replace}"
