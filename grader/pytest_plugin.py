"""The pytest plugin behind `pytest grader/` (registered through the `pytest11` entry point).

- `--submission PATH` (or `PDL_SUBMISSION`): the folder to grade; `student_template/` by default.
- `--gpus N`: the size of the node for checks that do not fix their own.
- `@pytest.mark.gpus(n)`: the check needs n *real* GPUs; elsewhere it is skipped, with that
  reason, and never faked.
- `@pytest.mark.check("hw3.task3.balanced")`: the rubric check a test demonstrates; it goes
  into pytest-json-report's metadata with the failure's feedback, for the scorer.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.common.hardware import real_gpu_count

REPO_ROOT = Path(__file__).resolve().parent.parent
# Filled by the checks' `node` fixture: observations of the session's runs that the grader's
# instrumentation did not write (forged or removed records); they go into the JSON report.
INTEGRITY_PROBLEMS = pytest.StashKey[list]()


def default_submission() -> Path:
    if os.environ.get("PDL_SUBMISSION"):
        return Path(os.environ["PDL_SUBMISSION"])
    for base in (Path.cwd(), REPO_ROOT):
        if (base / "student_template").is_dir():
            return base / "student_template"
    return Path.cwd() / "student_template"


def pytest_addoption(parser):
    group = parser.getgroup("pdl-autograder")
    group.addoption("--submission", default=None,
                    help="submission folder to grade (default: $PDL_SUBMISSION or student_template/)")
    group.addoption("--gpus", type=int, default=None,
                    help="GPUs of the node for checks that do not set their own (default 5)")
    group.addoption("--rubrics", default=None,
                    help="rubrics folder (default: the grader's rubrics/); says where answers "
                         "are read from (answer sheet and/or PDF report)")
    group.addoption("--check-timeout", type=float, default=180.0,
                    help="the most seconds one run of student code may take before it counts as "
                         "hung (a rubric's run_timeout_s may give less; default 180)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpus(n): needs n real GPUs; skipped where fewer are present")
    config.addinivalue_line("markers", "check(id): the rubric check this test demonstrates")
    config.pluginmanager.register(_IntegrityInReport(config), "pdl-integrity-report")
    package = Path(__file__).resolve().parent
    if config.option.tbstyle == "auto" and config.args and all(
            Path(arg.split("::")[0]).resolve().is_relative_to(package) for arg in config.args):
        # A failing check's message is the feedback; the grader's own code is noise to a student.
        config.option.tbstyle = "line"


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


@pytest.hookimpl(optionalhook=True)  # pytest-json-report's hook: absent without that plugin
def pytest_json_runtest_metadata(item, call):
    identifier = check_id(item)
    if identifier is None:
        return {}
    metadata = {"check": identifier, "assignment": identifier.split(".")[0]}
    if getattr(item, "_pdl_measured", None):
        metadata["measured"] = item._pdl_measured
    for attribute, key in (("_pdl_answers", "answers"), ("_pdl_reported", "reported"),
                           ("_pdl_flags", "flags")):
        if getattr(item, attribute, None):
            metadata[key] = getattr(item, attribute)
    if call.excinfo is not None and call.when == "call":
        metadata["feedback"] = _feedback(call.excinfo)
    return metadata


class _IntegrityInReport:
    """Puts the session's integrity problems into the JSON report (pytest-json-report's hook
    passes no config, so this small plugin object holds it)."""

    def __init__(self, config):
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report):
        problems = self.config.stash.get(INTEGRITY_PROBLEMS, [])
        if problems:
            json_report["integrity"] = list(problems)


def _feedback(excinfo) -> str:
    error = excinfo.value
    if isinstance(error, AssertionError):
        text = str(error).split("\nassert ")[0]  # drop pytest's rewritten-expression tail
        return text.strip() or "the check's assertion failed"
    return f"{type(error).__name__}: {error}"
