"""The student's loop before handing in (`pdl-grade check`, `pytest grader/`) says an answer
disagrees with the code without saying what the code does; the course's grading says both. A
student's audit: the loop had printed the provided code's facts (Task 1) and the counts
(Task 5) on the untouched template, answers then copied from the feedback."""
from __future__ import annotations

import types

import pytest

from grader.checks.support import HIDE_ANSWERS_ENV, disagrees
from grader.checks.test_hw3 import counts_said

ANSWERS = types.SimpleNamespace(origin={"task5.to_calls_2gpus": "hw3/answers.yaml"})


def feedback() -> str:
    return disagrees(ANSWERS, "task5.to_calls_2gpus", "20", "makes 20 .to() calls", 19)


def test_the_graded_report_says_what_the_code_does(monkeypatch):
    monkeypatch.setenv(HIDE_ANSWERS_ENV, "0")
    assert "makes 20 .to() calls" in feedback() and ": 20" in feedback()
    assert "'to() calls: 20, real transfers: 1'" in counts_said([(20, 1)], 2)


def test_the_students_loop_says_only_that_it_disagrees(monkeypatch):
    monkeypatch.setenv(HIDE_ANSWERS_ENV, "1")
    said = feedback()
    assert "20" not in said, said
    assert "you reported 19 (hw3/answers.yaml); your code does otherwise" in said, said
    assert "20" not in counts_said([(20, 1)], 2) and "1'" not in counts_said([(20, 1)], 2)


def test_pytest_grader_is_the_students_loop_and_the_grading_is_not(monkeypatch, tmp_path):
    """The checks' conftest makes a student's own `pytest grader/` hide them; the course's
    grading hands its checks process "0" whatever it was started with, `check` "1"."""
    import subprocess
    from grader.grading import run
    seen = {}

    def fake_run(command, **kwargs):
        seen["env"] = kwargs["env"]
        raise subprocess.TimeoutExpired(command, 1)
    monkeypatch.setattr(run.subprocess, "run", fake_run)
    monkeypatch.delenv(HIDE_ANSWERS_ENV, raising=False)
    run.run_checks("practical4", tmp_path, tmp_path, 1.0)
    assert seen["env"][HIDE_ANSWERS_ENV] == "0"
    monkeypatch.setenv(HIDE_ANSWERS_ENV, "1")
    run.run_checks("practical4", tmp_path, tmp_path, 1.0)
    assert seen["env"][HIDE_ANSWERS_ENV] == "1"
    conftest = (run.GRADER_ROOT / "grader" / "checks" / "conftest.py").read_text()
    assert 'os.environ.setdefault(HIDE_ANSWERS_ENV, "1")' in conftest


@pytest.mark.slow
def test_before_handing_in_the_reports_keep_the_measurements_back(monkeypatch, tmp_path):
    """A red team copied the report's "Measured and reported values" (pdl-grade check --out,
    Gradescope's output) into an answer sheet: 7.5 of 15 on the untouched HW3 code."""
    from grader.grading import grade_submission
    from tests.fixtures.planted_bugs import REFERENCE
    monkeypatch.setenv(HIDE_ANSWERS_ENV, "1")
    result = grade_submission(REFERENCE, tmp_path / "out", ["practical4"])
    (assignment,) = result["assignments"]
    assert "measurements" not in assignment and assignment["measurements_hidden"] is True
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Measured and reported values" not in report and "Measured values" not in report
    assert "shown in the report of the course's grading" in report
    # The course's grading shows them: the reference graded by test_practicals_matrix.py::
    # test_reference_gets_every_automatic_point (its own grading of Practical 4 here cost
    # 4.5 CPU-s for that one assertion).
