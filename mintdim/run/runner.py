"""Run the Snakemake workflow for a config, as `mintdim build` and `job.run()` do (the launcher).

1. Pre-flight, here in the caller's process: a config error is raised before anything runs or is created.
   Outputs that are already built (this config's finished output, inputs of the same content) need no
   Snakemake at all. Otherwise its result is recorded (stages/preflight.py record) for Snakemake's process
   and the validate job, which read it instead of checking again.
2. Snakemake, started with an ordinary command line: `python -m snakemake --snakefile ... --configfile
   WORK/<id>/config.yaml --config mintdim_run={...}` (the one hand-off, dag.RUN_KEYS), in a process group
   of its own, its console written to WORK/<id>/logs/snakemake.log. This process shows MintDim's lines
   of that file as they come, and waits.
3. The outcome, from MintDim's own records: the errors the jobs (and Snakemake's process) recorded, the
   output records (built, or already built), never from Snakemake's console.

Stopping (docs/reliability.md): Ctrl-C, SIGTERM or SIGHUP to this process only sets a flag; the wait loop
then stops Snakemake's group (dag.stop_group: SIGINT, SIGKILL 3 s later) and raises. When this process
dies without a word (kill -9), Snakemake notices within half a second and stops its group itself
(dag.watch_launcher). Two levels of processes in all: this one and Snakemake, whose jobs are its own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from .. import errors as E
from ..formats import records
from ..formats.layout import Layout
from ..paths import snakefile
from . import failure, guard
from .dag import RUN_KEY, signal_group, stop_group

# MintDim's own lines and Snakemake's progress: what the console shows of Snakemake's log (display only)
_SHOWN = re.compile(rb"\[unit-build|^\d+ of \d+ steps|^Nothing to be done")
# what a dry run does not show of it: lines about no planned job (Snakemake's banner, with the command line
# and its --config, goes with `--quiet host`), and each job's timestamp
_DRY_HIDDEN = re.compile(
    rb"^(Assuming unrestricted shared filesystem|Building DAG of jobs|"
    rb"Would remove temporary output|\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\]$)"
)


@dataclass
class OutputResult:
    dir: str
    path: str
    stats: dict


@dataclass
class BuildResult:
    outputs: list[OutputResult] = field(default_factory=list)
    build_id: str = ""
    work_dir: str = ""
    dry_run: bool = False
    log: str = ""
    already_built: bool = False  # every output was finished before, from the same config and inputs
    reports_written: int = 0  # report jobs run (report=True), e.g. for outputs already built

    @property
    def stats(self) -> dict:
        """Stats of the only output (the common case); see `outputs` for several."""
        return self.outputs[0].stats if len(self.outputs) == 1 else {o.dir: o.stats for o in self.outputs}


def snakemake_command(
    config_path: str,
    cores: int,
    profile: str | None,
    keep_intermediates: bool,
    dry_run: bool,
    extra: list[str] | None = None,
    run: dict | None = None,
    targets: list[str] | None = None,
) -> list[str]:
    # targets (rule names) first: after an option of several values (--until) they would be its values
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        *(targets or []),
        "--snakefile",
        snakefile(),
        "--directory",
        os.getcwd(),
        "--configfile",
        config_path,
        "--cores",
        str(cores),
        "--rerun-incomplete",
        # Correctness, not speed (0.03 s CPU either way): MintDim's own locks (guard.py) guard builds and
        # outputs; Snakemake's lock files add nothing to them and go stale after a kill
        "--nolock",
        # the default ILP scheduler starts a solver process (cbc) before every job; the DAG is small
        # and its jobs wait on each other, so the greedy choice is the same one, without that cost
        "--scheduler",
        "greedy",
        # The build id already names the config and the MintDim version; Snakemake's own per-job
        # records (params, code, checksums) add no rerun decision beyond file times, and recording
        # them imports pandas (0.25 s) wherever it is installed
        "--drop-metadata",
        "--rerun-triggers",
        "mtime",
    ]
    if run:
        cmd += ["--config", f"{RUN_KEY}={json.dumps(run, ensure_ascii=False)}"]
    cmd += ["--profile", profile] if profile else []
    cmd += ["--workflow-profile", "none"]
    cmd += ["--notemp"] if keep_intermediates else []
    cmd += ["--dry-run", "--quiet", "host"] if dry_run else []
    return cmd + list(extra or [])


def run_build(
    raw: dict,
    cores: int | None = None,
    profile: str | None = None,
    keep_intermediates: bool = False,
    dry_run: bool = False,
    echo=None,
    extra_args: list[str] | None = None,
    rebuild: bool = False,
    until: list[str] | None = None,
    forcerun: list[str] | None = None,
    report: bool = False,
    how: str | None = None,
) -> BuildResult:
    """rebuild: build every stage again (Snakemake's --forcerun validate) and replace a finished output that
    MintDim wrote there once the new one is complete (formats/records.py); nothing else is ever replaced.
    until / forcerun: Snakemake's --until / --forcerun (rule names), for debugging a stage.
    report: also run the report job of each output (Snakefile target `reports`; opt-in).
    how: the command that rebuilds, named when a finished output is refused (`mintdim build my.yaml
    --rebuild`; job.run(): `job.run(rebuild=True)`)."""
    from ..stages.preflight import preflight, record_path
    from ..stages.to_build import outputs_to_build

    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    check_executor(profile, raw.get("lang", "en") if isinstance(raw, dict) else "en")
    build, metas = preflight(raw, use_cache=True, check_outputs=False)
    try:
        todo = outputs_to_build(build, rebuild, how)
    except E.MintDimError as err:
        raise err.with_lang(build.lang) from None
    layout = Layout(build.work_dir, build.build_id)
    guard.probe(build, layout, echo)  # this build, or one of its outputs, busy in another live build: stop
    result = BuildResult(build_id=build.build_id, work_dir=build.work_dir, dry_run=dry_run)
    before = _placements(build)
    if not (todo or rebuild or until or forcerun or report):
        result.already_built = True  # nothing for Snakemake to do (a dry run says so too)
        return _finished(result, build, until)
    reports = _report_times(layout, build)
    config_path, error_file = _run_files(raw, build, metas, layout, result)
    extra = list(extra_args or []) + (["--until", *until] if until else [])
    forced = (["validate"] if rebuild else []) + list(forcerun or [])
    extra += ["--forcerun", *forced] if forced else []
    extra += [] if dry_run else cluster_args(profile, build.lang, echo)
    run = {
        "launcher": os.getpid(),
        "rebuild": rebuild,
        "how": how,
        "error_file": error_file,
        "preflight": record_path(raw),
    }
    cmd = snakemake_command(
        config_path,
        cores or os.cpu_count() or 1,
        profile,
        keep_intermediates,
        dry_run,
        extra,
        run=run,
        targets=["all", "reports"] if report else None,
    )
    rc, stopped_by = _run_snakemake(cmd, result.log, echo, show_all=dry_run)
    if stopped_by:
        _unlink(error_file)
        raise _stopped(stopped_by, result.log, build.lang)
    if rc != 0:
        raise _failure(rc, build, layout, error_file, result.log)
    _unlink(error_file)
    if dry_run:
        return result
    result.already_built = all(
        before[o.absdir] is not None and before[o.absdir] == _placement(build, o) for o in build.outputs
    )
    result.reports_written = sum(
        1 for k, t in _report_times(layout, build).items() if t and t != reports.get(k)
    )
    return _finished(result, build, until)


def _run_files(raw: dict, build, metas, layout: Layout, result: BuildResult) -> tuple[str, str]:
    """What the Snakemake run reads: pre-flight's record, the config as YAML, and a clean path for a failed
    job's error (returned with the config's path); result.log is where Snakemake's console goes."""
    import yaml

    from ..stages.preflight import record

    config_path = os.path.abspath(os.path.join(layout.root, "config.yaml"))
    result.log = os.path.join(layout.root, "logs", "snakemake.log")
    error_file = os.path.join(layout.root, f"runner-{os.getpid()}.error.json")
    try:
        record(raw, build, metas, "mintdim build")
        os.makedirs(os.path.dirname(result.log), exist_ok=True)
        with open(config_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(raw, f, allow_unicode=True, sort_keys=False)
        _unlink(error_file)
    except OSError as exc:  # e.g. the work directory's disk is full: one clear message naming the path
        raise failure.unexpected("start", exc, [layout.root]).with_lang(build.lang) from None
    return config_path, error_file


def _stopped(signum: int, log: str, lang: str) -> BaseException:
    """What a build stopped by a signal raises: Ctrl-C as KeyboardInterrupt, any other signal a BuildError
    whose exit code is that of a process the signal killed."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    err = E.BuildError.stopped(signal.Signals(signum).name, log, lang=lang)
    err.exit_code = 128 + signum
    return err


def _run_snakemake(cmd: list[str], log_path: str, echo, show_all: bool) -> tuple[int, int | None]:
    """Start Snakemake (its own process group; its console into log_path), show what the console should show
    of it, and wait. A SIGINT, SIGTERM or SIGHUP to this process only sets the flag `stopped`; the loop then
    stops the group. Returns Snakemake's exit code and the signal that stopped the build, if one did."""
    stopped: list[int] = []
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {}
    if threading.current_thread() is threading.main_thread():  # Python delivers signals there only
        old = {sig: signal.signal(sig, lambda signum, _frame: stopped.append(signum)) for sig in handled}
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            with open(log_path, "rb") as tail:
                _follow(proc, tail, echo, show_all, stopped)
        finally:
            if proc.poll() is None:  # this process fails: the group goes with it
                stop_group(proc.pid, running=lambda: proc.poll() is None)
            proc.wait()
            # jobs that outlived Snakemake (only when Snakemake alone was killed): a group id is not
            # reused while a member lives, so this reaches only them
            signal_group(proc.pid, signal.SIGKILL)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return proc.returncode, (stopped[0] if stopped else None)


def _follow(proc, tail, echo, show_all: bool, stopped: list[int]) -> None:
    pending = b""
    while True:
        ended = proc.poll() is not None
        pending = _show(pending + tail.read(), echo, show_all)
        if ended:
            break
        if stopped:
            stop_group(proc.pid, running=lambda: proc.poll() is None)
            continue
        time.sleep(0.1)
    if pending:
        _show(pending + b"\n", echo, show_all)


def _show(data: bytes, echo, show_all: bool) -> bytes:
    """Echo the whole lines of data (MintDim's own lines: from where they start, as jobs share the console
    and a line may arrive glued after another's unfinished text); return the unfinished rest."""
    *lines, rest = data.split(b"\n")
    for line in lines:
        found = _SHOWN.search(line)
        if found or (show_all and not _DRY_HIDDEN.match(line)):
            echo(line[0 if show_all else found.start() :].decode("utf-8", "replace"))
    return rest


def _failure(rc: int, build, layout, error_file: str, log_path: str) -> E.MintDimError:
    """Why a run failed, from MintDim's records (failure.first_error: the error Snakemake's process recorded,
    a job's, a full disk); else Snakemake's exit and its log's end."""
    err = failure.first_error(layout, build.lang, build, _read_error_file(error_file))
    if err is not None:
        return err
    if rc < 0:
        return E.BuildError.killed(-rc, log_path, lang=build.lang)
    return E.BuildError.snakemake_failed(rc, log_path, _tail(log_path), lang=build.lang)


def _tail(path: str, lines: int = 12) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
    except OSError:
        return ""


def _placement(build, out) -> tuple | None:
    """What this build has in place at an output (generation and directory), if anything."""
    st = records.state(build.work_dir, out.absdir)
    if st.kind != "placed" or st.entry.get("build_id") != build.build_id:
        return None
    return st.entry.get("gen"), st.entry.get("ident")


def _placements(build) -> dict:
    return {o.absdir: _placement(build, o) for o in build.outputs}


def _report_times(layout, build) -> dict:
    """When each output's report was written (None: never): report jobs that ran change it."""
    paths = {o.index: os.path.join(layout.root, "report", f"o{o.index}") for o in build.outputs}
    return {i: os.stat(p).st_mtime_ns if os.path.exists(p) else None for i, p in paths.items()}


def _finished(result: BuildResult, build, until) -> BuildResult:
    """Each output's stats, from the finished output itself (its stats.json)."""
    for out in build.outputs:
        if _placement(build, out) is None:
            if until:
                continue  # stopped before finalize, as asked
            raise E.BuildError.no_completion_record(out.dir, "not placed", result.log, lang=build.lang)
        with open(os.path.join(out.absdir, "stats.json"), encoding="utf-8") as f:
            result.outputs.append(OutputResult(dir=out.dir, path=out.absdir, stats=json.load(f)))
    return result


CLUSTER_EXECUTORS = ("slurm", "cluster-generic")  # the `cluster` extra installs their plugins


def check_executor(profile: str | None, lang: str = "en") -> None:
    """A profile named on the command line whose executor's Snakemake plugin is not installed: say what to
    install (Snakemake itself ends in an argparse dump, `invalid choice: 'cluster-generic'`)."""
    import importlib.util

    import yaml

    try:
        with open(os.path.join(profile, "config.yaml"), encoding="utf-8") as f:
            executor = (yaml.safe_load(f) or {}).get("executor")
    except (TypeError, OSError, yaml.YAMLError, AttributeError):
        return  # no profile, or one Snakemake will report itself
    if not isinstance(executor, str) or executor in ("local", "dryrun", "touch"):
        return
    if importlib.util.find_spec("snakemake_executor_plugin_" + executor.replace("-", "_")) is None:
        raise E.MissingExtraError.make(
            f"The profile {profile} (executor: {executor})",
            "cluster" if executor in CLUSTER_EXECUTORS else None,
            f"snakemake-executor-plugin-{executor}",
            lang=lang,
        )


def cluster_args(profile: str | None, lang: str, echo) -> list[str]:
    """A profile with the slurm executor: ask the cluster what the build will ask it (run/slurm.py), and
    name the job-status command that works here on Snakemake's command line."""
    from . import slurm

    settings = slurm.read_profile(profile)
    if not settings or settings.get("executor") != "slurm":
        return []
    return ["--" + slurm.STATUS_KEY, slurm.check(settings, lang, echo)]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _read_error_file(path: str) -> list[E.MintDimError]:
    """The error the main Snakemake process raised itself (output busy, build already running)."""
    try:
        with open(path, encoding="utf-8") as f:
            err = E.MintDimError.from_dict(json.load(f))
    except (OSError, ValueError, KeyError):
        return []
    _unlink(path)
    return [err]
