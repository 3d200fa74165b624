# One job per output directory, beside its write jobs: indexes, histogram, stats and manifest into a
# directory of its own, from the plan and the chunks' metas (each sample's file, line and digest), a
# chunk at a time (packed rows also need the write jobs' summaries: it waits for them there). Finalize
# checks the plan's shard counts against the ones written.
rule aggregate:
    input:
        validated=LAYOUT.validated,
        table=LAYOUT.plan("{out}"),
        chunks=lambda wc: MINT.chunk_dirs(int(wc.out)),
        written=lambda wc: MINT.aggregate_waits_for_write(wc.out),
    output:
        agg=temp(LAYOUT.aggregated("{out}")),
        files=temp(directory(LAYOUT.stage_agg("{out}"))),
    log:
        LAYOUT.log("aggregate_o{out}"),
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=lambda wc: mem_per_output(wc, share=4),
        runtime=lambda wc: runtime_per_output(wc, mb_per_minute=200),
    params:
        py=PY,
        bench=bench("aggregate_o{out}"),
        script=script("aggregate_output.py"),
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --out-index {wildcards.out}"
        " --table {input.table:q} --stage {output.files:q} --agg {output.agg:q} --log {log:q}"
        " --bench {params.bench:q} --written {input.written:q} --chunks {input.chunks:q}"
