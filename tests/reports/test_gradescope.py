"""Gradescope results.json, checked field by field against the documented format
(/work/shared/notes/grading-anchors.md, "Gradescope results.json")."""
from __future__ import annotations

import json
import re

import pytest

from tests.support.report_fixtures import REFERENCE, ROUND_ROBIN, TEMPLATE, find_item
from grader.reports import gradescope_results

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
TOP_KEYS = {"score", "execution_time", "output", "output_format", "visibility",
            "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "number", "output", "output_format",
             "tags", "visibility", "extra_data"}


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(results: dict) -> None:
    """Raise AssertionError naming the first field that breaks the format."""
    json.dumps(results, allow_nan=False)            # plain JSON, no NaN/Infinity
    assert set(results) <= TOP_KEYS, set(results) - TOP_KEYS
    assert is_number(results["score"])
    assert isinstance(results["execution_time"], int) and results["execution_time"] >= 0
    assert isinstance(results["output"], str)
    assert results["output_format"] in FORMATS
    assert results["visibility"] in VISIBILITIES
    assert results["stdout_visibility"] in VISIBILITIES
    assert isinstance(results["extra_data"], dict)
    assert isinstance(results["tests"], list)
    numbers = []
    for test in results["tests"]:
        where = test.get("number")
        assert set(test) == TEST_KEYS, (where, set(test) ^ TEST_KEYS)
        assert is_number(test["score"]) and is_number(test["max_score"]), where
        assert test["max_score"] >= 0, where
        assert test["status"] in ("passed", "failed"), where
        if test["status"] == "passed":
            assert test["score"] >= test["max_score"], where
        assert isinstance(test["name"], str) and test["name"], where
        assert re.fullmatch(r"\d+\.\d+", test["number"]), where
        assert isinstance(test["output"], str), where
        assert test["output_format"] in FORMATS, where
        assert isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])
        assert test["visibility"] in VISIBILITIES, where
        assert isinstance(test["extra_data"], dict), where
        numbers.append(test["number"])
    assert len(numbers) == len(set(numbers)), "test numbers repeat"
    assert round(sum(t["score"] for t in results["tests"]), 2) == results["score"]
    for entry in results.get("leaderboard", []):
        assert set(entry) == {"name", "value", "order"}
        assert isinstance(entry["name"], str) and is_number(entry["value"])
        assert entry["order"] in ("asc", "desc")


@pytest.mark.parametrize("name", [REFERENCE, TEMPLATE, ROUND_ROBIN])
def test_every_fixture_gives_valid_results(result, name):
    data = result(name)
    results = gradescope_results(data)
    validate(results)
    assert results["score"] == data["score"]
    assert round(sum(t["max_score"] for t in results["tests"]), 2) == data["max_score"]
    assert results["visibility"] == "after_due_date" and results["stdout_visibility"] == "hidden"


def test_the_validator_catches_broken_results(result):
    good = gradescope_results(result(ROUND_ROBIN))
    for breakage in (lambda r: r["tests"][0].update(status="partial"),
                     lambda r: r.update(visibility="public"),
                     lambda r: r["tests"][0].update(number="one"),
                     lambda r: r.update(score=r["score"] + 1),
                     lambda r: r["tests"][1].update(score=float("nan"))):
        broken = json.loads(json.dumps(good))
        breakage(broken)
        with pytest.raises((AssertionError, ValueError)):
            validate(broken)


def test_tests_follow_the_rubric_items(result):
    results = gradescope_results(result(ROUND_ROBIN))
    by_name = {t["name"]: t for t in results["tests"]}
    task1 = by_name["[hw3] Task 1 - Split DEPTH=6 layers over 2 GPUs"]
    assert (task1["number"], task1["score"], task1["max_score"], task1["status"]) == ("1.1", 0, 3, "failed")
    assert "Observed: layer 0 on cuda:0, layer 1 on cuda:1" in task1["output"]
    assert task1["tags"] == ["hw3", "auto"]
    assert task1["extra_data"]["item_id"] == "hw3.task1"
    task3 = by_name["[hw3] Task 3 - Distribute the layers over any number of GPUs"]
    assert (task3["score"], task3["status"]) == (2, "failed")
    late = by_name["[hw3] Late penalty (2 days late)"]
    assert (late["score"], late["max_score"], late["status"]) == (-2.2, 0, "failed")
    skipped = by_name["[practical5] Speed-up on real GPUs"]
    assert (skipped["score"], skipped["max_score"], skipped["status"]) == (0, 0, "passed")
    assert "skipped because: needs 2 real GPU(s)" in skipped["output"]
    # Pending written answers are not tests (neither a free pass nor a failure) ...
    assert not any("written answer" in name for name in by_name)
    # ... the summary output names them.
    assert "Pending instructor grading: Task 2 - written answer" in results["output"]
    assert [t["number"] for t in results["tests"]][:6] == ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"]


