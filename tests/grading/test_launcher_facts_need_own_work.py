"""The number of processes and the world size are torchrun's (adv42 F4): the untouched template
with the reference's answer sheet earned Practical 6 0.42 (`world_size_reported` and the
comparison's "processes" row) and Practical 10 0.25 (`num_processes_reported`), as torchrun
starts the processes and the template joins the process group before its NotImplementedError.
These answers now count only where the student's own work ran: a training step (the templates'
TODOs stop before one), as Practical 5's require_data_parallel guards its answers about
DataParallel. A run that trains with the student's part keeps the world size, also without
DDP (a share of the batch); the comparison's rows about DDP need DDP to have run (adv52 F4:
tests/grading/test_practical6_own_part.py).

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical6 as p6
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation
from tests.grading.test_practical6_data_parallel_side import (TABLE, Runs, ddp_trained,
                                                              dp_trained, graded)
from tests.grading.test_practical10_non_solutions import check_kit, sheet, traced

TEMPLATE_ERROR = ("Traceback (most recent call last):\n  File \"sample.py\", line 108\n"
                  "NotImplementedError: TODO: the micro-batch loop\n")


def template_run(script: str, processes: int = 2, wrapped: bool = False) -> Observation:
    """torchrun's processes joining the process group, then the template's
    NotImplementedError: no forward pass, no step (`wrapped`: Practical 10's template wraps
    the model in DDP before it)."""
    events = []
    for rank in range(processes):
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": processes}]
        if wrapped:
            events.append({"event": "ddp_wrap", "rank": rank, "world_size": processes})
    return Observation(script, gpus=4, nproc=processes, launcher="torchrun", returncode=1,
                       stderr=TEMPLATE_ERROR, events=events)


# -- Practical 6 ----------------------------------------------------------------------------------


def test_p6_world_size_of_the_template_earns_nothing(tmp_path):
    runs = Runs(dp_trained(True, 0.004), template_run(p6.SCRIPT), tmp_path)
    _, failure = graded(p6.test_reported_world_size, runs, **{"ddp.world_size": 2})
    assert failure is not None and "did not get that far" in failure \
        and "NotImplementedError" in failure, (
            "expected ddp.world_size = 2 not to count where the DDP script never trained "
            f"(test_practical6.own_work_ran); observed: {failure}")


def test_p6_processes_row_of_the_template_earns_nothing(tmp_path):
    runs = Runs(dp_trained(True, 0.004), template_run(p6.SCRIPT), tmp_path)
    _, failure = graded(p6.test_reported_comparison_table, runs, "processes",
                        **{"compare.table": TABLE})
    assert failure is not None and "did not get that far" in failure, (
        "expected the processes row (dp 1, ddp multiple) not to count where the DDP script "
        f"never trained (run_aspects' `trained`); observed: {failure}")


def without_ddp(run: Observation) -> Observation:
    """The same training with the model never wrapped in DDP (no forward through it, no
    all-reduce)."""
    events = [dict(e, module="MLP") if e.get("event") == "forward" else e for e in run.events
              if e.get("source") != "ddp_gradients"]
    return Observation(run.script, gpus=run.gpus, nproc=run.nproc, launcher=run.launcher,
                       returncode=0, events=events)


@pytest.mark.parametrize("wrapped", [True, False], ids=["ddp", "no-ddp-wrap"])
def test_p6_a_script_that_trains_keeps_both(tmp_path, wrapped):
    """With DDP both count; with a share of the batch and no DDP the world size still does,
    and the processes row, an answer about DDP, does not (adv52 F4)."""
    ddp = ddp_trained(0.004)
    runs = Runs(dp_trained(True, 0.004), ddp if wrapped else without_ddp(ddp), tmp_path)
    _, failure = graded(p6.test_reported_world_size, runs, **{"ddp.world_size": 2})
    assert failure is None, failure
    _, failure = graded(p6.test_reported_comparison_table, runs, "processes",
                        **{"compare.table": TABLE})
    assert (failure is None) if wrapped else ("trained without DDP" in (failure or "")), failure


# -- Practical 10 ---------------------------------------------------------------------------------


class Handout:
    """HandoutRuns' interface: every run is `run`."""

    def __init__(self, run):
        self.the_run = run

    def run(self, processes=2, **sets):
        return self.the_run


@pytest.mark.parametrize("run, counts", [
    (template_run(p10.SCRIPT, wrapped=True), False),
    (traced("micro"), True),
])
def test_p10_number_of_processes_counts_where_a_rank_trained(run, counts):
    answers = sheet(**{"hybrid.num_processes": 2})
    agree, _ = check_kit(answers)
    try:
        p10.test_reported_number_of_processes(Handout(run), answers, agree)
        failure = None
    except AssertionError as failed:
        failure = str(failed)
    assert (failure is None) == counts, (
        f"expected hybrid.num_processes = 2 to {'count' if counts else 'earn nothing'} "
        f"(test_practical10.test_reported_number_of_processes: only where a rank trained); "
        f"observed: {failure or 'it counted'}")
