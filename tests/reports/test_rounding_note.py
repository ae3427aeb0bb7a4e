"""The tasks' points and the total are each rounded once from the exact points (grader/scoring/
score.py): where the tasks as shown do not add up to the total as shown, the report says why."""
import html

from grader.reports.render import render_html, render_markdown
from grader.scoring import build_result, parse_rubric, score_assignment
from tests.scoring.scoring_reports import case, cases, report

THIRDS = {"assignment": "p", "title": "Thirds", "version": "1", "gpus": 1, "items": [
    {"id": f"p.{name}", "title": f"Task {name}", "checks": [
        {"check": f"p.{name}.x", "points": 1, "partial": "proportional"}]} for name in "ab"] + [
    {"id": "p.c", "title": "Task c", "checks": [{"check": "p.c.x", "points": 8}]}]}


def scored(b_outcomes):
    assignment = score_assignment(parse_rubric(THIRDS), report(
        cases("p.a.x", ["passed", "failed", "failed"]), cases("p.b.x", b_outcomes), case("p.c.x")))
    return build_result("alice", [assignment])


def test_tasks_that_do_not_add_up_to_the_total_are_explained():
    result = scored(["passed", "failed", "failed"])   # 1/3 + 1/3 + 8: 0.33, 0.33, total 8.67
    text = render_markdown(result)
    assert "| **total** | graded | **8.67 / 10** |" in text
    said = ("Each task's points are rounded to 2 decimals, and so is the total, from the exact "
            "points: the tasks as shown add up to 8.66, the total is 8.67.")
    assert said in text and said in html.unescape(render_html(result))


def test_tasks_that_add_up_say_nothing_of_rounding():
    result = scored(["passed", "passed", "failed"])   # 1/3 + 2/3 + 8: 0.33, 0.67, total 9
    assert "rounded to 2 decimals" not in render_markdown(result) + render_html(result)
