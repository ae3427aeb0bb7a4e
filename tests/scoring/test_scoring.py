"""Scoring synthetic pytest-json-report dicts through the real rubrics."""
import datetime as dt

import pytest

from grader.scoring import check_overrides, parse_rubric, score_assignment
from grader.scoring.check_results import parse_skip_longrepr
from scoring_reports import REAL_GPU_RUBRIC, all_passing, case, cases, report


def item(result, item_id):
    return next(i for i in result.items if i.id == item_id)


def check(result, check_id):
    return next(c for i in result.items for c in i.checks if c.id == check_id)


def test_everything_passing_gives_full_marks(rubric_for):
    rubric = rubric_for("hw3")
    result = score_assignment(rubric, report(all_passing(rubric)))
    # Every automatic point; the written answers (4.5 of 15) wait for the instructor.
    assert (result.score, result.max_score) == (10.5, 15)
    assert result.status == "graded" and result.errors == []
    assert {i.id: i.status for i in result.items if i.kind == "auto"} == {
        **{f"hw3.task{n}": "passed" for n in range(1, 6)},
        "hw3.task2.measured": "passed", "hw3.task3.blocks": "passed",
        "hw3.task4.measured": "passed", "hw3.task5.counting": "passed",
        "hw3.runnable": "passed"}
    assert result.pending_manual == [f"hw3.task{n}.explanation" for n in range(1, 6)]
    assert item(result, "hw3.task2.explanation").status == "manual"


def test_nothing_passing_gives_zero_with_expected_and_observed(rubric_for):
    rubric = rubric_for("hw3")
    tests = [case(c, "failed", feedback=f"{c}: expected A, observed B") for c in rubric.check_ids]
    result = score_assignment(rubric, report(tests))
    assert (result.score, result.max_score) == (0, 15)
    task1 = item(result, "hw3.task1")
    assert task1.status == "failed"
    assert task1.feedback.startswith("Run the provided code as it is")  # the rubric's fail text first
    assert "hw3.task1.layers_reported: expected A, observed B" in task1.feedback
    assert check(result, "hw3.task1.layers_reported").cases[0].message == (
        "hw3.task1.layers_reported: expected A, observed B")


def test_proportional_partial_credit_over_parametrized_cases(rubric_for):
    rubric = rubric_for("hw3")
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task3.balanced"]
    # 24 GPU x DEPTH configurations, 12 unbalanced: half of the check's 0.5 points.
    tests += cases("hw3.task3.balanced", ["passed", "failed"] * 12, feedback="expected [4, 4], observed [8, 0]")
    result = score_assignment(rubric, report(tests))
    balanced = check(result, "hw3.task3.balanced")
    assert (balanced.passed, balanced.failed, balanced.score, balanced.status) == (12, 12, 0.25, "partial")
    assert item(result, "hw3.task3").score == 1.75
    assert item(result, "hw3.task3").status == "partial"
    assert result.score == 10.25
    # The same failure in 12 cases is said once, with the cases it happened in.
    lines = [l for l in balanced.feedback.splitlines() if "observed [8, 0]" in l]
    assert lines == ["- [1], [3], [5], [7], [9] and 7 more: expected [4, 4], observed [8, 0]"]


def test_one_bug_failing_every_configuration_is_told_once_with_its_cases(rubric_for):
    rubric = rubric_for("hw3")
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task3.all_gpus_used"]
    configurations = [(3, 5), (4, 12), (5, 20), (8, 24)]
    tests += [case("hw3.task3.all_gpus_used", "failed", param=f"{g}gpus-depth{d}",
                   feedback=f"Expected: the {d} layers spread over all {g} GPUs\nObserved: no "
                            f"layer on {', '.join(f'cuda:{i}' for i in range(1, g))} (layers per "
                            f"GPU {[d] + [0] * (g - 1)})")
              for g, d in configurations]
    feedback = check(score_assignment(rubric, report(tests)), "hw3.task3.all_gpus_used").feedback
    assert feedback.count("Expected:") == 2, f"two examples, then the cases alike:\n{feedback}"
    assert "- [3gpus-depth5]: Expected: the 5 layers spread over all 3 GPUs" in feedback
    assert "- [4gpus-depth12]: Expected: the 12 layers spread over all 4 GPUs" in feedback
    assert ("- the same failure, with each case's own numbers: [5gpus-depth20], [8gpus-depth24]"
            in feedback), feedback
    # Different failures stay apart.
    tests[-1] = case("hw3.task3.all_gpus_used", "failed", param="2gpus-depth4",
                     feedback="layer 3 is on cpu")
    feedback = check(score_assignment(rubric, report(tests)), "hw3.task3.all_gpus_used").feedback
    assert "- [2gpus-depth4]: layer 3 is on cpu" in feedback and feedback.count("Expected:") == 2
    assert "[5gpus-depth20]" in feedback.splitlines()[-2], feedback


