"""Practical 5's timing table beside a DataParallel script left at its TODO (a TA's audit 27,
p5_single_only): a crashed practical5_dp.py had failed both of its cases, the single-GPU row's
consistency with the single-GPU run included, and the single row was then checked on its own
(0.125). The single-GPU script is the course's given code, byte for byte, and the table is Part
3's comparison: the untouched template with a sheet earned 0.13 for it (adv52 F6), so the table
counts beside a DataParallel script of the student's that trains (whatever it does with
DataParallel: the TA's s14 keeps it). The DataParallel row is never checked against a run that
did not train, and the table is not complete without it.
"""
from __future__ import annotations

import functools

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical5 as p5
from grader.checks.practical_answers import answer_against
from grader.harness.observation import Observation
from test_practical5_non_solutions import run_check, trained

SINGLE_ROW = {"method": "single", "gpus": 1, "step_time_s": 0.0019, "total_time_s": 0.0213}
GUESSED_DP_ROW = {"method": "dp", "gpus": 2, "step_time_s": 0.0011, "total_time_s": 0.0001}


def todo_left(script=p5.DP) -> Observation:
    return Observation(script, gpus=2, returncode=1, events=[
        {"event": "exception", "type": "NotImplementedError", "site": "practical5_dp.py:52",
         "message": "TODO (Practical 5): wrap the model"}])


class DataParallelLeft:
    """The single-GPU script trained; the DataParallel one stops at its TODO."""

    def dp(self, gpus):
        return todo_left()

    def single(self):
        return trained(1, False, script=p5.SINGLE)


class NothingRan(DataParallelLeft):
    def single(self):
        return todo_left(p5.SINGLE)


def _timing(aspect):
    return functools.partial(p5.test_reported_timing_table, aspect=aspect)


@pytest.mark.parametrize("table", [[SINGLE_ROW], [SINGLE_ROW, GUESSED_DP_ROW]], ids=["single only", "dp guessed"])
def test_the_given_single_gpu_scripts_row_alone_earns_nothing(tmp_path, table):
    with pytest.raises(AssertionError) as raised:
        run_check(_timing("consistent"), DataParallelLeft(), tmp_path, values={"timing.table": table})
    text = str(raised.value)
    for phrase in ("the timing table beside a DataParallel script of your own that trains",
                   "the course's given code, which earns nothing by itself",
                   "practical5/practical5_dp.py did not train to its end in the grader's run"):
        assert phrase in text, (f"expected the feedback to say {phrase!r} (test_practical5."
                                f"test_reported_timing_table); observed:\n{text}")


@pytest.mark.parametrize("table, said", [
    ([SINGLE_ROW], "the DataParallel row (method: dp) is missing because practical5/practical5_dp.py did not "
                   "train to the end when the grader ran it: finish it"),
    ([SINGLE_ROW, GUESSED_DP_ROW], "the DataParallel row (method: dp) cannot be checked: "
                                   "practical5/practical5_dp.py did not train to the end")],
    ids=["single only", "dp guessed"])
def test_the_table_is_not_complete_without_a_data_parallel_row_that_ran(tmp_path, table, said):
    """And says why the row is missing, and what to do (a TA's audit 27: "no row with method: dp"
    had not told the student that their DataParallel script never ran)."""
    with pytest.raises(AssertionError) as raised:
        run_check(_timing("complete"), DataParallelLeft(), tmp_path, values={"timing.table": table})
    text = str(raised.value)
    assert said in text and "no row with method" not in text, text
    if len(table) == 1:
        assert ("finish it, run it (pdl-grade run --gpus 2 practical5/practical5_dp.py), then add the row with "
                "the times it prints, e.g. - {method: dp, gpus: 2, step_time_s: ..., total_time_s: ...} "
                "(what stopped it: practical5/practical5_dp.py (2 GPU(s)) stopped with NotImplementedError") in text, text


class BothTrained(DataParallelLeft):
    def dp(self, gpus):
        return trained(gpus, True)


def test_a_row_missing_beside_a_script_that_trained_says_which_row_to_add(tmp_path):
    with pytest.raises(AssertionError) as raised:
        run_check(_timing("complete"), BothTrained(), tmp_path, values={"timing.table": [SINGLE_ROW]})
    text = str(raised.value)
    assert ("Observed: the DataParallel row (method: dp) is missing: practical5/practical5_dp.py trains, so add "
            "its row to timing.table's rows with the times it prints, e.g. "
            "- {method: dp, gpus: 2, step_time_s: ..., total_time_s: ...}") in text, text
    assert "Where to look: practical5/answers.yaml (timing.table)" in text


def test_a_single_gpu_row_that_disagrees_with_its_run_still_fails(tmp_path):
    row = dict(SINGLE_ROW, total_time_s=0.0001)   # less than 3 steps of 0.0019 s
    with pytest.raises(AssertionError, match="single: a total of 0.0001 s for 3 steps"):
        run_check(_timing("consistent"), BothTrained(), tmp_path, values={"timing.table": [row]})


@pytest.mark.parametrize("handout, table", [
    (NothingRan(), [SINGLE_ROW, GUESSED_DP_ROW]),      # no row's script ran
    (DataParallelLeft(), [GUESSED_DP_ROW]),            # only the row of the script that did not
])
def test_without_a_row_of_a_script_that_ran_the_table_waits_for_the_code(tmp_path, handout, table):
    with pytest.raises(AssertionError, match="your code did not run to the end"):
        run_check(_timing("consistent"), handout, tmp_path, values={"timing.table": table})


def test_answer_against_leaves_out_the_rows_of_scripts_that_did_not_run():
    table = [{"method": "Single GPU", "step_time_s": 0.0019, "total_time_s": 0.0213},
             {"method": "DataParallel", "step_time_s": 0.0011, "total_time_s": 0.0101}]
    answers = Answers("practical5", "sheet", values={"timing.table": table},
                      origin={"timing.table": "practical5/answers.yaml"})
    assert answer_against(answers, "timing.table", todo_left()) == table[:1]
    # Any other answer beside a run that did not run is not checked, as before.
    answers.values["memory.most_memory_gpu"] = 0
    with pytest.raises(AssertionError, match="your code did not run to the end"):
        answer_against(answers, "memory.most_memory_gpu", todo_left())
