# One job per output directory: indexes, histogram, stats and manifest into the staging tree.
rule aggregate:
    input:
        validated=LAYOUT.validated,
        table=LAYOUT.plan("{out}"),
        written=lambda wc: [LAYOUT.written(int(wc.out), s) for s in MINT.sizes(int(wc.out))],
    output:
        temp(LAYOUT.aggregated("{out}")),
    log:
        LAYOUT.log("aggregate_o{out}"),
    params:
        py=PY,
        script=script("aggregate_output.py"),
        stage=lambda wc: LAYOUT.stage(int(wc.out)),
        version=VERSION,
    resources:
        mem_mb=2048,
        runtime=30,
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --table {input.table:q} --stage {params.stage:q} --agg {output:q} --log {log:q}"
        " --written {input.written:q}"
