"""Read the answers out of a student's HW3 PDF report.

    read_hw3_pdf(path) -> Hw3PdfReading

Never raises and never hangs: cheap checks on the file's bytes catch the common hand-in
mistakes (missing, empty, a .docx or a text file renamed), and the PDF itself is opened in a
child process with a time and memory limit (extract_worker). Anything that is not a clean
read sets needs_manual_review, with a message a student can act on. Every answer keeps
where it was read (`where`: page, line, table and rows), so the student's report can show it
beside the value. An answer read only in part is named in `incomplete` (the answer sheet's
whole answer is graded instead), and a report of its own structure (fewer than half of the
template's labels and headings in it) is said to be for a person to read, with the labels
that would have it read; the handout's own questions are read in it where they take a
number or a yes/no ("Q1) How many layers are assigned to GPU 0 and GPU 1?").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..declined import says_not_done
from . import contract
from .explanations import is_short_title, placeholder, read_explanations
from .labels import question_answer_explanations, read_labels, without_list_marker
from .layout import Layout, Line, build_layout
from .tables import header_without_rows, read_table

DEFAULT_DISPLAY_NAME = "hw3/report.pdf"
# Package root, so the child can import grader.answers whatever its cwd.
_IMPORT_ROOT = str(Path(__file__).resolve().parents[3])


@dataclass
class Hw3PdfReading:
    answers: dict = field(default_factory=dict)
    # field -> where it was read: {"page", "pages", "kind": "line" | "table" | "heading" |
    # "question-answer table", "text", "ocr", and for tables "rows": {key: {"page", "text"}}}
    where: dict = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    status: str = "unreadable"  # "ok" | "partial" | "unreadable" | "missing"
    needs_manual_review: bool = True
    pages: int = 0
    producer: str | None = None
    ocr: bool = False
    # Fewer than half of the template's labels and headings found: the report is written in a
    # structure of its own, and what it answers is for a person to read.
    own_structure: bool = False
    # field -> why its answer, though read, may not be the whole answer (a table's rows
    # missing or contradicting each other, a label answered twice): the answer sheet's
    # complete answer is taken instead (grader/answers/collect.py).
    incomplete: dict = field(default_factory=dict)
    # field -> why: answered in the report in words the reader does not take ("3 or 4", a
    # yes/no hedged, a table's header with rows under it none of which could be read):
    # written, so for a person to read, never "not answered".
    unread: dict = field(default_factory=dict)
    # Cells of a table's rows that are there but were not read ("12 and 14"): {id, row,
    # column, text}, as the answer sheet's unread cells.
    unread_cells: list = field(default_factory=list)
    # How answers were read where it is not as written ("3rd and 4th" as the indices 2 and 3):
    # for the student and the instructor to see, no doubt about the reading.
    notes: list = field(default_factory=list)
    # field -> {"said", "where"}: answers that say the task was not done ("Not done", "N/A",
    # "skipped"), under its label or its explanation's heading, or alone under the task's own
    # heading: empty answers (0), never read as a structure of the report's own (a TA's audit
    # 30, D4). Also in `missing`.
    declined: dict = field(default_factory=dict)


def _unreadable(name: str, message: str, *, status: str = "unreadable", pages: int = 0,
                producer: str | None = None) -> Hw3PdfReading:
    return Hw3PdfReading(missing=contract.expected_fields(), problems=[message.replace("{name}", name)],
                         status=status, needs_manual_review=True, pages=pages, producer=producer)


def _describe_non_pdf(head: bytes) -> str:
    """Why a file with no %PDF header is not a PDF, in the student's terms."""
    if head.startswith(b"PK\x03\x04"):
        return "{name} is not a PDF but a ZIP archive (a .docx or .odt renamed?); export it as PDF"
    if head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8")):
        return "{name} is not a PDF but an image renamed to .pdf; export the report as PDF"
    if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return "{name} is not a PDF but an HTML page; print it to PDF instead of saving it"
    try:
        head.decode("utf-8")
        return "{name} is not a PDF but a text file; convert the report to PDF"
    except UnicodeDecodeError:
        return "{name} is not a PDF (no %PDF header); export the report as PDF"


