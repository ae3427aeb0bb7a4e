"""A grading whose folder cannot be made fails alone: the scheduler says why and goes on.

A 251-character upload name once made a folder name no file system takes; `mkdir` raised out
of the scheduler and stopped the batch at that upload, on every rerun.
"""

from grader.batch.inputs import Student
from grader.batch.scheduler import GradeJob, run_jobs


def _write_result(job: GradeJob) -> None:
    (job.out / "result.json").write_text("{}")


def test_a_job_whose_folder_cannot_be_made_is_its_own_failure(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    jobs = [GradeJob(Student("a", "a"), tmp_path, blocker / "out", ("practical4",)),
            GradeJob(Student("b", "b"), tmp_path, tmp_path / "b-out", ("practical4",))]
    outcomes = {o.job.student.key: o for o in run_jobs(jobs, _write_result, 1, 60.0)}
    assert outcomes["a"].status == "crashed"
    assert outcomes["a"].reason.startswith("its grading folder could not be made: Not a directory")
    assert outcomes["b"].status == "finished" and (tmp_path / "b-out" / "result.json").is_file()


def test_a_name_too_long_for_a_folder_is_said_and_the_next_job_runs(tmp_path):
    jobs = [GradeJob(Student("a", "a"), tmp_path, tmp_path / ("x" * 300), ("practical4",)),
            GradeJob(Student("b", "b"), tmp_path, tmp_path / "b-out", ("practical4",))]
    outcomes = [(o.job.student.key, o.status, o.reason) for o in run_jobs(jobs, _write_result, 2, 60.0)]
    assert ("a", "crashed", "its grading folder could not be made: File name too long") in outcomes
    assert ("b", "finished", None) in outcomes
