"""DIR/submissions/<key>/: each student's current run as files, kept in step with the gradebook.

The gradebook is the record; these folders are what people open. A batch killed between
recording a run and writing its files is repaired by `republish` at the start and end of every
batch (cheap and idempotent: only folders whose result.json differs are rewritten).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from grader.batch.gradebook import Gradebook
from grader.common.files import write_atomically
from grader.grading import RESULT_FILE, publish
from grader.grading.publish import STUDENT_FORMATS
from grader.scoring import read_result

PROBLEM_FILE = "grading-problem.txt"


def publish_run(out: Path, key: str, result: dict[str, Any] | None, work: Path | None,
                message: str | None, rubrics: dict | None = None) -> None:
    """DIR/submissions/<key>/ mirrors the current run: the folder its grading wrote (result.json,
    reports, what a re-score needs), a refused upload's result.json with the student's reports
    made from it (they say it was not graded, and why: grader/reports/not_graded.py), or,
    without a result, the reason in grading-problem.txt."""
    folder = out / "submissions" / key
    if work is not None and work.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        work.replace(folder)
    elif result is not None:
        # A rejection: no grading ran, so no report of an earlier run may stay beside it (a
        # re-upload that could not be unpacked had kept the last grading's report.html).
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    if result is not None and work is None:
        # The student's reports of a refusal, saying why and what to do: adv45's student over
        # the limits, and the one whose zip held `../`, had had no feedback file, only a
        # result.json and a grade cut short in Moodle's comment.
        publish(result, folder, rubrics=rubrics, formats=STUDENT_FORMATS)
        (folder / PROBLEM_FILE).unlink(missing_ok=True)
    elif result is not None:
        from grader.scoring import write_result
        write_result(folder / RESULT_FILE, result)
        (folder / PROBLEM_FILE).unlink(missing_ok=True)
    else:
        (folder / RESULT_FILE).unlink(missing_ok=True)
        write_atomically(folder / PROBLEM_FILE, (message or "") + "\n")


def republish(book: Gradebook, out: Path, rubrics: dict) -> None:
    """Rewrite each current run's result.json, and the reports made from it, from the gradebook."""
    for run in book.current_runs():
        folder = out / "submissions" / run.student.key
        if run.result is not None:
            target = folder / RESULT_FILE
            try:
                if target.exists() and read_result(target) == run.result:
                    continue
            except ValueError:
                pass
            if run.status == "rejected":
                # As the batch writes one: result.json and the student's reports of the
                # refusal (no instructor.md of a grading that never ran).
                publish_run(out, run.student.key, run.result, None, run.message, rubrics)
            else:
                publish(run.result, folder, rubrics=rubrics)
        else:
            publish_run(out, run.student.key, None, None, run.message)


def note_shared_answers(book: Gradebook, out: Path, rubrics: dict) -> None:
    """Each graded student's instructor.md names, beside a written answer, the students of
    the class who wrote the same text (grader/batch/class_page.py); rewritten where that
    changed, so a re-upload that ends the match ends the note too."""
    from grader.batch.class_page import same_written_answers, shared_answers_of
    from grader.reports.formats import FORMATS
    from grader.reports.instructor import render_instructor_markdown
    runs = [run for run in book.current_runs() if run.status == "graded" and run.result]
    shared = shared_answers_of(same_written_answers(runs))
    for run in runs:
        target = out / "submissions" / run.student.key / FORMATS["instructor"]
        if not target.parent.is_dir():
            continue
        try:
            text = render_instructor_markdown(run.result, rubrics, shared.get(run.student.key))
            if target.is_file() and target.read_text(encoding="utf-8") == text:
                continue
            write_atomically(target, text)
        except Exception as problem:   # one student's view can only fail itself: it stays
            print(f"pdl-grade: {target} could not be rewritten with the class's shared "
                  f"answers: {problem!r}", file=sys.stderr)
