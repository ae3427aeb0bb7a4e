"""`pdl-grade grade SUBMISSION --out DIR`: grade one submission (grader/grading): run its checks,
score them through the rubrics, write DIR/result.json with the student's report and the
instructor's view beside it. Exit status: 0 when grading itself worked, whatever the score; 3
when it did not for an assignment (a grading problem: a check that did not run or errored; its
result.json is written all the same and names it under `grading_problems`: grade it again); 2
when the folder or an option is wrong (nothing graded); 1 on a crash."""
from __future__ import annotations

import sys
from pathlib import Path

from grader.common.exit_codes import GRADING_PROBLEM
from grader.common.run_memory import set_run_memory
from grader.reports.not_graded import grading_problem_said, not_graded
from grader.reports.pending import pending_what
from grader.scoring.score import grading_problems

NO_TOTAL = "\u2014"
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S


def add_parsers(sub) -> None:
    grade = sub.add_parser("grade", help="grade one submission and write result.json",
                           description=__doc__)
    grade.add_argument("submission", help="the submission folder (the layout of student_template/)")
    grade.add_argument("--out", required=True, help="folder for result.json and the raw results")
    grade.add_argument("--assignment", action="append", metavar="ID",
                       help="grade only these (repeatable; the ids of rubrics/); default: all")
    grade.add_argument("--rubrics", default=None, help="folder of rubric YAML files")
    grade.add_argument("--overrides", default=None,
                       help="YAML/JSON of the instructor's points: {item_id: {points: x, "
                            "comment: ...}, <assignment>.integrity: {cleared: true}}; or a "
                            "batch's class file ({student key: {...}}), of which the entry of "
                            "the student of --out's result.json is taken")
    grade.add_argument("--submitted-at", default=None,
                       help="submission time (ISO 8601 with a zone) for late penalties")
    grade.add_argument("--check-timeout", type=float, default=DEFAULT_CHECK_TIMEOUT_S,
                       help="seconds one run of student code may take")
    grade.add_argument("--memory", metavar="SIZE", default=None,
                       help="memory one run of student code may use, e.g. 4G or 512M "
                            "(default 6G); past it the run is stopped and said so")
    grade.add_argument("--rescore", action="store_true",
                       help="re-score what a grading left in --out (after overrides) without "
                            "running any code")
    grade.set_defaults(handler=run)


def chosen_assignments(chosen: list[str] | None, rubrics_dir: str | None) -> list[str]:
    """The assignments asked for, checked against the rubrics (the one list of assignments)."""
    from grader.scoring import assignment_ids
    known = assignment_ids(rubrics_dir)
    unknown = [a for a in chosen or [] if a not in known]
    if unknown:
        raise ValueError(f"no rubric for {', '.join(unknown)}; the assignments are "
                         f"{', '.join(known)}")
    return list(chosen or known)


def print_overrides_problems(problems: list[str], prefix: str = "") -> None:
    for problem in problems:
        print(f"pdl-grade: {prefix}{problem}", file=sys.stderr)


def _student_entry(class_file: dict, path: str, out: Path) -> dict:
    """This student's entry of a batch's class overrides file: the student is the one of the
    batch's result.json in --out (DIR/submissions/<key>/). Every entry of the class had been
    ignored (each a "no assignment" problem, the exit still 0, the score lowered) and recorded,
    comments and all, in this one student's result.json."""
    from grader.scoring import OverridesError, class_entry
    key = _batch_key(out)
    if key is None:
        raise OverridesError(
            f"{path} is a class's overrides file ({len(class_file)} students, keyed by "
            f"grades.csv's Key column), and {out / 'result.json'} names no batch student to "
            "take the entry of: give a file of this submission's own entries ({item id: "
            "{points: x, comment: ...}}), or re-score DIR/submissions/<key>/ of a batch")
    entry = class_entry(class_file, key)
    print(f"pdl-grade: {path} is a class's overrides file: "
          + (f"its entry for {key} is applied ({len(entry)} item(s)); the other students' "
             "are not read" if entry else f"it has no entry for {key}: scored without overrides"),
          file=sys.stderr)
    return entry


