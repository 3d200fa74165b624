"""Imported first by every stage script: Ctrl-C before the job's own handling starts ends the process
quietly (the kernel's default action: no Python code runs, so no traceback of an import), and `import
mintdim` works from a plain checkout (no install). The job then runs in this process, as Snakemake (or
its cluster executor) started it: mintdim/run/job.py. numpy's OpenBLAS gets one thread (MintDim calls no
BLAS routine)."""

import os
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_DFL)  # job.run turns Ctrl-C into `interrupted` once the job starts
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: no BLAS thread spinning (mintdim/cli.py)

try:
    import mintdim  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
