"""`pdl-grade batch --backend slurm` on a real single-node SLURM cluster (conftest.py):
4 fake GPUs, partition `gpu`. Most tests use the fake grade command (fake_grade_cmd.py);
one runs the real grader on reference/practical4.

The time-limit test needs SLURM's own pace (a limit is at least one minute and slurmctld
checks limits every 30 s: 60-90 s), so its batch starts before the other tests, in its own
process, and is checked last."""
import csv
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_graders import calls, fake_grade, make_submission, zip_folder
from tests.support import fake_grade_command, run_test_batch, subprocess_env
from grader.cluster import SlurmBackend, SlurmSettings, slurm
from grader.cluster.backend import LOG_NAME, batch_tag, job_name

# Slow: a real SLURM cluster is started for these, and some wait out its time limits.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE_COMMAND = fake_grade_command()


def fake_backend(**settings) -> SlurmBackend:
    settings.setdefault("partition", "gpu")
    return SlurmBackend(SlurmSettings.load(command=FAKE_COMMAND, poll_interval_s=0.3,
                                           result_wait_s=5, **settings))


def slurm_batch(subs, out, assignments=("practical4",), **settings):
    return run_test_batch(subs, out, assignments, backend=fake_backend(**settings))


def query(out: Path, sql: str, *args):
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        return db.execute(sql, args).fetchall()


def recorded_runs(out: Path) -> int:
    """Runs in the gradebook so far; 0 while the batch is still creating it (the file can
    exist before its tables, or be locked by the batch's first transaction)."""
    if not (out / "gradebook.sqlite").exists():
        return 0
    try:
        return query(out, "SELECT count(*) FROM runs")[0][0]
    except sqlite3.OperationalError:
        return 0


def current(out: Path) -> dict[str, tuple]:
    rows = query(out, "SELECT s.key, r.status, r.score, r.max_score, r.message FROM runs r "
                      "JOIN students s ON s.id = r.student_id WHERE r.current = 1")
    return {key: tuple(rest) for key, *rest in rows}


def job_id_of(out: Path, key: str) -> str:
    header = (out / "submissions" / key / LOG_NAME).read_text().splitlines()[0]
    return re.search(r"SLURM job (\d+)", header).group(1)


def job_fields(cluster, job_id: str) -> dict[str, str]:
    text = cluster.scontrol("show", "job", "--oneliner", job_id).stdout
    return dict(token.split("=", 1) for token in text.split() if "=" in token)


def tagged_jobs(out: Path) -> list[str]:
    """The queued or running jobs of batches on `out` (their --comment)."""
    return slurm.jobs_commented(batch_tag(out))


def stable(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("started_at", "duration_s")}


@pytest.fixture
def calls_log(tmp_path, monkeypatch):
    path = tmp_path / "calls.log"
    monkeypatch.setenv("PDL_FAKE_CALLS", str(path))   # reaches the jobs: sbatch --export=ALL
    return path


@pytest.fixture(scope="module", autouse=True)
def timeout_batch(slurm_cluster, tmp_path_factory):
    """A submission that hangs, under a one-minute limit, started now and checked last."""
    root = tmp_path_factory.mktemp("timeout")
    make_submission(root / "subs" / "hanger", behaviour="hang")
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "tests.support.run_slurm_batch",
                                str(root / "subs"), str(root / "out"), "--time", "1", "--gpus", "0"],
                               env=subprocess_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    yield root / "out", process, started
    if process.poll() is None:
        process.kill()
        process.wait()
        slurm.scancel(tagged_jobs(root / "out"))


