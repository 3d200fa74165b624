"""Warm job processes for a local build: the stage modules imported and the tokenizers loaded once,
before Snakemake starts the first job, then every job forked from that process.

Why. Every stage job is a new Python process that imports MintDim and numpy (~0.1 s) and, in a
tokenize job, loads the tokenizer: 0.45-0.67 s for the ai21 j2 SentencePiece model in every job
(2 jobs at 107 MB), which `tokenizers`' raw encode pays once and outside its timer. Meanwhile
one core is idle: Snakemake's start (~0.9 s before the first job) runs on the other. This
process does that work on the idle core, once; a fork of it starts a job with it done.

How. `mintdim build` (and job.run()) hand Snakemake a preload spec (runner.run_build); the Snakemake
process starts this server (snakemake_main.py) in its own process group, so the group's signals
reach the server and every job forked from it as they reach ordinary jobs, and sets ENV for its
jobs. Each stage script asks first (scripts/_door.py -> delegate): it sends its command line,
working directory, environment and standard streams (SCM_RIGHTS) over a Unix socket; the server
forks a child that takes them over and runs the script as `python SCRIPT ARGS` would. The script's
process stays as the job Snakemake sees: it forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the
child and ends as the child ended (its exit code, or the same signal); when it is killed
(SIGKILL), the server kills the child at once. With no server (a direct `snakemake` run, a
cluster executor, a dry run, MINTDIM_FORKSERVER=0, not Linux), or when it cannot take the job, the
script runs in its own process as before: same code, same bytes.

The socket is in Linux's abstract namespace (no file: nothing is left behind when a run is killed),
only a process of the same user is served (its peer uid is checked), and only MintDim's own stage
scripts are run.
"""

from __future__ import annotations

import os
import signal
import sys

from ..faults import JOB_GROUP_ENV  # the job's own process group, for the tests' kill points

ENV = "MINTDIM_FORKSERVER"  # the socket of this build's server, for its jobs; "0" in the runner's env: no server

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_MAX_REQUEST = 1 << 24


def _address(path: str) -> str:
    """ENV's value: "@name" is a socket in Linux's abstract namespace, else a socket file."""
    return "\0" + path[1:] if path.startswith("@") else path


# --- the job's side (scripts/_door.py) ---------------------------------------------------------------

def delegate() -> None:
    """Run this stage script in a warm child of the build's server and end as it ends; return at once
    (the script runs here) when there is no server or it cannot take the job."""
    path = os.environ.get(ENV)
    if not path or path == "0" or not sys.argv or not sys.argv[0]:
        return
    import json
    import socket
    import struct

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(_address(path))
    except OSError:
        return
    request = json.dumps({"argv": [os.path.abspath(sys.argv[0]), *sys.argv[1:]], "cwd": os.getcwd(),
                          "env": dict(os.environ), "group": os.getpgid(0)}).encode()
    child, pending = [0], []

    def forward(sig, _frame):
        if not child[0]:
            pending.append(sig)
            return
        try:
            os.kill(child[0], sig)
        except OSError:
            pass

    before = {sig: signal.signal(sig, forward) for sig in _FORWARDED}
    reply = sock.makefile("rb")
    try:
        socket.send_fds(sock, [struct.pack("!I", len(request)) + request], [0, 1, 2])
        line = reply.readline()
    except OSError:
        line = b""
    if not line.startswith(b"pid "):  # not taken (busy with threads, not a MintDim script, shutting down)
        sock.close()
        for sig, handler in before.items():
            signal.signal(sig, handler)
        for sig in pending:
            os.kill(os.getpid(), sig)
        return
    child[0] = int(line.split()[1])
    for sig in pending:
        forward(sig, None)
    try:
        line = reply.readline()  # b"exit CODE": as os.waitstatus_to_exitcode, negative for a signal
    except OSError:
        line = b""
    if not line.startswith(b"exit "):
        sys.stderr.write(f"[unit-build] this job's process ({child[0]}) was lost: the build's fork server "
                         f"ended ({path})\n")
        sys.stderr.flush()
        os._exit(1)
    code = int(line.split()[1])
    if code < 0:  # end as the child ended: killed by the same signal
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


