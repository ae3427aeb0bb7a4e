"""Submission times in batch grading: the three file formats, matching them to the Moodle and
Gradescope layouts, late penalties reaching result.json, report.md and grades.csv, re-scoring
when only a time changes, bad files never stopping a batch, and the gradebook's migration."""
import csv
import datetime as dt
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.fake_graders import calls, fake_report, make_submission, scoring_grade
from grader.batch import gradebook as gradebook_module
from grader.batch.gradebook import Gradebook
from grader.batch.inputs import Student, discover
from grader.batch.pipeline import BatchError
from grader.cli import build_parser
from grader.batch.submission_times import (GRADESCOPE_KIND, MOODLE_KIND, PLAIN_KIND,
                                           SubmissionTimesError, load, parse_moodle)
from grader.scoring import load_rubrics, score_assignment
from tests.support import run_test_batch

BERLIN = "Europe/Berlin"
CEST = dt.timezone(dt.timedelta(hours=2))
DUE = "2026-04-30T23:59:00+02:00"
# A rubric of our own: 10 points, due as HW3 is, 10% per started day, nothing after 5 days.
RUBRIC = f"""assignment: hw3
title: "HW3 (test rubric)"
version: "t1"
gpus: 2
total_points: 10
due: "{DUE}"
late_policy: {{per_day: 0.1, max_days: 5}}
items:
  - id: hw3.code
    title: "The code"
    points: 10
    checks:
      - {{check: hw3.code.works, points: 10, partial: proportional}}
"""
WORKSHEET_HEADER = ('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
                    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
                    '"Feedback comments"\n')


def worksheet_row(pid: int, name: str, modified: str) -> str:
    return (f'"Participant {pid}","{name}",{name.split()[0].lower()}@uni.example,'
            f'"Submitted for grading",,10.00,Yes,"{modified}",-,\n')


@pytest.fixture
def rubrics(tmp_path) -> Path:
    folder = tmp_path / "rubrics"
    folder.mkdir()
    (folder / "hw3.yaml").write_text(RUBRIC)
    return folder


@pytest.fixture
def calls_log(tmp_path, monkeypatch):
    path = tmp_path / "calls.log"
    monkeypatch.setenv("PDL_FAKE_CALLS", str(path))
    return path


def batch(subs, out, rubrics, **options):
    options.setdefault("grade_fn", scoring_grade)
    return run_test_batch(subs, out, ["hw3"], rubrics_dir=str(rubrics), **options)


def grades(out: Path) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    return {row["Identifier"]: row for row in rows}


def result(out: Path, key: str) -> dict:
    return json.loads((out / "submissions" / key / "result.json").read_text())


def penalty_items(res: dict) -> list[dict]:
    return [i for a in res["assignments"] for i in a["items"] if i["id"] == "hw3.late_penalty"]


def query(out: Path, sql: str, *args):
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        return db.execute(sql, args).fetchall()


# --- the three formats ---------------------------------------------------------------------

def test_moodle_worksheet_dates_in_the_zone_given(tmp_path):
    path = tmp_path / "worksheet.csv"
    path.write_text("\ufeff" + WORKSHEET_HEADER
                    + worksheet_row(101, "Jane Doe", "Thursday, 30 April 2026, 11:59 PM")
                    + worksheet_row(102, "Ann Lee", "Friday, 1 May 2026, 9:05 AM")
                    + worksheet_row(103, "Bob Roe", "-")
                    + worksheet_row(104, "Cy Winter", "Monday, 5 January 2026, 12:30 AM")
                    + worksheet_row(105, "Di Noon", "Saturday, 2 May 2026, 12:00 PM")
                    + worksheet_row(106, "Ed Wrong", "Friday, 30 April 2026, 9:05 AM")
                    + worksheet_row(107, "Flo Junk", "sometime in May")
                    + worksheet_row(108, "Gus Clock", "Thursday, 30 April 2026, 23:15"),
                    encoding="utf-8")
    times = load(path, BERLIN)
    assert times.kind == MOODLE_KIND and times.problems == []
    by_pid = {next(iter(e.keys)): e for e in times.entries}
    when = {k.split(":")[1]: (e.when.isoformat() if e.when else None) for k, e in by_pid.items()}
    assert when == {"101": DUE,                                  # CEST in summer ...
                    "102": "2026-05-01T09:05:00+02:00",
                    "103": None,                                 # "-": nothing submitted
                    "104": "2026-01-05T00:30:00+01:00",          # ... CET in winter; 12:30 AM
                    "105": "2026-05-02T12:00:00+02:00",          # 12:00 PM is noon
                    "106": None, "107": None,
                    "108": "2026-04-30T23:15:00+02:00"}          # a 24-hour site
    assert by_pid["participant:103"].problem is None
    assert by_pid["participant:106"].problem == ("'Friday, 30 April 2026, 9:05 AM' says Friday, "
                                                 "but 30 April 2026 is a Thursday")
    assert by_pid["participant:106"].where == "worksheet.csv line 7"
    assert "'sometime in May' is not a date in Moodle's format" in by_pid["participant:107"].problem
    assert by_pid["participant:107"].where == "worksheet.csv line 8"
    # The same wall-clock time elsewhere is another instant.
    assert load(path, "America/New_York").lookup(
        Student("Jane_Doe_101", "Jane Doe", "101")).when.isoformat() == "2026-04-30T23:59:00-04:00"


