# One job per output directory and unit size (slot: 0 = smallest size; sizes may be planned from the data):
# padded fixed-width records, rolled into shards.
rule write:
    input:
        validated=LAYOUT.validated,
        units=LAYOUT.plan_units("{out}"),
        chunks=lambda wc: MINT.chunk_dirs(int(wc.out)),
    output:
        temp(LAYOUT.written("{out}", "{slot}")),
    log:
        LAYOUT.log("write_o{out}_s{slot}"),
    benchmark:
        bench("write_o{out}_s{slot}")
    conda:
        "../envs/mintdim.yaml"
    threads: LIGHT_THREADS
    resources:
        mem_mb=mem_write,
        runtime=runtime_per_output,
    params:
        py=PY,
        script=script("write_shards.py"),
        stage=lambda wc: LAYOUT.stage(int(wc.out)),
        version=VERSION,
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --slot {wildcards.slot} --units-plan {input.units:q} --stage {params.stage:q}"
        " --written {output:q} --log {log:q} --chunks {input.chunks:q}"
