"""A zip of Moodle's folders beside other uploads is listed for a person; once the staff have
unzipped it and graded again, its row must leave the record (an instructor's regrade: the
"needs a person" row under the zip's name had stayed in grades.csv beside its participants'
grades). Fake graders (tests/support/fake_graders.py): no code is run."""
from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

from tests.batch.test_audit_batch import (batch, moodle_download_zip, moodle_folder_zipped,
                                          result, rows)
from tests.support.fake_graders import make_submission

DOWNLOAD = "LTAT-Practical 4-12345.zip"
DOWNLOAD_KEY = "LTAT-Practical_4-12345"
WHERE = "grader/batch/settled_downloads.py settle_moodle_zips"


def listed_beside_carol(tmp_path: Path) -> tuple[Path, Path, Path]:
    """carol/ and a whole download's zip, batched once: (SUBMISSIONS, DIR, the zip)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "carol", score=7)
    archive = moodle_download_zip(tmp_path, subs / DOWNLOAD,
                                  {"Alice Tamm_1001": 10, "Bob Kask_1002": 5})
    batch(subs, out)
    assert rows(out)[DOWNLOAD_KEY]["Status"].startswith("needs a person"), rows(out)
    return subs, out, archive


def unzip(archive: Path, into: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(into)


def history(out: Path, key: str) -> list[tuple[str, int]]:
    db = sqlite3.connect(out / "gradebook.sqlite")
    try:
        return db.execute("SELECT r.status, r.current FROM runs r JOIN students st ON "
                          "st.id = r.student_id WHERE st.key = ?", (key,)).fetchall()
    finally:
        db.close()


def test_a_download_unzipped_in_place_and_removed_leaves_no_row_for_its_zip(tmp_path):
    subs, out, archive = listed_beside_carol(tmp_path)
    carol_before = rows(out)["carol"]
    unzip(archive, subs / archive.stem)
    archive.unlink()
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["Alice_Tamm_1001", "Bob_Kask_1002", "carol"], (
        f"expected the zip's row dropped once its participants are graded; observed rows "
        f"{sorted(found)} ({WHERE})\n{said}")
    assert found["carol"] == carol_before, "carol's grade must stay as it was"
    assert (summary.progress.graded, summary.progress.skipped) == (2, 1), said
    assert history(out, DOWNLOAD_KEY) == [("rejected", 0)], (
        "expected the zip's row kept in the gradebook's history, no longer current")
    assert not (out / "submissions" / DOWNLOAD_KEY).exists(), "its published folder must go too"
    assert f"{DOWNLOAD_KEY}: its row for a person is dropped: {DOWNLOAD} is no longer in" in said, said


def test_a_download_unzipped_beside_its_zip_is_no_longer_for_a_person(tmp_path):
    subs, out, archive = listed_beside_carol(tmp_path)
    unzip(archive, subs / archive.stem)
    summary, said = batch(subs, out)
    assert sorted(rows(out)) == ["Alice_Tamm_1001", "Bob_Kask_1002", "carol"], (sorted(rows(out)), said)
    assert summary.progress.needs_person == 0, said
    assert not any(DOWNLOAD in w for w in summary.progress.warnings), summary.progress.warnings
    assert f"{DOWNLOAD}: each of its 2 participant(s) has a row of their own" in said, said
    # And the next batch says nothing more of it.
    again, said = batch(subs, out)
    assert (again.progress.skipped, again.progress.needs_person) == (3, 0), said


def test_a_zip_of_a_students_own_folder_unzipped_replaces_her_row(tmp_path):
    """alice.zip (her Moodle folder, zipped) was for a person; unzipped by the TA, she is
    graded under her Moodle name and the row named alice goes."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "bob", score=4)
    archive = moodle_folder_zipped(tmp_path, subs / "alice.zip",
                                   "Alice Tamm_1001_assignsubmission_file_", 9)
    batch(subs, out)
    unzip(archive, subs)
    archive.unlink()
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["Alice_Tamm_1001", "bob"], (sorted(found), said)
    assert float(found["Alice_Tamm_1001"]["practical4"]) > 0, found


def test_a_zip_still_where_it_was_found_keeps_its_row_and_no_grade_is_lost(tmp_path):
    """Another folder graded into the same DIR (several downloads, one gradebook): the zip is
    still where the first batch found it and its participants are ungraded, so its row stays;
    carol, graded from the first folder only, keeps hers."""
    subs, out, archive = listed_beside_carol(tmp_path)
    other = tmp_path / "late"
    make_submission(other / "dave", score=3)
    summary, said = batch(other, out)
    found = rows(out)
    assert sorted(found) == [DOWNLOAD_KEY, "carol", "dave"], (sorted(found), said)
    assert found["carol"]["Status"].split(",")[0] == "graded" and found["carol"]["practical4"], found["carol"]
    # The download, removed without being graded, and a regrade of the first folder: a
    # graded student's row is never dropped with it.
    archive.unlink()
    summary, said = batch(subs, out, regrade=True)
    found = rows(out)
    assert sorted(found) == ["carol", "dave"], (sorted(found), said)
    assert found["dave"]["practical4"], found["dave"]


def test_a_zip_replaced_by_the_students_own_folder_is_graded_as_hers(tmp_path):
    """alice.zip for a person, then replaced by alice/ (her work): one row, alice's grade."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "bob", score=4)
    archive = moodle_folder_zipped(tmp_path, subs / "alice.zip",
                                   "Alice Tamm_1001_assignsubmission_file_", 9)
    batch(subs, out)
    archive.unlink()
    make_submission(subs / "alice", score=9)
    summary, said = batch(subs, out)
    found = rows(out)
    assert sorted(found) == ["alice", "bob"] and found["alice"]["Status"].split(",")[0] == "graded", (found, said)
    assert not result(out, "alice")["errors"], said


def test_a_dry_run_says_the_zips_row_would_go_and_drops_nothing(tmp_path):
    subs, out, archive = listed_beside_carol(tmp_path)
    archive.unlink()
    summary, said = batch(subs, out, dry_run=True)
    assert "is no longer in" in said and "(a dry run: not yet)" in said, said
    assert DOWNLOAD_KEY in rows(out), "a dry run must change no record"
    assert history(out, DOWNLOAD_KEY) == [("rejected", 1)]
