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
    # Without a `time`: the batch's --timeout and 5 minutes to start and write results.
    assert SlurmSettings().with_time_from(1800).time == "00:35:00"
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
    assert args == ["--job-name=pdl-2bd806c9", f"--output={out}/slurm-job.log",
                    f"--chdir={out}", "--nodes=1", "--ntasks=1", "--no-requeue", "--export=ALL",
                    "--comment=pdl-grade-0123456789",
                    "--partition=gpu", "--time=00:10:00", "--gres=gpu:2", "--cpus-per-task=4",
                    "--mem=26G", "--qos=exam"]
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
                           "sbatch --parsable --job-name=pdl-23e5f846 "), line
    for part in ("--partition=gpu", "--gres=gpu:2", "--account=pdl", "--cpus-per-task=4",
                 "--mem=26G", "--time=00:35:00", str(script)):
        assert part in line, f"expected {part} in the sbatch command; observed {line!r}"
    assert "timeout --kill-after=30 1800 python3 -m grader grade" in run.out, (
        "expected the script printed in full")
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
def test_jobs_ask_for_the_cores_and_memory_a_grading_uses(tmp_path, monkeypatch):
    """Jobs had asked for no cores or memory (a cluster's default is often 1 core and a few GB)
    while a grading runs up to 4 runs of --memory each side by side."""
    monkeypatch.delenv("PDL_SANDBOX_MEMORY", raising=False)
    grading = job(tmp_path)
    args = SlurmBackend(SlurmSettings()).sbatch_args(grading, 2)
    assert "--cpus-per-task=4" in args and "--mem=26G" in args, (   # 4 x 6G + 2G
        f"expected a core per run side by side and 4 x 6G + 2G; observed {args}")
    monkeypatch.setenv("PDL_SANDBOX_MEMORY", str(4 * 2**30))           # --memory 4G
    assert "--mem=18G" in SlurmBackend(SlurmSettings()).sbatch_args(grading, 2)
    # Fewer cores: fewer runs side by side, and the memory follows.
    fewer = SlurmBackend(SlurmSettings.load(None, cpus_per_task=2)).sbatch_args(grading, 2)
    assert "--cpus-per-task=2" in fewer and "--mem=10G" in fewer, fewer
    monkeypatch.setenv("PDL_SANDBOX_MEMORY", str(512 * 2**20))
    assert "--mem=4G" in SlurmBackend(SlurmSettings()).sbatch_args(grading, 2)   # 4 x 512M + 2G
    # The settings win; a mem below what the runs may use is said, not refused.
    monkeypatch.delenv("PDL_SANDBOX_MEMORY")
    config = tmp_path / "slurm.yaml"
    config.write_text("cpus_per_task: 16\nmem: 16G\n")
    given = SlurmBackend(SlurmSettings.load(config))
    args = given.sbatch_args(grading, 2)
    assert "--cpus-per-task=16" in args and "--mem=16G" in args and args.count("--mem=16G") == 1
    assert any("SLURM mem 16G is less than a grading may use (4 runs side by side x 6G "
               "(--memory) + 2G for the grader = 26G)" in line for line in given.warnings()), \
        given.warnings()
    assert SlurmBackend(SlurmSettings()).warnings() == []
    # The script says what it asks for and why.
    script = SlurmBackend(SlurmSettings()).job_script(grading)
    assert "#SBATCH --cpus-per-task=4\n" in script and "#SBATCH --mem=26G\n" in script
    assert ("#   --mem=26G: 4 run(s) side by side x 6G (each run's limit, --memory) + 2G for "
            "the grader itself") in script, script
    # ...and hands the grading the same numbers, as the job's own environment.
    assert f"export PDL_SANDBOX_MEMORY={6 * 2**30}\n" in script
    assert "export PDL_CPU_SHARE=${SLURM_CPUS_PER_TASK:-4}\n" in script


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


@pytest.mark.parametrize("text, problem", [
    ("cpus_per_task: 0\n", "cpus_per_task must be a positive integer"),
    ("cpus_per_task: lots\n", "cpus_per_task must be a positive integer"),
    ("mem: 16 GB\n", "mem must be a SLURM memory size"),
])
def test_bad_resources_are_refused(tmp_path, text, problem):
    config = tmp_path / "slurm.yaml"
    config.write_text(text)
    with pytest.raises(SlurmConfigError, match=problem):
        SlurmSettings.load(config)


def test_each_job_is_named_per_student_without_their_name_unless_asked(tmp_path):
    """Every job had been named pdl-grade-<hash of DIR>: squeue and sacct told no student
    from another. The batch's hash moved to --comment (the jobs a killed batch leaves). A
    job's name is a tag per student by default: squeue shows job names to every user of a
    cluster that does not hide them (PrivateData=jobs), and a key holds the student's name;
    `job_names: keys` names the jobs by key."""
    from grader.cluster.backend import JOB_NAME_CHARS, job_name
    grading = GradeJob(Student("Alice_Tamm_1001", "Alice Tamm"), tmp_path / "s",
                       tmp_path / "w" / "x", ("hw3",))
    args = SlurmBackend(SlurmSettings()).sbatch_args(grading, 5, "pdl-grade-0123456789")
    assert args[0] == "--job-name=" + job_name("Alice_Tamm_1001") and "Alice" not in args[0]
    assert "--comment=pdl-grade-0123456789" in args
    assert job_name("Alice_Tamm_1001") == job_name("Alice_Tamm_1001") != job_name("Bob_Kask_1002")
    args = SlurmBackend(SlurmSettings(job_names="keys")).sbatch_args(grading, 5, "x")
    assert args[0] == "--job-name=Alice_Tamm_1001"
    with pytest.raises(SlurmConfigError):
        SlurmSettings(job_names="names").validate()
    def by_key(key):
        return job_name(key, "keys")
    assert by_key("Mari-Liis_O_Connor_1010") == "Mari-Liis_O_Connor_1010"
    assert by_key("Jüri Õunapuu_1009") == "Jüri_Õunapuu_1009"     # letters kept, no blanks
    assert by_key("a,b;c") == "a_b_c"           # no commas: squeue/scancel --name lists
    long_a, long_b = by_key("x" * 100 + "_1001"), by_key("x" * 100 + "_1002")
    assert len(long_a) <= JOB_NAME_CHARS and long_a != long_b and long_a.startswith("xxxx")


