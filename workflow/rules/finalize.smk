# One job per output directory: the staging tree is moved into the user's output directory.
# The user's directory is never a declared output (Snakemake deletes declared outputs before a rerun).
rule finalize:
    input:
        validated=LAYOUT.validated,
        agg=LAYOUT.aggregated("{out}"),
        written=lambda wc: MINT.written(wc.out),
    output:
        LAYOUT.done("{out}", "{gen}"),  # the generation the DAG asks for (MINT.done_target)
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
        stage=lambda wc: LAYOUT.stage(int(wc.out)),
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --agg {input.agg:q} --stage {params.stage:q} --done {output:q} --log {log:q} --bench {params.bench:q}"
        " --written {input.written:q}"
