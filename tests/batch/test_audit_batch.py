"""An instructor's audit of `pdl-grade batch` (a grading day of HW3 and Practical 5): each test
is one finding, with the fake graders (tests/support/fake_graders.py: no code is run)."""
from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from grader.batch.pipeline import BatchError, BatchOptions, run_batch
from tests.support.fake_graders import make_submission, scoring_grade, zip_folder


def batch(subs: Path, out: Path, assignments=("practical4",), grade_fn=scoring_grade, **options):
    stream = io.StringIO()
    summary = run_batch(subs, out, BatchOptions(assignments=assignments, **options),
                        grade_fn=grade_fn, stream=stream, live=False)
    return summary, stream.getvalue()


def rows(out: Path) -> dict[str, dict[str, str]]:
    return {row["Key"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def result(out: Path, key: str) -> dict:
    return json.loads((out / "submissions" / key / "result.json").read_text(encoding="utf-8"))


def moodle_download_zip(tmp_path: Path, archive: Path, participants: dict[str, int]) -> Path:
    """Moodle's "Download all submissions": a zip of `Name_<id>_assignsubmission_file_/` folders,
    each holding the student's own zip of their work."""
    staging = tmp_path / f"staging-{archive.stem}"
    for name, score in participants.items():
        work = make_submission(tmp_path / f"work-{archive.stem}-{name}", score=score)
        folder = staging / f"{name}_assignsubmission_file_"
        folder.mkdir(parents=True)
        zip_folder(work, folder / "work.zip")
    archive.parent.mkdir(parents=True, exist_ok=True)
    return zip_folder(staging, archive)


# --- F1: a whole Moodle download zip ---------------------------------------------------------

def test_a_folder_of_moodle_download_zips_is_graded_per_participant(tmp_path):
    """The zips as Moodle gives them had been graded as one student per zip, named after it."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    moodle_download_zip(tmp_path, subs / "LTAT-Practical 4-12345.zip",
                        {"Alice Tamm_1001": 10, "Bob Kask_1002": 5})
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["Alice_Tamm_1001", "Bob_Kask_1002"], (
        f"expected one row per participant of the download; observed {sorted(found)}\n{said}")
    assert found["Alice_Tamm_1001"]["Identifier"] == "Participant 1001"
    assert float(found["Alice_Tamm_1001"]["practical4"]) > float(found["Bob_Kask_1002"]["practical4"])
    assert "is a whole Moodle download: unzipped into" in said, said
    assert not (out / "work").exists(), "the unzipped download must not outlive the batch"
    # Run again: the same uploads, unchanged, are skipped (same keys, same content).
    again, _ = batch(subs, out)
    assert (again.progress.skipped, again.progress.graded) == (2, 0)


def test_one_participants_unzippable_upload_in_a_download_is_that_uploads_problem(tmp_path):
    """A red team: one participant's extra file named with 88 Chinese characters (268 bytes in
    UTF-8; Moodle counts characters) had stopped the whole batch, nobody graded. Each
    participant is unzipped on its own, with one upload's limits: that upload is refused with
    the reason, as a zip of its own would be, and the others are graded."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    archive = moodle_download_zip(tmp_path, subs / "LTAT-Practical 4-12345.zip",
                                  {"Alice Tamm_1001": 10, "Mallory Mets_1002": 5})
    long_name = "并行深度学习报告" * 11 + ".pdf"
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr(f"Mallory Mets_1002_assignsubmission_file_/{long_name}", b"%PDF-1.4\n")
    summary, said = batch(subs, out)
    found = rows(out)
    assert not result(out, "Alice_Tamm_1001")["errors"], said
    assert float(found["Alice_Tamm_1001"]["practical4"]) > 0, said
    mallory = result(out, "Mallory_Mets_1002")
    assert mallory["errors"] and "a name is longer than 255 bytes" in mallory["errors"][0], mallory
    assert (summary.progress.graded, summary.progress.rejected) == (1, 1), said
    assert "Mallory Mets_1002_assignsubmission_file_/ in LTAT-Practical 4-12345.zip" in said, said


def test_a_moodle_download_zip_given_as_submissions_is_graded(tmp_path):
    archive = moodle_download_zip(tmp_path, tmp_path / "LTAT-Practical 4-12345.zip",
                                  {"Alice Tamm_1001": 10, "Bob Kask_1002": 5})
    out = tmp_path / "out"
    batch(archive, out)
    assert sorted(rows(out)) == ["Alice_Tamm_1001", "Bob_Kask_1002"]


