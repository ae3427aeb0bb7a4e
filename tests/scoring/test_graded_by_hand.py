"""A check the grader could not run on code that itself works is no verdict: its points wait
for a person, as an answer found but not read does (tests/scoring/test_found_not_read.py).

HW3: where the probe cannot build the student's model the way the script's main() builds it
(a config filled in after assignment, `cfg = {}` then `cfg["dim"] = DIM`) but the script ran to
its end, Tasks 2-5's probe-based checks had scored 0 beside "Your script runs to its end:
passed": 2 of 15 for an honest, working script, a grade a course cannot sign. The check raises
grader/checks/support.py GradedByHand, the plugin records `graded_by_hand`, the scoring holds
the points (`pending_by_hand`), and every report says why they wait. Where the script itself
does not run, or the answer the check grades is missing, the 0 stays: the student's own.
"""
from __future__ import annotations

import pytest
import yaml

from grader.checks.support import AnswerNotRead, GradedByHand
from grader.checks.test_hw3 import MODEL_NOT_BUILT, built, script_ran_to_its_end
from grader.pytest_plugin import pytest_json_runtest_metadata, pytest_runtest_makereport
from grader.reports.gradescope import gradescope_results
from grader.reports.instructor import render_instructor_markdown
from grader.reports.pending import pending_what
from grader.scoring import build_result, load_rubrics, score_assignment
from tests.scoring.scoring_reports import case, report
from tests.support.fake_check_call import check_call, check_item

WHY = ("hw3/model_parallel.py: LargeLinearModelMP(cfg) cannot be built: your script builds it as "
       "`LargeLinearModelMP(cfg)` (line 73, in main()), which the grader could not make")
# Tasks 2-5's checks that read the probe's model, and their points (rubrics/hw3.yaml).
PROBE_CHECKS = {"hw3.task2.table_reported": 1, "hw3.task2.speed_answer": 1,
                "hw3.task3.all_gpus_used": 1, "hw3.task3.balanced": 0.5,
                "hw3.task3.output_matches": 0.5, "hw3.task4.table_reported": 1,
                "hw3.task4.utilised_answer": 0.5, "hw3.task4.faster_answer": 0.5,
                "hw3.task5.counts_reported": 2, "hw3.task5.growth_answer": 0.5}


def _not_built(script_ran: bool) -> dict:
    error = {"type": "CannotBuild", "message": WHY}
    if script_ran:
        error["script_ran_to_its_end"] = True
    return {"kind": "task4", "configs": [[2, 20], [5, 20]], "error": error}


class _Answers:
    def __init__(self, values: dict):
        self.values, self.unread, self.questions, self.origin = values, [], {}, {}
        self.problems, self.declined, self.unread_why = [], {}, {}

    def where_to_answer(self, qid):
        return f"hw3/answers.yaml: {qid}"


# -- the check: which failures wait ---------------------------------------------------------------

def test_a_model_not_built_from_a_script_that_runs_waits_for_a_person_and_says_why():
    with pytest.raises(GradedByHand) as raised:
        built(_not_built(script_ran=True), "and training the model",
              _Answers({"task4.more_gpus_faster": False}), ("task4.more_gpus_faster",))
    message = str(raised.value)
    assert message == MODEL_NOT_BUILT.format(why=WHY), message
    assert message.startswith("the grader could not build your model the way your script "
                              "builds it (hw3/model_parallel.py: LargeLinearModelMP(cfg)"), message
    assert "line 73, in main()" in message and "a person will grade these by hand" in message
    assert raised.value.graded_by_hand == "hw3.model_not_built"


def test_a_model_not_built_from_a_script_that_does_not_run_stays_the_students_zero():
    with pytest.raises(AssertionError) as raised:
        built(_not_built(script_ran=False))
    assert not isinstance(raised.value, GradedByHand), (
        "expected a plain failure (the script does not run to its end: a 0, nothing waiting); "
        "observed GradedByHand: look at grader/checks/test_hw3.py built()")
    assert str(raised.value) == WHY


