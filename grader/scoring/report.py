"""Read a pytest-json-report dict into per-check test cases.

Only this module knows pytest-json-report's layout (version 1.5): ``tests[]`` entries with
``nodeid``, ``outcome`` (passed, failed, skipped, error, xfailed, xpassed), ``metadata``
(added by grader.pytest_plugin: ``check``, ``assignment``, ``feedback``) and one dict per
stage (``setup``, ``call``, ``teardown``) with ``outcome``, ``crash.message`` and
``longrepr``; ``collectors[]`` with a failed ``outcome`` when a check module did not import;
``exitcode`` of the pytest session.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

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

    @property
    def label(self) -> str:
        """The parameter part of the node id ('[2-6]'), or the test name."""
        name = self.nodeid.rsplit("::", 1)[-1]
        return name[name.index("["):] if "[" in name else name


def cases_by_check(report: dict) -> dict[str, list[Case]]:
    """Group the report's tests by their check id; tests without one are ignored."""
    grouped: dict[str, list[Case]] = {}
    for test in report.get("tests") or []:
        case = _case(test)
        if case is not None:
            grouped.setdefault(case.check, []).append(case)
    return grouped


def session_problems(report: dict) -> list[str]:
    """Problems with the pytest run itself: modules that failed to import, a bad exit code."""
    problems = []
    for collector in report.get("collectors") or []:
        if collector.get("outcome") == "failed":
            detail = _truncate(_last_lines(str(collector.get("longrepr", "")), 5))
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
    return Case(nodeid=nodeid, check=check, assignment=str(assignment), outcome=outcome,
                message=_truncate(message))


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
            return prefix + _last_lines(str(stage["longrepr"]), 10)
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


def _last_lines(text: str, count: int) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-count:])


def _truncate(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[:MAX_MESSAGE_CHARS] + f"... [{len(text) - MAX_MESSAGE_CHARS} more characters cut]"
