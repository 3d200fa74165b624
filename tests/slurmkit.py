"""A one-node Slurm started by the tests themselves: munged, slurmctld and slurmd on the test machine, with a
munge key, a slurm.conf and state directories in a temporary directory, accounting disabled (as many
small clusters and workstations run it), every port on the loopback interface. docs/clusters.md shows the
same recipe for a user.

`slurm_cluster` (session scope) starts it once and stops it afterwards. The Slurm commands of the tests
(and of every build they start) find it through SLURM_CONF; the `srun` inside each job does not (the
executor plugin's job step drops every SLURM_ variable but the job's identity), so it reads Slurm's
fallback /run/slurm/conf/slurm.conf, which is where a configless slurmd keeps its configuration: a
link there to the temporary directory, removed afterwards. Without Slurm (the packages slurm-wlm and
munge: `.ci/run` installs them), without root (slurmd runs jobs as their users), or on a machine with a
Slurm of its own (/etc/slurm/slurm.conf, which `srun` would read first) the tests skip, saying why.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest

PARTITION = "debug"
# CPUs the node declares (SlurmdParameters=config_overrides: whatever the machine has), so that the
# builds of the tests, which start together and mostly wait, run side by side
CPUS = 8
SYSTEM_CONF = "/etc/slurm/slurm.conf"  # what Slurm's commands read without SLURM_CONF ...
FALLBACK_CONF = "/run/slurm/conf"  # ... and, where there is none, the configless cache here
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "sbatch", "squeue", "scancel", "scontrol")

SLURM_CONF = """\
ClusterName=mintdim-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge={min_job_age}
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Cluster:
    root: str  # slurm.conf, state, logs
    conf: str  # SLURM_CONF
    partition: str
    cpus: int

    def env(self) -> dict:
        return {"SLURM_CONF": self.conf}

    def jobs(self) -> list[str]:
        """Every job Slurm still holds as pending or running (what `squeue` shows)."""
        proc = subprocess.run(
            ["squeue", "--noheader", "--format=%i %j %T"],
            capture_output=True,
            text=True,
            env=dict(os.environ, **self.env()),
            timeout=30,
        )
        return [line for line in proc.stdout.splitlines() if line.strip()]

    def log(self, name: str = "slurmctld") -> str:
        try:
            with open(os.path.join(self.root, f"{name}.log"), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def tool(name: str) -> str | None:
    """A Slurm or munge program (the daemons live in /usr/sbin, which a user's PATH may not hold)."""
    return shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin")


def missing() -> str | None:
    """Why a Slurm cannot be started here, or None."""
    absent = [name for name in DAEMONS + CLIENTS if tool(name) is None]
    if absent:
        return (
            f"Slurm is not installed ({', '.join(absent)} not found); .ci/run installs the packages "
            "slurm-wlm and munge with apt-get"
        )
    if os.geteuid() != 0:
        return "a test Slurm needs root (slurmd starts each job as its user)"
    for path in (SYSTEM_CONF, FALLBACK_CONF):
        if os.path.lexists(path):
            return f"this machine has a Slurm configuration of its own ({path}), which the jobs would read"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    with open("/proc/meminfo") as f:
        total_kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
    return total_kb * 3 // 4 // 1024


def write_conf(root: str, cpus: int = CPUS, min_job_age: int = 300) -> str:
    host = socket.gethostname().split(".")[0]
    for sub in ("munge", "state", "spool"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    conf = os.path.join(root, "slurm.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(
            SLURM_CONF.format(
                host=host,
                root=root,
                ctld_port=free_port(),
                slurmd_port=free_port(),
                cpus=cpus,
                memory_mb=_memory_mb(),
                partition=PARTITION,
                min_job_age=min_job_age,
            )
        )
    return conf


def start(root: str) -> Cluster:
    """munged with a key of its own, then slurmctld and slurmd; returns once the node is idle (else stops
    what it started and raises, with the daemons' logs)."""
    root = os.path.abspath(root)
    cluster = Cluster(root=root, conf=write_conf(root), partition=PARTITION, cpus=CPUS)
    munge = os.path.join(root, "munge")
    os.chmod(munge, 0o755)  # munged wants its socket's directory searchable by all
    key = os.path.join(munge, "munge.key")
    with open(key, "wb") as f:
        f.write(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    env = dict(os.environ, SLURM_CONF=cluster.conf)
    os.makedirs(os.path.dirname(FALLBACK_CONF), exist_ok=True)
    os.symlink(root, FALLBACK_CONF)
    try:
        subprocess.run(
            [
                tool("munged"),
                "--force",
                f"--socket={munge}/munge.socket",
                f"--key-file={key}",
                f"--pid-file={munge}/munged.pid",
                f"--log-file={munge}/munged.log",
                f"--seed-file={munge}/munged.seed",
            ],
            check=True,
            env=env,
            timeout=30,
        )
        subprocess.run([tool("slurmctld"), "-f", cluster.conf], check=True, env=env, timeout=30)
        subprocess.run([tool("slurmd"), "-f", cluster.conf], check=True, env=env, timeout=30)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            proc = subprocess.run(
                ["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True, env=env
            )
            if proc.stdout.strip() == "idle":
                return cluster
            time.sleep(0.2)
        raise RuntimeError(f"the test Slurm did not come up: sinfo says {proc.stdout!r} {proc.stderr!r}")
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        stop(cluster)
        logs = f"{cluster.log('slurmctld')[-2000:]}\n{cluster.log('slurmd')[-2000:]}"
        raise RuntimeError(f"{exc}\n{logs}") from exc


def stop(cluster: Cluster) -> None:
    """Cancel what is left, then stop slurmd, slurmctld and munged together (each by the pid its pid file
    holds; SIGKILL to one still running 10 s later)."""
    env = dict(os.environ, SLURM_CONF=cluster.conf)
    subprocess.run(["scancel", "--full", "--user", "root"], capture_output=True, env=env, timeout=30)
    pids = [
        pid
        for pid in map(_pid, ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"), [cluster.root] * 3)
        if pid and _signal(pid, signal.SIGTERM)
    ]
    t0 = time.monotonic()
    while any(_signal(pid, 0) for pid in pids) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    if os.path.realpath(FALLBACK_CONF) == cluster.root:
        os.unlink(FALLBACK_CONF)


def _pid(name: str, root: str) -> int | None:
    try:
        with open(os.path.join(root, name)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _signal(pid: int, sig: int) -> bool:
    """Send sig; False when no such process is left."""
    try:
        os.kill(pid, sig)
    except OSError:
        return False
    return True


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory, request):
    why = missing()
    if why:
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled():  # on the console, whatever the capture and verbosity
            print(f"\nSlurm tests skipped: {why}", flush=True)
        pytest.skip(why)
    # a short path: the munge socket's path must fit a Unix socket address (108 bytes)
    cluster = start(str(tmp_path_factory.mktemp("slurm")))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = cluster.conf
    try:
        yield cluster
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        stop(cluster)
