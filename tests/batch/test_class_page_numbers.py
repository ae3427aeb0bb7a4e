"""The class page's numbers are grades.csv's: its score distribution over the cells of
grades.csv (a rejected 0 counted, an empty cell not, the total over students with every
assignment), and the reports not handed in as the handout asks (an instructor's day: the
page's total averaged a HW3-only 10.5 of 15 as if out of 27 and left out a rejected 0 that
grades.csv and Moodle carry; students with no report.pdf were not listed, the one with a
report.md was)."""
from __future__ import annotations

import csv
import re
import statistics
from pathlib import Path

import pytest

from grader.batch.class_page import class_summary, write_class_page
from grader.batch.gradebook import Gradebook, RunConfig, RunRecord
from grader.batch.grades_csv import write_grades_csv
from grader.batch.inputs import Student
from grader.reports.formatting import format_points
from grader.scoring import build_result

ORDER = ["hw3", "practical5"]
MAXIMA = {"hw3": 15.0, "practical5": 12.0}


def assignment(ident: str, score: float, answers: dict | None = None) -> dict:
    item = {"id": f"{ident}.item", "title": "t", "kind": "auto", "score": score,
            "max_score": MAXIMA[ident], "points": MAXIMA[ident],
            "status": "passed" if score else "failed", "feedback": "", "checks": []}
    found = {"id": ident, "title": ident, "rubric_version": "1", "score": score,
             "max_score": MAXIMA[ident], "rubric_max_score": MAXIMA[ident],
             "excluded_points": 0.0, "status": "graded", "errors": [], "pending_manual": [],
             "late": None, "items": [item]}
    if answers is not None:
        found["answers"] = answers
    return found


def record(book, key, name, ident, status, score=None, *, needs_person=False, held=False,
           answers=None, message=None, template_copies=()):
    result = None
    if score is not None:
        result = build_result(key, [assignment(ident, score, answers)])
        if template_copies:
            result["template_copies"] = list(template_copies)
        if held:
            result["assignments"][0]["integrity"] = {
                "problems": ["reaches into the grader"], "withheld": True,
                "withheld_points": score, "cleared": False, "comment": ""}
    config = RunConfig("test", "rubrics", {ident: "1"}, (ident,), f"config-{ident}")
    book.record_run(Student(key, name, participant_id=key.rsplit("_", 1)[1]), f"h-{key}", key,
                    config, RunRecord(status, "2026-05-01T10:00:00+00:00",
                                      "2026-05-01T10:01:00+00:00", message, result,
                                      needs_person=needs_person), [])


@pytest.fixture
def gradebook(tmp_path):
    """Two downloads (HW3 participants 10xx, Practical 5 participants 20xx), a person's two
    uploads put together by name, as grades.csv does."""
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "Alice_1001", "Alice", "hw3", "graded", 14.5)
    record(book, "Alice_2001", "Alice", "practical5", "graded", 11.75)
    # A truncated zip: rejected, 0 in grades.csv and Moodle; counted on the page too.
    record(book, "Eve_1005", "Eve", "hw3", "rejected", 0.0,
           message="hw3.zip is not a readable zip file")
    record(book, "Eve_2005", "Eve", "practical5", "graded", 9.25)
    # HW3 only (no Practical 5 upload): a total of 10.5 of 15, not of 27.
    record(book, "Mari_1010", "Mari", "hw3", "graded", 10.5)
    # Held for review: an empty cell.
    record(book, "Dan_1004", "Dan", "hw3", "graded", 10.5, held=True)
    record(book, "Dan_2004", "Dan", "practical5", "graded", 9.25)
    # Nothing to grade in the HW3 upload: an empty cell, for a person.
    record(book, "Grete_1007", "Grete", "hw3", "rejected", 0.0, needs_person=True,
           message="two different versions of hw3")
    record(book, "Grete_2007", "Grete", "practical5", "graded", 0.0)
    # A grading that timed out: an empty cell.
    record(book, "Henri_1008", "Henri", "hw3", "timed_out",
           message="grading took longer than 1800 s")
    record(book, "Henri_2008", "Henri", "practical5", "graded", 6.5)
    record(book, "Bob_1002", "Bob", "hw3", "graded", 4.5)
    record(book, "Bob_2002", "Bob", "practical5", "graded", 0.0)
    book.close()
    book = Gradebook(out / "gradebook.sqlite")
    write_grades_csv(out / "grades.csv", book.current_runs(), ORDER)
    book.close()
    write_class_page(out, order=ORDER)
    return out


