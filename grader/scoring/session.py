"""Points for a pytest session of the checks (`pytest grader/`), from its own outcomes.

The same scoring as a grading (score_assignment through the rubrics), so the summary at the
end of `pytest grader/` and `pdl-grade check` agree. Only the assignments with a test in the
session are scored; their checks that were not selected (`-k`) show as not run.
"""
from __future__ import annotations

from typing import Any, Mapping

from grader.scoring.check_results import Case, report_of_cases
from grader.scoring.result import Result
from grader.scoring.rubric import load_rubrics
from grader.scoring.score import score_assignment


def score_session(outcomes: Mapping[str, tuple[str, ...]], *, rubrics_dir: str | None = None,
                  submission: str = "") -> dict[str, Any]:
    """`outcomes`: nodeid -> (check id, passed|failed|skipped|error, message[, the answer a
    failure found but could not read[, what the grader could not do on code that works]]);
    result.json's content for the assignments they belong to, in the rubrics' order."""
    cases = [Case(nodeid, check, check.split(".", 1)[0], outcome, message, *marks[:2])
             for nodeid, (check, outcome, message, *marks) in outcomes.items()]
    rubrics = load_rubrics(rubrics_dir)
    present = {case.assignment for case in cases}
    scored = [score_assignment(rubric, report_of_cases([c for c in cases if c.assignment == name]))
              .to_dict() for name, rubric in rubrics.items() if name in present]
    return Result(submission, scored).to_dict()
