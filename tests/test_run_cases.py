"""Five cases of the run layer, as a user met them: each failed on the run layer with the fork server, the
early-started Snakemake and the console scraping, and must pass on the plain one (docs/reliability.md)."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest
import yaml
from buildkit import Launch, asleep, build, logs_text, out_tree, project, reference  # noqa: F401  (reference: a fixture)
from conftest import REPO


def _no_traceback(root, *texts) -> None:
    for text in (logs_text(root), *texts):
        assert "Traceback" not in text, text[-3000:]


# --- case 1: kill -9 of the launcher during finalize -------------------------------------------------


@pytest.mark.parametrize("held", ["finalize:start", "finalize:moved"])
def test_1_kill9_of_the_launcher_in_finalize_leaves_nothing_running_and_the_next_build_is_exact(
    tmp_path, reference, held
):
    root = project(tmp_path)
    run = Launch(root, env={"MINTDIM_TEST_SLEEP_AT": f"{held}=60"})
    try:
        placed = lambda: os.path.exists(os.path.join(root, "out", "stats.json"))  # noqa: E731
        assert run.wait_until(placed if held == "finalize:moved" else run.held)
        time.sleep(0.3)
        run.kill_launcher()
        assert run.gone_within(10) == []
    finally:
        run.close()
    again = build(root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert out_tree(root) == reference
    assert "other bytes" not in again.stderr
    _no_traceback(root, again.stderr, run.output())


@pytest.mark.parametrize("how", ["kill -9", "ctrl-c"])
def test_1_a_launcher_stopped_while_snakemake_starts_stops_the_build_without_a_traceback(
    tmp_path, reference, how
):
    """The launcher killed (the launcher watch stops the build) or given Ctrl-C (it stops Snakemake's
    group) while Snakemake's process takes its locks in `onstart`, before its first job: nothing runs
    on, no KeyboardInterrupt traceback in Snakemake's log, and the next build is exact."""
    root = project(tmp_path)
    run = Launch(root, env={"MINTDIM_TEST_SLEEP_AT": "snakemake:start=3"})

    def starting():  # Snakemake's own process asleep in the hold
        return any("-m snakemake" in cmd and asleep(pid) for pid, cmd in run.alive())

    try:
        assert run.wait_until(starting), run.output()[-3000:]
        if how == "kill -9":
            run.kill_launcher()
        else:
            os.kill(run.proc.pid, signal.SIGINT)
            assert run.proc.wait(timeout=60) == 130
            assert run.output().rstrip().endswith("interrupted"), run.output()[-3000:]
        assert run.gone_within(15) == []
    finally:
        run.close()
    assert not os.path.exists(os.path.join(root, "out", "stats.json"))
    _no_traceback(root, run.output())
    again = build(root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert out_tree(root) == reference


def test_1_a_killed_rebuild_never_deletes_the_finished_output_before_its_replacement_is_complete(
    tmp_path, reference
):
    root = project(tmp_path)
    assert build(root).returncode == 0
    run = Launch(root, "--rebuild", env={"MINTDIM_TEST_SLEEP_AT": "tokenize:start=60"})
    try:
        assert run.wait_until(run.held)
        run.kill_launcher()
        assert run.gone_within(10) == []
    finally:
        run.close()
    assert out_tree(root) == reference  # still there, untouched
    again = build(root, "c.yaml", "--rebuild")
    assert again.returncode == 0, again.stderr[-3000:]
    assert out_tree(root) == reference
    _no_traceback(root, again.stderr)


# --- case 2: --keep-intermediates, then the output deleted --------------------------------------------


@pytest.mark.parametrize("rebuild", [False, True])
def test_2_an_output_deleted_after_a_build_that_kept_its_intermediates_is_built_again(
    tmp_path, reference, rebuild
):
    root = project(tmp_path)
    first = build(root, "c.yaml", "--keep-intermediates")
    assert first.returncode == 0, first.stderr[-3000:]
    shutil.rmtree(os.path.join(root, "out"))  # the README says a user may delete it
    again = build(root, "c.yaml", *(["--rebuild"] if rebuild else []))
    assert again.returncode == 0, again.stderr[-3000:]
    assert out_tree(root) == reference
    third = build(root)
    assert third.returncode == 0 and "already built" in third.stderr + third.stdout
    _no_traceback(root, again.stderr)


# --- case 3: every job runs in the process its executor started ---------------------------------------


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def test_3_a_profile_snakemake_finds_itself_runs_each_job_as_its_executor_started_it(tmp_path, reference):
    """SNAKEMAKE_PROFILE names the local-cluster profile (a cluster executor MintDim is not told about): the
    tokenize job's code runs in the job script's own process, which submit.sh started in a session of its own,
    never in a process of the launcher's host that Snakemake's process made."""
    root = project(tmp_path)
    profile = shutil.copytree(os.path.join(REPO, "profiles", "local-cluster"), os.path.join(root, "prof"))
    run = Launch(root, env={"SNAKEMAKE_PROFILE": profile, "MINTDIM_TEST_SLEEP_AT": "tokenize:start=4"})
    seen = []
    try:

        def held_job():
            seen[:] = run.held()
            return bool(seen)

        assert run.wait_until(held_job, timeout=120), run.output()[-3000:]
        main = [pid for pid, _ in run.alive() if _parent(pid) == run.proc.pid]  # the launcher's Snakemake
        for pid, cmd in seen:
            assert "scripts/tokenize_chunk.py" in cmd, (cmd, seen)
            assert main and all(os.getsid(pid) != os.getsid(s) for s in main), (cmd, main)
        assert run.proc.wait(timeout=240) == 0, run.output()[-3000:]
    finally:
        run.close()
    assert out_tree(root) == reference


# --- case 4: unchanged inputs are unchanged; a refusal names the real config file ---------------------


def test_4_an_input_copied_back_with_the_same_bytes_is_unchanged_and_a_real_change_names_the_config(tmp_path):
    root = project(tmp_path, name="my-build.yaml")
    assert build(root, "my-build.yaml").returncode == 0
    data = os.path.join(root, "d.jsonl")
    shutil.copyfile(data, data + ".bak")
    time.sleep(0.02)
    shutil.copyfile(data + ".bak", data)  # same bytes, a new modification time
    again = build(root, "my-build.yaml")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already built" in again.stderr + again.stdout
    with open(data, "a", encoding="utf-8") as f:
        f.write('{"prompt": "one more", "response": "line"}\n')
    changed = build(root, "my-build.yaml")
    assert changed.returncode == 1
    assert "mintdim build my-build.yaml --rebuild" in changed.stderr, changed.stderr
    assert "CONFIG" not in changed.stderr and "d.jsonl" in changed.stderr


# --- case 5: outcomes from MintDim's records, whatever the console says -----------------------------


@pytest.mark.parametrize("quiet", [["all"], ["rules", "progress", "host"]])
def test_5_a_profile_that_quiets_the_console_changes_nothing_mintdim_decides(tmp_path, quiet):
    root = project(tmp_path)
    os.makedirs(os.path.join(root, "quiet"))
    with open(os.path.join(root, "quiet", "config.yaml"), "w") as f:
        yaml.safe_dump({"quiet": quiet}, f)
    first = build(root, "c.yaml", "--profile", "quiet")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "already built" not in first.stdout
    again = build(root, "c.yaml", "--profile", "quiet")
    assert again.returncode == 0 and "already built" in again.stdout, again.stdout + again.stderr
    report = build(root, "c.yaml", "--profile", "quiet", "--report")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "already built (same config and inputs; report written)" in report.stdout, report.stdout
