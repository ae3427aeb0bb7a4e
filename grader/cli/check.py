"""`pdl-grade check [ASSIGNMENT ...]`: grade your own work before you hand it in.

Run it in your course folder (the one holding hw3/, practical4/, ...), or name the folder with
--submission. It grades the assignments whose folders are there (or the ones named) with the
same checks, the same rubrics and the same stages as the course's grading, then prints the
points per task, each failed check once (what was expected, what was observed, where to look;
checks that failed for one reason are one entry), and the written answers the course staff
grade by hand.

Nothing is written into your folder; --out DIR keeps the full report there (report.html with
the plots, report.md, result.json). Exit status: 0 when every automatic point is earned, 1
otherwise, 2 when the folder or an assignment's name is wrong.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from grader.checks.support import HIDE_ANSWERS_ENV
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S


def add_parsers(sub) -> None:
    check = sub.add_parser("check", help="grade your own work locally and say what to fix",
                           description=__doc__)
    check.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                       help="e.g. hw3 practical4; default: every assignment whose folder is there")
    check.add_argument("--submission", default=".", metavar="DIR",
                       help="your course folder (default: the current folder), or the .zip you "
                            "will hand in")
    check.add_argument("--out", default=None, metavar="DIR",
                       help="keep result.json, report.md and report.html here (default: none kept)")
    check.add_argument("--check-timeout", type=float, default=DEFAULT_CHECK_TIMEOUT_S,
                       help="seconds one run of your code may take before it counts as hung")
    check.set_defaults(handler=run)


def run(options) -> int:
    from grader.scoring import assignment_ids
    submission = Path(options.submission).resolve()
    known = assignment_ids()
    with tempfile.TemporaryDirectory(prefix="pdl-check-upload-") as unpacked:
        if submission.is_file() and submission.suffix.lower() == ".zip":
            # The zip a student is about to upload, read as the course's batch reads it.
            submission = _unpacked_as_the_course_does(submission, Path(unpacked))
            if submission is None:
                return 2
        return _check(options, submission, known)


def _unpacked_as_the_course_does(archive: Path, scratch: Path) -> Path | None:
    """The folder holding the assignments in `archive` once unpacked with the batch's limits
    and its search for that folder (a student's audit: the zip to hand in could not be
    checked); None, said, where the batch would not grade it."""
    from grader.batch.inputs import Student, Submission, prepare
    from grader.reports.student_wording import for_the_student
    upload = Submission(Student(key="upload", name=archive.stem), sources=[archive])
    prepared = prepare(upload, scratch / "upload")
    for note in prepared.notes:
        print(f"{archive.name}: {note}")
    if prepared.problem or prepared.root is None:
        print(f"pdl-grade check: {archive.name} would not be graded: "
              f"{for_the_student(prepared.problem or '')}",
              file=sys.stderr)
        return None
    print(f"{archive.name}: unpacked as the course's grading unpacks it; its assignments are "
          f"in {prepared.root.relative_to(scratch / 'upload').as_posix() or '.'}/ there")
    return prepared.root


def _check(options, submission: Path, known: list[str]) -> int:
    from grader.grading import grade_submission
    from grader.grading.readable import UnreadableSubmission
    from grader.reports.formats import STUDENT_FORMATS
    from grader.reports.terminal import earned_every_automatic_point, render_check_text
    if not submission.is_dir():
        print(f"pdl-grade check: {submission} is not a folder (nor a .zip to hand in)",
              file=sys.stderr)
        return 2
    unknown = [a for a in options.assignments if a not in known]
    if unknown:
        print(f"pdl-grade check: no assignment called {', '.join(unknown)}; the assignments "
              f"are {', '.join(known)}", file=sys.stderr)
        return 2
    chosen = list(options.assignments) or [a for a in known if (submission / a).is_dir()]
    if not chosen:
        print(f"pdl-grade check: {submission} holds none of the assignment folders "
              f"({', '.join(a + '/' for a in known)}): run this in your course folder, or pass "
              "--submission DIR", file=sys.stderr)
        return 2
    print(f"Grading {', '.join(chosen)} in {submission}: every check runs your code, so this "
          "takes a while (about 5 to 20 s per assignment on a 2-core laptop, longer where your "
          "code is slow) ...", flush=True)
    # Before the work is handed in: an answer the code contradicts is said to be wrong, not
    # what the code does (grader/checks/support.py), in this process's reports too.
    before = os.environ.get(HIDE_ANSWERS_ENV)
    os.environ[HIDE_ANSWERS_ENV] = "1"
    try:
        with tempfile.TemporaryDirectory(prefix="pdl-check-") as scratch:
            # Only the student's formats: the staff's view (instructor.md) is never written here.
            result = grade_submission(submission, Path(options.out or scratch), chosen,
                                      check_timeout=options.check_timeout,
                                      formats=STUDENT_FORMATS)
        print()
        print(render_check_text(result), end="")
    except UnreadableSubmission as problem:   # files closed to the checks: no verdict on them
        print(f"pdl-grade check: {problem}", file=sys.stderr)
        return 2
    finally:
        if before is None:
            os.environ.pop(HIDE_ANSWERS_ENV, None)
        else:
            os.environ[HIDE_ANSWERS_ENV] = before
    if options.out:
        print(f"\nFull report: {Path(options.out).resolve() / 'report.html'}")
    return 0 if earned_every_automatic_point(result) else 1
