"""DIR/gradescope/<assignment>.csv, the class's grades for Gradescope's "Import grades" (audit
F15: there was only a results.json per student): Name, Email and Total Score, the numbers
grades.csv has; a student with no grade is an empty cell, never 0; without emails no file and
one line saying why. Fake gradings only."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from grader.batch.gradebook import CurrentRun
from grader.batch.gradescope_export import gradescope_rows
from grader.batch.inputs import Student
from grader.batch.pipeline import BatchOptions, run_batch
from tests.support.fake_graders import scoring_grade


def run(key: str, name: str, email: str | None, score: float | None, status: str = "graded",
        needs_person: bool = False) -> CurrentRun:
    return CurrentRun(Student(key, name, key.rsplit("_", 1)[-1], email), status, None, key, "c",
                      {"assignments": []}, {} if score is None else {"hw3": score},
                      needs_person=needs_person, assignments=("hw3",))


def test_rows_hold_the_grades_csv_numbers_and_no_grade_is_empty():
    rows, left_out = gradescope_rows([
        run("Alice_Tamm_1001", "Alice Tamm", "alice@ut.ee", 14.5),
        run("Eve_Lepp_1005", "Eve Lepp", "eve@ut.ee", 0.0, "rejected"),          # refused: 0
        run("Grete_Kuusk_1007", "Grete Kuusk", "grete@ut.ee", 0.0, "rejected", True),
        run("Henri_Sepp_1008", "Henri Sepp", "henri@ut.ee", None, "timed_out"),
        run("Bob_Kask_1002", "Bob Kask", None, 4.5),
        run("=cmd_1003", "=cmd|' /C calc'!A0", "c@ut.ee", 1.0)], "hw3")
    assert rows[0] == ["Name", "Email", "Total Score"]
    by_email = {row[1]: row for row in rows[1:]}
    assert by_email["alice@ut.ee"] == ["Alice Tamm", "alice@ut.ee", "14.5"]
    assert by_email["eve@ut.ee"][2] == "0"
    assert by_email["grete@ut.ee"][2] == "" and by_email["henri@ut.ee"][2] == "", by_email
    assert by_email["c@ut.ee"][0].startswith("'="), "a name a spreadsheet would evaluate"
    assert left_out == ["Bob_Kask_1002"]


def upload(folder: Path, passed: int) -> Path:
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"A = {passed}\n")
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


def worksheet(path: Path, *participants: tuple[int, str, str]) -> Path:
    rows = "".join(f'"Participant {pid}","{name}",{email},"Submitted for grading",,10.00,Yes,'
                   '"Monday, 4 May 2026, 10:00 AM",-,\n' for pid, name, email in participants)
    path.write_text('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
                    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
                    '"Feedback comments"\n' + rows, encoding="utf-8")
    return path


def batch(subs: Path, out: Path, **options) -> str:
    stream = io.StringIO()
    run_batch(subs, out, BatchOptions(assignments=("practical4",), **options),
              grade_fn=scoring_grade, stream=stream, live=False)
    return stream.getvalue()


def test_the_batch_writes_the_class_csv_from_the_worksheets_emails(tmp_path):
    subs, out = tmp_path / "moodle_practical4", tmp_path / "grades"
    upload(subs / "Alice Tamm_401101_assignsubmission_file_", 10)
    upload(subs / "Bob Kask_401102_assignsubmission_file_", 5)
    (subs / "Grete Kuusk_401107_assignsubmission_file_").mkdir()       # nothing to grade
    (subs / "Grete Kuusk_401107_assignsubmission_file_" / "photo.txt").write_text("hi\n")
    sheet = worksheet(tmp_path / "p4.csv", (401101, "Alice Tamm", "alice@ut.ee"),
                      (401107, "Grete Kuusk", "grete@ut.ee"))
    said = batch(subs, out, moodle_worksheets=((None, sheet),))

    table = list(csv.reader((out / "gradescope" / "practical4.csv").open(encoding="utf-8")))
    grades = {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert table == [["Name", "Email", "Total Score"],
                     ["Alice Tamm", "alice@ut.ee", grades["Alice_Tamm_401101"]["practical4"]],
                     ["Grete Kuusk", "grete@ut.ee", ""]], table
    assert grades["Alice_Tamm_401101"]["practical4"] not in ("", "0")
    assert ("gradescope/practical4.csv: 2 student(s) for Gradescope's Import grades; 1 left out, "
            "no email known: Bob_Kask_401102") in said, said


def test_without_emails_no_file_and_one_line_why(tmp_path):
    subs, out = tmp_path / "class", tmp_path / "grades"
    upload(subs / "alice", 10)
    said = batch(subs, out)
    assert not (out / "gradescope" / "practical4.csv").exists()
    [line] = [l for l in said.splitlines() if l.startswith("gradescope/")]
    assert line.startswith("gradescope/: no file for practical4: no submission of it carries "
                           "an email"), line
