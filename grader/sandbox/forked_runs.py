"""Runs of one grading forked from a fork server in the submission's sandbox.

A grading starts 3 to 10 runs of a submission's code, and each paid `import torch` (and
dynamo) again: about 3.5 s of CPU per run on virtual GPUs, most of a grading's time. A
ForkServer starts grader/vgpu/fork_server.py once, in a sandbox like the runs' own (the
submission and the grader's runtime parts read-only, nothing else of the host; one writable
folder that holds the runs' scratch folders), where it imports torch and waits; each run is
then forked from it, moved into a cgroup of its own (its memory, process and time limits, as
a fresh sandbox's) before it runs anything, and supervised exactly like one
(confined_run.supervise: budget, output cap, scratch limit).

What a forked run shares with the other runs of the same grading, unlike a fresh sandbox:
the pid namespace, the private /tmp, the folder holding the scratch folders. That is the same
student's code only; a server is never shared between submissions. The server itself is not
dumpable (no run can read its memory or trace it) and every message that reports a run's exit
status is checked to come from the server's own pid. Should a run stop or kill the server, the
next runs start fresh, as without it. Only where the runs use virtual GPUs: CUDA does not
survive a fork after the driver was touched, so on real GPUs every run is a fresh interpreter.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .bwrap import runs_as_root, sandbox_available, setpriv_path
from .confined_run import (hand_over_folders, inside_environment, kill_group, with_shared_bytecode,
                           start_sandboxed, supervise)
from .limits import create_run_cgroup
from .policy import SandboxPolicy, SandboxResult
from .scratch import remove_tree

SWITCH_ENV = "PDL_FORK_SERVER"          # "0": every run a fresh interpreter; "require": a
                                        # run that cannot be forked fails (tests: no silent
                                        # fallback to the slow path)
SERVER_MODULE = "grader.vgpu.fork_server"
SERVER_SOCKET_ENV = "PDL_FORK_SERVER_FD"  # grader/vgpu/fork_server.py ENV_SOCKET_FD
# The server's imports take about 3.5 s of CPU; on a loaded machine much longer.
START_TIMEOUT_S = 120.0
# From the request to the child's "started": a fork, nothing more.
HANDSHAKE_TIMEOUT_S = 20.0
# After a run was killed (or its pipes closed), how long the server may take to report it.
REPORT_TIMEOUT_S = 30.0
# The runs of a grading go at most this many at once (grader/common/cpu_share.py runs_at_once):
# the folder of their scratch folders may hold this many scratch limits.
MAX_RUNS_AT_ONCE = 4
_UCRED = struct.Struct("3i")


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV) != "0" and hasattr(os, "fork")


def required() -> bool:
    return os.environ.get(SWITCH_ENV) == "require"


def _recv_with_sender(sock: socket.socket) -> tuple[bytes, int | None]:
    """One message and the pid (as this process sees it) of the process that sent it."""
    message, ancdata, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(_UCRED.size))
    pid = None
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and \
                len(data) >= _UCRED.size:
            pid = _UCRED.unpack(data[:_UCRED.size])[0]
    return message, pid


def _readable(sock: socket.socket | int, timeout_s: float) -> bool:
    return bool(select.select([sock], [], [], max(0.0, timeout_s))[0])


def _credentials_socketpair() -> tuple[socket.socket, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return ours, theirs


class ForkedRun:
    """A run forked by the server: poll/wait/returncode/stdout/stderr as subprocess.Popen has,
    for confined_run.supervise. Its exit status comes from the server (its parent)."""

    def __init__(self, control: socket.socket, pid: int, server_pid: int, stdout: int,
                 stderr: int, kill):
        self.control = control
        # Through the run's cgroup, never by pid: the pid may be another process's by then.
        self.kill = kill
        self.pid = pid
        self.server_pid = server_pid
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)
        self.returncode: int | None = None
        self.lost = False          # the server ended (or was stopped) before it reported
        self._ended_at: float | None = None

    def _read_report(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.returncode is None:
            if not _readable(self.control, deadline - time.monotonic()):
                return False
            message, sender = _recv_with_sender(self.control)
            if not message:
                self._give_up()
            elif sender == self.server_pid and message.startswith(b"exit "):
                try:
                    self.returncode = int(message[5:])
                except ValueError:
                    self._give_up()
        return True

    def _give_up(self) -> None:
        self.lost = True
        self.kill()
        self.returncode = -signal.SIGKILL

    def poll(self) -> int | None:
        if not self._read_report(0) and self._ended_unreported():
            self._give_up()
        return self.returncode

    def _ended_unreported(self) -> bool:
        """The run ended (a zombie, or gone) and the server, which should have reaped it at
        once, has not reported it for REPORT_TIMEOUT_S: a run stopped or killed it."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as handle:
                stat = handle.read()
            ended = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] in (b"Z", b"X")
        except OSError:
            ended = True
        if not ended:
            return False
        self._ended_at = self._ended_at or time.monotonic()
        return time.monotonic() - self._ended_at > REPORT_TIMEOUT_S

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_report(REPORT_TIMEOUT_S if timeout is None else timeout):
            if timeout is not None and not self._ended_unreported():
                raise subprocess.TimeoutExpired(f"forked run {self.pid}", timeout)
            self._give_up()
        return self.returncode


