"""Read the answers out of a student's HW3 PDF report.

    read_report(path) -> ReportExtraction

Never raises and never hangs: cheap checks on the file's bytes catch the
common hand-in mistakes (missing, empty, a .docx or a text file renamed),
and the PDF itself is opened in a child process with a time and memory
limit (pdf_extract_worker). Anything that is not a clean read sets
needs_manual_review, with a message a student can act on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .report_contract import expected_fields
from .report_parser import parse_report

DEFAULT_DISPLAY_NAME = "hw3/report.pdf"
# Package root, so the child can import grader.answers whatever its cwd.
_IMPORT_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class ReportExtraction:
    answers: dict = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    status: str = "unreadable"  # "ok" | "partial" | "unreadable"
    needs_manual_review: bool = True
    pages: int = 0
    producer: str | None = None


def _unreadable(name: str, message: str, *, pages: int = 0, producer: str | None = None) -> ReportExtraction:
    return ReportExtraction(
        missing=expected_fields(),
        problems=[message.replace("{name}", name)],
        status="unreadable",
        needs_manual_review=True,
        pages=pages,
        producer=producer,
    )


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
    """A message for a file that cannot be a PDF report, or None."""
    if not path.exists():
        return "{name} is missing; hand the report in under that name"
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
    command = [sys.executable, "-m", "grader.answers.pdf_extract_worker", str(path), str(max_pages)]
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


def read_report(
    path: str | os.PathLike,
    *,
    time_limit_s: float = 30,
    max_pages: int = 50,
    display_name: str = DEFAULT_DISPLAY_NAME,
) -> ReportExtraction:
    try:
        return _read_report(Path(path), time_limit_s, max_pages, display_name)
    except Exception as error:  # the contract is "never raises": a bug here must not stop grading
        return _unreadable(display_name, f"{{name}} could not be read: internal error {type(error).__name__}: {error}")


def _read_report(path: Path, time_limit_s: float, max_pages: int, name: str) -> ReportExtraction:
    started = time.monotonic()
    message = check_file(path)
    if message:
        return _unreadable(name, message)
    output, failure = run_extract_worker(path, max_pages, time_limit_s - (time.monotonic() - started), time_limit_s)
    if failure:
        return _unreadable(name, failure)
    pages_total, producer = output.get("pages_total") or 0, output.get("producer")
    error = output.get("error")
    if error and error["kind"] == "encrypted":
        return _unreadable(name, "{name} is encrypted; export it again without a password", pages=pages_total, producer=producer)
    pages = output.get("pages", [])
    if not pages and error:
        return _unreadable(name, "{name} could not be read as a PDF (%s)" % error["detail"][:200], pages=pages_total, producer=producer)
    if not any(page["chars"] for page in pages):
        if any(page["images"] for page in pages):
            message = "{name} has no text layer (a scan?); export the report from the editor as PDF so the text can be read"
        else:
            message = "{name} has no text at all (blank pages?); export the report again"
        return _unreadable(name, message, pages=pages_total, producer=producer)

    parsed = parse_report(output)
    problems = list(parsed.problems)
    if pages_total > len(pages):
        problems.insert(0, f"{name} has {pages_total} pages; only the first {len(pages)} were read")
    if error:
        problems.insert(0, f"{name} is partly broken: {error['detail'][:200]}")
    if not parsed.answers:
        problems.insert(0, f"none of the report template's labels were found in {name}; was it written from the template?")
    status = "ok" if not parsed.missing and not problems else "partial"
    return ReportExtraction(
        answers=parsed.answers,
        missing=parsed.missing,
        problems=problems,
        status=status,
        needs_manual_review=status != "ok",
        pages=pages_total,
        producer=producer,
    )
