"""Map a pytest-json-report through a rubric to per-item and per-assignment scores.

Rules (documented for students and instructors in RESULT_SCHEMA.md):
- a check with no test in the report is an ``error`` ("check X did not run") worth 0,
  its points stay in the maximum and the assignment lists the problem;
- a check whose cases were all skipped is ``skipped``: 0 points and, with
  ``when_skipped: exclude`` (the default), its points leave the maximum; the item says so;
- ``partial: all`` gives the points only when every counted case passed,
  ``partial: proportional`` gives points x passed / counted cases;
- points are rounded to 2 decimals (half up) once, where they are added up: a check's, an
  item's (its checks' exact points), the assignment's (its items' exact points; the late
  penalty a share of that exact total), each from exact values, as a TA adds the fractions;
  the items as shown may then add up to a hundredth more or less than the total shown;
- cases with outcome ``error`` (a fixture of the grader crashed: the grader's own harness
  failed, never the student's code, whose failures a check turns into its verdict, ``failed``,
  grader/pytest_plugin.py) score 0 and carry the error text, and their check is ``error``: no
  verdict, a grading problem (below), however many of its other cases ran;
- manual items score what the instructor's overrides say, else 0 and ``pending``: their
  points are counted in the maximum and in ``pending_points`` until a person grades them;
- a case that failed because an answer it checks was found but could not be read (written
  in words, a picture, a format the grader does not read; the check marks the case with the
  answer's id, ``Case.unread_answer``, never by its message's words) is no verdict: its
  points wait for a person as a written answer's do (the check's and the item's
  ``pending_points``, status ``pending`` where nothing else failed, counted in the
  assignment's ``pending_points`` and listed in ``pending_unread``), never a published 0; an
  override of the item is the person's grade. A missing answer, and an answer read and wrong,
  still fail. So is a case the grader could not run on code that itself works (HW3: the probe
  could not build the model the way the student's script, which ran to its end, builds it;
  ``Case.graded_by_hand``): its points wait the same way, listed in ``pending_by_hand``;
- overrides are checked by grader/scoring/overrides.py; one that cannot apply is ignored
  there (a problem for the instructor, never an error of the student's grading);
- a late submission gets its own negative line item ``<assignment>.late_penalty``;
- integrity problems (code that could deceive the grader, observations the grader's
  instrumentation did not write; grader/integrity) withhold every automatic item's points
  (status ``withheld``, the computed score kept in ``withheld_score``) until the instructor
  clears them with the override ``<assignment>.integrity: {cleared: true, comment: ...}``;
- a grading problem is no grade: where a check worth points did not run or errored in any of
  its cases (its item not set by the instructor; the problem names the check and the cases), the checks' pytest session went wrong (a module that did
  not import, a bad exit code), a check ran that the rubric does not know, or no check could
  run at all (`errored_assignment`), or the report was written before the checks marked
  failures that now wait for a person (HW3's model not built while the script ran, 31bc78d:
  its 0s cannot be scored again), the assignment's ``grading_problems`` lists why. Its
  score is kept (what did run), but it is not the student's grade: every consumer reads
  `grading_problems` (the batch leaves its cells empty and grades the upload again, the CLI
  says "not graded"). The house rule: bad input gets a zero for what it affects; a grading
  problem is no grade.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Mapping

from grader.scoring import late as _late
from grader.scoring.check_results import (ERROR, FAILED, PASSED, SKIPPED, Case, cases_by_check,
                                          session_problems, unmarked_cases)
from grader.scoring.overrides import ItemOverride, Overrides, Release, check_overrides
from grader.scoring.rubric import CheckRule, Item, Rubric

# Points are shown and stored to two decimals (enough for 42-case proportional checks), rounded
# once where they are added up: an item is its checks' exact points rounded, the assignment its
# items' exact points rounded, as a TA adds the fractions (2 x 1/3 of a point is 0.67, where
# rounding each check first gave 0.66: a TA's audit 28). The exact values are kept beside the
# rounded ones while scoring (`exact_score`, `exact_pending`), never stored.
_CENT = Decimal("0.01")
_EXACT_FIELDS = ("exact_score", "exact_pending")
# Distinct failure messages listed per check before the rest are summarised.
_MAX_MESSAGES_PER_CHECK = 20
_IN_FULL_PER_SHAPE = 2

STATUS_PASSED, STATUS_FAILED, STATUS_PARTIAL = "passed", "failed", "partial"
STATUS_ERROR, STATUS_SKIPPED, STATUS_MANUAL, STATUS_PENALTY = "error", "skipped", "manual", "penalty"
STATUS_WITHHELD = "withheld"
# An automatic check or item whose points wait for a person: an answer it checks was found but
# could not be read.
STATUS_PENDING = "pending"


@dataclass
class CaseResult:
    case: str        # parameter label such as "[2-6]", or the test name
    outcome: str     # failed | error | skipped (passing cases are only counted)
    message: str


@dataclass
class CheckScore:
    id: str
    points: float            # what the rubric gives this check
    max_score: float         # points still counted after skipped cases were excluded
    score: float
    status: str              # passed | failed | partial | error | skipped
    partial: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    feedback: str = ""
    unread: int = 0              # of `failed`: cases whose points wait for a person (below)
    by_hand: int = 0             # of `unread`: cases the grader could not run on working code
    pending_points: float = 0.0  # the points of those cases, waiting for a person
    # `score` and `pending_points` before rounding (points x passed / counted): what the item adds.
    exact_score: float = 0.0
    exact_pending: float = 0.0


@dataclass
class ItemScore:
    id: str
    title: str
    score: float
    max_score: float
    status: str              # passed | failed | partial | error | skipped | manual | penalty
    feedback: str = ""
    kind: str = "auto"
    points: float = 0.0      # the rubric's points, before skipped checks were excluded
    checks: list[CheckScore] = field(default_factory=list)
    pending: bool = False    # manual item not graded by the instructor yet
    overridden: bool = False
    answer: str = ""         # manual items: the answer id whose text is graded
    withheld_score: float | None = None  # the checks' score while withheld for review
    # Automatic items: points of checks whose answer was found but not read, for a person.
    pending_points: float = 0.0
    # `score` and `pending_points` before rounding: what the assignment adds up.
    exact_score: float = 0.0
    exact_pending: float = 0.0


@dataclass
class AssignmentScore:
    id: str
    title: str
    rubric_version: str
    score: float
    max_score: float
    rubric_max_score: float  # the rubric's total; differs from max_score by excluded points
    excluded_points: float
    status: str              # graded | incomplete | error
    items: list[ItemScore] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pending_manual: list[str] = field(default_factory=list)
    # The points no person has graded yet: manual items', and automatic items' points that
    # wait because an answer was found but not read (listed in pending_unread).
    pending_points: float = 0.0
    pending_unread: list[str] = field(default_factory=list)
    # Automatic items whose points wait because the grader could not run their checks on code
    # that itself works (a case's `graded_by_hand`): a person grades them by hand.
    pending_by_hand: list[str] = field(default_factory=list)
    late: dict[str, Any] | None = None
    # {problems: [...], withheld: bool, withheld_points, cleared: bool, comment} when the
    # integrity checks found something; None when they found nothing
    integrity: dict[str, Any] | None = None
    # Why the score is no grade (a check that did not run or errored, the checks' session
    # going wrong): empty when it is one. See the module docstring and `grading_problems`.
    grading_problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """result.json's assignment: the rounded points only (the exact ones were added up)."""
        stored = asdict(self)
        for item in stored["items"]:
            for entry in (item, *item["checks"]):
                for name in _EXACT_FIELDS:
                    entry.pop(name, None)
        return stored


