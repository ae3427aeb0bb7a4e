"""Stage 3, publish: a `Result` -> result.json and every file rendered from it, in one folder.

result.json comes first and alone decides whether publishing worked: a report that cannot be
rendered is a warning, never a lost grade. Every file goes through the one atomic writer
(grader/common/files.py), and a rendered file that cannot be made again is removed rather than
left showing the old scores.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from grader.common.files import write_atomically
from grader.reports.formats import FORMATS, STAFF_FORMATS, STUDENT_FORMATS, GradescopeOptions, render
from grader.scoring import Result, write_result

RESULT_FILE = "result.json"
# What a grading folder gets: the student's report, and the staff's view beside it (not in
# the student kit, whose FORMATS leave it out).
GRADING_FORMATS = (*STUDENT_FORMATS, *(f for f in STAFF_FORMATS if f in FORMATS))


def publish(result: Result | Mapping[str, Any], folder: Path, *, rubrics: Mapping | None = None,
            formats: Sequence[str] = GRADING_FORMATS,
            gradescope: GradescopeOptions = GradescopeOptions()) -> dict[str, Any]:
    """Write folder/result.json, then each rendered format; return the result as written."""
    document = result.to_dict() if isinstance(result, Result) else dict(result)
    folder = Path(folder)
    write_result(folder / RESULT_FILE, document)
    for fmt in formats:
        target = folder / FORMATS[fmt]
        target.unlink(missing_ok=True)   # none is better than one showing the old scores
        try:
            write_atomically(target, render(fmt, document, rubrics=rubrics, gradescope=gradescope))
        except Exception as problem:
            print(f"pdl-grade: {target} could not be written: {problem!r}", file=sys.stderr)
    return document


def write_rendered(result: Mapping[str, Any], folder: Path, formats: Sequence[str], *,
                   rubrics: Mapping | None = None,
                   gradescope: GradescopeOptions = GradescopeOptions()) -> list[Path]:
    """Render `formats` of an existing result into `folder`; a failure raises (the report
    command says so and exits non-zero)."""
    written = []
    for fmt in formats:
        written.append(write_atomically(Path(folder) / FORMATS[fmt],
                                        render(fmt, result, rubrics=rubrics, gradescope=gradescope)))
    return written
