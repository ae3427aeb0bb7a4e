"""A grading problem is no grade (a TA's audit, M5): an assignment the grader itself failed to
grade (a check that did not run, or whose every case errored: grader/scoring/score.py
`grading_problems`) had its 0 published in grades.csv, Moodle and Gradescope, and the next batch
skipped the upload as unchanged and graded. The gradings are fake (no code is run): the checks'
results a grading leaves, scored by the real stages."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from grader.batch.class_page import class_summary
from grader.batch.gradebook import Gradebook
from grader.batch.pipeline import BatchOptions, run_batch
from tests.support.fake_graders import fake_report, make_submission

ALICE, BOB = "Alice_Tamm_1001", "Bob_Kask_1002"
BROKEN = "practical4.chunk_shapes"   # the check the broken grader fails to run


def grading(problem: str | None, calls: Path):
    """A grade function like tests/support/fake_graders.py `scoring_grade` (every check passes
    7 of 10 cases), whose grader has `problem` in practical4: "missing" (BROKEN has no test in
    the report: "did not run") or "errored" (every case of BROKEN errored in its setup). Each
    grading appends the student's key to `calls`."""
    def grade(job) -> None:
        from grader.grading import AssignmentRun, RawRun, publish, score_run
        from grader.grading.raw import check_results_file
        from grader.scoring import load_rubrics
        with open(calls, "a") as log:
            log.write(f"{job.student.key}\n")
        rubrics = load_rubrics(job.rubrics_dir)
        run = RawRun(str(job.submission), [], hardware={"kind": "virtual", "gpus": 2, "names": []},
                     started_at="2026-05-01T12:00:00+00:00", duration_s=1.0)
        for assignment in job.assignments:
            results = fake_report(rubrics[assignment], 7)
            if assignment == "practical4" and problem == "missing":
                results["tests"] = [t for t in results["tests"] if t["metadata"]["check"] != BROKEN]
            if assignment == "practical4" and problem == "errored":
                for test in results["tests"]:
                    if test["metadata"]["check"] == BROKEN:
                        test["outcome"] = "error"
                        test["metadata"].pop("feedback", None)
                        test["setup"] = {"outcome": "failed", "crash": {
                            "message": "RuntimeError: the course's base code was not measured"}}
            (job.out / check_results_file(assignment)).write_text(json.dumps(results))
            run.assignments.append(AssignmentRun(assignment, results))
        run.save(job.out)
        publish(score_run(run, rubrics, submitted_at=job.submitted_at), job.out, rubrics=rubrics)
    return grade


def uploads(subs: Path) -> None:
    for name in ("Alice Tamm_1001", "Bob Kask_1002"):
        make_submission(subs / f"{name}_assignsubmission_file_")


def worksheet(path: Path) -> Path:
    path.write_text('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
                    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
                    '"Feedback comments"\n' + "".join(
                        f'"Participant {pid}","{name}",{pid}@example.org,"Submitted for grading",'
                        ',12.00,Yes,"Monday, 4 May 2026, 10:00 AM",-,\n'
                        for pid, name in ((1001, "Alice Tamm"), (1002, "Bob Kask"))),
                    encoding="utf-8")
    return path


def batch(subs: Path, out: Path, problem: str | None, **options):
    stream = io.StringIO()
    summary = run_batch(subs, out, BatchOptions(assignments=("practical4", "hw3"), **options),
                        grade_fn=grading(problem, out.parent / "calls.log"), stream=stream,
                        live=False)
    return summary, stream.getvalue()


def graded_keys(out: Path) -> list[str]:
    calls = out.parent / "calls.log"
    keys = calls.read_text().split() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return sorted(keys)


