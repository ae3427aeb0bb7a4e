"""Builders of pytest-json-report dicts in the exact layout pytest-json-report 1.5 writes
(checked against a real run in test_scoring_real_pytest.py)."""
from __future__ import annotations


def case(check: str, outcome: str = "passed", param: str | None = None,
         feedback: str | None = None, skip_reason: str = "needs 2 real GPUs",
         unread_answer: str | None = None) -> dict:
    """`unread_answer`: the answer a failure found but could not read (grader.pytest_plugin's
    mark of an AnswerNotRead)."""
    name = check.rsplit(".", 1)[-1]
    nodeid = f"grader/checks/test_{check.split('.')[0]}.py::test_{name}" + (f"[{param}]" if param else "")
    metadata = {"check": check, "assignment": check.split(".")[0]}
    if feedback:
        metadata["feedback"] = feedback
    if unread_answer:
        metadata["unread_answer"] = unread_answer
    test = {"nodeid": nodeid, "lineno": 1, "outcome": outcome, "metadata": metadata,
            "setup": {"duration": 0.001, "outcome": "passed"},
            "teardown": {"duration": 0.001, "outcome": "passed"}}
    if outcome == "passed":
        test["call"] = {"duration": 0.01, "outcome": "passed"}
    elif outcome == "failed":
        test["call"] = {"duration": 0.01, "outcome": "failed",
                        "crash": {"path": "x.py", "lineno": 3, "message": "AssertionError: raw"},
                        "longrepr": "E   AssertionError: raw"}
    elif outcome == "skipped":
        test["call"] = {"duration": 0.0, "outcome": "skipped",
                        "longrepr": f"('/x/checks.py', 12, 'Skipped: {skip_reason}')"}
    elif outcome == "error":
        test["setup"] = {"duration": 0.001, "outcome": "failed",
                         "crash": {"path": "conftest.py", "lineno": 9,
                                   "message": "RuntimeError: fixture crashed"},
                         "longrepr": "E   RuntimeError: fixture crashed"}
    return test


def cases(check: str, outcomes: list[str], **kwargs) -> list[dict]:
    return [case(check, outcome, param=str(i), **kwargs) for i, outcome in enumerate(outcomes)]


def report(*tests, exitcode: int = 0, collectors: list | None = None, marks: bool = True) -> dict:
    """`marks`: the structured marks grader.pytest_plugin names (`case_marks`); False gives a
    report as stored before them."""
    flat = []
    for t in tests:
        flat.extend(t if isinstance(t, list) else [t])
    data = {"created": 0.0, "duration": 1.0, "exitcode": exitcode, "root": "/grader",
            "environment": {}, "summary": {"total": len(flat)}, "tests": flat}
    if marks:
        data["case_marks"] = ["unread_answer"]
    if collectors is not None:
        data["collectors"] = collectors
    return data


def all_passing(rubric) -> list[dict]:
    return [case(check) for check in rubric.check_ids]


# A rubric with a check that needs real GPUs (no shipped practical has one any more: Practical
# 5's speed-up became an answer checked against the student's own runs).
REAL_GPU_RUBRIC = {"assignment": "p", "title": "t", "version": "1", "gpus": 2, "total_points": 12,
                   "items": [
                       {"id": "p.code", "title": "Code", "checks": [
                           {"check": "p.code.right", "points": 11}]},
                       {"id": "p.speedup", "title": "Speed-up on real GPUs", "checks": [
                           {"check": "p.speedup.real", "points": 1, "when_skipped": "exclude"}],
                        "feedback": {"skipped": "Speed-up can only be measured on real GPUs; "
                                                "this point was not counted."}}]}
