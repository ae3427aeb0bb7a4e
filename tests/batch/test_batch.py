"""Batches with the fake grader: skip/regrade, bad archives, timeouts, crashes, SIGKILL,
grades.csv and progress output."""
import csv
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_graders import alive, calls, make_submission, zip_bytes, zip_folder
from grader.batch.pipeline import BatchError
from grader.cli import build_parser
from grader.scoring import load_rubrics
from tests.support import run_test_batch, subprocess_env

HERE = Path(__file__).resolve().parent


@pytest.fixture
def calls_log(tmp_path, monkeypatch):
    path = tmp_path / "calls.log"
    monkeypatch.setenv("PDL_FAKE_CALLS", str(path))
    return path


def batch(subs, out, **options):
    options.setdefault("live", None)
    return run_test_batch(subs, out, ["practical4"], **options)


def query(out: Path, sql: str, *args):
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        return db.execute(sql, args).fetchall()


def read_csv(out: Path) -> list[list[str]]:
    return list(csv.reader((out / "grades.csv").open(encoding="utf-8")))


def test_rerun_skips_unchanged_regrades_changed_and_regrade_forces(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=9)
    make_submission(subs / "bob", score=4)
    zip_folder(make_submission(tmp_path / "c", score=7), subs.joinpath("Carol Chu_42_assignsubmission_file_.zip"))

    first = batch(subs, out, workers=2)
    assert sorted(k for k, _ in calls(calls_log)) == ["Carol_Chu_42", "alice", "bob"]
    assert (first.progress.graded, first.progress.skipped) == (3, 0)
    assert json.loads((out / "submissions" / "alice" / "result.json").read_text())["score"] == 9

    calls_log.unlink()
    second = batch(subs, out, workers=2)
    assert calls(calls_log) == [] and (second.progress.graded, second.progress.skipped) == (0, 3)

    make_submission(subs / "bob", score=6, extra="fixed a bug")
    third = batch(subs, out)
    assert [k for k, _ in calls(calls_log)] == ["bob"] and third.progress.skipped == 2
    assert query(out, "SELECT r.score FROM runs r JOIN students s ON s.id = r.student_id "
                      "WHERE s.key = 'bob' ORDER BY r.id") == [(4.0,), (6.0,)]

    calls_log.unlink()
    batch(subs, out, regrade=True)
    assert sorted(k for k, _ in calls(calls_log)) == ["Carol_Chu_42", "alice", "bob"]

    calls_log.unlink()
    batch(subs, out, check_timeout=99.0)          # another configuration: graded again
    assert len(calls(calls_log)) == 3

    # History is kept, but each student has exactly one current run.
    assert query(out, "SELECT count(*) FROM runs") == [(3 + 1 + 3 + 3,)]
    assert query(out, "SELECT s.key, count(*) FROM runs r JOIN students s ON s.id = r.student_id "
                      "WHERE r.current = 1 GROUP BY s.key ORDER BY s.key") == [
        ("Carol_Chu_42", 1), ("alice", 1), ("bob", 1)]
    assert query(out, "SELECT count(*) FROM submissions") == [(4,)]     # bob's two versions
    assert query(out, "SELECT count(*) FROM item_scores i JOIN runs r ON r.id = i.run_id "
                      "WHERE r.current = 1") == [(3,)]


