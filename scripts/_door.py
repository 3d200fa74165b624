"""Imported first by every stage script: makes `import mintdim` work from a plain checkout
(no install), and ends the job without the interpreter's teardown (mintdim/run/fastexit.py; the
scripts exit through fastexit.exit)."""
import os
import signal
import sys

# Ctrl-C before the job's own handling starts (job.run): end quietly, no traceback of an import
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

try:
    import mintdim  # noqa: F401
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(here))

from mintdim.run import forkserver  # noqa: E402

forkserver.delegate()  # a local build's jobs run in a warm fork of its server (mintdim/run/forkserver.py)

from mintdim.run import fastexit  # noqa: E402

fastexit.install()
