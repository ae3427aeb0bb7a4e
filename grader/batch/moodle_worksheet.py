"""Moodle's offline grading worksheet, per assignment: DIR/moodle/<assignment>.csv.

Moodle's assignment page takes grades back through "Upload grading worksheet" (the
assignment's feedback type "Offline grading worksheet" must be on). Its importer
(mod/assign/feedback/offline/importgradeslib.php) finds its columns by their names in the
language the uploader uses Moodle in (English below), and needs three of them:
`Identifier` ("Participant N": N is the participant id of Moodle's download, which the batch
reads from the submission folders' names), `Grade` (points; an empty cell is skipped) and
`Last modified (grade)` (a grade changed in Moodle after this time is not overwritten unless
"Allow updating records that have been modified more recently in Moodle" is ticked). Feedback
goes in `Feedback comments` (when the assignment's "Feedback comments" are on; never the first
column: the importer ignores a feedback column at index 0).

Two ways, for each graded assignment:
- written from scratch with Moodle's own header (MOODLE_HEADER), one row per student whose
  upload came from Moodle's download (`Participant N`); the others cannot be matched by Moodle
  and are named on the console;
- or, given the worksheet downloaded from Moodle (`--moodle-worksheet [ASSIGNMENT=]FILE`),
  that file with its columns and rows kept and `Grade` and `Feedback comments` filled for the
  participants graded here (written to DIR/moodle/<assignment>-worksheet.csv; the downloaded
  file is never changed).

A grade is written only for a submission that was graded or rejected (a bad archive is a 0);
timed out, errored and "needs a person" leave the cell as it was, so Moodle skips them, and so
do held ones and those with answers the grader found but could not read (a scanned report:
points no one has decided yet). Such an unread row still gets its comment, which Moodle imports
without a grade, saying how many points wait; a grade while written answers wait is the
provisional one README's flow uploads again after the overrides, and its Status and comment say
so, never to be read as final. The comment is a short summary and where the full report is
(none for a row without a grade: its report goes with the grade); it is plain text, HTML-escaped
(Moodle stores feedback comments as HTML). Cells of our own that came from an upload (the
full name) are made inert like grades.csv's. The full reports go to the students as feedback
files: DIR/moodle/<assignment>-feedback-files.zip, for "Upload multiple feedback files in a
zip" (write_feedback_files).
"""
from __future__ import annotations

import csv
import datetime as dt
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from grader.batch.gradebook import CurrentRun
from grader.batch.grades_csv import upload_cell
from grader.batch.printable import middle_shortened
from grader.common.files import write_atomically
from grader.reports.formatting import format_points
from grader.reports.pending import by_hand_points, waiting_to_be_read

# The header of Moodle's own download (English), in its order.
MOODLE_HEADER = ("Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                 "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
                 "Feedback comments")
# What the importer requires: get_string('recordid', 'assign'), get_string('grade'),
# get_string('lastmodifiedgrade', 'assign').
REQUIRED = ("Identifier", "Grade", "Last modified (grade)")
# get_string('pluginname', 'assignfeedback_comments'): the comments plugin's editor field.
FEEDBACK = "Feedback comments"
MAX_COMMENT_CHARS = 600
_PARTICIPANT = re.compile(r"(\d+)\s*$")      # "Participant 123456" (the word is translated)


class WorksheetError(ValueError):
    """A downloaded worksheet that cannot be filled (the message says why)."""


@dataclass
class Worksheet:
    """A worksheet downloaded from Moodle: its header and rows as read, kept as they are."""
    source: Path
    header: list[str]
    rows: list[list[str]]
    bom: bool = False

    def column(self, name: str) -> int | None:
        return self.header.index(name) if name in self.header else None


def read_worksheet(path: Path | str) -> Worksheet:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise WorksheetError(f"{path}: cannot be read ({error.strerror or error})") from None
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise WorksheetError(f"{path}: not UTF-8 text; download it again from Moodle "
                             "(Upload grading worksheet reads UTF-8)") from None
    table = list(csv.reader(io.StringIO(text, newline="")))
    if not table:
        raise WorksheetError(f"{path}: empty")
    sheet = Worksheet(path, table[0], table[1:], bom)
    missing = [name for name in REQUIRED if sheet.column(name) is None]
    if missing:
        raise WorksheetError(
            f"{path}: no column {', '.join(repr(m) for m in missing)}: not Moodle's grading "
            "worksheet, or downloaded with Moodle in another language (Moodle names the columns "
            "in your language and reads them back the same way: switch it to English, download "
            "the worksheet again)")
    return sheet


EMAIL = "Email address"


