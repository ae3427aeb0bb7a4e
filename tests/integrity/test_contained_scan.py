"""The integrity scan runs in a forked child with a memory limit (grader/integrity/contained.py):
a file built to blow the scan's memory holds that submission's points, said so in plain words,
and the grading (and the batch) goes on.

A hostile upload: one generated module of a list of 100 000 constants (200 KiB: the scan's
reading of it peaked near 155 MiB in the grading's own process, and one of 1.8 MiB at 1.3 GiB
and 160 s). The tests give the scan a small limit, so it stops in about a second."""
from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path

import pytest

from grader.integrity import contained
from grader.integrity.contained import ALL_FILES, ScanFailed, scan_contained
from grader.integrity.findings import TAMPERING
from grader.integrity.scan import scan_submission

REFERENCE = Path(__file__).resolve().parents[2] / "reference"
SMALL_LIMIT = 32 * 2**20


def hostile(folder: Path) -> Path:
    """practical4/ with a script of its own that runs nvidia-smi (a note) and a generated
    module too large for SMALL_LIMIT."""
    (folder / "practical4").mkdir(parents=True)
    (folder / "practical4" / "concepts.py").write_text(
        "import subprocess\nimport torch\nsubprocess.run(['nvidia-smi'])\n")
    (folder / "practical4" / "table.py").write_text("TABLE = [" + "0," * 100_000 + "]\n")
    return folder


def in_a_fresh_interpreter(code: str, *args: str) -> str:
    """`code`'s stdout, run by a new Python (the repository first on its path). The scan's
    child may use the parent's mapped memory on top of its limit (RLIMIT_AS counts mappings, and
    a heap's freed space is reused without new ones): in a pytest worker that has run thousands
    of tests that is hundreds of MiB, so SMALL_LIMIT was not reached and a CI run failed these
    tests. A fresh interpreter is the small grading process the limit is set for."""
    import subprocess
    import sys
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": root}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


SCAN_SMALL = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from grader.integrity.contained import scan_contained\n"
    "print(json.dumps([f.to_dict() for f in scan_contained(Path(sys.argv[1]), int(sys.argv[2]))]))\n")


def test_a_module_too_large_for_the_scans_memory_is_held_with_the_limit_said(tmp_path):
    from grader.integrity.findings import Finding
    told = in_a_fresh_interpreter(SCAN_SMALL, str(hostile(tmp_path / "sub")), str(SMALL_LIMIT))
    found = [Finding.from_dict(item) for item in json.loads(told)]
    table = [f for f in found if f.file == "practical4/table.py" and f.category == "unreadable"]
    assert table and table[0].kind == TAMPERING, (
        f"expected practical4/table.py held as unreadable (tampering: its points held); "
        f"observed {[f.describe() for f in found]} (grader/integrity/contained.py)")
    assert table[0].describe() == ("practical4/table.py could not be checked: too large to be "
                                   "read within the integrity scan's memory limit (32 MiB)"), (
        f"expected the file and the limit named, not 'nested too deeply'; observed "
        f"{table[0].describe()!r}")
    assert any(f.file == "practical4/concepts.py" and f.category == "processes"
               for f in found), f"the other files must still be read: {[f.describe() for f in found]}"


def test_a_scan_that_runs_out_of_memory_outside_any_one_file_holds_every_assignment(
        tmp_path, monkeypatch):
    def spent(submission):
        raise MemoryError
    monkeypatch.setattr(contained, "scan_and_group", spent)
    found = scan_contained(hostile(tmp_path / "sub"), SMALL_LIMIT)
    assert [(f.file, f.category, f.assignment) for f in found] == [(ALL_FILES, "unreadable", None)], (
        f"expected one finding of no assignment's folder (held for every assignment); observed "
        f"{[f.describe() for f in found]}")
    assert found[0].describe() == (
        "(all files) could not be checked: the integrity scan went past its memory limit of 32 "
        "MiB reading them (MemoryError) and was stopped; the automatic points are held until a "
        "person has read the code"), found[0].describe()


def test_a_scan_killed_in_its_child_is_said_and_the_grading_goes_on(tmp_path, monkeypatch):
    """The kernel's OOM killer, or a crash in C: the child dies, the grading's process lives."""
    monkeypatch.setattr(contained, "scan_and_group",
                        lambda submission: os.kill(os.getpid(), signal.SIGKILL))
    found = scan_contained(hostile(tmp_path / "sub"), SMALL_LIMIT)
    assert len(found) == 1 and found[0].file == ALL_FILES, [f.describe() for f in found]
    assert "stopped before it had read them (stopped by signal SIGKILL; its memory limit is " \
           "32 MiB)" in found[0].what, found[0].what


