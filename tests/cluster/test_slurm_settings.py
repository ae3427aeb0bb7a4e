"""The SLURM backend's settings, job script and parsing of SLURM's output: no cluster needed."""
import sys
from pathlib import Path

import pytest

from grader.batch.inputs import Student
from grader.batch.scheduler import GradeJob
from grader.cluster import SlurmBackend, SlurmConfigError, SlurmSettings
from grader.cluster.config import seconds_to_time, time_to_seconds
from grader.cluster.slurm import _info_from_fields, parse_fields


def job(tmp_path, assignments=("practical4",), rubrics_dir=None) -> GradeJob:
    return GradeJob(Student("alice", "Alice"), tmp_path / "scratch" / "alice",
                    tmp_path / "work" / "alice-1234abcd", tuple(assignments), rubrics_dir, 60.0)


def test_options_override_the_file_which_overrides_defaults(tmp_path):
    config = tmp_path / "slurm.yaml"
    config.write_text("partition: short\ntime: '01:00:00'\naccount: pdl\n"
                      "setup: ['module load cuda']\nsbatch_args: ['--constraint=a100']\n")
    settings = SlurmSettings.load(config, partition="gpu", time=None, gpus_per_job=None)
    assert (settings.partition, settings.time, settings.account) == ("gpu", "01:00:00", "pdl")
    assert settings.setup == ("module load cuda",) and settings.sbatch_args == ("--constraint=a100",)
    # Setup lines prepare the environment the job grades in: its python3, not this one's path.
    assert settings.grade_command() == ("python3", "-m", "grader", "grade")


