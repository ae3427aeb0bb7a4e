"""Whether a result.json is of an upload that was never graded, and why.

A batch records an upload it could not grade (nothing the assignments expect found, two
versions of one assignment, an archive it cannot unpack: "needs a person"; an upload refused
outright: "rejected") as a result whose every assignment is an error, with no hardware and no
run. Rendered as a grading, it read "Total: 0 / 15 ... graded on unknown" (audit F5): a grade
nobody gave, for a grading that never ran. Every format says instead that it was not graded,
with the result's own reason, and shows no total.

The batch marks such a result with `not_graded: {kind, reason}` (RESULT_SCHEMA.md); results
written before that mark are recognised by the message the batch has always put first in
their `errors` ("needs a person: ..." or "submission rejected: ..."), and only where nothing
was run (no hardware, every assignment an error).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

NEEDS_PERSON, REJECTED = "needs_person", "rejected"
# The prefixes pipeline._record_rejection writes before the reason, by kind.
PREFIXES = {NEEDS_PERSON: "needs a person: ", REJECTED: "submission rejected: "}


@dataclass(frozen=True)
class NotGraded:
    kind: str         # NEEDS_PERSON: no grade until someone looks; REJECTED: counts as 0
    reason: str       # the result's own, as the batch wrote it

    @property
    def counts_as_zero(self) -> bool:
        """grades.csv and Moodle carry a rejected upload as 0, and nothing for one a person
        must look at (grader/batch/grades_csv.py): the reports say the same."""
        return self.kind == REJECTED


def not_graded_mark(kind: str, reason: str) -> dict[str, str]:
    """The `not_graded` field of a result.json."""
    if kind not in PREFIXES:
        raise ValueError(f"not_graded kind must be one of {', '.join(PREFIXES)}, got {kind!r}")
    return {"kind": kind, "reason": str(reason)}


def not_graded(result: Mapping[str, Any]) -> NotGraded | None:
    """The upload's reason for not being graded, or None for a result of a grading."""
    mark = result.get("not_graded")
    if isinstance(mark, Mapping) and mark.get("kind") in PREFIXES:
        return NotGraded(str(mark["kind"]), str(mark.get("reason") or ""))
    errors = result.get("errors") or []
    assignments = result.get("assignments") or []
    if result.get("hardware") or not errors or not all(
            isinstance(a, Mapping) and a.get("status") == "error" for a in assignments):
        return None
    first = str(errors[0])
    for kind, prefix in PREFIXES.items():
        if first.startswith(prefix):
            return NotGraded(kind, first[len(prefix):])
    return None


def grading_problem_said(assignment: Mapping[str, Any], *, selected_only: bool = False,
                         name_checks: bool = True) -> str | None:
    """"not graded: a grading problem (2 check(s) did not run: ...) — run it again" for an
    assignment the grader itself failed to grade (grader/scoring/score.py `grading_problems`),
    said where its score would be: that 0 is no grade. None where its score is one.
    `selected_only` (`pytest grader/ -k ...`): a check with no case was not selected, so only
    checks whose cases errored count. `name_checks`: list the checks' ids."""
    from grader.scoring.score import checks_not_run, grading_problems
    problems = grading_problems(assignment)
    if not problems:
        return None
    checks = checks_not_run(assignment)
    if selected_only:
        ran = {str(check.get("id")) for item in assignment.get("items") or []
               for check in item.get("checks") or []
               if sum(check.get(k) or 0 for k in ("passed", "failed", "skipped", "errors"))}
        checks = [check for check in checks if check in ran]
        if not checks:
            return None
    if checks:
        what = f"{len(checks)} check(s) did not run" + (f": {', '.join(checks)}" if name_checks
                                                         else "")
    else:
        what = " ".join(problems[0].split())
    return f"not graded: a grading problem ({what}) \u2014 run it again"