def test_batch_lands_in_the_gradebook_exactly_like_the_local_backend(slurm_cluster, tmp_path, calls_log):
    subs = tmp_path / "subs"
    make_submission(subs / "alice", score=9)
    make_submission(subs / "bob", score=4)
    zip_folder(make_submission(tmp_path / "c", score=7), subs / "Carol Chu_42_assignsubmission_file_.zip")

    local = run_test_batch(subs, tmp_path / "local", ["practical4"], grade_fn=fake_grade)
    calls_log.unlink()
    report = slurm_batch(subs, tmp_path / "slurm")
    assert (report.progress.graded, report.progress.failed) == (3, 0) == (local.progress.graded, 0)
    assert sorted(key for key, _ in calls(calls_log)) == ["Carol_Chu_42", "alice", "bob"]

    local_out, slurm_out = tmp_path / "local", tmp_path / "slurm"
    assert current(slurm_out) == current(local_out) == {
        "alice": ("graded", 9.0, 10.0, None), "bob": ("graded", 4.0, 10.0, None),
        "Carol_Chu_42": ("graded", 7.0, 10.0, None)}
    for sql in ("SELECT key, name, participant_id FROM students ORDER BY key",
                "SELECT s.key, x.content_hash, x.source FROM submissions x JOIN students s ON s.id = x.student_id ORDER BY s.key",
                "SELECT s.key, r.config_hash, r.rubric_hash, r.assignments FROM runs r JOIN students s ON s.id = r.student_id ORDER BY s.key",
                "SELECT s.key, a.assignment, a.score, a.max_score, a.status FROM assignment_scores a "
                "JOIN runs r ON r.id = a.run_id JOIN students s ON s.id = r.student_id ORDER BY s.key",
                "SELECT s.key, i.item_id, i.score, i.feedback FROM item_scores i "
                "JOIN runs r ON r.id = i.run_id JOIN students s ON s.id = r.student_id ORDER BY s.key"):
        assert query(slurm_out, sql) == query(local_out, sql), sql
    assert (slurm_out / "grades.csv").read_text() == (local_out / "grades.csv").read_text()
    for key in ("alice", "bob", "Carol_Chu_42"):
        mine = json.loads((slurm_out / "submissions" / key / "result.json").read_text())
        theirs = json.loads((local_out / "submissions" / key / "result.json").read_text())
        assert stable(mine) == stable(theirs)
    assert not (slurm_out / "work").exists() and not (slurm_out / "scratch").exists()

    # Each job asked for practical4's 2 GPUs (its rubric's `gpus`) and got them.
    for key in ("alice", "bob", "Carol_Chu_42"):
        job = job_fields(slurm_cluster, job_id_of(slurm_out, key))
        assert job["JobState"] == "COMPLETED" and job["Partition"] == "gpu"
        assert job["TresPerNode"] == "gres:gpu:2"
        # Named after the student (squeue and sacct tell them apart); the batch is the comment.
        assert job["JobName"] == job_name(key) and job["Comment"] == batch_tag(slurm_out), job
        # What a grading may use: a core per run side by side, 4 runs of 6G and the grader.
        assert job["NumCPUs"] == "4" and job["MinMemoryNode"] == "26G", job
        assert job["TimeLimit"] == "00:35:00", job               # --timeout 1800 s + 5 min
        header = (slurm_out / "submissions" / key / LOG_NAME).read_text().splitlines()[0]
        visible = re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", header).group(1)
        assert len(visible.split(",")) == 2 and set(visible.split(",")) <= {"0", "1", "2", "3"}


def test_rerun_skips_unchanged_and_grades_only_the_changed_one(slurm_cluster, tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for key, score in (("alice", 9), ("bob", 4), ("carol", 7)):
        make_submission(subs / key, score=score)
    assert slurm_batch(subs, out).progress.graded == 3
    calls_log.unlink()

    again = slurm_batch(subs, out)
    assert (again.progress.graded, again.progress.skipped) == (0, 3) and calls(calls_log) == []

    make_submission(subs / "bob", score=6, extra="fixed")
    third = slurm_batch(subs, out)
    assert (third.progress.graded, third.progress.skipped) == (1, 2)
    assert [key for key, _ in calls(calls_log)] == ["bob"]
    assert current(out)["bob"] == ("graded", 6.0, 10.0, None)
    assert query(out, "SELECT count(*) FROM runs") == [(4,)]


def test_more_gpus_than_the_node_has_is_rejected_and_reported(slurm_cluster, tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=9)
    # hw3's rubric asks for 5 GPUs; the node has 4.
    report = slurm_batch(subs, out, assignments=("hw3",))
    assert report.failed == 1 and calls(calls_log) == []
    status, score, _, message = current(out)["alice"]
    assert status == "error" and score is None
    assert message == ("SLURM rejected the job (5 GPU(s) on partition gpu): "
                       "Requested node configuration is not available")
    assert (out / "submissions" / "alice" / "grading-problem.txt").read_text().strip() == message
    assert "alice" in (out / "grades.csv").read_text()
    # An error is not final: with GPUs the node has, the next batch grades it.
    assert slurm_batch(subs, out, assignments=("hw3",), gpus_per_job=4).progress.graded == 1
    assert current(out)["alice"][0] == "graded"


def test_failed_and_cancelled_jobs_are_recorded_with_slurms_account(slurm_cluster, tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "crasher", behaviour="crash")
    make_submission(subs / "cancelled", behaviour="cancel-self")
    report = slurm_batch(subs, out, gpus_per_job=1)
    assert report.failed == 2
    runs = current(out)
    assert runs["crasher"][0] == "error"
    assert re.fullmatch(r"SLURM job \d+ FAILED \(exit 1\)( \(NonZeroExitCode\))?: "
                        r"RuntimeError: the fake grader crashed on purpose", runs["crasher"][3]), runs
    assert runs["cancelled"][0] == "error"
    assert re.fullmatch(r"SLURM job \d+ was cancelled", runs["cancelled"][3]), runs
    logs = query(out, "SELECT message FROM logs WHERE level = 'output'")
    assert any("Traceback" in text for (text,) in logs)
    # What the batch falls back on once the controller has forgotten a job (no slurmdbd here):
    cancelled = job_id_of(out, "cancelled")
    assert slurm._from_jobcomp([cancelled])[cancelled].state == "CANCELLED"
    assert slurm._from_sacct([cancelled]) == {}


def test_a_grading_problem_s_exit_status_is_read_as_a_grading_not_a_crash(slurm_cluster, tmp_path,
                                                                         calls_log):
    # `pdl-grade grade` exits 3 where it failed to grade an assignment, its result.json written
    # (grader/common/exit_codes.py): SLURM calls the job FAILED, the batch reads the result.
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "alice", score=7, behaviour="grading-problem")
    report = slurm_batch(subs, out, gpus_per_job=1)
    assert report.failed == 0 and report.progress.graded == 1
    status, score, _, message = current(out)["alice"]
    assert (status, score) == ("graded", 7.0) and message is None, current(out)
    cell = next(csv.DictReader((out / "grades.csv").open()))
    assert cell["practical4"] == "" and "grading problem in practical4" in cell["Status"], cell
    assert job_fields(slurm_cluster, job_id_of(out, "alice"))["ExitCode"] == "3:0"