def test_moodle_worksheet_without_a_zone_is_refused_naming_the_option(tmp_path, rubrics, pdl_grade):
    path = tmp_path / "worksheet.csv"
    path.write_text(WORKSHEET_HEADER + worksheet_row(101, "Jane Doe", "Thursday, 30 April 2026, 11:59 PM"))
    with pytest.raises(SubmissionTimesError, match="--timezone"):
        load(path)
    with pytest.raises(SubmissionTimesError, match="not a time zone name"):
        load(path, "Mars/Olympus")
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Jane Doe_101_assignsubmission_file_", score=10)
    run = pdl_grade("batch", subs, "--out", out, "--assignment", "hw3", "--rubrics", rubrics,
                    "--submission-times", path)
    assert run.code == 2
    err = run.err
    assert "worksheet.csv is a Moodle grading worksheet" in err and "--timezone Europe/Berlin" in err
    assert not (out / "gradebook.sqlite").exists()           # refused before anything started
    with pytest.raises(BatchError, match="--timezone applies to the times of --submission-times"):
        batch(subs, out, rubrics, timezone=BERLIN)


GRADESCOPE_YML = """\
submission_1001:
  :submitters:
  - :name: Ann Lee
    :sid: 's100'
    :email: ann@uni.example
  :created_at: 2026-04-30 21:59:03.123456789 +0200
  :score: 10.0
  :status: processed
  :results: !ruby/hash:ActiveSupport::HashWithIndifferentAccess
    score: 10.0
submission_1002:
  :submitters:
  - :name: Bo Kim
    :sid: 's200'
    :email: bo@uni.example
  - :name: Cat Poe
    :sid: 's201'
    :email: cat@uni.example
  :created_at: 2026-05-01 10:00:00.000000000 -07:00
submission_1003:
  :submitters:
  - :name: Dee Day
    :sid: 's300'
  :created_at: '2026-05-01 10:00:00 +0200'
submission_1004:
  :submitters:
  - :name: Eve Nil
    :sid: 's400'
  :score: 0.0
"""


def test_gradescope_metadata_keys_are_ruby_symbols_and_times_carry_their_zone(tmp_path):
    path = tmp_path / "submission_metadata.yml"
    path.write_text(GRADESCOPE_YML)
    times = load(path)
    assert times.kind == GRADESCOPE_KIND and times.problems == []

    def when(student):
        found = times.lookup(student)
        return (found.when.isoformat() if found.when else None), found.warning

    # By the export's folder name, or a folder named after a submitter's sid, email or name.
    assert when(Student("submission_1001", "submission_1001")) == ("2026-04-30T21:59:03.123456+02:00", None)
    assert when(Student("s100", "s100"))[0] == "2026-04-30T21:59:03.123456+02:00"
    assert when(Student("ann_uni.example", "ann@uni.example"))[0] == "2026-04-30T21:59:03.123456+02:00"
    assert when(Student("cat_poe", "Cat Poe"))[0] == "2026-05-01T10:00:00-07:00"   # a group's second
    assert when(Student("submission_1003", "submission_1003"))[0] == "2026-05-01T10:00:00+02:00"
    assert when(Student("submission_1004", "submission_1004")) == (
        None, "submission_metadata.yml line 25: no :created_at:")
    assert when(Student("nobody", "nobody")) == (None, None)


