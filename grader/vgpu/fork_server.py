"""Inside one submission's sandbox: import torch once, then fork each of its runs.

    python -m grader.vgpu.fork_server       (its socket's descriptor in PDL_FORK_SERVER_FD)

Every run of a grading pays `import torch` and, at its first DDP model or optimizer step,
`import torch._dynamo`: about 3.5 s of CPU, more than most of the course's runs themselves.
This server, started once per grading in the submission's sandbox by
grader/sandbox/forked_runs.py, imports both (no node, no student code: it is trusted until it
forks) and then forks one child per run, which becomes `python ARGV...` exactly as a fresh
interpreter would run it: its environment, working folder, argv, `__main__`, the node
activated as the boot's sitecustomize would, and its end as the interpreter's (atexit handlers
run, open files flushed).

The protocol, on a SOCK_SEQPACKET unix socket (one message per request):
- server -> grader: b"ready" once the imports are done (or b"failed: WHY").
- grader -> server: a JSON request {"argv", "env", "cwd"} with four descriptors: the run's
  control socket, its stdout and stderr pipes and its seal key's pipe.
- child -> grader, on the control socket: b"started" (the kernel attaches the child's pid as
  the grader sees it), then it waits for b"go": the grader has moved it into the run's cgroup.
- server -> grader, on the control socket: b"exit N" (the wait status) when the child ends.
The child closes its copy of the control socket before the run's code starts, and the server
is not dumpable, so no run can read its memory or speak for it.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

ENV_SOCKET_FD = "PDL_FORK_SERVER_FD"
# The submission's own module names (the files beside its scripts), comma-separated.
ENV_SUBMISSION_MODULES = "PDL_FORK_SERVER_MODULES"
# What a run's first `import` would cost (grader/vgpu/ranks.py imports the same for its ranks):
# torch, as every run has it before the script starts...
BASELINE = ("torch",)
# ...and what a run imports later, lazily (DDP's constructor and the first optimizer step import
# dynamo): preloaded only where no module of the submission could stand in for one of theirs,
# and only for a grading whose assignments train: "0" in ENV_PRELOAD_TRAINING where none does
# (a rubric's `trains: false`: Practical 4's runs never import dynamo, 1.5 s of CPU each grading;
# a run that trains anyway imports it itself, later, as a fresh interpreter would).
LAZY = ("torch._dynamo", "torch.distributed", "torch.nn.parallel", "torch.optim",
        "torch.utils.data")
ENV_PRELOAD_TRAINING = "PDL_FORK_SERVER_TRAINING"
# ...and the grader's runtime, which every process of a run with a node imports as torch is
# imported (its activation, grader/vgpu/__init__.py): about 50 modules, 0.05 CPU-s a process
# from bytecode, twice that where a module's bytecode is stale (a fresh clone where
# PYTHONDONTWRITEBYTECODE is set: every file, in every rank of every run). Importing them
# changes nothing in torch, starts no thread and reads no setting: the node is still made in
# the run. Not the runners, which run as scripts.
RUNTIME_PACKAGE = "grader.vgpu"
RUNTIME_SCRIPTS = ("run_on_node", "fork_server")
MAX_REQUEST = 1 << 20
PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    """No other process of the user may trace this one or read its memory (/proc/PID/mem):
    a run could otherwise read the descriptors and keys handed to later runs."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def serve(sock: socket.socket) -> int:
    import importlib
    import threading
    try:
        for name in BASELINE:
            importlib.import_module(name)
        if not shadowed_later(os.environ.get(ENV_SUBMISSION_MODULES, "")):
            if os.environ.get(ENV_PRELOAD_TRAINING) != "0":
                for name in LAZY:
                    importlib.import_module(name)
            _import_runtime()
            _learn_writer_calls()
        from grader.vgpu.clean_exit import leave_torch_libraries_at_exit
        _not_dumpable()
        _freeze_what_is_shared()
        leave_torch_libraries_at_exit()
        # fork() copies only the calling thread: a library thread started by these imports
        # would be missing (holding its locks) in every run.
        if threading.active_count() != 1:
            raise RuntimeError(f"{threading.active_count()} threads after the imports")
    except Exception as error:          # the grader starts each run fresh instead
        sock.send(f"failed: {type(error).__name__}: {error}".encode()[:4000])
        return 1
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sock.send(b"ready")
    children: dict[int, socket.socket] = {}
    while True:
        _reap(children)
        ready, _, _ = select.select([sock, wake_read], [], [], 1.0)
        if wake_read in ready:
            os.read(wake_read, 4096)
        if sock not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 8)
        except OSError:
            message, fds = b"", []
        if not message:                  # the grader is gone: so are its runs
            for fd in fds:
                os.close(fd)
            for pid in children:
                _kill(pid)
            return 0
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        control = socket.socket(fileno=fds[0])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            for fd in (sock.fileno(), wake_read, wake_write,
                       *(c.fileno() for c in children.values())):
                os.close(fd)
            _become_run(json.loads(message), control, *fds[1:])    # never returns
        for fd in fds[1:]:
            os.close(fd)
        children[pid] = control


