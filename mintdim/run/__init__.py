"""The run machinery, in one place: the launcher that runs Snakemake (runner), DAG wiring and the
launcher's hand-off (dag), the run and job locks (guard), the job entry of stage scripts (job) and
failure markers (failure). The core (config, sources, tokenizers, formats, units, stages, reading)
imports nothing from here, from Snakemake or from the CLI."""
