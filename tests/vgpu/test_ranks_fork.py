"""The ranks of a graded torchrun run are forked from a launcher that imported torch once
(grader/vgpu/ranks.py): the same run, the same records, the same failures as ranks started as
fresh interpreters, for about a third of the CPU (issue 15)."""
import importlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grader.harness.execute import run_script
from grader.sandbox.forked_runs import ForkServer
from grader.vgpu.ranks import FORK_ENV, PRELOADED, forks_ranks, may_fork

ROOT = Path(__file__).resolve().parents[2]

DDP = """\
import os, sys, torch, torch.distributed as dist, torch.nn as nn
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(rank)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 2).cuda(), device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(4, 8, device="cuda")).sum().backward()
    opt.step()
import gc
os.write(1, f"rank {rank} of {dist.get_world_size()} launched by {sys.orig_argv[1:3]}, "
            f"frozen {gc.get_freeze_count() > 0}\\n".encode())
dist.destroy_process_group()
"""

FAILS_ON_RANK_1 = """\
import os, time, torch
if os.environ["RANK"] == "1":
    raise ValueError("rank 1 gives up")
time.sleep(60)
"""


@pytest.fixture
def folders(tmp_path):
    submission, scratch = tmp_path / "submission", tmp_path / "scratch"
    (submission / "p").mkdir(parents=True)
    scratch.mkdir()
    return submission, scratch


def run(folders, text, monkeypatch, fork: str, nproc: int = 2):
    submission, scratch = folders
    (submission / "p" / "s.py").write_text(text)
    monkeypatch.setenv(FORK_ENV, fork)
    return run_script(submission, "p/s.py", gpus=nproc, nproc=nproc, launcher="torchrun",
                      scratch_root=scratch, force_virtual=True, timeout_s=120)


def summary(observation) -> dict:
    kinds: dict[str, int] = {}
    for event in observation.events:
        kinds[event.get("kind")] = kinds.get(event.get("kind"), 0) + 1
    kinds.pop("sample", None)          # NVML-like samples come with time
    return kinds


def test_forked_ranks_run_as_fresh_ones_do(folders, monkeypatch):
    forked = run(folders, DDP, monkeypatch, "1")
    fresh = run(folders, DDP, monkeypatch, "0")
    for observation in (forked, fresh):
        assert observation.ok, observation.problem()
        assert observation.integrity == [], observation.integrity
    # Forked: the ranks' interpreter is the launcher's; fresh: each its own run_on_node.py.
    assert forked.stdout.count("['-m', 'grader.vgpu.ranks']") == 2, forked.stdout
    assert "grader.vgpu.ranks" not in fresh.stdout, fresh.stdout
    for observation in (forked, fresh):      # one write per line: lines never interleave
        assert "rank 0 of 2" in observation.stdout and "rank 1 of 2" in observation.stdout
    # What the forked ranks share with their launcher stays out of their garbage collections.
    assert forked.stdout.count("frozen True") == 2 and "frozen True" not in fresh.stdout
    assert summary(forked) == summary(fresh)
    assert {e.get("rank") for e in forked.of("step")} == {0, 1}


def test_a_forked_rank_that_fails_fails_the_run_with_its_traceback(folders, monkeypatch):
    observation = run(folders, FAILS_ON_RANK_1, monkeypatch, "1")
    assert not observation.ok and observation.returncode != 0
    assert "ValueError: rank 1 gives up" in observation.stderr
    assert 's.py", line 3' in observation.stderr, observation.stderr
    assert "rank 0 stopped: another rank failed" in observation.stderr


def test_only_several_ranks_of_run_on_node_are_forked(monkeypatch):
    # As in a launcher with every preload: whether this test process has torch (another test
    # imported it) must not decide.
    for name in PRELOADED:
        importlib.import_module(name)
    python = sys.executable
    runner = str(Path("grader/vgpu/run_on_node.py"))
    monkeypatch.delenv(FORK_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert may_fork([python, runner, "s.py"], 2)
    assert not may_fork([python, "s.py"], 2)                   # not the grader's runner
    assert not may_fork(["/other/python", runner, "s.py"], 2)  # another interpreter
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")            # real GPUs: fresh ones
    monkeypatch.delenv("PDL_VGPU_FORCE_VIRTUAL", raising=False)
    assert not may_fork([python, runner, "s.py"], 2)
    monkeypatch.setenv("PDL_VGPU_FORCE_VIRTUAL", "1")
    assert may_fork([python, runner, "s.py"], 2)
    monkeypatch.setenv(FORK_ENV, "0")
    assert not may_fork([python, runner, "s.py"], 2)


def test_ranks_fork_from_a_launcher_with_every_preload_or_none():
    """A fresh launcher (no torch yet) forks several ranks after importing the preloads once,
    but would import torch for one rank alone (nothing to share); one forked from a grading's
    fork server has torch and dynamo's lazy imports, unless the server left those to the run
    because a submission module shadows one: then no rank is forked, and each imports them as
    a fresh one would, finding the student's module."""
    code = ("import sys\nfrom grader.vgpu.ranks import PRELOADED, may_fork\n"
            "command = [sys.executable, 'grader/vgpu/run_on_node.py', 's.py']\n"
            "print(may_fork(command, 1), may_fork(command, 2))\n"
            # torch without dynamo's lazy imports: a fork server that left them to the run
            # (a submission's module shadows one of them)
            "import torch\nprint(may_fork(command, 1), may_fork(command, 2))\n"
            "import importlib\n[importlib.import_module(m) for m in PRELOADED]\n"
            "print(may_fork(command, 1))\n")
    env = {k: v for k, v in os.environ.items() if k not in (FORK_ENV, "CUDA_VISIBLE_DEVICES")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.stdout.split() == ["False", "True", "False", "False", "True"], (
        done.stdout + done.stderr)


def test_one_rank_from_the_fork_server_is_forked_and_runs_as_a_fresh_one(folders, monkeypatch):
    """P6's and P10's one-process runs: forked from the launcher the grading's fork server
    forked, not a fresh interpreter that imports torch (about 3.5 s of CPU) again."""
    submission, scratch = folders
    (submission / "p" / "s.py").write_text(DDP)
    monkeypatch.delenv(FORK_ENV, raising=False)
    (scratch / "forks").mkdir()
    forks = ForkServer(scratch / "forks")
    try:
        forked = run_script(submission, "p/s.py", gpus=1, nproc=1, launcher="torchrun",
                            scratch_root=scratch, force_virtual=True, timeout_s=120, forks=forks)
    finally:
        forks.close()
    monkeypatch.setenv(FORK_ENV, "0")
    fresh = run_script(submission, "p/s.py", gpus=1, nproc=1, launcher="torchrun",
                       scratch_root=scratch, force_virtual=True, timeout_s=120)
    for observation in (forked, fresh):
        assert observation.ok, observation.problem()
        assert observation.integrity == [], observation.integrity
        assert "rank 0 of 1" in observation.stdout
    assert "run_on_node.py" not in forked.stdout and "run_on_node.py" in fresh.stdout, (
        forked.stdout, fresh.stdout)
    assert summary(forked) == summary(fresh)


def test_a_launcher_with_a_second_thread_does_not_fork(monkeypatch):
    """fork() copies only the calling thread: a launcher with another would hand every rank a
    half-copied process."""
    monkeypatch.delenv(FORK_ENV, raising=False)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not forks_ranks([sys.executable, "grader/vgpu/run_on_node.py", "s.py"], 2)
    finally:
        stop.set()
        other.join()