def check_file(path: Path) -> str | None:
    """A message for a file that is there but cannot be a PDF report, or None."""
    if not path.is_file():
        return "{name} is not a file"
    if path.stat().st_size == 0:
        return "{name} is empty (0 bytes); export the report again"
    with path.open("rb") as handle:
        head = handle.read(1024)
    # The PDF spec lets a few junk bytes precede the header; readers accept 1 KiB.
    if b"%PDF-" not in head:
        return _describe_non_pdf(head)
    return None


def run_extract_worker(
    path: Path, max_pages: int, time_left_s: float, time_limit_s: float
) -> tuple[dict | None, str | None]:
    """(worker output, None) or (None, why it failed). The child gets the
    time left of the caller's limit; messages name the limit itself."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_IMPORT_ROOT, os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "grader.answers.hw3_pdf.extract_worker", str(path), str(max_pages)]
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=max(time_left_s, 0.5), env=env, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:  # subprocess.run kills the child before raising
        return None, "reading {name} took longer than %g s; a person has to open it" % time_limit_s
    except OSError as error:
        return None, f"could not start the PDF reader for {{name}}: {error}"
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return None, "{name} could not be read as a PDF (" + tail[0][:200] + ")"
    try:
        return json.loads(done.stdout), None
    except json.JSONDecodeError:
        return None, "{name} could not be read as a PDF (the reader gave no result)"


def read_hw3_pdf(
    path: str | os.PathLike,
    *,
    time_limit_s: float = 30,
    max_pages: int = 50,
    display_name: str = DEFAULT_DISPLAY_NAME,
) -> Hw3PdfReading:
    try:
        return _read(Path(path), time_limit_s, max_pages, display_name)
    except Exception as error:  # the contract is "never raises": a bug here must not stop grading
        return _unreadable(display_name, f"{{name}} could not be read: internal error {type(error).__name__}: {error}")


def _read(path: Path, time_limit_s: float, max_pages: int, name: str) -> Hw3PdfReading:
    started = time.monotonic()
    if not path.exists() and not path.is_symlink():
        return _unreadable(name, "{name} was not handed in; hand the report in under that name", status="missing")
    message = check_file(path)
    if message:
        return _unreadable(name, message)
    output, failure = run_extract_worker(path, max_pages, time_limit_s - (time.monotonic() - started), time_limit_s)
    if failure:
        return _unreadable(name, failure)
    return reading_from_worker_output(output, name)


def reading_from_worker_output(output: dict, name: str = DEFAULT_DISPLAY_NAME) -> Hw3PdfReading:
    """The answers in what the worker pulled out of the PDF (pure: tests call it directly)."""
    pages_total, producer = output.get("pages_total") or 0, output.get("producer") or output.get("creator")
    error = output.get("error")
    if error and error["kind"] == "encrypted":
        return _unreadable(name, "{name} is encrypted; export it again without a password", pages=pages_total, producer=producer)
    pages = output.get("pages", [])
    if not pages and error:
        return _unreadable(name, "{name} could not be read as a PDF (%s)" % error["detail"][:200], pages=pages_total, producer=producer)
    if not any(page["chars"] for page in pages):
        if any(page["images"] for page in pages):
            count = f"its {len(pages)} pages are pictures" if len(pages) > 1 else "its page is a picture"
            message = (f"{{name}} is a scan: {count} with no text; a person must read it "
                       "(export the report from the editor as PDF so the grader can read it)")
        else:
            message = "{name} has no text at all (blank pages?); export the report again"
        return _unreadable(name, message, pages=pages_total, producer=producer)

    layout = build_layout(output)
    text_report = bool(output.get("text_report"))   # a report.md laid out as pages (text_report.py)
    reading = Hw3PdfReading(pages=pages_total, producer=producer, ocr=layout.ocr)
    _read_answers(layout, reading, name, text_report)
    if text_report:
        for where in reading.where.values():
            where["text_report"] = True
        if output.get("truncated"):
            reading.problems.insert(0, f"{name} is longer than a report: {output['truncated']}")
    if layout.ocr:
        reading.problems.insert(0, f"{name}'s text comes from OCR (a program read it off pictures of the pages): "
                                   "every number read from it must be checked by a person against the pictures")
        for where in reading.where.values():
            where["ocr"] = True
    else:
        for page_number, page in enumerate(pages, start=1):
            if not page["chars"] and page["images"]:
                reading.problems.append(f"page {page_number} of {name} is a picture with no text: a person must read it")
    if pages_total > len(pages):
        reading.problems.insert(0, f"{name} has {pages_total} pages; only the first {len(pages)} were read")
    if error:
        reading.problems.insert(0, f"{name} is partly broken: {error['detail'][:200]}")
    if not reading.answers and not reading.own_structure:
        reading.problems.insert(0, f"none of the report template's labels were found in {name}; was it written from the template?")
    # An answer that says the task was not done is read: the report says what it says.
    reading.status = "ok" if not set(reading.missing) - set(reading.declined) and not reading.problems else "partial"
    reading.needs_manual_review = reading.status != "ok"
    return reading


# ---------------------------------------------------------------- answers and where they are


def _words(text: str) -> str:
    return " ".join(text.split())


def _line_where(line: Line, kind: str) -> dict:
    text = line.raw.replace("\t", " | ")
    return {"kind": kind, "page": line.page, "pages": [line.page], "text": text[:160]}


def _sections(layout: Layout) -> list[tuple[float, int]]:
    """(position, task) where each task's part of the report starts."""
    found = []
    for line in layout.body():
        match = contract.SECTION_START.match(line.text)
        if match and match.group("task") and is_short_title(line.text):
            found.append((line.index, int(match.group("task"))))
    return found