def _import_runtime() -> None:
    """The runtime's modules (RUNTIME_PACKAGE), imported once here for every run forked from
    this server; only where no module of the submission could stand in for one a fresh run
    imports later (the runtime's own imports, `secrets` or `hmac`, find the script's folder first
    on sys.path there), as for LAZY."""
    import importlib
    import pkgutil
    package = importlib.import_module(RUNTIME_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__, RUNTIME_PACKAGE + "."):
        if module.name.rpartition(".")[2] not in RUNTIME_SCRIPTS:
            importlib.import_module(module.name)


def _learn_writer_calls() -> None:
    """Which calls of the runtime's code write records (grader/records/genuine_frames.py
    writing_call, asked at every record), found once here for every run, not in each rank."""
    from grader.records.genuine_frames import learn_writer_calls
    from grader.vgpu.trace import WRITER_MODULES
    learn_writer_calls([sys.modules[name] for name in WRITER_MODULES if name in sys.modules])


def _freeze_what_is_shared() -> None:
    """Keep what the imports made out of every run's garbage collections (gc.freeze, as
    Python's docs advise before fork): a collection in a forked run would otherwise walk, and
    so copy, the pages of every object of torch the run shares with this server, and so would
    the exit's search for files to flush (grader/vgpu/clean_exit.py), which then sees only
    what the run made."""
    import gc
    gc.collect()
    gc.freeze()


def shadowed_later(names: str) -> list[str]:
    """The submission's modules named like an installed module that a fresh run imports only
    later (after its script's folder is first on sys.path): in a fresh run, a lazy import of
    that name (dynamo imports the standard `profile`) finds the student's file, and so it must
    in a forked one; where there are any, nothing is imported ahead of the run but torch."""
    import importlib.util
    found = []
    for name in filter(None, names.split(",")):
        if name.isidentifier() and name not in sys.modules:
            try:
                if importlib.util.find_spec(name) is not None:
                    found.append(name)
            except (ImportError, ValueError):
                found.append(name)
    return found


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        control = children.pop(pid, None)
        if control is not None:
            try:
                control.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
            except OSError:
                pass
            control.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _become_run(request: dict, control: socket.socket, stdout: int, stderr: int,
                key: int) -> None:
    """In the forked child: wait to be confined, then run the request's argv as a fresh
    interpreter would, and end the process (it never returns into the server's loop)."""
    status = 1
    try:
        # What a fresh interpreter has: Python's own SIGINT handler, SIGPIPE ignored.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        control.send(b"started")
        if control.recv(16) != b"go":
            os._exit(125)
        control.close()
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
        os.environ.clear()
        os.environ.update(request["env"])
        from grader.records.seal import ENV_FD
        if ENV_FD in os.environ:        # the key's pipe, at the number it has in this process
            os.environ[ENV_FD] = str(key)
        else:
            os.close(key)
        os.chdir(request["cwd"])
        _reset_process_state()
        sys.modules.pop(__name__, None)
        status = _run_argv(list(request["argv"]))
    except SystemExit as request_to_exit:
        status = request_to_exit.code
    except BaseException:
        import traceback
        traceback.print_exc()
        status = 1
    from grader.vgpu.clean_exit import end_without_finalisation
    try:
        end_without_finalisation(status)
    finally:
        os._exit(1)


def _reset_process_state() -> None:
    """What a fresh interpreter would have, which the fork copied from the server: its random
    seeds (a fresh process seeds Python's, numpy's and torch's from the OS; forked runs would
    all draw the server's numbers), its original folder, the threads its environment allows."""
    import random
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    # multiprocessing resolves a spawned child's relative paths from the folder it was
    # imported in: the run's, not the server's.
    import multiprocessing.process
    multiprocessing.process.ORIGINAL_DIR = os.getcwd()
    import torch
    torch.default_generator.seed()      # a fresh process seeds it from the OS too
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


def _run_argv(argv: list[str]) -> int:
    """`python SCRIPT ARGS` or `python -m MODULE ARGS`, in this process."""
    import runpy
    import types
    sys.orig_argv = list(argv)
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    if argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        sys.path[0] = os.getcwd()
        _activate_node()
        runpy._run_module_as_main(argv[2], alter_argv=True)
        return 0
    script = os.path.abspath(argv[1])
    sys.argv = [argv[1], *argv[2:]]
    sys.path[0] = os.path.dirname(script)
    _activate_node()
    with open(script, "rb") as handle:
        code = compile(handle.read(), script, "exec")
    main.__file__ = script
    main.__cached__ = None
    exec(code, main.__dict__)
    return 0


def _activate_node() -> None:
    # The boot's sitecustomize ran in the server, where no node was wanted; in a fresh
    # interpreter it would activate the run's node when torch is imported (now: it is).
    boot = sys.modules.get("sitecustomize")
    activate = getattr(boot, "_activate_when_torch_is_imported", None)
    if activate is not None:
        activate()


def main() -> int:
    sock = socket.socket(fileno=int(os.environ.pop(ENV_SOCKET_FD)))
    return serve(sock)


if __name__ == "__main__":
    sys.exit(main())
