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

from . import report_contract
from .pdf_report import read_report
from .sheet import read_sheet, template_questions

REPORT_NAME = "report.pdf"
SHEET_NAME = "answers.yaml"


@dataclass
class Answers:
    assignment: str
    source: str
    values: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)   # id -> file it was read from
    missing: list[str] = field(default_factory=list)
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
            label = report_contract.template_label(qid)
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

    if source in ("pdf", "pdf_then_sheet"):
        display = f"{assignment}/{REPORT_NAME}"
        report = read_report(folder / REPORT_NAME, display_name=display, time_limit_s=pdf_time_limit_s)
        # No file at all is "not handed in", not "could not be read" (a file that is there).
        handed_in = (folder / REPORT_NAME).exists() or (folder / REPORT_NAME).is_symlink()
        answers.files.append({"file": display, "status": report.status if handed_in else "missing",
                              "pages": report.pages, "producer": report.producer})
        answers.problems += report.problems
        answers.needs_manual_review |= report.needs_manual_review and (
            source == "pdf" or (folder / REPORT_NAME).exists())
        for qid, value in report.answers.items():
            if qid in questions and value not in (None, "", []):
                answers.values[qid] = value
                answers.origin[qid] = display

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

    answers.missing = [qid for qid in questions if qid not in answers.values]
    if not any(f["status"] in ("ok", "partial", "problems") for f in answers.files):
        names = " or ".join(f["file"] for f in answers.files)
        answers.problems.insert(0, f"no answers handed in: {names} not found")
    return answers
