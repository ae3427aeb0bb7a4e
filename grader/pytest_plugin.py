"""The pytest plugin behind `pytest grader/` (registered through the `pytest11` entry point).

- `--submission PATH` (or `PDL_SUBMISSION`): the folder to grade; by default the current
  folder's `student_template/`, else the current folder when it holds an assignment's folder
  (a student's own course folder), else the grader's `student_template/`.
- `@pytest.mark.gpus(n)`: the check needs n *real* GPUs; elsewhere it is skipped, with that
  reason, and never faked.
- `@pytest.mark.check("hw3.task3.balanced")`: the rubric check a test demonstrates; it goes
  into pytest-json-report's metadata with the failure's feedback (and `unread_answer` where
  it failed on an answer found but not read, `graded_by_hand` where the grader could not run it
  on code that works), for the scorer.
- A session of the checks alone (`pytest grader/`, `pytest --pyargs grader.checks`) reports
  as a student reads it: no tracebacks of the grader's own code, each failed check's message
  once per cause and the points per rubric item at the end (grader/reports/terminal.py, scored
  through grader/scoring from the session's own outcomes), unless `--tb` or `-r` ask for
  pytest's usual report. A failed check that the rubrics give no point counts as xfailed, so
  that `pytest` exits 0 where every point is earned, as `pdl-grade check` does.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from grader.common.hardware import real_gpu_count

# Filled by the checks' `runs` fixture: observations of the session's runs that the grader's
# instrumentation did not write (forged or removed records); they go into the JSON report.
INTEGRITY_PROBLEMS = pytest.StashKey[list]()
# Unusual but honest things the runs did (programs they started): notes for the instructor.
INTEGRITY_NOTES = pytest.StashKey[list]()
# What the runs' environment stood in for (a display-only tqdm or matplotlib): notes for the
# student, no points (grader/harness/course_environment.py).
ENVIRONMENT_NOTES = pytest.StashKey[list]()
# The outcome of every check's test in this session, for the points at the end.
# nodeid -> (check, outcome, message, unread_answer, graded_by_hand)
CHECK_OUTCOMES = pytest.StashKey[dict]()
# The structured marks a failed case's metadata may carry beside its feedback, named in the
# JSON report (`case_marks`) so that grader/scoring tells a report written with them from an
# older one: `unread_answer`, the id of the answer the check failed on because it was found
# but could not be read (grader/checks/support.py AnswerNotRead); `graded_by_hand`, what the
# grader could not do on code that works (GradedByHand): both leave the case's points to a person.
CASE_MARKS = ["unread_answer", "graded_by_hand"]
# assignment -> its answers as read (Answers.to_dict), for the summary's written answers
CHECK_ANSWERS = pytest.StashKey[dict]()
# The checks the rubrics give no point (they only tell: practical4.uneven_batch). One that fails
# counts as xfailed, its message kept for the summary's "Worth no point" part: `pytest` had
# exited 1 ("1 failed") at full points where `pdl-grade check` exits 0 (a red team's adv47 F4).
CHECKS_WORTH_NO_POINT = pytest.StashKey[frozenset]()


def default_submission() -> Path:
    if os.environ.get("PDL_SUBMISSION"):
        return Path(os.environ["PDL_SUBMISSION"])
    here = Path.cwd()
    if (here / "student_template").is_dir():
        return here / "student_template"
    from grader.scoring import assignment_ids
    if any((here / assignment).is_dir() for assignment in assignment_ids()):
        return here   # a student's own course folder
    from grader.common.locations import data_folder
    return data_folder("student_template")


def pytest_addoption(parser):
    group = parser.getgroup("pdl-autograder")
    group.addoption("--submission", default=None,
                    help="submission folder to grade (default: $PDL_SUBMISSION or student_template/)")
    group.addoption("--rubrics", default=None,
                    help="rubrics folder (default: the grader's rubrics/); says where answers "
                         "are read from (answer sheet and/or PDF report)")
    group.addoption("--check-timeout", type=float, default=180.0,
                    help="the most seconds one run of student code may take before it counts as "
                         "hung (a rubric's run_timeout_s may give less; default 180)")


@pytest.hookimpl(tryfirst=True)   # before the terminal reporter reads the report options
def pytest_configure(config):
    config.addinivalue_line("markers", "gpus(n): needs n real GPUs; skipped where fewer are present")
    config.addinivalue_line("markers", "check(id): the rubric check this test demonstrates")
    config.pluginmanager.register(_IntegrityInReport(config), "pdl-integrity-report")
    if _checks_only(config):
        config.stash[CHECK_OUTCOMES] = {}
        config.stash[CHECKS_WORTH_NO_POINT] = _checks_worth_no_point(config.getoption("--rubrics"))
        # A failing check's message is the feedback, shown once per cause in the summary;
        # tracebacks into the grader's own code and a line per failed test are noise to a
        # student. Options the user gave (--tb, -r) are kept.
        if config.option.tbstyle == "auto":
            config.option.tbstyle = "no"
        if config.option.reportchars == "fE":
            config.option.reportchars = "N"


def _checks_only(config) -> bool:
    """Whether every argument names the grader's package or part of it (a path, or a module
    with --pyargs): a session of the checks, as a student runs it."""
    package = Path(__file__).resolve().parent
    if not config.args:
        return False
    for arg in config.args:
        target = arg.split("::")[0]
        if getattr(config.option, "pyargs", False) and not os.path.exists(target):
            try:
                spec = importlib.util.find_spec(target)
            except (ImportError, ValueError):
                return False
            if spec is None or not spec.origin:
                return False
            target = spec.origin
        if not Path(target).resolve().is_relative_to(package):
            return False
    return True


def _checks_worth_no_point(rubrics_dir) -> frozenset:
    from grader.scoring.rubric import RubricError, checks_worth_no_point
    try:
        return checks_worth_no_point(rubrics_dir)
    except RubricError:   # the summary's scoring says what is wrong with the rubrics
        return frozenset()


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("gpus")
    if marker is None:
        return
    needed = marker.args[0] if marker.args else 1
    found = real_gpu_count()
    if found < needed:
        pytest.skip(f"needs {needed} real GPU(s), this machine has {found}: "
                    "virtual GPUs cannot show real speed-ups or utilisation")


def check_id(item) -> str | None:
    marker = item.get_closest_marker("check")
    return marker.args[0] if marker is not None and marker.args else None


@pytest.fixture
def measured(request) -> dict:
    """What a check measured on the student's code (step times, layouts, ...), for the reports:
    set keys on this dict; they reach result.json as the assignment's `measurements`."""
    found = request.node.__dict__.setdefault("_pdl_measured", {})
    return found


