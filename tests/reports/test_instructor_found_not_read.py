"""instructor.md for an answer found but not read: its check's points wait for the instructor
(grader/scoring/score.py), so the overrides block lists the item uncommented with points: null
(pasted unfilled, it keeps waiting), and the list of what the grader cannot read says the
points wait, not "scored 0" (audit 26)."""
from __future__ import annotations

import yaml

from grader.answers.collect import Answers
from grader.answers.sheet import template_questions
from grader.reports.instructor import render_instructor_markdown
from grader.scoring import build_result, load_rubrics, score_assignment
from tests.scoring.scoring_reports import case, report

QID = "task1.layers_per_gpu"


def _result() -> dict:
    rubric = load_rubrics()["hw3"]
    questions = {qid: q.text for qid, q in template_questions("hw3").items()}
    answers = Answers("hw3", "pdf_then_sheet", missing=[QID], unread=[QID], questions=questions,
                      problems=["'Layers per GPU (DEPTH=6, 2 GPUs)' is answered 'GPU 0 gets 3 layers, GPU 1 gets', "
                                "which could not be read as a list of whole numbers: a person must read it"])
    message = f"Expected: an answer to: {questions[QID]}\nObserved: 'GPU 0 gets 3 layers, GPU 1 gets'"
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task1.layers_reported"]
    tests.append(case("hw3.task1.layers_reported", "failed", feedback=message, unread_answer=QID))
    tests[0]["metadata"]["answers"] = answers.to_dict()
    scored = score_assignment(rubric, report(tests)).to_dict()
    scored["answers"] = answers.to_dict()
    return build_result("hw3_dict_mixed", [scored])


def test_the_instructor_sets_the_points_that_wait(tmp_path):
    md = render_instructor_markdown(_result(), load_rubrics())
    assert "answers the grader found but could not read worth 1, of the 15 points wait for a person" in md
    assert "so scored 0" not in md
    assert ("the points of `hw3.task1` that its checks could not give for them wait for you, not in the total "
            "until you set the item's points in the overrides block at the end: `task1.layers_per_gpu`.") in md
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert "hw3.task1: {points: null, comment: \"\"}  # automatic: " in block
    assert yaml.safe_load(block)["hw3.task1"] == {"points": None, "comment": ""}
