"""DIR/grades.csv: one row per student, sorted by student key, for Moodle's grade import.

Columns: `Identifier` ("Participant <id>" from Moodle's download, else the folder/zip name),
`Full name`, one column per assignment, `Total`, `Status`, `Key` (the student's folder under
submissions/, what a batch's overrides file is keyed by). Moodle's import maps the identifier
column and one grade column per grade item; unmapped columns (Status, Key) are ignored there.
Assignment cells and the total are the final points, after any late penalty. When some run
has a submission time or a late penalty, two columns come before `Total`: `Submitted at`
(ISO 8601, empty when unknown) and `Late penalty` (the points taken, as a negative number;
0 when on time, empty when there is no deadline or the time is unknown).

A timed-out or errored grading leaves the cells empty, not 0: Moodle skips empty cells, so a
grading problem is never imported as a zero. A rejected upload (bad archive) is a 0; an upload
in which nothing the assignments expect was found ("needs a person") leaves them empty too.

Text cells come from uploads (names, messages): one that a spreadsheet would read as a formula
(starting with =, +, -, @, a tab or a carriage return: OWASP's CSV-injection list) is written
with a leading apostrophe, which spreadsheets show as text. Numbers are ours and stay numbers.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Sequence

from grader.batch.gradebook import CurrentRun
from grader.common.files import write_atomically
from grader.reports.formatting import format_points

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(text: str) -> str:
    """A text cell no spreadsheet evaluates."""
    text = str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def late_penalty(result: dict | None) -> float | None:
    """The points a run's late penalties took (negative), 0 when it was on time, None when no
    assignment had both a due date and a submission time."""
    assignments = (result or {}).get("assignments") or []
    if not any(a.get("late") for a in assignments):
        return None
    return sum(item.get("score", 0.0) for a in assignments for item in a.get("items") or []
               if item.get("kind") == "penalty")


def grades_rows(runs: Iterable[CurrentRun], order: Sequence[str] = ()) -> list[list[str]]:
    """`order`: the course's assignments (rubrics' order); others present follow by id."""
    runs = sorted(runs, key=lambda r: r.student.key)
    present = {a for run in runs for a in run.assignment_scores}
    columns = [a for a in order if a in present] + sorted(present - set(order))
    penalties = {run.student.key: late_penalty(run.result) if run.status == "graded" else None
                 for run in runs}
    timed = any(run.submitted_at for run in runs) or any(p is not None for p in penalties.values())
    late_columns = ["Submitted at", "Late penalty"] if timed else []
    rows = [["Identifier", "Full name", *columns, *late_columns, "Total", "Status", "Key"]]
    for run in runs:
        graded = run.status == "graded" or (run.status == "rejected" and not run.needs_person)
        held = run.held
        cells = [format_points(run.assignment_scores[a])
                 if graded and a in run.assignment_scores and a not in held else "" for a in columns]
        if timed:
            penalty = penalties[run.student.key]
            cells += [run.submitted_at or "", "" if penalty is None else format_points(penalty)]
        total = format_points(sum(run.assignment_scores.values())) if graded and not held else ""
        status = "needs a person" if run.needs_person else run.status.replace("_", " ")
        if held:
            status += f", held for review: {', '.join(held)}"
        if run.message and run.status != "graded":
            status += ": " + " ".join(run.message.split())[:200]
        rows.append([inert_cell(run.student.identifier), inert_cell(run.student.name), *cells,
                     total, inert_cell(status), inert_cell(run.student.key)])
    return rows


def write_grades_csv(path: Path, runs: Iterable[CurrentRun], order: Sequence[str] = ()) -> Path:
    """Write atomically: a killed batch never leaves half a CSV."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(grades_rows(runs, order))
    return write_atomically(path, buffer.getvalue(), newline="")