def test_a_zip_that_is_not_a_moodle_download_given_as_submissions_says_what_to_do(tmp_path):
    archive = zip_folder(make_submission(tmp_path / "alice", score=3), tmp_path / "alice.zip")
    with pytest.raises(BatchError) as refused:
        batch(archive, tmp_path / "out")
    message = str(refused.value)
    assert "is a .zip file, not a folder" in message and "Unzip it into a folder" in message, message


def test_a_moodle_download_zip_beside_student_folders_is_never_one_student(tmp_path):
    """Never graded (as one student or as its participants), but listed for a person with
    what to do: a console line alone had left whoever it was on no list."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "carol", score=7)
    moodle_download_zip(tmp_path, subs / "LTAT-Practical 4-12345.zip", {"Alice Tamm_1001": 10})
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["LTAT-Practical_4-12345", "carol"], (sorted(found), said)
    listed = found["LTAT-Practical_4-12345"]
    assert listed["practical4"] == "" and listed["Status"].startswith("needs a person"), (
        f"expected the download's zip listed for a person, ungraded; observed {listed}")
    why = result(out, "LTAT-Practical_4-12345")["errors"]
    assert why and "unzip it into a folder of its own" in why[0], why
    assert any("holds only Moodle's submission folders" in w and "not graded" in w
               for w in summary.progress.warnings), summary.progress.warnings


def moodle_folder_zipped(tmp_path: Path, archive: Path, folder_name: str, score: int) -> Path:
    """A student's zip of the folder Moodle gave her: `Name_<id>_assignsubmission_file_/...`."""
    staging = tmp_path / f"staging-{archive.stem}"
    make_submission(staging / folder_name, score=score)
    archive.parent.mkdir(parents=True, exist_ok=True)
    return zip_folder(staging, archive)


def flat_download(tmp_path: Path, anna_score: int, mallory_folder: str, mallory_score: int):
    """Moodle's flat layout: Anna's zip of her work, and Mallory's zip of `mallory_folder`;
    graded; (summary, console, grades.csv rows)."""
    subs, out = tmp_path / "dl", tmp_path / "out"
    subs.mkdir()
    zip_folder(make_submission(tmp_path / "anna", score=anna_score),
               subs / "Anna Tamm_100001_assignsubmission_file_practical4.zip")
    moodle_folder_zipped(tmp_path, subs / "Mallory Kurg_100009_assignsubmission_file_practical4.zip",
                         mallory_folder, score=mallory_score)
    summary, said = batch(subs, out)
    return summary, said, rows(out)


def test_a_flat_moodle_upload_of_the_students_own_moodle_folder_zipped_is_hers(tmp_path):
    """adv34 F4: in Moodle's flat layout, Mallory's upload (her Moodle folder, zipped) had been
    taken for a whole download beside Anna's and left out of every record: no row, no person's
    entry, "1/1 done". A file Moodle names as one participant's is that participant's upload."""
    summary, said, found = flat_download(tmp_path, 6, "Mallory Kurg_100009_assignsubmission_file_", 9)
    assert sorted(found) == ["Anna_Tamm_100001", "Mallory_Kurg_100009"], (
        f"expected a row for each participant of the flat download; observed {sorted(found)}"
        f" (grader/batch/zipped_downloads.py moodle_downloads)\n{said}")
    assert found["Mallory_Kurg_100009"]["Identifier"] == "Participant 100009"
    assert float(found["Mallory_Kurg_100009"]["practical4"]) > float(
        found["Anna_Tamm_100001"]["practical4"]) > 0, found
    assert (summary.progress.graded, summary.progress.needs_person) == (2, 0), said
    assert not summary.progress.warnings, summary.progress.warnings


def test_a_flat_moodle_upload_holding_another_participants_folder_is_its_uploaders(tmp_path):
    """The hostile variant: Mallory's zip holds a folder named for Anna. It is Mallory's upload,
    graded as hers; Anna is graded from her own upload only (unzipping Mallory's zip as a
    download, as the old warning advised, would have graded the fake Anna)."""
    summary, said, found = flat_download(tmp_path, 8, "Anna Tamm_100001_assignsubmission_file_", 2)
    assert sorted(found) == ["Anna_Tamm_100001", "Mallory_Kurg_100009"], (sorted(found), said)
    anna, mallory = (float(found[key]["practical4"]) for key in ("Anna_Tamm_100001",
                                                                 "Mallory_Kurg_100009"))
    assert mallory > 0 and anna == pytest.approx(4 * mallory), (
        f"expected Anna graded from her upload (fake score 8) and Mallory from hers (2); "
        f"observed {found}")


