"""The student's own report names the folders of their upload that were not graded as handed in.

c257331 had instructor.md list an upload's assignment folders that are the template unchanged
(a whole course folder with one assignment done), but the student's report.md / report.html,
the file the student reads, said nothing: a student who thought they had handed in Practical 5
in the same upload could not tell it was never graded. And an upload graded before c257331 and
unchanged since was skipped by the next batch: its reports got the list only from --regrade;
now the batch re-scores it without running code."""
from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path

from grader.batch.pipeline import BatchOptions, run_batch
from grader.batch.template_copies import TEMPLATE_DIR
from grader.grading import publish
from grader.scoring import load_rubrics
from tests.support.fake_graders import calls, scoring_grade

UNTOUCHED = ["practical5", "practical6", "practical10", "hw3"]
WHERE = ("where: grader/reports/templates/report.md.j2 / report.html.j2, "
         "grader/reports/student_view.py template_copies_view")


def _class(subs: Path) -> None:
    """Anna's whole course folder with Practical 4 done; Hana's practical4/ alone."""
    anna = subs / "Anna Tamm_1001_assignsubmission_file_"
    shutil.copytree(TEMPLATE_DIR, anna)
    hana = subs / "Hana Puu_1007_assignsubmission_file_"
    shutil.copytree(TEMPLATE_DIR / "practical4", hana / "practical4")
    for folder in (anna, hana):
        sheet = folder / "practical4" / "answers.yaml"
        sheet.write_text(sheet.read_text(encoding="utf-8").replace("value: null", "value: 2", 1),
                         encoding="utf-8")


def test_the_students_report_names_the_folders_not_graded_as_handed_in(tmp_path):
    subs, out = tmp_path / "class", tmp_path / "grades"
    _class(subs)
    run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=io.StringIO(), live=False)
    folder = out / "submissions" / "Anna_Tamm_1001"
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "**In your upload, not graded as handed in**" in report, (
        f"expected Anna's report.md to say some of her folders were not graded; observed:\n"
        f"{report}\n{WHERE}")
    for assignment in UNTOUCHED:
        assert f"- {assignment}: the template, unchanged" in report, (
            f"expected {assignment} named in Anna's report.md as the template unchanged; "
            f"observed:\n{report}\n{WHERE}")
    assert "- practical4: the template" not in report, report
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "not graded as handed in" in page and "<code>hw3</code>: the template, unchanged" in page, (
        f"expected Anna's report.html to name hw3 as not graded; {WHERE}")
    hers = (out / "submissions" / "Hana_Puu_1007" / "report.md").read_text(encoding="utf-8")
    assert "not graded as handed in" not in hers, (
        f"expected nothing named for Hana's practical4/ alone; observed:\n{hers}")


def _as_graded_before_c257331(out: Path, key: str) -> None:
    """The student's current result as a batch before c257331 left it: without template_copies,
    in the gradebook and in the published reports."""
    book = sqlite3.connect(out / "gradebook.sqlite")
    with book:
        (text,) = book.execute("SELECT r.result_json FROM runs r JOIN students s ON s.id = "
                               "r.student_id WHERE s.key = ? AND r.current = 1", (key,)).fetchone()
        result = json.loads(text)
        result.pop("template_copies", None)
        result.pop("template_copies_why", None)
        book.execute("UPDATE runs SET result_json = ? WHERE current = 1 AND student_id = "
                     "(SELECT id FROM students WHERE key = ?)", (json.dumps(result), key))
    book.close()
    publish(result, out / "submissions" / key, rubrics=load_rubrics(None))


def test_a_rerun_adds_them_to_a_result_graded_before_without_grading_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PDL_FAKE_CALLS", str(tmp_path / "calls.log"))
    subs, out = tmp_path / "class", tmp_path / "grades"
    _class(subs)
    run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=io.StringIO(), live=False)
    _as_graded_before_c257331(out, "Anna_Tamm_1001")
    folder = out / "submissions" / "Anna_Tamm_1001"
    assert "not graded as handed in" not in (folder / "report.md").read_text(encoding="utf-8")
    graded_before = len(calls(tmp_path / "calls.log"))
    stream = io.StringIO()
    run_batch(subs, out, BatchOptions(), grade_fn=scoring_grade, stream=stream, live=False)
    said = stream.getvalue()
    assert len(calls(tmp_path / "calls.log")) == graded_before, (
        f"expected no grading run again (the uploads are unchanged); observed:\n{said}")
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "- hw3: the template, unchanged" in report, (
        f"expected the rerun to add the folders not graded to Anna's report without --regrade; "
        f"observed:\n{report}\nconsole:\n{said}\nwhere: grader/batch/pipeline.py _copies_unsaid")
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert result.get("template_copies") == UNTOUCHED, result.get("template_copies")
    assert "(1 re-scored)" in said, f"expected Anna's result re-scored (no code run); observed:\n{said}"
    assert "skipped Hana_Puu_1007" in said, (
        f"expected Hana's upload (nothing to add) skipped as unchanged; observed:\n{said}")
