"""What a student reads is said to them, not to the course staff (a student's audit: their
report said "check which the student meant"). Problems and reasons written for the staff keep
their wording in instructor.md; report.md, report.html, Gradescope's output and the terminal
summary of `pdl-grade check` / `pytest grader/` turn them (grader/reports/student_wording.py).

The first test reads every string of the grader for a phrase addressed to the staff: each one
either stays in the staff's own outputs (listed below, with why) or is turned for the student.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader.answers import collect
from grader.reports.formats import render
from grader.reports.not_graded import NEEDS_PERSON, not_graded_mark
from grader.reports.render import render_markdown
from grader.reports.student_wording import for_the_student
from grader.reports.terminal import render_check_text
from grader.scoring import build_result, errored_assignment, load_rubrics
from tests.support.report_fixtures import ROUND_ROBIN, fresh

GRADER = Path(collect.__file__).resolve().parents[1]
# Said to the staff about a student, or asking the staff to act.
STAFF = re.compile(r"\bthe student\b(?!_)|\bask the student\b|\bshould (?:look|read)\b|"
                   r"(?<!will )\bcheck (?:which|that it was)\b", re.I)
# Where such words are for the staff only (and why).
STAFF_ONLY = {
    "cli": "the staff's commands and their help",
    "batch/class_page.py": "the class page, the staff's",
    "batch/pipeline.py": "the batch's log, the staff's",
    "cluster": "the cluster's settings, the staff's",
    "scoring/overrides.py": "the overrides file, the staff's",
    "reports/instructor.py": "instructor.md",
    "reports/student_wording.py": "the table of turns itself",
    "answers/reference_copies.py": "flags (instructor.md)",
    "student_kit.py": "what the kit holds, said to the staff who build it",
}
# Flags (instructor.md only) raised by the checks.
STAFF_FLAGS = ("the student's feedback names the cause", "the student's")


def _strings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_every_phrase_for_the_staff_reaches_a_student_turned():
    unturned = []
    for path in sorted(GRADER.rglob("*.py")):
        where = path.relative_to(GRADER).as_posix()
        if any(where == only or where.startswith(only + "/") for only in STAFF_ONLY):
            continue
        for line, text in _strings(path):
            if not STAFF.search(text):
                continue
            if where.startswith("checks/") and any(flag in text for flag in STAFF_FLAGS):
                continue
            if STAFF.search(for_the_student(text)):
                unturned.append(f"grader/{where}:{line}: {text!r}")
    assert not unturned, "said to the staff where a student reads it:\n" + "\n".join(unturned)


@pytest.mark.parametrize("staff, student", [
    # adv39 F6 and M1: a password-protected zip, a .rar beside nothing to grade
    ("hw3.zip is password-protected (entry 'hw3/model_parallel.py' is encrypted): the grader "
     "cannot unpack it, so it gets no grade (never a 0); a person should look (ask the student "
     "to upload it without a password)",
     "a person of the course staff will look at it (and may ask you to upload it without a "
     "password)"),
    ("no file of hw3 found anywhere in the upload (expected e.g. model_parallel.py); it holds "
     "hw3.rar; hw3.rar is a RAR archive, which the grader cannot unpack (ask the student for a "
     ".zip): a person should look at it",
     "hw3.rar is a RAR archive, which the grader cannot unpack (the course staff may ask you "
     "for a .zip): a person of the course staff will look at it"),
    ("hw3.task1: hw3/report.md and hw3/answers.yaml give different answers ([3, 3] and [2, 4]); "
     "hw3/answers.yaml's was graded (hw3/report.md is not the PDF the handout asks for): check "
     "which the student meant",
     "hw3/answers.yaml's was graded (hw3/report.md is not the PDF the handout asks for): a person "
     "will check which you meant"),
    ("the report's was graded (the handout asks for the report): check that it was read as "
     "written", "the report's was graded (the handout asks for the report): a person will check "
     "that it was read as written"),
    ("hw3.zip is damaged: nothing in it can be graded, so it gets no grade (never a 0): a person "
     "should look (download it again from Moodle, or ask the student to upload it again)",
     "a person of the course staff will look at it (and may ask you to upload it again)"),
    ("hw3.zip is not a readable zip file: it is a RAR archive named .zip, which the grader cannot "
     "unpack; a person should look at it (unpack it by hand, or ask the student for a .zip)",
     "a person of the course staff will look at it (and may ask you for a .zip)"),
    ("the integrity scan of the source failed (OSError()): a person should read the code",
     "a person of the course staff will read the code"),
])
def test_the_staffs_phrases_are_said_to_you(staff, student):
    turned = for_the_student(staff)
    assert student in turned and not STAFF.search(turned), turned


def test_a_quoted_answer_is_shown_as_written():
    text = "task3.explanation: 'the student's rule: layer i on GPU i % N' is not one value"
    assert for_the_student(text) == text


SHEET_OVER_REPORT = ("task1.layers_per_gpu: hw3/report.md and hw3/answers.yaml give different "
                     "answers ([3, 3] and [2, 4]); hw3/answers.yaml's was graded (hw3/report.md is "
                     "not the PDF the handout asks for): check which the student meant")


def _answers_problem(result: dict) -> dict:
    result["assignments"][0]["answers"]["problems"].append(SHEET_OVER_REPORT)
    return result


def test_the_students_report_and_summary_say_it_to_you_and_instructor_md_keeps_it():
    result = _answers_problem(fresh(ROUND_ROBIN))
    for name, text in (("report.md", render_markdown(result)),
                       ("terminal", render_check_text(result)),
                       ("report.html", render("html", result))):
        assert "a person will check which you meant" in text, name
        assert "the student" not in text, name
    instructor = render("instructor", result, rubrics=load_rubrics())
    assert "check which the student meant" in instructor


def test_an_upload_no_one_could_grade_is_explained_to_you():
    reason = ("hw3.zip is damaged (cut short): nothing in it can be graded, so it gets no grade "
              "(never a 0): a person should look (download it again from Moodle, or ask the "
              "student to upload it again)")
    result = build_result("Eve/hw3.zip", [errored_assignment(load_rubrics()["hw3"],
                                                             "needs a person: " + reason)],
                          duration_s=0.0, errors=["needs a person: " + reason])
    result["not_graded"] = not_graded_mark(NEEDS_PERSON, reason)
    student = render_markdown(result)
    assert "may ask you to upload it again" in student and "ask the student" not in student
    instructor = render("instructor", result, rubrics=load_rubrics())
    assert "ask the student to upload it again" in instructor
