"""`pdl-grade grade` exits 3 where the grader failed to grade an assignment (its
`grading_problems`), and says so on its last line: it had exited 0, so a script grading many
submissions took the result for a grade. result.json is written all the same (what a batch
or run_autograder reads); 0 and 2 keep their meanings."""
from __future__ import annotations

from grader.common.exit_codes import GRADING_PROBLEM
from grader.scoring import build_result, load_rubrics, score_assignment
from tests.support.fake_graders import fake_report


def graded(monkeypatch, tmp_path, broken: bool) -> dict:
    import grader.grading
    rubrics = load_rubrics()
    report = fake_report(rubrics["practical4"], 10)
    if broken:   # a case errored in the grader's own fixture: no verdict
        test = report["tests"][0]
        test["outcome"] = "error"
        test["setup"] = {"outcome": "failed", "crash": {"message": "RuntimeError: harness"}}
    result = build_result("submissions/alice", [score_assignment(rubrics["practical4"], report)])
    monkeypatch.setattr(grader.grading, "grade_submission", lambda *a, **k: result)
    (tmp_path / "practical4").mkdir(exist_ok=True)
    return result


def test_a_grading_problem_exits_3_and_says_so_last(pdl_grade, tmp_path, monkeypatch):
    graded(monkeypatch, tmp_path, broken=True)
    run = pdl_grade("grade", tmp_path, "--out", tmp_path / "out", "--assignment", "practical4")
    assert run.code == GRADING_PROBLEM == 3, (
        f"expected exit status 3 for an assignment the grader failed to grade; got {run.code}")
    last = run.out.strip().splitlines()[-1]
    assert last.startswith("total") and "no total: a grading problem in practical4" in last \
        and "exit status 3" in last, last


def test_a_clean_grading_exits_0(pdl_grade, tmp_path, monkeypatch):
    graded(monkeypatch, tmp_path, broken=False)
    run = pdl_grade("grade", tmp_path, "--out", tmp_path / "out", "--assignment", "practical4")
    assert run.code == 0 and "exit status" not in run.out, run.out


def test_a_wrong_folder_still_exits_2(pdl_grade, tmp_path):
    run = pdl_grade("grade", tmp_path / "nowhere", "--out", tmp_path / "out")
    assert run.code == 2 and "is not a folder" in run.err