def score_assignment(rubric: Rubric, report: Mapping[str, Any],
                     overrides: Overrides | Mapping[str, Any] | None = None,
                     submitted_at: _dt.datetime | str | None = None,
                     integrity: list[str] | None = None,
                     integrity_notes: list[str] | None = None) -> AssignmentScore:
    """Score one assignment from its checks' results (a pytest-json-report dict); never
    raises on bad report data.

    ``overrides``: the instructor's (grader/scoring/overrides.py); a plain mapping is checked
    here and entries that cannot apply are ignored.
    ``submitted_at``: timezone-aware datetime or ISO string; enables the late penalty.
    ``integrity``: problems that withhold the automatic points for review (see above);
    ``integrity_notes``: unusual but honest things, shown to the instructor, never held.
    """
    session = list(session_problems(report))
    errors: list[str] = list(session)
    grouped = cases_by_check(report)
    overrides = check_overrides(overrides, {rubric.assignment: rubric})

    items = []
    for item in rubric.items:
        scored = _score_manual(item) if item.is_manual else _score_auto(item, grouped)
        _apply_override(scored, item, overrides.item(item.id))
        items.append(scored)
        errors.extend(f"{item.id}: check '{c.id}' did not run" for c in scored.checks
                      if c.status == STATUS_ERROR and not (c.passed + c.failed + c.skipped + c.errors))
    unknown = _checks_not_in_rubric(rubric, grouped)
    errors.extend(unknown)
    stale = _scored_before_marks(items, report)
    errors.extend(stale)

    release = overrides.release(rubric.assignment)
    review = _integrity_review(items, integrity or [], release, integrity_notes) \
        if integrity or integrity_notes else None
    result = _assemble(rubric, items, errors)
    result.integrity = review
    result.grading_problems = session + _checks_that_did_not_run(items) + unknown + stale
    if submitted_at is not None:
        _apply_late_penalty(result, rubric, submitted_at)
    return result