def _pictures_of(layout: Layout, task: int | None, sections) -> list:
    if task is None:
        return []
    pictures = []
    for picture in layout.pictures:
        before = [t for position, t in sections if position < picture.index]
        if before and before[-1] == task:
            pictures.append(picture)
    return pictures


def _picture_problem(what: str, pictures, text_report: bool = False) -> str:
    pages = sorted({p.page for p in pictures})
    where = "an image the report shows" if text_report else \
        f"page{'s' if len(pages) > 1 else ''} {', '.join(map(str, pages))}"
    return f"{what} is a picture ({where}): a person must read it"


def _read_answers(layout: Layout, reading: Hw3PdfReading, name: str = DEFAULT_DISPLAY_NAME,
                  text_report: bool = False) -> None:
    sections = _sections(layout)
    labels = read_labels(layout)
    explanations = read_explanations(layout)
    in_question_answer_rows = question_answer_explanations(layout)
    for task, (text, line, question) in in_question_answer_rows.items():
        line_read = explanations.get(task)
        # The row put back together wins over the lines read from its heading's line on, which
        # are a part of it (an answer centred beside its heading starts above it).
        if line_read is None or (line_read[1].ruled is None and _words(line_read[0]) in _words(text)):
            explanations[task] = (text, line)
    tables = {spec.field: read_table(layout, spec) for spec in contract.TABLES}
    declined = _declined(layout, sections, labels, explanations, tables)
    reading.declined = declined
    not_found = [a.template_text for a in contract.LABELLED_ANSWERS
                 if (not labels[a.field].found_label or labels[a.field].handout) and a.field not in declined]
    not_found += [f"Task {task} explanation" for task in contract.EXPLANATION_TASKS
                  if task not in explanations and contract.explanation_field(task) not in declined]
    total = len(contract.LABELLED_ANSWERS) + len(contract.EXPLANATION_TASKS)
    reading.own_structure = len(not_found) > total / 2
    first_problem = len(reading.problems)
    for field_id, label in labels.items():
        answer = next(a for a in contract.LABELLED_ANSWERS if a.field == field_id)
        if field_id in declined:
            reading.missing.append(field_id)
            continue
        reading.problems += list(label.problems)
        reading.notes += list(label.notes)
        if label.value is not None and label.problems:
            reading.incomplete[field_id] = label.problems[0]
        if label.value is None:
            reading.missing.append(field_id)
            if label.written or label.maybe_beside:
                reading.unread[field_id] = label.problems[0]
            pictures = _pictures_of(layout, answer.task, sections)
            if pictures and not label.found_label:
                reading.problems.append(_picture_problem(f"'{answer.template_text}' was not found as text; "
                                                         f"if it is in Task {answer.task}'s picture, it", pictures,
                                                         text_report))
            continue
        reading.answers[field_id] = label.value
        where = _line_where(label.line, "line" if label.line.ruled is None and len(label.line.cells) < 2
                            else "question-answer table")
        if label.answer_line is not None:  # the answer under its label: show both
            answer_line = _line_where(label.answer_line, "line")
            # Its list marker ("•", Word's private-use U+F0B7) is no part of what the student reads.
            where["text"] = (where["text"] + " / " + without_list_marker(answer_line["text"])[0].strip())[:160]
            where["pages"] = sorted(set(where["pages"] + answer_line["pages"]))
        if label.read_as:
            where["note"] = label.read_as
        reading.where[field_id] = where

    for spec in contract.TABLES:
        table = tables[spec.field]
        if table is None:
            reading.missing.append(spec.field)
            if spec.field in declined:
                continue
            header = header_without_rows(layout, spec)
            pictures = _pictures_of(layout, spec.task, sections)
            if header is not None and header.below:
                # Rows are there, written, but not read: for a person, never "not answered".
                reading.unread[spec.field] = _rows_not_read(spec, header, text_report)
                reading.problems.append(reading.unread[spec.field])
            elif pictures:
                reading.problems.append(_picture_problem(f"Task {spec.task}'s table ({spec.template_header})", pictures,
                                                         text_report))
            elif header is not None:
                reading.problems.append(f"the table '{spec.template_header}' has its header "
                                        f"({_on_page(header.page, text_report)}'{header.text[:80]}') but no rows under it")
            elif layout.pictures and not sections:
                reading.problems.append(f"no table with the header '{spec.template_header}' found as text; "
                                        "the report has pictures: if the table is one of them, a person must read it")
            else:
                reading.problems.append(f"no table with the header '{spec.template_header}' found")
            continue
        reading.problems += table.problems
        reading.missing += table.missing
        reading.answers[spec.field] = table.rows
        reading.where[spec.field] = table.where
        reading.unread_cells += [{"id": spec.field, **cell} for cell in table.unread_cells]
        doubts = table.doubtful + [f"no row for {spec.key.name}={key}" if key in table.absent
                                   else f"the row for {spec.key.name}={key} not read"
                                   for key in (int(m.partition("=")[2].rstrip("]")) for m in table.missing)]
        if doubts or contract.incomplete(spec.field, table.rows):
            reading.incomplete[spec.field] = "; ".join(doubts) or contract.incomplete(spec.field, table.rows)

    for task in contract.EXPLANATION_TASKS:
        field_id = contract.explanation_field(task)
        text, line = explanations.get(task, (None, None))
        if field_id in declined:
            reading.missing.append(field_id)
        elif text is None:
            reading.missing.append(field_id)
            pictures = _pictures_of(layout, task, sections)
            if pictures:
                reading.problems.append(_picture_problem(f"Task {task}'s explanation was not found as text; if it",
                                                         pictures, text_report))
            elif not reading.own_structure:   # said once, in the report's own structure's problem
                reading.problems.append(f"no 'Task {task} explanation' heading found")
        elif placeholder(text):
            reading.missing.append(field_id)
            reading.problems.append(f"'Task {task} explanation' has no text" + (f" (only '{text}')" if text else ""))
        else:
            reading.answers[field_id] = text
            in_row = in_question_answer_rows.get(task)
            in_table = len(line.cells) >= 2 or (in_row is not None and in_row[1] is line)
            reading.where[field_id] = _line_where(line, "question-answer table" if in_table else "heading")
            reading.where[field_id]["text"] = (in_row[2] if in_row is not None and in_row[1] is line
                                               else line.cells[0].raw)[:160]
    for field_id, value in reading.answers.items():
        why = contract.incomplete(field_id, value)
        if why and field_id not in reading.incomplete:
            reading.incomplete[field_id] = why
    if reading.own_structure:
        labels_of = {a.field: a.template_text for a in contract.LABELLED_ANSWERS} | {
            contract.explanation_field(task): f"Task {task} explanation" for task in contract.EXPLANATION_TASKS}
        not_read = [label for field_id, label in labels_of.items() if field_id not in reading.answers]
        reading.problems.insert(first_problem, _own_structure_problem(name, total - len(not_found), total, not_read,
                                                                      "the report" if text_report else "the PDF"))


