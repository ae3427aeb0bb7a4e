"""Moodle's "Upload grading worksheet": the CSV per assignment, read the way Moodle's importer
reads it, and a worksheet downloaded from Moodle filled in place of its Grade and Feedback
comments."""
from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile

import pytest

from grader.batch.moodle_worksheet import FEEDBACK, MOODLE_HEADER, REQUIRED
from grader.batch.pipeline import BatchError
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission

# What Moodle's importer looks for (mod/assign/feedback/offline/importgradeslib.php, init()):
# get_string('recordid', 'assign'), get_string('grade'), get_string('lastmodifiedgrade',
# 'assign'), English language pack; the comments plugin's editor field is
# get_string('pluginname', 'assignfeedback_comments'); an identifier is
# get_string('hiddenuser', 'assign') followed by the participant id.
MOODLE_RECORDID, MOODLE_GRADE, MOODLE_MODIFIED = "Identifier", "Grade", "Last modified (grade)"
MOODLE_COMMENTS, MOODLE_HIDDENUSER = "Feedback comments", "Participant "
# The header of a worksheet as Moodle 4 downloads it with an ID-number field and online text.
DOWNLOADED = ['Identifier', 'Full name', 'ID number', 'Email address', 'Status', 'Grade',
              'Maximum Grade', 'Grade can be changed', 'Last modified (submission)', 'Online text',
              'Last modified (grade)', 'Feedback comments']