def test_a_students_plain_zip_of_her_moodle_folder_beside_others_is_for_a_person(tmp_path):
    """alice.zip holding only `Alice Tamm_1001_assignsubmission_file_/`, beside bob/: a
    student's upload or a download cannot be told apart; Alice is listed for a person with
    the reason, never dropped."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "bob", score=4)
    moodle_folder_zipped(tmp_path, subs / "alice.zip", "Alice Tamm_1001_assignsubmission_file_", 9)
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["alice", "bob"], (
        f"expected a row for alice (for a person) and bob; observed {sorted(found)}\n{said}")
    assert found["alice"]["Status"].startswith("needs a person") and \
        "alice.zip holds only Moodle's submission folders" in found["alice"]["Status"], found
    assert (summary.progress.graded, summary.progress.needs_person) == (1, 1), said


def test_zip_entry_names_of_info_zip_without_the_utf8_flag_are_read_as_utf8(tmp_path):
    """F13: Info-ZIP writes the system's UTF-8 bytes without the flag; zipfile had read them as
    CP437 (`Kodut├╢├╢ 3/`). With the Unicode Path extra field (0x7075), that name counts."""
    import struct
    import zlib
    from grader.batch.unpack import zip_entry_name
    raw = "Kodutöö 3/hw3/answers.yaml".encode("utf-8")
    info = zipfile.ZipInfo(raw.decode("cp437"))
    info.orig_filename = info.filename
    assert zip_entry_name(info) == "Kodutöö 3/hw3/answers.yaml"
    cp437 = "Lösung.py".encode("cp437")     # a real CP437 name (not UTF-8): kept
    info = zipfile.ZipInfo(cp437.decode("cp437"))
    info.orig_filename = info.filename
    assert zip_entry_name(info) == "Lösung.py"
    unicode = "Jüri.py".encode("utf-8")
    info = zipfile.ZipInfo(cp437.decode("cp437"))
    info.orig_filename = info.filename
    data = b"\x01" + struct.pack("<I", zlib.crc32(cp437)) + unicode
    info.extra = struct.pack("<HH", 0x7075, len(data)) + data
    assert zip_entry_name(info) == "Jüri.py"


# --- F2: overrides and Moodle worksheets are kept by a batch given none ----------------------

def moodle_worksheet(path: Path, *participants: tuple[int, str]) -> Path:
    path.write_text('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
                    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
                    '"Feedback comments"\n' + "".join(
                        f'"Participant {pid}","{name}",{pid}@example.org,"Submitted for grading",'
                        ',12.00,Yes,"Monday, 4 May 2026, 10:00 AM",-,\n' for pid, name in participants),
                    encoding="utf-8")
    return path


def moodle_grades(path: Path) -> dict[str, str]:
    return {row["Identifier"]: row["Grade"] for row in csv.DictReader(path.open(encoding="utf-8-sig"))}


def practical4_only(folder: Path, passed: int) -> Path:
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"A = {passed}\n")
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


def test_a_batch_given_no_overrides_keeps_those_it_was_scored_with_and_its_worksheet(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    practical4_only(subs / "Alice Tamm_1001_assignsubmission_file_", 5)
    practical4_only(subs / "Bob Kask_1002_assignsubmission_file_", 5)
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("Alice_Tamm_1001:\n  practical4.questions.easier: {points: 0.5, comment: good}\n")
    sheet = moodle_worksheet(tmp_path / "p4-worksheet.csv", (1001, "Alice Tamm"), (1002, "Bob Kask"))
    batch(subs, out, overrides=overrides, moodle_worksheets=(("practical4", sheet),))
    with_override = result(out, "Alice_Tamm_1001")["score"]
    assert result(out, "Alice_Tamm_1001")["overrides"], "the override was not applied at all"

    # A late upload of Bob's: the batch is run again, without the overrides and the worksheet.
    practical4_only(subs / "Bob Kask_1002_assignsubmission_file_", 7)
    summary, said = batch(subs, out)
    assert result(out, "Alice_Tamm_1001")["score"] == with_override, (
        f"expected Alice's override kept by a batch given none; observed\n{said}")
    assert "overrides: none given, so those this gradebook was last scored with" in said, said
    assert summary.progress.skipped == 1, "Alice's upload and overrides are unchanged: skipped"
    table = moodle_grades(out / "moodle" / "practical4.csv")
    filled = moodle_grades(out / "moodle" / "practical4-worksheet.csv")
    assert table == {k: v for k, v in filled.items() if k in table}, (
        f"two Moodle files that disagree: practical4.csv {table}, the worksheet {filled}")
    assert float(filled["Participant 1001"]) == with_override

    # A new file replaces them, and says whose entry it dropped.
    overrides.write_text("Bob_Kask_1002:\n  practical4.questions.easier: {points: 0.5}\n")
    summary, said = batch(subs, out, overrides=overrides)
    assert "overrides" not in result(out, "Alice_Tamm_1001")
    assert any("no entry for Alice_Tamm_1001" in w for w in summary.progress.warnings), said
    filled = moodle_grades(out / "moodle" / "practical4-worksheet.csv")
    assert filled == {k: v for k, v in moodle_grades(out / "moodle" / "practical4.csv").items()}


# --- F3: --submission-times once per download ------------------------------------------------

def two_downloads_with_worksheets(tmp_path: Path):
    """Alice in Practical 4's download (participant 1001) and in HW3's (2001), each download's
    worksheet with her time there."""
    subs = tmp_path / "class"
    practical4_only(subs / "p4" / "Alice Tamm_1001_assignsubmission_file_", 5)
    hw3 = subs / "hw3" / "Alice Tamm_2001_assignsubmission_file_"
    (hw3 / "hw3").mkdir(parents=True)
    (hw3 / "hw3" / "model_parallel.py").write_text("import torch\n")
    p4_times = tmp_path / "p4-times.csv"
    p4_times.write_text("student,submitted_at\nParticipant 1001,2026-03-01T10:00:00+00:00\n")
    hw3_times = tmp_path / "hw3-times.csv"
    hw3_times.write_text("student,submitted_at\nParticipant 2001,2026-05-02T09:30:00+00:00\n")
    return subs, p4_times, hw3_times


def submitted(out: Path) -> dict[str, str]:
    import sqlite3
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        return dict(db.execute("SELECT s.key, r.submitted_at FROM runs r JOIN students s ON "
                               "s.id = r.student_id WHERE r.current = 1"))


def test_submission_times_given_per_download_are_merged(tmp_path):
    subs, p4_times, hw3_times = two_downloads_with_worksheets(tmp_path)
    out = tmp_path / "out"
    batch(subs, out, assignments=None, submission_times=((None, hw3_times), ("practical4", p4_times)))
    assert submitted(out) == {"Alice_Tamm_1001": "2026-03-01T10:00:00+00:00",
                              "Alice_Tamm_2001": "2026-05-02T09:30:00+00:00"}, submitted(out)
    # A batch given one of them keeps the other download's times (it had wiped them).
    batch(subs, out, assignments=None, submission_times=((None, p4_times),))
    assert submitted(out)["Alice_Tamm_2001"] == "2026-05-02T09:30:00+00:00", submitted(out)


def test_two_times_files_that_disagree_on_an_upload_are_refused(tmp_path):
    subs, p4_times, _ = two_downloads_with_worksheets(tmp_path)
    other = tmp_path / "other.csv"
    other.write_text("student,submitted_at\nParticipant 1001,2026-04-01T10:00:00+00:00\n")
    with pytest.raises(BatchError) as refused:
        batch(subs, tmp_path / "out", assignments=None,
              submission_times=((None, p4_times), (None, other)))
    assert "different times" in str(refused.value) and "Alice_Tamm_1001" in str(refused.value)


def test_the_cli_takes_submission_times_per_assignment(tmp_path):
    from grader.cli import build_parser
    from grader.cli.batch import _worksheet_argument
    options = build_parser().parse_args(["batch", "subs", "--out", "o", "--submission-times",
                                         "hw3=a.csv", "--submission-times", "b.csv"])
    assert [_worksheet_argument(t) for t in options.submission_times] == [("hw3", "a.csv"),
                                                                          (None, "b.csv")]


# --- F4: --assignment leaves another assignment's download alone ------------------------------

def hw3_only(folder: Path, passed: int) -> Path:
    (folder / "hw3").mkdir(parents=True, exist_ok=True)
    (folder / "hw3" / "model_parallel.py").write_text(f"import torch  # {passed}\n")
    (folder / "practical4").mkdir(exist_ok=True)
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))
    return folder


def test_an_assignment_named_leaves_another_assignments_uploads_alone(tmp_path):
    subs, out = tmp_path / "class", tmp_path / "out"
    practical4_only(subs / "p4" / "Alice Tamm_1001_assignsubmission_file_", 5)
    hw3_only(subs / "hw3" / "Alice Tamm_2001_assignsubmission_file_", 5)
    batch(subs, out, assignments=None)
    before = result(out, "Alice_Tamm_1001")
    summary, said = batch(subs, out, assignments=("hw3",), regrade=True)
    assert result(out, "Alice_Tamm_1001") == before, "Practical 4's result was overwritten"
    assert "1 upload(s) hold none of it but another assignment's files, and are left alone" in said
    row = next(iter(rows(out).values()))
    assert len(rows(out)) == 1 and row["practical4"] and row["hw3"], rows(out)


# --- F5: a damaged archive is a person's, with no grade ---------------------------------------

def test_a_truncated_zip_needs_a_person_and_gets_no_zero(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    archive = zip_folder(practical4_only(tmp_path / "eve", 5), tmp_path / "eve.zip")
    folder = subs / "Eve Lepp_1005_assignsubmission_file_"
    folder.mkdir(parents=True)
    (folder / "hw3.zip").write_bytes(archive.read_bytes()[:len(archive.read_bytes()) // 2])
    practical4_only(subs / "Bob Kask_1002_assignsubmission_file_", 5)
    summary, said = batch(subs, out)
    eve = rows(out)["Eve_Lepp_1005"]
    assert eve["practical4"] == "" and eve["Total"] == "", eve
    assert summary.progress.needs_person == 1, said
    assert "damaged" in json.dumps(result(out, "Eve_Lepp_1005")), said


# --- F10, F11, F14: what the console says ------------------------------------------------------

def test_ctrl_c_says_how_to_resume_and_keeps_nothing_half_done(tmp_path, monkeypatch):
    from grader.batch import pipeline
    from grader.batch.pipeline import BatchInterrupted

    def interrupted(jobs, *args):      # Ctrl-C while the first grading runs
        for job in jobs:
            (job.out).mkdir(parents=True, exist_ok=True)
            (job.out / "result.json").write_text("{")      # half written
            raise KeyboardInterrupt
        yield from ()
    subs, out = tmp_path / "subs", tmp_path / "out"
    practical4_only(subs / "alice", 5)
    monkeypatch.setattr(pipeline, "run_jobs", interrupted)
    with pytest.raises(BatchInterrupted) as stopped:
        batch(subs, out)
    # ... and what it wrote of the class's files for what is graded so far (adv45 F4).
    assert str(stopped.value) == ("interrupted: 0 graded, 1 left; run the same command again "
                                  "to resume. grades.csv and index.html hold only the 0 "
                                  "upload(s) recorded so far (partial: 1 left); the same "
                                  "command completes them"), stopped.value
    assert not (out / "work").exists() and not (out / "submissions" / "alice").exists()
    monkeypatch.undo()
    again, _ = batch(subs, out)
    assert again.progress.graded == 1


def test_the_cli_exits_130_with_one_line_on_ctrl_c(tmp_path, monkeypatch, capsys):
    from grader.batch import pipeline
    from grader.cli import main

    def interrupted(*args, **kwargs):
        raise pipeline.BatchInterrupted(3, 3, 10)
    monkeypatch.setattr(pipeline, "run_batch", interrupted)
    (tmp_path / "subs").mkdir()
    code = main(["batch", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--workers", "1"])
    assert code == 130
    assert capsys.readouterr().err.strip().endswith(
        "interrupted: 3 graded, 7 left; run the same command again to resume")


def test_a_regrading_of_the_same_upload_says_why(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    practical4_only(subs / "alice", 5)
    batch(subs, out)
    _, said = batch(subs, out, check_timeout=99.0)
    assert "re-graded alice" in said and "re-graded:" in said, said


def test_no_late_penalty_warning_where_the_rubric_has_no_late_policy(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    hw3_only(subs / "alice", 5)
    summary, said = batch(subs, out, assignments=("hw3",))
    assert "has a due date but" not in said, said


def test_each_participant_of_a_download_is_held_to_one_uploads_limits(tmp_path):
    """The download's directory is read once for all its participants (once each had made a
    class of 300 quadratic); each participant still gets one upload's limits, not the whole
    download's: more entries than an upload may list refuse that upload alone."""
    from grader.batch.unpack import UnpackLimits, extract_each
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("Alice Tamm_1001_assignsubmission_file_/hw3/model.py", "x = 1\n")
        for i in range(12):
            zf.writestr(f"Mallory Mets_1002_assignsubmission_file_/many/{i}.txt", "")
    names = ["Alice Tamm_1001_assignsubmission_file_", "Mallory Mets_1002_assignsubmission_file_"]
    refused = extract_each(archive, tmp_path / "out", UnpackLimits(max_listed=10), names)
    assert list(refused) == [names[1]], refused
    assert "more than 10 files and folders" in str(refused[names[1]]), refused[names[1]]
    assert (tmp_path / "out" / names[0] / "hw3" / "model.py").read_text() == "x = 1\n"
