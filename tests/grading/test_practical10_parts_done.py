"""Practical 10's Parts 4 and 5 earn their code points where they were done (a TA's audit).

The handout's Parts 4 and 5 ask to run the script another way (one process; Part 5's line)
and say what is seen. The grader runs both itself, and a Part 1 loop that also runs there had
earned the item "The handout's Parts 4 and 5" for a student who skipped them (no answer to any
of their questions): a point for parts not done. A part counts where one of its questions is
answered (read, or written in words a person must read).
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical10 as p10
from tests.grading.test_practical10_non_solutions import Handout

PART4, PART5 = p10.PART_QUESTIONS[4], p10.PART_QUESTIONS[5]


def sheet(**values) -> Answers:
    return Answers("practical10", "sheet", values=dict(values),
                   origin={qid: "practical10/answers.yaml" for qid in values})


def test_part4_not_answered_earns_no_single_process_point():
    with pytest.raises(AssertionError) as raised:
        p10.test_single_process_runs(Handout("micro"), sheet(**{"hybrid.num_processes": 2}))
    text = str(raised.value)
    for phrase in ("Expected: torchrun --nproc_per_node=1",
                   "no answer found to Part 4's questions (single.rank1, single.sync)",
                   "the code alone does not show it was done",
                   "run Part 4 as the handout says and answer its questions in "
                   "practical10/answers.yaml (single.rank1)"):
        assert phrase in text, f"expected the feedback to say {phrase!r}; observed:\n{text}"


@pytest.mark.parametrize("part, questions", [(4, PART4), (5, PART5)])
def test_one_question_of_the_part_answered_counts_it_done(part, questions):
    for qid in questions:
        p10.part_done(sheet(**{qid: "an answer"}), part, "expected")


@pytest.mark.parametrize("part, questions", [(4, PART4), (5, PART5)])
def test_an_answer_written_in_words_a_person_reads_counts_it_done(part, questions):
    answers = sheet()
    answers.unread.append(questions[-1])
    p10.part_done(answers, part, "expected")


def test_part5_not_answered_is_said_for_part5():
    with pytest.raises(AssertionError, match=r"no answer found to Part 5's questions "
                                             r"\(broken.gpus_in_use, broken.output_changes\)"):
        p10.part_done(sheet(**{qid: "x" for qid in PART4}), 5, "expected")
