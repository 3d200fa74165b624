"""What the Snakefile needs to wire the DAG: the resolved build, its chunks, its targets, its file names.

Kept out of the Snakefile so rules only wire. Parsing validates and wires, and changes no file: pre-flight
runs here, in the main Snakemake process, so a bad config fails before any job (and before anything is
created), unless the launcher ran it and recorded it (stages/preflight.py: then its record is read); a
build or output that a live run holds is refused by a probe (guard.probe). Everything a run takes or writes
(its locks, the output claims, the record of a pre-flight run here, jobs.json, config.json) is taken or
written by `on_start`, which Snakemake calls only when it executes jobs.

The hand-off from `mintdim build` (and job.run()): one Snakemake `--config` value, `mintdim_run`, a JSON
object (`RUN_KEYS`), taken out of the config before the build is resolved (so it never changes the build
id). A direct `snakemake` run has none.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time

import yaml

from .. import errors as E
from ..config import resolve
from ..faults import kill_point
from ..formats import records
from ..formats.layout import Layout
from ..sources import inputs
from ..stages.preflight import preflight, record, record_path, recorded
from ..stages.to_build import outputs_to_build
from ..stages.tokenizer_facts import schema_checked
from . import failure, guard

RUN_KEY = "mintdim_run"
# launcher: pid of the `mintdim build` process (Snakemake stops its jobs and ends when it is gone);
# rebuild: --rebuild (finished outputs may be replaced); how: the command a refusal names;
# error_file: where this process writes an error of its own for the launcher to raise;
# preflight: the record of the pre-flight the launcher ran (stages/preflight.py record_path)
RUN_KEYS = ("launcher", "rebuild", "how", "error_file", "preflight")
STOP_GRACE_S = 3.0  # SIGINT to a group, then SIGKILL this long after


def take_run(config: dict) -> dict:
    """The launcher's hand-off (see the module docstring), removed from Snakemake's config. Snakemake reads
    `--config` values with YAML's base loader (every scalar a string); a JSON object is valid YAML."""
    value = config.pop(RUN_KEY, None)
    if isinstance(value, str):
        value = yaml.safe_load(value)
    if not isinstance(value, dict):
        return {}
    run = {k: value.get(k) for k in RUN_KEYS if value.get(k) not in (None, "")}
    if "launcher" in run:
        run["launcher"] = int(run["launcher"])
    run["rebuild"] = str(run.get("rebuild", "")).lower() in ("true", "1")
    return run


