"""An answer sheet's answer that says the task was not done ("Not done", "N/A", "skipped",
"-") is an empty answer, as the HW3 report's is since 5b87894 (grader/answers/declined.py):
0, the student told what they wrote and where, nothing held for a person. Before, a sheet's
"Not done" under a number, a table or a yes/no was "found but could not be read" (its points
waited for a person), and under a written answer it was an answer (its Part counted done).

Words that answer a question are kept: "no" is a yes/no, "none" a written answer.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.answers.collect import collect_answers
from grader.checks import test_practical10 as p10
from grader.checks.practical_answers import answer_and_truth
from grader.checks.support import AnswerNotRead
from grader.reports.student_view import surely_unanswered

SHEET = "practical10/answers.yaml"
# Each kind of question the sheet has, said not done in the words students use.
SAID_NOT_DONE = {
    "hybrid.num_processes": "Not done",                         # int
    "hybrid.gpus_per_rank": "N/A",                              # int
    "micro.table": "Not done (I ran out of time)",              # table
    "batch.pattern_changes": "skipped",                         # bool
    "broken.gpus_in_use": "-",                                  # list[int]
    "single.rank1": "Not done",                                 # text
    "single.sync": "N/A",                                       # text
    "explanation": "I did not do this task",                    # text
}


def write_sheet(folder: Path, said: dict, assignment: str = "practical10") -> Path:
    template = yaml.safe_load((Path(__file__).resolve().parents[2] / "student_template" / assignment
                               / "answers.yaml").read_text())
    answers = {qid: {("rows" if spec["type"] == "table" else "value"): said.get(qid)}
               for qid, spec in template["answers"].items()}
    (folder / assignment).mkdir(parents=True, exist_ok=True)
    path = folder / assignment / "answers.yaml"
    path.write_text(yaml.safe_dump({"assignment": assignment, "answers": answers}))
    return path


def test_answers_said_not_done_in_the_sheet_are_empty_not_held_for_a_person(tmp_path):
    write_sheet(tmp_path, SAID_NOT_DONE)
    answers = collect_answers(tmp_path, "practical10", "sheet")
    assert sorted(answers.declined) == sorted(SAID_NOT_DONE), answers.declined
    assert not answers.unread and not answers.problems, (answers.unread, answers.problems)
    assert not answers.needs_manual_review
    assert not set(SAID_NOT_DONE) & set(answers.values), answers.values
    assert answers.declined["micro.table"] == {"file": SHEET, "said": "Not done (I ran out of time)"}
    # 0 pre-filled for the written ones, "no answer" for the rest: none waits as unread.
    assert set(SAID_NOT_DONE) <= surely_unanswered(answers.to_dict())


@pytest.mark.parametrize("qid", ["hybrid.num_processes", "hybrid.gpus_per_rank", "micro.table",
                                 "batch.pattern_changes", "broken.gpus_in_use"])
def test_a_check_on_an_answer_said_not_done_scores_0_and_says_what_was_written(tmp_path, qid):
    write_sheet(tmp_path, SAID_NOT_DONE)
    answers = collect_answers(tmp_path, "practical10", "sheet")
    with pytest.raises(AssertionError) as failure:
        answer_and_truth(answers, qid, 2)
    # A plain failure (0), not AnswerNotRead (its points waiting for a person).
    assert not isinstance(failure.value, AnswerNotRead)
    text = str(failure.value)
    told = (f"Observed: you wrote '{SAID_NOT_DONE[qid]}' ({SHEET}): an answer that says the task was "
            "not done is no answer, so it scores 0")
    assert told in text, text


def test_a_part_answered_only_not_done_is_not_done(tmp_path):
    """Part 4's two questions answered "Not done" / "N/A": the part's code point is not earned
    for it (a written "Not done" had counted as an answer)."""
    write_sheet(tmp_path, SAID_NOT_DONE)
    answers = collect_answers(tmp_path, "practical10", "sheet")
    with pytest.raises(AssertionError, match="no answer found to Part 4's questions"):
        p10.part_done(answers, 4, "expected")


def test_no_and_none_stay_answers(tmp_path):
    write_sheet(tmp_path, {"batch.pattern_changes": "no", "single.sync": "none", "single.rank1": "No.",
                           "broken.output_changes": "Not done in parallel: each rank's stages share one GPU"})
    answers = collect_answers(tmp_path, "practical10", "sheet")
    assert answers.values["batch.pattern_changes"] is False
    assert answers.values["single.sync"] == "none" and answers.values["single.rank1"] == "No."
    assert answers.values["broken.output_changes"].startswith("Not done in parallel")
    assert not answers.declined and not answers.unread


def test_the_report_answers_and_the_sheets_not_done_does_not_hide_it(tmp_path):
    """HW3 reads the report first: the sheet's "Not done" only says so where nothing else
    answers; with no report handed in, it is the sheet's."""
    write_sheet(tmp_path, {"task5.transfers_2gpus": "Not done", "task5.explanation": "N/A"}, "hw3")
    answers = collect_answers(tmp_path, "hw3", "pdf_then_sheet")
    assert answers.declined == {"task5.transfers_2gpus": {"file": "hw3/answers.yaml", "said": "Not done"},
                                "task5.explanation": {"file": "hw3/answers.yaml", "said": "N/A"}}
    assert not answers.unread
