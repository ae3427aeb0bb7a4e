"""`--record-file-costs PATH` (tests/support/file_costs.py): each test file's seconds, tests,
worker and span in this run, written as the run goes."""
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tests.support import file_costs
from tests.support.file_costs import FileCosts

ROOT = Path(__file__).resolve().parents[2]


def report(nodeid, when, duration, start, worker=None, outcome="passed"):
    node = SimpleNamespace(gateway=SimpleNamespace(id=worker)) if worker else None
    return SimpleNamespace(nodeid=nodeid, when=when, duration=duration, start=start,
                           stop=start + duration, node=node, passed=outcome == "passed")


def test_a_files_tests_are_summed_with_their_worker_and_span(tmp_path, monkeypatch):
    monkeypatch.setattr(file_costs, "WRITE_EVERY_S", 1e9)     # only at the end, below
    costs = FileCosts(tmp_path / "costs.json")
    began = costs.began
    for when, duration, start in (("setup", 2.0, 1.0), ("call", 0.5, 3.0), ("teardown", 0.25, 3.5)):
        costs.pytest_runtest_logreport(report("tests/a/test_x.py::test_one", when, duration,
                                              began + start, worker="gw1"))
    costs.pytest_runtest_logreport(report("tests/a/test_x.py::test_two[p]", "setup", 0.25,
                                          began + 4.0, worker="gw1", outcome="skipped"))
    costs.pytest_runtest_logreport(report("tests/b/test_y.py::K::test_three", "call", 5.0,
                                          began + 0.5, worker="gw0"))
    assert not (tmp_path / "costs.json").exists()
    costs.pytest_sessionfinish()
    recorded = json.loads((tmp_path / "costs.json").read_text())
    assert list(recorded) == ["tests/b/test_y.py", "tests/a/test_x.py"], "most seconds first"
    assert recorded["tests/a/test_x.py"] == {"seconds": 3.0, "tests": 2, "worker": "gw1",
                                             "started_s": 1.0, "ended_s": 4.2}, recorded
    assert recorded["tests/b/test_y.py"]["worker"] == "gw0"


def test_a_run_stopped_before_its_end_leaves_the_files_done_so_far(tmp_path, monkeypatch):
    monkeypatch.setattr(file_costs, "WRITE_EVERY_S", 0.0)
    costs = FileCosts(tmp_path / "costs.json")
    costs.pytest_runtest_logreport(report("tests/a/test_x.py::test_one", "call", 1.0,
                                          costs.began))
    recorded = json.loads((tmp_path / "costs.json").read_text())
    assert recorded["tests/a/test_x.py"]["seconds"] == 1.0 and \
        recorded["tests/a/test_x.py"]["worker"] is None, recorded


def test_the_option_records_a_real_run(tmp_path):
    """The option as the suite's command line takes it (tests/conftest.py)."""
    path = tmp_path / "costs.json"
    target = "tests/suite/test_file_costs.py::test_a_run_stopped_before_its_end_leaves_the_files_done_so_far"
    done = subprocess.run([sys.executable, "-m", "pytest", target, "-q", "-p", "no:cacheprovider",
                           "--record-file-costs", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    recorded = json.loads(path.read_text())
    assert list(recorded) == ["tests/suite/test_file_costs.py"], recorded
    assert recorded["tests/suite/test_file_costs.py"]["tests"] == 1
