"""`pdl-grade report RESULT_JSON --out DIR [--format md,html,gradescope,instructor]`: render a
graded result.json again: the student's report (report.md, report.html), Gradescope's
results.json, or the instructor's view (instructor.md).

Rendering runs no student code; the result.json must be one of ours (its schema is checked),
so a stray or forged JSON file is refused rather than rendered."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from grader.reports.formats import FORMATS


def add_parsers(sub) -> None:
    report = sub.add_parser("report", help="write the student report / Gradescope results.json "
                                           "from a result.json", description=__doc__)
    report.add_argument("result", metavar="RESULT_JSON", help="a result.json from `pdl-grade grade`")
    report.add_argument("--out", required=True, help="folder for the files written")
    report.add_argument("--format", default="md,html",
                        help="comma-separated: " + ", ".join(FORMATS) + " (default: md,html); "
                             "files: " + ", ".join(FORMATS.values()))
    report.add_argument("--visibility", default="after_due_date",
                        help="Gradescope: when students see the results (hidden, after_due_date, "
                             "after_published, visible)")
    report.add_argument("--stdout-visibility", default="hidden",
                        help="Gradescope: when students see the autograder's stdout")
    report.add_argument("--rubrics", default=None,
                        help="instructor: rubrics folder for the written answers' guidance "
                             "(default: the grader's rubrics/)")
    report.add_argument("--leaderboard", action="store_true",
                        help="Gradescope: add the HW3 step time to the leaderboard")
    report.set_defaults(handler=run)


def run(options) -> int:
    from grader.grading import write_rendered
    from grader.reports.formats import GradescopeOptions, parse_formats
    from grader.scoring import load_rubrics, read_result
    try:
        formats = parse_formats(options.format)
        result = read_result(options.result)
        rubrics = load_rubrics(options.rubrics) if "instructor" in formats else None
        written = write_rendered(result, Path(options.out), formats, rubrics=rubrics,
                                 gradescope=GradescopeOptions(options.visibility,
                                                              options.stdout_visibility,
                                                              options.leaderboard))
    except json.JSONDecodeError as exc:
        print(f"pdl-grade report: {options.result} is not JSON: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"pdl-grade report: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0