def test_a_killed_batch_run_again_grades_each_submission_exactly_once(slurm_cluster, tmp_path, calls_log):
    subs, out = tmp_path / "subs", tmp_path / "out"
    # Staggered: when the first grading is recorded the others are still running (with equal
    # times all four could land between two polls of the loop below, on a loaded machine).
    # 1.5 s apart, 15 times the loop's poll: the last ends 4.5 s after the first (2, 5, 8 and
    # 11 s had made the rerun below wait for 11 s gradings).
    for i, key in enumerate(("alice", "bob", "carol", "dave")):
        make_submission(subs / key, score=5, sleep_s=1 + 1.5 * i)
    batch = subprocess.Popen([sys.executable, "-m", "tests.support.run_slurm_batch", str(subs),
                              str(out)], env=subprocess_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:          # kill it once one grading is recorded
        if recorded_runs(out) >= 1:
            break
        time.sleep(0.1)
    batch.send_signal(signal.SIGKILL)
    batch.wait()
    recorded_before = {key for key, (status, *_) in current(out).items()}
    assert 1 <= len(recorded_before) < 4
    orphans = tagged_jobs(out)
    assert orphans, "the killed batch's remaining jobs should still be queued or running"

    report = slurm_batch(subs, out)
    assert report.progress.skipped == len(recorded_before)
    assert report.progress.graded == 4 - len(recorded_before)
    assert query(out, "SELECT count(*) FROM runs") == [(4,)]
    assert {key: status for key, (status, *_) in current(out).items()} == dict.fromkeys(
        ("alice", "bob", "carol", "dave"), "graded")
    # The next batch cancelled them before submitting its own (one that was cancelled while
    # its grading was ending, or whose work folder the next batch had cleared, ends FAILED):
    # none is left running, and none recorded a second grading (the count above).
    for job_id in orphans:
        assert job_fields(slurm_cluster, job_id)["JobState"] in ("CANCELLED", "COMPLETED", "FAILED")


def test_the_real_grader_runs_as_a_slurm_job_on_the_reference(slurm_cluster, tmp_path, pdl_grade):
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(REPO / "reference" / "practical4", subs / "reference" / "practical4")
    config = tmp_path / "slurm.yaml"           # the default poll (5 s) suits a real cluster
    config.write_text("partition: nowhere\ntime: '00:01:00'\npoll_interval_s: 0.5\n")
    run = pdl_grade("batch", subs, "--out", out, "--assignment", "practical4", "--backend", "slurm",
                    "--slurm-config", config, "--partition", "gpu", "--time", "00:05:00")  # options win
    assert run.code == 0, run.err
    result = json.loads((out / "submissions" / "reference" / "result.json").read_text())
    assert [a["id"] for a in result["assignments"]] == ["practical4"]
    # Every automatic point; the written answers' points wait for a person.
    auto = [i for i in result["assignments"][0]["items"] if i["kind"] == "auto"]
    assert result["score"] == sum(i["max_score"] for i in auto) > 0, result["errors"]
    assert (out / "submissions" / "reference" / "checks-practical4.json").is_file()
    job = job_fields(slurm_cluster, job_id_of(out, "reference"))
    assert job["JobState"] == "COMPLETED" and job["TresPerNode"] == "gres:gpu:2"
    assert job["TimeLimit"] == "00:05:00"
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert rows[0]["Status"].split(",")[0] == "graded"   # ", provisional: ..." may follow


def wait_for_job(job_id: str, limit_s: float = 90) -> slurm.JobInfo:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        info = slurm.query([job_id]).get(job_id)
        if info is not None and info.terminal:
            return info
        time.sleep(0.3)
    raise AssertionError(f"SLURM job {job_id} did not end in {limit_s:g} s")


def test_the_graders_own_timeout_stops_a_job_before_slurms_limit(slurm_cluster, tmp_path):
    """--time had equalled --timeout: SLURM stopped the job as the grader would have, and the
    record said SLURM's limit. Now the script stops the grading at --timeout itself and the
    job's limit leaves a margin: the record says the grader's timeout, as a local batch's."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "hanger", behaviour="hang")
    started = time.monotonic()
    report = run_test_batch(subs, out, ["practical4"], backend=fake_backend(gpus_per_job=0),
                            timeout_s=5)
    assert report.failed == 1
    status, score, _, message = current(out)["hanger"]
    assert (status, score, message) == ("timed_out", None,
                                        "grading took longer than 5 s and was stopped"), message
    job = job_fields(slurm_cluster, job_id_of(out, "hanger"))
    assert job["TimeLimit"] == "00:06:00", job                   # 5 s + 5 min, in minutes
    assert job["JobState"] == "FAILED" and job["ExitCode"] == "124:0", job
    assert time.monotonic() - started < 50


def test_a_dry_runs_script_is_submitted_by_hand_as_is(slurm_cluster, tmp_path, pdl_grade):
    """The dry run's script had graded DIR/scratch/<key>/..., which no longer exists when
    the dry run ends: `sbatch` of it, to try one student, graded nothing."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_submission(subs / "Alice Tamm_401101_assignsubmission_file_", score=6)
    config = tmp_path / "slurm.yaml"
    config.write_text(f"command: {json.dumps(FAKE_COMMAND)}\n")
    run = pdl_grade("batch", subs, "--out", out, "--assignment", "practical4", "--backend",
                    "slurm", "--partition", "gpu", "--slurm-config", config, "--dry-run")
    assert run.code == 0, run.err
    folder = out / "slurm-dry-run" / "Alice_Tamm_401101"
    assert not (out / "scratch").exists()        # the batch's own copy is gone, as before
    assert (folder / "submission" / "practical4" / "FAKE.json").is_file()
    submitted = subprocess.run(["sbatch", "--parsable", str(folder / "slurm-job.sh")],
                               capture_output=True, text=True, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    info = wait_for_job(job_id)
    log = (folder / LOG_NAME).read_text() if (folder / LOG_NAME).exists() else "(no log)"
    assert (info.state, info.exit_code) == ("COMPLETED", 0), log
    result = json.loads((folder / "result.json").read_text())
    assert result["score"] == 6, result
    job = job_fields(slurm_cluster, job_id)   # the #SBATCH lines: the options the batch gives
    assert job["JobName"] == job_name("Alice_Tamm_401101") and job["TresPerNode"] == "gres:gpu:2", job
    assert job["NumCPUs"] == "4" and job["MinMemoryNode"] == "26G", job
    assert "Comment" not in job or job["Comment"] in ("(null)", ""), job   # no batch cancels it
    assert not (out / "gradebook.sqlite").exists()


def test_a_job_over_its_time_limit_is_recorded_as_timed_out(slurm_cluster, timeout_batch):
    out, process, started = timeout_batch
    output, _ = process.communicate(timeout=150)
    assert process.returncode == 1, output
    status, score, _, message = current(out)["hanger"]
    assert status == "timed_out" and score is None
    assert re.fullmatch(r"SLURM job \d+ reached its time limit \(00:01:00\) and was stopped by "
                        r"SLURM \(TIMEOUT\)", message), message
    job = job_fields(slurm_cluster, job_id_of(out, "hanger"))
    assert job["JobState"] == "TIMEOUT" and job["Reason"] == "TimeLimit"
    assert "TresPerNode" not in job or "gpu" not in job["TresPerNode"]   # --gpus 0: no gres
    assert 55 < time.monotonic() - started < 140