def test_single_assignment_names_have_no_prefix(result):
    results = gradescope_results(result(TEMPLATE))
    assert results["tests"][0]["name"] == "Task 1 - Split DEPTH=6 layers over 2 GPUs"
    assert all(t["status"] == "failed" for t in results["tests"])
    assert "NotImplementedError at model_parallel.py:35" in results["tests"][0]["output"]


def test_instructor_scored_manual_item_becomes_a_test(result):
    data = result(ROUND_ROBIN)
    item = find_item(data, "hw3.task2.explanation")
    item.update(pending=False, score=0.0, max_score=0.0, feedback="Good: linear in DEPTH.")
    test = next(t for t in gradescope_results(data)["tests"]
                if t["extra_data"]["item_id"] == "hw3.task2.explanation")
    assert test["tags"] == ["hw3", "manual"] and "Good: linear in DEPTH." in test["output"]


def test_hidden_items_stay_hidden_and_the_total_says_so(result):
    data = result(ROUND_ROBIN)
    find_item(data, "hw3.task5")["hidden"] = True
    results = gradescope_results(data, visibility="visible")
    validate(results)
    hidden = [t for t in results["tests"] if t["visibility"] == "hidden"]
    assert [t["extra_data"]["item_id"] for t in hidden] == ["hw3.task5"]
    assert {t["visibility"] for t in results["tests"]} == {"hidden", "visible"}
    assert "1 test(s) worth 3 point(s) are hidden for now" in results["output"]


def test_visibility_arguments_are_checked(result):
    with pytest.raises(ValueError, match="visibility"):
        gradescope_results(result(REFERENCE), visibility="public")
    results = gradescope_results(result(REFERENCE), visibility="visible", stdout_visibility="after_published")
    assert (results["visibility"], results["stdout_visibility"]) == ("visible", "after_published")
    assert {t["visibility"] for t in results["tests"]} == {"visible"}


def test_leaderboard_is_optional_and_uses_the_hw3_step_time(result):
    assert "leaderboard" not in gradescope_results(result(REFERENCE))
    results = gradescope_results(result(REFERENCE), leaderboard=True)
    validate(results)
    assert results["leaderboard"] == [{"name": "HW3 step time, DEPTH=24 (ms)", "value": 78.784,
                                       "order": "asc"}]
    assert "leaderboard" not in gradescope_results(result(TEMPLATE), leaderboard=True)


def test_grading_errors_reach_the_output(result):
    data = result(REFERENCE)
    data["errors"] = ["rubrics/practical6.yaml: item 'x': points must be a number"]
    results = gradescope_results(data)
    validate(results)
    assert "rubrics/practical6.yaml: item 'x'" in results["output"]
    assert results["extra_data"]["errors"] == data["errors"]


def test_a_withheld_item_says_why_and_the_staff_comment_stays_out(result):
    data = result(REFERENCE)
    assignment = data["assignments"][0]
    assignment["integrity"] = {"problems": ["practical4/concepts.py:3 reaches into the grader: "
                                            "imports grader.vgpu.trace"], "withheld": True,
                               "withheld_points": 10.0, "cleared": False, "comment": "staff only"}
    item = assignment["items"][0]
    item.update(status="withheld", withheld_score=item["score"], score=0.0,
                feedback="Withheld for review by the course staff")
    results = gradescope_results(data)
    test = results["tests"][0]
    assert (test["status"], test["score"]) == ("failed", 0.0)
    assert "**Held for review** because of:" in test["output"]
    assert "imports grader.vgpu.trace" in test["output"]
    assert "staff only" not in json.dumps(results)
    assert "Held for review" not in results["tests"][1]["output"]


def test_an_item_the_instructor_regraded_is_not_shown_as_failed():
    """`practical4.part3: {points: 4}` over checks that all failed: report.md, report.html and
    Gradescope had still said "failed" beside 4 / 4; result.json said `overridden` only."""
    from tests.support.fake_graders import fake_report
    from grader.reports import render_html, render_markdown
    from grader.scoring import build_result, load_rubrics, score_assignment
    rubric = load_rubrics()["practical4"]
    scored = score_assignment(rubric, fake_report(rubric, passed=0),
                              overrides={"practical4.part3": {"points": 4, "comment": "by hand"}})
    result = build_result("dmitri", [scored])
    item = find_item(result, "practical4.part3")
    assert item["overridden"] and item["status"] == "failed", item   # the checks' own verdict
    md = render_markdown(result)
    row = next(line for line in md.splitlines() if line.startswith(f"| {item['title']} |"))
    assert row == f"| {item['title']} | set by the instructor | 4 / 4 |", (
        f"expected the summary row to show the instructor's grade; observed {row!r} "
        "(grader/reports/student_view.py item_view)")
    assert f"### {item['title']}: 4 / 4 (set by the instructor)" in md
    html = render_html(result)
    heading = html.split(f'id="{item["id"]}"')[1].split("</h3>")[0]
    assert '<span class="status status-overridden">set by the instructor</span>' in heading, heading
    test = next(t for t in gradescope_results(result)["tests"] if t["name"] == item["title"])
    assert (test["status"], test["score"], test["max_score"]) == ("passed", 4.0, 4.0), test
    # Part 2 was not overridden: still failed everywhere.
    other = next(t for t in gradescope_results(result)["tests"]
                 if t["extra_data"]["item_id"] == "practical4.part2")
    assert other["status"] == "failed", other


