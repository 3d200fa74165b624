"""Moved: the output directory's format lives in formats/output.py (this name stays importable)."""

from .output import JsonlWriter, duplicate_groups, relpath_join, write_json  # noqa: F401
