# One job per input chunk: byte ranges of a plain .jsonl, the whole of a .jsonl.gz / .jsonl.zst.
rule tokenize:
    input:
        validated=LAYOUT.validated,
        source=lambda wc: MINT.source(int(wc.file)),
    output:
        temp(directory(LAYOUT.tok_dir("{file}", "{chunk}"))),
    log:
        LAYOUT.log("tokenize_f{file}_c{chunk}"),
    threads: MINT.tokenize_threads(workflow.cores)
    params:
        py=PY,
        script=script("tokenize_chunk.py"),
        range=lambda wc: MINT.chunk_range(int(wc.file), int(wc.chunk)),
        version=VERSION,
    resources:
        mem_mb=lambda wc: 768 + int(12 * MINT.build.chunk_mb),
        runtime=60,
    shell:
        "{params.py} {params.script} --validated {input.validated:q} --file {wildcards.file}"
        " --chunk {wildcards.chunk} {params.range} --out {output:q} --threads {threads} --log {log:q}"