def _on_page(page: int, text_report: bool) -> str:
    return "" if text_report else f"page {page}, "


def _rows_not_read(spec, header, text_report: bool) -> str:
    """Why a table whose header was found has no answer: its rows could not be read."""
    return (f"the table '{spec.template_header}' was found ({_on_page(header.page, text_report)}its header "
            f"'{header.text[:80]}'), but none of the rows under it could be read (the first: '{header.below[0][:80]}'): "
            f"a person must read them. To have them read, write each row under the header, its "
            f"{spec.key.name.upper() if spec.key.name == 'depth' else 'GPUs'} first, each value under its "
            "column's name, as hw3/REPORT_TEMPLATE.md does")


def _task_fields(task: int) -> list[str]:
    return ([a.field for a in contract.LABELLED_ANSWERS if a.task == task]
            + [t.field for t in contract.TABLES if t.task == task] + [contract.explanation_field(task)])


def _declined(layout: Layout, sections, labels: dict, explanations: dict, tables: dict) -> dict:
    """{field: {"said", "where"}} of the answers the report says were not done: after a label
    ("Number of transfers with 5 GPUs: N/A"), as an explanation ("Skipped."), or, for a whole
    task none of whose answers is there, under the task's heading ("Task 4: run with more GPUs"
    / "Not done (I ran out of time before the deadline)."; "Task 5: not done")."""
    found = {}
    for field_id, label in labels.items():
        if label.declined is not None:
            found[field_id] = {"said": label.declined, "where": f"page {label.line.page}"}
    for task, (text, line) in explanations.items():
        if says_not_done(text):
            found[contract.explanation_field(task)] = {
                "said": " ".join(text.split()), "where": f"page {line.page}, under 'Task {task} explanation'"}
    body = layout.body()
    starts = [position for position, _ in sections]
    for position, task in sections:
        heading = layout.lines[position]
        if contract.EXPLANATION_HEADING.match(heading.text):
            continue   # an explanation's own heading says only the explanation was not done
        answered = [f for f in _task_fields(task) if f not in found and (
            (f in labels and (labels[f].value is not None or labels[f].written or labels[f].maybe_beside))
            or (f in tables and tables[f] is not None)
            or (f == contract.explanation_field(task) and task in explanations))]
        if answered:
            continue
        end = min([s for s in starts if s > position], default=len(layout.lines))
        lines = [line for line in body if position < line.index < end]
        title = contract.SECTION_START.match(heading.text)
        said = [" ".join(heading.cased[title.end():].split()).lstrip(":.-) ")] + [line.cased for line in lines] + [
            " ".join(line.cased for line in lines)]
        text = next((t for t in said if t and says_not_done(t)), None)
        if text is None:
            continue
        shown = " ".join(heading.cased.split())
        for field_id in _task_fields(task):
            found.setdefault(field_id, {"said": text, "where": f"page {heading.page}, under '{shown}'"})
    return found


