"""Makes `import mintdim` work when a script runs from a plain checkout (no install)."""
import os
import sys

try:
    import mintdim  # noqa: F401
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(here))
