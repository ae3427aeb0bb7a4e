"""Start P ranks of a script the way torchrun's workers are started, without torchrun's agent.

    python -m grader.vgpu.ranks --nproc P -- COMMAND...

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and a free
MASTER_PORT, which is all `init_process_group("env://")` and the course's scripts read. The
grader uses it because torchrun's own agent costs seconds per run; `pdl-grade torchrun` uses
the real torchrun. When a rank fails, the others are given a few seconds, then stopped, since
they would wait forever in their next collective.
"""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time

from grader.records.seal import ENV_FD, hand_over, take_key

GRACE_AFTER_FAILURE_S = 5.0


# The kernel hands out ports for bind(0) and connect() from its ephemeral range; a port taken
# from there (as bind(0) gives) was free when chosen, but before rank 0's store binds it, gloo's
# own sockets or another run's in the same sandbox network may be given it: a run of the
# reference's Practical 6 failed with EADDRINUSE on such a port (eng_speed5). A port below that
# range is never handed out by the kernel; concurrent runs pick one at random and test it.
LOWEST_PORT = 10000


def ephemeral_ports(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    try:
        low, high = (int(field) for field in open(path).read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999   # Linux's default


def _binds(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(_choose=random.SystemRandom().randrange) -> int:
    low, _ = ephemeral_ports()
    if low > LOWEST_PORT + 1000:
        for _ in range(200):
            port = _choose(LOWEST_PORT, low)
            if _binds(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:   # no room below the range
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(command: list[str], nproc: int) -> int:
    port = str(free_port())
    # In a graded run each rank gets the run's seal key as this launcher got it: through a
    # descriptor of its own (grader/records/seal.py), read before the rank runs student code.
    key = take_key()
    forking = forks_ranks(command, nproc)
    processes = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", ROLE_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   TORCHELASTIC_RUN_ID="pdl-autograder")
        key_fd = None
        if key is not None:
            key_fd = hand_over(key)
            env[ENV_FD] = str(key_fd)
        try:
            if forking:
                processes.append(ForkedRank(command, env))
            else:
                processes.append(subprocess.Popen(command, env=env, pass_fds=(
                    () if key_fd is None else (key_fd,))))
        finally:
            if key_fd is not None:
                os.close(key_fd)
    del key
    failed_at = None
    codes: dict[int, int] = {}
    try:
        while len(codes) < nproc:
            for rank, process in enumerate(processes):
                if rank not in codes and process.poll() is not None:
                    codes[rank] = process.returncode
                    if process.returncode != 0 and failed_at is None:
                        failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > GRACE_AFTER_FAILURE_S:
                for rank, process in enumerate(processes):
                    if rank not in codes:
                        print(f"pdl-autograder: rank {rank} stopped: another rank failed and it "
                              "would wait forever for it", file=sys.stderr)
                        process.kill()
                        codes[rank] = process.wait()
            time.sleep(0.02)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    return next((code for code in codes.values() if code != 0), 0)


# -- ranks forked from this launcher -------------------------------------------------------------
# Every process of a graded run pays `import torch` and, at its first DDP model or optimizer
# step, `import torch._dynamo`: about 3.5 s of CPU together, more than the course's runs
# themselves. When the ranks run grader/vgpu/run_on_node.py, this launcher imports both once
# (no node of its own: the boot treats it as torchrun's agent, and no student code runs here)
# and forks each rank, which then starts exactly as `python run_on_node.py ...` would: its
# RANK and key descriptor in the environment, the node activated, the script run as __main__.
FORK_ENV = "PDL_RANKS_FORK"            # "0": start every rank as a fresh interpreter
PRELOADED = ("torch", "torch._dynamo", "torch.distributed", "torch.nn.parallel", "torch.optim")


def may_fork(command: list[str], nproc: int) -> bool:
    """Whether these ranks may be forked: run_on_node.py under this interpreter, ranks on
    virtual GPUs, a platform with fork, and not switched off. A launcher forked from a
    grading's fork server has torch: it forks only where the server preloaded dynamo's lazy
    imports too (it leaves them to the run where a submission's module shadows one of them,
    and each rank must then import them itself, as a fresh one would). One rank is forked only
    from such a launcher: a fresh one would import torch for that rank alone. Real GPUs keep
    fresh interpreters: CUDA cannot be used in a child forked after the driver was touched,
    and no machine with GPUs has checked what torch's imports touch."""
    if os.environ.get(FORK_ENV) == "0" or nproc < 1 or not hasattr(os, "fork"):
        return False
    preloaded = all(name in sys.modules for name in PRELOADED)
    if "torch" in sys.modules and not preloaded:
        return False       # the server left them to the run
    if nproc == 1 and not preloaded:
        return False
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None and \
            os.environ.get("PDL_VGPU_FORCE_VIRTUAL") != "1":
        return False                   # real GPUs (grader/vgpu/launch.py visible_devices)
    return len(command) >= 2 and command[0] == sys.executable and \
        os.path.basename(command[1]) == "run_on_node.py"


def forks_ranks(command: list[str], nproc: int) -> bool:
    """Fork the ranks (after importing torch here once) rather than start fresh interpreters,
    where may_fork() allows it and this launcher is still one thread."""
    if not may_fork(command, nproc):
        return False
    import importlib
    import threading
    try:
        for name in PRELOADED:
            importlib.import_module(name)
    except Exception:
        return False
    # fork() copies only the calling thread: a library thread started by these imports would
    # be missing (and hold its locks) in every rank.
    if threading.active_count() != 1:
        return False
    # What the ranks share stays out of their garbage collections (grader/vgpu/fork_server.py).
    import gc
    gc.collect()
    gc.freeze()
    from grader.vgpu.clean_exit import leave_torch_libraries_at_exit
    leave_torch_libraries_at_exit()
    return True


class ForkedRank:
    """One rank, forked from this launcher; poll/kill/wait/returncode like subprocess.Popen."""

    def __init__(self, command: list[str], env: dict[str, str]):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_rank(command, env)        # never returns
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _run_rank(command: list[str], env: dict[str, str]) -> None:
    """In the forked child: become `python run_on_node.py ARGS` for this rank, then end the
    process here (atexit handlers run, stdio flushed): it never returns into the launcher."""
    status = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = command[1:]
        from grader.vgpu.clean_exit import end_without_finalisation
        from grader.vgpu.run_on_node import main as run_on_node
        try:
            status = run_on_node(command[2:])
        except SystemExit as request:
            status = request.code
        end_without_finalisation(status)
    except BaseException:
        import traceback
        traceback.print_exc()
    os._exit(status if isinstance(status, int) and status else 1)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "--nproc" or "--" not in argv:
        print("usage: python -m grader.vgpu.ranks --nproc P -- COMMAND...", file=sys.stderr)
        return 2
    nproc = int(argv[1])
    command = argv[argv.index("--") + 1:]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return launch(command, nproc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
