"""End a finished process without the interpreter's teardown.

After a workflow process has done its work (files closed, exit handlers run: log files,
the build's final message), CPython still frees its whole import graph object by object.
Measured again (issue 13; 2 cores, load ~12, medians of 7-9, CPU time): 0.31 s for the main
Snakemake process of a build, 17 ms for each stage job (a 9-job build: 0.15 s); both above the
0.1 s per build that a speed hack must save to stay. `install()`
registers an exit handler before any other, so it runs after all of them, flushes the
standard streams and ends the process with os._exit and the exit code `set_code()` recorded.
"""

from __future__ import annotations

import atexit
import os
import sys

_state = {"code": 1, "installed": False}  # 1 until the process says how it ended


def install() -> None:
    if not _state["installed"]:
        atexit.register(_exit_now)
        _state["installed"] = True


def set_code(code) -> None:
    """The exit code, as sys.exit would turn `code` into one."""
    _state["code"] = code if isinstance(code, int) else (0 if code is None else 1)


def exit(code) -> None:  # noqa: A001  (sys.exit's counterpart)
    """sys.exit(code), ending the process as described above once the exit handlers have run."""
    set_code(code)
    sys.exit(code)


def _exit_now() -> None:
    if "logging" in sys.modules:  # its handler may have been registered before ours
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_state["code"])
