"""HW3 handed in as report.pdf and answers.yaml together (`pdf_then_sheet`), written answers
(a TA's audit, audit 26, hw3_dict_mixed): the PDF's Task 4 and 5 explanations said only "See
answers.yaml.", the real ones were in the sheet, and instructor.md showed only "See
answers.yaml." (a TA would have given 0 for 1.5 points the student wrote).

- A written answer that only points to the other file is no answer there: the other file's is
  graded, and where the other file has none, a problem says so.
- Where both files hold written answers in different words, the report's stays first and the
  sheet's is kept beside it (`also`), and instructor.md shows both
  (tests/reports/test_instructor_written_answers_in_two_files.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bad_pdfs import REPORT_LINES
from grader.answers.collect import collect_answers, points_elsewhere
from tiny_pdf import write_text_pdf

REPORT_TASK4 = "Memory per GPU falls, time barely changes."
SHEET_TASK4 = "Only the GPU holding the current layer works; the others wait, so 5 GPUs are no faster."


def _submission(tmp_path: Path, task4_in_report: str, sheet: dict) -> Path:
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    lines = [task4_in_report if line == REPORT_TASK4 else line for line in REPORT_LINES]
    write_text_pdf(folder / "report.pdf", [lines])
    (folder / "answers.yaml").write_text(yaml.safe_dump({"assignment": "hw3", "answers": sheet}))
    return tmp_path / "sub"


@pytest.mark.parametrize("pointer", ["See answers.yaml.", "(see hw3/answers.yaml)", "Answered in the answer sheet.",
                                     "Refer to answers.yaml for this explanation."])
def test_a_report_answer_that_only_points_to_the_sheet_is_no_answer(tmp_path, pointer):
    assert points_elsewhere(pointer)
    answers = collect_answers(_submission(tmp_path, pointer, {"task4.explanation": {"value": SHEET_TASK4}}),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task4.explanation"] == SHEET_TASK4
    assert answers.origin["task4.explanation"] == "hw3/answers.yaml"
    assert "task4.explanation" not in answers.also and "task4.explanation" not in answers.where


def test_a_pointer_to_a_file_without_the_answer_is_not_answered_and_said(tmp_path):
    answers = collect_answers(_submission(tmp_path, "See answers.yaml.", {}), "hw3", "pdf_then_sheet")
    assert "task4.explanation" in answers.missing and "task4.explanation" not in answers.unread
    assert any(p.startswith("task4.explanation: answered only 'See answers.yaml.'") for p in answers.problems), \
        answers.problems


def test_a_sheet_answer_that_points_to_the_report_leaves_the_reports(tmp_path):
    answers = collect_answers(_submission(tmp_path, REPORT_TASK4, {"task4.explanation": {"value": "See report.pdf"}}),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task4.explanation"] == REPORT_TASK4
    assert answers.also == {} and not any("task4.explanation" in p for p in answers.problems)


@pytest.mark.parametrize("text", ["See above.", "See answers.yaml: the GPUs take turns.", "answers.yaml",
                                  "The GPUs take turns; see the answer sheet for the numbers."])
def test_an_answer_that_says_more_than_where_is_an_answer(text):
    assert not points_elsewhere(text)


def test_two_written_answers_in_other_words_are_both_kept(tmp_path):
    answers = collect_answers(_submission(tmp_path, REPORT_TASK4, {"task4.explanation": {"value": SHEET_TASK4}}),
                              "hw3", "pdf_then_sheet")
    assert answers.values["task4.explanation"] == REPORT_TASK4
    assert answers.origin["task4.explanation"].startswith("hw3/report.pdf")
    assert answers.also["task4.explanation"] == {"file": "hw3/answers.yaml", "text": SHEET_TASK4}
    assert not any("task4.explanation" in p for p in answers.problems), answers.problems   # shown, not a problem
    # The same words (case and spacing aside) are one answer.
    (tmp_path / "b").mkdir()
    same = collect_answers(_submission(tmp_path / "b", REPORT_TASK4,
                                       {"task4.explanation": {"value": "memory per GPU falls,  time barely changes."}}),
                           "hw3", "pdf_then_sheet")
    assert same.also == {}


def test_a_report_in_another_format_and_the_sheet_keep_both_written_answers(tmp_path):
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    (folder / "report.md").write_text("\n\n".join(l for l in REPORT_LINES if "\t" not in l) + "\n")
    (folder / "answers.yaml").write_text(yaml.safe_dump(
        {"assignment": "hw3", "answers": {"task4.explanation": {"value": SHEET_TASK4}}}))
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    assert answers.values["task4.explanation"] == SHEET_TASK4   # the sheet first, as before
    assert answers.origin["task4.explanation"] == "hw3/answers.yaml"
    assert answers.also["task4.explanation"]["file"] == "hw3/report.md"
    assert REPORT_TASK4 in answers.also["task4.explanation"]["text"]