def moodle_import(text: str) -> list[dict]:
    """importgradeslib.php's init() and next() in Python: columns found by name, the three
    required ones or nothing, the participant id after the 'Participant ' prefix, feedback
    columns used only at an index other than 0 (its `!empty($details['index'])`)."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    columns = rows[0]
    index = {name: i for i, name in enumerate(columns)}
    if any(name not in index for name in (MOODLE_RECORDID, MOODLE_GRADE, MOODLE_MODIFIED)):
        raise AssertionError(f"Moodle refuses the file: invalidgradeimport (columns {columns})")
    records = []
    for row in rows[1:]:
        feedback = index.get(MOODLE_COMMENTS)
        records.append({"id": row[index[MOODLE_RECORDID]][len(MOODLE_HIDDENUSER):],
                        "grade": row[index[MOODLE_GRADE]],
                        "modified": row[index[MOODLE_MODIFIED]],
                        "feedback": row[feedback] if feedback else None})
    return records


def test_the_header_has_what_moodles_importer_requires():
    assert set(REQUIRED) == {MOODLE_RECORDID, MOODLE_GRADE, MOODLE_MODIFIED}
    assert set(REQUIRED) <= set(MOODLE_HEADER) and FEEDBACK == MOODLE_COMMENTS
    assert MOODLE_HEADER.index(FEEDBACK) > 0                 # index 0 would be ignored
    # The order and names of Moodle's own download (the list; tests/batch's fixture).
    assert MOODLE_HEADER == ("Identifier", "Full name", "Email address", "Status", "Grade",
                             "Maximum Grade", "Grade can be changed", "Last modified (submission)",
                             "Last modified (grade)", "Feedback comments")


def _moodle_class(subs, scores: dict[str, float]):
    for (name, pid), score in scores.items():
        make_submission(subs / f"{name}_{pid}_assignsubmission_file_", score=score)


def test_a_worksheet_per_assignment_that_moodle_reads_back(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _moodle_class(subs, {("Mari Maasikas", 101): 7, ("Jaan Tamm", 102): 10})
    make_submission(subs / "liis", score=4)                 # not from Moodle: no participant id
    make_submission(subs / "Kalle Kask_103_assignsubmission_file_", behaviour="crash")
    stream = io.StringIO()
    run_test_batch(subs, out, ["practical4"], stream=stream)
    text = (out / "moodle" / "practical4.csv").read_text(encoding="utf-8")
    assert next(csv.reader(io.StringIO(text))) == list(MOODLE_HEADER)
    records = {r["id"]: r for r in moodle_import(text)}
    assert sorted(records) == ["101", "102", "103"]
    assert (records["101"]["grade"], records["102"]["grade"]) == ("7", "10")
    assert records["103"]["grade"] == ""                      # errored: Moodle skips it
    when = dt.datetime.fromisoformat(records["101"]["modified"])
    assert abs((dt.datetime.now(dt.timezone.utc) - when).total_seconds()) < 600
    assert records["101"]["feedback"].startswith("practical4: 7 of 10 points. Points lost in: "
                                                 "everything (7/10).")
    assert "Full report: report.html, among this assignment's feedback files" \
        in records["101"]["feedback"]
    assert str(tmp_path) not in text and "out/" not in text, "no path of the staff's machine"
    # The reports themselves, for "Upload multiple feedback files in a zip": one folder per
    # graded participant, named as Moodle's importer reads it (errored Kalle and Liis, who has
    # no participant id, have none).
    with zipfile.ZipFile(out / "moodle" / "practical4-feedback-files.zip") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    imported = {}
    for member, data in members.items():
        # Moodle before 4.1: explode('_', $filepath . $filename, 5), five parts or skipped,
        # the last the file's name (4.1 and later also split each folder's name so).
        info = ("/" + member).split("_", 4)
        assert len(info) == 5 and info[1].isdigit() and info[2:4] == ["assignfeedback", "file"], member
        imported[info[1]] = (info[4].lstrip("/"), data)
    assert sorted(imported) == ["101", "102"]
    key = "Mari_Maasikas_101"
    assert imported["101"] == ("report.html",
                               (out / "submissions" / key / "report.html").read_bytes())
    assert "liis" in stream.getvalue() and "no participant id" in stream.getvalue()
    assert (out / "grades.csv").is_file()                    # the course's own record stays


def _downloaded(path, rows: list[list[str]], bom: bool = True):
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows([DOWNLOADED, *rows])
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode("utf-8"))
    return path


def test_the_downloaded_worksheet_is_filled_keeping_its_columns_and_rows(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _moodle_class(subs, {("Mari Maasikas", 101): 7, ("Jaan Tamm", 102): 10})
    make_submission(subs / "Kalle Kask_103_assignsubmission_file_", behaviour="crash")
    sheet = _downloaded(tmp_path / "worksheet.csv", [
        ["Participant 101", "Mari Maasikas", "A1", "mari@uni.example", "Submitted for grading", "",
         "12.00", "Yes", "Friday, 1 May 2026, 10:05 AM", "", "-", ""],
        ["Participant 102", "Jaan Tamm", "A2", "jaan@uni.example", "Submitted for grading", "",
         "12.00", "Yes", "Friday, 1 May 2026, 11:00 AM", "my text, with, commas", "-", ""],
        ["Participant 103", "Kalle Kask", "A3", "kalle@uni.example", "Submitted for grading", "5.00",
         "12.00", "Yes", "-", "", "Monday, 4 May 2026, 9:00 AM", "graded by hand"],
        ["Participant 104", "Nobody Here", "A4", "n@uni.example", "No submission", "", "12.00",
         "Yes", "-", "", "-", ""]])
    original = sheet.read_bytes()
    run_test_batch(subs, out, ["practical4"], moodle_worksheets=((None, sheet),))
    assert sheet.read_bytes() == original                    # the download is never changed
    filled = (out / "moodle" / "practical4-worksheet.csv").read_bytes()
    assert filled.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(filled.decode("utf-8-sig"))))
    assert rows[0] == DOWNLOADED and len(rows) == 5
    by_id = {row[0]: row for row in rows[1:]}
    assert by_id["Participant 101"][5] == "7" and by_id["Participant 102"][5] == "10"
    assert by_id["Participant 102"][9] == "my text, with, commas"            # kept
    assert by_id["Participant 101"][10] == "-"          # Moodle's own time: its stale check holds
    assert by_id["Participant 101"][11].startswith("practical4: 7 of 10 points.")
    assert by_id["Participant 103"][5:] == ["5.00", "12.00", "Yes", "-", "",
                                            "Monday, 4 May 2026, 9:00 AM", "graded by hand"]
    assert by_id["Participant 104"] == rows[4]          # untouched
    records = {r["id"]: r for r in moodle_import(filled.decode("utf-8"))}
    assert records["101"]["grade"] == "7" and records["104"]["grade"] == ""


def test_a_worksheet_moodle_would_refuse_stops_the_batch_before_grading(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _moodle_class(subs, {("Mari Maasikas", 101): 7})
    german = tmp_path / "bewertungstabelle.csv"
    german.write_text("Identifikationsnummer,Vollständiger Name,Bewertung,Zuletzt geändert (Bewertung)\n")
    with pytest.raises(BatchError, match=r"no column 'Identifier', 'Grade', 'Last modified \(grade\)'"
                                         r".*switch it to English"):
        run_test_batch(subs, out, ["practical4"], moodle_worksheets=((None, german),))
    assert not (out / "gradebook.sqlite").exists()
    sheet = _downloaded(tmp_path / "w.csv", [])
    with pytest.raises(BatchError, match="say which assignment the worksheet is for"):
        run_test_batch(subs, out, ["practical4", "hw3"], moodle_worksheets=((None, sheet),))
    with pytest.raises(BatchError, match="hw3 is not graded by this batch"):
        run_test_batch(subs, out, ["practical4"], moodle_worksheets=(("hw3", sheet),))


def test_the_command_line_takes_a_worksheet_with_or_without_its_assignment(tmp_path):
    from grader.cli import build_parser
    from grader.cli.batch import _worksheet_argument
    options = build_parser().parse_args(["batch", "subs", "--out", "o", "--moodle-worksheet",
                                         "hw3=ws.csv", "--moodle-worksheet", "other.csv"])
    assert [_worksheet_argument(t) for t in options.moodle_worksheet] == [
        ("hw3", "ws.csv"), (None, "other.csv")]


def _run(status: str, items: list[dict], message: str | None = None):
    from grader.batch.gradebook import CurrentRun
    from grader.batch.inputs import Student
    result = {"assignments": [{"id": "hw3", "score": sum(i["score"] for i in items),
                               "max_score": 15, "items": items}]}
    return CurrentRun(Student("Mari_Maasikas_101", "Mari Maasikas", "101"), status, message,
                      "c", "g", result, {"hw3": result["assignments"][0]["score"]})


def test_a_rejected_upload_says_why_and_nothing_about_items_or_a_report():
    from grader.batch.moodle_worksheet import comment
    items = [{"id": "hw3.task1", "title": "Task 1", "kind": "auto", "score": 0, "max_score": 2},
             {"id": "hw3.task1.explanation", "kind": "manual", "status": "manual",
              "pending": True, "score": 0, "max_score": 1}]
    text = comment(_run("rejected", items, "mari.zip is not a readable zip file (no "
                                            "end-of-archive record)"), "hw3", "report.html")
    assert text.startswith("hw3: 0 of 15 points: the upload could not be graded (mari.zip is "
                           "not a readable zip file (no end-of-archive record)). Hand it in "
                           "again, or ask the course staff."), text
    assert "Points lost" not in text and "written answer" not in text and "report" not in text


def test_written_answers_the_staff_scored_are_no_longer_said_to_wait():
    from grader.batch.moodle_worksheet import comment
    scored = {"id": "hw3.task1.explanation", "kind": "manual", "status": "manual",
              "pending": False, "score": 1, "max_score": 1}
    waiting = dict(scored, id="hw3.task2.explanation", pending=True, score=0)
    assert "still to be graded" not in comment(_run("graded", [scored]), "hw3", "r")
    assert "1 written answer(s) are still to be graded" in comment(
        _run("graded", [scored, waiting]), "hw3", "r")


def test_points_waiting_for_a_person_to_read_an_answer_are_not_said_lost():
    """An answer found but not read waits for a person (grader/scoring/score.py): the comment
    says so, and lists no points lost for it."""
    from grader.batch.moodle_worksheet import comment
    waiting = {"id": "hw3.task1", "title": "Task 1", "kind": "auto", "status": "pending",
               "score": 1, "max_score": 2, "pending_points": 1}
    lost = dict(waiting, id="hw3.task2", title="Task 2", status="partial", pending_points=0)
    text = comment(_run("graded", [waiting]), "hw3", "r")
    assert "Points lost" not in text, text
    assert "1 answer(s) the grader could not read wait for the staff (1 point(s))" in text, text
    assert "Points lost in: Task 2 (1/2)." in comment(_run("graded", [waiting, lost]), "hw3", "r")


def test_a_file_name_imitating_moodles_prefix_cannot_take_another_participants_row(tmp_path):
    """Moodle's flat download prefixes the student's own file name: a file named like another
    participant's upload ("x_999_assignsubmission_file_y.zip") stays its uploader's."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Vic Tim_999_assignsubmission_file_", score=9)
    forged = subs / "Zed Zorro_123_assignsubmission_file_x_999_assignsubmission_file_y"
    make_submission(forged, score=1)
    sheet = _downloaded(tmp_path / "worksheet.csv", [
        ["Participant 999", "Vic Tim", "A1", "vic@uni.example", "Submitted for grading", "", "12.00",
         "Yes", "-", "", "-", ""],
        ["Participant 123", "Zed Zorro", "A2", "zed@uni.example", "Submitted for grading", "", "12.00",
         "Yes", "-", "", "-", ""]])
    run_test_batch(subs, out, ["practical4"], moodle_worksheets=((None, sheet),))
    rows = {row[0]: row for row in csv.reader(io.StringIO(
        (out / "moodle" / "practical4-worksheet.csv").read_text(encoding="utf-8-sig")))}
    assert rows["Participant 999"][5] == "9" and rows["Participant 123"][5] == "1"
    grades = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    assert sorted((row[0], row[1], row[2]) for row in grades[1:]) == [
        ("Participant 123", "Zed Zorro", "1"), ("Participant 999", "Vic Tim", "9")]


