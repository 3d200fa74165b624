# MintDim unit-build workflow: validate -> tokenize -> plan -> write -> aggregate -> finalize.
# Rules only wire; each runs one script in scripts/, which calls a stage of the mintdim package.
import os
import sys

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, workflow.basedir)  # a plain checkout works before `pip install`
import mintdim
from mintdim.dag import BuildDAG, load_default_config
from mintdim.errors import MintDimError
from mintdim.config import lang_of

RAW = load_default_config(config, workflow.basedir)
try:
    MINT = BuildDAG(RAW, main_process=workflow.is_main_process, cores=workflow.cores)
except MintDimError as err:
    print("\n" + err.render(lang_of(RAW)), file=sys.stderr)
    sys.exit(1)
LAYOUT = MINT.layout
PY = sys.executable
VERSION = mintdim.__version__


def script(name):
    return os.path.join(workflow.basedir, "scripts", name)


wildcard_constraints:
    file=r"\d+",
    chunk=r"\d+",
    out=r"\d+",
    unit=r"\d+",


include: "workflow/rules/validate.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/write.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/finalize.smk"


rule all:
    default_target: True
    input:
        MINT.done_targets(),


onsuccess:
    from mintdim.stages.finalize import summary_lines

    for line in summary_lines(MINT.build, LAYOUT):
        print(line)


onerror:
    import atexit

    from mintdim.stages.failure import on_error

    # atexit: the MintDim message comes after Snakemake's own closing lines, so it is the last thing printed
    atexit.register(print, "\n" + on_error(MINT.build, LAYOUT).render(MINT.lang), file=sys.stderr)
