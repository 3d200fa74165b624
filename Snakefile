# MintDim unit-build workflow: validate -> tokenize -> plan -> write -> aggregate -> finalize.
# Rules only wire; each runs one script in scripts/, which calls a stage of the mintdim package.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


sys.path.insert(0, workflow.basedir)  # a plain checkout works before `pip install`
from mintdim.run.dag import BuildDAG, load_default_config, take_run
from mintdim.errors import MintDimError
from mintdim.config import lang_of

# what `mintdim build` hands over (--config mintdim_run=...); {} for a direct run
RUN = take_run(config)
RAW = load_default_config(config, workflow.basedir)
# `snakemake --report` and `--lint` only read the build: no pre-flight, no run lock. Snakemake
# parses them without cores (--report) and without checking environment variables (--lint).
READ_ONLY = not workflow.check_envvars
try:
    CORES = workflow.cores
except WorkflowError:
    CORES, READ_ONLY = 1, True
try:
    MINT = BuildDAG(
        RAW,
        RUN,
        main_process=workflow.is_main_process and not READ_ONLY,
        cores=CORES,
        local=workflow.local_exec,
        configfiles=workflow.overwrite_configfiles,
    )
except MintDimError as err:
    from mintdim.run.guard import report_error

    # the launcher (mintdim build / job.run()) raises it
    report_error(err, RUN.get("error_file"))
    print(f"\n{err.render(lang_of(RAW))}", file=sys.stderr)
    sys.exit(1)
LAYOUT = MINT.layout
# Every job's shell starts its Python with SIGINT ignored (inherited across exec): a stop that signals the
# group (Ctrl-C, `mintdim build` stopping) while a job's interpreter starts up would otherwise end it with
# "Fatal Python error ... KeyboardInterrupt" and a traceback in the log; the job takes SIGINT again once
# its work starts (scripts/_door.py, then mintdim/run/job.py records `interrupted`).
shell.prefix("trap '' INT; ")


wildcard_constraints:
    file=r"\d+",
    chunk=r"\d+",
    out=r"\d+",
    part=r"\d+",
    gen=r"\d+",


# bookkeeping rules run in the main Snakemake process's host even with a cluster executor
localrules:
    all,
    validate,
    finalize,
    report,


include: "workflow/rules/common.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/write.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/finalize.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        # evaluated with the DAG, once Snakemake knows the forced stages (the reports: target `reports`)
        lambda wc: MINT.done_targets(forced=stages_forced()),


# The report of every output (workflow/rules/report.smk), and the build it needs:
# `mintdim build --report`, or `snakemake --cores 2 reports`, then `snakemake --report report.html reports`.
rule reports:
    input:
        [report_dir(o.index) for o in MINT.build.outputs],
    localrule: True


onstart:
    if not RUN.get("launcher") and workflow.executor_plugin.name == "slurm":
        from mintdim.run.slurm import settle

        # a direct run: ask the cluster here (`mintdim build` asks before Snakemake starts)
        settle(workflow.executor_settings, MINT.lang)
    MINT.on_start()  # hold the outputs (another live build's: stop here), record what the jobs read


onsuccess:
    from mintdim.stages.finalize import summary_lines
    from mintdim.run.dag import cancel_pending_timers

    for line in summary_lines(MINT.build, LAYOUT):
        print(line)
    cancel_pending_timers()


onerror:
    import atexit
    from mintdim.run.failure import on_error
    from mintdim.run.dag import cancel_pending_timers

    cancel_pending_timers()
    # atexit: the MintDim message comes after Snakemake's own closing lines, so it is the last thing printed
    atexit.register(
        print,
        f"\n{on_error(MINT.build, LAYOUT, MINT.guard.claimed if MINT.guard else set()).render(MINT.lang)}",
        file=sys.stderr,
    )
