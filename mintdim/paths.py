"""Where the workflow files are: beside the package in a checkout, inside it once installed."""

from __future__ import annotations

import os

_PKG = os.path.dirname(os.path.abspath(__file__))


def workflow_root() -> str:
    """The directory holding Snakefile, workflow/, scripts/ and config/."""
    bundled = os.path.join(_PKG, "_workflow")
    if os.path.isfile(os.path.join(bundled, "Snakefile")):
        return bundled
    return os.path.dirname(_PKG)


def snakefile() -> str:
    return os.path.join(workflow_root(), "Snakefile")


def schema_file() -> str:
    return os.path.join(workflow_root(), "workflow", "schemas", "config.schema.yaml")
