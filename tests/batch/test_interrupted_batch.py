"""What an instructor has after stopping a batch, and what the run that finishes the class says
(adv45 F4).

Ctrl-C after 5 of 16 gradings left DIR/ without grades.csv or index.html (written only at the
end of a batch), though the README promises "keeping everything graded so far": an instructor
stopping for the day had no record of the 5. And the resumed run said "[1/16] skipped
Bruno_Big_100014" for the upload the first run had rejected (a 0), listing it nowhere under
"Not graded normally", so the run that finished the class never said that Bruno had a 0."""
from __future__ import annotations

import csv
import io
import json

import pytest

from grader.batch import pipeline
from grader.batch.pipeline import BatchInterrupted, BatchOptions, run_batch
from tests.support.fake_graders import scoring_grade, zip_bytes


def _batch(subs, out):
    stream = io.StringIO()
    summary = run_batch(subs, out, BatchOptions(assignments=("practical4",)),
                        grade_fn=scoring_grade, stream=stream, live=False)
    return summary, stream.getvalue()


def _upload(folder, passed):
    (folder / "practical4").mkdir(parents=True, exist_ok=True)
    (folder / "practical4" / "concepts.py").write_text(f"A = {passed}\n")
    (folder / "practical4" / "FAKE.json").write_text(json.dumps({"score": passed}))


def test_ctrl_c_leaves_grades_csv_and_the_class_page_of_what_is_graded(tmp_path, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name, passed in (("alice", 5), ("bob", 6), ("carol", 7)):
        _upload(subs / name, passed)
    real = pipeline.run_jobs

    def stopped_after_one(jobs, *args):     # Ctrl-C while the second grading runs
        for outcome in real(jobs, *args):
            yield outcome
            raise KeyboardInterrupt
    monkeypatch.setattr(pipeline, "run_jobs", stopped_after_one)
    with pytest.raises(BatchInterrupted) as stopped:
        _batch(subs, out)
    said = str(stopped.value)
    assert (out / "grades.csv").is_file() and (out / "index.html").is_file(), (
        f"expected grades.csv and index.html of the 1 graded so far; observed {sorted(p.name for p in out.iterdir())} "
        "(grader/batch/pipeline.py run_batch, on KeyboardInterrupt)")
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        graded = {row["Key"]: row["practical4"] for row in csv.DictReader(handle)}
    assert list(graded) == ["alice"] and graded["alice"] != "", (
        f"expected alice's grade alone (the only one graded); observed {graded}")
    assert said.startswith("interrupted: 1 graded, 2 left; run the same command again to resume"), said
    assert "grades.csv and index.html hold only the 1 upload(s) recorded so far" in said, said
    assert "partial" in (out / "index.html").read_text(encoding="utf-8").lower(), (
        "expected the class page marked as partial")
    monkeypatch.undo()
    summary, _ = _batch(subs, out)
    assert summary.progress.graded == 2
    assert "partial" not in (out / "index.html").read_text(encoding="utf-8").lower()


def test_a_resumed_batch_lists_an_upload_it_rejected_before_as_not_graded(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _upload(subs / "alice", 5)
    (subs / "mallory.zip").write_bytes(zip_bytes([("practical4/concepts.py", b"A = 1\n"),
                                                  ("../../evil.py", b"x")]))
    _batch(subs, out)
    summary, said = _batch(subs, out)
    assert "still rejected (unchanged) mallory: mallory.zip: entry '../../evil.py'" in said, said
    listed = said.split("Not graded normally:", 1)[-1]
    assert "Not graded normally:" in said and "  mallory: rejected - unchanged since the last " \
        "batch: mallory.zip: entry '../../evil.py'" in listed, (
        f"expected the earlier rejection (a 0) listed in the run that finishes the class; "
        f"observed:\n{said} (grader/batch/pipeline.py _settle, progress.py)")
    assert "1 rejected (unchanged)" in summary.progress.line(), summary.progress.line()


def test_the_summary_keeps_a_long_rejections_advice():
    from grader.batch.progress import Progress
    progress = Progress(total=1, stream=io.StringIO(), live=False)
    reason = ("hw3.zip: 2 entries leave the archive: '../../evil.py' (../), "
              "'hw3/../../../tmp/adv45_pwned.txt' (../); it also holds links out of it (never "
              "followed): hw3/answers_link.yaml (to /etc/passwd), hw3/etc_link (to /etc); "
              "rejected: zip the folder itself, from the folder that holds it, so that no path "
              "in it leaves it")
    progress.finished("Sergei_Slip_100013", "rejected", reason)
    listed = progress.summary().split("Not graded normally:")[1]
    assert "so that no path in it leaves it" in listed, (
        f"expected the advice kept (the middle shortened); observed {listed!r} "
        "(grader/batch/progress.py summary)")
