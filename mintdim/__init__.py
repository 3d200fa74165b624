"""MintDim: low-padding, fixed-width binary token shards from JSONL datasets."""

__version__ = "0.1.5"

from .errors import *  # noqa: E402,F401,F403  (error classes are importable from `mintdim`)
from .errors import ERROR_CLASSES as _ERROR_CLASSES  # noqa: E402
from .api import pipeline  # noqa: E402
from .suggest import suggest_units  # noqa: E402
from .reader import open, read  # noqa: E402,A004  (mintdim.open(OUT) reads a finished output)
from .verify import verify  # noqa: E402  (mintdim.verify(OUT) checks an output; `from mintdim.verify import Report`)

# `open` stays out of __all__ so that `from mintdim import *` never shadows the builtin
__all__ = ["pipeline", "read", "suggest_units", "verify", "__version__"] + list(_ERROR_CLASSES)