def grades_csv_numbers(out: Path) -> tuple[dict[str, list[float]], list[dict]]:
    """{column: the numbers grades.csv holds in it}, and its rows."""
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    numbers = {column: [float(row[column]) for row in rows if row[column].strip()]
               for column in [*ORDER, "Total"]}
    return numbers, rows


def page_table(out: Path) -> dict[str, list[str]]:
    text = (out / "index.html").read_text(encoding="utf-8")
    table = text.split('id="distribution-table"')[1].split("</table>")[0]
    rows = re.findall(r'<tr id="distribution-([\w]+)">(.*?)</tr>', table, re.S)
    return {ident: [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for ident, row in rows}


def stats(values: list[float]) -> tuple[str, str, str]:
    return (str(len(values)), format_points(statistics.fmean(values)),
            format_points(statistics.median(values)))


def test_each_assignments_row_is_grades_csvs_column(gradebook):
    numbers, rows = grades_csv_numbers(gradebook)
    table = page_table(gradebook)
    # grades.csv: HW3 14.5, 0 (rejected), 10.5, 4.5; Dan held, Grete for a person, Henri timed
    # out: empty.
    assert sorted(numbers["hw3"]) == [0.0, 4.5, 10.5, 14.5]
    for column in ORDER:
        n, mean, median = stats(numbers[column])
        label, counted, zeros, shown_mean, shown_median, top, empty = table[column]
        assert (label, counted, shown_mean, shown_median) == (column, n, mean, median), table[column]
        assert zeros == str(sum(1 for v in numbers[column] if v == 0))
        assert top == format_points(MAXIMA[column])
        assert empty.startswith(str(sum(1 for row in rows if not row[column].strip())))
    # Why each empty cell is empty, counted.
    empty_hw3 = table["hw3"][6]
    assert empty_hw3.startswith("3: ")
    assert all(why in empty_hw3 for why in ("1 needs a person", "1 held for review", "1 timed out"))
    assert table["practical5"][6] == "1: 1 no upload"


def test_an_empty_cell_of_an_untouched_template_copy_says_so(tmp_path):
    """Mari uploaded her course folder to HW3 with practical5/ as the template left it: her
    Practical 5 cell is empty because she handed nothing in, not because no upload came (the
    page had said "no upload", though the batch had found and left out her practical5/)."""
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "Alice_1001", "Alice", "hw3", "graded", 14.5)
    record(book, "Alice_2001", "Alice", "practical5", "graded", 11.75)
    record(book, "Mari_1010", "Mari", "hw3", "graded", 10.5, template_copies=["practical5"])
    record(book, "Olle_1011", "Olle", "hw3", "graded", 9.0)
    book.close()
    write_class_page(out, order=ORDER)
    empty = page_table(out)["practical5"][6]
    assert empty == "2: 1 no upload, 1 not handed in (the template, unchanged)", (
        f"expected Mari's empty Practical 5 cell said as the template unchanged, Olle's as no "
        f"upload; observed {empty!r}; where: grader/batch/class_page.py _why_empty")


