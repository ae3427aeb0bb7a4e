"""Practical 6, Part 2: the rank -> GPU table read from a run on all the student's GPUs.

The handout's Part 1 says to replace torchrun's 2 "with number of GPUs available", and the
sheet's question for this table does not pin 2 processes: a student on a 4-GPU node lists ranks
0-3. That table was compared with the 2-process run alone and marked wrong (adv33 F3, 9.5 of
12 against 9.75). A table of ranks 0..n-1 is now checked against the grader's own run of n
processes, where it made one (1-4); any other table against the sheet's 2, as before.

The check runs on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from tests.grading.test_practical6_data_parallel_side import graded


def ddp_on(processes: int, gpu_of=lambda rank: rank) -> Observation:
    """practical6_ddp.py under torchrun --nproc_per_node=`processes`: each rank's model on
    cuda:gpu_of(rank)."""
    events = []
    for rank in range(processes):
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": processes},
                   {"event": "placement", "rank": rank,
                    "layers": [{"name": "net.0", "device": f"cuda:{gpu_of(rank)}"}]}]
    return Observation(p6.SCRIPT, gpus=processes, nproc=processes, launcher="torchrun",
                       returncode=0, events=events)


class RunsByProcesses:
    """ScriptRuns' interface: the DDP script's run of each process count the grader makes."""

    def __init__(self, submission, gpu_of=lambda rank: rank):
        self.submission = submission
        self.made = {n: ddp_on(n, gpu_of) for n in p6.PROCESSES}
        self.asked: list[int] = []

    def script(self, script, nproc=1, **spec):
        self.asked.append(nproc)
        return self.made[nproc]


def table(gpus: dict) -> list[dict]:
    return [{"rank": f"Rank {rank}", "gpu": f"GPU {gpu}"} for rank, gpu in gpus.items()]


@pytest.mark.parametrize("processes", [2, 3, 4])
def test_a_table_of_every_gpus_rank_is_checked_against_that_run(tmp_path, processes):
    runs = RunsByProcesses(tmp_path)
    measured, failure = graded(p6.test_reported_rank_to_gpu, runs,
                               **{"ddp.rank_to_gpu": table({r: r for r in range(processes)})})
    assert failure is None, (
        f"a table of ranks 0-{processes - 1}, each on its own GPU, as the student's code puts "
        f"them with --nproc_per_node={processes}, should be accepted; observed:\n{failure}")
    assert runs.asked == [processes], f"expected the {processes}-process run read; read {runs.asked}"
    assert measured["ddp.rank_to_gpu"] == {str(r): f"cuda:{r}" for r in range(processes)}, measured


def test_a_wrong_four_rank_table_is_still_wrong(tmp_path):
    """The run of 4 decides: rank 3 listed on GPU 0 where the code puts it on cuda:3."""
    _, failure = graded(p6.test_reported_rank_to_gpu, RunsByProcesses(tmp_path),
                        **{"ddp.rank_to_gpu": table({0: 0, 1: 1, 2: 2, 3: 0})})
    assert failure and "rank 3: gpu cuda:3" in failure and "with 4 processes" in failure, (
        f"expected the table compared with the 4-process run (rank 3 on cuda:3); observed:\n{failure}")


def test_a_correct_table_does_not_hide_code_that_shares_one_gpu(tmp_path):
    """Every rank on cuda:0 in the code: a table of ranks on their own GPUs is wrong, of any size."""
    _, failure = graded(p6.test_reported_rank_to_gpu, RunsByProcesses(tmp_path, gpu_of=lambda rank: 0),
                        **{"ddp.rank_to_gpu": table({r: r for r in range(4)})})
    assert failure and "rank 1: gpu cuda:0" in failure, failure


@pytest.mark.parametrize("gpus", [{0: 0, 1: 1, 2: 2, 3: 3, 4: 4}, {1: 1, 2: 2}, {0: 0, 2: 2}])
def test_any_other_table_is_compared_with_the_sheets_two_processes(tmp_path, gpus):
    """Ranks the grader made no run of (5), or not 0..n-1: the sheet's 2-process run, and wrong."""
    runs = RunsByProcesses(tmp_path)
    _, failure = graded(p6.test_reported_rank_to_gpu, runs, **{"ddp.rank_to_gpu": table(gpus)})
    assert runs.asked == [p6.SHEET_PROCESSES], runs.asked
    assert failure and "with 2 processes" in failure, failure