def _batch_key(out: Path) -> str | None:
    import json
    try:
        student = json.loads((out / "result.json").read_text(encoding="utf-8")).get("student")
    except (OSError, ValueError, AttributeError):
        return None
    key = student.get("key") if isinstance(student, dict) else None
    return key if isinstance(key, str) and key else None


def run(options) -> int:
    from grader.grading import grade_submission, rescore_submission
    from grader.scoring import (OverridesError, RubricError, assignment_ids, is_class_overrides,
                                read_overrides_file)
    submission = Path(options.submission).resolve()
    if not submission.is_dir() and not options.rescore:
        print(f"pdl-grade: {submission} is not a folder", file=sys.stderr)
        return 2
    try:
        assignments = chosen_assignments(options.assignment, options.rubrics)
        overrides = read_overrides_file(options.overrides) if options.overrides else None
        if overrides and is_class_overrides(overrides, assignment_ids(options.rubrics)):
            overrides = _student_entry(overrides, options.overrides, Path(options.out))
        set_run_memory(options.memory)
    except (ValueError, OverridesError, RubricError) as problem:
        print(f"pdl-grade: {problem}", file=sys.stderr)
        return 2
    common = dict(rubrics_dir=options.rubrics, overrides=overrides,
                  submitted_at=options.submitted_at)
    if options.rescore:
        result = rescore_submission(Path(options.out), options.assignment, submission=submission,
                                    **common)
    else:
        from grader.grading.readable import UnreadableSubmission
        try:
            result = grade_submission(submission, Path(options.out), assignments,
                                      check_timeout=options.check_timeout, **common)
        except UnreadableSubmission as problem:   # the instructor's to open: no grade, no zero
            print(f"pdl-grade: {problem}", file=sys.stderr)
            return 2
    print_overrides_problems(result.get("override_problems") or [])
    # A grading problem is no grade: said where the score would be, never "0 / 15" (result.json
    # keeps the score, its `grading_problems` saying why it is none).
    unmarked = not_graded(result) is None
    problems = {}
    for assignment in result["assignments"]:
        said = grading_problem_said(assignment, name_checks=False) if unmarked else None
        if said:
            problems[assignment["id"]] = said
            print(f"{assignment['id']:<12} {said}")
            for problem in grading_problems(assignment):
                print(f"{'':<12}   - {problem}")
            continue
        integrity = assignment.get("integrity") or {}
        # A held assignment's 0 is no verdict: say so where the score is read (report.md says why).
        held = (f", held for review: the checks gave {integrity.get('withheld_points', 0):g}, "
                "withheld until the course staff look (report.md says why)"
                if integrity.get("withheld") else "")
        print(f"{assignment['id']:<12} {assignment['score']:>6g} / {assignment['max_score']:g}"
              f"  {assignment.get('status', '')}{held}")
    what = pending_what(result)
    # Not part of the score yet: "(4.5 for a person)" beside 9.45 had read as included.
    waiting = (f"  ({what.rstrip(',')} of the {result['max_score']:g} points are still for a "
               "person to grade)" if what else "")
    if problems:
        # Said last, and in the exit status: a script that grades many reads it there.
        print(f"{'total':<12} {NO_TOTAL:>6} / {result['max_score']:g}  (no total: a grading "
              f"problem in {', '.join(problems)} \u2014 run it again; exit status "
              f"{GRADING_PROBLEM})   -> {Path(options.out) / 'result.json'}")
        return GRADING_PROBLEM
    print(f"{'total':<12} {result['score']:>6g} / {result['max_score']:g}{waiting}   "
          f"-> {Path(options.out) / 'result.json'}")
    return 0