def test_plain_csv_iso_times_and_participant_identifiers(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("student,submitted_at\n"
                    "alice,2026-04-30T23:59:00+02:00\n"
                    "bob,2026-05-01T08:00:00Z\n"
                    "carol,2026-05-01 10:00\n"
                    "Participant 42,2026-05-03T00:00:00+02:00\n"
                    "dave,last Tuesday\n"
                    ",2026-05-01T10:00:00Z\n")
    times = load(path)
    assert times.kind == PLAIN_KIND
    assert times.problems == ["times.csv line 7: no student named; row ignored"]
    found = {s: times.lookup(Student(s, s.title(), pid)) for s, pid in
             (("alice", None), ("bob", None), ("carol", None), ("Jane_Doe_42", "42"), ("dave", None))}
    assert found["alice"].when.isoformat() == DUE
    assert found["bob"].when.isoformat() == "2026-05-01T08:00:00+00:00"
    assert found["Jane_Doe_42"].when.isoformat() == "2026-05-03T00:00:00+02:00"
    assert found["carol"].when is None and found["carol"].warning == (
        "times.csv line 4: '2026-05-01 10:00' has no time zone (write it with an offset such as "
        "+02:00, or give --timezone)")
    assert found["dave"].warning.startswith("times.csv line 6: 'last Tuesday' is not an ISO 8601")
    # With --timezone, a time written without a zone is read in that zone.
    assert load(path, BERLIN).lookup(Student("carol", "carol")).when.isoformat() == "2026-05-01T10:00:00+02:00"


@pytest.mark.parametrize("name, content, expected", [
    ("grades.csv", "Identifier,Full name,hw3\nParticipant 1,A,3\n",
     "grades.csv: not a Moodle grading worksheet (columns Identifier and 'Last modified "
     "(submission)'), a Gradescope submission_metadata.yml or a CSV with the columns "
     "student,submitted_at (line 1 has: Identifier, Full name, hw3)"),
    ("meta.yml", "submission_1:\n  :created_at: [2026,\n", "meta.yml: line 3: not valid YAML"),
    ("meta.yml", "- just\n- a list\n", "meta.yml: expected a mapping of submission_<id> entries"),
    ("latin1.csv", "student,submitted_at\nj\xf6rg,2026-05-01T10:00:00Z\n".encode("latin-1"),
     "latin1.csv: line 2: not UTF-8 text"),
    ("empty.csv", "", "empty.csv: not a Moodle grading worksheet"),
])
def test_files_that_cannot_be_used_say_why_and_give_no_times(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    times = load(path, BERLIN)
    assert times.entries == []
    assert len(times.problems) == 1 and times.problems[0].startswith(expected), times.problems
    assert times.problems[0].endswith("no submission time was taken from it (no late penalties)")


def test_short_rows_conflicting_entries_and_a_missing_file(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("student,submitted_at\nalice\nbob,2026-05-01T10:00:00Z\n"
                    "bob,2026-05-02T10:00:00Z\ncarl,2026-05-02T10:00:00Z\ncarl,2026-05-02T12:00:00+02:00\n")
    times = load(path)
    assert times.problems == ["times.csv line 2: 1 column(s), expected 2; row ignored"]
    assert times.lookup(Student("bob", "bob")).warning == (
        "several entries with different times (times.csv line 3: 2026-05-01T10:00:00+00:00, "
        "times.csv line 4: 2026-05-02T10:00:00+00:00)")
    assert times.lookup(Student("carl", "carl")).when.isoformat() == "2026-05-02T10:00:00+00:00"  # one instant
    with pytest.raises(SubmissionTimesError, match="no such file"):
        load(tmp_path / "missing.csv")


def test_format_is_read_from_the_content_not_only_the_name(tmp_path):
    path = tmp_path / "export.txt"
    path.write_text(GRADESCOPE_YML)
    assert load(path).kind == GRADESCOPE_KIND
    path.write_text("Student;Submitted_at\nalice;2026-05-01T10:00:00Z\n")   # ; as delimiter
    assert load(path).lookup(Student("alice", "alice")).when.isoformat() == "2026-05-01T10:00:00+00:00"


def test_parse_moodle_needs_its_exact_words():
    assert parse_moodle("Thursday,  30 April 2026,  11:59 PM", CEST).isoformat() == DUE
    with pytest.raises(ValueError, match="not a date in Moodle's format"):
        parse_moodle("30/04/2026 23:59", CEST)


# --- matching the download layouts ----------------------------------------------------------

def test_worksheet_rows_match_moodle_download_folders_by_participant_id(tmp_path):
    subs = tmp_path / "subs"
    make_submission(subs / "Jane Doe_101_assignsubmission_file_")
    make_submission(subs / "Ann Lee_102_assignsubmission_file_")
    make_submission(subs / "Jane Doe_999_assignsubmission_file_")   # same name, another person
    path = tmp_path / "worksheet.csv"
    path.write_text(WORKSHEET_HEADER
                    + worksheet_row(101, "Jane Doe", "Thursday, 30 April 2026, 11:59 PM")
                    + worksheet_row(102, "Ann Lee", "Saturday, 2 May 2026, 10:00 AM")
                    + worksheet_row(555, "Not Here", "Friday, 1 May 2026, 10:00 AM"))
    times = load(path, BERLIN)
    found = {s.student.key: times.lookup(s.student) for s in discover(subs)[0]}
    assert {k: (f.when.isoformat() if f.when else None) for k, f in found.items()} == {
        "Jane_Doe_101": DUE, "Ann_Lee_102": "2026-05-02T10:00:00+02:00", "Jane_Doe_999": None}
    assert [e.label for e in times.unmatched([s.student for s in discover(subs)[0]])] == ["Not Here"]


# --- batches -----------------------------------------------------------------------------------

def test_late_penalty_reaches_result_report_and_grades_csv(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob", "carol", "dave"):
        make_submission(subs / name, score=10)
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\n"
                     f"alice,{DUE}\n"
                     "bob,2026-05-02T10:00:00+02:00\n"          # 34 h late: 2 started days
                     "dave,2026-05-09T10:00:00+02:00\n")        # more than 5 days: 0
    stream = io.StringIO()
    report = batch(subs, out, rubrics, submission_times=times, stream=stream)
    assert (report.progress.graded, report.failed) == (4, 0)

    bob = result(out, "bob")
    [penalty] = penalty_items(bob)
    assert (penalty["score"], penalty["status"], penalty["title"]) == (-2.0, "penalty", "Late penalty (2 days late)")
    assert bob["score"] == 8.0 and bob["assignments"][0]["late"]["days_late"] == 2
    assert "Late penalty (2 days late)" in (out / "submissions" / "bob" / "report.md").read_text()
    assert penalty_items(result(out, "alice")) == [] and result(out, "alice")["score"] == 10
    assert result(out, "alice")["assignments"][0]["late"]["days_late"] == 0
    assert result(out, "dave")["score"] == 0
    carol = result(out, "carol")
    assert carol["score"] == 10 and carol["assignments"][0]["late"] is None
    assert carol["assignments"][0]["status"] == "graded"

    rows = list(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    assert rows == [
        ["Identifier", "Full name", "hw3", "Submitted at", "Late penalty", "Total", "Status",
         "Key"],
        ["alice", "alice", "10", DUE, "0", "10", "graded", "alice"],
        ["bob", "bob", "8", "2026-05-02T10:00:00+02:00", "-2", "8", "graded", "bob"],
        ["carol", "carol", "10", "", "", "10", "graded", "carol"],
        ["dave", "dave", "0", "2026-05-09T10:00:00+02:00", "-10", "0", "graded", "dave"]]
    assert query(out, "SELECT st.key, r.submitted_at FROM runs r JOIN students st ON st.id = r.student_id "
                      "ORDER BY st.key") == [("alice", DUE), ("bob", "2026-05-02T10:00:00+02:00"),
                                              ("carol", None), ("dave", "2026-05-09T10:00:00+02:00")]
    assert query(out, "SELECT score FROM item_scores WHERE item_id = 'hw3.late_penalty' ORDER BY score") == [
        (-10.0,), (-2.0,)]
    summary = stream.getvalue().split("Warnings:")[1]
    assert summary.count("has a due date") == 1
    assert ("hw3 has a due date but 1 submission has no submission time: no late penalty applied "
            "to them") in summary


def test_a_rescore_keeps_telling_what_the_upload_was_graded_without(tmp_path, rubrics, calls_log):
    """An upload over the limits is graded without its checkpoint (tests/batch/test_left_out.py):
    re-scored for a corrected time, its report still names what was left out."""
    from grader.batch.unpack import UnpackLimits
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "cara", score=10)
    (subs / "cara" / "hw3" / "model.pt").write_bytes(b"\0" * 1_200_000)
    small = UnpackLimits(max_total_bytes=1_000_000)
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\ncara,2026-05-02T10:00:00+02:00\n")
    batch(subs, out, rubrics, submission_times=times, limits=small)
    assert result(out, "cara")["left_out"] == ["hw3/model.pt (1.1 MiB)"]
    times.write_text(f"student,submitted_at\ncara,{DUE}\n")
    calls_log.unlink()
    again = batch(subs, out, rubrics, submission_times=times, limits=small)
    assert calls(calls_log) == [] and again.progress.rescored == 1
    cara = result(out, "cara")
    assert cara["left_out"] == ["hw3/model.pt (1.1 MiB)"] and penalty_items(cara) == [], cara
    assert "- hw3/model.pt (1.1 MiB)" in (out / "submissions" / "cara" / "report.md").read_text()


def test_a_changed_time_is_rescored_without_running_code(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob"):
        make_submission(subs / name, score=10)
    times = tmp_path / "times.csv"
    times.write_text(f"student,submitted_at\nalice,{DUE}\nbob,2026-05-02T10:00:00+02:00\n")
    batch(subs, out, rubrics, submission_times=times)
    assert sorted(k for k, _ in calls(calls_log)) == ["alice", "bob"]
    first_bob = result(out, "bob")

    calls_log.unlink()
    again = batch(subs, out, rubrics, submission_times=times)        # nothing changed
    assert calls(calls_log) == [] and again.progress.skipped == 2

    # The LMS had bob's time wrong: on time after all. Re-scored, no grading runs.
    times.write_text(f"student,submitted_at\nalice,{DUE}\nbob,2026-04-30T20:00:00+02:00\n")
    stream = io.StringIO()
    fixed = batch(subs, out, rubrics, submission_times=times, stream=stream)
    assert calls(calls_log) == []
    assert (fixed.progress.graded, fixed.progress.rescored, fixed.progress.skipped) == (1, 1, 1)
    assert "1 graded (1 re-scored)" in stream.getvalue()
    bob = result(out, "bob")
    assert penalty_items(bob) == [] and bob["score"] == 10
    assert bob["started_at"] == first_bob["started_at"] and bob["hardware"] == first_bob["hardware"]
    assert "Late penalty" not in (out / "submissions" / "bob" / "report.md").read_text()
    assert (out / "submissions" / "bob" / "instructor.md").is_file()     # as grade() leaves it
    assert (out / "submissions" / "bob" / "checks-hw3.json").is_file()   # kept for the next time
    assert grades(out)["bob"]["Total"] == "10" and grades(out)["bob"]["Late penalty"] == "0"
    assert query(out, "SELECT r.submitted_at, r.current FROM runs r JOIN students s ON s.id = r.student_id "
                      "WHERE s.key = 'bob' ORDER BY r.id") == [
        ("2026-05-02T10:00:00+02:00", 0), ("2026-04-30T20:00:00+02:00", 1)]
    assert query(out, "SELECT l.message FROM logs l JOIN students s ON s.id = l.student_id "
                      "WHERE s.key = 'bob' AND l.message LIKE 're-scored%'") == [(
        "re-scored without running code: the submission time changed from "
        "2026-05-02T10:00:00+02:00 to 2026-04-30T20:00:00+02:00",)]

    # A batch given no times at all keeps the times the gradebook holds.
    kept = batch(subs, out, rubrics)
    assert calls(calls_log) == [] and kept.progress.skipped == 2
    assert grades(out)["bob"]["Submitted at"] == "2026-04-30T20:00:00+02:00"

    # A raw report that does not give back the recorded scores belongs to another grading
    # (a batch killed between recording and publishing): graded again, never re-scored from it.
    report = out / "submissions" / "bob" / "checks-hw3.json"
    report.write_text(json.dumps(fake_report(load_rubrics(rubrics)["hw3"], passed=3)))
    times.write_text(f"student,submitted_at\nalice,{DUE}\nbob,2026-05-01T10:00:00+02:00\n")
    stream = io.StringIO()
    regraded = batch(subs, out, rubrics, submission_times=times, stream=stream)
    assert [k for k, _ in calls(calls_log)] == ["bob"] and regraded.progress.rescored == 0
    assert "its files do not give back the recorded scores" in stream.getvalue()
    assert penalty_items(result(out, "bob"))[0]["score"] == -1.0
    assert grades(out)["bob"]["Total"] == "9"

    # Without its raw report it cannot be re-scored either.
    calls_log.unlink()
    report.unlink()
    times.write_text(f"student,submitted_at\nalice,{DUE}\nbob,2026-05-03T10:00:00+02:00\n")
    regraded = batch(subs, out, rubrics, submission_times=times)
    assert [k for k, _ in calls(calls_log)] == ["bob"] and regraded.progress.rescored == 0
    assert grades(out)["bob"]["Total"] == "7"


def test_a_result_republished_after_a_kill_gets_its_reports_again(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "bob", score=10)
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nbob,2026-05-02T10:00:00+02:00\n")
    batch(subs, out, rubrics, submission_times=times)
    folder = out / "submissions" / "bob"
    # As if killed after the gradebook's commit, before the files were written.
    stale = result(out, "bob")
    stale["assignments"][0]["items"].pop()
    (folder / "result.json").write_text(json.dumps(stale))
    (folder / "report.md").write_text("stale\n")
    batch(subs, out, rubrics, submission_times=times)
    assert penalty_items(result(out, "bob")) and "Late penalty (2 days late)" in (folder / "report.md").read_text()


REFUSAL_FILES = ["report.html", "report.md", "result.json"]


def test_a_rejected_upload_republished_after_a_kill_keeps_only_its_refusal(tmp_path, rubrics,
                                                                         calls_log):
    """A rejected upload gets result.json and the student's reports of the refusal, saying it
    was not graded and why (adv45: no feedback at all), never an instructor.md of a grading
    that never ran; so after a kill between the gradebook's commit and its files."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "carol.zip").write_bytes(b"not a zip at all")
    batch(subs, out, rubrics)
    folder = out / "submissions" / "carol"
    assert sorted(p.name for p in folder.iterdir()) == REFUSAL_FILES
    stale = result(out, "carol")
    stale["errors"] = ["stale"]
    (folder / "result.json").write_text(json.dumps(stale))
    (folder / "report.md").write_text("stale\n")
    batch(subs, out, rubrics)
    assert sorted(p.name for p in folder.iterdir()) == REFUSAL_FILES
    assert result(out, "carol")["errors"] != ["stale"]
    assert "Not graded" in (folder / "report.md").read_text()


def test_a_rejected_reupload_leaves_no_report_of_the_last_grading(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "carol", score=10)
    batch(subs, out, rubrics)
    folder = out / "submissions" / "carol"
    assert (folder / "report.html").is_file()
    shutil.rmtree(subs / "carol")
    (subs / "carol.zip").write_bytes(b"not a zip at all")
    batch(subs, out, rubrics)
    assert sorted(p.name for p in folder.iterdir()) == REFUSAL_FILES
    assert "carol.zip is not a readable zip file" in json.dumps(result(out, "carol"))
    assert "Not graded" in (folder / "report.html").read_text(), "the refusal's, not the last grading's"


def test_a_bad_times_file_never_stops_the_batch(tmp_path, rubrics, calls_log, pdl_grade, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob"):
        make_submission(subs / name, score=10)
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nalice,2026-05-02T10:00:00+02:00\nbob,02/05/2026 10:00\n")
    import grader.batch.pipeline as pipeline
    original = pipeline.run_batch
    monkeypatch.setattr(pipeline, "run_batch",
                        lambda *a, **k: original(*a, **{"grade_fn": scoring_grade, "live": False, **k}))
    run = pdl_grade("batch", subs, "--out", out, "--assignment", "hw3", "--rubrics", rubrics,
                    "--submission-times", times)
    assert run.code == 0
    err = run.err
    summary = err.split("Warnings:")[1]
    assert ("bob: no submission time (times.csv line 3: '02/05/2026 10:00' is not an ISO 8601 "
            "date and time (such as 2026-04-30T23:59:00+02:00)); graded without a late penalty") in summary
    assert "hw3 has a due date but 1 submission has no submission time" in summary
    assert grades(out)["bob"]["Total"] == "10" and grades(out)["alice"]["Total"] == "8"
    assert query(out, "SELECT l.level FROM logs l JOIN students s ON s.id = l.student_id "
                      "WHERE s.key = 'bob'") == [("warning",)]

    # A file that is not a times file at all: every student graded, none penalised, and said so.
    times.write_text("name,when\nalice,yesterday\n")
    stream = io.StringIO()
    batch(subs, tmp_path / "out2", rubrics, submission_times=times, stream=stream)
    summary = stream.getvalue().split("Warnings:")[1]
    assert "times.csv: not a Moodle grading worksheet" in summary
    assert "hw3 has a due date but 2 submissions have no submission time" in summary
    assert [r["Total"] for r in grades(tmp_path / "out2").values()] == ["10", "10"]


def test_moodle_download_with_its_worksheet(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Jane Doe_101_assignsubmission_file_" / "work", score=10)
    make_submission(subs / "Ann Lee_102_assignsubmission_file_", score=5)
    path = tmp_path / "worksheet.csv"
    path.write_text(WORKSHEET_HEADER
                    + worksheet_row(101, "Jane Doe", "Thursday, 30 April 2026, 11:59 PM")
                    + worksheet_row(102, "Ann Lee", "Saturday, 2 May 2026, 10:00 AM"))
    stream = io.StringIO()
    batch(subs, out, rubrics, submission_times=path, timezone=BERLIN, stream=stream)
    rows = grades(out)
    assert (rows["Participant 101"]["Late penalty"], rows["Participant 101"]["Total"]) == ("0", "10")
    assert (rows["Participant 102"]["Late penalty"], rows["Participant 102"]["Total"]) == ("-1", "4")
    assert rows["Participant 102"]["Submitted at"] == "2026-05-02T10:00:00+02:00"
    assert "has a due date" not in stream.getvalue()
    # Another zone is another time: re-scored, no code run.
    calls_log.unlink()
    batch(subs, out, rubrics, submission_times=path, timezone="UTC")
    assert calls(calls_log) == []
    assert grades(out)["Participant 101"]["Late penalty"] == "-1"


def test_gradescope_export_layout_needs_no_option(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "export", tmp_path / "out"
    make_submission(subs / "submission_1001", score=10)
    make_submission(subs / "submission_1002", score=10)
    make_submission(subs / "submission_1003", score=10)
    (subs / "submission_metadata.yml").write_text(GRADESCOPE_YML)
    stream = io.StringIO()
    batch(subs, out, rubrics, stream=stream)
    text = stream.getvalue()
    assert "submission times: submission_metadata.yml (Gradescope submission metadata)" in text
    assert "ignored submission_metadata.yml" not in text
    rows = grades(out)
    # 1001 on time; 1002 at 10:00 -07:00 = 19:00 +02:00 on 1 May: 1 started day; 1003 too.
    assert [(k, rows[k]["Late penalty"], rows[k]["Total"]) for k in sorted(rows)] == [
        ("submission_1001", "0", "10"), ("submission_1002", "-1", "9"), ("submission_1003", "-1", "9")]
    # submission_1004 has no time and no folder here: nothing to say about it.
    assert "match no submission" not in text and "Warnings:" not in text


# --- the grading side -----------------------------------------------------------------------

def test_the_grade_function_and_slurm_jobs_get_the_time(tmp_path, monkeypatch):
    import grader.grading
    from grader.batch.pipeline import grade_in_child
    from grader.batch.scheduler import GradeJob
    from grader.cluster import SlurmBackend, SlurmSettings
    seen = {}
    monkeypatch.setattr(grader.grading, "grade_submission", lambda *a, **k: seen.update(k))
    monkeypatch.delenv("PDL_SANDBOX_HIDE", raising=False)
    job = GradeJob(Student("bob", "bob"), tmp_path / "scratch" / "bob", tmp_path / "work" / "bob-1",
                   ("hw3",), None, 60.0, submitted_at="2026-05-02T10:00:00+02:00")
    grade_in_child(job)
    assert seen["submitted_at"] == "2026-05-02T10:00:00+02:00"
    command = SlurmBackend(SlurmSettings.load(None, partition="gpu")).grade_command(job)
    assert command[command.index("--submitted-at") + 1] == "2026-05-02T10:00:00+02:00"
    untimed = GradeJob(Student("al", "al"), tmp_path / "s", tmp_path / "w" / "al-1", ("hw3",))
    assert "--submitted-at" not in SlurmBackend(SlurmSettings.load(None, partition="gpu")).grade_command(untimed)


def test_the_real_hw3_rubric_without_a_time_gives_full_marks_and_graded():
    """A student's own `pytest grader/` or `pdl-grade grade reference` has no submission time:
    HW3's due date must cost nothing and make nothing incomplete."""
    rubric = load_rubrics()["hw3"]
    assert rubric.due is not None
    report = fake_report(rubric, passed=10)
    untimed = score_assignment(rubric, report)
    assert untimed.status == "graded" and untimed.errors == [] and untimed.late is None
    # Every automatic point; the written answers wait for a person.
    assert untimed.score == untimed.max_score - untimed.pending_points > 0
    assert not [i for i in untimed.items if i.kind == "penalty"]


def test_the_real_hw3_rubric_says_how_late_and_takes_nothing_the_handout_does_not():
    """The handout gives HW3's deadline and no late policy: an instructor's audit found 31
    minutes late cost 1.45 points. Lateness is said, never charged, unless the course adds its
    own late_policy to the rubric."""
    rubric = load_rubrics()["hw3"]
    assert rubric.late_policy is None, "rubrics/hw3.yaml charges for lateness the handout never announced"
    report = fake_report(rubric, passed=10)
    untimed = score_assignment(rubric, report)
    late = score_assignment(rubric, report, submitted_at="2026-05-02T10:00:00+02:00")
    assert late.late["days_late"] == 2 and late.score == untimed.score
    assert not [i for i in late.items if i.kind == "penalty"]


# --- the gradebook ---------------------------------------------------------------------------

def _downgrade_to_schema_1(path: Path) -> None:
    """What a gradebook written before submission times looks like."""
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE runs DROP COLUMN submitted_at")
        db.execute("ALTER TABLE runs DROP COLUMN needs_person")
        db.execute("ALTER TABLE submissions DROP COLUMN fingerprints")
        db.execute("ALTER TABLE students DROP COLUMN email")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")


def test_a_schema_1_gradebook_is_migrated_in_place_and_nothing_is_regraded(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    solution = (Path(__file__).resolve().parents[2] / "reference/hw3/model_parallel.py").read_text()
    for name in ("alice", "bob"):
        make_submission(subs / name, score=10)
        # code of their own: a file that adds little to the template has no fingerprint
        (subs / name / "hw3" / "model_parallel.py").write_text(solution)
    batch(subs, out, rubrics)
    _downgrade_to_schema_1(out / "gradebook.sqlite")
    assert "submitted_at" not in {r[1] for r in query(out, "PRAGMA table_info(runs)")}

    calls_log.unlink()
    again = batch(subs, out, rubrics)
    assert calls(calls_log) == [] and again.progress.skipped == 2      # the old runs still count
    assert query(out, "SELECT value FROM meta WHERE key = 'schema_version'") == [("4",)]
    assert query(out, "SELECT submitted_at, needs_person FROM runs") == [(None, 0), (None, 0)]
    # The skipped submissions got their code fingerprints (kept since schema 3).
    assert query(out, "SELECT count(*) FROM submissions WHERE fingerprints IS NOT NULL") == [(2,)]
    # ... and the migrated gradebook takes times like a new one.
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nbob,2026-05-02T10:00:00+02:00\n")
    batch(subs, out, rubrics, submission_times=times)
    assert calls(calls_log) == [] and grades(out)["bob"]["Total"] == "8"


def test_an_interrupted_migration_leaves_the_old_gradebook(tmp_path, monkeypatch):
    path = tmp_path / "gradebook.sqlite"
    Gradebook(path).close()
    _downgrade_to_schema_1(path)
    original = Gradebook._migrate

    def migrate_then_die(self):
        original(self)
        raise KeyboardInterrupt("killed during the migration")

    monkeypatch.setattr(Gradebook, "_migrate", migrate_then_die)
    with pytest.raises(KeyboardInterrupt):
        Gradebook(path)
    with sqlite3.connect(path) as db:
        assert "submitted_at" not in {r[1] for r in db.execute("PRAGMA table_info(runs)")}
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [("1",)]
    monkeypatch.setattr(Gradebook, "_migrate", original)
    Gradebook(path).close()
    with sqlite3.connect(path) as db:
        assert "submitted_at" in {r[1] for r in db.execute("PRAGMA table_info(runs)")}


def test_a_gradebook_from_a_newer_version_is_refused(tmp_path, rubrics):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=10)
    out.mkdir()
    Gradebook(out / "gradebook.sqlite").close()
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                   (str(gradebook_module.SCHEMA_VERSION + 1),))
    with pytest.raises(BatchError, match="written by a newer pdl-grade"):
        batch(subs, out, rubrics)
    assert query(out, "SELECT count(*) FROM runs") == [(0,)]


def test_cli_options():
    parser = build_parser()
    options = parser.parse_args(["batch", "subs", "--out", "o", "--submission-times", "ws.csv",
                                 "--timezone", BERLIN])
    assert (options.submission_times, options.timezone) == (["ws.csv"], BERLIN)  # repeatable
    assert parser.parse_args(["batch", "subs", "--out", "o"]).submission_times == []


# --- the instructor's overrides: like a changed time, a re-score without running code -----------

def test_overrides_per_student_rescore_without_running_code(tmp_path, rubrics, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob"):
        make_submission(subs / name, score=4)
    batch(subs, out, rubrics)
    assert sorted(k for k, _ in calls(calls_log)) == ["alice", "bob"]
    calls_log.unlink()

    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("bob:\n  hw3.code: {points: 9, comment: 'regrade: tolerance'}\n"
                         "zoe:\n  hw3.code: {points: 1}\nAlice:\n  hw3.code: {points: 1}\n")
    stream = io.StringIO()
    first = batch(subs, out, rubrics, overrides=overrides, stream=stream)
    assert calls(calls_log) == [] and (first.progress.rescored, first.progress.skipped) == (1, 1)
    assert "overrides for 'zoe' ignored: no such submission" in stream.getvalue()
    assert "overrides for 'Alice' ignored: no such submission" in stream.getvalue()
    assert "did you mean 'alice'?" in stream.getvalue(), stream.getvalue()
    # The class page lists them too, never "every override applied".
    page = (out / "index.html").read_text()
    assert "every override applied" not in page and "zoe" in page and "Alice" in page
    bob = result(out, "bob")
    assert bob["score"] == 9 and bob["overrides"] == {"hw3.code": {"points": 9,
                                                                   "comment": "regrade: tolerance"}}
    assert "Score set by the instructor: regrade: tolerance" in (
        out / "submissions" / "bob" / "report.md").read_text()
    assert grades(out)["bob"]["Total"] == "9" and grades(out)["alice"]["Total"] == "4"
    assert query(out, "SELECT l.message FROM logs l JOIN students s ON s.id = l.student_id "
                      "WHERE s.key = 'bob' AND l.message LIKE 're-scored%'") == [
        ("re-scored without running code: the instructor's overrides changed",)]

    again = batch(subs, out, rubrics, overrides=overrides)          # the same file: nothing to do
    assert calls(calls_log) == [] and again.progress.skipped == 2

    overrides.write_text("alice:\n  hw3.code: {points: 5}\n")        # bob's entry taken away
    changed = batch(subs, out, rubrics, overrides=overrides)
    assert calls(calls_log) == [] and changed.progress.rescored == 2
    assert (result(out, "bob")["score"], result(out, "alice")["score"]) == (4, 5)
    assert "overrides" not in result(out, "bob")

    # A new upload is graded (code runs) and the overrides are applied to its new result.
    make_submission(subs / "alice", score=2)
    (subs / "alice" / "extra.txt").write_text("changed")
    regraded = batch(subs, out, rubrics, overrides=overrides)
    assert [k for k, _ in calls(calls_log)] == ["alice"] and regraded.progress.rescored == 0
    assert result(out, "alice")["score"] == 5 and result(out, "alice")["overrides"]


@pytest.mark.parametrize("content, expected", [
    ("- alice\n", "must map each student's key"),
    ("alice: 3\n", "must map each student's key"),
    ("alice: {hw3.code: [\n", "cannot be read"),
])
def test_a_bad_overrides_file_stops_the_batch_before_anything_runs(tmp_path, rubrics, calls_log,
                                                                   content, expected):
    make_submission(tmp_path / "subs" / "alice", score=4)
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(content)
    with pytest.raises(BatchError, match=expected):
        batch(tmp_path / "subs", tmp_path / "out", rubrics, overrides=overrides)
    assert not calls_log.exists()


def test_results_name_the_student_from_the_lms_export(tmp_path, rubrics, calls_log):
    """Graded, re-scored and rejected alike: the name Moodle's folder gives, never a path."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Mari Maasikas_123456_assignsubmission_file_", score=10)
    (subs / "Jaan Tamm_777_assignsubmission_file_").mkdir(parents=True)
    (subs / "Jaan Tamm_777_assignsubmission_file_" / "notes.txt").write_text("nothing here")
    batch(subs, out, rubrics)
    graded = result(out, "Mari_Maasikas_123456")
    assert graded["student"] == {"key": "Mari_Maasikas_123456", "name": "Mari Maasikas"}
    assert "# Grading report: Mari Maasikas" in (
        out / "submissions" / "Mari_Maasikas_123456" / "report.md").read_text()
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("Mari_Maasikas_123456:\n  hw3.code: {points: 9}\n")
    assert batch(subs, out, rubrics, overrides=overrides).progress.rescored == 1
    assert result(out, "Mari_Maasikas_123456")["student"]["name"] == "Mari Maasikas"
    assert result(out, "Jaan_Tamm_777")["student"] == {"key": "Jaan_Tamm_777", "name": "Jaan Tamm"}


def test_times_for_an_assignment_without_a_due_date_are_said_to_give_no_penalty(tmp_path, calls_log):
    """An instructor's day: practicals' times were read, then ignored without a word."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=10)
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nalice,2026-05-09T10:00:00+02:00\n")
    stream = io.StringIO()
    run_test_batch(subs, out, ["practical4"], submission_times=times, stream=stream)
    assert "no due date in the rubric of practical4: the submission times give no late penalty" \
        in stream.getvalue()


def test_overrides_for_an_upload_with_nothing_to_grade_are_said_not_applied(tmp_path, rubrics,
                                                                              calls_log):
    """An instructor's `{points: 0}` for an empty upload had vanished: no warning, no line on
    the class page, the cells still empty."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=4)
    (subs / "Frank Lepp_401106_assignsubmission_file_").mkdir()
    (subs / "Frank Lepp_401106_assignsubmission_file_" / "notes.txt").write_text("nothing")
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("Frank_Lepp_401106:\n  hw3.code: {points: 0, comment: empty upload}\n")
    stream = io.StringIO()
    batch(subs, out, rubrics, overrides=overrides, stream=stream)
    said = stream.getvalue()
    assert ("warning: Frank_Lepp_401106: overrides not applied: it has nothing to grade (no file "
            "of hw3 found anywhere") in said, (
        f"expected the batch to say the overrides were not applied; observed:\n{said}")
    problems = (out / "index.html").read_text().split('id="override-problem-table"')[1]
    assert "Frank_Lepp_401106" in problems.split("</table>")[0], (
        "expected the class page to list them under 'Overrides that could not be applied'")
    assert grades(out)["Participant 401106"]["Total"] == ""           # still no grade
    # Unchanged the next time: said again, never dropped once the upload is skipped.
    again = io.StringIO()
    later = batch(subs, out, rubrics, overrides=overrides, stream=again).progress
    assert (later.skipped, later.still_for_person) == (1, 1)
    assert "Frank_Lepp_401106: overrides not applied" in again.getvalue()


def test_grade_rescore_with_the_class_file_takes_this_students_entry_only(tmp_path, rubrics,
                                                                        calls_log, pdl_grade):
    """`pdl-grade grade --rescore --overrides <class file>` on a batch's folder had ignored
    every entry (one "no assignment 'alice'" each, exit 0), lowered the score, and kept the
    whole class's entries and comments in this one student's result.json."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob"):
        make_submission(subs / name, score=4)
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("alice:\n  hw3.code: {points: 9, comment: 'regraded'}\n"
                         "bob:\n  hw3.code: {points: 2, comment: 'bob copied from carol'}\n")
    batch(subs, out, rubrics, overrides=overrides)
    folder = out / "submissions" / "bob"
    before = result(out, "bob")["score"]
    run = pdl_grade("grade", subs / "bob", "--out", folder, "--rescore", "--rubrics", rubrics,
                    "--overrides", overrides)
    assert run.code == 0 and "no assignment" not in run.err, run.err
    after = result(out, "bob")
    assert after["score"] == before == 2, (before, after["score"])
    assert after["overrides"] == {"hw3.code": {"points": 2, "comment": "bob copied from carol"}}
    assert "regraded" not in json.dumps(after), "another student's comment reached bob's result"
    # A folder no batch graded has no student to take the entry of: refused, said why.
    alone = tmp_path / "alone"
    shutil.copytree(folder, alone)
    data = json.loads((alone / "result.json").read_text())
    data.pop("student")
    (alone / "result.json").write_text(json.dumps(data))
    refused = pdl_grade("grade", subs / "bob", "--out", alone, "--rescore", "--rubrics", rubrics,
                        "--overrides", overrides)
    assert refused.code == 2 and "is a class's overrides file (2 students" in refused.err, refused


def test_an_upload_fixed_in_place_keeps_its_time_and_says_so(tmp_path, rubrics, calls_log):
    """A user's finding (users28, 10): an upload left for a person, fixed in place as the batch
    asks and graded by a batch given no times, had lost its time (no late penalty, no word):
    the time is the LMS's, of the student's upload, so it is kept, in a warning naming the
    student (a re-upload would need its own time)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    zoe = subs / "Zoe Zipper_100005_assignsubmission_file_"
    zoe.mkdir(parents=True)
    (zoe / "notes.txt").write_text("the files are in a zip inside a zip")
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nParticipant 100005,2026-05-02T10:00:00+02:00\n")
    first = batch(subs, out, rubrics, submission_times=times)
    assert first.progress.needs_person == 1

    make_submission(zoe, score=10)          # the staff unzip it where it is
    stream = io.StringIO()
    batch(subs, out, rubrics, stream=stream)
    row = grades(out)["Participant 100005"]
    assert (row.get("Submitted at"), row.get("Late penalty"), row["Total"]) == (
        "2026-05-02T10:00:00+02:00", "-2", "8"), (
        f"expected the gradebook's time kept and charged; observed {row}")
    said = stream.getvalue()
    assert ("warning: Zoe_Zipper_100005: its upload changed since it was left ungraded (for a "
            "person, or rejected) and this batch was given no submission times: it keeps the time "
            "the gradebook has, 2026-05-02T10:00:00+02:00") in said, said
    assert "give the new upload's time with --submission-times" in said.split("Warnings:")[1]
    # Unchanged the next time: kept without a word.
    again = io.StringIO()
    batch(subs, out, rubrics, stream=again)
    assert "Zoe_Zipper_100005: its upload changed" not in again.getvalue()
    assert grades(out)["Participant 100005"]["Late penalty"] == "-2"


def test_a_new_upload_after_a_grading_keeps_the_earlier_time_as_its_earliest(tmp_path, rubrics,
                                                                              calls_log):
    """A graded student who uploads again has a new time the batch was not given: it is no
    earlier than the earlier upload's, so that time is kept as its earliest (a late student
    never escapes the penalty, none is charged above the new upload's own), and said, naming
    the student."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=10)
    make_submission(subs / "bob", score=10)
    times = tmp_path / "times.csv"
    times.write_text(f"student,submitted_at\nalice,{DUE}\nbob,2026-05-02T10:00:00+02:00\n")
    batch(subs, out, rubrics, submission_times=times)
    assert grades(out)["bob"]["Late penalty"] == "-2"

    make_submission(subs / "bob", score=10, extra="the second upload")
    stream = io.StringIO()
    batch(subs, out, rubrics, stream=stream)
    said = stream.getvalue()
    assert ("warning: bob: its upload changed since it was graded with the time the gradebook "
            "has, 2026-05-02T10:00:00+02:00, and this batch was given no submission times: the "
            "new upload keeps that earlier upload's time, the earliest it can have been made "
            "(its late penalty is at least that one's); give the new upload's time with "
            "--submission-times") in said, said
    assert (grades(out)["bob"]["Submitted at"], grades(out)["bob"]["Late penalty"]) == \
        ("2026-05-02T10:00:00+02:00", "-2")
    assert "graded without a late penalty" not in said and "(late -2)" in said, said