def errored_assignment(rubric: Rubric, message: str,
                       overrides: Overrides | Mapping[str, Any] | None = None,
                       integrity: list[str] | None = None,
                       integrity_notes: list[str] | None = None,
                       grading_problem: bool = True) -> AssignmentScore:
    """The result for an assignment whose checks could not run at all (pytest crashed,
    timed out, no report): every automatic item is an error carrying ``message``, manual
    items keep the instructor's overrides, and the maximum stays the rubric's total.
    `grading_problem`: False for an upload the batch refused (a bad archive: its 0 is the
    student's; grader/batch/pipeline.py `_record_rejection`), else the message is the
    assignment's grading problem (no grade)."""
    overrides = check_overrides(overrides, {rubric.assignment: rubric})
    items = []
    for item in rubric.items:
        if item.is_manual:
            scored = _score_manual(item)
            _apply_override(scored, item, overrides.item(item.id))
        else:
            scored = ItemScore(id=item.id, title=item.title, score=0.0, max_score=item.points,
                               status=STATUS_ERROR, points=item.points,
                               feedback=f"Not graded: {message}")
        items.append(scored)
    result = _assemble(rubric, items, [message])
    result.status = "error"
    result.grading_problems = [message] if grading_problem else []
    if integrity or integrity_notes:  # nothing automatic was scored to withhold: shown only
        result.integrity = {"problems": list(integrity or []),
                            "notes": list(integrity_notes or []), "withheld": False,
                            "withheld_points": 0.0, "cleared": False, "comment": ""}
    return result


# --- grading problems: no grade ---------------------------------------------------------

# How `_apply_late_penalty` says an unreadable submission time: the score is whole, only the
# penalty is missing, so it is no grading problem (results stored before `grading_problems`).
_LATE_NOT_APPLIED = "late penalty not applied: "
_PROBLEM_CHARS = 300


def _checks_that_did_not_run(items: list[ItemScore]) -> list[str]:
    """A check worth points that did not run, or any of whose cases errored (a fixture of the
    grader crashed), in an automatic item the instructor did not score: its score is no
    verdict. A check that errored in some cases only names them ("errored in 2 of 31 case(s)
    ([3gpus-depth5], [5gpus-depth6])"): its other cases' points are no grade either."""
    found = []
    for item in items:
        if item.kind != "auto" or item.overridden:
            continue   # an instructor's score of the item is a person's grade
        for check in item.checks:
            if check.status != STATUS_ERROR or check.points <= 0:
                continue
            errored = [c for c in check.cases if c.outcome == ERROR]
            if not errored:
                found.append(f"{item.id}: check '{check.id}' did not run")
                continue
            ran = check.passed + check.failed + check.skipped + check.errors
            where = "" if len(errored) == ran else \
                f" in {len(errored)} of {ran} case(s) ({_some([c.case for c in errored])})"
            found.append(f"{item.id}: check '{check.id}' errored{where}: "
                         + " ".join(errored[0].message.split())[:_PROBLEM_CHARS])
    return found


