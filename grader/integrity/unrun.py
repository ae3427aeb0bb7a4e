"""Files of a submission that no run of it can execute: kept out of the runs, read as notes.

Honest uploads were held for review for code the grader never runs: a `.venv/` zipped with the
project (pip's own code: 890 findings), and a student's own test (`test_concepts.py` patching
`torch.cuda.device_count` with unittest.mock, the natural way to test Part 3's one-GPU message
without GPUs). Such files are masked in every sandboxed run (grader/harness/execute.py), so
whatever they hold cannot reach a record; the scan says what they hold to the instructor as a
note. A test module that another file imports runs, and is scanned as any module is.
"""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from grader.common.environments import ENVIRONMENT_MARKS, ENVIRONMENT_PARTS, environment_parts
from grader.common.text import python_source

MAX_FOLDERS = 20000   # a walk of the submission stops there (a batch unpacks at most 5000 files)
_TEST_FILE = re.compile(r"^(?:test_\w*|\w+_test)\.py$")


def virtual_environments(submission: Path) -> list[Path]:
    """Folders holding a Python environment (`pyvenv.cfg`: venv and virtualenv; `conda-meta/`:
    conda), never followed through symlinks; a folder of the student's inside one (beside its
    bin/ and lib/) is looked into too."""
    found, seen = [], 0
    for root, dirs, names in os.walk(submission, followlinks=False):
        seen += 1
        if any(mark in names or mark in dirs for mark in ENVIRONMENT_MARKS):   # as listed
            found.append(Path(root))
            dirs[:] = [d for d in dirs if d not in ENVIRONMENT_PARTS]
        if seen > MAX_FOLDERS:
            break
    return found


def environments_own_parts(environments: list[Path]) -> list[Path]:
    """What of each environment folder the tools made (grader/common/environments.py): hidden
    from the runs and never read; the rest of the folder is the student's, read and run."""
    return [part for folder in environments for part in environment_parts(folder)]


def unimported_test_files(submission: Path, environments: list[Path] | None = None) -> list[Path]:
    """The student's own test modules (test_*.py, *_test.py) that no other Python file of the
    submission (outside its Python environments' own parts, `environments`) imports."""
    tests, imported = [], set()
    if environments is None:
        environments = environments_own_parts(virtual_environments(submission))
    for path in _python_files(submission, environments):
        if _TEST_FILE.match(path.name):
            tests.append(path)
        imported |= _imported_names(path)
    # One imported by another module (a test one too) runs when that one does: scanned as any.
    return [path for path in tests if path.stem not in imported]


def kept_out_of_runs(submission: Path) -> list[Path]:
    parts = environments_own_parts(virtual_environments(submission))
    return parts + unimported_test_files(submission, parts)


def _python_files(submission: Path, skipped: list[Path]):
    count = 0
    for root, dirs, names in os.walk(submission, followlinks=False):
        dirs[:] = [d for d in dirs if d != "__pycache__" and Path(root, d) not in skipped]
        for name in names:
            path = Path(root, name)
            if name.endswith(".py") and not path.is_symlink() and path.is_file():
                count += 1
                if count > MAX_FOLDERS:
                    return
                yield path


def _imported_names(path: Path) -> frozenset[str]:
    """Every name an import of the file mentions: the modules and packages of `import a.b`,
    `from a import b` (b may be a module), relative imports included. Parsed once per version
    of the file: every sandboxed run of a grading asks (a parse of each file per run had cost
    each run's start about 13 ms)."""
    try:
        status = path.stat()
    except OSError:
        return frozenset()
    key = (str(path), status.st_mtime_ns, status.st_size, status.st_ino)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = _parsed_imports(path)
    return _PARSED[key]


_PARSED: dict[tuple, frozenset[str]] = {}
_PARSED_MAX = 4096


def _parsed_imports(path: Path) -> frozenset[str]:
    try:
        tree = ast.parse(python_source(path.read_bytes()))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()   # a file Python cannot parse cannot import anything either
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.update(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            names.update((node.module or "").split("."))
            names.update(alias.name for alias in node.names)
    return frozenset(names)