@pytest.fixture
def reported_values(request) -> dict:
    """The student's answers that a check compared, under the same keys as `measured`, so the
    reports can show them side by side; they reach result.json as the assignment's `reported`."""
    return request.node.__dict__.setdefault("_pdl_reported", {})


@pytest.fixture
def flag(request):
    """flag(text): note something for the instructor without costing points (an implausible
    number in a report, say); flags reach result.json as the assignment's `flags`."""
    found = request.node.__dict__.setdefault("_pdl_flags", [])
    return found.append


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    outcomes = item.config.stash.get(CHECK_OUTCOMES, None)
    identifier = check_id(item)
    if outcomes is None or identifier is None:
        return report
    if getattr(item, "_pdl_answers", None):
        item.config.stash.setdefault(CHECK_ANSWERS, {}).setdefault(
            identifier.split(".")[0], item._pdl_answers)
    if report.outcome != "passed":   # a failed teardown after a passed call is an error
        message = (_skip_reason(report.longrepr) if report.skipped
                   else _feedback(call.excinfo) if call.excinfo is not None else "")
        outcome = "skipped" if report.skipped else "failed" if call.when == "call" else "error"
        failed = outcome == "failed"
        outcomes[item.nodeid] = (identifier, outcome, message,
                                 _unread_answer(call.excinfo) if failed else "",
                                 _graded_by_hand(call.excinfo) if failed else "")
        if failed and identifier in item.config.stash.get(CHECKS_WORTH_NO_POINT, frozenset()):
            _count_as_expected_failure(report, identifier, message)
    elif call.when == "call":
        outcomes.setdefault(item.nodeid, (identifier, "passed", "", "", ""))
    return report


