# The build's pre-flight as a job: reads its record (pre-flight again when the config or an input changed
# since), and records the resolved config, the tokenizers' facts and the inputs' content for every later
# stage (the sources are inputs: one changed since a killed run is validated again).
rule validate:
    input:
        MINT.validate_inputs(),
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
