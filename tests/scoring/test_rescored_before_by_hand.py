"""Results graded before the grader left to a person what it could not run (31bc78d), scored
again without grading again (`pdl-grade grade --rescore`, a batch scoring its folders again).

Since 31bc78d, where the HW3 probe cannot build the model the way the student's script builds
it and the script runs to its end, the checks reading the probe's model fail with the mark
`graded_by_hand` and their points wait for a person. A report written before that mark holds
the same failures as plain ones, the probe's message ("hw3/model_parallel.py:
LargeLinearModelMP(cfg) cannot be built: ..."): rescored, it scored 2 of 15 with nothing
waiting, as a grade. Which of those failures would wait now the report cannot say (one whose
answer is missing stays a 0, and the report recorded no answers for them), so the result is no
grade: its grading problem says to grade the submission again.
"""
from __future__ import annotations

import json

import pytest

from grader.grading import rescore_submission
from grader.grading.raw import RawRun, AssignmentRun, check_results_file
from grader.scoring import load_rubrics, score_assignment
from grader.scoring.check_results import unmarked_cases
from tests.scoring.scoring_reports import case, report

# The probe's message as a grading between 2bfff02 and 31bc78d wrote it, whole.
NOT_BUILT = ("hw3/model_parallel.py: LargeLinearModelMP(cfg) cannot be built: your script builds "
             "it as `LargeLinearModelMP(cfg)` (line 73, in main()), which the grader could not "
             "make: `cfg` is set in a way the grader does not replay (it evaluates a name's one "
             "plain assignment, not a loop, `+=`, an argument of main() or a call's result). "
             "Besides that call, the grader tries LargeLinearModelMP(dim=..., depth=...)")
NO_CLASS = ("hw3/model_parallel.py defines no class LargeLinearModelMP: keep the class name of "
            "the course's base code")
# Every check that reads the probe's model (Tasks 2-5, the timing ones too); Task 1 reads the
# base code and passed; the script's own runs are hw3.script_runs.
PROBE_CHECKS = ("hw3.task2.trend", "hw3.task2.table_reported", "hw3.task2.speed_answer",
                "hw3.task3.all_gpus_used", "hw3.task3.balanced", "hw3.task3.output_matches",
                "hw3.task3.contiguous", "hw3.task4.no_speedup", "hw3.task4.table_reported",
                "hw3.task4.utilised_answer", "hw3.task4.faster_answer",
                "hw3.task5.counts_reported", "hw3.task5.growth_answer",
                "hw3.task5.counts_printed")


def stored(script_runs: str = "passed", message: str = NOT_BUILT, marks=None) -> dict:
    """A report as a grading before 31bc78d stored it (its `case_marks` without
    `graded_by_hand`), or with `marks`."""
    rubric = load_rubrics()["hw3"]
    tests = [case(check, "failed", feedback=message) if check in PROBE_CHECKS
             else case(check, script_runs, feedback="stopped") if check == "hw3.script_runs"
             else case(check) for check in rubric.check_ids]
    data = report(tests)
    if marks is not None:
        data["case_marks"] = list(marks)
    return data


def scored(data: dict, **kwargs):
    return score_assignment(load_rubrics()["hw3"], data, **kwargs)


@pytest.mark.parametrize("message", [NOT_BUILT, NO_CLASS], ids=["cannot-be-built", "no-class"])
def test_a_rescore_of_a_model_not_built_from_a_script_that_ran_says_to_grade_again(message):
    result = scored(stored(message=message))
    assert len(result.grading_problems) == 1, (
        f"expected one grading problem saying the result must be graded again; observed "
        f"{result.grading_problems}; where to look: grader/scoring/score.py _scored_before_marks")
    said = result.grading_problems[0]
    assert "grade the submission again" in said and "31bc78d" in said, said
    # Tasks 2-5, by the checks worth points that failed (Task 1 passed; timing checks are 0).
    assert "of hw3.task2, hw3.task3, hw3.task4, hw3.task5 scored 0" in said, said
    assert result.status == "incomplete" and said in result.errors


def test_a_report_written_with_the_mark_is_scored_as_it_is():
    """Since 31bc78d such a failure that is not marked is the student's own 0 (an answer the
    check grades is missing)."""
    result = scored(stored(marks=["unread_answer", "graded_by_hand"]))
    assert result.grading_problems == [] and result.score == 2.0, result.grading_problems


def test_a_script_that_did_not_run_keeps_its_zero():
    result = scored(stored(script_runs="failed"))
    assert result.grading_problems == [] and result.score == 2.0, result.grading_problems
    assert unmarked_cases(stored(script_runs="failed")) == {}


def test_items_the_instructor_scored_are_a_persons_grade():
    overrides = {task: {"points": 1, "comment": "graded by hand"}
                 for task in ("hw3.task2", "hw3.task3", "hw3.task4", "hw3.task5")}
    assert scored(stored(), overrides=overrides).grading_problems == []


def test_other_failures_of_an_old_report_are_not_touched():
    data = stored(message="Expected: the layers spread\nObserved: hw3/model_parallel.py: x")
    assert unmarked_cases(data) == {} and scored(data).grading_problems == []


def test_a_rescore_of_an_old_folder_is_not_graded(tmp_path):
    """`pdl-grade grade --rescore` of a folder a grading before 31bc78d left: result.json
    says it is no grade, and why."""
    RawRun("submission", [AssignmentRun("hw3")]).save(tmp_path)
    (tmp_path / check_results_file("hw3")).write_text(json.dumps(stored()))
    result = rescore_submission(tmp_path, ["hw3"])
    (assignment,) = result["assignments"]
    assert any("grade the submission again" in p for p in assignment["grading_problems"]), \
        assignment["grading_problems"]
    written = json.loads((tmp_path / "result.json").read_text())
    assert written["assignments"][0]["grading_problems"] == assignment["grading_problems"]