def _scored_before_marks(items: list[ItemScore], report: Mapping[str, Any]) -> list[str]:
    """Results written before the checks marked the failures a person grades (HW3's model the
    probe could not build while the script ran, 31bc78d; check_results.unmarked_cases), scored
    again: those failures scored 0 then, and may wait for a person now, which the report
    cannot tell (an answer missing is still a 0). No grade: the submission is graded again. An
    item the instructor scored is a person's grade."""
    unmarked = unmarked_cases(dict(report))
    stale = {item.id: sum(len(unmarked[c.id]) for c in item.checks if c.points > 0
                          and c.id in unmarked)
             for item in items if item.kind == "auto" and not item.overridden}
    stale = {item: cases for item, cases in stale.items() if cases}
    if not stale:
        return []
    return [f"results written before 31bc78d: the grader could not build the model while the "
            f"script ran to its end, and {sum(stale.values())} failed case(s) of "
            f"{', '.join(stale)} scored 0 then may wait for a person now, which rescoring "
            "cannot tell: grade the submission again (pdl-grade grade, not --rescore)"]


def grading_problems(assignment: Mapping[str, Any]) -> list[str]:
    """Why an assignment of a result.json has no grade (its score kept, but not the student's):
    empty where its score is a grade. The one reader of the rule: a result written before the
    `grading_problems` field (a batch's gradebook of an earlier version) is read by its
    `status` and `errors` as it was scored then (an `incomplete` status from an unreadable
    submission time alone is a grade)."""
    stored = assignment.get("grading_problems")
    if isinstance(stored, list):
        return [str(problem) for problem in stored]
    status, errors = assignment.get("status"), [str(e) for e in assignment.get("errors") or []]
    if status == "error":
        return errors or ["its checks did not run"]
    if status != "incomplete":
        return []
    found = [e for e in errors if not e.startswith(_LATE_NOT_APPLIED)]
    for item in assignment.get("items") or []:
        if item.get("kind", "auto") != "auto" or item.get("overridden"):
            continue
        for check in item.get("checks") or []:
            if check.get("status") == STATUS_ERROR and check.get("errors"):
                first = next((str(c.get("message") or "") for c in check.get("cases") or []
                              if c.get("outcome") == ERROR), "")
                found.append(f"{item.get('id')}: check '{check.get('id')}' errored: "
                             + " ".join(first.split())[:_PROBLEM_CHARS])
    return found


def checks_not_run(assignment: Mapping[str, Any]) -> list[str]:
    """The ids of an assignment's checks worth points that did not run or errored in any case
    (in items the instructor did not score): what "N check(s) did not run" counts."""
    return [str(check.get("id")) for item in assignment.get("items") or []
            if item.get("kind", "auto") == "auto" and not item.get("overridden")
            for check in item.get("checks") or []
            if check.get("status") == STATUS_ERROR and (check.get("points") or 0) > 0]


# --- automatic items ---------------------------------------------------------------------

def _waits_for_a_person(case: Case) -> bool:
    """A case failed on an answer found but not read (the check's structured mark, never its
    message's words: grader/scoring/check_results.py `Case.unread_answer`)."""
    return case.outcome == FAILED and bool(case.unread_answer or case.graded_by_hand)


def _score_auto(item: Item, grouped: dict[str, list[Case]]) -> ItemScore:
    checks = [_score_check(rule, grouped.get(rule.check, [])) for rule in item.checks]
    # A check worth no point only tells (practical4.uneven_batch): it never sets the item's
    # status, which says how the item's points went.
    ran = [c for c in checks if c.status != STATUS_SKIPPED and c.points > 0] or \
        [c for c in checks if c.status != STATUS_SKIPPED]
    if not ran:
        status = STATUS_SKIPPED
    elif any(c.status == STATUS_PENDING for c in ran) and all(c.status in (STATUS_PASSED, STATUS_PENDING)
                                                              for c in ran):
        status = STATUS_PENDING
    elif any(c.status == STATUS_ERROR for c in ran):
        status = STATUS_ERROR
    elif all(c.status == STATUS_PASSED for c in ran):
        status = STATUS_PASSED
    elif all(c.status in (STATUS_FAILED, STATUS_PENDING) for c in ran):
        status = STATUS_FAILED   # nothing earned (what waits for a person is said in its check)
    else:
        status = STATUS_PARTIAL
    rubric_text = {STATUS_PASSED: item.feedback.passed, STATUS_SKIPPED: item.feedback.skipped,
                   STATUS_PENDING: ""}.get(status, item.feedback.failed)
    feedback = "\n".join(text for text in [rubric_text] + [c.feedback for c in checks] if text)
    exact, waiting = sum(c.exact_score for c in checks), sum(c.exact_pending for c in checks)
    return ItemScore(id=item.id, title=item.title, kind=item.kind, points=item.points,
                     score=_round(exact), exact_score=exact,
                     max_score=_round(sum(c.max_score for c in checks)),
                     status=status, feedback=feedback, checks=checks,
                     pending_points=_round(waiting), exact_pending=waiting)


