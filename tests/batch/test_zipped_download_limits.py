"""A participant's folder of a whole Moodle download given zipped is held to the upload limits
as the same folder unzipped by hand is: its data files (checkpoints, datasets) are left out and
named, and the code beside them graded (adv45 F1: an honest student with the reference beside a
210 MiB checkpoint.pt was rejected "as a possible archive bomb" and scored 0 from the zip, but
graded 10.5/15 from the unzipped folder). Where an upload is over a limit all the same, the
message names its largest files, with their sizes, and what to do; Moodle's comment keeps that
advice however long the reason is."""
from __future__ import annotations

import csv
import os
import json
from pathlib import Path

from grader.batch.inputs import UnpackLimits, discover, prepare
from grader.batch.zipped_downloads import moodle_downloads, with_download_problems
from tests.support import run_test_batch
from tests.support.fake_graders import make_submission, write_entries, zip_bytes

SMALL = UnpackLimits(max_total_bytes=1_000_000, max_files=50)
BRUNO = "Bruno Big_100014_assignsubmission_file_"
ANNA = "Anna Tamm_100007_assignsubmission_file_"


def _download(tmp_path: Path, extra: list[tuple[str, bytes]]) -> Path:
    """SUBMISSIONS holding one whole Moodle download, zipped: Bruno's folder (an honest upload
    plus `extra`) and Anna's (an honest upload)."""
    work = make_submission(tmp_path / "work", score=7)
    honest = [(path.relative_to(work).as_posix(), path.read_bytes())
              for path in sorted(work.rglob("*")) if path.is_file()]
    entries = [(f"{who}/{rel}", data) for who in (BRUNO, ANNA) for rel, data in honest]
    entries += [(f"{BRUNO}/{rel}", data) for rel, data in extra]
    return write_entries(tmp_path / "subs", {"HW3-download-all.zip": zip_bytes(entries)})


def _prepared_from_the_zip(tmp_path: Path, extra):
    subs = _download(tmp_path, extra)
    downloads = moodle_downloads(subs / "HW3-download-all.zip", tmp_path / "out", SMALL)
    found, _ = discover(downloads.folder)
    with_download_problems(found, downloads)
    bruno = next(s for s in found if s.student.key.startswith("Bruno"))
    return bruno, prepare(bruno, tmp_path / "scratch", SMALL)


def _prepared_from_the_folder(tmp_path: Path, extra):
    folder = make_submission(tmp_path / "subs" / BRUNO, score=7)
    for rel, data in extra:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    found, _ = discover(tmp_path / "subs")
    return prepare(found[0], tmp_path / "scratch", SMALL)


def test_a_checkpoint_in_a_zipped_download_is_left_out_as_from_the_folder(tmp_path):
    checkpoint = [("hw3/checkpoint.pt", b"\x01" * 1_200_000)]
    bruno, zipped = _prepared_from_the_zip(tmp_path / "zipped", checkpoint)
    unzipped = _prepared_from_the_folder(tmp_path / "unzipped", checkpoint)
    assert bruno.problem is None and zipped.problem is None, (
        f"expected Bruno's folder graded without its checkpoint, as from the unzipped folder "
        f"(problem: {unzipped.problem}); observed the rejection {bruno.problem or zipped.problem!r} "
        "(grader/batch/unpack.py extract_each: the leave-out pass)")
    assert zipped.left_out == unzipped.left_out == ["hw3/checkpoint.pt (1.1 MiB)"], (
        f"expected the checkpoint named as left out both ways; observed zipped {zipped.left_out}, "
        f"unzipped {unzipped.left_out}")
    said = [note for note in zipped.notes if note.startswith("graded without")]
    assert len(said) == 1 and said[0].startswith("graded without 1 data file (1.1 MiB) (") \
        and said[0].endswith("): hw3/checkpoint.pt (1.1 MiB)"), zipped.notes
    files = sorted(p.relative_to(zipped.root).as_posix() for p in zipped.root.rglob("*")
                   if p.is_file())
    assert "hw3/checkpoint.pt" not in files and "hw3/model_parallel.py" in files, files


def test_code_over_the_limit_names_the_largest_files_and_what_to_do(tmp_path):
    big = [("hw3/notes.txt", b"x" * 900_000), ("hw3/more_notes.txt", b"y" * 300_000),
           ("hw3/checkpoint.pt", b"\x01" * 400_000)]
    bruno, zipped = _prepared_from_the_zip(tmp_path / "zipped", big)
    problem = bruno.problem or zipped.problem or ""
    for said in ("hw3/notes.txt (878.9 KiB)", "hw3/more_notes.txt (293.0 KiB)",
                 "even with 1 data file (390.6 KiB) left out", "hand in the code, answers and report"):
        assert said in problem, f"expected {said!r} in the rejection; observed {problem!r}"
    assert BRUNO not in problem.split(" in HW3-download-all.zip: ", 1)[-1], (
        f"the files are named as in the participant's own folder; observed {problem!r}")
    unzipped = _prepared_from_the_folder(tmp_path / "unzipped", big)
    assert "hw3/notes.txt (878.9 KiB)" in (unzipped.problem or ""), unzipped.problem