def test_a_round_robin_layout_earns_task_3_whole_and_is_told_it_is_not_blocks(rubric_for):
    """The handout asks for an even spread over all GPUs, which round-robin is (a TA's audit:
    the rubric had taken 0.5 for contiguity the handout never asks for)."""
    rubric = rubric_for("hw3")
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task3.contiguous"]
    # Round-robin is never contiguous in the counted cases (more layers than GPUs, 2 or more GPUs).
    tests += cases("hw3.task3.contiguous", ["failed"] * 17)
    result = score_assignment(rubric, report(tests))
    assert item(result, "hw3.task3").score == 2 and result.score == 10.5
    blocks = item(result, "hw3.task3.blocks")
    assert (blocks.score, blocks.max_score, blocks.status) == (0, 0, "failed")
    assert "DEPTH-1 transfers instead of N-1" in blocks.feedback
    assert "costs no point" in blocks.feedback


def test_skipped_hardware_check_leaves_the_maximum():
    rubric = parse_rubric(REAL_GPU_RUBRIC)
    tests = [case("p.code.right"),
             case("p.speedup.real", "skipped", skip_reason="needs 2 real GPUs")]
    result = score_assignment(rubric, report(tests))
    speedup = item(result, "p.speedup")
    assert (speedup.status, speedup.score, speedup.max_score, speedup.points) == ("skipped", 0, 0, 1)
    assert "needs 2 real GPUs" in speedup.feedback
    assert "left out of the maximum" in speedup.feedback
    assert (result.score, result.max_score, result.rubric_max_score, result.excluded_points) == (11, 11, 12, 1)
    assert result.status == "graded"


def test_when_skipped_zero_keeps_the_points_in_the_maximum():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 2, "items": [
        {"id": "p.a", "title": "A", "checks": [
            {"check": "p.a.fast", "points": 2, "when_skipped": "zero"},
            {"check": "p.a.right", "points": 1}]}]})
    result = score_assignment(rubric, report(case("p.a.fast", "skipped"), case("p.a.right")))
    assert (result.score, result.max_score) == (1, 3)
    assert "it counts 0 of 2 point(s)" in item(result, "p.a").feedback


def test_partly_skipped_proportional_check_counts_only_what_ran():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 5, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.split", "points": 3, "partial": "proportional"}]}]})
    # 2 and 3 GPUs ran (one passed), 5 GPUs skipped: 1 of 2 counted cases.
    result = score_assignment(rubric, report(cases("p.a.split", ["passed", "failed", "skipped"])))
    assert (result.score, result.max_score) == (1.5, 3)
    assert "1 case(s) skipped and not counted" in item(result, "p.a").feedback


def test_all_or_nothing_check_with_one_failing_case():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 2}]}]})
    result = score_assignment(rubric, report(cases("p.a.x", ["passed", "passed", "failed"])))
    assert (result.score, item(result, "p.a").status) == (0, "failed")


def test_a_check_worth_no_point_tells_and_leaves_the_items_points_and_status():
    """practical4.uneven_batch: a split right for the handout's batch keeps every point and its
    item passes; the check still tells the student, saying it costs nothing."""
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 2, "items": [
        {"id": "p.a", "title": "A", "feedback": {"pass": "Well split.", "fail": "Split every row."},
         "checks": [{"check": "p.a.split", "points": 2}, {"check": "p.a.uneven", "points": 0}]}]})
    result = score_assignment(rubric, report(case("p.a.split"), case("p.a.uneven", "failed",
                                                                        feedback="row 62 in no chunk")))
    scored = item(result, "p.a")
    assert (result.score, result.max_score, scored.status) == (2, 2, "passed")
    assert scored.feedback.startswith("Well split.")
    assert "worth no point" in check(result, "p.a.uneven").feedback
    assert "row 62 in no chunk" in check(result, "p.a.uneven").feedback
    assert check(result, "p.a.uneven").status == "failed"