def worksheet_emails(sheet: Worksheet) -> dict[str, str]:
    """{participant id: email} of a downloaded worksheet (who each participant is across
    assignments: grader/batch/people.py)."""
    identifier_at, email_at = sheet.column("Identifier"), sheet.column(EMAIL)
    if email_at is None:
        return {}
    found = {}
    for row in sheet.rows:
        if max(identifier_at, email_at) < len(row) and "@" in row[email_at]:
            pid = participant_id(row[identifier_at])
            if pid is not None:
                found[pid] = row[email_at].strip()
    return found


def participant_id(identifier: str) -> str | None:
    match = _PARTICIPANT.search(identifier or "")
    return match.group(1) if match else None


def _graded(run: CurrentRun) -> bool:
    return run.status == "graded" or (run.status == "rejected" and not run.needs_person)


def _assignment_result(run: CurrentRun, assignment: str) -> dict | None:
    for found in (run.result or {}).get("assignments") or []:
        if found.get("id") == assignment:
            return found
    return None


def grade_cell(run: CurrentRun, assignment: str) -> str | None:
    """The points to upload, or None: leave Moodle's cell as it is."""
    if not _graded(run) or assignment not in run.assignment_scores \
            or assignment in run.without_grade:   # held, a grading problem, answers unread
        return None
    return format_points(run.assignment_scores[assignment])


def awaits_reading(run: CurrentRun, assignment: str) -> bool:
    """No grade yet because a person must read answers the grader could not: the row still
    says so (its comment, its Status)."""
    return _graded(run) and assignment in run.unread


def waiting_said(run: CurrentRun, assignment: str, who: str = "a person") -> str | None:
    """What the row's Status adds: "no grade yet: 13 points wait for a person" (answers to
    read), "provisional: 4.5 points wait for a person" (written answers), None (nothing
    waits)."""
    found = _assignment_result(run, assignment) or {}
    waiting = float(found.get("pending_points") or 0)
    if run.status != "graded" or waiting <= 0 or assignment in run.held \
            or assignment in run.grading_problems:
        return None
    state = "no grade yet" if awaits_reading(run, assignment) else "provisional"
    return f"{state}: {format_points(waiting)} points wait for {who}"


def comment(run: CurrentRun, assignment: str, report_location: str) -> str:
    """A short summary of the grading and where the full report is (plain text, escaped)."""
    found = _assignment_result(run, assignment) or {}
    parts = []
    if run.status == "rejected":
        # Nothing was graded: no items to list, no report to point to.
        reason = " ".join((run.message or "the upload could not be read").split())
        frame = (f"{assignment}: {format_points(found.get('score', 0))} of "
                 f"{format_points(found.get('max_score', 0))} points: the upload could not be "
                 "graded ({}). Hand it in again, or ask the course staff.")
        reason = middle_shortened(reason.rstrip("."), MAX_COMMENT_CHARS - len(frame) + 2)
        return html.escape(frame.format(reason), quote=False)
    unread = awaits_reading(run, assignment)
    if _graded(run) and found:
        score, most = format_points(found.get("score", 0)), format_points(found.get("max_score", 0))
        waiting = format_points(found.get("pending_points") or 0)
        if unread:
            parts.append(f"{assignment}: no grade yet, {waiting} of {most} points wait for the "
                         f"staff; {score} points so far.")
        elif waiting_said(run, assignment):
            parts.append(f"{assignment}: {score} of {most} points so far, provisional: {waiting} "
                         "points wait for the staff.")
        else:
            parts.append(f"{assignment}: {score} of {most} points.")
        # Points waiting for a person to read an answer are not lost (grader/scoring/score.py).
        lost = [item for item in found.get("items") or []
                if item.get("kind") == "auto" and item.get("score", 0)
                + (item.get("pending_points") or 0) < item.get("max_score", 0)]
        if lost:
            parts.append("Points lost in: " + ", ".join(
                f"{item.get('title') or item.get('id')} ({format_points(item.get('score', 0))}/"
                f"{format_points(item.get('max_score', 0))})" for item in lost[:4])
                + (f" and {len(lost) - 4} more" if len(lost) > 4 else "") + ".")
        penalty = sum(item.get("score", 0) for item in found.get("items") or []
                      if item.get("kind") == "penalty")
        if penalty:
            parts.append(f"Late penalty: {format_points(penalty)} points.")
        # Still pending: an instructor's override of a written answer scores it.
        pending = [i for i in found.get("items") or [] if i.get("kind") == "manual"
                   and i.get("pending") and i.get("max_score", 0) > 0]
        if pending:
            parts.append(f"{len(pending)} written answer(s) are still to be graded by the staff.")
        to_read = [i for i in waiting_to_be_read(found) if not by_hand_points(i)]
        if to_read:
            parts.append(f"{len(to_read)} answer(s) the grader could not read wait for the staff "
                         f"({format_points(sum(i['pending_points'] for i in to_read))} point(s)).")
        by_hand = [i for i in waiting_to_be_read(found) if by_hand_points(i)]
        if by_hand:
            parts.append(f"{len(by_hand)} task(s) the grader could not run on your code, which itself "
                         f"runs, wait for the staff to grade them by hand "
                         f"({format_points(sum(i['pending_points'] for i in by_hand))} point(s)).")
        if (found.get("integrity") or {}).get("withheld"):
            parts.append("Automatic points are held until the staff have reviewed the code.")
    parts.append("The full report comes with the grade." if unread
                 else f"Full report: {report_location}")
    text = " ".join(parts)
    if len(text) > MAX_COMMENT_CHARS:
        text = text[:MAX_COMMENT_CHARS - 1] + "…"
    return html.escape(text, quote=False)