SHARED_ENV = "PDL_FORK_SERVER_SHARED"    # a server handed to a child process: share()


class ForkServer:
    """One grading's fork server: started at its first run (or by start()), closed with the
    grading. `pdl-grade grade` starts one per view of the submission (the folders its runs see:
    grader/grading/views.py, one per assignment where none links another) and hands it to the
    checks process of each assignment of that view (share(), inherited()), so torch is imported
    once per view."""

    def __init__(self, parent: Path | None = None, *, _shared: dict | None = None):
        self._lock = threading.RLock()
        self.why_unusable = ""
        self._proc = self._cgroup = self._sock = None
        self._log = None
        self.owner = _shared is None
        # A child's end of the owner's pipe, when the server was shared before it was ready.
        self._ready_fd: int | None = None
        if _shared is None:
            self.root = Path(tempfile.mkdtemp(prefix="forked-runs-", dir=parent))
            self._state = "new"            # new, starting, ready, unusable, closed
            self._server_pid: int | None = None
            self._log = tempfile.TemporaryFile()
        else:
            self.root = Path(_shared["root"])
            self._sock = socket.socket(fileno=int(_shared["fd"]))
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self._server_pid = _shared["pid"] and int(_shared["pid"])
            # Shared before the server was ready: the owner says on that pipe when it is.
            self._ready_fd = _shared.get("ready_fd")
            self._state = "ready" if self._ready_fd is None else "announced"
        # The owner's pipe, read end, that tells children it was shared with early (share()).
        self._ready_pipe: int | None = None

    def start(self, policy: SandboxPolicy) -> None:
        """Start the server now, in the sandbox `policy` describes (its env the server's),
        without waiting for its imports: the first run (or share()) waits for them. Call it
        from a thread that lives as long as the server: bwrap's --die-with-parent ends the
        sandbox when the *thread* that started it ends (PR_SET_PDEATHSIG)."""
        with self._lock:
            if self._state == "new":
                self._spawn(policy)

    def share(self) -> tuple[dict[str, str], tuple[int, ...]]:
        """(environment, descriptors) that let a child process fork runs from this server;
        nothing where it is not running. The child gets no right to stop it."""
        with self._lock:
            if self._state == "announced":
                self._read_announcement()
            if self._state == "starting":
                # The child starts now, while the server still imports torch (a second or so
                # of the child's own start saved); it waits for this pipe at its first run.
                ready_fd = self._announce_when_ready()
                shared = {"fd": self._sock.fileno(), "pid": None, "root": str(self.root),
                          "ready_fd": ready_fd}
                return {SHARED_ENV: json.dumps(shared)}, (self._sock.fileno(), ready_fd)
            if self._state != "ready":
                if required():
                    raise RuntimeError(f"{SWITCH_ENV}=require, and the fork server is not "
                                       f"running: {self.why_unusable}")
                return {}, ()
            shared = {"fd": self._sock.fileno(), "pid": self._server_pid, "root": str(self.root)}
            return {SHARED_ENV: json.dumps(shared)}, (self._sock.fileno(),)

    def _announce_when_ready(self) -> int:
        """The read end of a pipe on which a thread of this (the owner's) process writes the
        server's pid once its "ready" came, with the kernel's credentials, or why it is
        unusable: the owner alone reads the server's socket before it is ready."""
        if self._ready_pipe is None:
            read, write = os.pipe()
            self._ready_pipe = read

            def announce():
                with self._lock:
                    if self._state == "starting":
                        self._await_ready()
                    answer = ({"pid": self._server_pid} if self._state == "ready"
                              else {"unusable": self.why_unusable or self._state})
                try:
                    os.write(write, json.dumps(answer).encode())
                finally:
                    os.close(write)

            threading.Thread(target=announce, name="fork-server-ready", daemon=True).start()
        return self._ready_pipe

    def _read_announcement(self) -> None:
        """In a child the server was shared with before it was ready: wait for the owner's
        word (EOF or silence: the owner is gone, so is the server)."""
        fd, self._ready_fd = self._ready_fd, None
        try:
            answer = os.read(fd, 4096) if _readable(fd, START_TIMEOUT_S) else b""
        finally:
            os.close(fd)
        try:
            told = json.loads(answer)
        except ValueError:
            told = {"unusable": "the grader that shared the fork server went away"}
        if isinstance(told.get("pid"), int):
            self._server_pid, self._state = told["pid"], "ready"
        else:
            self._state, self.why_unusable = "unusable", str(told.get("unusable"))

    @classmethod
    def inherited(cls, environ=os.environ) -> "ForkServer | None":
        """The server a parent process shared with this one (share()), if any."""
        text = environ.get(SHARED_ENV)
        if not text or not enabled():
            return None
        try:
            return cls(_shared=json.loads(text))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- the server -----------------------------------------------------------------------
    def _usable_here(self) -> str:
        if not enabled():
            return f"{SWITCH_ENV}=0"
        usable, why_not = sandbox_available()
        if not usable:
            return f"no sandbox ({why_not})"
        if runs_as_root() and not setpriv_path():
            return "no setpriv"
        return ""

    def _ensure_started(self, server_policy: Callable[[], SandboxPolicy]) -> bool:
        with self._lock:
            if self._state == "new":
                self._spawn(server_policy())
            if self._state == "starting":
                self._await_ready()
            if self._state == "announced":
                self._read_announcement()
            return self._state == "ready"

    def _spawn(self, policy: SandboxPolicy) -> None:
        why = self._usable_here()
        if why:
            self._state, self.why_unusable = "unusable", why
            return
        ours, theirs = _credentials_socketpair()
        env = dict(policy.env, **{SERVER_SOCKET_ENV: str(theirs.fileno())})
        server_policy = replace(policy, writable=[self.root], cwd=self.root, env=env,
                                pass_fds=(theirs.fileno(),), gpu=False,
                                timeout_s=float("inf"))
        try:
            started = start_sandboxed([sys.executable, "-m", SERVER_MODULE], server_policy,
                                      stdout=self._log, stderr=self._log)
        except Exception as error:   # noqa: BLE001 - any failure: runs start fresh
            ours.close()
            theirs.close()
            self._state, self.why_unusable = "unusable", f"cannot start: {error}"
            return
        theirs.close()
        self._proc, self._cgroup, self._sock = started.proc, started.cgroup, ours
        if runs_as_root():
            # The sandbox's user may write in its runs' scratch folders, not beside them.
            os.chown(self.root, os.getuid(), os.getgid())
            os.chmod(self.root, 0o755)
        self._state = "starting"

    def _await_ready(self) -> None:
        ours = self._sock
        message, sender = (_recv_with_sender(ours) if _readable(ours, START_TIMEOUT_S)
                           else (b"", None))
        if message != b"ready" or sender is None:
            self._stop_server()
            self._state = "unusable"
            self.why_unusable = (message.decode(errors="replace") or
                                 "no answer: " + self._log_tail())
            return
        self._server_pid = sender
        self._state = "ready"

    def _log_tail(self) -> str:
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace")

    def _stop_server(self) -> None:
        if self._sock is not None:
            self._sock.close()           # the server ends at its socket's end
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            kill_group(self._proc, self._cgroup)
            self._proc.wait()
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None

    def close(self) -> None:
        with self._lock:
            self._state = "closed"
            for fd in (self._ready_fd, self._ready_pipe):
                if fd is not None:
                    os.close(fd)
            self._ready_fd = self._ready_pipe = None
            if not self.owner:          # a shared server: the owner stops it
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None
                return
            self._stop_server()
            self._log.close()
        remove_tree(self.root)

    def new_scratch(self, prefix: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))

    # -- one run --------------------------------------------------------------------------
    def run(self, argv: list[str], policy: SandboxPolicy,
            server_env: Callable[[], dict[str, str]]) -> SandboxResult | None:
        """Run argv forked from the server, under the policy's limits; None where it cannot
        be (the caller then runs it fresh): not `python ...`, its scratch not in this server's
        folder, or no server. `server_env()`: the server's environment, asked for only if
        this run starts it."""
        if len(argv) < 2 or argv[0] != sys.executable or len(policy.pass_fds) != 1 or \
                len(policy.writable) != 1 or Path(policy.writable[0]).parent != self.root:
            return None
        if not self._ensure_started(lambda: replace(policy, env=server_env())):
            return None
        cgroup, warnings = create_run_cgroup(policy.memory_bytes, policy.max_pids)
        if cgroup is None:
            return None
        scratch = Path(policy.writable[0]).resolve()
        if runs_as_root():
            warnings += hand_over_folders([scratch])
        ours, theirs = _credentials_socketpair()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        # The server's sandbox has the bytecode cache; a run's own interpreters (torchrun's
        # ranks) are told where it is, as a fresh run would be.
        env, _ = with_shared_bytecode(inside_environment(policy, scratch), policy)
        request = json.dumps({"argv": argv, "env": env,
                              "cwd": str(Path(policy.cwd or scratch).resolve())}).encode()
        try:
            with self._lock:
                if self._state != "ready":
                    return None
                try:
                    socket.send_fds(self._sock, [request], [theirs.fileno(), out_write,
                                                            err_write, policy.pass_fds[0]])
                except OSError as error:
                    self._lose(f"request refused: {error}")
                    return None
            for fd in (out_write, err_write):
                os.close(fd)
            out_write = err_write = None
            theirs.close()
            message, pid = (_recv_with_sender(ours) if _readable(ours, HANDSHAKE_TIMEOUT_S)
                            else (b"", None))
            if message != b"started" or pid is None:
                self._lose("no child started within "
                           f"{HANDSHAKE_TIMEOUT_S:g} s: {message[:200]!r}")
                return None
            started = time.monotonic()
            cgroup.admit(pid)
            ours.send(b"go")
            run = ForkedRun(ours, pid, self._server_pid, out_read, err_read, cgroup.kill_all)
            out_read = err_read = None
            result = supervise(run, policy, cgroup, cgroup.kill_all, started=started,
                               sandboxed=True, warnings=warnings, backend="bwrap",
                               extra_watch=(self.root, MAX_RUNS_AT_ONCE))
            if run.lost:
                result.warnings.append("the grader's fork server ended before it reported "
                                       "how this run ended: counted as killed")
            return result
        finally:
            for fd in (out_write, err_write, out_read, err_read):
                if fd is not None:
                    os.close(fd)
            cgroup.kill_all()
            cgroup.remove()
            ours.close()

    def _lose(self, why: str) -> None:
        """The server no longer answers (a run stopped or killed it): later runs start fresh."""
        with self._lock:
            if self._state == "ready":
                self._state, self.why_unusable = "unusable", why
                if self.owner:
                    self._stop_server()