@pytest.mark.parametrize("text, problem", [
    ("partition: gpu\ngpu: 4\n", "unknown SLURM setting(s): gpu"),
    ("time: soon\n", "not a SLURM time"),
    ("gpus_per_job: -1\n", "non-negative"),
    ("setup: module load cuda\n", "setup must be a list of strings"),
    ("- gpu\n", "must be a mapping"),
])
def test_bad_settings_stop_the_batch_with_a_reason(tmp_path, text, problem):
    config = tmp_path / "slurm.yaml"
    config.write_text(text)
    with pytest.raises(SlurmConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        SlurmSettings.load(config)


def test_slurm_time_formats():
    assert time_to_seconds("00:30:00") == 1800
    assert time_to_seconds("30") == 1800                 # plain minutes
    assert time_to_seconds("5:30") == 330                # minutes:seconds
    assert time_to_seconds("1-02:00:00") == 26 * 3600
    assert seconds_to_time(1800) == "00:30:00" and seconds_to_time(61) == "00:02:00"
    assert SlurmSettings().with_time_from(1800).time == "00:30:00"
    assert SlurmSettings(time="00:05:00").with_time_from(1800).time == "00:05:00"


def test_gpus_come_from_the_rubrics_unless_given(tmp_path):
    assert SlurmBackend(SlurmSettings()).gpus_for(job(tmp_path)) == 2            # practical4.yaml
    assert SlurmBackend(SlurmSettings()).gpus_for(job(tmp_path, ("practical4", "hw3"))) == 5
    assert SlurmBackend(SlurmSettings(gpus_per_job=4)).gpus_for(job(tmp_path, ("hw3",))) == 4


def test_sbatch_arguments_and_job_script(tmp_path):
    backend = SlurmBackend(SlurmSettings(partition="gpu", time="00:10:00", cpus_per_task=4,
                                         setup=("module load cuda/12",), sbatch_args=("--qos=exam",)))
    grading = job(tmp_path, rubrics_dir="rubrics")
    out = grading.out.resolve()
    args = backend.sbatch_args(grading, 2, "pdl-grade-0123456789")
    assert args == ["--job-name=pdl-grade-0123456789", f"--output={out}/slurm-job.log",
                    f"--chdir={out}", "--nodes=1", "--ntasks=1", "--no-requeue", "--export=ALL",
                    "--partition=gpu", "--time=00:10:00", "--gres=gpu:2", "--cpus-per-task=4",
                    "--qos=exam"]
    assert "--gres" not in " ".join(backend.sbatch_args(grading, 0, "x"))
    script = backend.job_script(grading)
    assert script.startswith("#!/bin/bash\n") and "module load cuda/12\n" in script
    assert script.rstrip().splitlines()[-1] == (
        f"exec python3 -m grader grade {grading.submission.resolve()} --out {out} "
        f"--assignment practical4 --check-timeout 60 --rubrics {Path('rubrics').resolve()}")


def test_scontrol_and_jobcomp_lines_are_parsed():
    line = ("JobId=17 JobName=pdl-grade-x UserId=root(0) JobState=TIMEOUT Reason=TimeLimit "
            "Dependency=(null) ExitCode=0:15 RunTime=00:01:30 TimeLimit=00:01:00 "
            "StartTime=2026-01-02T03:04:05 EndTime=2026-01-02T03:05:35 TresPerNode=gres:gpu:2")
    info = _info_from_fields(parse_fields(line), "scontrol")
    assert (info.job_id, info.state, info.reason, info.exit_code, info.signal) == (
        "17", "TIMEOUT", "TimeLimit", 0, 15)
    assert info.run_time_s == 90 and info.time_limit == "00:01:00" and info.terminal
    completing = _info_from_fields(parse_fields("JobId=18 JobState=COMPLETING Reason=None ExitCode=0:0"),
                                   "scontrol")
    assert not completing.terminal and completing.reason is None
    comp = ("JobId=19 UserId=root(0) GroupId=root(0) Name=wrap JobState=CANCELLED Partition=gpu "
            "TimeLimit=5 StartTime=2026-01-02T03:04:05 EndTime=2026-01-02T03:04:06 NodeList=vm "
            "ExitCode=0:0")
    info = _info_from_fields(parse_fields(comp), "jobcomp")
    assert (info.state, info.terminal, info.source) == ("CANCELLED", True, "jobcomp")


def test_the_job_grades_with_the_python_its_setup_lines_prepare(tmp_path):
    """The job had run this host's interpreter by its absolute path after the setup lines,
    so `source /shared/venv/bin/activate` changed nothing."""
    grading = job(tmp_path)
    venv = SlurmBackend(SlurmSettings(setup=("source /shared/venv/bin/activate",)))
    script = venv.job_script(grading).splitlines()
    assert script[-1].startswith("exec python3 -m grader grade "), (
        f"expected the setup's python3 after the setup lines; observed {script[-1]!r} "
        "(grader/cluster/config.py SlurmSettings.interpreter)")
    assert script.index("source /shared/venv/bin/activate") < len(script) - 1
    assert 'echo "pdl-grade: grading with $(command -v python3 || echo python3 not found)"' \
        in script, script
    # No setup lines: this interpreter on the shared filesystem, as before; or the one named.
    assert SlurmBackend(SlurmSettings()).job_script(grading).splitlines()[-1].startswith(
        f"exec {sys.executable} -m grader grade ")
    named = SlurmSettings.load(None, python="/shared/conda/bin/python")
    assert SlurmBackend(named).job_script(grading).splitlines()[-1].startswith(
        "exec /shared/conda/bin/python -m grader grade ")


def test_a_dry_run_writes_the_job_scripts_and_says_the_sbatch_commands(tmp_path, pdl_grade,
                                                                       monkeypatch):
    """No way had existed to see what would be submitted short of a fake sbatch on PATH, and
    a cluster's rejection of every job was recorded in the gradebook."""
    from grader.cluster import slurm
    from tests.support.fake_graders import make_submission

    def submitted(*args, **kwargs):
        raise AssertionError("a dry run called sbatch")
    monkeypatch.setattr(slurm, "sbatch", submitted)
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Alice Tamm_401101_assignsubmission_file_", score=5)
    config = tmp_path / "slurm.yaml"
    config.write_text("account: pdl\nsetup: ['source /shared/venv/bin/activate']\n")
    run = pdl_grade("batch", subs, "--out", out, "--assignment", "practical4", "--backend",
                    "slurm", "--partition", "gpu", "--slurm-config", config, "--dry-run")
    assert run.code == 0, run.err
    script = out / "slurm-dry-run" / "Alice_Tamm_401101" / "slurm-job.sh"
    assert script.is_file(), f"expected the job's script at {script}; stdout:\n{run.out}"
    line = next(line for line in run.out.splitlines() if line.startswith("Alice_Tamm_401101:"))
    assert line.startswith("Alice_Tamm_401101: would be graded (practical4), submitted as: "
                           "sbatch --parsable --job-name=pdl-grade-"), line
    for part in ("--partition=gpu", "--gres=gpu:2", "--account=pdl", str(script)):
        assert part in line, f"expected {part} in the sbatch command; observed {line!r}"
    assert "exec python3 -m grader grade" in run.out, "expected the script printed in full"
    assert not (out / "gradebook.sqlite").exists(), (
        "expected a dry run to record nothing; it created gradebook.sqlite (grader/batch/pipeline.py)")
    # --out under /tmp is each node's own disk on a cluster: said.
    assert f"warning: --out {out} is under /tmp" in run.err, run.err


def test_node_local_folders_are_told():
    from grader.cluster.backend import node_local
    assert node_local(Path("/tmp/grades")) == "/tmp"
    assert node_local(Path("/dev/shm/x")) == "/dev/shm"
    assert node_local(Path("/shared/course/grades")) is None


# -- instructor audit F8 -------------------------------------------------------------------------
@pytest.mark.parametrize("text, meant", [
    ("cpus: 8\n", "cpus_per_task"),
    ("cpus-per-task: 8\n", "cpus_per_task"),
    ("memory: 32G\n", "mem"),
    ("extra: ['--constraint=a100']\n", "sbatch_args"),
    ("gpus: 4\n", "gpus_per_job"),
    ("partiton: gpu\n", "partition"),
])
def test_a_misnamed_setting_is_refused_naming_the_setting_meant(tmp_path, text, meant):
    """README had said slurm.yaml may set "cpus/mem" and "extra" arguments; `cpus: 8` was
    refused as "unknown SLURM setting(s): cpus", naming no setting it could have been."""
    config = tmp_path / "slurm.yaml"
    config.write_text(text)
    with pytest.raises(SlurmConfigError) as refused:
        SlurmSettings.load(config)
    message = str(refused.value)
    key = text.split(":")[0]
    assert f"unknown SLURM setting(s): {key} (did you mean {meant}?)" in message, message
    for accepted in ("partition", "gpus_per_job", "time", "cpus_per_task", "mem", "account",
                     "qos", "sbatch_args", "setup", "python", "command"):
        assert accepted in message.split("the settings are ", 1)[1], message