def test_the_job_time_leaves_a_margin_over_the_graders_own_timeout(tmp_path):
    """--time had equalled the batch's --timeout (1800 s): SLURM killed the job just as the
    grader would have recorded its own timeout, and the report said SLURM's limit."""
    backend = SlurmBackend(SlurmSettings())
    backend.prepare(1800)
    grading = job(tmp_path)
    assert "--time=00:35:00" in backend.sbatch_args(grading, 2)
    script = backend.job_script(grading)
    assert "\ntimeout --kill-after=30 1800 " in script and backend.warnings() == []
    # A time with no margin is the instructor's to give, and is said.
    tight = SlurmBackend(SlurmSettings(time="00:30:00"))
    tight.prepare(1800)
    assert "--time=00:30:00" in tight.sbatch_args(grading, 2)
    assert any("SLURM time 00:30:00 leaves less than 5 min over the batch's --timeout "
               "(1800 s)" in line for line in tight.warnings()), tight.warnings()


def test_a_grading_stopped_by_its_own_timeout_is_recorded_as_timed_out(tmp_path):
    from grader.cluster.backend import TIMED_OUT_MARK, _Running
    from grader.cluster.slurm import JobInfo
    grading = job(tmp_path)
    grading.out.mkdir(parents=True)
    (grading.out / "slurm-job.log").write_text(f"pdl-grade: SLURM job 7 on n1\n{TIMED_OUT_MARK} "
                                               "5 s (the batch's --timeout) and was stopped\n")
    run = _Running(grading, "7", 2, 0.0, 0.0)
    info = JobInfo("7", "FAILED", "NonZeroExitCode", 124, None, 6.0, None, "00:06:00", "scontrol")
    outcome = SlurmBackend(SlurmSettings())._settle(run, info)
    assert (outcome.status, outcome.reason) == ("timed_out", None)   # the pipeline's own words
    # Exit 124 without the script's line is the grade command's own failure.
    (grading.out / "slurm-job.log").write_text("Traceback ...\n")
    assert SlurmBackend(SlurmSettings())._settle(run, info).status == "crashed"


def _venv(folder: Path, grader: bool) -> Path:
    """A venv that sees none of this interpreter's packages, with a grader of its own or none."""
    import subprocess
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    if grader:
        site = next(folder.glob("lib/python3*/site-packages"))
        (site / "grader").mkdir()
        (site / "grader" / "__init__.py").write_text("")
    return folder


def _run_script(backend: SlurmBackend, grading: GradeJob) -> str:
    import subprocess
    grading.out.mkdir(parents=True, exist_ok=True)
    script = backend._write_script(grading, 0, None)
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env,
                          cwd=grading.out, timeout=60)
    return done.stdout + done.stderr


def test_the_grader_the_setup_provides_wins_over_the_submit_hosts_checkout(tmp_path,
                                                                           monkeypatch):
    """With `setup:` activating a venv, the script had put the submit host's checkout on
    PYTHONPATH after it: the checkout shadowed the venv's grader."""
    import grader
    checkout = str(Path(grader.__file__).resolve().parents[1])
    # What the job's python3 imports as `grader` (the grade command's arguments follow).
    show = ["python3", "-c", "import grader, sys; print('GRADER', grader.__file__)"]
    grading = job(tmp_path)
    venv = _venv(tmp_path / "venv", grader=True)
    backend = SlurmBackend(SlurmSettings(setup=(f"source {venv}/bin/activate",), command=tuple(show)))
    backend.prepare(60)
    log = _run_script(backend, grading)
    assert f"GRADER {venv}/lib/" in log, (
        f"expected the venv's grader to run; observed:\n{log}")
    assert f"pdl-grade: grader from {venv}/lib/" in log, log
    assert "# The grader: the one the environment above provides" in backend.job_script(grading)
    # A setup whose environment has no grader: the checkout, on PYTHONPATH.
    bare = _venv(tmp_path / "bare", grader=False)
    backend = SlurmBackend(SlurmSettings(setup=(f"source {bare}/bin/activate",), command=tuple(show)))
    log = _run_script(backend, grading)
    assert f"GRADER {checkout}/grader/__init__.py" in log, log
    # ...and where that checkout is not on the node either, the log says what to do.
    from grader.cluster import backend as backend_module
    monkeypatch.setattr(backend_module, "GRADER_PARENT", tmp_path / "not-shared")
    log = _run_script(backend, grading)
    assert ("cannot import the grader and the submit host's checkout "
            f"{tmp_path / 'not-shared'} is not on this node") in log, log
    assert "GRADER" not in log
