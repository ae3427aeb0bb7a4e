"""A grade that is not final reads the same in every output (adv39 F5, M2).

- Held for review: the class page had shown the score after withholding, "0/15", for a held
  student whose grades.csv cell and Moodle grade are empty; the console says "—/15, 5 points
  withheld for review". The page now says "—/15 (5 withheld)" and leaves the total empty.
- Written answers waiting: Moodle's Status says "provisional: 4.5 points wait for a person";
  grades.csv's had said only "graded"."""
from __future__ import annotations

import csv
import re

import pytest

from grader.batch.class_page import write_class_page
from grader.batch.gradebook import Gradebook, RunConfig, RunRecord
from grader.batch.grades_csv import write_grades_csv
from grader.batch.inputs import Student
from grader.scoring import build_result


def hw3(score: float, *, withheld: float = 0.0, cleared: bool = False,
        written_waiting: float = 0.0, unread: float = 0.0) -> dict:
    automatic = {"id": "hw3.task3", "title": "Task 3", "kind": "auto", "score": score,
                 "max_score": 10.5, "points": 10.5, "status": "passed" if score else "failed",
                 "feedback": "", "checks": []}
    if unread:
        automatic.update(status="pending", pending_points=unread)
    written = {"id": "hw3.task3.explanation", "title": "Task 3 - written answer",
               "kind": "manual", "score": 0.0, "max_score": 4.5, "points": 4.5,
               "status": "pending", "pending": bool(written_waiting), "feedback": "",
               "checks": [], **({"pending_points": written_waiting} if written_waiting else {})}
    found = {"id": "hw3", "title": "HW3", "rubric_version": "1", "score": score,
             "max_score": 15.0, "rubric_max_score": 15.0, "excluded_points": 0.0,
             "status": "graded", "errors": [], "late": None,
             "pending_manual": ["hw3.task3.explanation"] if written_waiting else [],
             "pending_points": written_waiting, "items": [automatic, written]}
    if withheld or cleared:
        found["integrity"] = {"problems": ["hw3/model_parallel.py:3 reaches into the grader"],
                              "withheld": not cleared, "withheld_points": withheld,
                              "cleared": cleared, "comment": "looked at it" if cleared else ""}
    return found


@pytest.fixture
def out(tmp_path):
    out = tmp_path / "grades"
    out.mkdir()
    book = Gradebook(out / "gradebook.sqlite")
    config = RunConfig("test", "rubrics", {"hw3": "1"}, ("hw3",), "config-hw3")
    rows = {
        # Sven patched perf_counter: 5 automatic points withheld, 0 left in the score.
        "Sven_Patcher_20161": hw3(0.0, withheld=5.0),
        # Released by the staff: an ordinary grade again.
        "Gus_Released_20162": hw3(5.0, withheld=5.0, cleared=True),
        # Anna: 10.5 so far, 4.5 points of written answers wait.
        "Anna_Tamm_20007": hw3(10.5, written_waiting=4.5),
        # Every point decided.
        "Bert_Kask_20014": hw3(10.5),
        # Peeter's password PDF: 2 points read, 8.5 wait for a person to read his answers.
        "Peeter_Parool_20170": hw3(2.0, unread=8.5),
    }
    for key, found in rows.items():
        result = build_result(key, [found])
        book.record_run(Student(key, key.rsplit("_", 1)[0].replace("_", " "),
                                participant_id=key.rsplit("_", 1)[1]), f"h-{key}", key, config,
                        RunRecord("graded", "2026-12-07T08:40:00+00:00",
                                  "2026-12-07T08:41:00+00:00", None, result), [])
    write_grades_csv(out / "grades.csv", book.current_runs(), ["hw3"])
    book.close()
    return out


def roster_cells(out) -> dict[str, list[str]]:
    text = write_class_page(out, order=["hw3"]).read_text(encoding="utf-8")
    table = text.split('id="student-table"')[1].split("</table>")[0]
    rows = re.findall(r'<tr class="student" id="student-(\w+)">(.*?)</tr>', table, re.S)
    return {key: re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for key, row in rows}


def csv_rows(out) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", encoding="utf-8", newline="") as handle:
        return {row["Key"]: row for row in csv.DictReader(handle)}


def test_a_held_student_is_no_zero_on_the_class_page(out):
    cells = roster_cells(out)
    sven = cells["Sven_Patcher_20161"]
    assert sven[2:5] == ["\u2014/15 (5 withheld)", "", "graded, held for review"], (
        f"expected the held HW3 cell as the console says it and no total, observed {sven[2:5]} "
        "(grader/batch/class_page.py _roster / _score_cell)")
    assert "0/15" not in "".join(sven), f"a held student read as a zero: {sven}"
    # grades.csv, the record the page mirrors: no number, no total.
    row = csv_rows(out)["Sven_Patcher_20161"]
    assert (row["hw3"], row["Total"]) == ("", ""), f"grades.csv's held row: {row}"


def test_a_released_hold_and_an_ordinary_grade_keep_their_numbers(out):
    cells = roster_cells(out)
    assert cells["Gus_Released_20162"][2:4] == ["5/15", "5/15"], cells["Gus_Released_20162"]
    assert cells["Bert_Kask_20014"][2:5] == ["10.5/15", "10.5/15", "graded"], \
        cells["Bert_Kask_20014"]


def test_grades_csv_says_a_grade_with_written_answers_waiting_is_provisional(out):
    rows = csv_rows(out)
    anna = rows["Anna_Tamm_20007"]
    assert (anna["hw3"], anna["Total"]) == ("10.5", "10.5"), f"the grade so far stays: {anna}"
    assert anna["Status"] == "graded, provisional: hw3 (4.5 points wait for a person)", (
        f"expected grades.csv to say the grade is provisional as Moodle's sheet does, observed "
        f"{anna['Status']!r} (grader/batch/grades_csv.py run_status / provisional)")
    assert rows["Bert_Kask_20014"]["Status"] == "graded", rows["Bert_Kask_20014"]
    # A held row says it is held, not provisional.
    assert "provisional" not in rows["Sven_Patcher_20161"]["Status"], rows["Sven_Patcher_20161"]


def test_a_student_whose_answers_wait_to_be_read_has_no_number_on_the_class_page(out):
    """adv45 F2: Peeter's password PDF left 8.5 points for a person; grades.csv and Moodle have
    no grade, but the page showed "2/15" for HW3 and the total, a number a TA would enter."""
    row = csv_rows(out)["Peeter_Parool_20170"]
    assert (row["hw3"], row["Total"]) == ("", ""), f"grades.csv's row: {row}"
    peeter = roster_cells(out)["Peeter_Parool_20170"]
    assert peeter[2:4] == ["\u2014/15 (needs a person: 8.5 points wait)", ""], (
        f"expected no grade in the HW3 cell, as grades.csv, and no total; observed {peeter[2:5]} "
        "(grader/batch/class_page.py _roster / _score_cell)")
    assert "2/15" not in "".join(peeter), f"points so far read as a grade: {peeter}"
    assert "no grade until a person reads answers: hw3 (8.5 points wait)" in peeter[4], peeter
