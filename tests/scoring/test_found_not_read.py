"""An answer the grader found but could not read is no verdict (a TA's audit, audit 26): its
check's points wait for a person, as a written answer's do, instead of a 0 published in
result.json, grades.csv and the Moodle worksheet until a TA acts on a commented-out override.

A missing answer and an answer read and wrong still score 0; an override of the item is the
person's grade; an integrity hold decides the whole item.

Which case failed on such an answer is the check's structured mark (grader/checks/support.py
AnswerNotRead, recorded by grader.pytest_plugin as the case's `unread_answer`), never the words
of its message: a rewording had changed the score. A report stored before the mark is scored as
it was then, by the message (a folder `--rescore` or a batch scores again).
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.answers.sheet import template_questions
from grader.checks.support import AnswerNotRead, reported
from grader.pytest_plugin import pytest_json_runtest_metadata, pytest_runtest_makereport
from grader.reports.render import render_markdown
from grader.scoring import build_result, score_assignment
from grader.scoring.rubric import parse_rubric
from scoring_reports import all_passing, case, report
from tests.support.fake_check_call import check_call, check_item

QID = "task1.layers_per_gpu"
CHECK = "hw3.task1.layers_reported"
UNREAD_WHY = ("'Layers per GPU (DEPTH=6, 2 GPUs)' is answered 'GPU 0 gets 3 layers, GPU 1 gets', which could not "
              "be read as a list of whole numbers: a person must read it")


def _answers(unread: bool) -> Answers:
    questions = {qid: q.text for qid, q in template_questions("hw3").items()}
    return Answers("hw3", "pdf_then_sheet", missing=[QID], unread=[QID] if unread else [],
                   unread_why={QID: UNREAD_WHY} if unread else {}, questions=questions)


def _failure(answers: Answers) -> AssertionError:
    """The failure grader/checks/support.py `reported` raises for an answer not among the values."""
    with pytest.raises(AssertionError) as raised:
        reported(answers, QID)
    return raised.value


def _message(answers: Answers) -> str:
    return str(_failure(answers))


def _report(rubric, failing: dict[str, str], answers: Answers, marks: dict[str, str] | None = None,
            stored_before_marks: bool = False) -> dict:
    """`marks`: check -> the answer its failure found but could not read, as the plugin records
    it; by default the mark of `answers`' reading (what `reported` raises for QID)."""
    if marks is None:
        marks = {c: QID for c in failing} if QID in answers.unread else {}
    tests = [case(c) for c in rubric.check_ids if c not in failing]
    tests += [case(c, "failed", feedback=message, unread_answer=marks.get(c))
              for c, message in failing.items()]
    tests[0]["metadata"]["answers"] = answers.to_dict()
    return report(tests, marks=not stored_before_marks)


def _item(result, item_id):
    return next(i for i in result.items if i.id == item_id)


def test_a_check_failed_on_an_answer_found_but_not_read_waits_for_a_person(rubric_for):
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    result = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers))
    task1 = _item(result, "hw3.task1")
    check = next(c for c in task1.checks if c.id == CHECK)
    assert (check.status, check.score, check.unread, check.pending_points) == ("pending", 0.0, 1, 1.0)
    assert (task1.status, task1.score, task1.max_score, task1.pending_points) == ("pending", 1.0, 2.0, 1.0)
    assert "wait for a person: the answer they check was found but could not be read" in task1.feedback
    # Not in the score, waiting beside the written answers (4.5), as they do.
    assert (result.score, result.max_score, result.pending_points) == (9.5, 15, 5.5)
    assert result.pending_unread == ["hw3.task1"] and not task1.pending
    assert result.pending_manual == [f"hw3.task{n}.explanation" for n in range(1, 6)]


@pytest.mark.parametrize("failure", ["missing", "wrong"])
def test_a_missing_answer_or_one_read_and_wrong_still_scores_0(rubric_for, failure):
    rubric = rubric_for("hw3")
    answers = _answers(unread=False)
    message = _message(answers) if failure == "missing" else (
        "Expected: your answer to task1.layers_per_gpu is what the provided code does: [3, 3]\n"
        "Observed: you reported [2, 4] (hw3/report.pdf)")
    result = score_assignment(rubric, _report(rubric, {CHECK: message}, answers))
    task1 = _item(result, "hw3.task1")
    assert (task1.status, task1.score, task1.pending_points) == ("partial", 1.0, 0.0)
    assert (result.score, result.pending_points, result.pending_unread) == (9.5, 4.5, [])


def test_the_same_message_without_the_checks_mark_is_a_failure(rubric_for):
    """Only a case the check marks waits: the message alone decides nothing."""
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    result = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers, marks={}))
    assert _item(result, "hw3.task1").status == "partial" and result.pending_unread == []


def test_a_reworded_failure_with_the_checks_mark_still_waits(rubric_for):
    """A check's message reworded (or a check that words its own) changes no score."""
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    reworded = "Looked for: the layers per GPU\nFound: 'GPU 0 gets 3 layers, GPU 1 gets', not read"
    result = score_assignment(rubric, _report(rubric, {CHECK: reworded}, answers))
    task1 = _item(result, "hw3.task1")
    assert (task1.status, task1.pending_points, result.pending_unread) == ("pending", 1.0, ["hw3.task1"])


def test_the_check_raises_the_mark_only_for_an_answer_found_but_not_read():
    assert isinstance(_failure(_answers(unread=True)), AnswerNotRead)
    assert _failure(_answers(unread=True)).unread_answer == QID
    assert not isinstance(_failure(_answers(unread=False)), AnswerNotRead)


NODEID = "grader/checks/test_hw3.py::test_layers"