# --- the Snakemake side (snakemake_main.py) ----------------------------------------------------------

def start(spec: str) -> tuple[object, str] | None:
    """Start the server for this Snakemake process's jobs (spec: runner.forkserver_spec, JSON), in this
    process group; return (the process, its socket), or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import secrets
    import subprocess

    sock = f"@mintdim-jobs-{os.getpid()}-{secrets.token_hex(8)}"  # abstract: gone with the server
    proc = subprocess.Popen([sys.executable, "-m", "mintdim.run.forkserver", sock, str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True)
    proc.stdin.write(spec.encode())
    proc.stdin.close()
    return proc, sock


def stop(proc) -> None:
    """Snakemake is done: the server ends once the jobs still running have (none, after a normal run)."""
    import subprocess

    try:
        proc.terminate()
        proc.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


# --- the server ---------------------------------------------------------------------------------------

class _Log:
    """The server's log (what it loaded, and each job it forked), written once, when it ends: nothing
    of it competes with the build for the work directory's disk while the build runs (a nearly full
    one must fail in a job, with its failure markers)."""

    def __init__(self, path: str | None):
        import time

        self.path, self.lines, self.clock, self.t0 = path, [], time.monotonic, time.monotonic()

    def __call__(self, message: str) -> None:
        self.lines.append(f"{self.clock() - self.t0:8.3f}s {message}")  # seconds since the server started

    def write(self) -> None:
        if self.path and self.lines:
            try:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write("".join(line + "\n" for line in self.lines))
            except OSError:
                pass
            self.lines = []


def _warm(spec: dict, log) -> None:
    """Import what the stage scripts import, and load the build's tokenizers (kinds.preload)."""
    import importlib
    import time

    t0 = time.monotonic()
    for name in ("mintdim.run.job", "mintdim.run.fastexit", "mintdim.stages.validate", "mintdim.stages.tokenize",
                 "mintdim.stages.plan", "mintdim.stages.write", "mintdim.stages.aggregate",
                 "mintdim.stages.finalize", "argparse"):
        importlib.import_module(name)
    log(f"imported the stage modules in {time.monotonic() - t0:.2f} s")
    from ..tokenizers.kinds import preload

    for kind, path, options in spec.get("tokenizers", []):
        t0 = time.monotonic()
        try:
            if preload(kind, path, **options):
                log(f"loaded {kind} {path} in {time.monotonic() - t0:.2f} s")
            else:
                log(f"not loaded: {kind} {path}: its jobs load it")
        except Exception as exc:  # the job loads it itself, and reports what is wrong with it
            log(f"not loaded: {kind} {path}: {type(exc).__name__}: {exc}")


def _read_request(conn) -> tuple[dict, list[int]]:
    import json
    import socket
    import struct

    conn.settimeout(10)
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3 or len(data) < 4:
        for fd in fds:
            os.close(fd)
        raise ValueError("no request")
    size = struct.unpack("!I", data[:4])[0]
    if size > _MAX_REQUEST:
        raise ValueError("request too large")
    data = data[4:]
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise ValueError("short request")
        data += more
    conn.settimeout(None)
    return json.loads(data), fds


