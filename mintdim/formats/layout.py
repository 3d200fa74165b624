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

    def done(self, out: int, gen: int | str = 0) -> str:
        """The completion record of one placement of an output ("generation"). When the output it
        records was deleted or replaced since, the next run asks for the next generation, so finalize
        runs again: the DAG decides that from file names alone, and parsing removes nothing."""
        return self._p("done", f"o{out}.g{gen}.json")

    def done_generations(self, out: int) -> list[int]:
        """The generations of an output's completion record on disk, oldest first."""
        return _generations(self._p("done"), out)

    def latest_done(self, out: int) -> str | None:
        gens = self.done_generations(out)
        return self.done(out, gens[-1]) if gens else None

    def stage(self, out: int) -> str:
        return self._p("stage", f"o{out}")

    def stage_part(self, out: int | str, part: int | str) -> str:
        """What one write job wrote of an output: its unit directories (Snakemake's output of the job)."""
        return self._p("stage", f"o{out}", f"w{part}")

    def stage_agg(self, out: int | str) -> str:
        """What the aggregate job wrote of an output: indexes, histogram, stats, manifest."""
        return self._p("stage", f"o{out}", "agg")

    def tree(self, out: int | str) -> str:
        """The output's whole tree, linked together from the jobs' directories by finalize, then placed."""
        return self._p("stage", f"o{out}", "tree")

    def log(self, name: str) -> str:
        return self._p("logs", f"{name}.log")

    @property
    def errors_dir(self) -> str:
        return self._p("errors")

    @property
    def failed_flag(self) -> str:
        return self._p("FAILED")


def _generations(done_dir: str, out: int | str) -> list[int]:
    prefix, gens = f"o{out}.g", []
    try:
        names = os.listdir(done_dir)
    except OSError:
        return gens
    for name in names:
        gen = name[len(prefix) : -len(".json")] if name.startswith(prefix) and name.endswith(".json") else ""
        if gen.isdigit():
            gens.append(int(gen))
    return sorted(gens)


def older_done(done_path: str) -> list[str]:
    """The earlier generations of the completion record done_path (finalize removes them once it
    has written done_path)."""
    done_dir, name = os.path.split(done_path)
    out, gen = name[1 : -len(".json")].split(".g")
    return [os.path.join(done_dir, f"o{out}.g{g}.json") for g in _generations(done_dir, out) if g < int(gen)]