def _Item(config=None):
    return check_item(CHECK, NODEID, config)


_Call = check_call


def test_the_plugin_records_the_mark_in_the_report_and_the_session(rubric_for):
    """The JSON report a grading stores, and `pytest grader/`'s own summary, carry it."""
    from grader.pytest_plugin import CHECK_OUTCOMES, _IntegrityInReport
    from grader.scoring.session import score_session
    unread, missing = _failure(_answers(unread=True)), _failure(_answers(unread=False))
    assert pytest_json_runtest_metadata(_Item(), _Call(unread))["unread_answer"] == QID
    assert "unread_answer" not in pytest_json_runtest_metadata(_Item(), _Call(missing))
    stored: dict = {}

    class Config:
        stash = {CHECK_OUTCOMES: {}}
    _IntegrityInReport(Config()).pytest_json_modifyreport(stored)
    assert stored["case_marks"] == ["unread_answer", "graded_by_hand"]

    class Report:
        outcome, skipped, longrepr = "failed", False, None
    hook = pytest_runtest_makereport(_Item(Config()), _Call(unread))
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(Report())
    assert Config.stash[CHECK_OUTCOMES][NODEID][3] == QID
    session = score_session(Config.stash[CHECK_OUTCOMES])
    assert session["assignments"][0]["pending_unread"] == ["hw3.task1"]


def test_a_report_stored_before_the_mark_is_scored_as_it_was(rubric_for):
    """`--rescore` of an older folder: its failure on an answer found but not read still waits,
    told by its message as it was then; another answer's failure still fails."""
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    stored = _report(rubric, {CHECK: _message(answers)}, answers, marks={}, stored_before_marks=True)
    assert "case_marks" not in stored
    result = score_assignment(rubric, stored)
    assert (_item(result, "hw3.task1").status, result.pending_unread) == ("pending", ["hw3.task1"])
    other = score_assignment(rubric, _report(rubric, {CHECK: _message(_answers(unread=False))},
                                             _answers(unread=False), stored_before_marks=True))
    assert other.pending_unread == []


def test_an_override_of_the_item_is_the_persons_grade(rubric_for):
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    result = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers),
                              overrides={"hw3.task1": {"points": 2, "comment": "3 and 3, wrapped"}})
    task1 = _item(result, "hw3.task1")
    assert (task1.score, task1.pending_points, task1.overridden) == (2.0, 0.0, True)
    assert (result.score, result.pending_points, result.pending_unread) == (10.5, 4.5, [])   # 9.5 - 1 + 2
    # points: null, as the instructor.md skeleton writes it, keeps it waiting.
    waiting = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers),
                               overrides={"hw3.task1": {"points": None, "comment": ""}})
    assert waiting.pending_unread == ["hw3.task1"] and waiting.pending_points == 5.5


def test_an_integrity_hold_decides_the_whole_item(rubric_for):
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    result = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers),
                              integrity=["hw3/model_parallel.py:3: reaches into the grader"])
    assert _item(result, "hw3.task1").status == "withheld"
    assert (result.score, result.pending_points, result.pending_unread) == (0.0, 4.5, [])


def _unread_report(outcomes: dict[str, list[str]]) -> dict:
    prefix = "Expected: an answer to: the table?\nObserved: 'about 7-8' could not be read"
    tests = []
    for check, kinds in outcomes.items():
        for n, kind in enumerate(kinds):
            tests.append(case(check, "passed" if kind == "pass" else "failed", param=str(n),
                              feedback=prefix if kind == "unread" else "Expected: 7\nObserved: 9",
                              unread_answer="p.table" if kind == "unread" else None))
    tests[0]["metadata"]["answers"] = {"unread": ["p.table"], "questions": {"p.table": "the table?"}}
    return report(tests)


def test_proportional_and_all_or_nothing_checks():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 2, "total_points": 5, "items": [
        {"id": "p.table", "title": "Table", "checks": [{"check": "p.table.rows", "points": 3, "partial": "proportional"}]},
        {"id": "p.facts", "title": "Facts", "checks": [{"check": "p.facts.a", "points": 1},
                                                       {"check": "p.facts.b", "points": 1}]}]})
    result = score_assignment(rubric, _unread_report({"p.table.rows": ["pass", "unread", "wrong"],
                                                      "p.facts.a": ["pass", "unread"], "p.facts.b": ["wrong", "unread"]}))
    table, facts = _item(result, "p.table"), _item(result, "p.facts")
    # Proportional: each case its share; the unread one's share waits, the wrong one's is lost.
    assert (table.score, table.pending_points, table.status) == (1.0, 1.0, "partial")
    # All or nothing: a person's reading can earn the check only where nothing else failed.
    a, b = facts.checks
    assert (a.status, a.pending_points, b.status, b.pending_points) == ("pending", 1.0, "failed", 0.0)
    assert (facts.score, facts.pending_points, facts.status) == (0.0, 1.0, "failed")
    assert (result.score, result.pending_points, result.pending_unread) == (1.0, 2.0, ["p.table", "p.facts"])


def test_the_reports_total_line_says_what_waits(rubric_for):
    rubric = rubric_for("hw3")
    answers = _answers(unread=True)
    scored = score_assignment(rubric, _report(rubric, {CHECK: _message(answers)}, answers))
    md = render_markdown(build_result("s", [scored]))
    assert ("(written answers worth 4.5, and answers the grader found but could not read worth 1, of the 15 "
            "points are still to be graded by the staff: they are not in the 9.5 yet)") in md
    everything = score_assignment(rubric, report(all_passing(rubric)))
    assert "(written answers worth 4.5 of the 15 points" in render_markdown(build_result("s", [everything]))
