"""The fork server of a local build (mintdim/run/forkserver.py): jobs run in warm forks of it, and end,
fail and die as jobs in their own processes do; the build's bytes do not change."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import GSM8K, REPO, basic_config, build_in

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux only")

JOB = f"""import json, os, sys, time
sys.path.insert(0, {REPO!r})
from mintdim.run import forkserver
forkserver.delegate()
mode = sys.argv[1]
print(json.dumps({{"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "x": os.environ.get("MINTDIM_X"),
                  "argv": sys.argv[1:], "server": os.environ.get(forkserver.ENV)}}), flush=True)
if mode == "exit":
    sys.exit(int(sys.argv[2]))
if mode == "sleep":
    time.sleep(60)
"""


@pytest.fixture
def server(tmp_path):
    """A server started as snakemake_main starts it, allowed to run the scripts in tmp_path/scripts."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "job.py").write_text(JOB)
    (tmp_path / "elsewhere.py").write_text(JOB)
    sock = str(tmp_path / "sock" / "socket")
    os.mkdir(os.path.dirname(sock), 0o700)
    log = tmp_path / "server.log"
    proc = subprocess.Popen([sys.executable, "-m", "mintdim.run.forkserver", sock, str(os.getpid())],
                            stdin=subprocess.PIPE, cwd=REPO)
    proc.stdin.write(json.dumps({"tokenizers": [], "scripts": str(scripts), "log": str(log)}).encode())
    proc.stdin.close()
    deadline = time.monotonic() + 20
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    yield {"sock": sock, "scripts": scripts, "tmp": tmp_path, "proc": proc, "log": log}
    from mintdim.run.forkserver import stop

    stop(proc)


def job(server, *args, script=None, wait=True):
    env = dict(os.environ, MINTDIM_FORKSERVER=server["sock"], MINTDIM_X="from the job")
    proc = subprocess.Popen([sys.executable, str(script or server["scripts"] / "job.py"), *args], env=env,
                            cwd=str(server["tmp"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=60)
    return proc.returncode, json.loads(out.splitlines()[0]), err


def test_a_job_runs_in_a_fork_of_the_server_as_it_would_in_its_own_process(server):
    code, seen, _ = job(server, "exit", "3")
    assert code == 3  # the job's exit code is the process's
    assert seen["ppid"] == server["proc"].pid  # forked from the server, not run by the job's process
    assert seen["cwd"] == str(server["tmp"]) and seen["x"] == "from the job"  # its directory and environment
    assert seen["argv"] == ["exit", "3"] and seen["server"] is None  # its command line; it does not delegate again
    code, seen, _ = job(server, "exit", "0")
    assert code == 0
    from mintdim.run.forkserver import stop

    stop(server["proc"])  # its log is written when it ends
    log = server["log"].read_text()
    assert "job.py exit 3" in log and "ended: 3" in log and "ended: 0" in log


def test_a_script_that_is_not_a_stage_script_or_has_no_server_runs_in_its_own_process(server):
    proc = job(server, "sleep", script=server["tmp"] / "elsewhere.py", wait=False)
    seen = json.loads(proc.stdout.readline())
    assert seen["pid"] == proc.pid  # not MintDim's: never run by the server
    proc.kill()
    proc.wait()
    env = dict(os.environ, MINTDIM_FORKSERVER=str(server["tmp"] / "no-such-socket"))
    out = subprocess.run([sys.executable, str(server["scripts"] / "job.py"), "exit", "0"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["ppid"] == os.getpid()


def _gone(pid, within=10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:  # reaped by the server soon; a zombie is gone already
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_job_reaches_its_fork_and_the_job_ends_as_it_did(server, sig):
    proc = job(server, "sleep", wait=False)
    child = json.loads(proc.stdout.readline())["pid"]
    assert child != proc.pid
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert _gone(child)
    if sig == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM  # killed by the same signal, as the fork was
    else:
        assert proc.returncode != 0  # the fork's KeyboardInterrupt: a failed job


def test_a_job_killed_with_sigkill_takes_its_fork_with_it(server):
    proc = job(server, "sleep", wait=False)
    child = json.loads(proc.stdout.readline())["pid"]
    proc.kill()
    proc.wait()
    assert _gone(child, within=5)


def test_the_server_ends_when_told_and_removes_its_socket(server):
    from mintdim.run.forkserver import stop

    stop(server["proc"])
    assert server["proc"].returncode == 0
    assert not os.path.exists(server["sock"])
    code, seen, _ = job(server, "exit", "0")  # a job after that runs in its own process
    assert code == 0 and seen["ppid"] == os.getpid()


def _sha(root):
    import hashlib

    out = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def test_a_build_through_the_fork_server_writes_the_same_bytes_and_loads_the_tokenizer_once(tmp_path, monkeypatch):
    cfg = basic_config([GSM8K], fields=[["question", "answer"]], templates=["{question}\n{answer}"], sizes=[[128, 256, 512]],
                       chunk_mb=0.2, work_dir="work")
    warm_dir, cold_dir = tmp_path / "warm", tmp_path / "cold"
    warm_dir.mkdir()
    cold_dir.mkdir()
    warm = build_in(warm_dir, dict(cfg), cores=2)
    log = glob.glob(str(warm_dir / "work" / "*" / "logs" / "forkserver.log"))
    assert log, "no fork server ran"
    text = open(log[0]).read()
    assert "loaded sentencepiece" in text  # the model, once, in the server
    tokenize_jobs = [line for line in text.splitlines() if "tokenize_chunk.py" in line]
    assert len(tokenize_jobs) >= 2  # chunk_mb 0.2: several tokenize jobs, each a fork of the server
    assert text.count("ended: 0") == len([line for line in text.splitlines() if ".py --" in line])
    monkeypatch.setenv("MINTDIM_FORKSERVER", "0")
    cold = build_in(cold_dir, dict(cfg), cores=2)
    assert not glob.glob(str(cold_dir / "work" / "*" / "logs" / "forkserver.log"))
    assert warm.stats == cold.stats
    assert _sha(warm_dir / "out") == _sha(cold_dir / "out")


def test_the_build_server_listens_in_the_abstract_namespace_and_leaves_nothing_behind(tmp_path):
    """As snakemake_main starts it: no socket file anywhere, and the name is gone once it ended."""
    from mintdim.run import forkserver

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "job.py").write_text(JOB)
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    proc, sock = forkserver.start(json.dumps({"tokenizers": [], "scripts": str(scripts), "log": None}))
    assert sock.startswith("@mintdim-jobs-")

    def listed():
        with open("/proc/net/unix") as f:
            return any(line.rstrip().endswith(sock) for line in f)

    deadline = time.monotonic() + 20
    while not listed() and time.monotonic() < deadline:
        time.sleep(0.02)
    code, seen, _ = job({"sock": sock, "scripts": scripts, "tmp": tmp_path}, "exit", "0")
    assert code == 0 and seen["ppid"] == proc.pid
    forkserver.stop(proc)
    assert proc.returncode == 0 and not listed()
    assert not [n for n in set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - before if "mintdim" in n]
