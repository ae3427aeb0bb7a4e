"""`pdl-grade grade SUBMISSION --out DIR`: run the checks, score them through the rubrics,
write DIR/result.json (and the pytest-json-report files it came from).

Each assignment's checks run in their own pytest process, rooted in the grader's own files
(no conftest or plugin of the submission is ever loaded); a crash or hang of one assignment
costs that assignment only. The exit status is 0 whenever grading itself worked, whatever
the score.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from grader.pytest_plugin import REPO_ROOT, real_gpus

CHECKS_DIR = Path(__file__).resolve().parent / "checks"
ASSIGNMENTS = ("practical4", "practical5", "practical6", "practical10", "hw3")
# Generous: an assignment runs several scripts; each run has its own, shorter, timeout.
ASSIGNMENT_TIMEOUT_S = 1200


def add_parsers(sub) -> None:
    grade = sub.add_parser("grade", help="grade one submission and write result.json")
    grade.add_argument("submission", help="the submission folder (the layout of student_template/)")
    grade.add_argument("--out", required=True, help="folder for result.json and the raw reports")
    grade.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                       help="grade only these (repeatable); default: all")
    grade.add_argument("--rubrics", default=None, help="folder of rubric YAML files")
    grade.add_argument("--overrides", default=None,
                       help="YAML/JSON of manual points: {item_id: {points: x, comment: ...}}")
    grade.add_argument("--submitted-at", default=None,
                       help="submission time (ISO 8601 with a zone) for late penalties")
    grade.add_argument("--check-timeout", type=float, default=180.0,
                       help="seconds one run of student code may take")
    grade.add_argument("--rescore", action="store_true",
                       help="re-score the reports already in --out (after overrides) without "
                            "running any code")
    grade.set_defaults(handler=run)


def pytest_command(assignment: str, submission: Path, report: Path, timeout: float,
                   rubrics_dir=None) -> list[str]:
    rubrics = [f"--rubrics={Path(rubrics_dir).resolve()}"] if rubrics_dir else []
    return [sys.executable, "-m", "pytest", str(CHECKS_DIR / f"test_{assignment}.py"),
            f"--submission={submission}", f"--check-timeout={timeout}", *rubrics,
            "--json-report", f"--json-report-file={report}", "--json-report-omit=collectors",
            "-p", "grader.pytest_plugin", "-p", "pytest_jsonreport.plugin",
            "-p", "no:cacheprovider", "-q", "--no-header", "-rN",
            f"--rootdir={CHECKS_DIR}", "-c", str(CHECKS_DIR / "pytest.ini")]


def run_checks(assignment: str, submission: Path, out: Path, timeout: float,
               rubrics_dir=None) -> tuple[dict | None, str | None]:
    report = out / f"pytest-{assignment}.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="pdl-grade-") as cwd:
        try:
            done = subprocess.run(pytest_command(assignment, submission, report, timeout,
                                                 rubrics_dir),
                                  cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=ASSIGNMENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, f"grading {assignment} took longer than {ASSIGNMENT_TIMEOUT_S} s and was stopped"
    (out / f"pytest-{assignment}.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    if not report.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        return None, f"the checks of {assignment} could not run (pytest exit {done.returncode}):\n{tail}"
    return json.loads(report.read_text(encoding="utf-8")), None


def load_overrides(path: str | None) -> dict:
    if not path:
        return {}
    import yaml
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"pdl-grade: {path} must map item ids to {{points: x, comment: ...}}")
    return data


def grade(submission: Path, out: Path, assignments, *, rubrics_dir=None, overrides=None,
          submitted_at=None, check_timeout=180.0, rescore=False) -> dict:
    from grader.integrity.scan import findings_for, split_by_kind
    from grader.scoring import (build_result, errored_assignment, hardware_info, load_rubrics,
                                score_assignment, write_result)
    started = time.monotonic()
    out = Path(out).resolve()  # pytest runs in a scratch folder: relative paths would land there
    submission = Path(submission).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rubrics = load_rubrics(rubrics_dir)
    scored, errors, measurements, answer_data = [], [], {}, {}
    errors += _overrides_for_no_assignment(overrides, assignments)
    findings = source_findings(submission, out, rescore)
    gpus = real_gpus()
    try:
        for assignment in assignments:
            rubric = rubrics[assignment]
            if rescore:
                path = out / f"pytest-{assignment}.json"
                report, problem = (json.loads(path.read_text()), None) if path.exists() else (
                    None, f"no earlier report {path.name} to re-score")
            else:
                report, problem = run_checks(assignment, submission, out, check_timeout,
                                             rubrics_dir)
            # Tampering withholds the points for review; notes are for the instructor only.
            holds, notes = split_by_kind(findings_for(findings, assignment))
            integrity = [f.describe() for f in holds]
            integrity_notes = [f.describe() for f in notes]
            if report is None:
                errors.append(problem)
                scored.append(errored_assignment(rubric, problem, overrides=overrides,
                                                 integrity=integrity,
                                                 integrity_notes=integrity_notes))
            else:
                integrity += [str(p) for p in report.get("integrity") or []]
                integrity_notes += [str(n) for n in report.get("integrity_notes") or []]
                scored.append(score_assignment(rubric, report, overrides=overrides,
                                               submitted_at=submitted_at, integrity=integrity,
                                               integrity_notes=integrity_notes))
                measurements[assignment] = collect_measurements(report)
                answer_data[assignment] = collect_answer_data(report)
    finally:
        # Written even when something above failed: what was graded is never lost.
        needed = max((rubrics[a].gpus for a in assignments), default=0)
        hardware = (hardware_info("real", gpus, _gpu_names(gpus)) if gpus >= needed and gpus
                    else hardware_info("virtual", needed))
        result = build_result(str(submission), scored, hardware=hardware,
                              duration_s=round(time.monotonic() - started, 2), errors=errors)
        if overrides:
            result["overrides"] = dict(overrides)  # what the scores were given with
        for entry in result["assignments"]:
            if measurements.get(entry["id"]):
                entry["measurements"] = measurements[entry["id"]]
            entry.update(answer_data.get(entry["id"], {}))
        write_result(out / "result.json", result)
        _write_student_reports(result, out)
        _write_instructor_report(result, out, rubrics)
    return result


def source_findings(submission: Path, out: Path, rescore: bool) -> list:
    """The static integrity scan of the submission's source (grader/integrity/scan.py), kept in
    DIR/integrity.json so that a re-score uses the same findings without the submission."""
    from grader.integrity.scan import Finding, scan_submission
    saved = out / "integrity.json"
    if rescore and saved.exists():
        try:
            return [Finding.from_dict(f)
                    for f in json.loads(saved.read_text(encoding="utf-8"))["findings"]]
        except (ValueError, KeyError, TypeError):
            pass  # unreadable: scan again
    findings = scan_submission(submission) if submission.is_dir() else []
    saved.write_text(json.dumps({"findings": [f.to_dict() for f in findings]}, indent=1),
                     encoding="utf-8")
    return findings


def _overrides_for_no_assignment(overrides, assignments) -> list[str]:
    prefixes = tuple(f"{a}." for a in ASSIGNMENTS)
    graded = tuple(f"{a}." for a in assignments)
    return [f"override for unknown item '{key}' ignored" for key in (overrides or {})
            if not str(key).startswith(prefixes)] + \
           [f"override for '{key}' ignored: {str(key).split('.')[0]} is not graded in this run"
            for key in (overrides or {}) if str(key).startswith(prefixes)
            and not str(key).startswith(graded)]


def _write_instructor_report(result: dict, out: Path, rubrics: dict) -> None:
    """instructor.md: manual items with the rubric's guidance beside the student's text, flags,
    and an overrides skeleton. Never handed to students (the guidance is the answer key)."""
    from grader.reports.instructor import render_instructor_markdown
    try:
        (out / "instructor.md").write_text(render_instructor_markdown(result, rubrics),
                                           encoding="utf-8")
    except Exception as error:
        print(f"pdl-grade: the instructor view for {out} could not be written: {error}",
              file=sys.stderr)


def _write_student_reports(result: dict, out: Path) -> None:
    """report.md and report.html beside result.json (batch gradings get them too)."""
    from grader.reports.command import write_reports
    try:
        write_reports(result, out, ["md", "html"])
    except Exception as error:  # a report problem must never cost the result already written
        print(f"pdl-grade: the report for {out} could not be written: {error}", file=sys.stderr)


def collect_measurements(report: dict, metadata_key: str = "measured") -> dict:
    """The checks' `measured` (or `reported`) values, merged (nested dicts from several cases
    combine)."""
    merged: dict = {}

    def merge(into: dict, values: dict) -> None:
        for key, value in values.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    for test in report.get("tests", []):
        values = (test.get("metadata") or {}).get(metadata_key)
        if isinstance(values, dict):
            merge(merged, values)
    return merged


def collect_answer_data(report: dict) -> dict:
    """What result.json keeps of the student's answers: `answers` (as read: values, where each
    came from, what is missing, problems), `reported` (the answers the checks compared, keyed
    like `measurements`) and `flags` (for the instructor, no points attached)."""
    found: dict = {}
    for test in report.get("tests", []):
        metadata = test.get("metadata") or {}
        if isinstance(metadata.get("answers"), dict) and "answers" not in found:
            found["answers"] = metadata["answers"]
        for text in metadata.get("flags") or []:
            found.setdefault("flags", []).append({"check": metadata.get("check"), "text": str(text)})
    reported = collect_measurements(report, "reported")
    if reported:
        found["reported"] = reported
    return found


def _gpu_names(count: int) -> list[str]:
    try:
        import torch
        return [torch.cuda.get_device_name(i) for i in range(count)]
    except Exception:
        return []


def run(options) -> int:
    submission = Path(options.submission).resolve()
    if not submission.is_dir():
        print(f"pdl-grade: {submission} is not a folder", file=sys.stderr)
        return 2
    result = grade(submission, Path(options.out), options.assignment or list(ASSIGNMENTS),
                   rubrics_dir=options.rubrics, overrides=load_overrides(options.overrides),
                   submitted_at=options.submitted_at, check_timeout=options.check_timeout,
                   rescore=options.rescore)
    for assignment in result["assignments"]:
        print(f"{assignment['id']:<12} {assignment['score']:>6g} / {assignment['max_score']:g}"
              f"  {assignment.get('status', '')}")
    print(f"{'total':<12} {result['score']:>6g} / {result['max_score']:g}   "
          f"-> {Path(options.out) / 'result.json'}")
    return 0



