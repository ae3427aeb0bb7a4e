"""A SLURM job whose `pdl-grade grade` exited 3 (graded, an assignment with a grading problem
that its result.json names: grader/common/exit_codes.py) is a finished grading, read as a local
batch reads one; any other failure is still a crash. The real cluster's run of it:
test_slurm_backend.py."""
from pathlib import Path

import pytest

from grader.batch.inputs import Student
from grader.batch.scheduler import GradeJob
from grader.cluster import SlurmBackend, SlurmSettings, slurm
from grader.cluster.backend import _Running


def settled(tmp_path: Path, state: str, exit_code: int, signal: int | None = None):
    (tmp_path / "result.json").write_text("{}")
    job = GradeJob(Student(key="alice", name="Alice"), tmp_path, tmp_path, ("practical4",))
    backend = SlurmBackend(SlurmSettings.load(command=["true"], result_wait_s=0))
    info = slurm.JobInfo(job_id="7", state=state, reason=None, exit_code=exit_code, signal=signal,
                         run_time_s=1.0, start_time=None, time_limit=None, source="scontrol")
    return backend._settle(_Running(job, "7", 1, 0.0, 0.0), info)


@pytest.mark.parametrize("state, code, status", [
    ("COMPLETED", 0, "finished"), ("FAILED", 3, "finished"),
    ("FAILED", 1, "crashed"), ("FAILED", 2, "crashed")])
def test_exit_3_is_a_grading_whose_result_says_its_problem(tmp_path, state, code, status):
    outcome = settled(tmp_path, state, code)
    assert outcome.status == status, outcome
    assert outcome.reason is None if status == "finished" else "FAILED" in outcome.reason


def test_a_signal_is_never_a_grading(tmp_path):
    assert settled(tmp_path, "FAILED", 3, signal=9).status == "crashed"
