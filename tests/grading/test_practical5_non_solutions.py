"""Practical 5: answers about DataParallel where DataParallel never ran (a TA's audit,
disagreement 4).

A wrapper made and never called (the TA's s14: `dp_model = nn.DataParallel(model)`, the inner
model trained on cuda:0) makes the reference sheet's DataParallel facts true of a single-GPU
run: GPU 0 holds the most, the GPUs are not equally used, the final loss is the same, nothing
is split by hand, and on a clock without a verdict "faster?" takes either answer. Every answer
about what DataParallel does now counts only where the code had DataParallel scatter a batch,
the guard the split table already had; the timing table, half of it the single-GPU baseline,
is left as it was.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import functools
import inspect

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical5 as p5
from grader.checks.support import must_agree
from grader.harness.observation import Observation

MIB = 2 ** 20


def trained(gpus, data_parallel, script=p5.DP, steps=3) -> Observation:
    """A run of `steps` optimizer steps on batches of 64: through DataParallel over `gpus` GPUs
    (a scatter, a replica per GPU, GPU 0 holding the most), or on cuda:0 alone."""
    memory = [{"device": f"cuda:{i}", "allocated": 0, "peak": 0} for i in range(gpus)]
    memory[0].update(allocated=9 * MIB, peak=12 * MIB)
    if data_parallel:
        for entry in memory[1:]:
            entry.update(allocated=3 * MIB, peak=5 * MIB)
    events = [{"event": "start", "rank": 0, "virtual": True}]
    for step in range(steps):
        events.append({"event": "forward", "rank": 0, "thread": "MainThread", "grad": True,
                       "step": step, "batch": [64, 1024], "input_device": "cuda:0",
                       "module": "DataParallel" if data_parallel else "MLP"})
        if data_parallel:
            sizes = [-(-64 // gpus)] * (gpus - 1)
            sizes.append(64 - sum(sizes))
            events.append({"event": "dp_scatter", "rank": 0, "batch": 64, "sizes": sizes})
            events += [{"event": "forward", "rank": 0, "thread": f"Thread-{i} (_worker)",
                        "nested": True, "grad": True, "step": step, "batch": [rows, 1024],
                        "input_device": f"cuda:{i}", "module": "MLP"}
                       for i, rows in enumerate(sizes)]
        events += [{"event": "backward", "rank": 0},
                   {"event": "step", "rank": 0, "index": step + 1, "memory": memory,
                    "grads": {"sum": 1.0, "sumsq": 2.0}, "params": {"sum": 5.0, "sumsq": 9.0}}]
    return Observation(script, gpus=gpus, returncode=0, events=events,
                       stdout="final loss: 0.512300\n")


class Handout:
    """HandoutRuns' interface: the single-GPU script, and the DataParallel one on N GPUs."""

    split_printed = None   # where the script prints each replica's batch: not read here

    def __init__(self, data_parallel):
        self.data_parallel = data_parallel

    def dp(self, gpus):
        return trained(gpus, self.data_parallel)

    def single(self):
        return trained(1, False, script=p5.SINGLE)


# The reference's answers: each true of a single-GPU run as well.
SHEET = {"timing.faster": False, "timing.proportional": False, "memory.most_memory_gpu": 0,
         "timing.final_loss_equal": True, "dp.split_manually": False,
         "usage.gpu0_more_loaded": True, "usage.equally_utilized": False,
         "usage.table": [{"gpu": 0, "utilization_percent": 38, "memory_mib": 1012},
                         {"gpu": 1, "utilization_percent": 21, "memory_mib": 618}]}
ABOUT_DATA_PARALLEL = [
    (p5.test_reported_faster, "timing.faster"),
    (p5.test_reported_proportional, "timing.proportional"),
    (p5.test_reported_gpu_with_most_memory, "memory.most_memory_gpu"),
    (p5.test_reported_final_loss_equality, "timing.final_loss_equal"),
    (p5.test_reported_split_manually, "dp.split_manually"),
    (p5.test_reported_usage_table, "usage.table"),
    (p5.test_reported_gpu0_more_loaded, "usage.gpu0_more_loaded"),
    (p5.test_reported_equally_utilized, "usage.equally_utilized"),
]
IDS = [qid for _, qid in ABOUT_DATA_PARALLEL]


