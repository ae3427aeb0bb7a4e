"""Start a script (or a torchrun job) on a node of N GPUs in child processes.

The child processes get the node through environment variables and the boot
`sitecustomize`; this process only prepares the environment, waits, and merges the per-rank
trace files into one.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import grader
from grader.vgpu import ENV_FORCE_VIRTUAL, ENV_GPUS, ENV_TRACE
from grader.vgpu.trace import merge_rank_files

PACKAGE_ROOT = Path(grader.__file__).resolve().parent.parent
BOOT_DIR = Path(__file__).resolve().parent / "boot"
# Runs one script as `__main__` on the node (the child of every run and torchrun worker).
RUN_ON_NODE = Path(__file__).resolve().parent / "run_on_node.py"


@dataclass
class RunResult:
    returncode: int
    timed_out: bool


def node_environment(gpus: int, trace: str | None, *, force_virtual: bool = False,
                     base: dict | None = None) -> dict:
    env = dict(os.environ if base is None else base)
    env[ENV_GPUS] = str(gpus)
    if trace:
        env[ENV_TRACE] = str(Path(trace).resolve())
    else:
        env.pop(ENV_TRACE, None)
    if force_virtual:
        env[ENV_FORCE_VIRTUAL] = "1"
    else:
        env.update(visible_devices(gpus, env))
    path = [str(BOOT_DIR), str(PACKAGE_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def visible_devices(gpus: int, env: dict) -> dict:
    """On a machine with enough real GPUs, show the script exactly the first `gpus` of them."""
    from grader.vgpu import real_gpu_count
    if real_gpu_count() < gpus:
        return {}
    already = env.get("CUDA_VISIBLE_DEVICES")
    ids = already.split(",") if already else [str(i) for i in range(real_gpu_count())]
    return {"CUDA_VISIBLE_DEVICES": ",".join(ids[:gpus])}


def script_command(script: str, args: list[str], sets: list[str]) -> list[str]:
    command = [str(RUN_ON_NODE)]
    for assignment in sets:
        command += ["--set", assignment]
    return command + [script, *args]


def python_command(script: str, args: list[str], sets: list[str]) -> list[str]:
    return [sys.executable, *script_command(script, args, sets)]


def torchrun_command(script: str, args: list[str], sets: list[str], nproc: int) -> list[str]:
    # --standalone: a rendezvous on localhost with a free port, never a fixed one. torchrun's
    # agent runs in torchrun_launcher, whose failure summary names the script, not the runner.
    return [sys.executable, "-m", "grader.vgpu.torchrun_launcher", script, "--", "--standalone",
            f"--nproc-per-node={nproc}", *script_command(script, args, sets)]


def run(command: list[str], env: dict, *, trace: str | None = None,
        timeout: float | None = None) -> RunResult:
    """Run the command in its own process group (so a timeout stops torchrun's workers too)."""
    if trace:
        Path(trace).parent.mkdir(parents=True, exist_ok=True)
        Path(trace).unlink(missing_ok=True)
    process = subprocess.Popen(command, env=env, start_new_session=True)
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except KeyboardInterrupt:
        os.killpg(process.pid, signal.SIGTERM)
        raise
    finally:
        if trace:
            merge_rank_files(trace)
    return RunResult(process.returncode, timed_out)