def test_a_skipped_check_worth_no_point_says_so_not_that_points_leave_the_maximum():
    """adv41 F7: practical4.uneven_batch skipped where the batch is written in place said
    "its 0 point(s) are left out of the maximum" beside its reason."""
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 2, "items": [
        {"id": "p.a", "title": "A",
         "checks": [{"check": "p.a.split", "points": 2}, {"check": "p.a.uneven", "points": 0}]}]})
    result = score_assignment(rubric, report(case("p.a.split"), case(
        "p.a.uneven", "skipped", skip_reason="no top-level BATCH_SIZE")))
    uneven = check(result, "p.a.uneven")
    assert (result.score, result.max_score, item(result, "p.a").status) == (2, 2, "passed")
    assert uneven.feedback == ("p.a.uneven was skipped (no top-level BATCH_SIZE); it is worth "
                               "no point."), uneven.feedback


def test_missing_check_is_an_error_not_a_zero_in_silence(rubric_for):
    rubric = rubric_for("hw3")
    tests = [case(c) for c in rubric.check_ids if c != "hw3.task2.speed_answer"]
    result = score_assignment(rubric, report(tests))
    task2 = item(result, "hw3.task2")
    assert (task2.status, task2.score, task2.max_score) == ("error", 1, 2)
    assert "check hw3.task2.speed_answer did not run" in task2.feedback
    assert result.errors == ["hw3.task2: check 'hw3.task2.speed_answer' did not run"]
    assert result.status == "incomplete" and result.score == 9.5


def test_errored_case_scores_zero_with_the_error_text():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 2}]}]})
    result = score_assignment(rubric, report(case("p.a.x", "error")))
    a = item(result, "p.a")
    assert (a.status, a.score) == ("error", 0)
    assert "error: error in test setup: RuntimeError: fixture crashed" in a.feedback


def test_failure_without_plugin_feedback_falls_back_to_pytest_crash_message():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 1}]}]})
    result = score_assignment(rubric, report(case("p.a.x", "failed")))
    assert check(result, "p.a.x").cases[0].message == "AssertionError: raw"


def test_manual_item_override_and_bad_overrides(rubric_for):
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 1}]},
        {"id": "p.q1", "title": "Q1", "kind": "manual", "points": 2},
        {"id": "p.q2", "title": "Q2", "kind": "manual", "points": 2}]})
    overrides = {"p.q1": {"points": 1.5, "comment": "Right idea, no numbers."},
                 "p.q2": {"points": 3}, "p.q9": {"points": 1}}
    result = score_assignment(rubric, report(case("p.a.x")), overrides=overrides)
    q1, q2 = item(result, "p.q1"), item(result, "p.q2")
    assert (q1.status, q1.score, q1.max_score, q1.pending, q1.feedback) == (
        "manual", 1.5, 2, False, "Right idea, no numbers.")
    assert (q2.score, q2.pending) == (0, True)
    assert result.pending_manual == ["p.q2"] and result.pending_points == 2
    # An instructor's typo is the instructor's problem, never an error of the student's grading:
    assert result.errors == [] and result.status == "graded"
    assert check_overrides(overrides, {"p": rubric}).problems == [
        "override 'p.q2' ignored: points must be a number between 0 and 2, got 3",
        "override 'p.q9' ignored: p has no item with that id (did you mean 'p.q2' or 'p.q1'?)"]
    assert (result.score, result.max_score) == (2.5, 5)


def test_override_of_an_automatic_item_is_marked():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 2}]}]})
    result = score_assignment(rubric, report(case("p.a.x", "failed")),
                              overrides={"p.a": {"points": 1, "comment": "regrade: tolerance too tight"}})
    a = item(result, "p.a")
    assert (a.score, a.overridden, a.status) == (1, True, "failed")
    assert a.feedback.startswith("Score set by the instructor: regrade: tolerance too tight")


def test_overrides_for_other_assignments_are_left_to_them():
    # One overrides file serves a whole submission: practical4's ids are not hw3's business.
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 2}]}]})
    result = score_assignment(rubric, report(case("p.a.x")),
                              overrides={"q.a": {"points": 1}, "pp.a": {"points": 0}})
    assert result.errors == [] and result.status == "graded" and result.score == 2


