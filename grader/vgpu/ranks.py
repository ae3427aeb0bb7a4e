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
import signal
import socket
import subprocess
import sys
import time

from grader.records.seal import ENV_FD, hand_over, take_key

GRACE_AFTER_FAILURE_S = 5.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(command: list[str], nproc: int) -> int:
    port = str(free_port())
    # In a graded run each rank gets the run's seal key as this launcher got it: through a
    # descriptor of its own (grader/records/seal.py), read before the rank runs student code.
    key = take_key()
    processes = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", ROLE_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   TORCHELASTIC_RUN_ID="pdl-autograder")
        if key is None:
            processes.append(subprocess.Popen(command, env=env))
            continue
        key_fd = hand_over(key)
        env[ENV_FD] = str(key_fd)
        try:
            processes.append(subprocess.Popen(command, env=env, pass_fds=(key_fd,)))
        finally:
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
