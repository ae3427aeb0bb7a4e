"""A result.json as a student reads it in a terminal: `pdl-grade check` prints it, and the
summary at the end of `pytest grader/` is the same text.

Three parts, in the order a student acts on them:

1. points per task (rubric item), per assignment, with the total;
2. what to fix: each failed check's message once. Many cases of a parametrized check, and
   several checks, often fail for one reason (a script that crashes on one GPU fails every
   check of every one-GPU case): messages that differ only in their numbers are one cause,
   shown once with the checks and cases it cost;
3. what is still for a person: the written answers the course staff grade, and their points.

Plain text: the student's own output and exception messages are quoted as they are, a
terminal interprets no markup.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from grader.reports.formatting import format_points
from grader.reports.missing_scripts import absent_script, where_to_look
from grader.reports.not_graded import grading_problem_said, not_graded
from grader.reports.pending import by_hand_points, waiting_to_be_read
from grader.reports.stopped_runs import CRASH, LEAD, carried, stop_key
from grader.reports.student_view import display_name, file_shown
from grader.reports.student_wording import all_for_the_student
from grader.scoring.score import failure_shape

# An answer the sheet lacks (nothing else wrong with it): "Observed: no answer found" alone
# or with the code's own problem after it, and where it belongs, "FILE (qid)" last.
_MISSING = re.compile(r"^Observed: no answer found(?:$|; and your code could not be run to "
                      r"compare it with: (?P<code>.*)$)", re.M)
_LABEL = re.compile(r" \(('.*')\)")
_WHERE = re.compile(r"^Where to look: (?P<where>.*?)\s*\((?P<qid>[\w.]+)\)\s*$", re.M)
# An exception of the student's code, as a build that failed or a check's "Observed:" line
# quotes it: "RuntimeError at model_parallel.py:50 (x = layer(x)): Expected all tensors ...".
# The same exception fails checks of several tasks, each naming its configurations its way.
_RAISED = re.compile(r"(?:^(?:Building or running|Importing) .*? failed: |^Observed: )"
                     r"(?P<error>\w+ at [\w./-]+\.py:\d+ .*)$", re.M)
# A case's "Expected:" line, up to its "Observed:" line: what the case's configuration expects.
_EXPECTED = re.compile(r"^Expected:.*?(?=^Observed:)", re.M | re.S)
# Cases listed by name under one cause before the rest are counted.
_CASES_SHOWN = 6
_INDENT = "   "
NO_TOTAL = "\u2014"   # where a score is no grade (a grading problem)


@dataclass
class Cause:
    """One reason some checks failed: its first message, and every (check, case) it cost."""
    message: str
    checks: dict[str, int] = field(default_factory=dict)   # check id -> cases, in order
    cases: list[tuple[str, str]] = field(default_factory=list)   # (check, "[1gpus-depth1]" or "")
    missing: list[str] = field(default_factory=list)   # answers missing from one file: their ids
    free: bool = True   # every check it hit is worth no point (it only tells)
    shown: int = 0   # the index in `cases` of the case whose message is shown
    shown_message: str = field(default="", repr=False)   # `message` when `shown` was set
    script: str = ""   # a script the submission lacks, where that is the cause
    said: str = ""     # ... and how the checks said it (with a file that may be it renamed)

    @property
    def count(self) -> int:
        return sum(self.checks.values())


def earned_every_automatic_point(result: Mapping[str, Any]) -> bool:
    """Every automatic item at its maximum (what `pdl-grade check` exits 0 for); an
    assignment whose checks could not run has earned nothing."""
    for assignment in result.get("assignments") or []:
        if assignment.get("status") == "error":
            return False
        for item in assignment.get("items") or []:
            if item.get("kind", "auto") == "auto" and (
                    item.get("status") in ("error", "withheld")
                    or (item.get("score") or 0) < (item.get("max_score") or 0)):
                return False
    return True


def failure_causes(result: Mapping[str, Any], *, selected_only: bool = False) -> list[Cause]:
    """Every failed or errored case of every check, grouped by cause, in rubric order.
    `selected_only`: a check with no case at all was not selected (pytest -k), not broken."""
    causes: dict[str, Cause] = {}
    for assignment in result.get("assignments") or []:
        for item in assignment.get("items") or []:
            for check in item.get("checks") or []:
                ran = sum(check.get(k) or 0 for k in ("passed", "failed", "skipped", "errors"))
                if not ran and check.get("status") == "error":
                    if not selected_only:   # one cause, whichever checks it hit
                        _add(causes, "the check did not run: a grading problem, not your code "
                                     "(the grading's log says why)", check["id"], "").free = False
                    continue
                worth = check.get("points", check.get("max_score"))
                for case in check.get("cases") or []:
                    if case.get("outcome") in ("failed", "error"):
                        cause = _add(causes, str(case.get("message") or "failed without a message"),
                                     check["id"], str(case.get("case") or check["id"]))
                        cause.free = cause.free and worth == 0
    # A cause may be found under two keys (its message's shape, its check's observation).
    return list({id(cause): cause for cause in causes.values()}.values())


def _add(causes: dict[str, Cause], message: str, check: str, case: str) -> Cause:
    cause = _cause_of(causes, message, check)
    if not cause.cases or cause.message != cause.shown_message:
        # Its first case, or the one whose wording it shows from now on (a later case's
        # message that says where to look): the case named first when it is shown.
        cause.shown, cause.shown_message = len(cause.cases), cause.message
    cause.checks[check] = cause.checks.get(check, 0) + 1
    # A parametrized case is named by its parameters; a plain test by its check alone.
    cause.cases.append((check, case if case.startswith("[") else ""))
    return cause


def _cause_of(causes: dict[str, Cause], message: str, check: str = "") -> Cause:
    """The cause `message` belongs to (made on its first message)."""
    absent = absent_script(message)
    if absent:
        # A missing script fails every check that needed it, each saying so its own way (an
        # answer check: "your code did not get that far: ..."): one cause per script.
        script = absent.group("script")
        return causes.setdefault("absent: " + script, Cause(
            f"The checks it cost need {script}.\nObserved: {absent.group(0)}\n"
            f"Where to look: {where_to_look(script)}", script=script, said=absent.group(0)))
    crash = CRASH.search(message)
    missing, where = _MISSING.search(message), _WHERE.search(message)
    if missing and where:
        # An empty sheet fails every answer check: one cause per file, the ids to write (and
        # the report's label of each, where the answer may be in a PDF).
        label = _LABEL.search(where.group("where"))
        place = _LABEL.sub("", where.group("where")).replace(" or ", ", or in ")
        code = missing.group("code")
        cause = causes.setdefault("missing: " + place, Cause(
            f"Write them in {place}: each answer is compared with what your code does."
            + (f"\nYour code does not run yet, so none can be compared: {code}" if code else "")))
        entry = where.group("qid") + (f" ({label.group(1)})" if label else "")
        if entry not in cause.missing:
            cause.missing.append(entry)
        return cause
    raised = None if crash else _RAISED.search(message)
    if raised:
        cause = causes.setdefault("raised: " + " ".join(raised.group("error").split()),
                                  Cause(message.strip()))
        if "Where to look:" not in cause.message and "Where to look:" in message:
            cause.message = message.strip()   # the wording that says where to look
        return cause
    if crash:
        # A run that crashed or hung fails every check that needed it, whatever each check
        # expected and however it leads into the run's stop (an answer check says the code
        # did not get that far): one cause, the crash, in whichever configuration it happened
        # and whichever ranks raised it there.
        return causes.setdefault(
            "run: " + failure_shape(stop_key(crash.group(1))),
            Cause("The checks it cost need your script to run to its end; it did not.\n"
                  f"Observed: {LEAD.sub('', crash.group(1), count=1)}"
                  + carried(message[crash.end():])))
    shape = _shape(message)
    observed = _EXPECTED.sub("", message, count=1)
    if check and observed != message:
        # The cases of one check that observe the same failure, in whichever configuration
        # (its Expected line says what each configuration expects: 32 rows of 64 on 2 ranks,
        # 21 "or 22" on 3): one cause. Across checks the Expected line tells them apart.
        alike = f"{check}: " + _shape(observed)
        cause = causes.get(shape) or causes.get(alike) or Cause(message.strip())
        causes.setdefault(alike, cause)
        return causes.setdefault(shape, cause)
    return causes.setdefault(shape, Cause(message.strip()))


def _shape(message: str) -> str:
    """The message's failure shape, line by line (a list of clauses ends with its line), then
    with its whitespace as one space (the same message wrapped otherwise)."""
    return " ".join(failure_shape(message).split())


def render_check_text(result: Mapping[str, Any], *, selected_only: bool = False,
                      header: bool = True) -> str:
    """The whole summary; `header`: say whose submission, on what hardware."""
    lines: list[str] = []
    if header:
        lines += _header(result)
    lines += points_lines(result, selected_only=selected_only)
    lines += _problem_lines(result)
    found = failure_causes(result, selected_only=selected_only)
    causes = [c for c in found if not c.free]
    if causes:
        total = sum(c.count for c in causes)
        lines += ["", f"What to fix ({len(causes)} cause(s) of {total} failed case(s); "
                      "each cause once, with the checks it cost):"]
        for number, cause in enumerate(causes, start=1):
            lines += [""] + cause_lines(number, cause)
    tips = [c for c in found if c.free]
    if tips:
        lines += ["", "Worth no point, but worth knowing (what the handout gives no points "
                      "for, e.g. a batch that does not divide evenly, or a line it asks you to "
                      "print):"]
        for number, cause in enumerate(tips, start=len(causes) + 1):
            lines += [""] + cause_lines(number, cause)
    lines += pending_lines(result)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"


def _header(result: Mapping[str, Any]) -> list[str]:
    hardware = result.get("hardware") or {}
    kind = {"virtual": "virtual GPUs (simulated on the CPU)", "real": "real GPUs"}.get(
        hardware.get("kind"), "GPUs")
    took = result.get("duration_s")
    return [f"{display_name(result) or 'submission'}: graded on up to {hardware.get('gpus', '?')} "
            f"{kind}" + (f" in {took:.0f} s" if isinstance(took, (int, float)) else ""), ""]


def points_lines(result: Mapping[str, Any], *, selected_only: bool = False) -> list[str]:
    """Per assignment: its total, then one line per task (automatic rubric item). An assignment
    the grader itself failed to grade (a check that did not run: a grading problem) has no
    total, and neither has the whole: its 0 is no grade (grader/scoring/score.py)."""
    lines = []
    unmarked = not_graded(result) is None
    problems = []
    for assignment in result.get("assignments") or []:
        auto = [i for i in assignment.get("items") or [] if i.get("kind", "auto") != "manual"]
        said = grading_problem_said(assignment, selected_only=selected_only) if unmarked else None
        if said:
            problems.append(f"{assignment.get('id')}: {said}")
        lines.append(f"{assignment.get('id')}: {assignment.get('title') or ''}  "
                     + (f"{NO_TOTAL} / {format_points(assignment.get('max_score'))}: "
                        f"{said} (a grading problem, not your code)" if said else
                        _points(assignment.get('score'), assignment.get('max_score'))))
        for item in auto:
            status = _item_status(item, selected_only)
            lines.append(f"  {_points(item.get('score'), item.get('max_score')):>11}  "
                         f"{status:<8}  {item.get('title') or item.get('id')}")
        lines.append("")
    if problems:
        lines.append(f"total: {NO_TOTAL} / {format_points(result.get('max_score'))}: no total, "
                     f"the grading had a problem (not your code): {'; '.join(problems)}")
    elif len(result.get("assignments") or []) > 1:
        lines.append(f"total: {_points(result.get('score'), result.get('max_score'))}")
    return lines


def _item_status(item: Mapping[str, Any], selected_only: bool) -> str:
    checks = item.get("checks") or []
    if selected_only and checks and not any(
            sum(c.get(k) or 0 for k in ("passed", "failed", "skipped", "errors")) for c in checks):
        return "not run"
    return {"partial": "partly", "withheld": "held", "penalty": "penalty"}.get(
        item.get("status"), str(item.get("status")))


def _points(score: Any, max_score: Any) -> str:
    return f"{format_points(score)} / {format_points(max_score)}"


def cause_lines(number: int, cause: Cause) -> list[str]:
    if cause.missing:
        head = f"{number}. {len(cause.missing)} answer(s) not found ({len(cause.checks)} check(s))"
        if any(" (" in entry for entry in cause.missing):   # with the report's labels
            return [head + ":"] + [f"{_INDENT}- {entry}" for entry in cause.missing] \
                + _indented(cause.message)
        return [f"{head}: {', '.join(cause.missing)}"] + _indented(cause.message)
    if cause.count == 1:
        lines = [f"{number}. {''.join(cause.cases[0])}"]
    else:
        # The case whose message is shown comes first, its check first among the checks: "the
        # first of them" had been another case than the one shown (a student's audit).
        first_check, first_label = cause.cases[cause.shown] if cause.cases else ("", "")
        checks = sorted(cause.checks.items(), key=lambda item: item[0] != first_check)
        if len(checks) == 1:
            head = f"{checks[0][0]}: {cause.count} cases failed the same way"
        else:
            head = (f"{cause.count} cases of {len(checks)} checks failed the same way: "
                    + ", ".join(f"{check} ({n})" if n > 1 else check for check, n in checks))
        # The same parameters in several checks are one case to look at.
        names = list(dict.fromkeys([first_label] * bool(first_label)
                                   + [label for _, label in cause.cases if label]))
        shown = ", ".join(names[:_CASES_SHOWN])
        more = len(names) - _CASES_SHOWN
        lines = [f"{number}. {head}"]
        if names:
            lines.append(f"{_INDENT}cases: {shown}" + (f" and {more} more" if more > 0 else ""))
        lines.append(f"{_INDENT}the first of them" + (
            f" ({first_check}{first_label}):" if len(checks) > 1 and first_check else ":"))
    return lines + _indented(cause.message)


def _problem_lines(result: Mapping[str, Any]) -> list[str]:
    """Held for review, grading problems, and how the answers were read."""
    lines = []
    for error in all_for_the_student(result.get("errors")):
        lines += ["", "Grading problem (not caused by your code):"] + _indented(error)
    for assignment in result.get("assignments") or []:
        name = assignment.get("id")
        review = assignment.get("integrity") or {}
        if review.get("withheld"):
            lines += ["", f"{name}: held for review: the automatic points are withheld until the "
                          "course staff have looked at what the grader found (remove it if it "
                          "is a leftover):"]
            lines += [f"{_INDENT}- {p}" for p in review.get("problems") or []]
        for error in all_for_the_student(assignment.get("errors")):
            lines += ["", f"{name}: grading problem:"] + _indented(error)
        answers = assignment.get("answers") or {}
        files = [file_shown(f) for f in answers.get("files") or [] if isinstance(f, Mapping)]
        if files:
            lines += ["", f"{name}: answers read from " + ", ".join(files)]
            lines += [f"{_INDENT}- {p}" for p in all_for_the_student(answers.get("problems"))]
    return lines


def _indented(text: Any) -> list[str]:
    return [f"{_INDENT}{line}" for line in str(text).splitlines() if line.strip()]


def pending_lines(result: Mapping[str, Any]) -> list[str]:
    """The written answers a person grades: per assignment, each with its points and whether
    an answer was found for it."""
    lines = []
    for assignment in result.get("assignments") or []:
        pending = [i for i in assignment.get("items") or [] if i.get("pending")]
        if not pending:
            continue
        values = (assignment.get("answers") or {}).get("values") or {}
        points = sum(i.get("max_score") or 0 for i in pending)
        lines += ["", f"Still for a person ({assignment.get('id')}): {len(pending)} written "
                      f"answer(s) worth {format_points(points)} point(s), graded by the course "
                      "staff after the deadline:"]
        for item in pending:
            qid = item.get("answer") or ""
            found = "answered" if qid and values.get(qid) not in (None, "", []) else "no answer found yet"
            lines.append(f"{_INDENT}- {item.get('title') or item.get('id')} "
                         f"({format_points(item.get('max_score'))} point(s); "
                         f"{qid + ': ' if qid else ''}{found})")
    unread = [(assignment.get("id"), item) for assignment in result.get("assignments") or []
              for item in waiting_to_be_read(assignment)]
    by_hand = [(assignment, item) for assignment, item in unread if by_hand_points(item)]
    unread = [(assignment, item) for assignment, item in unread if not by_hand_points(item)]
    for waiting_items, header in ((unread, "Still for a person: answers the grader found but could "
                                           "not read (their points wait; a person of the course "
                                           "staff reads them):"),
                                  (by_hand, "Still for a person: checks the grader could not run on "
                                            "your code, which itself runs (their points wait; a "
                                            "person of the course staff grades them by hand):")):
        if waiting_items:
            lines += ["", header]
            lines += [f"{_INDENT}- {item.get('title') or item.get('id')} ({assignment}: "
                      f"{format_points(item.get('pending_points'))} point(s))"
                      for assignment, item in waiting_items]
    waiting = result.get("pending_points")
    if lines and waiting:
        lines.append(f"{_INDENT}{format_points(waiting)} point(s) in all wait for a person.")
    return lines
