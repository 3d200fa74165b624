# One job per output directory: sample ids in input order, unit rows, shard numbers.
rule plan:
    input:
        validated=LAYOUT.validated,
        chunks=lambda wc: MINT.chunk_dirs(int(wc.out)),
    output:
        table=temp(LAYOUT.plan("{out}")),
        units=temp(LAYOUT.plan_units("{out}")),
    log:
        LAYOUT.log("plan_o{out}"),
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=mem_per_output,
        runtime=runtime_per_output,
    params:
        py=PY,
        bench=bench("plan_o{out}"),
        script=script("plan_units.py"),
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --table {output.table:q} --units {output.units:q} --log {log:q} --bench {params.bench:q} --chunks {input.chunks:q}"
