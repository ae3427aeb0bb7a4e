"""Grade planted-bug submissions end to end: each bug loses exactly the points it deserves.

Every planted bug (tests/fixtures/planted_bugs.py) is the reference with one realistic student
mistake. Its whole assignment is graded (python API of `pdl-grade grade`, virtual GPUs), so the
test shows both that the bug's checks fail and that nothing else loses a point. Controls: the
reference gets every point; the untouched template gets no automatic point, and every failing
item tells the student about the TODO.

Slow: one grading per bug (practical 6 ~40 s, practical 10 ~60 s on 2 cores). HW3's
submissions are graded by test_hw3_matrix.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.fixtures import planted_bugs as pb

from grader.grading import grade_submission
from grader.scoring import default_rubrics_dir, load_rubric

pytestmark = pytest.mark.slow

REFERENCE, TEMPLATE = "reference", "student_template"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """name -> result dict; each submission is planted and graded once per module."""
    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            base = tmp_path_factory.mktemp(f"graded-{name}")
            if name == REFERENCE:
                submission = pb.copy_tree(pb.REFERENCE, base / "submission")
                assignments = pb.CONTROL_ASSIGNMENTS
            elif name == TEMPLATE:
                submission = pb.copy_tree(pb.TEMPLATE, base / "submission")
                assignments = pb.CONTROL_ASSIGNMENTS
            else:
                bug = pb.BY_NAME[name]
                submission = pb.plant(bug, base / "submission")
                assignments = bug.assignments
            cache[name] = grade_submission(submission, base / "out", assignments)
        return cache[name]

    return get


def rubric_points(assignment: str) -> dict[str, float]:
    rubric = load_rubric(default_rubrics_dir() / f"{assignment}.yaml")
    return {item.id: float(item.points) for item in rubric.items if item.kind == "auto"}


def auto_items(result: dict):
    for assignment in result["assignments"]:
        for item in assignment["items"]:
            if item["kind"] == "auto":
                yield assignment, item


def describe(name: str, item: dict, expected: float) -> str:
    return (f"[{name}] {item['id']}: expected {expected:g} point(s), observed {item['score']:g} "
            f"of {item['max_score']:g} ({item['status']})\n--- feedback ---\n{item['feedback']}")


def assert_graded_cleanly(name: str, result: dict, assignments: list[str]) -> None:
    assert [a["id"] for a in result["assignments"]] == assignments, (
        f"[{name}] graded {[a['id'] for a in result['assignments']]}, expected {assignments}")
    assert not result["errors"], f"[{name}] grading errors: {result['errors']}"
    for assignment in result["assignments"]:
        assert assignment["status"] == "graded" and not assignment["errors"], (
            f"[{name}] {assignment['id']} status {assignment['status']}: {assignment['errors']}")


def score_mismatches(name: str, result: dict,
                     expected: dict[str, float]) -> list[tuple[str, str]]:
    """(item id, description) of every automatic item whose score is not the expected one
    (`expected`, else the item's full points)."""
    wrong = []
    for _, item in auto_items(result):
        want = expected.get(item["id"], item["points"])
        if item["score"] != pytest.approx(want, abs=0.005):
            wrong.append((item["id"], describe(name, item, want)))
    return wrong


# -- controls ------------------------------------------------------------------------------------
def test_reference_gets_every_point(graded):
    result = graded(REFERENCE)
    assert_graded_cleanly(REFERENCE, result, pb.CONTROL_ASSIGNMENTS)
    wrong = score_mismatches(REFERENCE, result, {})
    assert not wrong, "\n\n".join(text for _, text in wrong)
    for assignment in result["assignments"]:
        assert assignment["score"] == assignment["max_score"] == assignment["rubric_max_score"], (
            f"[reference] {assignment['id']}: {assignment['score']} of {assignment['max_score']} "
            f"(rubric {assignment['rubric_max_score']})")


def test_template_gets_no_automatic_point_and_points_at_the_todos(graded):
    result = graded(TEMPLATE)
    assert_graded_cleanly(TEMPLATE, result, pb.CONTROL_ASSIGNMENTS)
    items = list(auto_items(result))
    wrong = score_mismatches(TEMPLATE, result, {item["id"]: 0.0 for _, item in items})
    assert not wrong, "\n\n".join(text for _, text in wrong)
    # Each failing check (hence each failing item) tells the student a TODO is still open.
    silent = [f"[{TEMPLATE}] {item['id']} / {check['id']}: its feedback never mentions the "
              f"TODO\n--- feedback ---\n{check['feedback']}"
              for _, item in items for check in item["checks"]
              if check["status"] != "passed" and "TODO" not in check["feedback"]]
    assert not silent, "\n\n".join(silent)
    assert all(item["status"] == "failed" for _, item in items), [
        (item["id"], item["status"]) for _, item in items if item["status"] != "failed"]


# -- planted bugs --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [bug.name for bug in pb.BUGS])
def test_bug_loses_exactly_its_points(graded, name):
    bug = pb.BY_NAME[name]
    result = graded(name)
    assert_graded_cleanly(name, result, bug.assignments)
    unknown = set(bug.expected) - set(rubric_points(bug.assignment))
    assert not unknown, f"[{name}] expected scores for items the rubric lacks: {sorted(unknown)}"
    wrong = dict(score_mismatches(name, result, bug.expected))
    others = [text for item_id, text in wrong.items() if item_id not in bug.grader_bugs]
    assert not others, f"[{name}] {bug.description}\n\n" + "\n\n".join(others)
    fixed = sorted(set(bug.grader_bugs) - set(wrong))
    assert not fixed, (f"[{name}] {fixed} now get the deserved score: the grader bug is fixed, "
                       f"drop these entries from grader_bugs")
    if wrong:
        pytest.xfail(f"[{name}] known grader bug: " + " | ".join(
            f"{text.splitlines()[0]}: {bug.grader_bugs[item_id]}"
            for item_id, text in wrong.items()))


@pytest.mark.parametrize("name", [bug.name for bug in pb.BUGS])
def test_bug_fails_its_own_checks_and_says_why(graded, name):
    bug = pb.BY_NAME[name]
    result = graded(name)
    checks = {check["id"]: (item, check) for _, item in auto_items(result)
              for check in item["checks"]}
    losing = {cid for cid, (_, check) in checks.items() if check["score"] < check["max_score"]}
    assert losing == set(bug.failing), (
        f"[{name}] checks that lost points: {sorted(losing)}; expected {sorted(bug.failing)}\n"
        + "\n\n".join(f"--- {cid} ---\n{checks[cid][1]['feedback']}"
                      for cid in sorted(losing ^ set(bug.failing)) if cid in checks))
    for cid, phrases in bug.failing.items():
        item, check = checks[cid]
        assert check["failed"] + check["errors"] > 0, f"[{name}] {cid}: no case failed"
        missing = [p for p in phrases if p not in check["feedback"]]
        assert not missing, (
            f"[{name}] {item['id']} / {cid}: the feedback lacks {missing}\n"
            f"--- feedback ---\n{check['feedback']}")
        assert check["feedback"] in item["feedback"], (
            f"[{name}] {item['id']}: the item's feedback leaves out {cid}'s part\n"
            f"--- item feedback ---\n{item['feedback']}")