def test_a_participant_id_two_uploads_claim_gets_no_grade_and_a_note(tmp_path):
    """Moodle gives each student one id: two names with one id is for a person, never a row
    filled with whichever upload sorted last."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    _moodle_class(subs, {("Vic Tim", 999): 9, ("Evil Twin", 999): 1, ("Mari Maasikas", 101): 7})
    sheet = _downloaded(tmp_path / "worksheet.csv", [
        ["Participant 999", "Vic Tim", "A1", "vic@uni.example", "Submitted for grading", "", "12.00",
         "Yes", "-", "", "-", ""],
        ["Participant 101", "Mari Maasikas", "A2", "m@uni.example", "Submitted for grading", "",
         "12.00", "Yes", "-", "", "-", ""]])
    stream = io.StringIO()
    run_test_batch(subs, out, ["practical4"], moodle_worksheets=((None, sheet),), stream=stream)
    filled = {row[0]: row for row in csv.reader(io.StringIO(
        (out / "moodle" / "practical4-worksheet.csv").read_text(encoding="utf-8-sig")))}
    assert filled["Participant 999"][5] == "" and filled["Participant 101"][5] == "7"
    own = {r["id"]: r for r in moodle_import((out / "moodle" / "practical4.csv").read_text())}
    assert sorted(own) == ["101"]
    assert "Participant 999 is claimed by 2 uploads (Evil_Twin_999, Vic_Tim_999)" in stream.getvalue()
    # Nor does either report go to participant 999 as a feedback file.
    with zipfile.ZipFile(out / "moodle" / "practical4-feedback-files.zip") as archive:
        assert archive.namelist() == ["Mari Maasikas_101_assignfeedback_file_/report.html"]


def test_a_feedback_folder_name_keeps_moodles_underscores_its_own(tmp_path):
    """Moodle splits the folder's name at underscores to find the participant id: a full name
    with an underscore (or a slash) would hand the report to no one, or to another id."""
    from grader.batch.gradebook import Gradebook
    from grader.batch.moodle_worksheet import write_feedback_files
    subs, out = tmp_path / "subs", tmp_path / "out"
    _moodle_class(subs, {("Anna_Maria", 105): 8})
    run_test_batch(subs, out, ["practical4"])
    book = Gradebook(out / "gradebook.sqlite")
    runs = list(book.current_runs())
    book.close()
    import dataclasses
    (run,) = runs
    run = dataclasses.replace(run, student=dataclasses.replace(run.student,
                                                               name="Anna_Maria/../101_x"))
    target = tmp_path / "feedback.zip"
    assert write_feedback_files(target, out, [run], "practical4") == 1
    with zipfile.ZipFile(target) as archive:
        (member,) = archive.namelist()
    assert member == "Anna Maria .. 101 x_105_assignfeedback_file_/report.html"
    assert member.split("/")[0].split("_", 4)[1] == "105"


def test_a_held_assignment_has_no_grade_to_upload_nor_a_total():
    """A held submission had gone to Moodle as a 0: every honest student held by mistake was
    shown one. Held is no verdict yet: the cells stay empty, the status says why."""
    from grader.batch.grades_csv import grades_rows
    from grader.batch.moodle_worksheet import grade_cell
    item = {"id": "hw3.task1", "title": "Task 1", "kind": "auto", "score": 0, "max_score": 3}
    held = _run("graded", [item])
    held.result["assignments"][0]["integrity"] = {"withheld": True, "withheld_points": 10.5}
    assert held.held == ["hw3"] and grade_cell(held, "hw3") is None
    header, row = grades_rows([held])
    assert row[header.index("hw3")] == "" and row[header.index("Total")] == ""
    assert row[header.index("Status")] == "graded, held for review: hw3"
    cleared = _run("graded", [item])
    cleared.result["assignments"][0]["integrity"] = {"withheld": False, "cleared": True}
    assert cleared.held == [] and grade_cell(cleared, "hw3") == "0"
    assert grades_rows([cleared])[1][header.index("Total")] == "0"


# A scanned HW3 report (a TA's audit 30, D6): 2 automatic points read, 8.5 waiting for a person
# to read the answers, 4.5 of written answers waiting as in every report.
SCANNED = [{"id": "hw3.task1", "title": "Task 1", "kind": "auto", "status": "pending", "score": 0,
            "max_score": 2, "pending_points": 2},
           {"id": "hw3.task3", "title": "Task 3", "kind": "auto", "status": "passed", "score": 2,
            "max_score": 2},
           {"id": "hw3.task4", "title": "Task 4", "kind": "auto", "status": "pending", "score": 0,
            "max_score": 6.5, "pending_points": 6.5},
           {"id": "hw3.task1.explanation", "kind": "manual", "status": "manual", "pending": True,
            "score": 0, "max_score": 4.5}]


def _waiting(run, unread: float, written: float):
    found = run.result["assignments"][0]
    found["pending_points"] = unread + written
    found["pending_unread"] = [i["id"] for i in found["items"] if i.get("pending_points")]
    return run


def test_a_report_the_grader_could_not_read_has_no_grade_until_a_person_has_read_it():
    """Its 2 points were uploaded as the grade with Status "graded": an instructor uploading the
    worksheet at once published 2/15 for a full solution. Answers found but not read are points
    the grader could not decide, as a held submission's: no grade anywhere (grades.csv, Moodle,
    the total) until a person has read them (an override), and every cell says what waits."""
    from grader.batch.grades_csv import grades_rows
    from grader.batch.moodle_worksheet import comment, grade_cell, worksheet_rows
    scan = _waiting(_run("graded", SCANNED), unread=8.5, written=4.5)
    assert grade_cell(scan, "hw3") is None
    header, row = grades_rows([scan])
    assert row[header.index("hw3")] == "" and row[header.index("Total")] == ""
    assert row[header.index("Status")] == ("graded, no grade until a person reads answers: hw3 "
                                           "(8.5 points wait)"), row
    text = comment(scan, "hw3", "report.html")
    assert text.startswith("hw3: no grade yet, 13 of 15 points wait for the staff; 2 points so "
                           "far."), text
    assert "4 answer" not in text and "2 answer(s) the grader could not read wait for the staff " \
        "(8.5 point(s))" in text, text
    assert "report.html" not in text, "no report goes with a row that has no grade"
    rows, _ = worksheet_rows([scan], "hw3", 15, lambda key: "report.html", written_at="T")
    sheet = dict(zip(rows[0], rows[1]))
    assert sheet["Grade"] == "", "Moodle skips an empty grade: the student is left as they are"
    assert sheet["Status"] == "Submitted for grading; no grade yet: 13 points wait for a person"
    # The comment is imported without a grade; its time keeps Moodle's stale check honest.
    assert sheet["Feedback comments"] == text and sheet["Last modified (grade)"] == "T"
    # The batch's line for it on the console, as a held submission's.
    from grader.batch.pipeline import _score_of
    assert _score_of({**scan.result, "max_score": 15}) == ("\u2014/15, no grade until a person reads answers: hw3 "
                                      "(8.5 points wait)")


def test_written_answers_alone_waiting_leave_a_provisional_grade_that_says_so():
    """README's flow: the grade holds the automatic points and the written answers scored so
    far (uploaded again after the overrides); the worksheet says it is not final."""
    from grader.batch.grades_csv import grades_rows
    from grader.batch.moodle_worksheet import comment, grade_cell, worksheet_rows
    items = [dict(SCANNED[1], max_score=10.5, score=10.5), SCANNED[3]]
    run = _waiting(_run("graded", items), unread=0, written=4.5)
    assert grade_cell(run, "hw3") == "10.5"
    assert comment(run, "hw3", "r").startswith(
        "hw3: 10.5 of 15 points so far, provisional: 4.5 points wait for the staff."), \
        comment(run, "hw3", "r")
    rows, _ = worksheet_rows([run], "hw3", 15, lambda key: "report.html", written_at="T")
    sheet = dict(zip(rows[0], rows[1]))
    assert (sheet["Grade"], sheet["Status"]) == (
        "10.5", "Submitted for grading; provisional: 4.5 points wait for a person")
    header, row = grades_rows([run])
    # grades.csv says it as the worksheet does (adv39 M2: it had said only "graded")
    assert (row[header.index("hw3")], row[header.index("Status")]) == (
        "10.5", "graded, provisional: hw3 (4.5 points wait for a person)")


def test_a_grade_with_nothing_waiting_reads_as_before():
    from grader.batch.moodle_worksheet import comment, worksheet_rows
    run = _run("graded", [dict(SCANNED[1], max_score=15, score=12)])
    assert comment(run, "hw3", "r").startswith("hw3: 12 of 15 points. ")
    rows, _ = worksheet_rows([run], "hw3", 15, lambda key: "r", written_at="T")
    assert dict(zip(rows[0], rows[1]))["Status"] == "Submitted for grading"
