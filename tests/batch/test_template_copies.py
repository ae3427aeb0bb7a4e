"""An upload of a student's whole course folder (README: work in a copy of student_template/)
with one assignment done: the other assignments' folders are the template, unchanged, and are
not handed in. A red team's class (adv44 F4): every such upload was graded for all five
assignments, 30 gradings for 6 students, and practical4.csv gave students who never handed in
Practical 4 "Submitted for grading" and 0/12."""
from __future__ import annotations

import csv
import json
import io
import shutil
from pathlib import Path

import pytest

from grader.batch.layout import held_assignments
from grader.batch.pipeline import BatchOptions, run_batch
from grader.batch.template_copies import TEMPLATE_DIR, unchanged_template
from tests.support.fake_graders import scoring_grade

ASSIGNMENTS = ["practical4", "practical5", "practical6", "practical10", "hw3"]


def course_folder(folder: Path) -> Path:
    shutil.copytree(TEMPLATE_DIR, folder)
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"the template's {path.name} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def filled_sheet(folder: Path, assignment: str) -> None:
    edit(folder / assignment / "answers.yaml", "value: null", "value: 2")


def test_a_copy_of_the_template_is_unchanged(tmp_path):
    course = course_folder(tmp_path / "pdl")
    (course / "practical4" / "__pycache__").mkdir()
    (course / "practical4" / "__pycache__" / "concepts.cpython-311.pyc").write_bytes(b"\0x")
    for assignment in ASSIGNMENTS:
        assert unchanged_template(course / assignment, assignment), (
            f"expected {assignment}/ copied from student_template/ (and run: __pycache__) to be "
            "the template unchanged; where: grader/batch/template_copies.py")


def test_line_endings_and_trailing_whitespace_are_no_change(tmp_path):
    course = course_folder(tmp_path / "pdl")
    for file in (course / "practical5").iterdir():
        text = file.read_bytes().replace(b"\n", b"  \r\n")
        file.write_bytes(text + b"\r\n\r\n")
    assert unchanged_template(course / "practical5", "practical5"), (
        "expected CRLF line endings and trailing spaces (an editor's saving) to change nothing")


@pytest.mark.parametrize("change", ["filled answer sheet", "one line of code", "a file added"])
def test_any_change_of_the_students_is_work_handed_in(tmp_path, change):
    course = course_folder(tmp_path / "pdl")
    if change == "filled answer sheet":
        filled_sheet(course, "practical4")
    elif change == "one line of code":
        path = course / "practical4" / "concepts.py"
        path.write_text(path.read_text() + "x = 1\n")
    else:
        (course / "practical4" / "notes.txt").write_text("my timings\n")
    assert not unchanged_template(course / "practical4", "practical4"), (
        f"expected practical4/ with {change} to count as handed in; observed: the template "
        "unchanged; where: grader/batch/template_copies.py")


def test_a_course_folder_holds_only_the_assignment_the_student_changed(tmp_path):
    course = course_folder(tmp_path / "pdl")
    filled_sheet(course, "practical4")
    held = held_assignments(course, ASSIGNMENTS)
    assert held == {"practical4"}, (
        f"expected only the changed practical4 held; observed {sorted(held)}; where: "
        "grader/batch/layout.py held_assignments")


