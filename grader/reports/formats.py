"""Every file rendered from a result.json, by format: its file name and how it is made.

    md          report.md      the student's report (Markdown: Gradescope, plain text)
    html        report.html    the student's report with the measured values plotted
    instructor  instructor.md  the staff's view: written answers beside the rubric's guidance
    gradescope  results.json   Gradescope's autograder results
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from grader.edition import STUDENT_KIT

FORMATS = {"md": "report.md", "html": "report.html", "instructor": "instructor.md",
           "gradescope": "results.json"}
STUDENT_FORMATS = ("md", "html")
# The staff's own view (the rubrics' guidance beside the student's answers): never made by the
# student kit's grader.
STAFF_FORMATS = ("instructor",)
if STUDENT_KIT:
    FORMATS = {fmt: name for fmt, name in FORMATS.items() if fmt not in STAFF_FORMATS}


@dataclass(frozen=True)
class GradescopeOptions:
    visibility: str = "after_due_date"
    stdout_visibility: str = "hidden"
    leaderboard: bool = False


def parse_formats(text: str) -> list[str]:
    formats = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"unknown format(s) {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(FORMATS)}")
    return formats


def render(fmt: str, result: Mapping[str, Any], *, rubrics: Mapping | None = None,
           gradescope: GradescopeOptions = GradescopeOptions()) -> str:
    """The text of one format. `rubrics` (instructor.md's guidance): the grader's own when None."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "md":
        from grader.reports.render import render_markdown
        return render_markdown(result)
    if fmt == "html":
        from grader.reports.render import render_html
        return render_html(result)
    if fmt == "instructor":
        from grader.reports.instructor import render_instructor_markdown
        if rubrics is None:
            from grader.scoring import load_rubrics
            rubrics = load_rubrics()
        return render_instructor_markdown(result, rubrics)
    if fmt == "gradescope":
        from grader.reports.gradescope import gradescope_results
        return json.dumps(gradescope_results(result, visibility=gradescope.visibility,
                                             stdout_visibility=gradescope.stdout_visibility,
                                             leaderboard=gradescope.leaderboard), indent=1) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
