"""The checks' results: a pytest-json-report dict read into per-check test cases.

Only this module knows pytest-json-report's layout (version 1.5): ``tests[]`` entries with
``nodeid``, ``outcome`` (passed, failed, skipped, error, xfailed, xpassed), ``metadata``
(added by grader.pytest_plugin: ``check``, ``assignment``, ``feedback``, ``unread_answer``,
``graded_by_hand``)
and one dict per stage (``setup``, ``call``, ``teardown``) with ``outcome``,
``crash.message`` and ``longrepr``; ``collectors[]`` with a failed ``outcome`` when a check
module did not import; ``exitcode`` of the pytest session; ``case_marks``, the structured
marks the plugin writes (a report without it is older: its failures on an answer found but
not read are told by their message, as they were scored when it was written).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Mapping

from grader.common.text import last_lines

# Keeps one runaway message (a student's script printing in a loop) from swamping result.json.
MAX_MESSAGE_CHARS = 4000

PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"
# xfail/xpass do not belong in grader checks; if one appears, judge it by what happened.
_OUTCOMES = {"passed": PASSED, "xpassed": PASSED, "failed": FAILED, "xfailed": FAILED,
             "skipped": SKIPPED, "error": ERROR}

# pytest's exit codes that mean the session itself went wrong (1 = tests failed is normal).
_BAD_EXITCODES = {2: "pytest was interrupted", 3: "pytest hit an internal error",
                  4: "pytest was called with wrong arguments", 5: "pytest collected no tests"}


@dataclass(frozen=True)
class Case:
    """One test case (a parametrized test gives several) of one check."""
    nodeid: str
    check: str
    assignment: str
    outcome: str          # passed | failed | skipped | error
    message: str = ""     # why it failed, errored or was skipped ("" when passed)
    # A failed case's answer (its id) that was found but could not be read: no verdict, the
    # case's points wait for a person (grader/checks/support.py AnswerNotRead).
    unread_answer: str = ""
    # A failed case the grader could not run on code that itself works (what it could not do,
    # e.g. "hw3.model_not_built"): no verdict either, its points wait for a person
    # (grader/checks/support.py GradedByHand).
    graded_by_hand: str = ""

    @property
    def label(self) -> str:
        """The parameter part of the node id ('[2-6]'), or the test name."""
        name = self.nodeid.rsplit("::", 1)[-1]
        return name[name.index("["):] if "[" in name else name


def cases_by_check(report: dict) -> dict[str, list[Case]]:
    """Group the report's tests by their check id; tests without one are ignored."""
    grouped: dict[str, list[Case]] = {}
    older = _unread_by_message(report) if "case_marks" not in report else None
    for test in report.get("tests") or []:
        case = _case(test)
        if case is not None and older and case.outcome == FAILED and not case.unread_answer:
            case = replace(case, unread_answer=next(
                (qid for qid, start in older.items() if case.message.startswith(start)), ""))
        if case is not None:
            grouped.setdefault(case.check, []).append(case)
    return grouped


def _unread_by_message(report: dict) -> dict[str, str]:
    """For a report written before `case_marks` (a folder `--rescore` or a batch scores
    again): {answer id: how a check's failure on it began} for each answer the reading marked
    found but not read, as grader/checks/support.py `reported` worded it then."""
    answers = answer_data(report).get("answers")
    if not isinstance(answers, Mapping):
        return {}
    questions = answers.get("questions") if isinstance(answers.get("questions"), Mapping) else {}
    return {qid: f"Expected: an answer to: {questions.get(qid, qid)}\nObserved: "
            for qid in answers.get("unread") or [] if isinstance(qid, str)}


# Failures a report written before a mark (not in its `case_marks`) scored as the student's 0,
# which the checks now mark for a person: the mark -> (the assignment, how such a failure's
# message began then, the check whose cases show the student's own code runs). HW3 since
# 31bc78d: the probe could not build the model the way the script, which ran to its end,
# builds it (`graded_by_hand`); the message was the probe's own, naming the file and the class.
_MARKED_SINCE = {"graded_by_hand": (
    "hw3", re.compile(r"hw3/\S+\.py(?:: \S.* cannot be built: | defines no class )"),
    "hw3.script_runs")}


def unmarked_cases(report: dict) -> dict[str, list[str]]:
    """For a report written before a mark of `_MARKED_SINCE` (a folder `--rescore` or a batch
    scores again): {check: [node ids]} of its failed cases that the checks now mark, where the
    report does not show them the student's own 0 (the runs check failed: the script does not
    run). Their points cannot be scored again from the report (which of the answers those
    checks read were missing, a 0 still, it does not say): the submission is graded again."""
    marks = report.get("case_marks") or []
    found: dict[str, list[str]] = {}
    for mark, (assignment, began, runs_check) in _MARKED_SINCE.items():
        if mark in marks:
            continue
        grouped = cases_by_check(report)
        if any(c.outcome in (FAILED, ERROR) for c in grouped.get(runs_check, [])):
            continue   # the script itself stopped: those failures are the student's, as now
        for check, cases in grouped.items():
            for case in cases:
                if case.assignment == assignment and case.outcome == FAILED \
                        and began.match(case.message):
                    found.setdefault(check, []).append(case.nodeid)
    return found


def report_of_cases(cases: list[Case]) -> dict:
    """The layout above for cases already known: the checks' own pytest session scores its
    outcomes through the same path as a grading (grader/scoring/session.py)."""
    tests = []
    for case in cases:
        metadata = {"check": case.check, "assignment": case.assignment}
        test = {"nodeid": case.nodeid, "outcome": case.outcome, "metadata": metadata}
        if case.outcome == SKIPPED:
            test["setup"] = {"outcome": "skipped", "longrepr": case.message}
        elif case.outcome in (FAILED, ERROR):
            metadata["feedback"] = case.message
            if case.unread_answer:
                metadata["unread_answer"] = case.unread_answer
            if case.graded_by_hand:
                metadata["graded_by_hand"] = case.graded_by_hand
        tests.append(test)
    return {"tests": tests, "case_marks": ["unread_answer", "graded_by_hand"]}


