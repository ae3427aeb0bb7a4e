"""How many processes a run may hold grows with the machine's cores: honest code sizes its
workers by them (adv32 S1: `DataLoader(num_workers=64)` in each of P6's ranks, as
`os.cpu_count()` gives on a 64-core node, had been stopped as a fork loop under a flat 128)."""
import os

import pytest

from grader.harness.execute import run_policy
from grader.harness.observation import Observation, run_process_limits


@pytest.mark.parametrize("cores, expected", [(2, (128, 512)), (16, (128, 512)),
                                             (64, (264, 1056)), (128, (520, 2080))])
def test_the_limits_follow_the_cores(cores, expected):
    assert run_process_limits(cores) == expected


@pytest.mark.parametrize("cores", [2, 64, 128])
def test_a_dataloader_sized_by_the_cores_in_four_ranks_fits(cores):
    processes, tasks = run_process_limits(cores)
    # torchrun's agent, 4 ranks, each with os.cpu_count() workers.
    assert 1 + 4 * (1 + cores) <= processes <= tasks


def test_every_run_gets_this_machines_limits(tmp_path):
    policy = run_policy(tmp_path, tmp_path, {})
    assert (policy.max_processes, policy.max_pids) == run_process_limits(os.cpu_count())


def test_the_message_names_fork_loops_and_worker_pools():
    run = Observation(script="practical6/practical6_ddp.py", gpus=2, nproc=2, launcher="torchrun")
    run.returncode, run.processes_exceeded = 137, True
    processes, tasks = run_process_limits()
    problem = run.problem()
    assert f"started more processes at once than a run may ({processes} processes, {tasks} " \
           "with their threads)" in problem, problem
    assert "os.fork()" in problem and "num_workers" in problem and "Pool" in problem, problem
