"""A check that errored in some of its cases only (outcome `error`: a fixture of the grader
crashed in setup or teardown; a student's failure is the check's verdict, `failed`) is no
verdict either: a grading problem naming the check and its cases, as a check whose every case
errored is. It had scored its errored cases 0 in silence, a grade with the grader's failure
in it."""
from grader.reports.not_graded import grading_problem_said
from grader.scoring import checks_not_run, grading_problems, parse_rubric, score_assignment
from grader.scoring.check_results import ERROR, cases_by_check
from scoring_reports import case, cases, report

RUBRIC = {"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
    {"id": "p.a", "title": "A", "checks": [
        {"check": "p.a.x", "points": 3, "partial": "proportional"},
        {"check": "p.a.hint", "points": 0, "partial": "proportional"}]},
    {"id": "p.b", "title": "B", "checks": [{"check": "p.b.x", "points": 2}]}]}


def scored(a_outcomes, overrides=None, hint=("passed",)):
    return score_assignment(parse_rubric(RUBRIC), report(
        cases("p.a.x", list(a_outcomes)), cases("p.a.hint", list(hint)), case("p.b.x")),
        overrides=overrides)


def test_a_check_errored_in_some_cases_is_a_grading_problem_naming_them():
    result = scored(["passed", "error", "passed", "error"])
    a = result.items[0]
    x = a.checks[0]
    assert (x.status, x.passed, x.errors, x.score) == ("error", 2, 2, 1.5), \
        "its score is kept for the record, its status says it is no verdict"
    assert a.status == "error" and result.status == "incomplete"
    assert result.grading_problems == [
        "p.a: check 'p.a.x' errored in 2 of 4 case(s) ([1], [3]): "
        "error in test setup: RuntimeError: fixture crashed"]
    stored = result.to_dict()
    assert grading_problems(stored) == result.grading_problems
    assert checks_not_run(stored) == ["p.a.x"]
    assert grading_problem_said(stored) == (
        "not graded: a grading problem (1 check(s) did not run: p.a.x) \u2014 run it again")
    assert "2 of 4 case(s) errored in the grader itself, not in your code" in x.feedback


def test_errored_beside_failed_cases_is_no_verdict_either():
    result = scored(["failed", "error", "failed"])
    assert result.items[0].checks[0].status == "error"
    assert result.grading_problems == [
        "p.a: check 'p.a.x' errored in 1 of 3 case(s) ([1]): "
        "error in test setup: RuntimeError: fixture crashed"]


def test_every_case_errored_is_said_as_before():
    result = scored(["error", "error"])
    assert result.grading_problems == [
        "p.a: check 'p.a.x' errored: error in test setup: RuntimeError: fixture crashed"]


def test_no_problem_where_a_person_set_the_item_or_the_check_is_worth_nothing():
    overridden = scored(["passed", "error"], overrides={"p.a": {"points": 3, "comment": "ok"}})
    assert overridden.grading_problems == [] and overridden.score == 5
    hint = scored(["passed", "passed"], hint=("passed", "error"))
    assert hint.grading_problems == [] and hint.score == 5


def test_only_a_fixture_s_failure_is_an_error_never_a_failed_test_body():
    # pytest-json-report's outcome "error" is a setup or teardown that raised; an exception in
    # the test body (what a check raises on the student's code) is "failed".
    body = {"nodeid": "t.py::test_x", "outcome": "failed", "metadata": {"check": "p.a.x"},
            "setup": {"outcome": "passed"},
            "call": {"outcome": "failed", "crash": {"message": "RuntimeError: student code"}}}
    setup = {"nodeid": "t.py::test_y", "outcome": "error", "metadata": {"check": "p.a.x"},
             "setup": {"outcome": "failed", "crash": {"message": "RuntimeError: harness"}}}
    found = cases_by_check({"tests": [body, setup]})["p.a.x"]
    assert [c.outcome for c in found] == ["failed", ERROR]