def test_grades_csv_rejected_archive_and_moodle_identifiers(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Jane Doe_123456_assignsubmission_file_" / "work", score=7.5)
    make_submission(subs / "carol", score=10)
    (subs / "Mallory Evil_999_assignsubmission_file_").mkdir()
    (subs / "Mallory Evil_999_assignsubmission_file_" / "sub.zip").write_bytes(
        zip_bytes([("practical4/concepts.py", b"A = 1\n"), ("../../../etc/cron.d/x", b"boom")]))

    report = batch(subs, out)
    assert (report.progress.graded, report.progress.rejected, report.failed) == (2, 1, 0)
    assert (out / "grades.csv").read_text() == (
        "Identifier,Full name,practical4,Total,Status,Key\n"
        "Participant 123456,Jane Doe,7.5,7.5,graded,Jane_Doe_123456\n"
        "Participant 999,Mallory Evil,0,0,\"rejected: sub.zip: entry '../../../etc/cron.d/x' "
        "points outside the archive (../); rejected: zip the folder itself, from the folder that "
        "holds it (e.g. `zip -r practical4.zip practical4`, or the file manager's 'Compress' on "
        "the folder), so that no path in it leaves it\",Mallory_Evil_999\n"
        "carol,carol,10,10,graded,carol\n")
    # The rejected student still gets a result.json that says why, with the rubric's maximum.
    rejected = json.loads((out / "submissions" / "Mallory_Evil_999" / "result.json").read_text())
    assert rejected["score"] == 0
    assert rejected["max_score"] == load_rubrics()["practical4"].total_points > 0
    assert "points outside the archive" in rejected["errors"][0]
    auto_items = [i for i in rejected["assignments"][0]["items"] if i["kind"] == "auto"]
    assert auto_items and all(i["status"] == "error" and i["score"] == 0 for i in auto_items)
    assert query(out, "SELECT level FROM logs l JOIN students s ON s.id = l.student_id "
                      "WHERE s.key = 'Mallory_Evil_999'") == [("error",)]
    # A rejected upload is not re-examined while unchanged, and is said again as rejected, its
    # 0 listed with the reason (adv45 F4: "skipped" alone).
    calls_log.unlink()
    again = batch(subs, out).progress
    assert (again.skipped, again.still_rejected) == (2, 1)


def test_hung_grading_is_killed_at_the_timeout_while_others_finish(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "a_hangs", behaviour="hang")
    make_submission(subs / "b_crashes", behaviour="crash")
    for name in ("c_ok", "d_ok", "e_ok"):
        make_submission(subs / name, score=5, sleep_s=0.2)
    stream = io.StringIO()
    started = time.monotonic()
    report = batch(subs, out, workers=2, timeout_s=2.0, stream=stream)
    took = time.monotonic() - started
    assert took < 10, f"the hung grading held the batch for {took:.1f} s"
    statuses = dict(query(out, "SELECT s.key, r.status FROM runs r JOIN students s ON s.id = r.student_id"))
    assert statuses == {"a_hangs": "timed_out", "b_crashes": "error", "c_ok": "graded",
                        "d_ok": "graded", "e_ok": "graded"}
    hung_pid = dict(calls(calls_log))["a_hangs"]
    assert not alive(hung_pid), "the hung grading process is still running"
    messages = dict(query(out, "SELECT s.key, r.message FROM runs r JOIN students s ON s.id = r.student_id"))
    assert messages["a_hangs"] == "grading took longer than 2 s and was stopped"
    assert "crashed on purpose" in messages["b_crashes"]
    assert report.failed == 2
    rows = {row[0]: row for row in read_csv(out)[1:]}
    assert rows["a_hangs"][2:4] == ["", ""] and rows["a_hangs"][4].startswith("timed out")
    assert rows["c_ok"][2:4] == ["5", "5"]
    assert (out / "submissions" / "a_hangs" / "grading-problem.txt").exists()
    assert not (out / "submissions" / "a_hangs" / "result.json").exists()
    summary = stream.getvalue().split("Not graded normally:")[1]
    assert "a_hangs: timed out - grading took longer than 2 s" in summary
    assert "b_crashes: error - the grading process failed (exit 1)" in summary
    # Failed gradings are tried again by the next batch; graded ones are not.
    calls_log.unlink()
    batch(subs, out, workers=2, timeout_s=2.0)
    assert sorted(k for k, _ in calls(calls_log)) == ["a_hangs", "b_crashes"]


def test_batch_sigkilled_midway_then_rerun_grades_each_submission_exactly_once(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    students = [f"s{i:02d}" for i in range(10)]
    for i, name in enumerate(students):
        make_submission(subs / name, score=i, sleep_s=0.4)
    process = subprocess.Popen([sys.executable, "-m", "tests.support.run_fake_batch", str(subs), str(out)],
                               env=subprocess_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    recorded = started = 0
    # Killed once 3 are recorded and a later one has started: on a loaded machine the next
    # grading can start a while after the third is recorded.
    while time.monotonic() < deadline and (recorded < 3 or started <= recorded):
        time.sleep(0.05)
        if (out / "gradebook.sqlite").exists():
            try:
                recorded = query(out, "SELECT count(*) FROM runs")[0][0]
            except sqlite3.OperationalError:
                pass            # the schema is not there yet
        started = len(calls(calls_log)) if calls_log.exists() else 0
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert 3 <= recorded < len(students), "the batch was not killed midway"
    done_before = query(out, "SELECT s.key FROM runs r JOIN students s ON s.id = r.student_id")
    before_calls = calls(calls_log)
    assert len(before_calls) > len(done_before), "no grading was in flight when killed"

    calls_log.unlink()
    report = batch(subs, out, workers=2)
    regraded = sorted(k for k, _ in calls(calls_log))
    assert regraded == sorted(set(students) - {k for (k,) in done_before})
    assert report.progress.skipped == len(done_before)
    assert query(out, "SELECT s.key, count(*), max(r.score) FROM runs r "
                      "JOIN students s ON s.id = r.student_id GROUP BY s.key ORDER BY s.key") == [
        (name, 1, float(i)) for i, name in enumerate(students)]
    rows = read_csv(out)
    assert [r[0] for r in rows[1:]] == students and [r[2] for r in rows[1:]] == [str(i) for i in range(10)]
    for i, name in enumerate(students):
        assert json.loads((out / "submissions" / name / "result.json").read_text())["score"] == i
    assert not (out / "work").exists() and not (out / "scratch").exists()


def test_gradings_of_a_sigkilled_batch_die_with_it(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "hangs", behaviour="hang")
    process = subprocess.Popen([sys.executable, "-m", "tests.support.run_fake_batch", str(subs), str(out)],
                               env=subprocess_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not calls(calls_log) and time.monotonic() < deadline:
        time.sleep(0.05)
    [(_, pid)] = calls(calls_log)
    assert alive(pid)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 3
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), "an orphaned grading outlived its batch"


def test_progress_is_plain_lines_with_scores_off_a_terminal_and_a_live_display_on_it(tmp_path, calls_log):
    subs = tmp_path / "subs"
    for name, score in (("a", 1), ("b", 7)):
        make_submission(subs / name, score=score, sleep_s=0.1)
    plain = io.StringIO()
    batch(subs, tmp_path / "out1", stream=plain, live=False)
    # (The line saying no Gradescope file was written, no email being known, aside.)
    lines = [line for line in plain.getvalue().splitlines() if not line.startswith("gradescope/")]
    assert re.fullmatch(r"\[1/2\] graded a \(\d+\.\d s\): 1/10", lines[0]), lines[0]
    assert re.fullmatch(r"\[2/2\] graded b \(\d+\.\d s\): 7/10", lines[1]), lines[1]
    assert "\r" not in plain.getvalue() and "\x1b" not in plain.getvalue()
    assert lines[2].startswith("2/2 done: 2 graded, 0 failed, 0 rejected, 0 for a person, 0 skipped")
    # On a terminal (forced here): rich's live display, redrawn while gradings run: what is
    # running and for how long, then the last scores; the plain lines are not printed.
    live = io.StringIO()
    batch(subs, tmp_path / "out2", stream=live, live=True)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", live.getvalue())
    assert re.search(r"running: a 0:0\d", text), text
    assert "1/2 done: 1 graded" in text and "ETA" in text
    assert "last: a 1/10" in text
    assert "[1/2]" not in text
    assert text.rstrip().splitlines()[-1].startswith("2/2 done: 2 graded")   # the summary stays


def test_a_second_batch_on_the_same_folder_is_refused_and_bad_arguments_too(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "a")
    out.mkdir()
    # Another process holds the lock (a POSIX lock never conflicts within one process).
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(out / ".batch.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(BatchError, match="another batch"):
            batch(subs, out)
    finally:
        holder.kill()
        holder.wait()
    assert batch(subs, out).progress.graded == 1     # released when its holder died
    with pytest.raises(BatchError, match="not a folder"):
        batch(tmp_path / "missing", out)


def test_cli_parser(tmp_path):
    options = build_parser().parse_args(["batch", "subs", "--out", "o", "--assignment", "practical4",
                                 "--assignment", "hw3", "--workers", "3", "--timeout", "60", "--regrade"])
    assert (options.submissions, options.out, options.assignment, options.workers, options.timeout,
            options.regrade) == ("subs", "o", ["practical4", "hw3"], 3, 60.0, True)
    assert options.handler.__module__ == "grader.cli.batch"


def test_one_upload_can_only_fail_itself(tmp_path, calls_log, monkeypatch):
    """The uploads that stopped whole classes (an entry 1100 folders deep, Deflate64 from
    Windows Explorer, and anything unforeseen) are rejected with their cause; the others are
    graded, grades.csv and index.html are written, and a rerun does not look at them again."""
    from tests.batch.test_inputs import _with_method
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "a_fine", score=7)
    deep = "/".join(["d"] * 1100) + "/x.py"
    (subs / "b_deep.zip").write_bytes(zip_bytes([("practical4/concepts.py", b"A = 1\n"), (deep, b"x")]))
    (subs / "c_windows.zip").write_bytes(_with_method(
        zip_bytes([("practical4/concepts.py", b"A = 1\n" * 500)]), "practical4/concepts.py", 9))
    make_submission(subs / "d_unforeseen", score=3)
    make_submission(subs / "e_fine", score=9)
    import grader.batch.inputs as inputs
    real = inputs.content_hash

    def content_hash(root):
        if "d_unforeseen" in str(root):
            raise MemoryError("out of memory while hashing")
        return real(root)
    monkeypatch.setattr(inputs, "content_hash", content_hash)
    report = batch(subs, out)
    assert (report.progress.graded, report.progress.rejected) == (2, 3)
    rows = {row[0]: row for row in read_csv(out)[1:]}
    assert rows["a_fine"][2] == "7" and rows["e_fine"][2] == "9"
    assert rows["b_deep"][4].startswith("rejected: b_deep.zip: entry 'd/d/d/...' is nested 1101 "
                                        "folders deep")
    assert "compressed with Deflate64 (zip method 9)" in rows["c_windows"][4]
    assert rows["d_unforeseen"][4] == ("rejected: could not be unpacked (MemoryError: out of "
                                       "memory while hashing)")
    assert "c_windows" in (out / "index.html").read_text()
    calls_log.unlink()
    again = batch(subs, out)
    # Not looked at again: the graded ones skipped, the rejected ones said again as such.
    assert calls(calls_log) == [] and (again.progress.skipped,
                                       again.progress.still_rejected) == (2, 3)


def test_every_file_the_staff_open_has_the_same_mode_whatever_the_umask(tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Mari Maasikas_7_assignsubmission_file_", score=3)
    make_submission(subs / "crashes", behaviour="crash")
    (subs / "broken.zip").write_bytes(b"not a zip")
    old = os.umask(0o077)
    try:
        batch(subs, out)
    finally:
        os.umask(old)
    opened = [out / "grades.csv", out / "index.html", out / "moodle" / "practical4.csv",
              *out.glob("submissions/*/*.*")]
    assert len(opened) > 6
    modes = {p.relative_to(out).as_posix(): oct(p.stat().st_mode & 0o777) for p in opened}
    assert set(modes.values()) == {"0o644"}, modes


def test_a_held_submissions_score_says_it_is_held_where_it_is_shown():
    """A user's finding (users28, 14): the console said "0/15 (held for review: hw3)", a 0
    that looks like a grade, where grades.csv leaves the cell empty and instructor.md says
    10.5 points are withheld."""
    from grader.batch.pipeline import _score_of
    held = {"score": 0, "max_score": 15, "assignments": [
        {"id": "hw3", "integrity": {"withheld": True, "withheld_points": 10.5}, "items": []},
        {"id": "practical5", "integrity": {"withheld": False}, "items": []}]}
    assert _score_of(held) == "\u2014/15, 10.5 points withheld for review: hw3"
    held["assignments"][1]["integrity"].update(withheld=True, withheld_points=1)
    held["assignments"][0]["integrity"]["withheld_points"] = 0
    assert _score_of(held) == "\u2014/15, 1 point withheld for review: hw3, practical5"
    for assignment in held["assignments"]:
        assignment["integrity"]["withheld"] = False
    assert _score_of(held) == "0/15"


def test_names_in_any_script_or_not_utf8_are_each_their_own_students(tmp_path, calls_log):
    """Found by an adversarial pass: a folder named in Latin-1 bytes ('M\\xe4rt', what some unzip
    tools leave) stopped the batch at the gradebook on every run, and names that only differ
    outside ASCII ('Jüri', 'Jõri'; '王伟', '李娜') were taken for one student's two uploads and
    both refused. Each is graded once, under a name a person reads."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Anna Aru_111_assignsubmission_file_", score=5)
    latin1 = os.fsdecode(os.fsencode(str(subs)) + b"/M\xe4rt Tamm_555_assignsubmission_file_")
    make_submission(Path(latin1), score=6)
    for name, score in (("Jüri", 7), ("Jõri", 8), ("王伟", 9), ("李娜", 10), ("a b", 3), ("a_b", 4)):
        make_submission(subs / name, score=score)
    report = batch(subs, out)
    assert (report.progress.graded, report.progress.rejected, report.failed) == (8, 0, 0)
    rows = {row[1]: row for row in read_csv(out)[1:]}
    assert {name: rows[name][2] for name in rows} == {
        "Anna Aru": "5", "Märt Tamm": "6", "Jüri": "7", "Jõri": "8", "王伟": "9", "李娜": "10",
        "a b": "3", "a_b": "4"}
    assert len({row[5] for row in rows.values()}) == 8, "every student has a key of their own"
    assert "Märt Tamm" in (out / "index.html").read_text(encoding="utf-8")
    calls_log.unlink()
    assert batch(subs, out).progress.skipped == 8


def test_a_file_name_that_is_not_utf8_inside_a_submission_is_graded(tmp_path, calls_log):
    """The result.json of a submission holding 'caf\\xe9.py' could not be written (the name is
    in its notes): the student errored on every run."""
    from grader.scoring.result import result_json_text
    assert json.loads(result_json_text({"notes": [os.fsdecode(b"practical4/caf\xe9.py")]})) == {
        "notes": ["practical4/café.py"]}
    subs, out = tmp_path / "subs", tmp_path / "out"
    bob = make_submission(subs / "bob", score=7)
    Path(os.fsdecode(os.fsencode(str(bob / "practical4")) + b"/caf\xe9.py")).write_text("X = 1\n")
    report = batch(subs, out)
    assert (report.progress.graded, report.failed) == (1, 0)


def test_an_upload_whose_record_fails_is_said_and_the_batch_goes_on(tmp_path, calls_log, monkeypatch):
    """Whatever goes wrong storing one grading, the others are graded and written; that one
    has no current run, so the next batch grades it again."""
    from grader.batch.gradebook import Gradebook
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name, score in (("a", 1), ("b", 2), ("c", 3)):
        make_submission(subs / name, score=score)
    real = Gradebook.record_run

    def record_run(self, student, *args, **kwargs):
        if student.key == "b":
            raise RuntimeError("disk said no")
        return real(self, student, *args, **kwargs)
    monkeypatch.setattr(Gradebook, "record_run", record_run)
    stream = io.StringIO()
    report = batch(subs, out, stream=stream)
    assert report.progress.graded == 2 and report.failed == 1
    assert "b: not recorded, recording its grading failed (RuntimeError: disk said no); the next " \
        "batch grades it again" in stream.getvalue()
    assert [row[0] for row in read_csv(out)[1:]] == ["a", "c"]
    monkeypatch.setattr(Gradebook, "record_run", real)
    calls_log.unlink()
    again = batch(subs, out)
    assert again.progress.graded == 1 and again.progress.skipped == 2
    assert {row[0]: row[2] for row in read_csv(out)[1:]} == {"a": "1", "b": "2", "c": "3"}


def test_a_student_keeps_their_key_whoever_joins_or_leaves_the_folder(tmp_path, calls_log):
    """An adversary's three batches: Jüri alone, then a name making his key beside him (both
    re-keyed, Jüri's old row stale), then Jüri withdrawn (the other took Jüri's key and his
    grade history). ("Jüri" and "Jõri" made one key before keys kept letters; "Jüri Tamm" and
    "Jüri_Tamm" still do.) A student
    graded before keeps their key; a Moodle participant keeps it through a change of name."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Jüri Tamm", score=7)
    make_submission(subs / "Vic Doe_123_assignsubmission_file_", score=5)
    batch(subs, out)
    make_submission(subs / "Jüri_Tamm", score=8)
    (subs / "Vic Doe_123_assignsubmission_file_").rename(subs / "Vic Smith_123_assignsubmission_file_")
    batch(subs, out)
    rows = {row[5]: row for row in read_csv(out)[1:]}
    assert rows["Jüri_Tamm"][1:3] == ["Jüri Tamm", "7"] and len(rows) == 3, rows
    jori = next(key for key, row in rows.items() if row[1] == "Jüri_Tamm")
    assert jori.startswith("Jüri_Tamm_") and rows[jori][2] == "8"
    assert rows["Vic_Doe_123"][:3] == ["Participant 123", "Vic Smith", "5"]
    import shutil
    shutil.rmtree(subs / "Jüri Tamm")
    batch(subs, out)
    rows = {row[5]: row for row in read_csv(out)[1:]}
    assert rows["Jüri_Tamm"][1] == "Jüri Tamm" and rows[jori][1:3] == ["Jüri_Tamm", "8"], rows


def test_an_out_folder_of_someone_elses_is_never_emptied(tmp_path, calls_log):
    """The batch empties DIR/scratch and DIR/work: an instructor's --out ~/course had its work/
    deleted, and an --out inside the submissions deleted a student called 'work'."""
    subs, course = tmp_path / "subs", tmp_path / "course"
    make_submission(subs / "alice", score=7)
    make_submission(subs / "work", score=5)
    (course / "work").mkdir(parents=True)
    (course / "work" / "lecture-notes.md").write_text("mine")
    with pytest.raises(BatchError, match="exists and is not a batch's"):
        batch(subs, course)
    assert (course / "work" / "lecture-notes.md").read_text() == "mine"
    for inside in (subs, subs / "out"):
        with pytest.raises(BatchError, match="is inside the submissions folder"):
            batch(subs, inside)
    assert (subs / "work").is_dir() and not (subs / "out").exists()
    report = batch(subs, tmp_path / "out")     # a folder of its own: graded as ever
    assert report.progress.graded == 2
    assert batch(subs, tmp_path / "out").progress.skipped == 2   # its own work/ is its own


def test_a_full_disk_while_unpacking_is_the_machines_failure_not_a_rejection(tmp_path, calls_log,
                                                                             monkeypatch):
    """ENOSPC (or a quota) while unpacking had rejected every student with a 0 and exit 0."""
    import errno
    import grader.batch.inputs as inputs
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=7)
    make_submission(subs / "bob", score=5)
    real = inputs.materialize_entry

    def full_disk(source, *args, **kwargs):
        if source.name == "bob":
            raise OSError(errno.ENOSPC, "No space left on device", str(source))
        return real(source, *args, **kwargs)
    monkeypatch.setattr(inputs, "materialize_entry", full_disk)
    report = batch(subs, out)
    assert report.failed and (report.progress.graded, report.progress.rejected) == (1, 0)
    assert "bob" not in {row[0] for row in read_csv(out)[1:]}, "no grade recorded for bob"
    monkeypatch.setattr(inputs, "materialize_entry", real)
    again = batch(subs, out)
    assert (again.progress.graded, again.progress.skipped) == (1, 1) and not again.failed


def test_the_console_the_class_page_and_the_help_count_uploads_for_a_person_alike(tmp_path,
                                                                                  calls_log):
    """The console had said "1 rejected (1 for a person)" where the class page said "0
    rejected, 1 with nothing to grade", and `batch --help` that rejected uploads are "graded
    0" while their cells stayed empty."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=5)
    (subs / "bob").mkdir()
    (subs / "bob" / "notes.txt").write_text("nothing the assignments expect")
    report = batch(subs, out)
    line = report.progress.line()
    assert "1 graded, 0 failed, 0 rejected, 1 for a person, 0 skipped" in line, (
        f"expected the console to count the upload for a person apart; observed {line!r}")
    counts = (out / "index.html").read_text().split('<p id="counts">')[1].split("</p>")[0]
    assert "1 graded, 0 rejected, 1 for a person" in counts, counts
    assert read_csv(out)[2][2:4] == ["", ""], "an upload for a person has no grade"
    parser = build_parser()
    commands = next(action for action in parser._subparsers._group_actions if action.choices)
    said = " ".join(commands.choices["batch"].format_help().split())
    assert ("rejected (an archive that cannot be unpacked safely: graded 0) or left for a person "
            "(nothing to grade found, or several versions: no grade, its cells stay empty)"
            ) in said, said


def test_an_upload_still_for_a_person_is_said_so_by_every_later_batch(tmp_path, calls_log):
    """A user's finding (users28, 11): later batches said "[2/2] skipped bob" and "0 for a
    person, 1 skipped" while grades.csv and the class page still listed him for a person: an
    instructor reading the last line thought nothing was left to do."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=5)
    (subs / "bob").mkdir()
    (subs / "bob" / "notes.txt").write_text("nothing the assignments expect")
    batch(subs, out)
    stream = io.StringIO()
    again = batch(subs, out, stream=stream)
    said = stream.getvalue()
    assert "still for a person (unchanged) bob: no file of practical4 found" in said, said
    line = again.progress.line()
    assert "0 graded, 0 failed, 0 rejected, 1 still for a person (unchanged), 1 skipped" in line, (
        f"expected the last line to say bob still needs a person; observed {line!r}")
    assert again.progress.done == 2 and not again.failed
    summary = said.split("Not graded normally:")[1]
    assert "bob: needs person - unchanged since the last batch: no file of practical4" in summary
    assert "Uploads for a person" in summary
    # One new beside one unchanged.
    (subs / "cara").mkdir()
    (subs / "cara" / "notes.txt").write_text("nothing either")
    third = batch(subs, out)
    assert "2 for a person (1 unchanged), 1 skipped" in third.progress.line()
    # A dry run says the same.
    plan = batch(subs, out, dry_run=True).plan
    assert "bob: would be still for a person (unchanged): no file of practical4 found" in " ".join(
        plan), plan


# --- red team adv19 R: a failed re-grade keeps the grade already given --------------------------

def _hangs(job):
    time.sleep(10_000)


def _crashes(job):
    raise RuntimeError("the grader broke on this machine")


@pytest.mark.parametrize("grade_fn, status", [(_hangs, "timed_out"), (_crashes, "error")],
                         ids=["timed-out", "crashed"])
def test_a_failed_regrade_of_unchanged_work_keeps_the_grade_given(tmp_path, grade_fn, status):
    """`--regrade --timeout 2` on an overloaded machine (or a grader upgrade that regrades
    everything) had wiped the class's grades: grades.csv lost them, and each student's folder
    its result.json, report.html and instructor.md."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=7)
    make_submission(subs / "bob", score=4)
    batch(subs, out)
    before = read_csv(out)
    published = sorted(p.name for p in (out / "submissions" / "alice").iterdir())
    assert "result.json" in published and "report.html" in published, published
    stream = io.StringIO()
    report = batch(subs, out, regrade=True, timeout_s=1.5, grade_fn=grade_fn, stream=stream)
    assert read_csv(out) == before, (
        f"expected the grades given to stay; observed {read_csv(out)} (grader/batch/pipeline.py "
        "record_outcome)")
    assert sorted(p.name for p in (out / "submissions" / "alice").iterdir()) == published
    assert report.failed == 2
    said = stream.getvalue()
    assert ("alice: " + status.replace("_", " ") + " - its grade of the same files (7/10) "
            "stays current; ") in said, said
    # The failed attempt is in the gradebook's history, not current.
    assert query(out, "SELECT r.status, r.current FROM runs r JOIN students s ON s.id = "
                      "r.student_id WHERE s.key = 'alice' ORDER BY r.id") == [
        ("graded", 1), (status, 0)]
    assert query(out, "SELECT count(*) FROM logs l JOIN runs r ON r.id = l.run_id JOIN students s "
                      "ON s.id = r.student_id WHERE s.key = 'alice' AND r.current = 0 AND "
                      "l.level = 'error'") == [(1,)]
    # Unchanged and graded: the next batch has nothing to do.
    assert batch(subs, out).progress.skipped == 2


def test_a_failed_grading_of_a_new_upload_leaves_no_grade_of_the_old_one_current(tmp_path):
    """A new upload whose grading fails: the earlier grade is another upload's, not this work's
    (it stays in the gradebook's history, and is said); the cells stay empty until the next
    batch grades the new upload."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=7)
    batch(subs, out)
    make_submission(subs / "alice", score=3, extra="a new upload")
    stream = io.StringIO()
    batch(subs, out, timeout_s=1.5, grade_fn=_hangs, stream=stream)
    (alice,) = csv.DictReader((out / "grades.csv").open(encoding="utf-8"))
    assert (alice.get("practical4", ""), alice["Total"], alice["Status"]) == (
        "", "", "timed out: grading took longer than 1.5 s and was stopped"), alice
    assert "alice: its earlier grade (7/10) was of another upload: not current now; the new " \
           "upload is graded by the next batch" in stream.getvalue(), stream.getvalue()
    assert query(out, "SELECT r.status, r.current FROM runs r ORDER BY r.id") == [
        ("graded", 0), ("timed_out", 1)]