def _score_check(rule: CheckRule, cases: list[Case]) -> CheckScore:
    counts = {outcome: sum(c.outcome == outcome for c in cases)
              for outcome in (PASSED, FAILED, SKIPPED, ERROR)}
    score = CheckScore(id=rule.check, points=rule.points, max_score=rule.points, score=0.0,
                       status=STATUS_ERROR, partial=rule.partial, passed=counts[PASSED],
                       failed=counts[FAILED], skipped=counts[SKIPPED], errors=counts[ERROR],
                       cases=[CaseResult(c.label, c.outcome, c.message)
                              for c in cases if c.outcome != PASSED])
    if not cases:
        score.feedback = f"check {rule.check} did not run (a grading problem, not your code)"
        return score

    excluded = rule.when_skipped == "exclude"
    if counts[SKIPPED] == len(cases):
        score.status = STATUS_SKIPPED
        score.max_score = 0.0 if excluded else rule.points
        reasons = "; ".join(sorted({c.message for c in cases}))
        cost = ("it is worth no point" if not rule.points else
                f"its {_fmt(rule.points)} point(s) are left out of the maximum" if excluded
                else f"it counts 0 of {_fmt(rule.points)} point(s)")
        score.feedback = f"{rule.check} was skipped ({reasons}); {cost}."
        return score

    counted = len(cases) - counts[SKIPPED] if excluded else len(cases)
    score.unread = sum(_waits_for_a_person(c) for c in cases)
    score.by_hand = sum(_waits_for_a_person(c) and bool(c.graded_by_hand) for c in cases)
    if rule.partial == "proportional":
        score.exact_score = rule.points * counts[PASSED] / counted
        score.exact_pending = rule.points * score.unread / counted
    else:
        score.exact_score = rule.points if counts[PASSED] == counted else 0.0
        # All or nothing: what a person reads can earn the points only where nothing else failed.
        score.exact_pending = rule.points if score.unread and counts[PASSED] + score.unread == counted else 0.0
    score.score, score.pending_points = _round(score.exact_score), _round(score.exact_pending)
    if counts[PASSED] == counted:
        score.status = STATUS_PASSED
    elif counts[ERROR]:
        # The grader failed in these cases, whatever the others gave: the check has no verdict
        # (its score kept for the record), a grading problem (`_checks_that_did_not_run`).
        score.status = STATUS_ERROR
    elif score.unread and counts[PASSED] + score.unread == counted:
        score.status = STATUS_PENDING
    elif score.score > 0:
        score.status = STATUS_PARTIAL
    else:
        score.status = STATUS_FAILED
    score.feedback = _check_feedback(rule, score, cases, counted, excluded)
    return score


