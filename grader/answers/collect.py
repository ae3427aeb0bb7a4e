"""A submission's answers to one assignment, from its answer sheet and (HW3) its PDF report.

    collect_answers(submission, "hw3", source="pdf_then_sheet") -> Answers

`source` is the rubric's `answers_source`: `sheet` (the default), `pdf`, or
`pdf_then_sheet`: the report's answers win, the sheet fills what the report lacks, and where
the report's answer was read only in part (a table's row or a GPU's memory not read, rows
that contradict each other, a label answered twice) and the sheet's answer is whole, the
sheet's is graded, and a problem says so. Where both are whole and disagree, the report's is
graded (the handout asks for the report; the sheet is the grader's form, and taking the
better of two answers would reward writing two), and a problem names both, so a person sees
a misread report. A written answer that only points to the other file ("See answers.yaml.")
is no answer there: the other file's is read; where both files hold written answers in
different words, the one not graded first is kept in `also`, and the instructor reads both.
Every answer keeps where it came from, and every question answered
nowhere is listed in `missing`, so a check can say "not found in hw3/report.pdf (label
...)" instead of a silent zero. Never raises on bad input.

A report handed in in another format where no report.pdf is (hw3/report.md, report.docx;
the handout asks for "Report (PDF — single file)") is said first, for the student and the
instructor. A text one (Markdown, plain text) is read by the PDF's own rules and graded as
written, the sheet's answers first (the report is not what the handout asks for; the sheet
is the grader's own form), and any penalty for the format is the course's; any other is
named for a person to read, every answer unread.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .hw3_pdf import Hw3PdfReading, describe_where, read_hw3_pdf
from .hw3_pdf import contract as hw3_pdf_contract
from .hw3_pdf.text_report import read_text_report
from .handed_in_names import (MAX_REPORT_CANDIDATES, REPORT_NAME, SHEET_NAME, read_as_sheet, report_pdfs,
                              sheet_file)
from .sheet import read_sheet, template_questions

# What a student hands in instead of the report PDF the handout asks for ("Report (PDF -
# single file)"). Text (Markdown, plain text) is read by the PDF's own rules
# (hw3_pdf/text_report.py) and graded as written, flagged for the instructor (any penalty for
# the format is the course's); an editor's file or a web page is named, for a person to read.
TEXT_REPORTS = (".md", ".markdown", ".txt")
OTHER_REPORTS = (".docx", ".doc", ".odt", ".rtf", ".html", ".htm", ".pages", ".tex")


@dataclass
class Answers:
    assignment: str
    source: str
    values: dict[str, Any] = field(default_factory=dict)
    # id -> where it was read, for people: "hw3/report.pdf, page 2, table 'DEPTH | Step time (ms)'"
    origin: dict[str, str] = field(default_factory=dict)
    # id -> the same as data: {"file", "page", "pages", "kind", "text", "ocr", "rows": {key: {"page", "text"}}}
    where: dict[str, dict] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    # Of `missing`: written in the sheet in words it could not read (a problem says which and
    # why), so a person reads them; the rest were not answered at all.
    unread: list[str] = field(default_factory=list)
    # Of `unread`, where the sheet says why: "your answer '...' could not be read as ...".
    unread_why: dict[str, str] = field(default_factory=dict)
    # Cells of answered tables that stayed words where a number belongs ("about 7-8 ms"), for a
    # person: {id, row, column, text}.
    unread_cells: list[dict] = field(default_factory=list)
    # Of `unread`, what an answer sheet holds as written: id -> {"file", "text"}, shown in
    # instructor.md (a pasted nvidia-smi box had to be looked up in the YAML).
    unread_text: dict[str, dict] = field(default_factory=dict)
    # Of `missing`, answered with words that say the task was not done ("Not done", "N/A",
    # "skipped"), in the report or the answer sheet: id -> {"file", "said", "where"} (a sheet's
    # has no "where": the id is the place). Empty answers, 0, the student told what
    # they wrote (a TA's audit 30: held as "found but could not read" before).
    declined: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)        # [{file, status, ...}]
    # The report handed in in another format instead of the PDF ("hw3/report.md"), or None.
    report_instead: str | None = None
    # id -> {"file", "text"}: a written answer the other file gives in other words than the
    # one in `values` (a person grades it and reads both).
    also: dict[str, dict] = field(default_factory=dict)
    needs_manual_review: bool = False
    questions: dict[str, str] = field(default_factory=dict)  # id -> the question's text

    def to_dict(self) -> dict:
        return asdict(self)

    def where_to_answer(self, qid: str) -> str:
        """Where a student writes this answer, for messages."""
        places = []
        if self.source in ("pdf", "pdf_then_sheet"):
            label = hw3_pdf_contract.template_label(qid)
            places.append(f"{self.assignment}/{REPORT_NAME}" + (f" ('{label}')" if label else ""))
        if self.source in ("sheet", "pdf_then_sheet"):
            places.append(f"{self.assignment}/{SHEET_NAME} ({qid})")
        return " or ".join(places)


def collect_answers(submission: Path, assignment: str, source: str | None = None, *,
                    pdf_time_limit_s: float = 30) -> Answers:
    source = source or "sheet"
    answers = Answers(assignment, source)
    try:
        questions = template_questions(assignment)
    except (OSError, ValueError, KeyError, TypeError) as error:
        answers.problems.append(f"the answer sheet template of {assignment} could not be read: {error}")
        return answers
    answers.questions = {qid: q.text for qid, q in questions.items()}
    folder = Path(submission) / assignment

    unread: set[str] = set()
    unread_why: dict[str, str] = {}
    declined: dict[str, dict] = {}
    pdf_incomplete: dict[str, str] = {}   # id -> why the report's answer is only in part
    pdf_display = f"{assignment}/{REPORT_NAME}"
    pdf: Hw3PdfReading | None = None
    pointers: dict[str, str] = {}   # id -> a written answer that only points to the other file
    if source in ("pdf", "pdf_then_sheet"):
        display = pdf_display
        pdf, named = _report_pdf(folder, assignment, pdf_time_limit_s)
        if named is not None:
            display = pdf_display = f"{assignment}/{named.name}"
        instead = report_instead(folder) if pdf.status == "missing" else None
        if instead is not None:
            answers.files.append({"file": display, "status": "missing"})
            display = pdf_display = f"{assignment}/{instead.name}"
            pdf = _report_instead(instead, display, f"{assignment}/{REPORT_NAME}",
                                  f"{assignment}/{SHEET_NAME}" if source == "pdf_then_sheet" else None)
            answers.report_instead = display
        if pdf.status == "unreadable":
            # Handed in, but not as text the grader reads (a scan, a renamed .docx): what it
            # answers is for a person to read, never "not answered" (a TA's scanned report
            # listed all 17 answers so).
            unread |= set(questions)
        answers.files.append({"file": display, "status": pdf.status, "pages": pdf.pages,
                              "producer": pdf.producer, "ocr": pdf.ocr,
                              **({"instead_of": f"{assignment}/{REPORT_NAME}"} if instead is not None else {}),
                              **({"read_as": f"{assignment}/{REPORT_NAME}"} if named is not None else {})})
        answers.problems += pdf.problems + pdf.notes
        answers.needs_manual_review |= pdf.needs_manual_review and (source == "pdf" or pdf.status != "missing")
        declined = {qid: {"file": display, **said} for qid, said in pdf.declined.items() if qid in questions}
        if pdf.own_structure:
            # Written in a structure of its own: what the report answers is for a person to read
            # in it, never "not answered" (its problem says so, and how to write it).
            unread |= {qid for qid in questions if pdf.answers.get(qid) in (None, "", []) and qid not in declined}
        # Answered in the report in words it could not read: for a person, as a sheet's are.
        unread |= {qid for qid in pdf.unread if qid in questions}
        unread_why.update({qid: why for qid, why in pdf.unread.items() if qid in questions})
        pdf_incomplete = dict(pdf.incomplete)
        for qid, value in pdf.answers.items():
            if source == "pdf_then_sheet" and points_elsewhere(value):
                pointers[qid] = value
                continue
            if qid in questions and value not in (None, "", []):
                answers.values[qid] = value
                where = pdf.where.get(qid)
                answers.origin[qid] = f"{display}, {describe_where(where)}" if where else display
                if where:
                    answers.where[qid] = {"file": display, **where}

    if source in ("sheet", "pdf_then_sheet"):
        path = sheet_file(folder)
        display = f"{assignment}/{path.name}"
        sheet = read_sheet(path, questions, display)
        answers.files.append({"file": display, "status": "ok" if sheet.found and not sheet.problems
                              else "problems" if sheet.found else "missing",
                              **({"read_as": f"{assignment}/{SHEET_NAME}"} if path.name != SHEET_NAME else {})})
        if path.name != SHEET_NAME:
            answers.problems.append(read_as_sheet(display, assignment))
        answers.problems += sheet.problems
        for qid, value in sheet.values.items():
            if pdf is not None and points_elsewhere(value):
                if qid not in answers.values:
                    pointers.setdefault(qid, value)
                continue
            if qid not in answers.values:
                answers.values[qid] = value
                answers.origin[qid] = display
            elif answers.report_instead:
                _sheet_over_report_instead(answers, qid, value, pdf_display, display)
            else:
                _choose(answers, qid, value, pdf_display, pdf_incomplete.get(qid), display)
        answers.unread_cells += [cell for cell in sheet.unread_cells if answers.origin.get(cell["id"]) == display]
        unread |= set(sheet.unread)
        unread_why.update(sheet.unread_why)
        answers.unread_text.update({qid: {"file": display, "text": text}
                                    for qid, text in sheet.unread_text.items()})
        # Said not done in the sheet: the report's saying so first, where it says so too.
        for qid, said in sheet.declined.items():
            declined.setdefault(qid, {"file": display, "said": said})
    for qid, pointer in pointers.items():
        if qid not in answers.values:
            answers.problems.append(f"{qid}: answered only '{_quoted(pointer)}', which points to the other file, "
                                    "and that file has no answer to it")
    if pdf is not None:
        _said_of_the_report(answers, pdf, pdf_display, pdf_incomplete, questions)
    order = list(questions)   # the template's order, as `missing` has it
    answers.unread_cells.sort(key=lambda cell: order.index(cell["id"]) if cell["id"] in order else len(order))

    answers.missing = [qid for qid in questions if qid not in answers.values]
    answers.unread = [qid for qid in answers.missing if qid in unread]
    answers.unread_why = {qid: unread_why[qid] for qid in answers.unread if qid in unread_why}
    answers.unread_text = {qid: answers.unread_text[qid] for qid in answers.unread if qid in answers.unread_text}
    # Said not done in the report or the sheet and answered nowhere else (an answer the other
    # file holds in words it could not read still goes to a person).
    answers.declined = {qid: said for qid, said in declined.items()
                        if qid in answers.missing and qid not in answers.unread}
    # "Not handed in" only when no file is there: a file that is there but unreadable (a scan,
    # a renamed .docx) has its own message, and saying both would contradict it.
    if all(f["status"] == "missing" for f in answers.files):
        names = " or ".join(f["file"] for f in answers.files)
        answers.problems = [p for p in answers.problems if "was not handed in" not in p]
        answers.problems.insert(0, f"no answers handed in: {names} not found")
    return answers


def _report_pdf(folder: Path, assignment: str, time_limit_s: float) -> tuple[Hw3PdfReading, Path | None]:
    """The report PDF's reading, and the file read where it is not named report.pdf (None
    where it is, or where no PDF is there): the handout asks for "Report (PDF — single file)"
    and names no file. Of several PDFs, the one that answers the most questions, and a note
    names the others (the handout asks for one file)."""
    asked = folder / REPORT_NAME
    candidates = report_pdfs(folder)
    if not candidates or candidates[0] == asked:
        return read_hw3_pdf(asked, display_name=f"{assignment}/{REPORT_NAME}", time_limit_s=time_limit_s), None
    read = candidates[:MAX_REPORT_CANDIDATES]
    readings = [read_hw3_pdf(path, display_name=f"{assignment}/{path.name}", time_limit_s=time_limit_s)
                for path in read]
    best = max(range(len(read)), key=lambda i: (_answered(readings[i]), -i))
    chosen, reading = read[best], readings[best]
    shown = f"{assignment}/{chosen.name}"
    note = f"{shown} was read as the report ({assignment}/{REPORT_NAME} in the template; the handout names no file)"
    others = [path.name for path in candidates if path != chosen]
    if others:
        note += (f"; of the {len(candidates)} PDFs in {assignment}/ it answers the most questions, and "
                 f"{', '.join(others)} {'was' if len(others) == 1 else 'were'} not graded (the handout asks "
                 "for a single file; if one of them is the report, a person must read it)")
        reading.needs_manual_review = reading.needs_manual_review or not _answered(reading)
    reading.notes.insert(0, note)
    return reading, chosen


def _answered(reading: Hw3PdfReading) -> int:
    return sum(value not in (None, "", []) for value in reading.answers.values())


def report_instead(folder: Path) -> Path | None:
    """The report handed in in another format where no report.pdf is (report.md, Report.docx,
    hw3_report.txt): a file whose name says report (the template's REPORT_TEMPLATE.md is none)
    in a format of TEXT_REPORTS or OTHER_REPORTS; the one named "report" and a text one first."""
    try:
        found = [path for path in folder.iterdir() if path.is_file() and not path.is_symlink()
                 and path.suffix.lower() in TEXT_REPORTS + OTHER_REPORTS
                 and "report" in path.stem.lower() and "template" not in path.stem.lower()]
    except OSError:
        return None
    found.sort(key=lambda path: (path.stem.lower() != "report", path.suffix.lower() not in TEXT_REPORTS, path.name))
    return found[0] if found else None


def _report_instead(path: Path, display: str, asked: str, sheet: str | None) -> Hw3PdfReading:
    """The reading of a report handed in as `path` where the handout asks for `asked` (a PDF):
    a text report read by the PDF's rules, anything else named for a person; either way said
    first, for the student and the instructor, and the report is for a person to look at."""
    handout = ("the handout asks for the report as a PDF ('Report (PDF — single file)')")
    if path.suffix.lower() in TEXT_REPORTS:
        reading = read_text_report(path, display_name=display)
        if reading.status != "unreadable":
            first = f"{sheet}'s answers first, where it gives them; " if sheet else ""
            reading.problems.insert(0, f"{display} was handed in instead of {asked}: {handout}; it was read as the "
                                       f"PDF would be and graded as written ({first}any penalty for the format is "
                                       "the course's to give)")
        else:
            reading.problems.insert(0, f"{display} was handed in instead of {asked}: {handout}")
    else:
        reading = Hw3PdfReading(missing=hw3_pdf_contract.expected_fields(), problems=[
            f"{display} was handed in instead of {asked}: {handout}, and the grader reads only PDF (and "
            f"Markdown or plain-text) reports, so none of its answers were read: a person must read {display} "
            "(export it as PDF)"], status="unreadable")
    reading.needs_manual_review = True
    return reading


def _said_of_the_report(answers: Answers, pdf: Hw3PdfReading, display: str, in_part: dict[str, str],
                        questions: dict) -> None:
    """What the report did not give whole, said where nothing else says it, so that "read in
    part" always has its reason below it: an answer graded from the report though only in part
    (its table without the row for 5 GPUs), and the labels not found in it whose answers the
    sheet gave. A table's cells there but not read go to a person, as a sheet's do."""
    said = " ".join(answers.problems)
    for qid, why in in_part.items():
        if answers.origin.get(qid, "").startswith(display) and why not in said:
            answers.problems.append(f"{qid}: {display} answers it only in part ({why}); the part read was graded")
    answers.unread_cells += [cell for cell in pdf.unread_cells if answers.origin.get(cell["id"], "").startswith(display)]
    labels = {a.field: a.template_text for a in hw3_pdf_contract.LABELLED_ANSWERS}
    elsewhere = [qid for qid in pdf.missing if qid in questions and qid in answers.values
                 and not answers.origin.get(qid, "").startswith(display)]
    if elsewhere and pdf.status == "partial" and not pdf.own_structure:
        shown = ", ".join(f"'{labels.get(qid) or hw3_pdf_contract.template_label(qid) or qid}'" for qid in elsewhere)
        sheet = answers.origin[elsewhere[0]]
        answers.problems.append(f"not found in {display}, so {sheet}'s answers were graded: {shown}")


def _sheet_over_report_instead(answers: Answers, qid: str, value: Any, report: str, sheet: str) -> None:
    """Where a report handed in in another format (hw3/report.md) and the sheet both answer:
    the sheet's is graded. The PDF's answer wins over the sheet's because the handout asks for
    the PDF; a report in another format is not what it asks for, and the sheet is the grader's
    own form, read exactly: the report fills what the sheet lacks (hw3_s04's sheet was empty).
    Where the two differ, a problem names both; two written answers both go to the instructor."""
    if isinstance(value, str) and isinstance(answers.values[qid], str):
        _both_written(answers, qid, value, report, sheet, graded=sheet)
        return
    if not same_answer(answers.values[qid], value):
        answers.problems.append(f"{qid}: {report} and {sheet} give different answers ({shown(answers.values[qid])} "
                                f"and {shown(value)}); {sheet}'s was graded ({report} is not the PDF the handout "
                                "asks for): check which the student meant")
        answers.needs_manual_review = True
    answers.values[qid] = value
    answers.origin[qid] = sheet
    answers.where.pop(qid, None)


def _choose(answers: Answers, qid: str, value: Any, pdf: str, pdf_in_part: str | None, sheet: str) -> None:
    """Between the report's answer (in `answers`) and the sheet's `value` to the same question:
    the sheet's where the report's was read only in part (`pdf_in_part` says how) and the
    sheet's is whole; else the report's, with a problem where the two disagree."""
    sheet_whole = hw3_pdf_contract.incomplete(qid, value) is None
    if isinstance(value, str) and isinstance(answers.values[qid], str):
        _both_written(answers, qid, value, pdf, sheet, graded=pdf)
    elif pdf_in_part and sheet_whole:
        answers.problems.append(f"{qid}: {pdf} answers it only in part ({pdf_in_part}); the whole answer "
                                f"in {sheet} was graded instead")
        answers.values[qid] = value
        answers.origin[qid] = sheet
        answers.where.pop(qid, None)
    elif not pdf_in_part and sheet_whole and not same_answer(answers.values[qid], value):
        answers.problems.append(f"{qid}: {pdf} and {sheet} give different answers ({shown(answers.values[qid])} "
                                f"and {shown(value)}); the report's was graded (the handout asks for the "
                                "report): check that it was read as written")
        answers.needs_manual_review = True


def _both_written(answers: Answers, qid: str, value: str, kept: str, other: str, *, graded: str) -> None:
    """Two written answers to `qid`: `answers.values[qid]` (read from `kept`) and `value` (from
    `other`); `graded` is the file whose answer stays in `values`. Where their words differ, the
    other one is kept in `answers.also` and a problem says both are read: a person grades the
    answer, and reading one of them alone could give 0 for what the student wrote in the other."""
    first = answers.values[qid]
    if graded == other:
        answers.values[qid], answers.origin[qid] = value, other
        answers.where.pop(qid, None)
    if _words(first) == _words(value):
        return
    answers.also[qid] = {"file": kept, "text": first} if graded == other else {"file": other, "text": value}


def _words(text: str) -> str:
    return " ".join(str(text).lower().split())


# A written answer that only says where the answer is: "See answers.yaml.", "(in report.pdf)",
# "Answered in the answer sheet": no answer in the file that says it.
_FILE = (r"(?:the\s+|my\s+)?(?:hw3/)?(?:answers?\.ya?ml|answer\s+sheet|yaml(?:\s+file)?|"
         r"(?:hw3\s+)?report(?:\.pdf|\.md|\.txt)?|pdf(?:\s+report)?)(?:\s+file)?")
_POINTER_RE = re.compile(
    r"[\s(\[]*(?:please\s+)?(?:see|refer\s+to|look\s+(?:at|in)|cf\.?|as\s+in|(?:(?:it\s+)?is\s+)?"
    r"(?:answered|written|given|explained)\s+in|(?:the\s+)?answer\s+is\s+in|in)\s*:?\s*" + _FILE
    + r"(?:\s*,?\s*(?:for|under)\s+(?:this|the|my)\s+(?:answer|explanation|question|task\s*\d))?"
    + r"(?:\s*\(\s*task\s*\d[\w.]*\s*\))?"
    r"\s*[.!)\]]*\s*", re.IGNORECASE)


def points_elsewhere(value: Any) -> bool:
    """Whether a written answer only points to another file ("See answers.yaml.")."""
    return isinstance(value, str) and len(value) <= 120 and _POINTER_RE.fullmatch(value) is not None


def _quoted(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(value: Any) -> Any:
    """An answer as a value to compare: a yes/no as a bool, numbers as floats, explanations dropped."""
    if isinstance(value, dict) and "value" in value:
        said = value.get("value")
        return said == "yes" if said in ("yes", "no") else said
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(float(value), 6)
    return value


def same_answer(report: Any, sheet: Any) -> bool:
    """Whether the report and the sheet say the same (written explanations are never compared:
    the same answer is worded twice); a table's rows in any order."""
    if isinstance(report, str) or isinstance(sheet, str):
        return True
    if isinstance(report, list) and report and isinstance(report[0], dict):
        key = next(iter(report[0]))
        mine = {row.get(key): _plain(row) for row in report if isinstance(row, dict)}
        theirs = {row.get(key): _plain(row) for row in sheet if isinstance(row, dict)} \
            if isinstance(sheet, list) else {}
        return mine == theirs
    return _plain(report) == _plain(sheet)


def shown(value: Any) -> str:
    """An answer as a problem quotes it: a yes/no's word, a table's rows in short."""
    plain = _plain(value)
    if isinstance(plain, bool):
        return "yes" if plain else "no"

    def number(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:g}"
        if isinstance(v, list):
            return "[" + ", ".join(number(x) for x in v) + "]"
        return str(v)
    if isinstance(plain, list) and plain and isinstance(plain[0], dict):
        text = "; ".join(", ".join(f"{k}={number(v)}" for k, v in row.items()) for row in plain)
    else:
        text = number(plain)
    return text if len(text) <= 120 else text[:117] + "..."