INTEGRITY_RUBRIC = {"assignment": "p", "title": "t", "version": "1", "gpus": 1,
                    "due": "2026-04-30T23:59:00+02:00", "late_policy": {"per_day": 0.1, "max_days": 5},
                    "items": [{"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 6}]},
                              {"id": "p.b", "title": "B", "checks": [{"check": "p.b.x", "points": 4}]},
                              {"id": "p.q", "title": "Q", "kind": "manual", "points": 2}]}
FOUND = ["practical4/concepts.py:3 reaches into the grader: imports grader.vgpu.trace"]


def test_integrity_problems_withhold_the_automatic_points_and_keep_them_for_review():
    rubric = parse_rubric(INTEGRITY_RUBRIC)
    result = score_assignment(rubric, report([case("p.a.x"), case("p.b.x", "failed")]),
                              overrides={"p.q": {"points": 2}}, integrity=FOUND)
    a, b, q = item(result, "p.a"), item(result, "p.b"), item(result, "p.q")
    assert (a.score, a.status, a.withheld_score) == (0, "withheld", 6)
    assert (b.score, b.status, b.withheld_score) == (0, "withheld", 0)
    assert "Withheld for review by the course staff" in a.feedback and "gave 6 of 6" in a.feedback
    assert (q.score, q.status) == (2, "manual"), "a person's grade is not withheld"
    assert (result.score, result.max_score) == (2, 12)
    assert result.integrity == {"problems": FOUND, "notes": [], "withheld": True,
                                "withheld_points": 6.0, "cleared": False, "comment": ""}


def test_the_instructor_clears_the_hold_with_an_override():
    rubric = parse_rubric(INTEGRITY_RUBRIC)
    cleared = score_assignment(rubric, report([case("p.a.x"), case("p.b.x")]), integrity=FOUND,
                               overrides={"p.integrity": {"cleared": True, "comment": "harmless"}},
                               submitted_at="2026-05-01T10:00:00+02:00")
    assert cleared.errors == [] and item(cleared, "p.a").status == "passed"
    assert cleared.integrity["cleared"] and not cleared.integrity["withheld"]
    assert cleared.integrity["comment"] == "harmless"
    assert cleared.score == 9, "10 points, one day late"
    wrong = {"p.integrity": {"cleared": "yes"}}
    held = score_assignment(rubric, report([case("p.a.x"), case("p.b.x")]), integrity=FOUND,
                            overrides=wrong)
    assert held.errors == [] and held.integrity["withheld"] and held.score == 0
    assert check_overrides(wrong, {"p": rubric}).problems == [
        "override 'p.integrity' ignored: it must be {cleared: true, comment: ...}"]


def test_without_integrity_problems_there_is_no_hold():
    rubric = parse_rubric(INTEGRITY_RUBRIC)
    result = score_assignment(rubric, report([case("p.a.x"), case("p.b.x")]), integrity=[])
    assert result.integrity is None and result.score == 10


NOTES = ["practical4/concepts.py:4 reads environment variables: reads an environment variable "
         "by a computed name (`print(os.environ.get(var))`)"]


def test_notes_are_kept_for_the_instructor_and_hold_nothing():
    rubric = parse_rubric(INTEGRITY_RUBRIC)
    result = score_assignment(rubric, report([case("p.a.x"), case("p.b.x")]),
                              integrity_notes=NOTES)
    assert result.score == 10 and {i.status for i in result.items if i.kind == "auto"} == {
        "passed"}, "an unusual but honest line costs nothing"
    assert result.integrity == {"problems": [], "notes": NOTES, "withheld": False,
                                "withheld_points": 0.0, "cleared": False, "comment": ""}
    both = score_assignment(rubric, report([case("p.a.x"), case("p.b.x")]), integrity=FOUND,
                            integrity_notes=NOTES)
    assert both.integrity["withheld"] and both.integrity["notes"] == NOTES and both.score == 0


LATE_RUBRIC = {"assignment": "p", "title": "t", "version": "1", "gpus": 1,
               "due": "2026-04-30T23:59:00+02:00", "late_policy": {"per_day": 0.1, "max_days": 5},
               "items": [{"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 10}]}]}


@pytest.mark.parametrize("submitted, days, penalty", [
    ("2026-04-30T23:59:00+02:00", 0, 0),
    ("2026-04-30T21:58:30+00:00", 0, 0),        # seen from UTC, 30 s early
    ("2026-04-30T21:59:30+00:00", 1, 1),        # seen from UTC, 30 s late
    ("2026-05-01T00:30:00+02:00", 1, 1),        # 31 minutes late: a started day
    ("2026-05-04T12:00:00+02:00", 4, 4),        # 3.5 days: 4 started days, 40 %
    ("2026-05-05T23:59:00+02:00", 5, 5),        # exactly max_days
    ("2026-05-06T00:00:00+02:00", 6, 10),       # beyond max_days: nothing left
])
def test_late_penalty(submitted, days, penalty):
    rubric = parse_rubric(LATE_RUBRIC)
    result = score_assignment(rubric, report(case("p.a.x")), submitted_at=submitted)
    assert result.late["days_late"] == days
    penalty_items = [i for i in result.items if i.id == "p.late_penalty"]
    if penalty:
        assert penalty_items[0].score == -penalty and penalty_items[0].status == "penalty"
        assert f"{days} started day" in penalty_items[0].feedback
    else:
        assert penalty_items == []
    assert (result.score, result.max_score) == (10 - penalty, 10)


def test_late_penalty_accepts_datetime_and_grace():
    data = dict(LATE_RUBRIC, late_policy={"per_day": 0.1, "max_days": 5, "grace_minutes": 15})
    when = dt.datetime(2026, 4, 30, 22, 10, tzinfo=dt.timezone.utc)  # 00:10+02:00, 11 min late
    result = score_assignment(parse_rubric(data), report(case("p.a.x")), submitted_at=when)
    assert result.late["days_late"] == 0 and result.score == 10


def test_submission_time_without_zone_is_reported_not_guessed():
    result = score_assignment(parse_rubric(LATE_RUBRIC), report(case("p.a.x")),
                              submitted_at="2026-05-03T10:00:00")
    assert result.score == 10
    assert result.errors == ["late penalty not applied: submission time 2026-05-03T10:00:00 has no time zone offset"]


def test_unknown_check_and_collection_errors_are_reported():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 1}]}]})
    broken = {"nodeid": "grader/checks/test_p.py", "outcome": "failed", "result": [],
              "longrepr": "ImportError while importing test module\nE   ModuleNotFoundError: No module named 'x'"}
    result = score_assignment(rubric, report(case("p.a.x"), case("p.a.renamed"), case("q.other"),
                                             exitcode=1, collectors=[broken]))
    assert result.errors == [
        "could not collect grader/checks/test_p.py: ImportError while importing test module\n"
        "E   ModuleNotFoundError: No module named 'x'",
        "check 'p.a.renamed' ran but is not in rubric <memory>; it gave no points"]
    assert result.score == 1 and result.status == "incomplete"


