"""Stage 2, score: a raw run + rubrics + overrides + submission time -> a `Result`.

The one scoring path: `pdl-grade grade` after running the checks, `pdl-grade grade --rescore`,
and the batch's re-score (a changed submission time or overrides) all call `score_run`. It runs
no code and never raises on bad data: an assignment without checks' results is an error worth 0
with the reason, everything else is scored.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Mapping

from grader.answers.reference_copies import reference_copies
from grader.common.locations import data_folder

from grader.grading.raw import RawRun
from grader.scoring import Overrides, Result, check_overrides, errored_assignment, score_assignment
from grader.checks.support import answers_hidden
from grader.scoring.check_results import (answer_data, environment_notes, measurements,
                                          run_integrity_notes, run_integrity_problems)
from grader.scoring.rubric import Rubric


def score_run(run: RawRun, rubrics: Mapping[str, Rubric], *,
              overrides: Overrides | Mapping[str, Any] | None = None,
              submitted_at: dt.datetime | str | None = None,
              submission: str | None = None,
              student: Mapping[str, str] | None = None) -> Result:
    """`submission`: how the result names the submission (default: the run's folder); a batch
    names the upload, not its unpacked copy. `student`: {key, name} from the LMS export."""
    from grader.integrity.scan import findings_for, split_by_kind
    graded = run.assignment_ids()
    overrides = check_overrides(overrides, rubrics, graded)
    entries, errors, stale = [], list(run.problems), []
    for entry in run.assignments:
        rubric = rubrics.get(entry.assignment)
        if rubric is None:
            errors.append(f"no rubric for {entry.assignment}: it was not scored")
            continue
        # Tampering withholds the points for review; notes are for the instructor only.
        holds, notes = split_by_kind(findings_for(run.findings, entry.assignment))
        integrity = [f.describe() for f in holds]
        integrity_notes = [f.describe() for f in notes]
        if not entry.ran:
            errors.append(entry.problem or f"the checks of {entry.assignment} did not run")
            scored = errored_assignment(rubric, entry.problem or "the checks did not run",
                                        overrides=overrides, integrity=integrity,
                                        integrity_notes=integrity_notes)
            entries.append(scored.to_dict())
            continue
        results = entry.check_results
        scored = score_assignment(rubric, results, overrides=overrides, submitted_at=submitted_at,
                                  integrity=integrity + run_integrity_problems(results),
                                  integrity_notes=integrity_notes + run_integrity_notes(results))
        document = scored.to_dict()
        found = measurements(results)
        if found and answers_hidden():
            # Before the work is handed in (pdl-grade check, Gradescope before the deadline):
            # what the grader measured of the code is what many answers are (a red team copied
            # the table of a report into an answer sheet: 7.5 of 15 on the untouched template).
            document["measurements_hidden"] = True
        elif found:
            document["measurements"] = found
        under = measurements(results, "conditions") if found else None
        if under:   # the settings measured under are no answer: said either way
            document["conditions"] = under
        document.update(answer_data(results))
        if environment_notes(results):
            document["environment_notes"] = environment_notes(results)
        copies = ([] if _is_the_reference(run.submission) else
                  reference_copies(entry.assignment, document.get("answers")))
        if copies:
            document["flags"] = list(document.get("flags") or []) + [
                {"check": "reference_solution", "text": text} for text in copies]
        stale += scored_without_an_answer(document)
        stale += released_without_a_hold(document, overrides)
        entries.append(document)
    return Result(submission if submission is not None else run.submission, entries,
                  hardware=run.hardware, started_at=run.started_at, duration_s=run.duration_s,
                  errors=errors, overrides=dict(overrides.given) or None,
                  override_problems=list(overrides.problems) + stale,
                  student=dict(student) if student else None)


def _is_the_reference(submission: str | None) -> bool:
    """The course's reference solution graded as itself (the README's first command): its
    answers are the reference's by definition."""
    try:
        return bool(submission) and Path(submission).resolve() == data_folder("reference").resolve()
    except (OSError, ValueError):
        return False


def scored_without_an_answer(assignment: Mapping[str, Any]) -> list[str]:
    """Written answers the overrides score although this upload has no answer to them: a score
    given to an earlier upload, kept after a re-upload without it (an instructor's day found
    0.4 still given for an answer deleted since). Applied, and said where overrides are."""
    values = ((assignment.get("answers") or {}).get("values")) or {}
    return [f"{item['id']}: the overrides score it {item.get('score'):g}, but this upload has no "
            f"answer to {item.get('answer')} (given to an earlier upload?)"
            for item in assignment.get("items") or []
            if item.get("kind") == "manual" and not item.get("pending") and item.get("answer")
            and item.get("score") and values.get(item["answer"]) in (None, "")]


def released_without_a_hold(assignment: Mapping[str, Any], overrides: Overrides) -> list[str]:
    """A release of an assignment that holds nothing: a typo in the student's key of a real
    hold (whose points then stay withheld) or a release kept from an earlier upload reads the
    same, so it is said where the overrides' problems are, not silently ignored."""
    assignment_id = str(assignment.get("id"))
    held = (assignment.get("integrity") or {}).get("problems")
    if overrides.release(assignment_id) is None or held:
        return []
    return [f"{assignment_id}.integrity: cleared, but nothing of {assignment_id} is held for "
            "review in this upload: the release changes nothing (meant for another student?)"]


def same_scores(recorded: Mapping[str, Any], again: Mapping[str, Any]) -> bool:
    """Whether two results give every assignment and item the same score and status: a batch
    re-scoring a run first checks that its raw files give back what was recorded (a batch
    killed between recording a run and publishing its files leaves another run's files)."""
    def scores(result: Mapping[str, Any]) -> list:
        return [(a.get("id"), a.get("score"), a.get("max_score"), a.get("status"),
                 [(i.get("id"), i.get("score"), i.get("status")) for i in a.get("items") or []])
                for a in result.get("assignments") or []]
    return scores(recorded) == scores(again)
