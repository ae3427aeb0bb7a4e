"""A grading problem is no grade where a score is read (a TA's audit, M5): `pdl-grade grade`
printed "practical4  0 / 12  incomplete", and `pdl-grade check` and `pytest grader/` a total of 0,
for checks that errored in the grader ("check X did not run (a grading problem, not your
code)"). Now each says the assignment was not graded and which checks did not run; result.json
keeps the score, marked (`grading_problems`, RESULT_SCHEMA.md)."""
from __future__ import annotations

from grader.reports.terminal import render_check_text
from grader.scoring import build_result, grading_problems, load_rubrics, score_assignment
from grader.scoring.session import score_session
from tests.support.fake_graders import fake_report

BROKEN = "practical4.chunk_shapes"


def result_with_a_check_that_did_not_run() -> dict:
    """Practical 4 with every check at 7 of 10 cases but BROKEN, which has no test in the
    report (the checks crashed before it), and HW3 graded cleanly."""
    rubrics = load_rubrics()
    report = fake_report(rubrics["practical4"], 7)
    report["tests"] = [t for t in report["tests"] if t["metadata"]["check"] != BROKEN]
    return build_result("submissions/alice", [
        score_assignment(rubrics["practical4"], report),
        score_assignment(rubrics["hw3"], fake_report(rubrics["hw3"], 10))])


def test_result_json_keeps_the_score_and_says_it_is_no_grade():
    result = result_with_a_check_that_did_not_run()
    p4, hw3 = result["assignments"]
    assert p4["status"] == "incomplete" and p4["score"] > 0
    assert p4["grading_problems"] == [f"practical4.part2: check '{BROKEN}' did not run"]
    assert hw3["grading_problems"] == [] and grading_problems(hw3) == []


def test_a_result_written_before_the_field_is_read_by_its_status_and_errors():
    """A gradebook of an earlier version holds results without `grading_problems`: an
    incomplete one is still no grade; an unreadable submission time alone is a grade."""
    p4 = dict(result_with_a_check_that_did_not_run()["assignments"][0])
    del p4["grading_problems"]
    assert grading_problems(p4) == [f"practical4.part2: check '{BROKEN}' did not run"]
    late_only = dict(p4, errors=["late penalty not applied: no zone"], items=[])
    assert grading_problems(late_only) == []


def test_pdl_grade_grade_says_not_graded_rather_than_a_zero(pdl_grade, tmp_path, monkeypatch):
    import grader.grading
    result = result_with_a_check_that_did_not_run()
    monkeypatch.setattr(grader.grading, "grade_submission", lambda *a, **k: result)
    (tmp_path / "practical4").mkdir()
    run = pdl_grade("grade", tmp_path, "--out", tmp_path / "out")
    line = next(line for line in run.out.splitlines() if line.startswith("practical4"))
    assert line.split(None, 1)[1] == ("not graded: a grading problem (1 check(s) did not run) "
                                      "\u2014 run it again"), (
        f"expected no score for practical4; observed {line!r} (grader/cli/grade.py)")
    assert f"practical4.part2: check '{BROKEN}' did not run" in run.out
    total = next(line for line in run.out.splitlines() if line.startswith("total"))
    assert "\u2014 / 27" in total and "no total: a grading problem in practical4" in total, total
    hw3 = next(line for line in run.out.splitlines() if line.startswith("hw3"))
    assert "10.5 / 15  graded" in hw3, f"hw3 graded cleanly and keeps its score: {hw3!r}"


def test_pdl_grade_check_names_the_checks_that_did_not_run():
    text = render_check_text(result_with_a_check_that_did_not_run())
    assert ("practical4: Practical 4" in text and "\u2014 / 12: not graded: a grading problem "
            f"(1 check(s) did not run: {BROKEN}) \u2014 run it again") in text, text
    total = next(line for line in text.splitlines() if line.startswith("total:"))
    assert total.startswith("total: \u2014 / 27: no total, the grading had a problem"), total
    assert BROKEN in total, total


def test_pytest_grader_summary_says_which_checks_errored_and_not_the_unselected_ones():
    """`pytest grader/ -k ...`: a check with no case was not selected, no grading problem;
    a check whose every case errored (a fixture of the grader crashed) is one."""
    rubrics = load_rubrics()
    outcomes = {}
    for check in rubrics["practical4"].check_ids:
        for i in range(2):
            outcome = "error" if check == BROKEN else "passed"
            outcomes[f"test_practical4.py::test_{check}[{i}]"] = (
                check, outcome, "RuntimeError: the grader broke" if outcome == "error" else "")
    result = score_session(outcomes)
    text = render_check_text(result, selected_only=True, header=False)
    total = next(line for line in text.splitlines() if line.startswith("total:"))
    assert f"1 check(s) did not run: {BROKEN}" in total, text

    selected = {k: v for k, v in outcomes.items() if v[0] != BROKEN}   # -k left BROKEN out
    text = render_check_text(score_session(selected), selected_only=True, header=False)
    assert "not graded" not in text and "no total" not in text, text


def test_the_students_report_says_no_grade_where_the_grader_failed():
    """report.md and report.html had shown the assignment's 0 beside its grading problems."""
    from grader.reports.render import render_html, render_markdown
    from tests.support.report_fixtures import REFERENCE, fresh
    data = fresh(REFERENCE)
    assignment = data["assignments"][0]
    assignment["grading_problems"] = ["practical4.part2: check 'practical4.chunk_shapes' did not run"]
    markdown, html = render_markdown(data), render_html(data)
    heading = next(line for line in markdown.splitlines()
                   if line.startswith(f"## {assignment['title']}"))
    assert "not graded: a grading problem" in heading and " / " not in heading, heading
    assert f"(not a grade of {assignment['id']}:" in markdown
    assert "not graded: a grading problem" in html and f"not a grade of {assignment['id']}" in html
    other = data["assignments"][1]
    heading = next(line for line in markdown.splitlines() if line.startswith(f"## {other['title']}"))
    assert " / " in heading and "not graded" not in heading, heading
