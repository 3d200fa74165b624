# Write jobs of an output directory: each writes the padded fixed-width records of some of its unit
# sizes (slot 0 = smallest; sizes may be planned from the data), rolled into shards, into a directory of
# its own. One job per core of the build's --cores, locally and on a cluster (mintdim/run/dag.py:
# write_groups).
rule write:
    input:
        validated=LAYOUT.validated,
        units=LAYOUT.plan_units("{out}"),
        table=LAYOUT.plan("{out}"),
        chunks=lambda wc: MINT.chunk_dirs(int(wc.out)),
    output:
        written=temp(LAYOUT.written("{out}", "{part}")),
        shards=temp(directory(LAYOUT.stage_part("{out}", "{part}"))),
    log:
        LAYOUT.log("write_o{out}_p{part}"),
    conda:
        "../envs/mintdim.yaml"
    threads: light_threads
    resources:
        mem_mb=mem_write,
        runtime=runtime_per_output,
    params:
        py=PY,
        bench=bench("write_o{out}_p{part}"),
        script=script("write_shards.py"),
        slots=lambda wc: MINT.write_slots(int(wc.out), int(wc.part)),
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --part {wildcards.part} --slots {params.slots} --units-plan {input.units:q} --table {input.table:q}"
        " --stage {output.shards:q} --written {output.written:q} --log {log:q} --bench {params.bench:q}"
        " --chunks {input.chunks:q}"
