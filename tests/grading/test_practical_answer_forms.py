"""The practicals' answer checks on answers written the ways a TA's audit found them (P4's
"32x1000 each", P5's split "4 x 13 + 12" and "?"): what the sheet reader leaves to the check
is compared, or said unread, never reported as a wrong value.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import functools

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical4 as p4
from grader.checks import test_practical5 as p5
from grader.checks.practical_answers import answer_against
from grader.checks.support import AnswerNotRead, must_agree
from grader.harness.observation import Observation
from tests.grading.test_practical4_one_gpu_message import OUT_ROWS, ROWS, forward
from tests.grading.test_practical5_non_solutions import SHEET, Handout, run_check


def chunks_run(split=32) -> Observation:
    events = forward(ROWS, OUT_ROWS) + forward(ROWS[:split], OUT_ROWS[:split]) \
        + forward(ROWS[split:], OUT_ROWS[split:])
    return Observation(p4.SCRIPT, gpus=2, returncode=0, events=events)


def p4_chunk_check(value, run):
    answers = Answers("practical4", "sheet", values={"part2.chunk_shapes": value},
                      origin={"part2.chunk_shapes": "practical4/answers.yaml"})
    flags = []

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, flags.append)
    p4.test_reported_chunk_shapes(two_gpus=run, answers=answers, agree=agree)
    return flags


def test_one_shape_for_each_chunk_is_every_chunk_s_shape():
    assert p4_chunk_check({"each": [32, 1000]}, chunks_run()) == []


def test_one_shape_for_each_chunk_is_wrong_where_a_chunk_has_another():
    with pytest.raises(AssertionError, match=r"you reported \[\[32, 1000\], \[32, 1000\]\]"):
        p4_chunk_check({"each": [32, 1000]}, chunks_run(split=40))
    with pytest.raises(AssertionError):
        p4_chunk_check({"each": [16, 1000]}, chunks_run())


def test_a_split_cell_it_cannot_read_is_said_unread_never_a_wrong_answer(tmp_path):
    """A TA's audit: "4 x 13 + 12" was "you reported 4 x 13 + 12 ... correct the answer" and
    flagged to the instructor as a disagreement."""
    values = dict(SHEET, **{"dp.split_per_gpu": [{"gpus": 5, "split": "4 x 13 + 12"}]})
    flags = []
    with pytest.raises(AssertionError) as raised:
        run_check(functools.partial(p5.test_reported_split_per_gpu, gpus=5), Handout(True),
                  tmp_path, values=values, flags=flags)
    text = str(raised.value)
    assert "your answer '4 x 13 + 12' for 5 GPUs could not be read as one batch size per GPU" in text, text
    assert "you reported" not in text and flags == [], (text, flags)
    # Held for a person (its points wait), never a plain failure scored 0 (adv51 F5).
    assert isinstance(raised.value, AnswerNotRead), (
        f"expected AnswerNotRead (pending), observed {type(raised.value).__name__}: see "
        "grader/checks/test_practical5.py test_reported_split_per_gpu")


def test_a_split_row_without_its_split_says_so(tmp_path):
    """The row for 3 GPUs was there, its split a placeholder ("?"): not "rows for [3] GPUs"."""
    values = dict(SHEET, **{"dp.split_per_gpu": [{"gpus": 3}]})
    with pytest.raises(AssertionError) as raised:
        run_check(functools.partial(p5.test_reported_split_per_gpu, gpus=3), Handout(True),
                  tmp_path, values=values)
    assert "Observed: the row for 3 GPUs has no split" in str(raised.value), str(raised.value)


def test_a_wrong_split_in_a_form_it_reads_is_still_a_wrong_answer(tmp_path):
    values = dict(SHEET, **{"dp.split_per_gpu": [{"gpus": 3, "split": [22, 21, 21]}]})
    flags = []
    with pytest.raises(AssertionError, match="you reported"):
        run_check(functools.partial(p5.test_reported_split_per_gpu, gpus=3), Handout(True),
                  tmp_path, values=values, flags=flags)
    assert flags, "a disagreement is flagged for the instructor"


def observed_line(answers, qid):
    with pytest.raises(AssertionError) as raised:
        answer_against(answers, qid, Observation("practical4/concepts.py", gpus=2, returncode=0))
    return next(line for line in str(raised.value).splitlines() if line.startswith("Observed: "))


def test_an_answer_it_cannot_read_is_quoted_as_unread_not_as_no_answer():
    answers = Answers("practical4", "sheet", missing=["part2.chunk_shapes"], unread=["part2.chunk_shapes"],
                      unread_why={"part2.chunk_shapes": "your answer '32x1000 twice' could not be read as a "
                                                        "list of lists such as [[32, 16], [32, 16]]"},
                      problems=["practical4/answers.yaml: part2.chunk_shapes: expected a list of lists such "
                                "as [[32, 16], [32, 16]], got '32x1000 twice'"])
    assert observed_line(answers, "part2.chunk_shapes") == (
        "Observed: your answer '32x1000 twice' could not be read as a list of lists such as [[32, 16], [32, 16]]")
    # Not written at all: "no answer found", as before.
    assert observed_line(Answers("practical4", "sheet"), "part2.chunk_shapes") == "Observed: no answer found"
