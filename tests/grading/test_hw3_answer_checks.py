"""HW3's report checks on answer sheets a student could really write (pytest on the checks)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def run_checks(submission: Path, select: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "grader" / "checks" / "test_hw3.py"),
         f"--submission={submission}", "-k", select, "-q", "-p", "no:cacheprovider",
         "--rootdir", str(ROOT / "grader" / "checks"), "-c", str(ROOT / "grader" / "checks" / "pytest.ini")],
        capture_output=True, text=True, timeout=600, cwd=ROOT)


@pytest.mark.slow   # runs the reference's HW3 checks for real
def test_a_table_key_written_as_a_word_is_a_missing_row_not_a_crash(tmp_path):
    submission = tmp_path / "sub"
    shutil.copytree(ROOT / "reference", submission)
    (submission / "hw3" / "report.pdf").unlink()  # the sheet is read instead
    sheet = submission / "hw3" / "answers.yaml"
    data = yaml.safe_load(sheet.read_text())
    # ("six" is read as 6, as a TA reads it; a word that is no number leaves the row out.)
    data["answers"]["task2.step_time_table"]["rows"][0]["depth"] = "shallow"
    data["answers"]["task5.transfers_5gpus"]["value"] = 5
    sheet.write_text(yaml.safe_dump(data))
    done = run_checks(submission, "task2_reported_times or task5_reported_counts")
    out = done.stdout + done.stderr
    assert "2 failed, 3 passed" in out, out[-3000:]
    assert "Observed: no step time for 6" in out and "ValueError" not in out
    assert "you reported 5 (hw3/answers.yaml); your code makes 4 GPU-to-GPU transfers" in out