def test_a_missing_answer_fails_as_missing_even_where_the_model_was_not_built():
    """The student's own 0 is no grader's failure: the points of an answer never given do not
    wait for a person."""
    with pytest.raises(AssertionError) as raised:
        built(_not_built(script_ran=True), "and training the model", _Answers({}),
              ("task4.more_gpus_faster",))
    assert not isinstance(raised.value, (GradedByHand, AnswerNotRead)), type(raised.value)
    assert "no answer found" in str(raised.value), str(raised.value)


class _Run:
    def __init__(self, ok: bool, message: str = "RuntimeError: boom"):
        self.ok, self._message = ok, message

    def of(self, kind):
        return [] if self.ok else [{"message": self._message}]


class _Runs:
    def __init__(self, *runs):
        self._runs = dict(enumerate(runs))

    def script(self, key):
        return self._runs[key]


@pytest.mark.parametrize("runs,expected", [
    ((True, True), True),
    ((True, False), False),     # stopped on 5 GPUs: hw3.script_runs fails there
    ((False, False), False),
])
def test_the_script_ran_to_its_end_only_where_every_run_it_counts_did(runs, expected):
    given = _Runs(*(_Run(ok) for ok in runs))
    specs = {gpus: {"key": i} for i, gpus in enumerate((2, 5))}
    assert script_ran_to_its_end(given, specs) is expected


def test_a_run_stopped_by_the_graders_read_only_folder_is_not_counted_either_way():
    read_only = "OSError: [Errno 30] Read-only file system: '/submission/hw3/results.json'"
    specs = {2: {"key": 0}, 5: {"key": 1}}
    assert script_ran_to_its_end(_Runs(_Run(True), _Run(False, read_only)), specs) is True
    assert script_ran_to_its_end(_Runs(_Run(False, read_only), _Run(False, read_only)), specs) is False


# -- the plugin and the scoring ---------------------------------------------------------------------

NODEID = "grader/checks/test_hw3.py::test_task4_answer_do_more_gpus_make_it_faster"


def _Item(config=None):
    return check_item("hw3.task4.faster_answer", NODEID, config)


_Call = check_call


def test_the_plugin_records_the_mark_in_the_report_and_the_session():
    from grader.pytest_plugin import CHECK_OUTCOMES, _IntegrityInReport
    from grader.scoring.session import score_session
    failure = GradedByHand(MODEL_NOT_BUILT.format(why=WHY), "hw3.model_not_built")
    metadata = pytest_json_runtest_metadata(_Item(), _Call(failure))
    assert metadata["graded_by_hand"] == "hw3.model_not_built" and "unread_answer" not in metadata
    assert "graded_by_hand" not in pytest_json_runtest_metadata(_Item(), _Call(AssertionError("x")))

    class Config:
        stash = {CHECK_OUTCOMES: {}}
    stored: dict = {}
    _IntegrityInReport(Config()).pytest_json_modifyreport(stored)
    assert "graded_by_hand" in stored["case_marks"]

    class Report:
        outcome, skipped, longrepr = "failed", False, None
    hook = pytest_runtest_makereport(_Item(Config()), _Call(failure))
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(Report())
    assert Config.stash[CHECK_OUTCOMES][NODEID][4] == "hw3.model_not_built"
    (hw3,) = score_session(Config.stash[CHECK_OUTCOMES])["assignments"]
    check = next(c for i in hw3["items"] for c in i["checks"] if c["id"] == "hw3.task4.faster_answer")
    assert (check["status"], check["pending_points"], check["by_hand"]) == ("pending", 0.5, 1)


