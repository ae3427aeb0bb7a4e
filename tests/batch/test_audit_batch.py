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
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "carol", score=7)
    moodle_download_zip(tmp_path, subs / "LTAT-Practical 4-12345.zip", {"Alice Tamm_1001": 10})
    summary, said = batch(subs, out)
    assert sorted(rows(out)) == ["carol"], (sorted(rows(out)), said)
    assert any("is a whole Moodle download" in w and "not graded" in w and "Unzip it" in w
               for w in summary.progress.warnings), summary.progress.warnings


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
