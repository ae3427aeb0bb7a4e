"""DIR/grades.csv: one row per person, sorted by their first student key: the course's record.

Columns: `Identifier` ("Participant <id>" from Moodle's download, else the folder/zip name),
`Full name`, one column per assignment, `Total`, `Status`, `Key` (the student's folder under
submissions/, what a batch's overrides file is keyed by), and `Email address` when a Moodle
worksheet gave some (last: the columns before it keep their places). A person's uploads of
several Moodle assignments (each download numbers its participants anew) are one row
(grader/batch/people.py): their identifiers and keys are listed there, each assignment's in
the course's order, separated by "; ".
Assignment cells and the total are the final points, after any late penalty. When some run
has a submission time or a late penalty, two columns come before `Total`: `Submitted at`
(ISO 8601, empty when unknown) and `Late penalty` (the points taken, as a negative number;
0 when on time, empty when there is no deadline or the time is unknown). Where the CSV has
more than one assignment column, each assignment that has a time or a penalty gets its own
pair instead, `hw3 submitted at` and `hw3 late penalty`: a row holds uploads of several
assignments, each with its own time, and one shared cell had shown whichever came first (audit
F3). One assignment keeps the two plain columns, the layout imports already read.

A timed-out or errored grading leaves the cells empty, not 0: Moodle skips empty cells, so a
grading problem is never imported as a zero. So does an assignment the grader itself failed to
grade within a finished grading (a check that did not run or errored: its `grading_problems`,
grader/scoring/score.py); the Status says "grading problem in <assignment>: <the first>; run the
batch again", the next batch grades it again, and the upload's other assignments keep theirs. A rejected upload (bad archive) is a 0; an upload
in which nothing the assignments expect was found ("needs a person") leaves them empty too,
and so does an assignment with answers the grader found but could not read (a scanned report):
its points wait for a person, the Status says how many (CurrentRun.unread). A grade whose
written answers still wait is the points so far: its Status says "provisional: hw3 (4.5 points
wait for a person)", as its Moodle row does.
A total is given only where every upload of the person has a grade.

Text cells come from uploads (names, messages): one that a spreadsheet would read as a formula
(starting with =, +, -, @, a tab or a carriage return: OWASP's CSV-injection list) is written
with a leading apostrophe, which spreadsheets show as text; their control characters (a name's
newline or terminal escapes) are escaped (`\\n`, `\\x1b`: grader/batch/printable.py). Numbers
are ours and stay numbers.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Sequence

from grader.batch.gradebook import CurrentRun, grading_problem_text, no_grade_until
from grader.batch.people import people
from grader.batch.printable import printable
from grader.common.files import write_atomically
from grader.reports.formatting import format_points

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(text: str) -> str:
    """A text cell no spreadsheet evaluates."""
    text = str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def upload_cell(text: str) -> str:
    """A text cell from uploads (a name, a status quoting one): inert, its control characters
    escaped (a name's newline had made a cell of two lines; a gradebook from before the batch
    escaped them may hold them raw)."""
    return inert_cell(printable(str(text)))


def late_penalty(result: dict | None, assignment: str | None = None) -> float | None:
    """The points a run's late penalties took (negative), 0 when it was on time, None when no
    assignment had both a due date and a submission time. `assignment`: that one's only."""
    assignments = [a for a in (result or {}).get("assignments") or []
                   if assignment is None or a.get("id") == assignment]
    if not any(a.get("late") for a in assignments):
        return None
    return sum(item.get("score", 0.0) for a in assignments for item in a.get("items") or []
               if item.get("kind") == "penalty")


# A status longer than this is cut where a sentence ends, and says where the rest is.
STATUS_MESSAGE_CHARS = 400
NAME_KEPT_APART = "another upload of this name was kept apart from it (index.html says why)"


