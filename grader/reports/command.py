"""`pdl-grade report RESULT_JSON --out DIR [--format md,html,gradescope]`: the student report
(DIR/report.md, DIR/report.html) and Gradescope's DIR/results.json from a graded result.json.

Reading and rendering run no student code; the result.json must be one of ours (its schema is
checked), so a stray or forged JSON file is refused rather than rendered.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FORMATS = {"md": "report.md", "html": "report.html", "gradescope": "results.json",
           "instructor": "instructor.md"}


def add_parsers(sub) -> None:
    report = sub.add_parser("report", help="write the student report / Gradescope results.json "
                                           "from a result.json")
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


def parse_formats(text: str) -> list[str]:
    formats = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"unknown format(s) {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(FORMATS)}")
    return formats


def write_reports(result: dict, out: Path, formats: list[str], *, visibility="after_due_date",
                  stdout_visibility="hidden", leaderboard=False, rubrics_dir=None) -> list[Path]:
    from grader.reports import gradescope_results, render_html, render_markdown
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        if fmt == "md":
            text = render_markdown(result)
        elif fmt == "html":
            text = render_html(result)
        elif fmt == "instructor":
            from grader.reports.instructor import render_instructor_markdown
            from grader.scoring import load_rubrics
            text = render_instructor_markdown(result, load_rubrics(rubrics_dir))
        else:
            text = json.dumps(gradescope_results(result, visibility=visibility,
                                                 stdout_visibility=stdout_visibility,
                                                 leaderboard=leaderboard), indent=1) + "\n"
        path = out / FORMATS[fmt]
        _write_atomically(path, text)
        written.append(path)
    return written


def run(options) -> int:
    from grader.scoring import read_result
    try:
        formats = parse_formats(options.format)
        result = read_result(options.result)
        written = write_reports(result, Path(options.out), formats,
                                visibility=options.visibility,
                                stdout_visibility=options.stdout_visibility,
                                leaderboard=options.leaderboard, rubrics_dir=options.rubrics)
    except json.JSONDecodeError as exc:
        print(f"pdl-grade report: {options.result} is not JSON: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"pdl-grade report: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def _write_atomically(path: Path, text: str) -> None:
    # A reader (Gradescope picks results.json up as soon as the script ends) never sees half.
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    """`python -m grader.reports.command RESULT_JSON --out DIR`: the same, without the CLI."""
    parser = argparse.ArgumentParser(prog="pdl-grade")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    options = parser.parse_args(["report", *(sys.argv[1:] if argv is None else argv)])
    return options.handler(options)


if __name__ == "__main__":
    sys.exit(main())
