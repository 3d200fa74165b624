"""Run the Snakemake workflow for a config, as `mintdim build` and `job.run()` do.

Pre-flight runs here first, in the caller's process, so config errors are
raised directly. The workflow then runs as a `python -m snakemake`
subprocess (isolated, honours profiles and executors; started through
mintdim/run/snakemake_main.py, which skips the interpreter's teardown and stops with its launcher). Its output goes to a
log file; the console gets MintDim's own lines and Snakemake's progress.
A failed build re-raises the MintDim error that the failing job recorded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from .. import errors as E
from . import guard
from ..formats import records
from ..formats.layout import Layout
from ..paths import snakefile
from .forkserver import ENV as FORKSERVER_ENV
from .snakemake_main import ARGV_ARG, ERROR_FILE_ARG, FORKSERVER_ARG, LAUNCHER_ARG, PREFLIGHT_ARG, signal_group, stop_group
from . import failure
from .job import ERROR_LINE, unexpected_failure

# Pre-flight (stages.validate: the config schema, the tokenizers) and yaml are imported in run_build,
# after Snakemake's process has started: `mintdim build` imports this module first thing to start it
# (commands/build.py), and every import here delays that start (all of them: 54 ms, 2 cores).

# MintDim's own lines may arrive glued after text Snakemake wrote without its newline yet
# (jobs share the console): find them anywhere in a line and show them from their start.
_PASS = re.compile(r"\[unit-build|^\d+ of \d+ steps|^Nothing to be done")
_FINALIZE_JOB = re.compile(r"^(local)?rule finalize:")  # Snakemake's header of a finalize job it runs
_REPORT_JOB = re.compile(r"^(local)?rule report:")


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


def snakemake_command(config_path: str, cores: int, profile: str | None, keep_intermediates: bool,
                      dry_run: bool, extra: list[str] | None = None, run_args: list[str] | None = None,
                      targets: list[str] | None = None) -> list[str]:
    # targets (rule names) first: after an option of several values (--until) they would be its values
    cmd = [sys.executable, "-m", "mintdim.run.snakemake_main", LAUNCHER_ARG, str(os.getpid()), *(run_args or []),
           *(targets or []), "--snakefile", snakefile(), "--directory", os.getcwd(),
           "--configfile", config_path, "--cores", str(cores), "--rerun-incomplete",
           # Correctness, not speed (measured again, issue 13: 0.03 s CPU either way): MintDim's own
           # locks (mintdim/run/guard.py) guard builds and outputs; Snakemake's lock files add nothing to
           # them, go stale after a kill, and a Snakemake run that ends removes the whole lock
           # directory, which breaks another run starting in the same directory at that moment
           "--nolock",
           # the default ILP scheduler starts a solver process (cbc) before every job; the DAG is small
           # and its jobs wait on each other, so the greedy choice is the same one, without that cost
           "--scheduler", "greedy",
           # The build id already names the config and the MintDim version; Snakemake's own per-job
           # records (params, code, checksums) add no rerun decision beyond file times, and recording
           # them imports pandas (0.25 s) wherever it is installed
           "--drop-metadata", "--rerun-triggers", "mtime"]
    cmd += ["--profile", profile] if profile else []
    cmd += ["--workflow-profile", "none"]
    if keep_intermediates:
        cmd.append("--notemp")
    if dry_run:
        cmd.append("--dry-run")
    return cmd + list(extra or [])


def start_snakemake() -> subprocess.Popen:
    """Snakemake's process, started before pre-flight so that its imports (~0.65 s of CPU: snakemake.cli)
    run on another core while this process checks the config; it waits for its command line
    (hand_over). In a process group of its own, its output to this process; see run_build."""
    return subprocess.Popen([sys.executable, "-m", "mintdim.run.snakemake_main", LAUNCHER_ARG, str(os.getpid()),
                             ARGV_ARG, "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def hand_over(proc: subprocess.Popen, cmd: list[str]) -> None:
    """The command line (snakemake_command) to the process start_snakemake started."""
    try:
        proc.stdin.write(json.dumps(cmd[3:]) + "\n")  # what follows `python -m mintdim.run.snakemake_main`
        proc.stdin.close()
    except OSError:  # it ended already (it could not start Snakemake): its output and exit code say why
        pass


def cancel(proc: subprocess.Popen) -> None:
    """No build after all (pre-flight failed, Ctrl-C): the process start_snakemake started has only
    imported Snakemake, or is waiting for its command line; it goes at once (on its own it would
    end when stdin closes, after its imports: the error would wait for them)."""
    signal_group(proc.pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    proc.wait()


def run_build(raw: dict, cores: int | None = None, profile: str | None = None, keep_intermediates: bool = False,
              dry_run: bool = False, echo=None, extra_args: list[str] | None = None, rebuild: bool = False,
              until: list[str] | None = None, forcerun: list[str] | None = None,
              report: bool = False, snakemake: subprocess.Popen | None = None) -> BuildResult:
    """snakemake: the process start_snakemake() started, if the caller started it already (`mintdim
    build` does, before it reads the config); else it is started here. It is handed its command line
    after pre-flight, or cancelled.
    rebuild: first delete each output that is a finished MintDim output recorded in this work
    directory and holds exactly the files MintDim wrote (records.remove_finished); nothing else.
    until / forcerun: Snakemake's --until / --forcerun (rule names), for debugging a stage.
    report: also run the report job of each output (Snakefile target `reports`; opt-in)."""
    import yaml

    from ..stages.validate import preflight, write_cache

    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    proc = snakemake or start_snakemake()  # its imports overlap pre-flight; it waits for the command line
    try:
        check_executor(profile, raw.get("lang", "en") if isinstance(raw, dict) else "en")
        if rebuild and not dry_run:
            _remove_finished(raw, echo)
        # use_cache: a tokenizer file this work dir's pre-flight already loaded (same path, size and
        # mtime) is not loaded again (ai21 j2: 0.4 s); a config it already checked skips the schema
        build, metas = preflight(raw, use_cache=True)
        layout = Layout(build.work_dir, build.build_id)
        guard.probe(build, layout)  # this build, or one of its outputs, busy in another live build: stop now
        config_path = os.path.abspath(os.path.join(layout.root, "config.yaml"))
        log_path = os.path.join(layout.root, "logs", "snakemake.log")
        try:
            write_cache(build, metas)
            os.makedirs(layout.root, exist_ok=True)
            with open(config_path, "w", encoding="utf-8") as f:
                yaml.safe_dump(raw, f, allow_unicode=True, sort_keys=False)
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
        except OSError as exc:  # e.g. the work directory's disk is full: one clear message naming the path
            raise unexpected_failure("start", exc, [layout.root]).with_lang(build.lang) from None
        extra = list(extra_args or [])
        extra += ["--until", *until] if until else []
        extra += ["--forcerun", *forcerun] if forcerun else []
        error_file = os.path.join(layout.root, f"runner-{os.getpid()}.error.json")
        _unlink(error_file)
        run_args = [PREFLIGHT_ARG, build.build_id, ERROR_FILE_ARG, error_file]
        if not dry_run and profile_executor(profile) in (None, "local") and os.environ.get(FORKSERVER_ENV) != "0":
            run_args += [FORKSERVER_ARG, forkserver_spec(build, metas, layout)]
        cmd = snakemake_command(config_path, cores or os.cpu_count() or 1, profile, keep_intermediates, dry_run, extra,
                                run_args=run_args,
                                targets=["all", "reports"] if report else None)
        hand_over(proc, cmd)
    except BaseException:  # no build (a config error, Ctrl-C): the waiting process ends
        cancel(proc)
        raise
    tail: list[str] = []
    nothing_to_do = False
    finalized = reports = 0
    console_errors: list[E.MintDimError] = []
    # Snakemake runs in a process group of its own (start_new_session), which this process stops
    # as a whole: a signal sent to this process alone (kill PID, timeout, a closed terminal) is
    # forwarded to the group, and the group stops by itself when this process dies (kill -9;
    # snakemake_main.py). A user's Ctrl-C reaches this process and is forwarded as SIGINT.
    with _Log(log_path) as log, proc, _Forward(proc) as forwarded:
        for line in proc.stdout:
            log.write(line)
            line = line.rstrip("\n")
            if line.startswith(ERROR_LINE):  # a job that could not record its error (disk full)
                try:
                    console_errors.append(E.MintDimError.from_dict(json.loads(line[len(ERROR_LINE):])))
                except (ValueError, KeyError):
                    pass
                continue
            tail = (tail + [line])[-40:]
            if line.startswith("Nothing to be done"):
                nothing_to_do = True
            finalized += bool(_FINALIZE_JOB.match(line))
            reports += bool(_REPORT_JOB.match(line))
            found = _PASS.search(line)
            if dry_run:
                echo(line)
            elif found:
                echo(line[found.start():])
        rc = proc.wait()
    result = BuildResult(build_id=build.build_id, work_dir=build.work_dir, dry_run=dry_run, log=log_path,
                         # with report=True a finished output still runs its report job (if it has none yet):
                         # already built when no finalize job ran
                         already_built=not dry_run and (nothing_to_do or (report and rc == 0 and not finalized)),
                         reports_written=0 if dry_run else reports)
    if forwarded.signals:
        _unlink(error_file)
        if forwarded.signals[0] == signal.SIGINT:
            raise KeyboardInterrupt
        err = E.BuildError.stopped(signal.Signals(forwarded.signals[0]).name, log_path, lang=build.lang)
        err.exit_code = 128 + forwarded.signals[0]  # `mintdim build` exits as a process killed by it would
        raise err
    if rc != 0:
        errs = _read_error_file(error_file) + failure.collect(layout.errors_dir) + console_errors
        if errs:
            raise errs[0].with_lang(build.lang)
        if rc < 0:
            raise E.BuildError.killed(-rc, log_path, lang=build.lang)
        text = "\n".join(tail)
        if "LockException" in text or "cannot be locked" in text:
            raise E.BuildError.snakemake_locked(snakefile(), config_path, lang=build.lang)
        full = failure.full_disks([layout.root] + [o.absdir for o in build.outputs])
        if full or "No space left on device" in text:
            raise failure.first_error(layout, build.lang, build) if full else E.BuildError.disk_full_seen(
                log_path, "\n".join(tail[-12:]), lang=build.lang)
        raise E.BuildError.snakemake_failed(rc, log_path, "\n".join(tail[-12:]), lang=build.lang)
    _unlink(error_file)
    if not dry_run:
        for out in build.outputs:
            path = layout.latest_done(out.index)
            if until and (path is None or records.state(build.work_dir, out.absdir, build.build_id) != "ours-complete"):
                continue  # stopped before finalize, as asked
            try:
                with open(path or layout.done(out.index), encoding="utf-8") as f:
                    done = json.load(f)
            except (OSError, ValueError) as exc:
                raise E.BuildError.no_completion_record(out.dir, str(exc), log_path, lang=build.lang) from None
            result.outputs.append(OutputResult(dir=out.dir, path=out.absdir, stats=done["stats"]))
    return result


CLUSTER_EXECUTORS = ("slurm", "cluster-generic")  # the `cluster` extra installs their plugins


def profile_executor(profile: str | None):
    """The executor a profile names (None: no profile, none named, or a profile Snakemake will report)."""
    import yaml

    if not profile:
        return None
    try:
        with open(os.path.join(profile, "config.yaml"), encoding="utf-8") as f:
            return (yaml.safe_load(f) or {}).get("executor")
    except (OSError, yaml.YAMLError, AttributeError):
        return None


def forkserver_spec(build, metas, layout) -> str:
    """What the build's fork server (forkserver.py) loads ahead of the jobs: each input's tokenizer as
    its tokenize jobs load it (none that the build trains first), the scripts it may run, its log."""
    from ..paths import workflow_root
    from ..stages.tokenize import tokenizer_args

    tokenizers = []
    for entry in build.files:
        if entry.tokenizer_abspath in metas:
            found = list(tokenizer_args(build, metas, entry))
            if found not in tokenizers:
                tokenizers.append(found)
    return json.dumps({"tokenizers": tokenizers, "scripts": os.path.join(workflow_root(), "scripts"),
                       "log": os.path.join(layout.root, "logs", "forkserver.log")})


def check_executor(profile: str | None, lang: str = "en") -> None:
    """A profile's executor whose Snakemake plugin is not installed: say what to install (Snakemake
    itself ends in an argparse dump, `invalid choice: 'cluster-generic'`)."""
    import importlib.util

    executor = profile_executor(profile)
    if not isinstance(executor, str) or executor in ("local", "dryrun", "touch"):
        return
    if importlib.util.find_spec("snakemake_executor_plugin_" + executor.replace("-", "_")) is None:
        raise E.MissingExtraError.make(f"The profile {profile} (executor: {executor})",
                                       "cluster" if executor in CLUSTER_EXECUTORS else None,
                                       f"snakemake-executor-plugin-{executor}", lang=lang)


def _remove_finished(raw: dict, echo) -> None:
    """--rebuild (see run_build); a directory another live build holds is never touched."""
    from ..config import resolve

    build = resolve(raw)
    layout = Layout(build.work_dir, build.build_id)
    guard.probe(build, layout)
    for out in build.outputs:
        try:
            removed = records.remove_finished(build.work_dir, out.absdir, out.dir)
        except E.MintDimError as err:
            raise err.with_lang(build.lang) from None
        if removed:
            for gen in layout.done_generations(out.index):
                _unlink(layout.done(out.index, gen))
            echo(f"[unit-build] --rebuild: removed the finished output {out.dir} (only the files MintDim wrote)")


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


class _Log:
    """The runner's copy of Snakemake's output. A full disk must not hide the build's own message:
    write errors only stop the copy."""

    def __init__(self, path: str):
        try:
            self._fh = open(path, "w", encoding="utf-8")
        except OSError:
            self._fh = None

    def write(self, text: str) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(text)
        except OSError:
            self.close()

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Forward:
    """While Snakemake runs: SIGINT, SIGTERM and SIGHUP sent to this process go to Snakemake's
    process group (SIGINT as it is, then, if the group still runs after a grace, as SIGTERM; SIGTERM
    and SIGHUP as SIGTERM, repeated until Snakemake has ended: snakemake_main.stop_group). Only in the main thread (Python delivers signals there);
    elsewhere the group still ends with this process (snakemake_main.py)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, proc):
        self.proc = proc
        self.signals: list[int] = []
        self._old = {}
        self._ended = threading.Event()
        self._stopping = False

    # Ctrl-C: the group gets SIGINT once (each job records `interrupted`); a job Snakemake was starting
    # at that moment misses it and runs on, and Snakemake waits for it (a write job held 60 s hung the
    # launcher past 60 s in tests/test_reliability.py), so after this grace the group is stopped as
    # for SIGTERM
    INTERRUPT_GRACE_S = 3.0

    def _handle(self, signum, _frame):
        self.signals.append(signum)
        if signum == signal.SIGINT:
            signal_group(self.proc.pid, signum)
        if not self._stopping:
            self._stopping = True
            grace = self.INTERRUPT_GRACE_S if signum == signal.SIGINT else 0.0
            threading.Thread(target=self._stop, args=(grace,), daemon=True).start()

    def _stop(self, grace: float) -> None:
        if grace and self._ended.wait(grace):
            return
        stop_group(self.proc.pid, self._ended)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        if exc[0] is not None and self.proc.poll() is None:  # this process fails: the group goes with it
            signal_group(self.proc.pid, signal.SIGTERM)
        self._ended.set()  # no signal to that group id any more: it may be reused