def run_check(check, handout, tmp_path, values=SHEET, flags=None):
    """Call a check with the fixtures it takes (as grader/checks/conftest.py makes them);
    `flags` collects what it flags for the instructor."""
    answers = Answers("practical5", "sheet", values=dict(values),
                      origin={qid: "practical5/answers.yaml" for qid in values})
    measured, reported = {}, {}
    flags = [] if flags is None else flags

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        measured[qid], reported[qid] = truth, value
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, flags.append)
    fixtures = {"handout": handout, "submission": tmp_path, "answers": answers,
                "measured": measured, "reported_values": reported, "flag": flags.append,
                "agree": agree}
    check(**{name: fixtures[name] for name in inspect.signature(check).parameters
             if name in fixtures})
    return flags


@pytest.mark.parametrize("check, qid", ABOUT_DATA_PARALLEL, ids=IDS)
def test_an_answer_about_data_parallel_earns_nothing_where_it_never_ran(tmp_path, check, qid):
    with pytest.raises(AssertionError) as raised:
        run_check(check, Handout(data_parallel=False), tmp_path)
    text = str(raised.value)
    for phrase in ("Expected: your answers about DataParallel can be compared with what "
                   "DataParallel does in your practical5_dp.py",
                   "Observed: practical5/practical5_dp.py never had DataParallel scatter a batch "
                   "in the run on 2 GPUs (the model trained, but never through a DataParallel "
                   "wrapper", "none earns a point",
                   "Where to look: keep the wrapper and call it: model = nn.DataParallel(model)"):
        assert phrase in text, f"[{qid}] expected the feedback to say {phrase!r}; observed:\n{text}"


@pytest.mark.parametrize("check, qid", ABOUT_DATA_PARALLEL, ids=IDS)
def test_the_instructor_is_told_of_an_answer_about_data_parallel_that_never_ran(tmp_path,
                                                                               check, qid):
    """instructor.md shows the written answers about DataParallel: it says they have no code."""
    flags = []
    with pytest.raises(AssertionError):
        run_check(check, Handout(data_parallel=False), tmp_path, flags=flags)
    assert any(f.startswith(f"{qid}: answered ") and "never had DataParallel scatter a batch" in f
               for f in flags), f"expected a flag about {qid}; observed: {flags}"


@pytest.mark.parametrize("check, qid", ABOUT_DATA_PARALLEL, ids=IDS)
def test_an_answer_about_data_parallel_that_ran_is_checked_as_before(tmp_path, check, qid):
    assert run_check(check, Handout(data_parallel=True), tmp_path) == []


@pytest.mark.parametrize("check, qid", ABOUT_DATA_PARALLEL, ids=IDS)
def test_a_missing_answer_is_told_missing_whether_or_not_data_parallel_ran(tmp_path, check, qid):
    with pytest.raises(AssertionError, match="no answer found"):
        run_check(check, Handout(data_parallel=False), tmp_path,
                  values={k: v for k, v in SHEET.items() if k != qid})


def test_the_timing_table_with_its_single_gpu_row_stands_without_data_parallel(tmp_path):
    """Half of it is the single-GPU baseline, which ran: kept (the TA's fair grade of s14)."""
    table = [{"method": "single", "gpus": 1, "step_time_s": 0.0075, "total_time_s": 0.081},
             {"method": "dp", "gpus": 2, "step_time_s": 0.0203, "total_time_s": 0.2353}]
    for aspect in ("complete", "consistent"):
        run_check(functools.partial(p5.test_reported_timing_table, aspect=aspect),
                  Handout(data_parallel=False), tmp_path, values={"timing.table": table})


def test_a_split_table_of_code_with_device_ids_hard_coded_is_held_to_the_rule_and_says_so(tmp_path):
    """device_ids=[0, 1] on 3 GPUs splits 64 as [32, 32]; the student reported that. The table
    is about DataParallel's chunk rule, and the feedback said "agrees with what your code does:
    [22, 22, 20]" beside "your code splits ... as [32, 32]" (a TA's audit: a contradiction)."""
    class HardCoded(Handout):
        def dp(self, gpus):
            run = trained(2, True)
            run.gpus = gpus
            return run
    values = dict(SHEET, **{"dp.split_per_gpu": [{"gpus": 3, "split": [32, 32]}]})
    with pytest.raises(AssertionError) as raised:
        run_check(functools.partial(p5.test_reported_split_per_gpu, gpus=3), HardCoded(True),
                  tmp_path, values=values)
    text = str(raised.value)
    assert "agrees with how DataParallel divides a batch over all the GPUs, its chunk rule: " \
           "3 GPUs: [22, 22, 20]" in text and "what your code does" not in text, text