def test_bad_pytest_exit_code_is_reported():
    rubric = parse_rubric({"assignment": "p", "title": "t", "version": "1", "gpus": 1, "items": [
        {"id": "p.a", "title": "A", "checks": [{"check": "p.a.x", "points": 1}]}]})
    result = score_assignment(rubric, report(exitcode=5))
    assert "pytest collected no tests (exit code 5)" in result.errors


@pytest.mark.parametrize("longrepr, reason", [
    ("('/x/checks.py', 12, 'Skipped: needs 2 real GPUs')", "needs 2 real GPUs"),
    (["/x/checks.py", 12, "Skipped: needs 2 real GPUs"], "needs 2 real GPUs"),
    ("Skipped: needs 2 real GPUs", "needs 2 real GPUs"),
    ("no GPUs here", "no GPUs here"),
])
def test_skip_reason_formats(longrepr, reason):
    assert parse_skip_longrepr(longrepr) == reason


def test_an_override_scoring_an_answer_the_upload_no_longer_has_is_said():
    """An instructor's day: 0.4 given to a written answer stayed after the student re-uploaded
    without it, with no word anywhere; it is applied, and listed with the overrides' problems."""
    from grader.grading.score import scored_without_an_answer
    assignment = {"answers": {"values": {"q.kept": "an answer"}}, "items": [
        {"id": "p.gone", "kind": "manual", "answer": "q.gone", "score": 0.4, "pending": False},
        {"id": "p.kept", "kind": "manual", "answer": "q.kept", "score": 0.5, "pending": False},
        {"id": "p.zero", "kind": "manual", "answer": "q.zero", "score": 0, "pending": False},
        {"id": "p.waiting", "kind": "manual", "answer": "q.waiting", "score": 0, "pending": True}]}
    assert scored_without_an_answer(assignment) == [
        "p.gone: the overrides score it 0.4, but this upload has no answer to q.gone (given to an "
        "earlier upload?)"]


def test_a_release_of_an_assignment_that_holds_nothing_is_said():
    """An instructor's day: `practical4.integrity: {cleared: true}` under a student with
    nothing held was accepted without a word, as a typo in the key of a real hold would be."""
    from grader.grading.score import released_without_a_hold
    from grader.scoring import check_overrides, load_rubrics
    overrides = check_overrides({"practical4.integrity": {"cleared": True, "comment": "ok"}},
                                load_rubrics(), ["practical4"])
    assert overrides.release("practical4") is not None and not overrides.problems
    held = {"id": "practical4", "integrity": {"problems": ["concepts.py:3 reads the seal"]}}
    assert released_without_a_hold(held, overrides) == []
    assert released_without_a_hold({"id": "practical5"}, overrides) == []
    said = released_without_a_hold({"id": "practical4", "integrity": {"problems": []}}, overrides)
    assert said == ["practical4.integrity: cleared, but nothing of practical4 is held for review "
                    "in this upload: the release changes nothing (meant for another student?)"]
