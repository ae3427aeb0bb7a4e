"""Runs whose numbers a check compares are made on the same kind of GPUs."""
from pathlib import Path

import pytest

from grader.checks import conftest as checks_conftest


@pytest.fixture
def recorded_runs(monkeypatch, tmp_path):
    calls = []

    def fake_run_script(submission, script, **options):
        calls.append((script, options["gpus"], options["force_virtual"]))
        return (script, options["gpus"], options["force_virtual"])

    monkeypatch.setattr(checks_conftest, "run_script", fake_run_script)

    def runs_with(real_gpus):
        monkeypatch.setattr(checks_conftest, "real_gpu_count", lambda: real_gpus)
        return checks_conftest.ScriptRuns(Path("sub"), tmp_path, 10.0, 5)

    yield runs_with, calls


@pytest.mark.parametrize("real, virtual", [(0, False), (1, True), (2, False), (8, False)])
def test_one_gpu_run_compared_with_a_two_gpu_run_is_of_the_same_kind(recorded_runs, real, virtual):
    """With one real GPU, the 2-GPU run is virtual (host random numbers), so the 1-GPU run it
    is compared with must be virtual too; with none or enough, both are of one kind anyway."""
    runs_with, calls = recorded_runs
    runs = runs_with(real)
    assert runs.script("single.py", gpus=1, like_gpus=2) == ("single.py", 1, virtual)
    runs.close()


def test_the_compared_run_does_not_duplicate_a_plain_one_where_kinds_agree(recorded_runs):
    runs_with, calls = recorded_runs
    runs = runs_with(0)
    runs.script("single.py", gpus=1)
    runs.script("single.py", gpus=1, like_gpus=2)
    runs.close()
    assert calls == [("single.py", 1, False)]
