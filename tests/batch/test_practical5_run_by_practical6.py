"""A Practical 6 student's whole course folder: Practical 6's Part 6 says "Run your Practical 5
code (DataParallel) and compare", so its practical5/practical5_dp.py has the template's one TODO
done (the DataParallel wrap), and nothing else of Practical 5 is touched, its answer sheet as
handed out. Red team adv47 F3: the batch counted that as Practical 5 handed in ("any edited
file") and put 6.5/12 in grades.csv's practical5 column for a Practical 5 never handed in.

Practical 5 handed in is its own work: its answer sheet filled, or its scripts changed beyond
that one TODO; and the wrap alone is Practical 5's work where Practical 6 is not handed in
beside it (a Practical 5 student who has not yet filled the sheet)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from grader.batch.layout import held_assignments, template_copies_in
from grader.batch.pipeline import BatchOptions, run_batch
from tests.batch.test_template_copies import course_folder, edit
from tests.support.fake_graders import scoring_grade

ASSIGNMENTS = ["practical4", "practical5", "practical6", "practical10", "hw3"]
WHERE = "where: grader/batch/template_copies.py run_by_another, grader/batch/layout.py"
TODO = '''    # TODO: wrap `model` in nn.DataParallel (one line).
    raise NotImplementedError(
        "TODO (Practical 5): wrap the model in nn.DataParallel so that each forward "
        "pass splits the batch over all visible GPUs; see the Practical 5 handout, "
        "DataParallel section")
'''
# The ways students answer the TODO: the line alone, the comment kept, the wrap with its GPUs.
WRAPS = {
    "the line alone": "    model = nn.DataParallel(model)\n",
    "the comment kept": "    # TODO: wrap `model` in nn.DataParallel (one line).\n    model = nn.DataParallel(model)\n",
    "with its GPUs": "    model = nn.DataParallel(model, device_ids=list(range(torch.cuda.device_count())))\n",
}


def wrapped(course: Path, wrap: str = WRAPS["the line alone"]) -> Path:
    edit(course / "practical5" / "practical5_dp.py", TODO, wrap)
    return course


def practical6_done(course: Path) -> Path:
    edit(course / "practical6" / "answers.yaml", "value: null", "value: 2")
    return course


@pytest.mark.parametrize("wrap", WRAPS.values(), ids=WRAPS.keys())
def test_the_wrap_practical6_runs_is_not_practical5_handed_in(tmp_path, wrap):
    course = practical6_done(wrapped(course_folder(tmp_path / "pdl"), wrap))
    held = held_assignments(course, ASSIGNMENTS)
    assert held == {"practical6"}, (
        f"expected only practical6 handed in (practical5/ holds only the DataParallel wrap "
        f"Practical 6's Part 6 runs); observed {sorted(held)}; {WHERE}")
    why = template_copies_in(course, ASSIGNMENTS).get("practical5", "")
    assert "practical6" in why and "Part 6" in why and "practical5_dp.py" in why, (
        f"expected practical5 not handed in, said why (practical6's Part 6 runs its "
        f"practical5_dp.py); observed {why!r}; {WHERE}")


def _more_code(course: Path) -> None:
    edit(course / "practical5" / "practical5_dp.py", "STEPS = 10", "STEPS = 50")


def _timing_file(course: Path) -> None:
    (course / "practical5" / "timings.txt").write_text("dp: 0.35 ms per step\n")


def _long_answer(course: Path) -> None:
    edit(course / "practical5" / "practical5_dp.py", "    model = nn.DataParallel(model)\n",
         "    n = torch.cuda.device_count()\n    ids = list(range(n))\n    print(ids)\n"
         "    model = nn.DataParallel(model, device_ids=ids)\n")


PRACTICAL5_WORK = {
    "its answer sheet filled": lambda course: edit(course / "practical5" / "answers.yaml",
                                                    "value: null", "value: true"),
    "its script changed beyond the TODO": _more_code,
    "a file of its own added": _timing_file,
    "the TODO answered in more than a few lines": _long_answer,
    "its single-GPU script changed": lambda course: edit(
        course / "practical5" / "practical5_single.py", "STEPS = 10", "STEPS = 20"),
}


@pytest.mark.parametrize("work", PRACTICAL5_WORK.values(), ids=PRACTICAL5_WORK.keys())
def test_practical5_work_of_its_own_is_handed_in_beside_practical6(tmp_path, work):
    course = practical6_done(wrapped(course_folder(tmp_path / "pdl")))
    work(course)
    held = held_assignments(course, ASSIGNMENTS)
    assert held == {"practical5", "practical6"}, (
        f"expected practical5 handed in (work of its own) beside practical6; observed "
        f"{sorted(held)}; {WHERE}")
    assert "practical5" not in template_copies_in(course, ASSIGNMENTS), WHERE


def test_the_wrap_alone_is_practical5_handed_in_without_practical6(tmp_path):
    """A Practical 5 student who did the script's TODO and has not filled the sheet: their work,
    graded (the sheet's points are lost, not the code's)."""
    course = wrapped(course_folder(tmp_path / "pdl"))
    held = held_assignments(course, ASSIGNMENTS)
    assert held == {"practical5"}, (
        f"expected practical5 handed in (Practical 6 untouched: the wrap is Practical 5's own "
        f"work); observed {sorted(held)}; {WHERE}")


def _class(subs: Path) -> None:
    """Practical 5's download of whole course folders: Mari did Practical 5 (wrap and sheet);
    Jaan did Practical 6 (its sheet, and the wrap Part 6 runs); Liis did Practical 5's wrap
    and sheet, and Practical 6 too."""
    mari = wrapped(course_folder(subs / "Mari Tamm_101_assignsubmission_file_"))
    edit(mari / "practical5" / "answers.yaml", "value: null", "value: true")
    practical6_done(wrapped(course_folder(subs / "Jaan Kask_102_assignsubmission_file_")))
    liis = practical6_done(wrapped(course_folder(subs / "Liis Saar_103_assignsubmission_file_")))
    edit(liis / "practical5" / "answers.yaml", "value: null", "value: true")


def test_a_batch_grades_practical5_only_for_those_who_handed_it_in(tmp_path):
    subs, out = tmp_path / "class", tmp_path / "grades"
    _class(subs)
    run_batch(subs, out, BatchOptions(assignments=("practical5",)), grade_fn=scoring_grade,
              stream=io.StringIO(), live=False)
    rows = {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    graded = {key for key, row in rows.items() if row["practical5"] != ""}
    assert graded == {"Mari_Tamm_101", "Liis_Saar_103"}, (
        f"expected Practical 5 graded for Mari and Liis (their sheets), not for Jaan (only the "
        f"wrap Practical 6 runs); observed {sorted(graded)}; {WHERE}")
    status = rows["Jaan_Kask_102"]["Status"]
    assert status.startswith("needs a person") and "practical5: the template but for its TODO in " \
        "practical5_dp.py, which practical6 (handed in beside it) runs" in status, (
            f"expected Jaan's upload for a person, said why his practical5/ is not handed in; "
            f"observed {status!r}; where: grader/batch/assignment_choice.py left_alone, "
            "grader/batch/layout.py require_work_handed_in")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "which practical6 (handed in beside it) runs" in page, (
        "expected the class page (the instructor's view of an upload for a person) to say why "
        "Jaan's practical5/ is not handed in")


def test_a_practical5_grade_given_before_is_replaced(tmp_path):
    """A gradebook where an earlier grader graded Jaan's Practical 5 (adv47: 6.5/12): the next
    `--assignment practical5` batch no longer leaves his upload alone with that grade."""
    subs, out = tmp_path / "class", tmp_path / "grades"
    _class(subs)
    jaan = subs / "Jaan Kask_102_assignsubmission_file_"
    sheet = jaan / "practical5" / "answers.yaml"
    handed_out = sheet.read_text(encoding="utf-8")
    edit(sheet, "value: null", "value: true")      # graded for Practical 5 as it was then
    run_batch(subs, out, BatchOptions(assignments=("practical5",)), grade_fn=scoring_grade,
              stream=io.StringIO(), live=False)
    sheet.write_text(handed_out, encoding="utf-8")
    run_batch(subs, out, BatchOptions(assignments=("practical5",)), grade_fn=scoring_grade,
              stream=io.StringIO(), live=False)
    rows = {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert rows["Jaan_Kask_102"]["practical5"] == "", (
        f"expected Jaan's earlier Practical 5 grade gone; observed {rows['Jaan_Kask_102']}; "
        "where: grader/batch/assignment_choice.py left_alone")


def test_instructor_md_and_the_report_say_why_practical5_was_not_graded(tmp_path):
    """Graded for Practical 6 (its download): Jaan's instructor.md and his own report name his
    practical5/ and why it was not graded, as they name the untouched template copies."""
    subs, out = tmp_path / "class", tmp_path / "grades"
    practical6_done(wrapped(course_folder(subs / "Jaan Kask_102_assignsubmission_file_")))
    practical6_done(course_folder(subs / "Kadri Kuusk_104_assignsubmission_file_"))
    run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=io.StringIO(), live=False)
    folder = out / "submissions" / "Jaan_Kask_102"
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert [a["id"] for a in result["assignments"]] == ["practical6"], (
        f"expected Jaan graded for practical6 only; observed {[a['id'] for a in result['assignments']]}")
    instructor = (folder / "instructor.md").read_text(encoding="utf-8")
    line = next((l for l in instructor.splitlines() if l.startswith("- practical5:")), "")
    assert "practical6 (handed in beside it) runs" in line and line.endswith("not handed in (not graded)"), (
        f"expected instructor.md's line for practical5 to say why it is not handed in; observed "
        f"{line!r} in:\n{instructor}\nwhere: grader/reports/templates/instructor.md.j2")
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "not graded as handed in" in report and "- practical5: the template but for its TODO" in report, (
        f"expected Jaan's report to say his practical5/ was not graded, and why; observed:\n{report}")


def test_in_practical5s_download_the_practical6_student_is_for_a_person(tmp_path):
    """adv47's class: Jaan's course folder in Practical 5's download, graded without
    --assignment: Practical 5 is chosen (the others hold it), and his upload holds no Practical
    5 of his own: for a person, with why, never a Practical 5 grade (it had been 6.5/12)."""
    subs, out = tmp_path / "class", tmp_path / "grades"
    for who in ("Mari Tamm_101", "Liis Saar_103"):
        edit(wrapped(course_folder(subs / f"{who}_assignsubmission_file_")) / "practical5" / "answers.yaml",
             "value: null", "value: true")
    practical6_done(wrapped(course_folder(subs / "Jaan Kask_102_assignsubmission_file_")))
    run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=io.StringIO(), live=False)
    rows = {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    jaan = rows["Jaan_Kask_102"]
    assert jaan["practical5"] == "" and jaan["Status"].startswith("needs a person"), (
        f"expected no Practical 5 grade for Jaan, for a person; observed {jaan}; {WHERE}")
    assert "which practical6 (handed in beside it) runs" in jaan["Status"], (
        f"expected Jaan's status to say why his practical5/ is not handed in; observed {jaan['Status']!r}")
    assert rows["Mari_Tamm_101"]["practical5"] != "", rows["Mari_Tamm_101"]
