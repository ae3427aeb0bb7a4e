"""Which of a submission's files are its answer sheet and its report, under the names students
give them.

The template names them `answers.yaml` and (HW3) `report.pdf`; the handout names neither: it
asks for "Report (PDF — single file)". A student's editor or operating system saves the sheet
as `answers.yml`, `Answers.yaml` or `answers.yaml.txt`, and a report is exported as
`HW3_report_Anna_Tamm.pdf` or `Report.PDF`. Each was read as not handed in (a red team's adv33
F1 and F2: HW3 10.5 -> 2 of 15, Practical 5 9.25 -> 6.5 of 12), with nothing naming the file
beside it. They are read now, under their own names, and a note says which file was read as
what; the template's name wins where it is there.
"""
from __future__ import annotations

import re
from pathlib import Path

SHEET_NAME = "answers.yaml"
REPORT_NAME = "report.pdf"
READ_AS_SHEET = "was read as the answer sheet"
# answers.yaml as editors and systems save it: .yml, any case, Windows' hidden ".txt", "answer".
_SHEET_ALIAS = re.compile(r"answers?\.ya?ml(\.txt)?", re.IGNORECASE)
# More PDFs than this beside each other: the first ones by name are read, the rest named.
MAX_REPORT_CANDIDATES = 4


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(path for path in folder.iterdir() if path.is_file() and not path.is_symlink())
    except OSError:
        return []


def sheet_file(folder: Path) -> Path:
    """The answer sheet to read: `answers.yaml` where it is there, else the one file of another
    of its names (the first by name where several are), else `answers.yaml` (not there)."""
    exact = folder / SHEET_NAME
    if exact.is_file():
        return exact
    aliases = [path for path in _files(folder) if _SHEET_ALIAS.fullmatch(path.name)]
    return aliases[0] if aliases else exact


def read_as_sheet(display: str, assignment: str) -> str:
    """The note that a sheet of another name was read: a note, no problem of its answers."""
    return f"{display} {READ_AS_SHEET} ({assignment}/{SHEET_NAME} in the template); nothing is taken off for the name"


def is_read_as_sheet(problem: str) -> bool:
    return f" {READ_AS_SHEET} (" in problem


def is_sheet_name(name: str) -> bool:
    """Whether a file's name is one the answer sheet is read under."""
    return bool(_SHEET_ALIAS.fullmatch(Path(name).name))


def report_pdfs(folder: Path) -> list[Path]:
    """The PDFs that may be the report, most likely first: `report.pdf`, then any case of it,
    then names that say report, then names that say the assignment, then the rest by name.
    `report.pdf` alone where it is there: the template's name decides."""
    exact = folder / REPORT_NAME
    if exact.is_file():
        return [exact]
    assignment = folder.name.lower()
    pdfs = [path for path in _files(folder) if path.suffix.lower() == ".pdf"]
    pdfs.sort(key=lambda path: (path.stem.lower() != "report", "report" not in path.stem.lower(),
                                assignment not in path.stem.lower(), path.name))
    return pdfs