def _check_feedback(rule: CheckRule, score: CheckScore, cases: list[Case], counted: int,
                    excluded: bool) -> str:
    if score.status == STATUS_PASSED and not score.skipped:
        return ""
    lines = []
    if score.unread - score.by_hand:
        lines.append(f"{rule.check}: {score.unread - score.by_hand} of {counted} case(s) wait for a person: "
                     f"the answer they check was found but could not be read ({_fmt(score.pending_points)} "
                     "point(s) not counted until a person reads it).")
    if score.by_hand:
        lines.append(f"{rule.check}: {score.by_hand} of {counted} case(s) wait for a person: the grader "
                     f"could not run them on your code, which itself runs ({_fmt(score.pending_points)} "
                     "point(s) not counted until a person grades them by hand).")
    if score.status not in (STATUS_PASSED, STATUS_PENDING):
        lines.append(f"{rule.check}: {counted - score.passed - score.unread} of {counted} case(s) did not pass "
                     + (f"({_fmt(score.score)} of {_fmt(rule.points)} point(s))." if rule.points
                        else "(worth no point: it only tells you something the handout "
                             "gives no points for)."))
    if score.errors:
        lines.append(f"{rule.check}: {score.errors} of {counted} case(s) errored in the grader "
                     "itself, not in your code: a grading problem, so this check is graded again.")
    if score.skipped:
        lines.append(f"{rule.check}: {score.skipped} case(s) skipped and "
                     f"{'not counted' if excluded else 'counted as not passed'}.")
    # Parametrized checks often fail the same way in many cases: say it once, list the cases.
    by_message: dict[str, list[str]] = {}
    for case in cases:
        if case.outcome in (FAILED, ERROR):
            prefix = "error: " if case.outcome == ERROR else ""
            by_message.setdefault(prefix + case.message, []).append(case.label)
    # ... and one bug usually fails every configuration with only its numbers changed (19
    # layouts "no layer on cuda:1, cuda:2 (layers per GPU [5, 0, 0])"): the first two in full,
    # then the cases alike.
    by_shape: dict[str, list[tuple[str, list[str]]]] = {}
    for message, labels in by_message.items():
        by_shape.setdefault(failure_shape(message), []).append((message, labels))
    for groups in list(by_shape.values())[:_MAX_MESSAGES_PER_CHECK]:
        for message, labels in groups[:_IN_FULL_PER_SHAPE]:
            lines.append(f"- {_some(labels)}: {message}")
        alike = [label for _, more in groups[_IN_FULL_PER_SHAPE:] for label in more]
        if alike:
            lines.append(f"- the same failure, with each case's own numbers: {_some(alike)}")
    if len(by_shape) > _MAX_MESSAGES_PER_CHECK:
        lines.append(f"- ... {len(by_shape) - _MAX_MESSAGES_PER_CHECK} more distinct messages "
                     f"(see the check's cases)")
    return "\n".join(lines)


def _some(labels: list[str]) -> str:
    return ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")


def failure_shape(message: str) -> str:
    """A failure message with its numbers, and lists of them, left out: the same for two cases
    that fail alike in different configurations (also what `pdl-grade check` groups causes by:
    grader/reports/terminal.py)."""
    numbered = re.sub(r"\d+(?:\.\d+)?(?:e-?\d+)?", "#", message)
    numbered = re.sub(r"([^\s,\[]*#)(?:, [^\s,\]]*#)+", r"\1...", numbered)
    numbered = "\n".join(_one_of_each_run(line) for line in numbered.split("\n"))
    # An enumeration in parentheses grows with the configuration ("(layers 0-1 on cuda:0,
    # layer 2 on cuda:1, ...)" over 3 or 8 GPUs): one shape whatever its length.
    return re.sub(r"\((?=[^()]*#)[^()]*, [^()]*\)", "(...)", numbered)


def _one_of_each_run(line: str) -> str:
    """A line whose "; "-separated clauses repeat with only their numbers changed (one per rank:
    "rank # trains on # rows; rank # trains on # rows; ...") with the repeats as one "...": the
    list grows with the configuration, the failure does not. The first clause may carry the
    line's label ("Observed: rank # ...")."""
    def repeats(before: str, clause: str) -> bool:
        return "#" in clause and (before == clause or before.endswith(" " + clause))

    clauses = line.split("; ")
    kept = clauses[:1]
    for clause in clauses[1:]:
        if kept[-1] == "..." and len(kept) > 1 and repeats(kept[-2], clause):
            continue
        kept.append("..." if repeats(kept[-1], clause) else clause)
    return "; ".join(kept)


# --- manual items, overrides, late penalty -----------------------------------------------

def _score_manual(item: Item) -> ItemScore:
    return ItemScore(id=item.id, title=item.title, kind=item.kind, points=item.points,
                     score=0.0, max_score=item.points, status=STATUS_MANUAL, pending=True,
                     feedback="To be graded by the instructor.", answer=item.answer)


def _apply_override(scored: ItemScore, item: Item, override: ItemOverride | None) -> None:
    if override is None:
        return
    scored.score, scored.exact_score = _round(override.points), float(override.points)
    scored.pending = False
    scored.pending_points = scored.exact_pending = 0.0   # a person's grade: nothing waits any more
    if item.is_manual:
        scored.feedback = override.comment
    else:
        scored.overridden = True
        scored.max_score = item.points  # an instructor's score is out of the full points
        scored.feedback = "\n".join(t for t in (f"Score set by the instructor: {override.comment}"
                                                if override.comment else "Score set by the instructor.",
                                                scored.feedback) if t)


