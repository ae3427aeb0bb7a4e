"""Scripts the submission lacks, as the checks that needed them say it.

A missing script fails every check that needed it, each its own way ("This configuration (layout,
{'gpus': 3, 'depth': 5}) was not measured: hw3/model_parallel.py is missing ...", an answer
check's "your code did not get that far: ..."), with the file beside it that may be it renamed
(grader/harness/observation.py `missing_script`). The terminal summary shows it as one cause
with the checks it cost (grader/reports/terminal.py `failure_causes`); the report names it once
at the top of its assignment, the checks below pointing there (grader/reports/student_view.py).
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

ABSENT = re.compile(r"(?P<script>\S+\.py) is missing from the submission: keep the template's "
                    r"file layout\.(?P<instead>[^\n]*)")


def absent_script(message: str) -> re.Match | None:
    """The missing script a message says (its `script`, and the whole statement as group 0)."""
    return ABSENT.search(message or "")


def where_to_look(script: str) -> str:
    return (f"the file names in {PurePosixPath(script).parent}/: the grader runs each script "
            "under the template's name")


def pointer(scripts: list[str]) -> str:
    """What a check of the report says in place of the missing script's statement."""
    return (f"needs {' and '.join(scripts)}, missing from your submission: see the top of "
            "this assignment")
