"""HW3 without hw3/model_parallel.py: its absence is the student's (every check of their code
says so, and scores 0), but Task 1 asks what the course's base code does, which the grader
measures itself. The probe had not run at all without the student's file, so Task 1's checks
errored ("the course's base code was not measured (a grading problem, not your code)"): the
assignment was no grade, and a batch graded it again every time, for a file the student had
not handed in."""
import shutil

import pytest

from grader.common.locations import data_folder
from grader.harness.execute import run_hw3_probe


def without_the_script(tmp_path):
    submission = tmp_path / "submission"
    shutil.copytree(data_folder("student_template") / "hw3", submission / "hw3")
    (submission / "hw3" / "model_parallel.py").unlink()
    return submission


def test_only_the_course_s_parts_are_probed_without_the_student_s_script(tmp_path, monkeypatch):
    from grader.checks.test_hw3 import PLAN
    from grader.harness import execute
    from grader.harness.observation import Observation
    asked = []

    def probe(submission, model_file, plan, observation, **options):
        asked.append([part["part"] for part in plan])
        measured = Observation(script="hw3/model_parallel.py", gpus=options["gpus"])
        measured.integrity = ["found by the course's run"]
        return [{"kind": "base_code"}], measured

    monkeypatch.setattr(execute, "_probe", probe)
    records, run = run_hw3_probe(without_the_script(tmp_path), PLAN, gpus=5)
    assert asked == [["base_code"]] and records == [{"kind": "base_code"}]
    assert run.missing and run.integrity == ["found by the course's run"]
    records, run = run_hw3_probe(without_the_script(tmp_path / "again"),
                                 [p for p in PLAN if p["part"] != "base_code"], gpus=5)
    assert records == [] and run.missing
    assert len(asked) == 1, "no run where the plan has no part of the course's own"


@pytest.mark.slow
def test_the_base_code_is_measured_without_the_student_s_script(tmp_path):
    from grader.checks.test_hw3 import PLAN
    records, run = run_hw3_probe(without_the_script(tmp_path), PLAN, gpus=5, timeout_s=120,
                                 scratch_root=tmp_path)
    base = [r for r in records if r.get("kind") == "base_code"]
    assert len(base) == 1 and not base[0].get("error"), records
    assert [r.get("kind") for r in records if r.get("kind") != "done"] == ["base_code"], \
        "no part of the student's code is measured: there is none"
    assert run.missing and "hw3/model_parallel.py is missing from the submission" in run.problem()
    assert run.integrity == []


@pytest.mark.slow
def test_task_1_is_graded_without_the_student_s_script(tmp_path):
    from grader.grading import grade_submission
    submission = without_the_script(tmp_path)
    sheet = submission / "hw3" / "answers.yaml"
    lines = sheet.read_text(encoding="utf-8").splitlines()
    for qid, answer in (("task1.layers_per_gpu", "[3, 3]"), ("task1.transfer_between", "[2, 3]")):
        at = next(n for n, line in enumerate(lines) if line.strip().startswith(f"{qid}:"))
        assert lines[at].endswith("value: null}"), lines[at]
        lines[at] = lines[at].replace("value: null}", f"value: {answer}}}")
    sheet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = grade_submission(submission, tmp_path / "out", ["hw3"])
    hw3 = result["assignments"][0]
    assert hw3["grading_problems"] == []
    task1 = next(i for i in hw3["items"] if i["id"] == "hw3.task1")
    assert (task1["score"], task1["status"]) == (2, "passed"), task1["feedback"]
