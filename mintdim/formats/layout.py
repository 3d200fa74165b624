"""Where a build keeps its files inside the work directory.

WORK/<build_id>/ holds everything of one build (intermediates, staging,
logs, markers of completion); WORK/outputs/ records which output directories
MintDim created or filled, so a rerun can tell its own files from a user's.
"""

from __future__ import annotations

import os


class Layout:
    def __init__(self, work_dir: str, build_id: str):
        self.work_dir = work_dir
        self.build_id = build_id
        self.root = os.path.join(work_dir, build_id)

    def _p(self, *parts) -> str:
        return os.path.join(self.root, *parts)

    @property
    def validated(self) -> str:
        return self._p("validated.json")

    def tok_dir(self, file: int, chunk: int) -> str:
        return self._p("tok", f"f{file}_c{chunk}")

    def plan(self, out: int) -> str:
        return self._p("plan", f"o{out}.msgpack")

    def plan_units(self, out: int) -> str:
        return self._p("plan", f"o{out}.units.json")

    def written(self, out: int, part: int) -> str:
        """Shard summaries of one write job (a part of the unit sizes) of an output."""
        return self._p("written", f"o{out}_p{part}.json")

    def aggregated(self, out: int) -> str:
        return self._p("agg", f"o{out}.json")

    def done(self, out: int) -> str:
        return self._p("done", f"o{out}.json")

    def stage(self, out: int) -> str:
        return self._p("stage", f"o{out}")

    def log(self, name: str) -> str:
        return self._p("logs", f"{name}.log")

    @property
    def errors_dir(self) -> str:
        return self._p("errors")

    @property
    def failed_flag(self) -> str:
        return self._p("FAILED")