def _now() -> str:
    # ISO 8601 with its offset: PHP's strtotime reads it whatever the server's time zone.
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def shared_participants(runs: Iterable[CurrentRun]) -> dict[str, list[str]]:
    """Participant ids that more than one graded upload claims, with their keys. Moodle gives
    each student one id, so this is never honest work alone: neither grade goes into a row
    of that id, and a person decides whose it is."""
    keys: dict[str, list[str]] = {}
    for run in runs:
        if run.student.participant_id is not None:
            keys.setdefault(run.student.participant_id, []).append(run.student.key)
    return {pid: sorted(found) for pid, found in keys.items() if len(found) > 1}


def worksheet_rows(runs: Iterable[CurrentRun], assignment: str, max_points: float,
                   report_location, written_at: str | None = None) -> tuple[list[list[str]], list[str]]:
    """(rows with MOODLE_HEADER first, keys of students Moodle cannot match); students whose
    participant id another upload claims too get no row."""
    runs = list(runs)
    written_at = written_at or _now()
    rows = [list(MOODLE_HEADER)]
    unmatched = []
    shared = shared_participants(runs)
    for run in sorted(runs, key=lambda r: r.student.key):
        if run.student.participant_id in shared:
            continue   # said once, by write_moodle_worksheets
        if run.assignments and assignment not in run.assignments:
            # Another assignment's download (its participant ids are that assignment's): a row
            # here had named a participant this assignment does not have.
            continue
        if run.student.participant_id is None:
            unmatched.append(run.student.key)
            continue
        grade = grade_cell(run, assignment)
        commented = grade is not None or awaits_reading(run, assignment)
        waiting = waiting_said(run, assignment)
        rows.append([f"Participant {run.student.participant_id}", upload_cell(run.student.name), "",
                     "Submitted for grading" + (f"; {waiting}" if waiting else ""), grade or "",
                     format_points(max_points), "Yes",
                     run.submitted_at or "", written_at if commented else "",
                     comment(run, assignment, report_location(run.student.key))
                     if commented else ""])
    return rows, unmatched


def fill_worksheet(sheet: Worksheet, runs: Iterable[CurrentRun], assignment: str,
                   report_location) -> tuple[list[list[str]], list[str], int]:
    """(the sheet's rows, header first, with Grade and Feedback comments filled; keys of graded
    students not in the sheet; how many rows were filled)."""
    runs = list(runs)
    shared = shared_participants(runs)
    by_participant = {run.student.participant_id: run for run in runs
                      if run.student.participant_id is not None and run.student.participant_id not in shared}
    grade_at, identifier_at = sheet.column("Grade"), sheet.column("Identifier")
    feedback_at = sheet.column(FEEDBACK)
    rows = [list(sheet.header)]
    seen, filled = set(), 0
    for original in sheet.rows:
        row = list(original) + [""] * (len(sheet.header) - len(original))
        pid = participant_id(row[identifier_at])
        run = by_participant.get(pid)
        if run is not None:
            seen.add(pid)
            grade = grade_cell(run, assignment)
            if grade is not None or awaits_reading(run, assignment):
                # No grade while answers wait to be read: the cell stays as Moodle has it, and
                # the comment (imported without a grade) says what waits.
                if grade is not None:
                    row[grade_at] = grade
                if feedback_at:     # never index 0: the importer would ignore it there
                    row[feedback_at] = comment(run, assignment, report_location(run.student.key))
                filled += 1
        rows.append(row)
    missing = sorted(run.student.key for pid, run in by_participant.items()
                     if pid not in seen and grade_cell(run, assignment) is not None)
    return rows, missing, filled