def test_the_total_row_is_over_students_with_every_assignment_out_of_the_class_total(gradebook):
    numbers, rows = grades_csv_numbers(gradebook)
    table = page_table(gradebook)
    complete = [float(row["Total"]) for row in rows
                if row["Total"].strip() and all(row[a].strip() for a in ORDER)]
    # Alice 26.25, Eve 9.25 (her rejected HW3's 0 and P5), Bob 4.5; not Mari's 10.5 of 15.
    assert sorted(complete) == [4.5, 9.25, 26.25]
    n, mean, median = stats(complete)
    label, counted, _, shown_mean, shown_median, top, not_counted = table["total"]
    assert (counted, shown_mean, shown_median, top) == (n, mean, median, "27")
    assert "every assignment" in label
    # Mari's total is grades.csv's, named apart with what it is out of; Dan, Grete, Henri
    # have no total in grades.csv.
    assert not_counted == "4: 1 with a total of fewer assignments (below), 3 with no total in grades.csv"
    text = (gradebook / "index.html").read_text(encoding="utf-8")
    partial = text.split('id="partial-totals"')[1].split("</ul>")[0]
    assert "Mari" in partial and "10.5 of 15 (hw3 only)" in partial
    assert "10.5" in [row["Total"] for row in rows if row["Full name"] == "Mari"]
    # The histograms count what the table counts.
    assert f"hw3: score distribution (n={len(numbers['hw3'])})" in text
    assert f"total (every assignment): score distribution (n={n})" in text


def test_the_summarys_scores_are_the_cells_of_grades_csv(gradebook):
    numbers, _ = grades_csv_numbers(gradebook)
    book = Gradebook(gradebook / "gradebook.sqlite")
    summary = class_summary(book.current_runs(), order=ORDER)
    book.close()
    found = {d["id"]: sorted(d["scores"]) for d in summary["distributions"]}
    assert found["hw3"] == sorted(numbers["hw3"])
    assert found["practical5"] == sorted(numbers["practical5"])


# ---- reports not handed in ------------------------------------------------------------------

def answers_of(files: list[dict], source: str = "pdf_then_sheet", instead: str | None = None,
               values: dict | None = None) -> dict:
    return {"assignment": "hw3", "source": source, "values": {"task1.x": 1} if values is None else values,
            "files": files, "report_instead": instead, "needs_manual_review": bool(instead),
            "problems": []}


PDF_OK = {"file": "hw3/report.pdf", "status": "ok", "pages": 3}
PDF_MISSING = {"file": "hw3/report.pdf", "status": "missing", "pages": 0}
SHEET_OK = {"file": "hw3/answers.yaml", "status": "ok"}
SHEET_MISSING = {"file": "hw3/answers.yaml", "status": "missing"}


