"""MintDim: low-padding, fixed-width binary token shards from JSONL datasets."""

__version__ = "0.1.5"

from .errors import *  # noqa: E402,F401,F403  (error classes are importable from `mintdim`)
from .errors import ERROR_CLASSES as _ERROR_CLASSES  # noqa: E402
from .api import pipeline  # noqa: E402

__all__ = ["pipeline", "__version__"] + list(_ERROR_CLASSES)