def session_problems(report: dict) -> list[str]:
    """Problems with the pytest run itself: modules that failed to import, a bad exit code."""
    problems = []
    for collector in report.get("collectors") or []:
        if collector.get("outcome") == "failed":
            detail = _truncate(last_lines(str(collector.get("longrepr", "")), 5))
            problems.append(f"could not collect {collector.get('nodeid') or 'the checks'}: {detail}")
    exitcode = report.get("exitcode")
    if exitcode in _BAD_EXITCODES:
        problems.append(f"{_BAD_EXITCODES[exitcode]} (exit code {exitcode})")
    return problems


def _case(test: dict) -> Case | None:
    metadata = test.get("metadata") or {}
    check = metadata.get("check")
    if not isinstance(check, str) or not check:
        return None
    outcome = _OUTCOMES.get(test.get("outcome"), ERROR)
    assignment = metadata.get("assignment") or check.split(".", 1)[0]
    nodeid = str(test.get("nodeid", check))
    if outcome == PASSED:
        message = ""
    elif outcome == SKIPPED:
        message = _skip_reason(test) or str(metadata.get("feedback") or "") or "skipped"
    else:
        message = _failure_message(test, metadata, outcome)
    unread = metadata.get("unread_answer") if outcome == FAILED else None
    by_hand = metadata.get("graded_by_hand") if outcome == FAILED else None
    return Case(nodeid=nodeid, check=check, assignment=str(assignment), outcome=outcome,
                message=_truncate(message), unread_answer=unread if isinstance(unread, str) else "",
                graded_by_hand=by_hand if isinstance(by_hand, str) else "")


def _failure_message(test: dict, metadata: dict, outcome: str) -> str:
    # The plugin's feedback (expected / observed / where to look) is written for students;
    # pytest's own crash text is the fallback.
    feedback = metadata.get("feedback")
    if isinstance(feedback, str) and feedback.strip():
        return feedback.strip()
    for stage_name in ("setup", "call", "teardown"):
        stage = test.get(stage_name) or {}
        if stage.get("outcome") not in ("failed", "error"):
            continue
        prefix = "" if stage_name == "call" else f"error in test {stage_name}: "
        crash = (stage.get("crash") or {}).get("message")
        if crash:
            return prefix + str(crash).strip()
        if stage.get("longrepr"):
            return prefix + last_lines(str(stage["longrepr"]), 10)
    return "the test errored without a message" if outcome == ERROR else "failed without a message"


def _skip_reason(test: dict) -> str:
    for stage_name in ("setup", "call", "teardown"):
        stage = test.get(stage_name) or {}
        if stage.get("outcome") == "skipped" and stage.get("longrepr"):
            return parse_skip_longrepr(stage["longrepr"])
    return ""


def parse_skip_longrepr(longrepr) -> str:
    """Reason out of a skip's longrepr: "('path', 12, 'Skipped: why')", a list, or plain text."""
    if isinstance(longrepr, str):
        try:
            longrepr = ast.literal_eval(longrepr)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    if isinstance(longrepr, (list, tuple)) and longrepr:
        longrepr = longrepr[-1]
    reason = str(longrepr).strip()
    return reason[len("Skipped:"):].strip() if reason.startswith("Skipped:") else reason


def _truncate(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[:MAX_MESSAGE_CHARS] + f"... [{len(text) - MAX_MESSAGE_CHARS} more characters cut]"


# --- what the checks recorded beside their outcomes (grader.pytest_plugin's metadata) --------

def measurements(report: dict, metadata_key: str = "measured") -> dict:
    """The checks' `measured` (or `reported`) values, merged: nested dicts from several cases
    combine, so a parametrized check's cases fill one table."""
    merged: dict = {}

    def merge(into: dict, values: dict) -> None:
        for key, value in values.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    for test in report.get("tests") or []:
        values = (test.get("metadata") or {}).get(metadata_key)
        if isinstance(values, dict):
            merge(merged, values)
    return merged


def answer_data(report: dict) -> dict:
    """What result.json keeps of the student's answers: `answers` (as read: values, where each
    came from, what is missing, problems), `reported` (the answers the checks compared, keyed
    like `measurements`) and `flags` (for the instructor, no points attached)."""
    found: dict = {}
    for test in report.get("tests") or []:
        metadata = test.get("metadata") or {}
        if isinstance(metadata.get("answers"), dict) and "answers" not in found:
            found["answers"] = metadata["answers"]
        for text in metadata.get("flags") or []:
            # A parametrized check flags the same thing in each case that shows it: once.
            flag = {"check": metadata.get("check"), "text": str(text)}
            if flag not in found.get("flags", []):
                found.setdefault("flags", []).append(flag)
    reported = measurements(report, "reported")
    if reported:
        found["reported"] = reported
    return found


def run_integrity_problems(report: dict) -> list[str]:
    """What the runs left that the grader's instrumentation did not write (the checks'
    session puts it under `integrity`)."""
    return [str(p) for p in report.get("integrity") or []]


def run_integrity_notes(report: dict) -> list[str]:
    """Unusual but honest things the runs did (programs they started, say): for the
    instructor, never a hold."""
    return [str(n) for n in report.get("integrity_notes") or []]


def environment_notes(report: dict) -> list[str]:
    """What the runs' environment stood in for (a display-only tqdm or matplotlib): notes
    for the student, no points."""
    return [str(n) for n in report.get("environment_notes") or []]