def test_students_with_no_report_are_listed_per_assignment_that_asks_for_one(tmp_path):
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "Alice_1001", "Alice", "hw3", "graded", 14.5, answers=answers_of([PDF_OK, SHEET_OK]))
    record(book, "Dan_1004", "Dan", "hw3", "graded", 10.5, answers=answers_of([PDF_MISSING, SHEET_OK]))
    record(book, "Henri_1008", "Henri", "hw3", "graded", 8.5, answers=answers_of([PDF_MISSING, SHEET_OK]))
    record(book, "Mari_1010", "Mari", "hw3", "graded", 10.5, answers=answers_of(
        [PDF_MISSING, {"file": "hw3/report.md", "status": "ok", "instead_of": "hw3/report.pdf"},
         SHEET_OK], instead="hw3/report.md"))
    record(book, "Carol_1003", "Carol", "hw3", "graded", 0.0,
           answers=answers_of([PDF_MISSING, SHEET_OK], values={}))
    record(book, "Ivo_1011", "Ivo", "hw3", "graded", 0.0,
           answers=answers_of([PDF_MISSING, SHEET_MISSING], values={}))
    # Practical 5 asks for no report: its answer sheet alone is what was asked.
    record(book, "Alice_2001", "Alice", "practical5", "graded", 11.75, answers={
        "assignment": "practical5", "source": "sheet", "values": {"a": 1},
        "files": [{"file": "practical5/answers.yaml", "status": "ok"}], "report_instead": None})
    book.close()
    write_class_page(out, order=ORDER)
    text = (out / "index.html").read_text(encoding="utf-8")
    table = text.split('id="reports-missing-table"')[1].split("</table>")[0]
    rows = [[re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr class=\"report-\w+\">(.*?)</tr>", table, re.S)]
    assert rows == [
        ["Carol_1003 (Carol)", "hw3", "hw3/report.pdf", "no report, and hw3/answers.yaml answers nothing"],
        ["Dan_1004 (Dan)", "hw3", "hw3/report.pdf", "no report: answers only in hw3/answers.yaml"],
        ["Henri_1008 (Henri)", "hw3", "hw3/report.pdf", "no report: answers only in hw3/answers.yaml"],
        ["Ivo_1011 (Ivo)", "hw3", "hw3/report.pdf", "no report and no hw3/answers.yaml"],
        ["Mari_1010 (Mari)", "hw3", "hw3/report.pdf", "hw3/report.md instead of hw3/report.pdf"],
    ]
    assert "Alice" not in table
    to_do = re.search(r'<p id="to-do">(.*?)</p>', text, re.S).group(1)
    assert "5 report(s) not handed in as the handout asks" in to_do
    # Listed, not charged: the page says the penalty is the course's to give.
    assert "no points were taken for a missing report" in text


def test_no_report_asked_or_every_report_handed_in_lists_nobody(tmp_path):
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "Alice_1001", "Alice", "hw3", "graded", 14.5, answers=answers_of([PDF_OK, SHEET_OK]))
    record(book, "Bob_1002", "Bob", "hw3", "graded", 4.5,
           answers=answers_of([SHEET_OK], source="sheet"))
    book.close()
    write_class_page(out, order=ORDER)
    text = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="reports-missing-table"' not in text
    assert "None: every graded student handed in the report each assignment asks for." in text


def test_a_scan_whose_answers_wait_to_be_read_is_an_empty_cell_said_why(tmp_path):
    """A TA's audit 30 (D6): a scanned report's 2 read points were grades.csv's and Moodle's
    grade with Status "graded"; its 13 other points wait for a person. No grade until then,
    as a held submission's, counted apart on the page with why."""
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    record(book, "Alice_1001", "Alice", "hw3", "graded", 14.5)
    record(book, "Mihkel_1002", "Mihkel", "hw3", "graded", 2.0)
    found = book.current_runs()
    scan = next(r for r in found if r.student.key == "Mihkel_1002").result
    scan["assignments"][0]["items"][0].update(status="pending", pending_points=8.5)
    config = RunConfig("test", "rubrics", {"hw3": "1"}, ("hw3",), "config-hw3")
    book.record_run(Student("Mihkel_1002", "Mihkel", participant_id="1002"), "h-Mihkel_1002",
                    "Mihkel_1002", config, RunRecord("graded", "2026-05-01T10:00:00+00:00",
                                                     "2026-05-01T10:01:00+00:00", None, scan), [])
    book.close()
    book = Gradebook(out / "gradebook.sqlite")
    write_grades_csv(out / "grades.csv", book.current_runs(), ["hw3"])
    book.close()
    write_class_page(out, order=["hw3"])
    numbers, rows = grades_csv_numbers_of(out, ["hw3"])
    assert numbers["hw3"] == [14.5]
    mihkel = next(row for row in rows if row["Full name"] == "Mihkel")
    assert mihkel["Status"] == "graded, no grade until a person reads answers: hw3 (8.5 points wait)"
    assert page_table(out)["hw3"][6] == "1: 1 points waiting for a person"


def grades_csv_numbers_of(out: Path, columns: list[str]):
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {c: [float(row[c]) for row in rows if row[c].strip()] for c in columns}, rows
