"""`--memory` of `pdl-grade grade` and `batch`: the memory one run of student code may use."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.common.run_memory import (DEFAULT_RUN_MEMORY_BYTES, RUN_MEMORY_ENV, parse_size,
                                      run_memory_bytes, set_run_memory)
from grader.harness.execute import run_policy

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, size", [("6G", 6 * 2**30), ("512M", 512 * 2**20),
                                        ("1.5GiB", 3 * 2**29), ("4096MB", 4 * 2**30),
                                        ("2 g", 2 * 2**30), ("1073741824", 2**30)])
def test_sizes_read_as_free_and_slurm_write_them(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text, says", [("lots", "expected a size such as 6G"),
                                        ("-1G", "expected a size"), ("6X", "expected a size"),
                                        ("100M", "at least 512M")])
def test_a_size_that_is_no_size_or_too_small_is_refused_saying_why(text, says):
    with pytest.raises(ValueError, match=says):
        parse_size(text)


def test_the_limit_reaches_every_runs_policy(tmp_path):
    environ: dict = {}
    assert run_memory_bytes(environ) == DEFAULT_RUN_MEMORY_BYTES == 6 * 2**30
    set_run_memory("2G", environ)
    assert environ[RUN_MEMORY_ENV] == str(2 * 2**30) and run_memory_bytes(environ) == 2 * 2**30
    set_run_memory(None, environ)                      # no --memory: what was set stays
    assert run_memory_bytes(environ) == 2 * 2**30


def test_run_policy_takes_the_gradings_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(RUN_MEMORY_ENV, str(3 * 2**30))
    assert run_policy(tmp_path, tmp_path, {}).memory_bytes == 3 * 2**30
    monkeypatch.delenv(RUN_MEMORY_ENV)
    assert run_policy(tmp_path, tmp_path, {}).memory_bytes == DEFAULT_RUN_MEMORY_BYTES


@pytest.mark.parametrize("command", ["grade", "batch"])
def test_a_bad_memory_option_stops_before_grading(command, tmp_path):
    done = subprocess.run([sys.executable, "-m", "grader", command, str(ROOT / "reference"),
                           "--out", str(tmp_path / "out"), "--memory", "100M"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--memory '100M': a run needs at least 512M" in done.stderr
    assert not (tmp_path / "out" / "result.json").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("cgroups")
def test_a_run_over_the_given_limit_is_stopped_and_said_so(tmp_path):
    """1.5 GiB held by Practical 4's script: well inside the default, over `--memory 1G`."""
    submission = tmp_path / "submission"
    shutil.copytree(ROOT / "reference" / "practical4", submission / "practical4")
    script = submission / "practical4" / "concepts.py"
    script.write_text("_held = b'x' * (3 * 2**29)\n" + script.read_text())
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--out",
                           str(tmp_path / "out"), "--assignment", "practical4", "--memory", "1G"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["score"] < 9.5
    assert "used more memory than allowed and was stopped" in json.dumps(result), (
        "expected the checks to say the run went over --memory 1G")
