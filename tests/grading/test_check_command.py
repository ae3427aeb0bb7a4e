"""`pdl-grade check` and `pytest --pyargs grader.checks`, run as a student runs them: in the
student's own folder, a copy of the template with some work done."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures import hw3_variants as hv
from tests.fixtures.planted_bugs import REFERENCE, TEMPLATE, copy_tree

ROOT = Path(__file__).resolve().parents[2]

# The student: Task 3 left at the base code's two GPUs.
TWO_GPUS_HARD_CODED = hv.BY_NAME["unchanged_two_gpu_split"]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_folder_that_is_not_there(pdl_grade, tmp_path):
    done = pdl_grade("check", "--submission", tmp_path / "nowhere")
    assert done.code == 2 and "is not a folder" in done.err


def test_an_assignment_that_does_not_exist(pdl_grade, tmp_path):
    done = pdl_grade("check", "hw4", "--submission", tmp_path)
    assert done.code == 2 and "no assignment called hw4" in done.err and "practical4" in done.err


def test_a_folder_without_assignments_says_where_to_run_it(pdl_grade, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = pdl_grade("check")
    assert done.code == 2 and "run this in your course folder" in done.err and "hw3/" in done.err


@pytest.mark.slow
def test_a_finished_practical_exits_0_and_writes_nothing_into_the_folder(pdl_grade, tmp_path,
                                                                       monkeypatch):
    folder = copy_tree(TEMPLATE, tmp_path / "my-course")
    for name in ("concepts.py", "answers.yaml"):
        (folder / "practical4" / name).write_bytes((REFERENCE / "practical4" / name).read_bytes())
    before = listing(folder)
    monkeypatch.chdir(folder)
    done = pdl_grade("check", "practical4", "--out", tmp_path / "kept")
    assert done.code == 0, done.out + done.err
    # 9.5 automatic points; the 2.5 of the written answers wait for a person.
    assert "practical4: Practical 4" in done.out and "9.5 / 12" in done.out
    assert "What to fix" not in done.out
    assert listing(folder) == before
    kept = sorted(p.name for p in (tmp_path / "kept").iterdir())
    assert "report.html" in kept and "result.json" in kept and "instructor.md" not in kept


@pytest.mark.slow
def test_the_template_exits_1_with_each_cause_once(pdl_grade, tmp_path):
    folder = copy_tree(TEMPLATE, tmp_path / "my-course")
    done = pdl_grade("check", "practical4", "--submission", folder)
    assert done.code == 1
    assert "0 / 12" in done.out and "Part 2 - Simulated data parallelism" in done.out
    # The TODO's crash fails every code check, the batch of 63 too: one entry naming them all.
    assert "7 cases of 7 checks failed the same way" in done.out
    assert "support.py" not in done.out and "Traceback" not in done.out
    assert "Still for a person (practical4)" in done.out
    assert listing(folder) == listing(TEMPLATE)


def test_the_zip_to_hand_in_is_checked_as_the_course_unpacks_it(pdl_grade, tmp_path):
    """A student's audit: the zip about to be uploaded could not be checked ("is not a
    folder"); it is unpacked with the batch's limits and its search for the assignments."""
    import shutil
    folder = copy_tree(TEMPLATE, tmp_path / "my-course")
    for name in ("concepts.py", "answers.yaml"):
        (folder / "practical4" / name).write_bytes((REFERENCE / "practical4" / name).read_bytes())
    archive = shutil.make_archive(str(tmp_path / "upload"), "zip", tmp_path, "my-course")
    done = pdl_grade("check", "practical4", "--submission", archive)
    assert done.code == 0, done.out + done.err
    assert "unpacked as the course's grading unpacks it" in done.out and "9.5 / 12" in done.out
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    done = pdl_grade("check", "--submission", tmp_path / "broken.zip")
    assert done.code == 2 and "broken.zip would not be graded" in done.err, done.err
    # Said to the student, not to the staff (an engineer's leftover of a student's audit).
    assert "ask the student" not in done.err and "may ask you for a .zip" in done.err, done.err


@pytest.mark.slow
def test_hw3_with_two_gpus_hard_coded(pdl_grade, tmp_path):
    """The issue's student: Task 3 left at Task 1's two GPUs. The one-GPU crash is one entry
    (18 cases of the three Task 3 checks that build on one GPU), not 18."""
    folder = hv.build(TWO_GPUS_HARD_CODED, tmp_path / "liis")
    # Task 1 answered 1-based: wrong, and the loop must not hand her the answer (a student's
    # audit: it printed "[2, 3]", so the point was copied from the feedback).
    sheet = folder / "hw3" / "answers.yaml"
    data = yaml.safe_load(sheet.read_text(encoding="utf-8"))
    data["answers"]["task1.transfer_between"]["value"] = [3, 4]
    sheet.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    done = pdl_grade("check", "hw3", "--submission", folder, "--out", tmp_path / "kept")
    assert done.code == 1
    out = done.out
    assert "18 cases of 3 checks failed the same way" in out, out
    crash = [line for line in out.splitlines() if "InvalidDeviceOrdinal" in line]
    assert len(crash) == 1, out
    assert "0 / 2  failed    Task 3 - Distribute the layers evenly over all GPUs" in out, out
    # Tasks 4 and 5's 5-GPU parts need Task 3's model (adv52 F3): 7.5 before.
    assert "5.5 / 15" in out
    assert "Still for a person (hw3)" in out
    assert "your answer to task1.transfer_between is what the provided code does" in out \
        and "provided code does: [2, 3]" not in out and "not shown before the work is graded" in out, out
    # The report says under which settings the grader measured (the student used DIM=1024).
    result = json.loads((tmp_path / "kept" / "result.json").read_text())
    assert "DIM=256" in result["assignments"][0]["conditions"]["task4"]
    assert "- Task 4: DEPTH=20 on 2 and 5 GPUs, DIM=256" in (tmp_path / "kept" / "report.md").read_text()


@pytest.mark.slow
def test_pytest_from_the_students_folder(tmp_path):
    """`pytest --pyargs grader.checks --submission .` where there is no grader/ folder: one
    summary, each failed check named, no traceback of the grader's code, points per task."""
    folder = copy_tree(TEMPLATE, tmp_path / "my-course")
    sheet = folder / "practical4" / "answers.yaml"
    data = yaml.safe_load(sheet.read_text(encoding="utf-8"))
    data["answers"]["questions.easier"]["value"] = "Data parallelism: the model stays as it is."
    sheet.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "grader.checks.test_practical4",
                           "--submission", ".", "-p", "no:cacheprovider"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "points per task, and what to fix" in out
    assert "practical4: Practical 4" in out and "0 / 12" in out
    assert "7 cases of 7 checks failed the same way: practical4.chunk_shapes" in out
    assert "support.py" not in out and "AssertionError" not in out and "FAILED " not in out
    # The written answers are read as `pdl-grade check` reads them.
    assert "questions.easier: answered" in out, out
    # Without --submission, the current folder is the student's.
    again = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "grader.checks.test_practical4",
                            "-p", "no:cacheprovider", "-k", "batch_split_into_chunks"], cwd=folder, env=env,
                           capture_output=True, text=True, timeout=600)
    assert "NotImplementedError at concepts.py" in again.stdout, again.stdout
    assert "not run" in again.stdout   # the checks -k left out are not counted as broken
