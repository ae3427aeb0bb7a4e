"""Copy a Gradescope submission into the layout the grader expects (that of student_template/:
one folder per assignment), in a folder only the autograder writes to.

Students upload either that layout, the same inside one top-level folder (a zipped project),
or loose files (model_parallel.py, answers.yaml, report.pdf). Loose files go to the folder of
the assignment whose template has a file of that name; with a single assignment graded, every
loose file goes to its folder (a report PDF has no fixed name).

The handout asks for the report as one PDF and never names it, and Gradescope keeps the name a
student's PDF had ("HW3 report - Jane Doe.pdf"); the grader reads `<assignment>/report.pdf`.
So an assignment folder with exactly one PDF and no report.pdf gets it as report.pdf (logged).

    python stage_submission.py SUBMISSION TARGET TEMPLATE_DIR ASSIGNMENT...
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", "__MACOSX", ".DS_Store")
REPORT_NAME = "report.pdf"   # grader/answers/collect.py REPORT_NAME


def stage(submission: Path, target: Path, template: Path, assignments: list[str]) -> list[str]:
    """Fill `target`; returns one line per decision, for the autograder's log."""
    root = _project_root(submission, assignments)
    shutil.copytree(root, target, ignore=IGNORED, symlinks=True)
    notes = [f"submission root: {root}"]
    loose = [p for p in root.iterdir() if p.is_file() and not IGNORED(str(root), [p.name])]
    for assignment in assignments:
        folder = target / assignment
        if not folder.is_dir():
            names = {p.name for p in (template / assignment).glob("*")}
            chosen = [p for p in loose if p.name in names or len(assignments) == 1]
            folder.mkdir()
            for path in chosen:
                shutil.copy2(path, folder / path.name, follow_symlinks=False)
            notes.append(f"{assignment}/: {', '.join(p.name for p in chosen) or 'no files found'}")
        notes += _name_the_report(folder, assignment)
    return notes


def _name_the_report(folder: Path, assignment: str) -> list[str]:
    """The only PDF of the folder as its report.pdf, where none has that name."""
    pdfs = [p for p in folder.iterdir()
            if p.suffix.lower() == ".pdf" and p.is_file() and not p.is_symlink()]
    if (folder / REPORT_NAME).exists() or len(pdfs) != 1:
        return []
    pdfs[0].rename(folder / REPORT_NAME)
    return [f"{assignment}/: '{pdfs[0].name}' is the only PDF: graded as {assignment}/{REPORT_NAME}"]


def _project_root(submission: Path, assignments: list[str]) -> Path:
    if any((submission / a).is_dir() for a in assignments):
        return submission
    folders = [p for p in submission.iterdir() if p.is_dir() and p.name not in ("__MACOSX",)]
    if len(folders) == 1 and any((folders[0] / a).is_dir() for a in assignments):
        return folders[0]
    return submission


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    source, target, template, *names = sys.argv[1:]
    for line in stage(Path(source), Path(target), Path(template), names):
        print(f"stage_submission: {line}")
