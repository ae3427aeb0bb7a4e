"""An answer that says the task was not done ("Not done", "N/A", "-", "skipped", "did not do")
is an empty answer: 0, the student told what they wrote, and the overrides skeleton pre-fills
0 for a written one, as for an answer never handed in (a TA's audit 30, D4: a report's "Not
done" under Tasks 4 and 5 held 4.5 points as "found but could not read", told the student its
answers might be in a structure of its own, and listed it under "Reports that need a person").

Words that answer a question are kept: "none" may be a count, "no" a yes/no, and a sentence
that starts like "Not done" but goes on about the task is read as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers
from grader.answers.declined import says_not_done
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.checks.support import not_found
from grader.reports.student_view import surely_unanswered
from tiny_pdf import write_text_pdf

TASK4 = ["task4.table", "task4.all_gpus_utilised", "task4.more_gpus_faster", "task4.explanation"]
TASK5 = ["task5.to_calls_2gpus", "task5.transfers_2gpus", "task5.to_calls_5gpus", "task5.transfers_5gpus",
         "task5.transfers_grow_with_gpus", "task5.explanation"]


@pytest.mark.parametrize("text", [
    "Not done", "Not done.", "Not done (I ran out of time before the deadline).", "N/A", "n/a", "-", "\u2014",
    "Skipped.", "did not do", "I did not do this task (no time).", "Didn't do it", "not attempted", "Not done yet",
    "Not done because I ran out of time", "not done - no time"])
def test_words_of_not_doing_are_no_answer(text):
    assert says_not_done(text)


@pytest.mark.parametrize("text", [
    "none", "no", "0", "No.", "nothing", "4", "not faster",
    # Sentences that start alike and go on about the task: answers, read as written.
    "Not done in parallel: the GPUs take turns", "Not done in parallel, they run one after another",
    "Skipped layers are on GPU 1", "N/A, only 2 GPUs", "Not done: I had no 5 GPUs", "did not do the 5 GPU run"])
def test_answers_that_look_alike_are_kept(text):
    assert not says_not_done(text)


def _until(heading: str) -> list[str]:
    return REPORT_LINES[:REPORT_LINES.index(heading)]


# The audit's report: the template's headings, Tasks 4 and 5 said not done under them.
TASKS_4_5_NOT_DONE = _until("Task 4") + ["Task 4: run with more GPUs", "Not done (I ran out of time before the deadline).",
                                         "Task 5: data transfer", "Not done."]


def _reading(tmp_path: Path, lines: list[str]):
    return reading_from_worker_output(extract(str(write_text_pdf(tmp_path / "report.pdf", [lines])), 50))


def test_tasks_said_not_done_under_their_headings_are_empty_answers_not_a_structure_of_its_own(tmp_path):
    reading = _reading(tmp_path, TASKS_4_5_NOT_DONE)
    assert not reading.own_structure, reading.problems
    assert not reading.unread and not reading.problems, (reading.unread, reading.problems)
    assert reading.status == "ok", "everything in the report was read: Tasks 4 and 5 say they were not done"
    assert sorted(reading.declined) == sorted(TASK4 + TASK5)
    assert reading.declined["task4.table"]["said"] == "Not done (I ran out of time before the deadline)."
    assert reading.declined["task5.explanation"]["where"] == "page 1, under 'Task 5: data transfer'"
    assert reading.answers["task1.layers_per_gpu"] == [3, 3] and "task3.explanation" in reading.answers


def test_a_task_said_not_done_is_graded_0_and_the_student_told_what_they_wrote(tmp_path):
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    write_text_pdf(folder / "report.pdf", [TASKS_4_5_NOT_DONE])
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    assert not answers.unread and not answers.needs_manual_review, (answers.unread, answers.problems)
    assert sorted(answers.declined) == sorted(TASK4 + TASK5)
    said = not_found(answers, "task5.transfers_2gpus")
    assert said.startswith("you wrote 'Not done.' (hw3/report.pdf, page 1, under 'Task 5: data transfer')"), said
    assert "scores 0" in said and "structure of its own" not in said
    # The written answers too are surely unanswered: 0 pre-filled in the overrides skeleton.
    assert {"task4.explanation", "task5.explanation"} <= surely_unanswered(answers.to_dict())


def test_labels_answered_not_done_are_empty_but_none_is_a_count(tmp_path):
    lines = _until("Number of transfers with 2 GPUs: 1") + [
        "Number of transfers with 2 GPUs: none",
        "Number of .to() calls with 5 GPUs: N/A",
        "Number of transfers with 5 GPUs: did not do",
        "Transfers grow with the number of GPUs (yes/no): skipped",
        "Task 5 explanation", "Skipped."]
    reading = _reading(tmp_path, lines)
    assert sorted(reading.declined) == ["task5.explanation", "task5.to_calls_5gpus", "task5.transfers_5gpus",
                                        "task5.transfers_grow_with_gpus"], reading.declined
    assert reading.declined["task5.to_calls_5gpus"]["said"] == "N/A"
    # "none" is a count: 0 transfers, read as such (wrong here, but an answer).
    assert reading.answers["task5.transfers_2gpus"] == 0 and not reading.unread, reading.unread
    assert reading.answers["task5.to_calls_2gpus"] == 6
    assert not any("N/A" in p or "skipped" in p for p in reading.problems), reading.problems


def test_an_explanation_that_starts_like_not_done_but_explains_is_read(tmp_path):
    at = REPORT_LINES.index("Memory per GPU falls, time barely changes.")
    lines = REPORT_LINES[:at] + ["Not done in parallel, they run one after another."] + REPORT_LINES[at + 1:]
    reading = _reading(tmp_path, lines)
    assert reading.answers["task4.explanation"] == "Not done in parallel, they run one after another."
    assert not reading.declined