def _csv(rows: list[list[str]], bom: bool = False) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return ("\ufeff" if bom else "") + buffer.getvalue()


def write_moodle_worksheets(out: Path, runs: list[CurrentRun], rubrics: Mapping, assignments,
                            downloaded: Mapping[str, Worksheet] | None = None) -> list[str]:
    """DIR/moodle/<assignment>.csv for each assignment (and <assignment>-worksheet.csv filled
    from a downloaded worksheet); returns notes for the console."""
    notes = []
    folder = out / "moodle"

    def report_location(key: str) -> str:
        # The student's copy is among the assignment's feedback files once the staff upload
        # <assignment>-feedback-files.zip: never a path of this machine.
        return "report.html, among this assignment's feedback files"

    for pid, keys in shared_participants(runs).items():
        notes.append(f"Participant {pid} is claimed by {len(keys)} uploads ({', '.join(keys)}): "
                     "no grade of that id was written to moodle/; a person must decide whose it is")
    for assignment in assignments:
        rubric = rubrics[assignment]
        rows, unmatched = worksheet_rows(runs, assignment, rubric.total_points, report_location)
        if len(rows) > 1:     # a class not from Moodle's download gets no worksheet, no note
            write_atomically(folder / f"{assignment}.csv", _csv(rows), newline="")
        else:   # none left to write: an older file's grades are not this batch's
            (folder / f"{assignment}.csv").unlink(missing_ok=True)
        if unmatched and len(rows) > 1:
            notes.append(f"moodle/{assignment}.csv: {len(unmatched)} student(s) not from a Moodle "
                         f"download (no participant id), left out: {', '.join(unmatched[:8])}"
                         + (" ..." if len(unmatched) > 8 else ""))
        files = write_feedback_files(folder / f"{assignment}-feedback-files.zip", out, runs,
                                     assignment)
        if files:
            notes.append(f"moodle/{assignment}-feedback-files.zip: report.html of {files} "
                         "student(s), for Moodle's 'Upload multiple feedback files in a zip'")
        sheet = (downloaded or {}).get(assignment)
        if sheet is not None:
            filled_rows, missing, filled = fill_worksheet(sheet, runs, assignment, report_location)
            target = folder / f"{assignment}-worksheet.csv"
            write_atomically(target, _csv(filled_rows, sheet.bom), newline="")
            notes.append(f"{target.relative_to(out)}: {filled} of {len(sheet.rows)} rows of "
                         f"{sheet.source.name} filled")
            if sheet.column(FEEDBACK) is None:
                notes.append(f"{sheet.source.name} has no '{FEEDBACK}' column (the assignment's "
                             "feedback comments are off): grades only")
            if missing:
                notes.append(f"{sheet.source.name}: no row for {len(missing)} graded student(s): "
                             f"{', '.join(missing[:8])}" + (" ..." if len(missing) > 8 else ""))
    return notes


# Moodle's feedback-file importer (mod/assign/feedback/file/importziplib.php) takes a folder
# named FULLNAME_PARTICIPANTID_PLUGINTYPE_PLUGINNAME_ (the trailing underscore as Moodle's own
# downloads before 4.1 name it: those versions split the path at underscores into five parts
# and skip a name of four; 4.1 and later take both): a full name may hold no underscore; the
# files inside become that participant's feedback files.
FEEDBACK_FOLDER = "{name}_{participant}_assignfeedback_file_"
_FOLDER_NAME_UNSAFE = re.compile(r"[_/\\\x00-\x1f\x7f]+")


def write_feedback_files(target: Path, out: Path, runs: Iterable[CurrentRun],
                         assignment: str) -> int:
    """DIR/moodle/<assignment>-feedback-files.zip: each graded participant's report.html in a
    folder Moodle matches to them; returns how many (no zip, and an older one removed, when
    none)."""
    import zipfile
    shared = shared_participants(runs)
    entries = []
    for run in sorted(runs, key=lambda r: r.student.key):
        pid = run.student.participant_id
        report = out / "submissions" / run.student.key / "report.html"
        if pid is None or pid in shared or grade_cell(run, assignment) is None \
                or not report.is_file():
            continue
        name = " ".join(_FOLDER_NAME_UNSAFE.sub(" ", run.student.name).split()) or "Participant"
        entries.append((f"{FEEDBACK_FOLDER.format(name=name, participant=pid)}/report.html",
                        report.read_bytes()))
    if not entries:
        target.unlink(missing_ok=True)
        return 0
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in entries:
            archive.writestr(member, data)
    write_atomically(target, buffer.getvalue())
    return len(entries)