# -- points that wait for the course staff ------------------------------------------------------
def _waiting_result() -> dict:
    """p.sheet: one answer found but not read, the rest passed; p.table: one check, its only
    case on an answer found but not read; p.mixed: one case lost, one waiting."""
    from grader.scoring import build_result, parse_rubric, score_assignment
    from tests.scoring.scoring_reports import case, report
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 2, "total_points": 6, "items": [
        {"id": "p.sheet", "title": "Answer sheet", "checks": [
            {"check": "p.sheet.a", "points": 1}, {"check": "p.sheet.b", "points": 1}]},
        {"id": "p.table", "title": "The usage table", "checks": [{"check": "p.table.rows", "points": 1}]},
        {"id": "p.mixed", "title": "Facts", "checks": [
            {"check": "p.mixed.rows", "points": 2, "partial": "proportional"},
            {"check": "p.mixed.c", "points": 1}]}]})
    unread = "Expected: an answer to: the table?\nObserved: 1350 characters of text, not read"
    tests = [case("p.sheet.a"), case("p.sheet.b", "failed", feedback=unread, unread_answer="usage.table"),
             case("p.table.rows", "failed", feedback=unread, unread_answer="usage.table"),
             case("p.mixed.rows", "failed", param="0", feedback="Expected: 7\nObserved: 9"),
             case("p.mixed.rows", "failed", param="1", feedback=unread, unread_answer="usage.table"),
             case("p.mixed.c")]
    tests[0]["metadata"]["answers"] = {"unread": ["usage.table"], "questions": {"usage.table": "the table?"}}
    return build_result("s", [score_assignment(rubric, report(tests))])


def test_points_that_wait_for_the_course_staff_are_no_failure():
    """An answer found but not read had been exported as a failed test: a student reads "you got
    this wrong" beside an answer nobody has read yet (a TA's audit)."""
    result = _waiting_result()
    results = gradescope_results(result)
    validate(results)
    tests = {t["extra_data"]["item_id"]: t for t in results["tests"]}
    # Everything decided passed: passed, over the decided points; the name says what waits.
    sheet = tests["p.sheet"]
    assert (sheet["status"], sheet["score"], sheet["max_score"]) == ("passed", 1.0, 1.0), sheet
    assert sheet["name"] == "Answer sheet (1 point(s) wait for the course staff)", sheet["name"]
    assert sheet["output"].startswith("**Waits for the course staff:** 1 of this item's 2 point(s)"), sheet["output"]
    # A loss beside a wait: failed, over the decided points only.
    mixed = tests["p.mixed"]
    assert (mixed["status"], mixed["score"], mixed["max_score"]) == ("failed", 1.0, 2.0), mixed
    assert "wait for the course staff" in mixed["name"]
    # All of it waits: no test (as a written answer waiting is none), listed in the output.
    assert "p.table" not in tests
    assert "Waiting for the course staff" in results["output"]
    assert "- The usage table: 1 point(s)" in results["output"], results["output"]
    assert results["score"] == result["score"] == 2.0


def test_an_override_of_an_item_that_waited_is_the_staffs_grade():
    result = _waiting_result()
    find_item(result, "p.sheet").update(score=2.0, pending_points=0.0, overridden=True)
    test = next(t for t in gradescope_results(result)["tests"]
                if t["extra_data"]["item_id"] == "p.sheet")
    assert (test["name"], test["status"], test["max_score"]) == ("Answer sheet", "passed", 2.0), test


def test_an_assignment_the_grader_failed_to_grade_has_no_tests_and_no_points(result):
    """A TA's audit 28: a grader error was published as the student's 0. In Gradescope the
    assignment's items had stayed tests, and its partial score in the total."""
    data = result(REFERENCE)
    assignment = data["assignments"][0]
    assignment["grading_problems"] = ["practical4.part2: check 'practical4.chunk_shapes' did not run"]
    whole = gradescope_results(result(REFERENCE))
    results = gradescope_results(data)
    validate(results)
    assert len(results["tests"]) == len(whole["tests"]) - len(
        [i for i in assignment["items"] if not i.get("pending")]), results["tests"]
    assert results["score"] == pytest.approx(whole["score"] - assignment["score"])
    assert "**Not graded: a grading problem**" in results["output"]
    assert "check 'practical4.chunk_shapes' did not run" in results["output"]
