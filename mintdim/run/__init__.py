"""The run machinery, in one place: the Snakemake runner (runner, snakemake_main), DAG wiring
(dag), the run and job locks (guard), the job entry of stage scripts (job), failure markers
(failure) and the process-exit shortcut (fastexit). The core (config, sources, tokenizers,
formats, units, stages, reading) imports nothing from here, from Snakemake or from the CLI."""
