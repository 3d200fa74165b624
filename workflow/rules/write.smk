# One job per output directory and unit size: padded fixed-width records, rolled into shards.
rule write:
    input:
        validated=LAYOUT.validated,
        units=LAYOUT.plan_units("{out}"),
        chunks=lambda wc: MINT.chunk_dirs(int(wc.out)),
    output:
        temp(LAYOUT.written("{out}", "{unit}")),
    log:
        LAYOUT.log("write_o{out}_u{unit}"),
    params:
        py=PY,
        script=script("write_shards.py"),
        stage=lambda wc: LAYOUT.stage(int(wc.out)),
        version=VERSION,
    resources:
        mem_mb=1024,
        runtime=60,
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --unit {wildcards.unit} --units-plan {input.units:q} --stage {params.stage:q}"
        " --written {output:q} --log {log:q} --chunks {input.chunks:q}"
