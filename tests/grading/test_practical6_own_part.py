"""Practical 6: given code earns nothing by itself (rubrics/README.md), and an answer about DDP
needs DDP to have run (adv52 F4).

The template with its two `raise NotImplementedError` lines deleted and nothing written (no DDP
wrap; every rank takes the whole batch) trains: the template's given setup (LOCAL_RANK,
set_device, init_process_group, the model on cuda:r) had earned the setup item's 2 points, and a
sheet's answers "DDP is more balanced, faster, no GPU-0 bottleneck" were checked against that
run with no DDP in it (4.75 of 12). Now the setup counts where the student's part ran (DDP's
gradient all-reduce, or each rank's share of the batch), and the answers about DDP where DDP
all-reduced the gradients, as Practical 5's require_data_parallel guards DataParallel's.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from tests.grading.test_launcher_facts_need_own_work import without_ddp
from tests.grading.test_practical6_data_parallel_side import (TABLE, Runs, ddp_trained,
                                                              dp_trained, graded)


def whole_batch(run: Observation) -> Observation:
    """The same run with every rank training on the whole batch of 64 rows (no share)."""
    events = [dict(e, batch=[p6.BATCH, *e["batch"][1:]]) if e.get("event") == "forward" else e
              for e in run.events]
    return Observation(run.script, gpus=run.gpus, nproc=run.nproc, launcher=run.launcher,
                       returncode=0, events=events)


def given_code_only() -> Observation:
    """adv52's p6_noraise: the raises deleted, nothing written."""
    return whole_batch(without_ddp(ddp_trained(0.004)))


def runs_of(ddp: Observation, tmp_path) -> Runs:
    return Runs(dp_trained(True, 0.004), ddp, tmp_path)


SETUP = [(lambda runs: p6.test_world_size_is_number_of_processes(runs, 2), "world_size"),
         (p6.test_rank_k_uses_gpu_k, "rank_device")]


@pytest.mark.parametrize("check, name", SETUP, ids=[name for _, name in SETUP])
def test_the_templates_setup_alone_earns_no_setup_point(tmp_path, check, name):
    with pytest.raises(AssertionError) as raised:
        check(runs_of(given_code_only(), tmp_path))
    text = str(raised.value)
    for phrase in ("with your part of the script running",
                   "only the template's given setup ran, which earns nothing by itself",
                   "wrap the model with DDP(model, device_ids=[local_rank])"):
        assert phrase in text, (f"practical6.{name}: expected the feedback to say {phrase!r} "
                                f"(test_practical6.given_code_only); observed:\n{text}")


@pytest.mark.parametrize("ddp", [
    pytest.param(lambda: without_ddp(ddp_trained(0.004)), id="share-without-ddp"),
    pytest.param(lambda: whole_batch(ddp_trained(0.004)), id="ddp-on-the-whole-batch"),
    pytest.param(lambda: ddp_trained(0.004), id="reference")])
@pytest.mark.parametrize("check, name", SETUP, ids=[name for _, name in SETUP])
def test_either_part_of_the_students_keeps_the_setup(tmp_path, check, name, ddp):
    """A missing wrap costs the synchronisation item, a wrong share the data item: not setup."""
    check(runs_of(ddp(), tmp_path))


# The reference's answers, each of a question about DDP (or the share, which is the
# student's too: per_rank_batch).
DDP_ANSWERS = [
    (p6.test_reported_split_automatically, None, {"data.split_automatically": False}),
    (p6.test_reported_per_rank_batch, None, {"ddp.per_rank_batch": 64}),
    (p6.test_reported_more_balanced, None, {"usage.more_balanced": True}),
    (p6.test_reported_gpu0_bottleneck, None, {"usage.gpu0_bottleneck": False}),
    (p6.test_reported_comparison_table, "gpu usage", {"compare.table": TABLE}),
    (p6.test_reported_comparison_table, "processes", {"compare.table": TABLE}),
    (p6.test_reported_faster, None, {"compare.faster": "ddp"}),
    (p6.test_reported_usage_table, None, {"usage.table": [
        {"gpu": 0, "utilization_percent": 40, "memory_mib": 500},
        {"gpu": 1, "utilization_percent": 40, "memory_mib": 500}]}),
]


@pytest.mark.parametrize("check, aspect, sheet", DDP_ANSWERS,
                         ids=[f"{c.__name__}-{a}" if a else c.__name__ for c, a, _ in DDP_ANSWERS])
def test_answers_about_ddp_need_ddp_to_have_run(tmp_path, check, aspect, sheet):
    _, failure = graded(check, runs_of(given_code_only(), tmp_path), aspect, **sheet)
    assert failure is not None and ("trained without DDP" in failure
                                    or "never did what the question is about" in failure), (
        f"expected {check.__name__} ({sheet}) to fail where the script trained with no DDP "
        f"and no share (test_practical6.require_ddp, own_work_ran); observed: {failure}")


@pytest.mark.parametrize("check, aspect, sheet", DDP_ANSWERS[2:],
                         ids=[f"{c.__name__}-{a}" if a else c.__name__ for c, a, _ in DDP_ANSWERS[2:]])
def test_a_share_without_ddp_shows_nothing_about_ddp(tmp_path, check, aspect, sheet):
    _, failure = graded(check, runs_of(without_ddp(ddp_trained(0.004)), tmp_path), aspect,
                        **sheet)
    assert failure is not None and "trained without DDP" in failure, (
        f"expected {check.__name__} to fail where no gradient was all-reduced by DDP "
        f"(test_practical6.require_ddp); observed: {failure}")


def test_the_timing_table_needs_ddp_too(tmp_path):
    rows = [{"method": "dp", "step_time_s": 0.004, "total_time_s": 0.4},
            {"method": "ddp", "step_time_s": 0.004, "total_time_s": 0.4}]
    runs = runs_of(given_code_only(), tmp_path)
    for aspect in ("complete", "consistent"):
        _, failure = graded(lambda runs, answers, measured, reported_values, flag:
                            p6.test_reported_timing_table(runs, tmp_path, answers, measured,
                                                          reported_values, flag, aspect),
                            runs, **{"timing.table": rows})
        assert failure is not None and "trained without DDP" in failure, failure
