"""A written answer the report says was not done ("Not done."): the student is told what they
wrote and that it will be graded 0, and the overrides skeleton pre-fills 0 with it, even where
something else in the report waits for a person (a TA's audit 30, D4: it had waited as "found
but could not read")."""
from __future__ import annotations

import yaml

from tests.support.report_fixtures import ROUND_ROBIN, find_item
from grader.reports.instructor import render_instructor_markdown
from grader.reports.render import render_markdown
from grader.scoring import load_rubrics

SAID = {"file": "hw3/report.pdf", "said": "Not done.", "where": "page 2, under 'Task 5: data transfer'"}


def said_not_done(result: dict) -> dict:
    hw3 = result["assignments"][0]
    find_item(result, "hw3.task5.explanation")["answer"] = "task5.explanation"
    # Something else waits for a person: the report needs one all the same.
    hw3["answers"].update(missing=["task5.explanation"], unread=[], needs_manual_review=True,
                          declined={"task5.explanation": SAID})
    return result


def test_an_explanation_said_not_done_is_skeletoned_0_and_told_as_written(result):
    data = said_not_done(result(ROUND_ROBIN))
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert yaml.safe_load(block)["hw3.task5.explanation"] == {
        "points": 0, "comment": "no answer handed in: the report says 'Not done.'"}
    assert "Of these, the report says they were not done" in md and "`task5.explanation`: 'Not done.'" in md
    pending = next(line for line in render_markdown(data).splitlines() if line.startswith("Pending instructor"))
    assert "(you wrote 'Not done.': it will be graded 0)" in pending, pending


def test_without_it_the_answer_waits_for_a_person(result):
    data = said_not_done(result(ROUND_ROBIN))
    data["assignments"][0]["answers"]["declined"] = {}
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert yaml.safe_load(block)["hw3.task5.explanation"]["points"] is None


def test_said_not_done_in_the_answer_sheet_is_told_as_the_sheets(result):
    """An answer sheet's "Not done" (grader/answers/sheet.py) is told as the sheet's, not the
    report's: the file is named, and the skeleton's comment says where it was written."""
    data = said_not_done(result(ROUND_ROBIN))
    data["assignments"][0]["answers"]["declined"] = {
        "task5.explanation": {"file": "hw3/answers.yaml", "said": "Not done"}}
    md = render_instructor_markdown(data, load_rubrics())
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert yaml.safe_load(block)["hw3.task5.explanation"] == {
        "points": 0, "comment": "no answer handed in: the answer sheet says 'Not done'"}
    assert "Of these, the answer sheet says they were not done" in md, md
    assert "`task5.explanation`: 'Not done' (hw3/answers.yaml)." in md, md
    assert "No answer to `task5.explanation`: the answer sheet says 'Not done' (an empty answer: 0)." in md, md
    report = render_markdown(data)
    pending = next(line for line in report.splitlines() if line.startswith("Pending instructor"))
    assert "(you wrote 'Not done': it will be graded 0)" in pending, pending
    assert "- task5.explanation (you wrote 'Not done')" in report, report
