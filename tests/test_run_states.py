"""One state rule for an output, proven by a stateful test (docs/reliability.md).

A Hypothesis state machine runs random sequences of what users do to a small build (tests/buildkit.py:
40 GSM8K rows): build, build with --keep-intermediates, kill -9 of the launcher or of the whole build
at a random stage (finalize included; also during --rebuild and --keep-intermediates builds), delete the
output, delete the work directory, --rebuild, --forcerun STAGE, touch an input, edit an input, edit the
config. After every step:

- nothing of the build runs 10 s after a kill;
- a valid finished output (one `mintdim verify` accepts) is never deleted before its replacement is
  complete (only the user's own `rm -rf` removes it), and an output directory never looks complete
  when it is not;
- a build that succeeds leaves exactly the bytes of a clean build of the current inputs and config;
  one that refuses is an OutputValidationError naming the real config file and what changed, and
  leaves the output as it was;
- no Python traceback on the console or in any log.

At the end of every sequence: at most one further `mintdim build` (plus `--rebuild` where its message
names it) leaves the output byte-identical to a clean build of the current inputs and config. Every
prefix of a sequence is a sequence Hypothesis also runs, so this holds after every step.

CI runs a bounded, derandomized search (a few minutes). For a long run:

    MINTDIM_STATES_EXAMPLES=200 MINTDIM_STATES_STEPS=12 MINTDIM_STATES_RANDOM=1 \\
        MINTDIM_STATES_REPORT=states.json python -m pytest tests/test_run_states.py
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import time

import yaml
from buildkit import Launch, build, config, out_tree, rows, write_rows
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mintdim.reading.verify import verify

EXAMPLES = int(os.environ.get("MINTDIM_STATES_EXAMPLES", "3"))
STEPS = int(os.environ.get("MINTDIM_STATES_STEPS", "6"))

DATA = [rows(40), rows(41), rows(40)[5:] + rows(45)[40:]]  # three contents of d.jsonl
CONFIGS = [config(), config(samples_per_shard=[7])]  # two configs of the same output directory
POINTS = [
    "validate:start",
    "tokenize:start",
    "tokenize:end",
    "plan:end",
    "write:shard",
    "aggregate:start",
    "finalize:start",
    "finalize:moved",
]
# jobs that run side by side
BESIDE = {
    "write:shard": ["aggregate:start"],
    "aggregate:start": ["write:start"],
}
MODES = ["", "--rebuild", "--keep-intermediates"]  # the build that is killed
STAGES = ["validate", "tokenize", "plan", "write", "aggregate", "finalize"]
COUNTS = {
    "sequences": 0,
    "steps": 0,
    "kills": 0,
    "kills_in_finalize": 0,
    "refusals": 0,
    "builds": 0,
    "rebuilds_at_end": 0,
}
_CLEAN: dict[tuple[int, int], dict] = {}


def clean(data: int, cfg: int) -> dict:
    """The bytes of a clean build of DATA[data] with CONFIGS[cfg], in a directory of its own."""
    if (data, cfg) not in _CLEAN:
        root = tempfile.mkdtemp(prefix="mintdim-clean-")
        try:
            write_rows(root, DATA[data])
            with open(os.path.join(root, "c.yaml"), "w") as f:
                yaml.safe_dump(CONFIGS[cfg], f)
            proc = build(root)
            assert proc.returncode == 0, proc.stderr[-3000:]
            _CLEAN[data, cfg] = out_tree(root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return _CLEAN[data, cfg]


def valid(out: str) -> bool:
    return os.path.isfile(os.path.join(out, "stats.json")) and verify(out).ok


class RunStates(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="mintdim-states-")
        self.out = os.path.join(self.root, "out")
        self.data, self.cfg = 0, 0
        self._write_data()
        self._write_config()
        self.trail: list[str] = []
        COUNTS["sequences"] += 1

    # --- what a user does ----------------------------------------------------------------------------

    @rule(keep=st.booleans())
    def build(self, keep):
        self._build("--keep-intermediates" if keep else None)

    @rule()
    def rebuild(self):
        self._build("--rebuild")

    @rule(stage=st.sampled_from(STAGES))
    def forcerun(self, stage):
        self._build("--forcerun", stage)

    @rule(point=st.sampled_from(POINTS), whole=st.booleans(), mode=st.sampled_from(MODES))
    def kill(self, point, whole, mode):
        self.trail.append(f"kill {'all' if whole else 'launcher'} at {point} {mode}")
        was_valid = valid(self.out)
        holds = ",".join(f"{p}=60" for p in [point] + BESIDE.get(point, []))
        run = Launch(self.root, *([mode] if mode else []), env={"MINTDIM_TEST_SLEEP_AT": holds})
        try:
            if run.wait_until(lambda: bool(run.held()), timeout=180):
                (run.kill_all if whole else run.kill_launcher)()
                COUNTS["kills"] += 1
                COUNTS["kills_in_finalize"] += point.startswith("finalize")
                assert run.gone_within(10) == [], self.trail  # nothing of the build runs 10 s after a kill
            else:  # the build never reached that point (already built, refused, or no such job): it ended
                run.proc.wait(timeout=300)
        finally:
            run.close()
        self._no_traceback(run.output())
        if was_valid:
            assert valid(self.out), self.trail
        self._never_looks_complete_unless_valid()

    @rule(
        point=st.sampled_from(["finalize:start", "finalize:moved"]),
        whole=st.booleans(),
        mode=st.sampled_from(MODES),
    )
    def kill_in_finalize(self, point, whole, mode):
        self.kill(point, whole, mode)

    @rule()
    def delete_output(self):
        self.trail.append("rm -rf out")
        shutil.rmtree(self.out, ignore_errors=True)

    @rule()
    def delete_work_dir(self):
        self.trail.append("rm -rf .mintdim")
        shutil.rmtree(os.path.join(self.root, ".mintdim"), ignore_errors=True)

    @rule()
    def touch_input(self):
        self.trail.append("touch d.jsonl")
        time.sleep(0.01)
        os.utime(os.path.join(self.root, "d.jsonl"))

    @rule()
    def edit_input(self):
        self.data = (self.data + 1) % len(DATA)
        self.trail.append(f"edit d.jsonl -> {self.data}")
        self._write_data()

    @rule()
    def edit_config(self):
        self.cfg = (self.cfg + 1) % len(CONFIGS)
        self.trail.append(f"edit c.yaml -> {self.cfg}")
        self._write_config()

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def output_never_looks_complete_unless_it_is(self):
        COUNTS["steps"] += 1
        self._never_looks_complete_unless_valid()

    def teardown(self):
        """At most one further build (plus --rebuild where it is named) gives the clean build's bytes."""
        try:
            if not self.trail:
                return
            proc = build(self.root)
            if proc.returncode == 1 and "--rebuild" in proc.stderr:
                COUNTS["rebuilds_at_end"] += 1
                proc = build(self.root, "c.yaml", "--rebuild")
            assert proc.returncode == 0, (self.trail, proc.stderr[-3000:])
            assert out_tree(self.root) == clean(self.data, self.cfg), self.trail
            self._no_traceback(proc.stdout + proc.stderr)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            _report()

    # --- helpers ------------------------------------------------------------------------------------------

    def _build(self, *args):
        args = [a for a in args if a]
        self.trail.append(" ".join(["build", *args]))
        was_valid, before = valid(self.out), out_tree(self.root)
        proc = build(self.root, "c.yaml", *args)
        COUNTS["builds"] += 1
        self._no_traceback(proc.stdout + proc.stderr)
        if proc.returncode == 0:
            assert out_tree(self.root) == clean(self.data, self.cfg), self.trail
            return
        assert proc.returncode == 1, (self.trail, proc.stderr[-3000:])
        COUNTS["refusals"] += 1
        err = proc.stderr
        assert err.startswith("OutputValidationError: "), (self.trail, err[-3000:])
        assert "mintdim build c.yaml --rebuild" in err, (self.trail, err)  # the real config file, no CONFIG
        if "inputs that have changed" in err:
            assert "• source d.jsonl" in err, err
        elif "another MintDim config" in err:
            assert "Changed in the config since that build:" in err and "samples_per_shard" in err, err
        else:
            assert "no record of" in err, err
        assert out_tree(self.root) == before, self.trail  # a refusal changes nothing
        if was_valid:
            assert valid(self.out), self.trail

    def _never_looks_complete_unless_valid(self):
        tree = out_tree(self.root)
        if any(rel == "stats.json" or rel.endswith(".bin") for rel in tree):
            assert valid(self.out), (self.trail, sorted(tree)[:8])

    def _no_traceback(self, text: str):
        assert "Traceback" not in text, (self.trail, text[-3000:])
        for path in glob.glob(os.path.join(self.root, ".mintdim", "*", "logs", "*.log")):
            with open(path, encoding="utf-8", errors="replace") as f:
                log = f.read()
            at = log.find("Traceback")
            assert at < 0, (self.trail, path, log[max(0, at - 1500) : at + 3000])

    def _write_data(self):
        write_rows(self.root, DATA[self.data])

    def _write_config(self):
        with open(os.path.join(self.root, "c.yaml"), "w") as f:
            yaml.safe_dump(CONFIGS[self.cfg], f)


def _report() -> None:
    path = os.environ.get("MINTDIM_STATES_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(COUNTS, f, indent=1)


RunStates.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    # no shrinking: a build's timing is not replayable, and the failing sequence is in the message (trail)
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    derandomize=os.environ.get("MINTDIM_STATES_RANDOM") is None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
TestRunStates = RunStates.TestCase