def load_default_config(config: dict, workflow_root: str) -> dict:
    """A user's --configfile replaces the example entirely; none given -> config/config.yaml."""
    if config:
        return dict(config)
    with open(os.path.join(workflow_root, "config", "config.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


class BuildDAG:
    def __init__(
        self,
        raw: dict,
        run: dict | None = None,
        main_process: bool = True,
        cores: int | None = None,
        local: bool = True,
        configfiles=(),
    ):
        self.raw = raw
        self.run = run or {}
        self._metas = None  # the facts of a pre-flight run here, recorded when the run starts
        self.guard = None  # the run's locks, from onstart (guard.BuildGuard)
        how = self.run.get("how") or _rebuild_how(configfiles)
        self.build = self._checked(raw) if main_process else resolve(raw, trusted=schema_checked(raw))
        todo = [o.index for o in self.build.outputs]
        if main_process:
            try:
                todo = outputs_to_build(self.build, self.run.get("rebuild", False), how)
            except E.MintDimError as err:
                raise err.with_lang(self.build.lang) from None
        self.layout = Layout(self.build.work_dir, self.build.build_id)
        if main_process:
            guard.probe(self.build, self.layout)  # another live run of this build, or of an output: stop now
        self._plan = self._job_plan(main_process, cores, local)
        self.bounds = {int(k): [tuple(r) for r in v] for k, v in self._plan["chunks"].items()}
        self.chunks = {i: len(b) for i, b in self.bounds.items()}
        self.write_groups = {int(k): v for k, v in self._plan["write_groups"].items()}
        self._gen = {o.index: self._generation(o) for o in self.build.outputs}
        self._todo = todo

    def _checked(self, raw: dict):
        """The resolved build, checked: the pre-flight the launcher recorded (its run key `preflight` names
        this config's record) while nothing it read changed since; else pre-flight here (a direct
        `snakemake` run), recorded when the run starts (parsing changes no file)."""
        path = self.run.get("preflight")
        hit = recorded(raw) if path is not None and path == record_path(raw) else None
        if hit is not None:
            return hit[0]
        build, self._metas = preflight(raw, use_cache=True, check_outputs=False)
        return build

    def on_start(self) -> None:
        """Snakefile `onstart` (execution only: never a dry run, --report, --lint or "nothing to be
        done"): take the run lock and hold the outputs (guard; another live run: stop here), record what
        the jobs read (a pre-flight run here, jobs.json, config.json), clear the errors of an earlier run,
        then watch the launcher. A problem: one clear message, and the run stops before its first job."""
        held = None
        try:
            locks = guard.BuildGuard(self.build, self.layout, launcher=self.run.get("launcher"))
            held = self.guard = locks.start()
            held.claim_outputs()
            kill_point("snakemake:start")
            if self._metas is not None:
                record(self.raw, self.build, self._metas, "Snakemake's process")
            self._write_plan()
            self._write_config()
            failure.reset(self.layout)
            if self.run.get("launcher"):  # last: its SIGINT must find Snakemake's scheduler, not this hook
                watch_launcher(self.run["launcher"])
        except (E.MintDimError, OSError) as exc:  # another live run; a full disk
            err = (
                exc
                if isinstance(exc, E.MintDimError)
                else failure.unexpected("start", exc, [self.layout.root])
            )
            guard.report_error(err, self.run.get("error_file"))
            if held is not None and isinstance(exc, OSError):
                failure.mark(self.build, err, held.claimed)
            print("\n" + err.render(self.build.lang), file=sys.stderr, flush=True)
            if held is not None:
                held.release()
            sys.exit(1)
        except KeyboardInterrupt:  # Ctrl-C (the launcher stops the group) here, before Snakemake's scheduler
            if held is not None:  # takes it: the launcher says `interrupted`; no traceback in the log
                held.release()
            sys.exit(130)

    def _generation(self, out) -> int:
        """Which completion record of the output this run asks for: the one of the finished output in place
        (this config's), else the next one, so that finalize places the output again (it was deleted or
        replaced since): the DAG decides it from the records, and parsing removes nothing."""
        st = records.state(self.build.work_dir, out.absdir)
        if st.finished and st.entry.get("build_id") == self.build.build_id:
            return int(st.entry.get("gen", 0))
        gens = self.layout.done_generations(out.index)
        return gens[-1] + 1 if gens else 0

    def done_target(self, out_index) -> str:
        return self.layout.done(int(out_index), self._gen[int(out_index)])

    def done_targets(self, forced: bool = False) -> list[str]:
        """The target of `all`: each output to build. One already built (the same config, inputs of the same
        content) is none, unless stages are forced (--forcerun, --forceall: finalize compares the bytes)."""
        return [self.done_target(o.index) for o in self.build.outputs if forced or o.index in self._todo]

    def _job_plan(self, main_process: bool, cores, local: bool) -> dict:
        """Byte ranges per input file and unit sizes per write job. The main process decides them
        (from the cores) and records them, so a cluster job that parses this workflow again sees
        the same DAG."""
        path = os.path.join(self.layout.root, "jobs.json")
        if not main_process and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        parallel = max(1, min(int(cores or 1), 64))
        chunks = self._chunks(parallel, spread=False)
        if sum(len(b) for b in chunks.values()) < parallel:  # too few jobs for the cores: split large files
            chunks = self._chunks(parallel, spread=True)
        groups = {
            o.index: write_groups(
                self.slots(o.index),
                parallel if local else None,
                sum(inputs.size_of(self.build.files[i].abspath) for i in o.files),
                self.build.chunk_mb * 2**20,
            )
            for o in self.build.outputs
        }
        plan = {"chunks": chunks, "write_groups": groups}
        return json.loads(json.dumps(plan))  # the same types as a recorded plan (string keys)

    def _write_plan(self) -> None:
        """jobs.json, for the jobs of this run that parse the workflow again (cluster jobs). Written
        when the run starts executing, so a dry run (or --report) never replaces a running build's."""
        os.makedirs(self.layout.root, exist_ok=True)
        records.atomic_write_text(os.path.join(self.layout.root, "jobs.json"), json.dumps(self._plan))

    def _chunks(self, parallel: int, spread: bool) -> dict[int, list[tuple[int, int]]]:
        chunks = {}
        for f in self.build.files:
            try:
                # byte ranges of a JSONL file; row-group (Parquet) or record-batch (datasets) ranges
                chunks[f.index] = inputs.chunk_bounds(f.abspath, self.build.chunk_mb, parallel, spread)
            except OSError:  # removed (or replaced) since pre-flight
                raise E.MintDimFileNotFoundError.make("source", f.path, lang=self.build.lang) from None
        return chunks

    @property
    def lang(self) -> str:
        return self.build.lang

    def tokenize_threads(self, cores: int) -> int:
        """Few chunks: give each job the cores (the tokenizer threads); many: one core per job."""
        cores = max(1, int(cores or 1))
        return max(1, cores // max(1, min(cores, sum(self.chunks.values()))))

    def chunk_dirs(self, out_index: int) -> list[str]:
        dirs = []
        for i in self.build.outputs[out_index].files:
            dirs += [self.layout.tok_dir(i, k) for k in range(self.chunks[i])]
        return dirs

    def chunk_range(self, file_index: int, chunk_index: int) -> str:
        start, end = self.bounds[file_index][chunk_index]
        return f"--start {start} --end {end}"

    def source(self, file_index: int) -> str:
        return self.build.files[file_index].abspath

    def validate_inputs(self) -> list[str]:
        """The validate job's inputs: tokenizer files, the train jobs' markers (tokenizer.train_bpe), and the
        sources, whose content it records (an input changed since a killed run: validated again)."""
        from ..tokenizers import training

        return (
            sorted({f.tokenizer.abspath for f in self.build.files if f.tokenizer.train is None})
            + training.markers(self.build, self.layout.root)
            + [f.abspath for f in self.build.files]
        )

    def slots(self, out_index: int) -> range:
        """The unit sizes of an output by position: declared sizes, or k sizes planned from the data."""
        out = self.build.outputs[out_index]
        return range(len(out.sizes) if out.sizes is not None else out.auto["k"])

    def write_jobs(self, out_index) -> range:
        return range(len(self.write_groups[int(out_index)]))

    def written(self, out_index) -> list[str]:
        """The write jobs' shard summaries of an output (finalize checks the shard counts in them)."""
        return [self.layout.written(out_index, k) for k in self.write_jobs(out_index)]

    def parts(self, out_index) -> list[str]:
        """What finalize links into the output's tree: the write jobs' directories, then aggregate's."""
        return [self.layout.stage_part(out_index, k) for k in self.write_jobs(out_index)] + [
            self.layout.stage_agg(out_index)
        ]

    def aggregate_waits_for_write(self, out_index) -> list[str]:
        """What aggregate needs of the write jobs: packed rows, their summaries (the trained tokens
        each sample kept); bucketed units, nothing, so aggregate runs beside the write jobs (the
        plan holds all it indexes). Shipped example, 2 cores: 2.61 -> 2.38 s (8 interleaved builds)."""
        return self.written(out_index) if self.build.outputs[int(out_index)].pack else []

    def write_slots(self, out_index, part) -> str:
        """The unit sizes (slots) one write job writes, as its --slots argument."""
        return ",".join(str(s) for s in self.write_groups[int(out_index)][int(part)])

    @property
    def config_file(self) -> str:
        """The raw config as a file for the jobs that read it (validate, train): a path on their
        command line, not the whole config (a direct snakemake run prints each command)."""
        return os.path.join(self.layout.root, "config.json")

    def _write_config(self) -> None:
        os.makedirs(self.layout.root, exist_ok=True)
        records.atomic_write_text(
            self.config_file, json.dumps(self.raw, sort_keys=True, ensure_ascii=False, indent=1)
        )


def _rebuild_how(configfiles) -> str | None:
    """A direct `snakemake` run: the `mintdim build` command that rebuilds its config file."""
    files = [str(f) for f in configfiles or ()]
    return f"mintdim build {files[0]} --rebuild" if len(files) == 1 else None


def write_groups(slots, cores: int | None, input_bytes: int, chunk_bytes: float) -> list[list[int]]:
    """Unit sizes per write job: one job per core (the build's --cores), each taking every n-th size,
    and at most one job per chunk_mb of input: a process costs ~0.1 s of start-up (Python, numpy), more
    than writing most sizes does (all 12 sizes of the 61k-sample ShareGPT build take 0.11 s in one
    process). Neighbouring sizes, which hold similar amounts of data, land in different jobs. The
    Snakefile passes the build's cores under every executor (workflow.local_exec is true while it is
    read); cores None gives one job per size."""
    slots = list(slots)  # chunk_bytes > 0: config.resolve refuses any other chunk_mb
    n = len(slots) if cores is None else max(1, min(len(slots), cores, math.ceil(input_bytes / chunk_bytes)))
    return [slots[g::n] for g in range(n)]


# --- stopping ---------------------------------------------------------------------------------------------


def stop_group(group: int, running=lambda: True, grace: float = STOP_GRACE_S) -> None:
    """Stop a process group: SIGINT (each job records `interrupted` and ends; Snakemake cancels and ends),
    then SIGKILL to whatever still runs `grace` seconds later (a job Snakemake was starting missed the
    SIGINT, or a process that does not end). Never SIGTERM to Snakemake: its handler takes the scheduler's
    lock, which the interrupted code may hold (a Snakemake deadlocks for good)."""
    signal_group(group, signal.SIGINT)
    t0 = time.monotonic()
    while running() and time.monotonic() - t0 < grace:
        time.sleep(0.05)
    signal_group(group, signal.SIGKILL)


def signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except OSError:  # gone already
        pass


def watch_launcher(launcher: int, every: float = 0.5) -> None:
    """In the Snakemake process `mintdim build` started (the leader of its own process group): when that
    launcher is gone (kill -9, a closed terminal, a batch limit), nobody waits for this build any more,
    so stop the group, Snakemake and every job (stop_group). Ordinary code in a thread: it checks the
    parent process twice a second, and no signal handler is involved."""
    if os.getpgrp() != os.getpid():
        return

    def watch():
        # sleep first: by the first check the main thread has left `onstart` for the scheduler, which
        # turns the SIGINT into a cancel (in the hook it would be a KeyboardInterrupt with a traceback)
        time.sleep(every)
        while os.getppid() == launcher:
            time.sleep(every)
        stop_group(os.getpgrp())

    threading.Thread(target=watch, name="mintdim-launcher-watch", daemon=True).start()


def cancel_pending_timers() -> None:
    """Snakemake's job rate limiter (default 100 jobs/1 s) leaves a non-daemon threading.Timer
    behind after the last job, and the interpreter waits for it (before any exit handler): from the
    last summary line to the process's end 1.06 s without this against 0.08 s with it (4 builds
    each). Once the workflow has finished
    (onsuccess/onerror) nothing needs rescheduling, so cancel it."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