def _integrity_review(items: list[ItemScore], problems: list[str], release: Release | None,
                      notes: list[str] | None = None) -> dict[str, Any]:
    """Withhold the automatic items' points unless the instructor released them; notes
    (unusual but honest) withhold nothing."""
    review: dict[str, Any] = {"problems": list(problems), "notes": list(notes or []),
                              "withheld": False, "withheld_points": 0.0, "cleared": False,
                              "comment": ""}
    if not problems:
        return review
    if release is not None:
        review.update(cleared=True, comment=release.comment)
        return review
    withheld = 0.0
    for item in items:
        if item.kind != "auto" or item.overridden:
            continue  # manual items and instructor-set scores are a person's grade already
        item.withheld_score = item.score
        withheld += item.exact_score
        item.score = item.exact_score = 0.0
        item.pending_points = item.exact_pending = 0.0   # the review decides the whole item
        item.status = STATUS_WITHHELD
        item.feedback = (f"Withheld for review by the course staff (see the assignment's "
                         f"integrity problems); the checks gave {_fmt(item.withheld_score)} of "
                         f"{_fmt(item.max_score)}.\n{item.feedback}").strip()
    review["withheld"], review["withheld_points"] = True, _round(withheld)
    return review


def _apply_late_penalty(result: AssignmentScore, rubric: Rubric,
                        submitted_at: _dt.datetime | str) -> None:
    if rubric.due is None:
        return
    try:
        when = _late.parse_submission_time(submitted_at)
    except (ValueError, TypeError) as exc:
        result.errors.append(f"{_LATE_NOT_APPLIED}{exc}")
        result.status = "incomplete"
        return
    lateness = _late.lateness(when, rubric.due, rubric.late_policy)
    result.late = asdict(lateness)
    if lateness.fraction_lost <= 0:
        return
    # Of the exact total, as the total itself is rounded once.
    total = sum(item.exact_score for item in result.items)
    penalty = total * lateness.fraction_lost
    result.items.append(ItemScore(
        id=f"{rubric.assignment}.late_penalty", title=f"Late penalty ({lateness.days_late} "
        f"day{'s' if lateness.days_late != 1 else ''} late)", kind="penalty",
        score=-_round(penalty), exact_score=-penalty, max_score=0.0, status=STATUS_PENALTY,
        feedback=_late.describe(lateness, rubric.late_policy)))
    result.score = _round(total - penalty)


# --- assembly ------------------------------------------------------------------------------

def _assemble(rubric: Rubric, items: list[ItemScore], errors: list[str]) -> AssignmentScore:
    max_score = _round(sum(i.max_score for i in items))
    has_errors = bool(errors) or any(i.status == STATUS_ERROR for i in items)
    return AssignmentScore(
        id=rubric.assignment, title=rubric.title, rubric_version=rubric.version,
        score=_round(sum(i.exact_score for i in items)), max_score=max_score,
        rubric_max_score=_round(rubric.total_points),
        excluded_points=_round(rubric.total_points - max_score),
        status="incomplete" if has_errors else "graded", items=items, errors=errors,
        pending_manual=[i.id for i in items if i.pending],
        pending_points=_round(sum(i.max_score for i in items if i.pending)
                              + sum(i.exact_pending for i in items if not i.pending)),
        pending_unread=[i.id for i in items if not i.pending and i.pending_points > 0
                        and any(c.unread > c.by_hand for c in i.checks)],
        pending_by_hand=[i.id for i in items if not i.pending and i.pending_points > 0
                         and any(c.by_hand for c in i.checks)])


def _checks_not_in_rubric(rubric: Rubric, grouped: dict[str, list[Case]]) -> list[str]:
    # A check that runs but has no rubric entry means the rubric and checks drifted apart.
    known = set(rubric.check_ids)
    return [f"check '{check}' ran but is not in rubric {rubric.source}; it gave no points"
            for check, cases in sorted(grouped.items())
            if check not in known and (check.startswith(rubric.assignment + ".")
                                       or any(c.assignment == rubric.assignment for c in cases))]


def _round(value: float) -> float:
    """Points to two decimals as a person rounds them: half up (1/8 of a point is 0.13, where
    round() gives 0.12), once the float's own error is cut off (0.1 + 0.2, 1.3749999999999998)."""
    rounded = Decimal(repr(round(float(value), 9))).quantize(_CENT, rounding=ROUND_HALF_UP)
    return float(rounded) + 0.0  # turns -0.0 into 0.0


def _fmt(points: float) -> str:
    return f"{points:g}"
