"""MintDim: low-padding, fixed-width binary token shards from JSONL, Parquet and `datasets` directories."""

__version__ = "0.1.5"

from .errors import *  # noqa: E402,F401,F403  (error classes are importable from `mintdim`)
from .errors import ERROR_CLASSES as _ERROR_CLASSES  # noqa: E402

# The rest of the API is imported on first use (PEP 562): every workflow job imports this package,
# and most need neither numpy nor the reader; a job's start-up is part of every build's time.
# (Measured: an eager `verify` pulled numpy into every process through formats.output,
# 0.12 s CPU per process: the runner, Snakemake and each job.)
_LAZY = {
    "pipeline": ".api",
    "suggest_units": ".reading.suggest",
    "open": ".reading.reader",  # mintdim.open(OUT) reads a finished output
    "read": ".reading.reader",
    # mintdim.verify(OUT) checks an output; `from mintdim.reading.verify import Report`
    "verify": ".reading.verify",
    "export": ".reading.export",  # mintdim.export(OUT, "hf" | "megatron", DEST): files trainers load
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))


# `open` stays out of __all__ so that `from mintdim import *` never shadows the builtin
__all__ = ["pipeline", "read", "suggest_units", "verify", "export", "__version__"] + list(_ERROR_CLASSES)  # noqa: F405  (_LAZY names)