def test_a_scan_past_its_cpu_time_holds_the_submission_with_the_limit_said(tmp_path,
                                                                            monkeypatch):
    """Work that grows faster than the file (within the memory limit) stops at the CPU limit
    instead of holding the batch's worker for minutes."""
    def endless(submission):
        while True:
            pass
    monkeypatch.setattr(contained, "scan_and_group", endless)
    found = scan_contained(hostile(tmp_path / "sub"), SMALL_LIMIT, cpu_seconds=1)
    assert [f.describe() for f in found] == [
        "(all files) could not be checked: the integrity scan took more than its 1 s of CPU time "
        "reading them and was stopped; the automatic points are held until a person has read "
        "the code"], (f"expected one finding naming the CPU-time limit; observed "
                      f"{[f.describe() for f in found]} (grader/integrity/contained.py)")


def test_an_error_of_the_scans_own_is_raised_as_before(tmp_path, monkeypatch):
    """run_submission tells it as 'the integrity scan of the source failed' (a grading
    problem), as when the scan ran in-process: no finding is made up for it."""
    def broken(submission):
        raise KeyError("a bug of the scan's")
    monkeypatch.setattr(contained, "scan_and_group", broken)
    with pytest.raises(ScanFailed, match="KeyError"):
        scan_contained(tmp_path)


def test_the_reference_solutions_are_scanned_as_in_process():
    assert scan_contained(REFERENCE) == scan_submission(REFERENCE)


def scanning_grade(job) -> None:
    """The fake grader (tests/support/fake_graders.py) with the real scan, as run_submission
    runs it (grader/grading/run.py scan_source), at SMALL_LIMIT."""
    from grader.grading import AssignmentRun, RawRun, publish, score_run
    from grader.grading.raw import check_results_file
    from grader.grading.run import scan_source
    from grader.scoring import load_rubrics
    from tests.support.fake_graders import fake_report
    contained.SCAN_MEMORY_BYTES = SMALL_LIMIT   # in the scheduler's forked child only
    rubrics = load_rubrics(job.rubrics_dir)
    run = RawRun(str(job.submission), [], hardware={"kind": "virtual", "gpus": 2, "names": []},
                 started_at="2026-05-01T12:00:00+00:00", duration_s=1.0)
    run.findings = scan_source(job.submission, job.out)
    for assignment in job.assignments:
        results = fake_report(rubrics[assignment], 10)
        (job.out / check_results_file(assignment)).write_text(json.dumps(results))
        run.assignments.append(AssignmentRun(assignment, results))
    run.save(job.out)
    publish(score_run(run, rubrics, submitted_at=job.submitted_at), job.out, rubrics=rubrics)


def batch_with_a_hostile_upload(folder: Path) -> None:
    """The batch of mallory (hostile) and carol into `folder`/out; prints its progress."""
    from grader.batch.pipeline import BatchOptions, run_batch
    subs, out = folder / "subs", folder / "out"
    hostile(subs / "mallory")
    (subs / "carol" / "practical4").mkdir(parents=True)
    (subs / "carol" / "practical4" / "concepts.py").write_text("import torch\n")
    summary = run_batch(subs, out, BatchOptions(assignments=("practical4",)),
                        grade_fn=scanning_grade, stream=io.StringIO(), live=False)
    print(json.dumps([summary.progress.graded, summary.progress.failed]))


def test_a_batch_holds_the_hostile_upload_and_grades_the_others(tmp_path):
    from tests.batch.test_audit_batch import rows
    told = in_a_fresh_interpreter(
        "import sys\nfrom pathlib import Path\n"
        "from tests.integrity.test_contained_scan import batch_with_a_hostile_upload\n"
        "batch_with_a_hostile_upload(Path(sys.argv[1]))\n", str(tmp_path))
    out = tmp_path / "out"
    found = rows(out)
    assert json.loads(told.strip().splitlines()[-1]) == [2, 0], (told, found)
    assert found["carol"]["Status"].split(",")[0] == "graded" and float(found["carol"]["practical4"]) > 0, found
    assert found["mallory"]["practical4"] == "" and "held for review" in found["mallory"]["Status"], (
        f"expected mallory's points held for review, never a grade; observed {found['mallory']}")
    told = (out / "submissions" / "mallory" / "instructor.md").read_text(encoding="utf-8")
    assert "practical4/table.py could not be checked: too large to be read within the integrity " \
           "scan's memory limit (32 MiB)" in told, told