def test_a_zipped_downloads_checkpoint_costs_no_grade_and_the_neighbour_keeps_hers(tmp_path):
    subs = _download(tmp_path, [("hw3/checkpoint.pt", b"\x01" * 1_200_000)])
    out = tmp_path / "out"
    run_test_batch(subs, out, ["practical4"], limits=SMALL)
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["Full name"]: row for row in csv.DictReader(handle)}
    assert rows["Bruno Big"]["practical4"] == "7" and rows["Anna Tamm"]["practical4"] == "7", (
        f"expected both graded 7 (the checkpoint left out); observed {rows}")
    folder = out / "submissions" / "Bruno_Big_100014"
    result = json.loads((folder / "result.json").read_text())
    assert result.get("left_out") == ["hw3/checkpoint.pt (1.1 MiB)"], result.get("left_out")
    assert "hw3/checkpoint.pt (1.1 MiB)" in (folder / "report.md").read_text()


def test_moodles_comment_on_a_long_rejection_keeps_its_advice():
    from grader.batch.gradebook import CurrentRun
    from grader.batch.inputs import Student
    from grader.batch.moodle_worksheet import comment
    reason = ("Bruno Big_100014_assignsubmission_file_/ in HW3-download-all.zip: would unpack to "
              "220264923 bytes, more than the limit of 209715200; largest files: "
              "hw3/notes.txt (210.0 MiB), hw3/model_parallel.py (4.0 KiB); rejected as a "
              "possible archive bomb, or one holding data the course's work does not need: "
              "hand in the code, answers and report without datasets or checkpoints")
    run = CurrentRun(student=Student("Bruno_Big_100014", "Bruno Big", "100014"),
                     status="rejected", message=reason, content_hash="", config_hash="",
                     result={"assignments": [{"id": "hw3", "score": 0, "max_score": 15}]},
                     assignment_scores={"hw3": 0})
    said = comment(run, "hw3", "")
    assert "hand in the code, answers and report without datasets or checkpoints" in said, (
        f"expected the rejection's advice kept (the middle shortened, never the end); observed "
        f"{said!r} (grader/batch/moodle_worksheet.py comment)")
    assert said.startswith("hw3: 0 of 15 points: the upload could not be graded (Bruno Big"), said


def test_an_upload_over_the_limits_all_the_same_gets_a_report_saying_why(tmp_path):
    subs = _download(tmp_path, [("hw3/notes.txt", b"x" * 1_200_000)])
    out = tmp_path / "out"
    run_test_batch(subs, out, ["practical4"], limits=SMALL)
    folder = out / "submissions" / "Bruno_Big_100014"
    assert (folder / "report.md").is_file() and (folder / "report.html").is_file(), (
        f"expected the student's reports of the refusal; observed {sorted(os.listdir(folder))} "
        "(grader/batch/published.py publish_run)")
    report = (folder / "report.md").read_text()
    for said in ("Not graded", "hw3/notes.txt (1.1 MiB)", "hand in the code, answers and report"):
        assert said in report, f"expected {said!r} in report.md; observed:\n{report}"
    assert not (folder / "instructor.md").exists(), "no instructor.md of a grading never run"


def test_a_flat_downloads_checkpoint_alone_is_left_out_and_for_a_person(tmp_path):
    """Moodle's flat layout: the participant's one file is the checkpoint. Left out, nothing of
    the assignment is left: a person's to look at (no 0), as the same file in a folder."""
    entries = [("Bruno Big_100014_assignsubmission_file_model.pt", b"\x01" * 1_200_000),
               ("Anna Tamm_100007_assignsubmission_file_concepts.py", b"A = 1\n")]
    subs = write_entries(tmp_path / "subs", {"HW3-download-all.zip": zip_bytes(entries)})
    downloads = moodle_downloads(subs / "HW3-download-all.zip", tmp_path / "out", SMALL)
    place = next(iter(downloads.left_out), None)
    assert place is not None and place.name.startswith("Bruno"), downloads.problems
    found, _ = discover(downloads.folder)
    with_download_problems(found, downloads)
    bruno = next((s for s in found if s.student.key.startswith("Bruno")), None)
    assert bruno is not None, (f"expected Bruno still in the record, his one file left out; "
                               f"observed only {[s.student.key for s in found]}")
    prepared = prepare(bruno, tmp_path / "scratch", SMALL, ["hw3"])
    assert prepared.needs_person and "unpacked without model.pt (1.1 MiB)" in prepared.problem, (
        f"expected no grade (a person's) naming the left-out file; observed {prepared.problem!r}")
