# Pre-flight as a job: records the resolved config and the tokenizers' facts for every later stage.
rule validate:
    input:
        MINT.tokenizer_files(),
    output:
        temp(LAYOUT.validated),
    log:
        LAYOUT.log("validate"),
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        py=PY,
        bench=bench("validate"),
        script=script("validate_config.py"),
        config=MINT.config_file,
    shell:
        "{params.py} {params.script} --config-file {params.config:q} --out {output:q} --log {log:q} --bench {params.bench:q}"