def _scored(by_hand: set[str], failed: set[str] = frozenset()) -> dict:
    rubric = load_rubrics()["hw3"]
    message = MODEL_NOT_BUILT.format(why=WHY)
    tests = []
    for check in rubric.check_ids:
        if check in by_hand:
            test = case(check, "failed", feedback=message)
            test["metadata"]["graded_by_hand"] = "hw3.model_not_built"
        elif check in failed:
            test = case(check, "failed", feedback=WHY)
        else:
            test = case(check)
        tests.append(test)
    data = report(tests)
    data["case_marks"] = ["unread_answer", "graded_by_hand"]
    return score_assignment(rubric, data).to_dict()


def test_the_points_of_checks_not_run_on_working_code_wait_and_are_not_in_the_score():
    scored = _scored(set(PROBE_CHECKS))
    items = {i["id"]: i for i in scored["items"]}
    waiting = {i: items[i]["pending_points"] for i in ("hw3.task2", "hw3.task3", "hw3.task4", "hw3.task5")}
    assert waiting == {"hw3.task2": 2, "hw3.task3": 2, "hw3.task4": 2, "hw3.task5": 2.5}, waiting
    assert all(items[i]["status"] == "pending" and items[i]["score"] == 0 for i in waiting), \
        {i: (items[i]["status"], items[i]["score"]) for i in waiting}
    # Task 1 passed; the written answers (4.5) wait beside the 8.5.
    assert (scored["score"], scored["pending_points"]) == (2.0, 13.0)
    assert sorted(scored["pending_by_hand"]) == sorted(waiting) and scored["pending_unread"] == []
    feedback = items["hw3.task4"]["feedback"]
    assert ("hw3.task4.faster_answer: 1 of 1 case(s) wait for a person: the grader could not run "
            "them on your code, which itself runs") in feedback, feedback
    assert "found but could not be read" not in feedback, feedback


def test_a_plain_failure_beside_them_keeps_its_zero():
    scored = _scored(set(PROBE_CHECKS) - {"hw3.task4.faster_answer"}, {"hw3.task4.faster_answer"})
    task4 = next(i for i in scored["items"] if i["id"] == "hw3.task4")
    assert (task4["score"], task4["pending_points"], task4["status"]) == (0, 1.5, "failed")


# -- what the reports say -----------------------------------------------------------------------------

def test_every_report_says_why_the_points_wait():
    result = build_result("hw3_cfg_dict", [_scored(set(PROBE_CHECKS))])
    assert pending_what(result) == (
        "written answers worth 4.5, and checks the grader could not run on your code (a person "
        "grades them by hand) worth 8.5,")
    md = render_instructor_markdown(result, load_rubrics())
    assert ("**The grader could not run these checks on the student's code, which itself runs to "
            "its end** (not the student's failure): the points of `hw3.task2` (2), `hw3.task3` (2), "
            "`hw3.task4` (2), `hw3.task5` (2.5) wait for you") in md, md
    assert "the grader could not build your model the way your script builds it" in md
    block = md[md.index("## Overrides to fill in"):].split("```text\n", 1)[1].split("\n```")[0]
    assert "hw3.task3: {points: null, comment: \"\"}  # automatic: 0 of 2 from the checks, 2 waits " \
           "for you (checks the grader could not run on working code)" in block, block
    assert yaml.safe_load(block)["hw3.task5"] == {"points": None, "comment": ""}
    tests = {t["extra_data"]["item_id"]: t for t in gradescope_results(result)["tests"]}
    waits = gradescope_results(result)["output"]
    assert "hw3.task3" not in tests and "the grader could not run its checks on your code" in waits, waits


def test_the_batch_status_says_what_the_person_does():
    """grades.csv, the class page and the console: no grade while points wait, and why."""
    from grader.batch.gradebook import no_grade_until, unread_of
    result = build_result("hw3_cfg_dict", [_scored(set(PROBE_CHECKS))])
    assert unread_of(result) == {"hw3": 8.5}
    assert no_grade_until(result, "hw3", 8.5) == (
        "no grade until a person grades by hand checks the grader could not run: hw3 (8.5 points wait)")
