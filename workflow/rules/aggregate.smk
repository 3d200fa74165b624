# One job per output directory: indexes, histogram, stats and manifest into the staging tree.
# It needs only the plan, so it runs beside the write jobs; finalize waits for both.
rule aggregate:
    input:
        validated=LAYOUT.validated,
        table=LAYOUT.plan("{out}"),
    output:
        temp(LAYOUT.aggregated("{out}")),
    log:
        LAYOUT.log("aggregate_o{out}"),
    benchmark:
        bench("aggregate_o{out}")
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=lambda wc: mem_per_output(wc, share=4),
        runtime=lambda wc: runtime_per_output(wc, mb_per_minute=200),
    params:
        py=PY,
        script=script("aggregate_output.py"),
        stage=lambda wc: LAYOUT.stage(int(wc.out)),
        version=VERSION,
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --table {input.table:q} --stage {params.stage:q} --agg {output:q} --log {log:q}"
