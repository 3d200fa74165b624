"""The cluster profile on a running Slurm: a one-node Slurm started by the tests (tests/slurmkit.py,
accounting disabled), and a copy of profiles/slurm whose only edits are its partition and account.

Builds through `mintdim build --profile` and `snakemake --profile` give the bytes of local builds; Ctrl-C
of the launcher cancels the submitted jobs and the rerun gives the same bytes; a data error inside a
Slurm job reaches the user as a local build's error; a cluster that cannot be asked is a ClusterError
before anything is submitted. Most of the time of a Slurm build is waiting for status checks, so the
builds start together (fixture `runs`) and each test waits for its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from buildkit import project
from conftest import REPO, SNAKEFILE, tree_bytes
from slurmkit import free_port, slurm_cluster  # noqa: F401 (the fixture)

BUILD_TIMEOUT_S = 150  # a hang (a status command that never answers) fails here instead of waiting for ever
SHIPPED = {
    "plain": ("config/config.yaml", "artifacts/gsm8k_units"),
    "packed": ("config/packed.yaml", "artifacts/gsm8k_packed"),
    "chat": ("config/chat.yaml", "artifacts/gsm8k_chat_units"),
}


def profile_copy(root: str, partition: str, account: str = "mintdim", **extra) -> str:
    """profiles/slurm copied as docs/clusters.md says, its partition and account filled in."""
    dest = os.path.join(root, "myslurm")
    shutil.copytree(os.path.join(REPO, "profiles", "slurm"), dest)
    path = os.path.join(dest, "config.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.count('"CHANGE_ME"') == 2
    text = text.replace('slurm_partition: "CHANGE_ME"', f'slurm_partition: "{partition}"')
    text = text.replace('slurm_account: "CHANGE_ME"', f'slurm_account: "{account}"')
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "".join(f"{k}: {v}\n" for k, v in extra.items()))
    return dest


def shipped_project(root: str) -> str:
    os.makedirs(root, exist_ok=True)
    for sub in ("data", "config"):
        shutil.copytree(os.path.join(REPO, sub), os.path.join(root, sub))
    return root


class Run:
    """A command started in the background in `root` (its own session, as a terminal starts it)."""

    def __init__(self, root: str, argv: list[str], name: str):
        self.root = root
        self.out = open(os.path.join(root, f"{name}.out"), "w+")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            cwd=root,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.seconds = None

    def wait(self, timeout: float = BUILD_TIMEOUT_S) -> int | None:
        """The exit code; None (and the build stopped) when it did not end within the timeout."""
        try:
            rc = self.proc.wait(timeout=max(1.0, timeout - (time.monotonic() - self.t0)))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait()
            return None
        self.seconds = self.seconds or time.monotonic() - self.t0
        return rc

    def text(self) -> str:
        self.out.seek(0)
        return self.out.read()


def mintdim_build(root: str, config: str, *args: str, name: str = "build") -> Run:
    return Run(root, [sys.executable, "-m", "mintdim", "build", config, *args], name)


def snakemake_run(root: str, config: str, profile: str, *args: str, name: str = "snakemake") -> Run:
    return Run(
        root,
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            SNAKEFILE,
            "--directory",
            root,
            "--configfile",
            config,
            "--profile",
            profile,
            "--cores",
            "2",
            *args,
        ],
        name,
    )


def jobs_in(root: str) -> list[str]:
    """The Slurm jobs (pending or running) submitted from root."""
    proc = subprocess.run(["squeue", "--noheader", "--format=%i|%Z|%T"], capture_output=True, text=True)
    return [line for line in proc.stdout.splitlines() if line.split("|")[1:2] == [root]]


def broken_project(root: str) -> str:
    """40 GSM8K rows whose line 26 is cut short: a SourceParseError in the tokenize job."""
    project(root)
    data = [line for line in open(os.path.join(root, "d.jsonl"), encoding="utf-8").read().splitlines()]
    data[25] = '{"prompt": "cut'
    with open(os.path.join(root, "d.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(data) + "\n")
    return root


@pytest.fixture(scope="module")
def runs(slurm_cluster, tmp_path_factory):  # noqa: F811
    """Every Slurm build of this module and its local twin, started together."""
    base = str(tmp_path_factory.mktemp("slurm-builds"))
    part = slurm_cluster.partition
    started = {}
    for key, (config, _) in SHIPPED.items():
        local = shipped_project(os.path.join(base, f"local-{key}"))
        started[f"local-{key}"] = mintdim_build(local, config, "--cores", "2")
    for key in ("plain", "chat"):
        root = shipped_project(os.path.join(base, f"slurm-{key}"))
        profile_copy(root, part)
        started[f"slurm-{key}"] = mintdim_build(root, SHIPPED[key][0], "--profile", "./myslurm")
    root = shipped_project(os.path.join(base, "snakemake-packed"))
    started["snakemake-packed"] = snakemake_run(root, SHIPPED["packed"][0], profile_copy(root, part))
    # every write job a Slurm job of its own (the profile runs it in its output's group job, whose CPUs
    # are those of plan and aggregate): what the write rule asks a cluster for, on its own
    root = shipped_project(os.path.join(base, "snakemake-plain"))
    started["snakemake-plain"] = snakemake_run(
        root, SHIPPED["plain"][0], profile_copy(root, part), "--groups", "write=write_alone"
    )
    local = broken_project(os.path.join(base, "local-broken"))
    started["local-broken"] = mintdim_build(local, "c.yaml", "--cores", "2")
    root = broken_project(os.path.join(base, "slurm-broken"))
    profile_copy(root, part)
    started["slurm-broken"] = mintdim_build(root, "c.yaml", "--profile", "./myslurm")
    yield started
    for run in started.values():
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGINT)
            run.proc.wait()


def built(runs, key: str, out: str) -> dict:
    run = runs[key]
    rc = run.wait()
    assert rc == 0, f"{key}: exit {rc} after {time.monotonic() - run.t0:.0f} s\n{run.text()[-4000:]}"
    tree = tree_bytes(os.path.join(run.root, out))
    assert tree
    return tree


def test_ctrl_c_cancels_the_slurm_jobs_and_the_rerun_gives_the_same_bytes(runs):
    run = runs["slurm-chat"]
    t0 = time.monotonic()
    while not jobs_in(run.root) and run.proc.poll() is None and time.monotonic() - t0 < 90:
        time.sleep(0.2)
    assert jobs_in(run.root), run.text()[-3000:]
    os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the launcher's process group
    stopped = time.monotonic()
    while jobs_in(run.root) and time.monotonic() - stopped < 10:
        time.sleep(0.2)
    assert jobs_in(run.root) == [], run.text()[-3000:]
    assert run.proc.wait(timeout=20) != 0
    assert not os.path.exists(os.path.join(run.root, SHIPPED["chat"][1], "stats.json"))
    runs["slurm-chat"] = mintdim_build(run.root, SHIPPED["chat"][0], "--profile", "./myslurm", name="rerun")
    tree = built(runs, "slurm-chat", SHIPPED["chat"][1])
    assert tree == built(runs, "local-chat", SHIPPED["chat"][1])
    assert any(os.path.basename(name).startswith("mask_") for name in tree)  # the loss masks too


def test_shipped_example_builds_on_slurm_without_accounting(runs):
    """The hang: sacct exists but answers "Slurm accounting storage is disabled"; the plugin waited on it
    for ever. The build asks the cluster first, takes squeue and says so in one line."""
    tree = built(runs, "slurm-plain", SHIPPED["plain"][1])
    text = runs["slurm-plain"].text()
    lines = [line for line in text.splitlines() if "Slurm job status" in line]
    assert lines == [
        "[unit-build] Slurm job status: squeue (sacct: Slurm accounting storage is disabled; "
        "finished jobs stay in squeue for MinJobAge = 300 s, longer than the longest wait "
        "between two status checks, 180 s)"
    ]
    assert tree == built(runs, "local-plain", SHIPPED["plain"][1])


def test_snakemake_profile_submits_write_jobs_slurm_accepts(runs):
    """The refusal: the write rule asked a remote executor for 0 threads, and sbatch refused the job
    (`sbatch: error: Invalid numeric value "0" for --cpus-per-task`). A direct `snakemake --profile`
    run, which asks the cluster itself, with each write job submitted on its own."""
    tree = built(runs, "snakemake-plain", SHIPPED["plain"][1])
    text = runs["snakemake-plain"].text()
    assert "[unit-build] Slurm job status: squeue" in text
    assert "group_write_alone" in text and "cpus-per-task" not in text  # submitted, and accepted
    assert tree == built(runs, "local-plain", SHIPPED["plain"][1])


def test_snakemake_profile_builds_packed_rows_on_slurm(runs):
    tree = built(runs, "snakemake-packed", SHIPPED["packed"][1])
    assert "[unit-build] Slurm job status: squeue" in runs["snakemake-packed"].text()
    assert tree == built(runs, "local-packed", SHIPPED["packed"][1])


def test_a_data_error_in_a_slurm_job_reads_as_in_a_local_build(runs):
    slurm, local = runs["slurm-broken"], runs["local-broken"]
    assert slurm.wait() == 1 and local.wait() == 1
    error = local.text()[local.text().index("SourceParseError") :].strip()
    assert error.startswith(
        "SourceParseError: JSONL line could not be parsed.\n\nFile: d.jsonl\n\nLine: 26\n\n"
        "Reason: invalid JSON syntax\n\nd.jsonl holds 1 bad record"
    )
    assert slurm.text().rstrip().endswith(error)
    # the same failure markers where the output would be, and no finished output
    markers = [sorted(tree_bytes(os.path.join(run.root, "out"))) for run in (slurm, local)]
    assert markers[0] == markers[1] and markers[0]
    assert not os.path.exists(os.path.join(slurm.root, "out", "stats.json"))


# --- a cluster that cannot be asked: an error before anything is submitted --------------------------------


def refused(root: str, *env_and_profile, lang: str = "both", **profile_extra) -> str:
    project(root, lang=lang)
    profile_copy(root, *env_and_profile, **profile_extra)
    proc = subprocess.run(
        [sys.executable, "-m", "mintdim", "build", "c.yaml", "--profile", "./myslurm"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert jobs_in(root) == [] and not os.path.exists(os.path.join(root, "out"))
    assert not os.path.exists(os.path.join(root, ".snakemake")), "Snakemake was started"
    return proc.stderr


def test_status_command_that_cannot_answer_is_a_cluster_error(slurm_cluster, tmp_path):  # noqa: F811
    err = refused(str(tmp_path), slurm_cluster.partition, **{"slurm-status-command": "sacct"})
    assert (
        "ClusterError: Slurm cannot tell this build when its jobs end: the job-status command fails, "
        "and the build would wait for ever. No job was submitted.\n\nCommand: sacct -X"
    ) in err
    assert (
        "Answer: Slurm accounting storage is disabled\n\nSet slurm-status-command: squeue in the profile."
    ) in err
    assert (
        "ClusterError: Slurm không thể cho build biết khi nào các job kết thúc" in err
        and "Hãy đặt slurm-status-command: squeue trong profile." in err
    )


def test_unknown_partition_is_a_cluster_error(slurm_cluster, tmp_path):  # noqa: F811
    err = refused(str(tmp_path), "gpu-long", lang="en")
    assert (
        "ClusterError: The profile asks for the partition gpu-long, which this cluster does not have; "
        "no job was submitted.\n\nCommand: sinfo --noheader --format=%R\nAnswer: debug\n\n"
        "Set slurm_partition (the profile's default-resources, or set-resources of a rule) "
        "to one of them."
    ) in err


def test_slurm_that_does_not_answer_is_a_cluster_error(slurm_cluster, tmp_path, monkeypatch):  # noqa: F811
    """A slurm.conf whose controller nobody runs (MessageTimeout=1: sinfo gives up at once)."""
    with open(slurm_cluster.conf, encoding="utf-8") as f:
        conf = re.sub(r"(?m)^SlurmctldPort=.*$", f"SlurmctldPort={free_port()}", f.read())
    (tmp_path / "slurm.conf").write_text(conf + "MessageTimeout=1\n")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    err = refused(str(tmp_path), slurm_cluster.partition, lang="en")
    assert (
        "ClusterError: Slurm does not answer on this host; no job was submitted.\n\n"
        "Command: sinfo --noheader --format=%R\n"
        "Answer: slurm_load_partitions: Unable to contact slurm controller (connect failure)"
    ) in err