def _count_as_expected_failure(report, check: str, message: str) -> None:
    """A failed check worth no point, as pytest counts an expected failure ("1 xfailed", not a
    failure of the session): the session's outcomes keep it failed, so the points and the
    summary's "Worth no point" part are `pdl-grade check`'s; `-rx` prints the message too. The
    checks' JSON report says "xfailed", which scoring reads as failed (check_results.py)."""
    report.outcome = "skipped"
    report.wasxfail = f"{check} is worth no point, it only tells you something: {message}"


def _measured_under(item) -> dict:
    """The settings the values this test measured were taken under: the entries of its check
    module's `MEASURED_UNDER` ({key prefix: text}) whose prefix names one of the keys."""
    declared = getattr(getattr(item, "module", None), "MEASURED_UNDER", None) or {}
    keys = list(getattr(item, "_pdl_measured", None) or {})
    return {prefix: str(text) for prefix, text in declared.items()
            if any(key == prefix or str(key).startswith(prefix + ".") for key in keys)}


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and longrepr:
        reason = str(longrepr[-1])
        return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
    return str(longrepr or "skipped")


def pytest_terminal_summary(terminalreporter, config):
    outcomes = config.stash.get(CHECK_OUTCOMES, None)
    if not outcomes:
        return
    from grader.reports.terminal import render_check_text
    from grader.scoring.session import score_session
    result = score_session(outcomes, rubrics_dir=config.getoption("--rubrics"),
                           submission=str(config.getoption("--submission") or default_submission()))
    # The answers as the checks read them, as `pdl-grade check` has them in result.json: the
    # written answers' "answered" / "no answer found yet" reads them.
    answers = config.stash.get(CHECK_ANSWERS, {})
    for assignment in result.get("assignments") or []:
        if assignment.get("id") in answers and not assignment.get("answers"):
            assignment["answers"] = answers[assignment["id"]]
    terminalreporter.section("points per task, and what to fix")
    terminalreporter.write(render_check_text(result, selected_only=True, header=False))


@pytest.hookimpl(optionalhook=True)  # pytest-json-report's hook: absent without that plugin
def pytest_json_runtest_metadata(item, call):
    identifier = check_id(item)
    if identifier is None:
        return {}
    metadata = {"check": identifier, "assignment": identifier.split(".")[0]}
    if getattr(item, "_pdl_measured", None):
        metadata["measured"] = item._pdl_measured
        under = _measured_under(item)
        if under:
            metadata["conditions"] = under
    for attribute, key in (("_pdl_answers", "answers"), ("_pdl_reported", "reported"),
                           ("_pdl_flags", "flags")):
        if getattr(item, attribute, None):
            metadata[key] = getattr(item, attribute)
    if call.excinfo is not None and call.when == "call":
        metadata["feedback"] = _feedback(call.excinfo)
        if _unread_answer(call.excinfo):
            metadata["unread_answer"] = _unread_answer(call.excinfo)
        if _graded_by_hand(call.excinfo):
            metadata["graded_by_hand"] = _graded_by_hand(call.excinfo)
    return metadata


class _IntegrityInReport:
    """Puts the session's integrity problems into the JSON report (pytest-json-report's hook
    passes no config, so this small plugin object holds it)."""

    def __init__(self, config):
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report):
        json_report["case_marks"] = list(CASE_MARKS)
        problems = self.config.stash.get(INTEGRITY_PROBLEMS, [])
        if problems:
            json_report["integrity"] = list(problems)
        notes = self.config.stash.get(INTEGRITY_NOTES, [])
        if notes:
            json_report["integrity_notes"] = list(notes)
        environment = self.config.stash.get(ENVIRONMENT_NOTES, [])
        if environment:
            json_report["environment_notes"] = list(environment)


def _unread_answer(excinfo) -> str:
    """The answer a failure says was found but not read (AnswerNotRead), else ""."""
    found = getattr(excinfo.value, "unread_answer", "") if excinfo is not None else ""
    return found if isinstance(found, str) else ""


def _graded_by_hand(excinfo) -> str:
    """What the grader could not do on code that works, where a failure says so (GradedByHand),
    else ""."""
    found = getattr(excinfo.value, "graded_by_hand", "") if excinfo is not None else ""
    return found if isinstance(found, str) else ""


def _feedback(excinfo) -> str:
    error = excinfo.value
    if isinstance(error, AssertionError):
        text = str(error).split("\nassert ")[0]  # drop pytest's rewritten-expression tail
        return text.strip() or "the check's assertion failed"
    return f"{type(error).__name__}: {error}"
