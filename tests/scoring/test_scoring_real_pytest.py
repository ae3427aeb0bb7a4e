"""Score a report that pytest-json-report really wrote, so the format assumptions in
grader/scoring/check_results.py are checked against the installed plugin, not only our builders."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from grader.scoring import parse_rubric, score_assignment

pytest.importorskip("pytest_jsonreport")

# Emulates grader.pytest_plugin: check id and feedback into each test's metadata.
CONFTEST = '''
import pytest

def pytest_configure(config):
    config.addinivalue_line("markers", "check(id): rubric check")

def pytest_json_runtest_metadata(item, call):
    marker = item.get_closest_marker("check")
    if marker is None:
        return {}
    data = {"check": marker.args[0], "assignment": marker.args[0].split(".")[0]}
    if call.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(AssertionError):
        data["feedback"] = str(call.excinfo.value).splitlines()[0]
    return data

@pytest.fixture
def student_run():
    raise RuntimeError("student script crashed: CUDA error: invalid device ordinal")
'''

CHECKS = '''
import pytest

@pytest.mark.check("hw3.task1.layout")
@pytest.mark.parametrize("gpus", [2, 3, 5])
def test_layout(gpus):
    observed = 2 if gpus == 3 else 3
    assert observed == 3, f"expected 3 layers on cuda:0, observed {observed}"

@pytest.mark.check("hw3.task1.transfer")
def test_transfer():
    assert True

@pytest.mark.check("hw3.task2.speedup")
def test_speedup():
    pytest.skip("needs 2 real GPUs")

@pytest.mark.check("hw3.task2.marker_skip")
@pytest.mark.skip(reason="needs 4 real GPUs")
def test_marker_skip():
    pass

@pytest.mark.check("hw3.task3.runs")
def test_runs(student_run):
    pass

def test_helper_without_check():
    assert False, "not a graded check: ignored"
'''

RUBRIC = {"assignment": "hw3", "title": "HW3", "version": "t", "gpus": 5, "items": [
    {"id": "hw3.task1", "title": "Task 1", "checks": [
        {"check": "hw3.task1.layout", "points": 2, "partial": "proportional"},
        {"check": "hw3.task1.transfer", "points": 1}]},
    {"id": "hw3.task2", "title": "Task 2", "checks": [
        {"check": "hw3.task2.speedup", "points": 1},
        {"check": "hw3.task2.marker_skip", "points": 1}]},
    {"id": "hw3.task3", "title": "Task 3", "checks": [{"check": "hw3.task3.runs", "points": 3}]},
    {"id": "hw3.task4", "title": "Task 4", "checks": [{"check": "hw3.task4.never_written", "points": 1}]},
    {"id": "hw3.task4.why", "title": "Task 4 - written", "kind": "manual", "points": 2},
]}


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checks")
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "test_hw3_checks.py").write_text(textwrap.dedent(CHECKS))
    (folder / "pytest.ini").write_text("[pytest]\n")  # keeps the rootdir here
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:pdl_grader",
         "--json-report", "--json-report-file=report.json", "."],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    path = folder / "report.json"
    assert path.exists(), proc.stdout + proc.stderr
    return json.loads(path.read_text())


def test_real_report_scores(real_report):
    result = score_assignment(parse_rubric(RUBRIC), real_report,
                              overrides={"hw3.task4.why": {"points": 2, "comment": "Good."}})
    items = {i.id: i for i in result.items}

    task1 = items["hw3.task1"]
    layout = task1.checks[0]
    assert (layout.passed, layout.failed, layout.score) == (2, 1, 1.33)
    assert layout.cases[0].case == "[3]"
    assert layout.cases[0].message == "expected 3 layers on cuda:0, observed 2"
    assert (task1.status, task1.score, task1.max_score) == ("partial", 2.33, 3)

    task2 = items["hw3.task2"]
    assert (task2.status, task2.score, task2.max_score) == ("skipped", 0, 0)
    assert "hw3.task2.speedup was skipped (needs 2 real GPUs)" in task2.feedback
    assert "hw3.task2.marker_skip was skipped (needs 4 real GPUs)" in task2.feedback

    task3 = items["hw3.task3"]
    assert (task3.status, task3.score, task3.max_score) == ("error", 0, 3)
    assert "student script crashed: CUDA error: invalid device ordinal" in task3.feedback

    task4 = items["hw3.task4"]
    assert (task4.status, task4.max_score) == ("error", 1)
    assert "check hw3.task4.never_written did not run" in task4.feedback

    assert items["hw3.task4.why"].score == 2
    assert (result.score, result.max_score, result.excluded_points) == (4.33, 9, 2)
    assert result.errors == ["hw3.task4: check 'hw3.task4.never_written' did not run"]
