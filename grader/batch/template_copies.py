"""Whether an assignment's folder in an upload is the student template's copy, unchanged: not
handed in. README has students work in a copy of the whole student_template/, so a student who
did one assignment and uploaded the folder hands in the other four as the template left them
(adv44 F4: each was graded, 0 points and "Submitted for grading" in its Moodle sheet, 30
gradings for 6 students). A file counts as unchanged where its bytes are the template's, or are
after line endings and trailing whitespace are made alike (an editor that saves CRLF, or strips
trailing spaces, changed nothing a TA would call work). Anything else is a change, and the
assignment is graded: a filled answer sheet, one edited line, a file the template lacks."""
from __future__ import annotations

import re
from pathlib import Path

from grader.batch.unpack import JUNK_NAMES

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "student_template"
# A template file is a few KiB: a file much larger is no copy of it, and is never read whole.
_LARGER_THAN_ANY_COPY = 1 << 20
_TRAILING_SPACE = re.compile(rb"[ \t]+(?=\n)")


def _alike(data: bytes) -> bytes:
    """`data` with CRLF and CR line endings as LF, no whitespace at a line's end, and no blank
    lines at the file's end."""
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return _TRAILING_SPACE.sub(b"", text).rstrip() + b"\n"


def _same_file(file: Path, template: Path) -> bool:
    if not template.is_file() or file.is_symlink() or not file.is_file():
        return False
    if file.stat().st_size > _LARGER_THAN_ANY_COPY:
        return False
    data, original = file.read_bytes(), template.read_bytes()
    return data == original or _alike(data) == _alike(original)


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if not JUNK_NAMES.intersection(p.relative_to(folder).parts)
                  and p.suffix != ".pyc" and (p.is_file() or p.is_symlink()))


def unchanged_template(folder: Path, assignment: str, template_dir: Path = TEMPLATE_DIR) -> bool:
    """Whether `folder` (an upload's `assignment` folder) holds the template's files and nothing
    else, each unchanged: a file deleted is no work handed in either, a file added is."""
    template = template_dir / assignment
    if not template.is_dir() or not folder.is_dir():
        return False
    files = _files(folder)
    return bool(files) and all(_same_file(file, template / file.relative_to(folder))
                               for file in files)
