"""Files students hand in instead of a readable report, made without the
big tools (tiny_pdf, pypdfium2 and PIL come with pdfplumber), except the
encrypted one, which needs qpdf."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

from report_builders import ToolMissing
from tiny_pdf import write_text_pdf

# The filled-in report as plain text lines, in the template's order: what a
# student might get from a minimal Markdown-to-PDF tool.
REPORT_LINES = [
    "HW3 report: model parallelism",
    "Task 1",
    "Layers per GPU (DEPTH=6, 2 GPUs): 3, 3",
    "Transfer between layers: 2 and 3",
    "Task 1 explanation",
    "Each GPU holds three consecutive layers; one transfer per forward pass.",
    "Task 2",
    "| DEPTH | Step time (ms) |",
    "| 6 | 12.5 |",
    "| 12 | 23.75 |",
    "| 24 | 47.1 |",
    "Does increasing DEPTH improve speed (yes/no): No, every layer adds work.",
    "Task 2 explanation",
    "Only one GPU computes at a time, so the time grows with depth.",
    "Task 3",
    "Task 3 explanation",
    "Twenty layers over five devices is four each.",
    "Task 4",
    "GPUs\tStep time (ms)\tMemory per GPU (MiB)",
    "2\t31.2\t812.5, 790",
    "5\t18.1\t402 / 398 / 398 / 398 / 410",
    "All GPUs utilized with 5 GPUs (yes/no): yes",
    "Faster with 5 GPUs than with 2 (yes/no): No.",
    "Task 4 explanation",
    "Memory per GPU falls, time barely changes.",
    "Task 5",
    "Number of .to() calls with 2 GPUs: 6",
    "Number of transfers with 2 GPUs: 1",
    "Number of .to() calls with 5 GPUs: 6",
    "Number of transfers with 5 GPUs: 4",
    "Transfers grow with the number of GPUs (yes/no): Yes - one more per added GPU.",
    "Task 5 explanation",
    "A .to() call moves data only across devices.",
]


def plain_report(path: Path) -> Path:
    return write_text_pdf(path, [REPORT_LINES])


def encrypted_report(path: Path) -> Path:
    """AES-256 with a user password, as "protect with password" in an editor does."""
    qpdf = shutil.which("qpdf")
    if qpdf is None:
        raise ToolMissing("qpdf is not installed (Debian package qpdf)")
    source = plain_report(path.with_name("plain-for-encryption.pdf"))
    subprocess.run([qpdf, "--encrypt", "student-secret", "owner-secret", "256", "--", str(source), str(path)],
                   check=True, capture_output=True, timeout=60)
    return path


def scanned_report(path: Path) -> Path:
    """The report's page rendered to pixels and wrapped as a PDF: no text layer."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(plain_report(path.with_name("plain-for-scan.pdf"))))
    image = document[0].render(scale=100 / 72).to_pil().convert("RGB")
    document.close()
    image.save(path, "PDF", resolution=100)
    return path


def huge_report(path: Path, pages: int = 300, lines_per_page: int = 5) -> Path:
    """The report on page 1, then pages of filler (a log pasted into the report)."""
    filler = [f"epoch {n} step {n * 7} loss 0.{n:04d} time 12.5 ms" for n in range(lines_per_page)]
    return write_text_pdf(path, [REPORT_LINES] + [filler] * (pages - 1))


def docx_renamed(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    return path


def truncated_pdf(path: Path) -> Path:
    """A PDF cut off mid-upload: the header is there, the rest is not."""
    whole = plain_report(path.with_name("plain-for-truncation.pdf")).read_bytes()
    path.write_bytes(whole[:200])
    return path
