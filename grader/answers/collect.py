"""A submission's answers to one assignment, from its answer sheet and (HW3) its PDF report.

    collect_answers(submission, "hw3", source="pdf_then_sheet") -> Answers

`source` is the rubric's `answers_source`: `sheet` (the default), `pdf`, or
`pdf_then_sheet` (the report's answers win; the sheet fills what the report lacks). Every
answer keeps where it came from, and every question answered nowhere is listed in
`missing`, so a check can say "not found in hw3/report.pdf (label ...)" instead of a
silent zero. Never raises on bad input.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .hw3_pdf import describe_where, read_hw3_pdf
from .hw3_pdf import contract as hw3_pdf_contract
from .sheet import read_sheet, template_questions

REPORT_NAME = "report.pdf"
SHEET_NAME = "answers.yaml"


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
    problems: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)        # [{file, status, ...}]
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
    if source in ("pdf", "pdf_then_sheet"):
        display = f"{assignment}/{REPORT_NAME}"
        pdf = read_hw3_pdf(folder / REPORT_NAME, display_name=display, time_limit_s=pdf_time_limit_s)
        if pdf.status == "unreadable":
            # Handed in, but not as text the grader reads (a scan, a renamed .docx): what it
            # answers is for a person to read, never "not answered" (a TA's scanned report
            # listed all 17 answers so).
            unread |= set(questions)
        answers.files.append({"file": display, "status": pdf.status, "pages": pdf.pages,
                              "producer": pdf.producer, "ocr": pdf.ocr})
        answers.problems += pdf.problems
        answers.needs_manual_review |= pdf.needs_manual_review and (source == "pdf" or pdf.status != "missing")
        for qid, value in pdf.answers.items():
            if qid in questions and value not in (None, "", []):
                answers.values[qid] = value
                where = pdf.where.get(qid)
                answers.origin[qid] = f"{display}, {describe_where(where)}" if where else display
                if where:
                    answers.where[qid] = {"file": display, **where}

    if source in ("sheet", "pdf_then_sheet"):
        display = f"{assignment}/{SHEET_NAME}"
        sheet = read_sheet(folder / SHEET_NAME, questions, display)
        answers.files.append({"file": display, "status": "ok" if sheet.found and not sheet.problems
                              else "problems" if sheet.found else "missing"})
        answers.problems += sheet.problems
        for qid, value in sheet.values.items():
            if qid not in answers.values:
                answers.values[qid] = value
                answers.origin[qid] = display
        unread |= set(sheet.unread)

    answers.missing = [qid for qid in questions if qid not in answers.values]
    answers.unread = [qid for qid in answers.missing if qid in unread]
    # "Not handed in" only when no file is there: a file that is there but unreadable (a scan,
    # a renamed .docx) has its own message, and saying both would contradict it.
    if all(f["status"] == "missing" for f in answers.files):
        names = " or ".join(f["file"] for f in answers.files)
        answers.problems = [p for p in answers.problems if "was not handed in" not in p]
        answers.problems.insert(0, f"no answers handed in: {names} not found")
    return answers
