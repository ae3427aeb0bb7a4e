"""instructor.md shows both written answers where a report and the answer sheet both give one
in other words (grader/answers/collect.py keeps the other in `answers.also`): a TA reading
only the report's "See answers.yaml." had given 0 for explanations in the sheet (audit 26)."""
from __future__ import annotations

import copy

from grader.reports.instructor import render_instructor_markdown
from grader.scoring import load_rubrics
from tests.support.report_fixtures import ROUND_ROBIN, find_item

REPORT_TASK4 = "Memory per GPU falls, time barely changes."
SHEET_TASK4 = "Only the GPU holding the current layer works; the others wait, so 5 GPUs are no faster."


def test_instructor_md_shows_both_written_answers(result):
    data = copy.deepcopy(result(ROUND_ROBIN))
    item = find_item(data, "hw3.task4.explanation")
    item["answer"] = "task4.explanation"
    answers = data["assignments"][0]["answers"]
    answers["values"]["task4.explanation"] = REPORT_TASK4
    answers["origin"]["task4.explanation"] = "hw3/report.pdf, page 3, under 'Task 4 explanation'"
    answers["also"] = {"task4.explanation": {"file": "hw3/answers.yaml", "text": SHEET_TASK4}}
    md = render_instructor_markdown(data, load_rubrics())
    task4 = md[md.index("### Task 4 - written answer"):]
    task4 = task4[:task4.index("\n### ")]
    assert REPORT_TASK4 in task4 and SHEET_TASK4 in task4
    assert "**Also answered, in other words,** in hw3/answers.yaml" in task4