def rows(out: Path) -> dict[str, dict[str, str]]:
    return {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def column(path: Path, key: str, value: str) -> dict[str, str]:
    return {row[key]: row[value] for row in csv.DictReader(path.open(encoding="utf-8-sig"))}


def test_an_assignment_the_grader_failed_to_grade_is_no_grade_anywhere(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    uploads(subs)
    sheet = worksheet(tmp_path / "p4.csv")
    summary, said = batch(subs, out, "missing", moodle_worksheets=(("practical4", sheet),))
    assert graded_keys(out) == [ALICE, BOB]

    row = rows(out)[ALICE]
    first = f"practical4.part2: check '{BROKEN}' did not run"
    assert (row["practical4"], row["Total"]) == ("", ""), (
        f"expected no grade for practical4 and no total, observed {row}: a grading problem "
        "is no grade (grader/batch/grades_csv.py assignment_cell)")
    assert row["hw3"] != "", f"hw3 graded cleanly and keeps its grade: {row}"
    assert f"grading problem in practical4: {first}; run the batch again" in row["Status"], row

    # result.json keeps the score, and says why it is no grade.
    result = json.loads((out / "submissions" / ALICE / "result.json").read_text())
    p4 = next(a for a in result["assignments"] if a["id"] == "practical4")
    assert p4["status"] == "incomplete" and p4["grading_problems"] == [first], p4["grading_problems"]

    # Moodle (the worksheet filled, and the batch's own sheet) and Gradescope: no grade.
    assert column(out / "moodle" / "practical4-worksheet.csv", "Identifier", "Grade") == {
        "Participant 1001": "", "Participant 1002": ""}
    assert set(column(out / "moodle" / "practical4.csv", "Identifier", "Grade").values()) == {""}
    assert set(column(out / "gradescope" / "practical4.csv", "Email", "Total Score").values()) == {""}
    assert "" not in column(out / "gradescope" / "hw3.csv", "Email", "Total Score").values()

    # The console line and the summary say so; the class page too.
    assert f"grading problem in practical4: {first}; run the batch again" in said, said
    line = next(line for line in said.splitlines() if f"graded {ALICE} (" in line)
    assert line.endswith(f": \u2014/27, grading problem in practical4: {first}; run the batch "
                         "again"), f"expected no total on the console line: {line}"
    book = Gradebook(out / "gradebook.sqlite")
    try:
        page = class_summary(list(book.current_runs()), order=["practical4", "hw3"])
    finally:
        book.close()
    roster = {r["key"]: r for r in page["roster"]}
    assert roster[ALICE]["scores"]["practical4"] == "" and roster[ALICE]["total"] == ""
    assert "grading problem in practical4" in roster[ALICE]["status"], roster[ALICE]
    assert any(p["key"] == ALICE and p["status"] == "grading problem" for p in page["problems"])
    assert "grading problem in practical4" in (out / "index.html").read_text(encoding="utf-8")

    # The next batch grades both uploads again (not skipped as unchanged), and then they count.
    summary, said = batch(subs, out, None)
    assert graded_keys(out) == [ALICE, BOB], said
    assert "re-graded: its last grading had a grading problem in practical4" in said, said
    row = rows(out)[ALICE]
    assert row["practical4"] != "" and row["Total"] != "" and "grading problem" not in row["Status"]
    summary, said = batch(subs, out, None)
    assert graded_keys(out) == [] and summary.progress.skipped == 2, said


def test_a_check_whose_every_case_errored_is_a_grading_problem(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    uploads(subs)
    batch(subs, out, "errored")
    row = rows(out)[ALICE]
    assert row["practical4"] == "" and row["hw3"] != "", row
    assert (f"grading problem in practical4: practical4.part2: check '{BROKEN}' errored: "
            "error in test setup: RuntimeError: the course's base code was not measured") \
        in row["Status"], row


def test_a_dry_run_says_the_upload_would_be_graded_again(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    uploads(subs)
    batch(subs, out, "missing")
    graded_keys(out)
    summary, said = batch(subs, out, None, dry_run=True)
    assert graded_keys(out) == []
    assert any(f"{ALICE}: would be re-graded: its last grading had a grading problem in "
               "practical4" in line for line in summary.plan), summary.plan


def test_a_regrade_with_a_grading_problem_never_takes_a_clean_grade_of_the_same_files(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    uploads(subs)
    batch(subs, out, None)
    before = rows(out)
    summary, said = batch(subs, out, "missing", regrade=True)
    assert rows(out) == before, f"expected the clean grades kept; observed {rows(out)}\n{said}"
    assert (f"{ALICE}: error - its grade of the same files (") in said, said
    assert "grading problem in practical4" in said
    # The clean grade is current: the next batch has nothing to do.
    graded_keys(out)
    summary, said = batch(subs, out, None)
    assert graded_keys(out) == [] and summary.progress.skipped == 2, said
