"""What an instructor hands a batch beside the uploads, read and checked before anything is
graded: the overrides file, Moodle's grading worksheets, the submission times."""
from __future__ import annotations

import difflib
from pathlib import Path

from grader.batch import submission_times
from grader.batch.errors import BatchError
from grader.batch.inputs import Submission
from grader.batch.moodle_worksheet import Worksheet, WorksheetError, read_worksheet
from grader.batch.progress import Progress
from grader.batch.submission_times import SubmissionTimes, SubmissionTimesError, TimesFiles
from grader.scoring import check_overrides


def check_overrides_file(student_overrides: dict[str, dict], found: list[Submission],
                         rubrics: dict, graded_by: dict[str, tuple[str, ...]],
                         progress: Progress, known: list[str] = ()) -> list[str]:
    """Every problem of the overrides file, said once, before anything is graded (the same
    problems are kept in each student's result.json and listed on the class page); returns
    the keys that name no submission (the class page lists them too). A key of the gradebook
    that is not in this folder (another assignment's Moodle download graded into the same
    gradebook, with the class's one overrides file) is no typo: its batch applies it."""
    keys = {s.student.key for s in found}
    elsewhere = set(known) - keys
    unmatched = sorted(set(student_overrides) - keys - elsewhere)
    for key in unmatched:
        near = difflib.get_close_matches(key, sorted(keys | elsewhere), n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(k) for k in near)}?" if near else ""
        progress.warn(f"overrides for '{key}' ignored: no such submission (a student's key is "
                      f"their folder's name under submissions/, grades.csv's Key column{hint})")
    for key in sorted(set(student_overrides) & keys):
        for problem in check_overrides(student_overrides[key], rubrics, graded_by[key]).problems:
            progress.warn(f"{key}: {problem}")
    return unmatched


def read_worksheets(given) -> list[tuple[str | None, Worksheet]]:
    """The downloaded worksheets, read and checked before anything is graded."""
    try:
        return [(assignment, read_worksheet(path)) for assignment, path in given]
    except WorksheetError as problem:
        raise BatchError(str(problem)) from None


def worksheets_by_assignment(sheets: list[tuple[str | None, Worksheet]],
                              graded: tuple[str, ...]) -> dict[str, Worksheet]:
    found: dict[str, Worksheet] = {}
    for assignment, sheet in sheets:
        if assignment is None:
            if len(graded) != 1:
                raise BatchError("--moodle-worksheet: this batch grades "
                                 f"{', '.join(graded) or 'nothing'}; say which assignment the "
                                 "worksheet is for: --moodle-worksheet ASSIGNMENT=FILE")
            assignment = graded[0]
        if assignment not in graded:
            raise BatchError(f"--moodle-worksheet {assignment}=...: {assignment} is not graded "
                             f"by this batch ({', '.join(graded) or 'nothing'})")
        found[assignment] = sheet
    return found


def load_times(submissions_dir: Path, given, timezone: str | None) -> TimesFiles | None:
    """The batch's submission times: each --submission-times [ASSIGNMENT=]FILE (`given`: a path,
    or (assignment or None, path) pairs), else the Gradescope export's own
    submission_metadata.yml in SUBMISSIONS, else none."""
    if isinstance(given, (str, Path)):
        given = ((None, given),)
    given = tuple(given or ())
    if len(given) > 1:
        files = []
        for assignment, path in given:
            try:
                files.append((assignment, submission_times.load(path, timezone)))
            except SubmissionTimesError as problem:
                raise BatchError(str(problem)) from None
        return submission_times.TimesFiles(files)
    assignment, path = given[0] if given else (None, None)
    if path is None:
        own = submissions_dir / submission_times.GRADESCOPE_METADATA
        if own.is_file() and not own.is_symlink():
            path = own
        elif timezone is not None:
            raise BatchError("--timezone applies to the times of --submission-times FILE, "
                             "and none was given")
    if path is None:
        return None
    try:
        return submission_times.TimesFiles([(assignment, submission_times.load(path, timezone))])
    except SubmissionTimesError as problem:
        raise BatchError(str(problem)) from None


def note_unmatched(files: TimesFiles, students: list, progress: Progress) -> None:
    for _, times in files.files:
        _note_unmatched_of(times, students, progress)


def _note_unmatched_of(times: SubmissionTimes, students: list, progress: Progress) -> None:
    unmatched = times.unmatched(students)
    if not unmatched:
        return
    timed = sum(e.when is not None for e in times.entries)
    shown = ", ".join(f"{e.label} ({e.where})" for e in unmatched[:5])
    more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
    text = (f"{times.source.name}: {len(unmatched)} of its {timed} submission times match no "
            f"submission in this folder: {shown}{more}")
    # Nothing matching at all is almost certainly the wrong file; a few strays are normal
    # (students whose upload is not in this download).
    if len(unmatched) == timed:
        progress.warn(text)
    else:
        progress.note(text)
