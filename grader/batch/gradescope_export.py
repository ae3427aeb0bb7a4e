"""DIR/gradescope/<assignment>.csv: the class's grades of one assignment, for Gradescope's
"Import grades" (an assignment's grades uploaded from a CSV, each row matched to a student
of the course roster by Email or SID, the scores taken from the columns mapped to the
assignment's questions or its total).

Columns: `Name`, `Email`, `Total Score` (the names of Gradescope's own grade export): the
assignment's points exactly as grades.csv's column has them (after any late penalty). A
student with no grade (needs a person, timed out, errored, held for review, an assignment the
grader failed to grade: its grading problems) has an empty
`Total Score`, never 0: an import must not turn "not graded yet" into a grade. A rejected
upload is a 0, as in grades.csv and Moodle.

Gradescope matches rows by email (or student id); the batch knows a student's email from the
Moodle worksheet given with --moodle-worksheet (kept in the gradebook: grader/batch/people.py).
Moodle's "Participant N" is a number of one Moodle download, not the student id Gradescope's
roster holds, so it is not written as one. Students without an email are left out, named on
the console; where none of an assignment's students has one, no file is written, and the
console says why in one line.

Text cells come from uploads or worksheets: made inert as in grades.csv.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Sequence

from grader.batch.gradebook import CurrentRun
from grader.batch.grades_csv import assignment_cell, upload_cell
from grader.batch.people import people
from grader.common.files import write_atomically

FOLDER = "gradescope"
HEADER = ("Name", "Email", "Total Score")
# Names listed in a console line before "and N more".
SHOWN = 5


def _of(run: CurrentRun, assignment: str) -> bool:
    return assignment in run.assignment_scores or assignment in run.assignments


def gradescope_rows(runs: Iterable[CurrentRun], assignment: str,
                    order: Sequence[str] = ()) -> tuple[list[list[str]], list[str]]:
    """(the CSV's rows, header first; the keys of the assignment's students left out for
    want of an email)."""
    persons, _ = people(runs, order)
    rows, left_out = [list(HEADER)], []
    for person in persons:
        uploads = [r for r in person.runs if _of(r, assignment)]
        if not uploads:
            continue
        if not person.email:
            left_out += [r.student.key for r in uploads]
            continue
        rows.append([upload_cell(person.name), upload_cell(person.email),
                     assignment_cell(uploads, assignment)])
    return rows, left_out


def write_gradescope_csvs(out: Path, runs: Iterable[CurrentRun],
                          order: Sequence[str] = ()) -> list[str]:
    """Write DIR/gradescope/<assignment>.csv for each assignment of the gradebook whose
    students carry an email; the console's lines about what was written or skipped."""
    runs = list(runs)
    present = {a for r in runs for a in [*r.assignment_scores, *r.assignments]}
    assignments = [a for a in order if a in present] + sorted(present - set(order))
    lines, skipped = [], []
    for assignment in assignments:
        rows, left_out = gradescope_rows(runs, assignment, order)
        target = out / FOLDER / f"{assignment}.csv"
        if len(rows) == 1:
            skipped.append(assignment)
            target.unlink(missing_ok=True)   # an older one would no longer be this class's
            continue
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(rows)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, buffer.getvalue(), newline="")
        line = f"{FOLDER}/{assignment}.csv: {len(rows) - 1} student(s) for Gradescope's Import grades"
        if left_out:
            shown = ", ".join(left_out[:SHOWN]) + (f" and {len(left_out) - SHOWN} more"
                                                   if len(left_out) > SHOWN else "")
            line += f"; {len(left_out)} left out, no email known: {shown}"
        lines.append(line)
    if skipped:   # one line, however many assignments: most classes graded give no worksheet
        lines.append(f"{FOLDER}/: no file for {', '.join(skipped)}: no submission of "
                     f"{'it' if len(skipped) == 1 else 'them'} carries an email (Gradescope's "
                     "Import grades matches students by Email or SID; --moodle-worksheet "
                     "gives the emails)")
    return lines
