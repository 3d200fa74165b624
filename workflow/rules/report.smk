# One job per output directory, after finalize: the stats table and the token-length plot (matplotlib,
# when installed) that `snakemake --report report.html` shows. Reads the finished output; writes only
# under the work directory. Opt-in (Snakefile target `reports`): a plain build does not run it, since
# after finalize it only lengthened the build (shipped example, 2 cores: 0.59 s of a 3.3 s build).
rule report:
    input:
        done=lambda wc: MINT.done_target(wc.out),
    output:
        report(
            directory(report_dir("{out}")),
            patterns=["{name}.png", "{name}.html"],
            caption="../report/output.rst",
            category="Outputs",
            subcategory="output {out}",
        ),
    log:
        LAYOUT.log("report_o{out}"),
    conda:
        "../envs/mintdim.yaml"
    resources:
        mem_mb=512,
        runtime=10,
    params:
        py=PY,
        bench=bench("report_o{out}"),
        script=script("report_output.py"),
    shell:
        "{params.py} {params.script} --done {input.done:q} --out {output:q} --log {log:q} --bench {params.bench:q}"
