"""Whether an assignment's folder in an upload is the student template's copy, unchanged: not
handed in. README has students work in a copy of the whole student_template/, so a student who
did one assignment and uploaded the folder hands in the other four as the template left them
(adv44 F4: each was graded, 0 points and "Submitted for grading" in its Moodle sheet, 30
gradings for 6 students). A file counts as unchanged where its bytes are the template's, or are
after line endings and trailing whitespace are made alike (an editor that saves CRLF, or strips
trailing spaces, changed nothing a TA would call work). Anything else is a change, and the
assignment is graded: a filled answer sheet, one edited line, a file the template lacks.

One change is no work handed in for its own assignment: a script another assignment's handout
runs, changed only at its template's TODOs. Practical 6's Part 6 says "Run your Practical 5 code
(DataParallel) and compare", which needs practical5_dp.py's one TODO (the DataParallel wrap)
done; a Practical 6 student's course folder holding that and Practical 5's sheet as handed out
had been graded for Practical 5 (adv47 F3: 6.5/12 in grades.csv for a P5 never handed in). Its
answer sheet filled, another file changed, or more than the TODO written: handed in."""
from __future__ import annotations

import ast
import difflib
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


# {(assignment, script): the assignment whose handout runs it, and where it says so}.
RUN_BY_ANOTHER = {("practical5", "practical5_dp.py"):
                  ("practical6", "Practical 6's Part 6: \"Run your Practical 5 code (DataParallel) "
                                 "and compare\"")}
# The most code lines a TODO's answer may have and still be only what another assignment
# needs (the DataParallel wrap is one); more is work on the script itself.
_MOST_LINES_AT_A_TODO = 3


def run_by_another(folder: Path, assignment: str,
                   template_dir: Path = TEMPLATE_DIR) -> tuple[str, str, list[str]] | None:
    """(the other assignment, where its handout says it runs them, the scripts changed) where
    `folder` differs from the template only in scripts another assignment runs, each changed
    only at its TODOs (a few lines in place of the template's `# TODO` and its `raise
    NotImplementedError`); None where anything else differs, or nothing does."""
    template = template_dir / assignment
    if not template.is_dir() or not folder.is_dir():
        return None
    changed, found = [], set()
    for file in _files(folder):
        name = file.relative_to(folder).as_posix()
        if _same_file(file, template / name):
            continue
        other = RUN_BY_ANOTHER.get((assignment, name))
        if other is None or not _changed_only_at_todos(file, template / name):
            return None
        changed.append(name)
        found.add(other)
    return (*found.pop(), changed) if len(found) == 1 else None


def _lines(path: Path) -> list[str] | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _LARGER_THAN_ANY_COPY:
        return None
    try:
        return _alike(path.read_bytes()).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def _todo_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) line ranges of the template's TODOs: each `raise NotImplementedError` with
    the `# TODO` comment lines right above it."""
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    blocks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node.exc or node):
            start = node.lineno - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            blocks.append((start, node.end_lineno))
    return blocks


def _changed_only_at_todos(file: Path, template: Path) -> bool:
    """Whether `file` is `template` with only its TODOs answered, in a few lines of code."""
    mine, original = _lines(file), _lines(template)
    if mine is None or original is None:
        return False
    blocks = _todo_blocks(original)
    written = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, original, mine, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if not any(start <= i1 and i2 <= end for start, end in blocks):
            return False
        written += sum(1 for line in mine[j1:j2] if line.strip() and not line.lstrip().startswith("#"))
    return written <= _MOST_LINES_AT_A_TODO