def _single_threaded() -> bool:
    import threading

    try:
        return threading.active_count() == 1 and len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _child(request: dict, fds: list[int], close: list) -> None:
    """In the forked child: become the job `python SCRIPT ARGS` would have been, run it, end."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        from .snakemake_main import parent_death_signal

        parent_death_signal(signal.SIGKILL)
        # A group of its own: a signal to the jobs' group (Ctrl-C, Snakemake stopped) reaches the job's
        # process, which forwards it, so the fork gets it once, as a job in its own process did
        os.setpgid(0, 0)
        for item in close:
            item.close() if hasattr(item, "close") else os.close(item)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop(ENV, None)
        os.environ[JOB_GROUP_ENV] = str(request["group"])
        argv = request["argv"]
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(argv[0])
        import runpy

        try:
            runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
        import atexit

        atexit._run_exitfuncs()  # what the interpreter's exit runs (fastexit's handler ends the process there)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def serve(sock_path: str, parent: int, spec: dict) -> None:
    log = _Log(spec.get("log"))
    try:
        _serve(sock_path, parent, spec, log)
    finally:
        log.write()


def _serve(sock_path: str, parent: int, spec: dict, log: _Log) -> None:
    import gc
    import selectors
    import socket

    scripts = os.path.realpath(spec["scripts"])
    from .snakemake_main import parent_death_signal

    parent_death_signal(signal.SIGTERM)  # Snakemake's process gone: stop (below: after the running jobs)
    if os.getppid() != parent:
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_address(sock_path))  # first: a job that starts while this process warms up waits for it
    listener.listen(64)
    stopping = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGHUP, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: None)  # a job's Ctrl-C is the job's
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # no BLAS threads in a process that forks (MintDim uses no BLAS)
    _warm(spec, log)
    gc.collect()
    gc.freeze()  # the warm objects stay out of the children's collections: their pages stay shared
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "listen")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    running: dict[int, object] = {}  # child pid -> its job's connection (None once the job is gone)
    by_conn: dict[object, int] = {}
    uid = os.getuid()

    def reap():
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = running.pop(pid, None)
            code = os.waitstatus_to_exitcode(status)
            log(f"job {pid} ended: {code}")
            if conn is not None:
                by_conn.pop(conn, None)
                sel.unregister(conn)
                try:
                    conn.sendall(b"exit %d\n" % code)
                except OSError:
                    pass
                conn.close()

    def take(conn):
        import struct

        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != uid:
                raise ValueError("another user")
            request, fds = _read_request(conn)
        except (OSError, ValueError) as exc:
            log(f"request refused: {exc}")
            conn.close()
            return
        script = os.path.realpath(request["argv"][0])
        if os.path.dirname(script) != scripts or stopping or not _single_threaded():
            for fd in fds:
                os.close(fd)
            conn.close()  # the job runs in its own process
            return
        pid = os.fork()
        if pid == 0:
            _child(request, fds, [listener, wake_r, wake_w, *by_conn, conn])
        for fd in fds:
            os.close(fd)
        log(f"job {pid}: {os.path.basename(script)} {' '.join(request['argv'][1:])}")
        running[pid] = conn
        by_conn[conn] = pid
        sel.register(conn, selectors.EVENT_READ, "job")
        try:
            conn.sendall(b"pid %d\n" % pid)
        except OSError:
            pass

    while not (stopping and not running):
        if os.getppid() != parent:
            stopping.append(True)
        for key, _ in sel.select(timeout=1.0 if not stopping else 0.2):
            if key.data == "listen":
                try:
                    conn, _addr = listener.accept()
                except OSError:
                    continue
                take(conn)
            elif key.data == "wake":
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            else:  # a job's process: it only ever closes its end, when it is gone (kill -9)
                conn = key.fileobj
                try:
                    gone = not conn.recv(64)
                except OSError:
                    gone = True
                if gone:
                    pid = by_conn.pop(conn)
                    sel.unregister(conn)
                    conn.close()
                    running[pid] = None
                    try:
                        os.kill(pid, signal.SIGKILL)  # as the job's own process was
                    except OSError:
                        pass
        reap()
        if stopping:
            try:
                sel.unregister(listener)
                listener.close()
            except (KeyError, ValueError, OSError):
                pass


def main(argv: list[str]) -> None:
    import json

    sock_path, parent = argv[1], int(argv[2])
    spec = json.loads(sys.stdin.read() or "{}")
    try:
        serve(sock_path, parent, spec)
    finally:
        if not sock_path.startswith("@"):  # a socket file (tests)
            try:
                os.unlink(sock_path)
            except OSError:
                pass
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