def test_a_class_of_course_folders_is_graded_each_for_its_own_assignment(tmp_path):
    subs, out = tmp_path / "class", tmp_path / "grades"
    uploads = [("practical4", "Anna Tamm_1001", "practical4"),
               ("practical4", "Hana Puu_1007", "practical4"),
               # Practical 5's work uploaded to Practical 4's download: its practical4/ is the
               # template, unchanged, and is not graded 0 for it.
               ("practical4", "Gus Kuusk_1008", "practical5"),
               ("practical5", "Bert Saar_1002", "practical5"), ("hw3", "Erik Org_1005", "hw3")]
    for download, who, done in uploads:
        course = course_folder(subs / download / f"{who}_assignsubmission_file_")
        if done == "hw3":
            edit(course / "hw3" / "model_parallel.py", "\n", "\nimport torch  # my work\n")
        else:
            filled_sheet(course, done)
    stream = io.StringIO()
    summary = run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=stream,
                        live=False)
    graded = {row["Key"]: {a for a in ASSIGNMENTS if row.get(a)}
              for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert graded == {"Anna_Tamm_1001": {"practical4"}, "Hana_Puu_1007": {"practical4"},
                      "Gus_Kuusk_1008": set(), "Bert_Saar_1002": {"practical5"},
                      "Erik_Org_1005": {"hw3"}}, (
        f"expected each student graded for the one assignment changed; observed {graded}; "
        "where: grader/batch/assignment_choice.py, grader/batch/template_copies.py")
    with (out / "moodle" / "practical4.csv").open(encoding="utf-8") as sheet:
        moodle = {row["Full name"]: row for row in csv.DictReader(sheet)}
    assert set(moodle) == {"Anna Tamm", "Hana Puu", "Gus Kuusk"}, (
        f"expected rows for Practical 4's download only; observed {sorted(moodle)}")
    gus = moodle["Gus Kuusk"]
    assert gus["Grade"] == "" and gus["Feedback comments"] == "", (
        f"expected no grade and no feedback for Gus's untouched practical4/; observed {gus}; "
        "where: grader/batch/layout.py require_work_handed_in")
    choice = "\n".join(summary.assignment_choice)
    assert "practical4/: practical5: the template, unchanged: not handed in" in choice, choice
    assert "practical4/: graded: practical4 (in 2 of the 3 uploads" in choice, choice
    said = stream.getvalue()
    assert "practical4: the template, unchanged: not handed in" in said.split("Gus_Kuusk_1008", 1)[-1], (
        f"expected Gus's practical4/ (the template) said not handed in; observed:\n{said}")


@pytest.mark.parametrize("given", [None, ("practical4",)], ids=["chosen", "--assignment"])
def test_instructor_md_names_the_assignments_left_out_as_the_template(tmp_path, given):
    """Anna uploaded her whole course folder with Practical 4 done: the console said her other
    four folders were the template, unchanged, but her instructor.md, the one file a TA reads
    about her, said nothing of them (a TA could not tell "not handed in" from "forgotten")."""
    subs, out = tmp_path / "class", tmp_path / "grades"
    filled_sheet(course_folder(subs / "Anna Tamm_1001_assignsubmission_file_"), "practical4")
    hana = subs / "Hana Puu_1007_assignsubmission_file_"      # her practical4/ alone
    shutil.copytree(TEMPLATE_DIR / "practical4", hana / "practical4")
    filled_sheet(hana, "practical4")
    run_batch(subs, out, BatchOptions(assignments=given), grade_fn=scoring_grade,
              stream=io.StringIO(), live=False)
    said = (out / "submissions" / "Anna_Tamm_1001" / "instructor.md").read_text(encoding="utf-8")
    for assignment in ("practical5", "practical6", "practical10", "hw3"):
        line = f"- {assignment}: the template, unchanged: not handed in (not graded)"
        assert line in said, (
            f"expected {line!r} in Anna's instructor.md; observed:\n{said}\nwhere: "
            "grader/batch/inputs.py prepare (template_copies), grader/batch/pipeline.py "
            "_with_left_out, grader/reports/templates/instructor.md.j2")
    assert "- practical4: the template" not in said, (
        f"expected the graded practical4 (her work) not named as the template; observed:\n{said}")
    result = json.loads((out / "submissions" / "Anna_Tamm_1001" / "result.json").read_text())
    assert result.get("template_copies") == ["practical5", "practical6", "practical10", "hw3"], (
        f"expected result.json's template_copies in the course's order; observed "
        f"{result.get('template_copies')}; where: grader/scoring/RESULT_SCHEMA.md")
    hers = (out / "submissions" / "Hana_Puu_1007" / "instructor.md").read_text(encoding="utf-8")
    assert "not handed in (not graded)" not in hers, (
        f"expected nothing named for Hana's practical4/ alone; observed:\n{hers}")