def short_message(text: str, limit: int = STATUS_MESSAGE_CHARS) -> str:
    """A message for one cell: whole, or cut at the end of a sentence or clause (a status cut
    mid-word had ended "...(or keep one and")."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("; "), cut.rfind(": "), cut.rfind(", "))
    if end < limit // 2:
        end = cut.rfind(" ")
    return cut[:max(end, 1)].rstrip(" .,:;") + " [...] (in full on index.html)"


def _graded(run: CurrentRun) -> bool:
    return run.status == "graded" or (run.status == "rejected" and not run.needs_person)


def assignment_cell(runs: Iterable[CurrentRun], assignment: str) -> str:
    """A person's points for `assignment` as every class export writes them: empty where it
    has no grade (needs a person, timed out, errored, held for review, a grading problem,
    answers waiting to be read, no upload)."""
    run = next((r for r in runs if assignment in r.assignment_scores), None)
    return (format_points(run.assignment_scores[assignment])
            if run is not None and _graded(run) and assignment not in run.without_grade else "")


def run_status(run: CurrentRun) -> str:
    status = "needs a person" if run.needs_person else run.status.replace("_", " ")
    if run.held:
        status += f", held for review: {', '.join(run.held)}"
    for assignment, problem in run.grading_problems.items():
        status += f", {grading_problem_text(assignment, short_message(problem, 200))}"
    for assignment, points in run.unread.items():
        status += f", {no_grade_until(run.result, assignment, points)}"
    for assignment, points in provisional(run).items():
        status += (f", provisional: {assignment} ({format_points(points)} points wait for a "
                   "person)")
    if run.message and run.status != "graded":
        status += ": " + short_message(run.message)
    return status


def provisional(run: CurrentRun) -> dict[str, float]:
    """{assignment: points} of a graded assignment whose written answers wait for a person: its
    grade is the points so far, not final, as its Moodle row says ("provisional: 4.5 points
    wait"); grades.csv had said only "graded" (adv39 M2). Held, unread and grading problems say
    their own."""
    if run.status != "graded":
        return {}
    found = {}
    for assignment in (run.result or {}).get("assignments") or []:
        ident, waiting = str(assignment.get("id")), float(assignment.get("pending_points") or 0)
        if waiting > 0 and ident not in run.without_grade:
            found[ident] = waiting
    return found


def grades_rows(runs: Iterable[CurrentRun], order: Sequence[str] = ()) -> list[list[str]]:
    """`order`: the course's assignments (rubrics' order); others present follow by id."""
    runs = sorted(runs, key=lambda r: r.student.key)
    present = {a for run in runs for a in run.assignment_scores}
    columns = [a for a in order if a in present] + sorted(present - set(order))
    persons, _ = people(runs, [*order, *columns])
    # (assignments each pair of time columns is of, header of the pair): one pair for the
    # whole row where the CSV has one assignment, else a pair per assignment timed.
    timing = _timing_columns(runs, columns)
    late_columns = [name for _, pair in timing for name in pair]
    emails = any(person.email for person in persons)
    rows = [["Identifier", "Full name", *columns, *late_columns, "Total", "Status", "Key",
             *(["Email address"] if emails else [])]]
    for person in persons:
        cells = []
        for a in columns:
            cells.append(assignment_cell(person.runs, a))
        for assignments, _ in timing:
            cells += _time_cells(person.runs, assignments)
        whole = all(_graded(r) and not r.without_grade for r in person.runs)
        total = format_points(sum(v for r in person.runs for v in r.assignment_scores.values())) \
            if whole else ""
        statuses = [run_status(r) for r in person.runs]
        if len(set(statuses)) == 1:
            status = statuses[0]
        else:   # which upload each status is of
            status = "; ".join(f"{', '.join(r.assignments or r.assignment_scores) or r.student.key}"
                               f": {text}" for r, text in zip(person.runs, statuses))
        if person.flag:
            status += f"; {NAME_KEPT_APART}"
        identifiers = "; ".join(r.student.identifier for r in person.runs)
        rows.append([upload_cell(identifiers), upload_cell(person.name), *cells, total,
                     upload_cell(status), upload_cell("; ".join(person.keys)),
                     *([upload_cell(person.email or "")] if emails else [])])
    return rows


def _runs_of(runs: Iterable[CurrentRun], assignment: str) -> list[CurrentRun]:
    return [r for r in runs if assignment in r.assignment_scores or assignment in r.assignments]


def _penalty(run: CurrentRun, assignment: str | None) -> float | None:
    return late_penalty(run.result, assignment) if run.status == "graded" else None


def _timing_columns(runs: list[CurrentRun], columns: list[str]
                    ) -> list[tuple[tuple[str, ...] | None, tuple[str, str]]]:
    """The time columns' pairs: none where no run has a time or a penalty; ("Submitted at",
    "Late penalty") for the whole row where there is one assignment column (Moodle's import
    and earlier grades.csv readers know it); else a pair per assignment that has either."""
    if len(columns) <= 1:
        timed = any(r.submitted_at or _penalty(r, None) is not None for r in runs)
        return [(None, ("Submitted at", "Late penalty"))] if timed else []
    return [((a,), (f"{a} submitted at", f"{a} late penalty")) for a in columns
            if any(r.submitted_at or _penalty(r, a) is not None for r in _runs_of(runs, a))]


def _time_cells(runs: list[CurrentRun], assignments: tuple[str, ...] | None) -> list[str]:
    """The submission time(s) and the late penalty of a person's uploads of `assignments`
    (None: all of them)."""
    if assignments is not None:
        runs = [r for a in assignments for r in _runs_of(runs, a)]
    assignment = assignments[0] if assignments else None
    times = list(dict.fromkeys(r.submitted_at for r in runs if r.submitted_at))
    taken = [p for p in (_penalty(r, assignment) for r in runs) if p is not None]
    return ["; ".join(times), format_points(sum(taken)) if taken else ""]


def write_grades_csv(path: Path, runs: Iterable[CurrentRun], order: Sequence[str] = ()) -> Path:
    """Write atomically: a killed batch never leaves half a CSV."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(grades_rows(runs, order))
    return write_atomically(path, buffer.getvalue(), newline="")
