# One job per input chunk: byte ranges of a plain .jsonl, the whole of a .jsonl.gz / .jsonl.zst.
rule tokenize:
    input:
        validated=LAYOUT.validated,
        source=lambda wc: MINT.source(int(wc.file)),
    output:
        temp(directory(LAYOUT.tok_dir("{file}", "{chunk}"))),
    log:
        LAYOUT.log("tokenize_f{file}_c{chunk}"),
    conda:
        "../envs/mintdim.yaml"
    threads: MINT.tokenize_threads(CORES)
    resources:
        mem_mb=mem_tokenize,
        runtime=lambda wc: 20 + int(MINT.build.chunk_mb // 2),
    params:
        py=PY,
        bench=bench("tokenize_f{file}_c{chunk}"),
        script=script("tokenize_chunk.py"),
        range=lambda wc: MINT.chunk_range(int(wc.file), int(wc.chunk)),
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --file {wildcards.file}"
        " --chunk {wildcards.chunk} {params.range} --out {output:q} --threads {threads} --log {log:q} --bench {params.bench:q}"