def _own_structure_problem(name: str, found: int, total: int, not_read: list[str], document: str = "the PDF") -> str:
    """A report not written from the template: what its answers are (for a person to read
    in the PDF) and how to have them read (the template's labels of those not read)."""
    count = "none of the report template's labels were found" if not found else (
        f"only {found} of the report template's {total} labels and headings were found")
    return (f"{count} in {name}: its answers may be in {document} in a structure of its own, which the grader does "
            f"not read, so a person must read {document} for them. To have them read, write each answer after its "
            "label as hw3/REPORT_TEMPLATE.md writes it, on a line of its own (e.g. 'Number of transfers with "
            "2 GPUs: 1'), and each explanation under its heading; not read: "
            + ", ".join(f"'{label}'" for label in not_read))


def describe_where(where: dict) -> str:
    """Where an answer was read, for people: "page 2, table 'DEPTH | Step time (ms)'"."""
    pages = where.get("pages") or [where.get("page")]
    # A text report's pages are the reader's, not the student's: the quoted text finds it.
    place = "" if where.get("text_report") else \
        f"page {pages[0]}, " if len(pages) == 1 else f"pages {pages[0]}-{pages[-1]}, "
    kind = where.get("kind")
    text = where.get("text", "")
    if kind == "table":
        described = f"{place}table '{text}'" + (" (turned: configurations as columns)" if where.get("transposed") else "")
    elif kind == "heading":
        described = f"{place}under '{text}'"
    else:
        described = f"{place}{'row' if kind == 'question-answer table' else 'line'} '{text}'"
    if where.get("note"):
        described += f" ({where['note']})"
    return described + (" (OCR: check it against the picture)" if where.get("ocr") else "")
