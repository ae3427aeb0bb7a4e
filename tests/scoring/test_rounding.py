"""Points are rounded once, where they are added up (a TA's audit 28, "Rounding"): an item is
its checks' exact points rounded to 2 decimals, the assignment its items' exact points rounded,
the late penalty a share of the exact total. Rounding each check first had drifted an item
by up to 0.01 from a TA's arithmetic (2 x 1/3 of a point shown as 0.66)."""
import json

from grader.scoring import build_result, parse_rubric, score_assignment
from scoring_reports import all_passing, case, cases, report


def item(result, item_id):
    return next(i for i in result.items if i.id == item_id)


def check(result, check_id):
    return next(c for i in result.items for c in i.checks if c.id == check_id)


def graded_with(rubric, replaced: dict[str, list[dict]]) -> list[dict]:
    """Every check of `rubric` passing, except those in `replaced` (check -> its cases)."""
    return [case(c) for c in rubric.check_ids if c not in replaced] + \
        [t for tests in replaced.values() for t in tests]


def full_marks(rubric) -> float:
    return score_assignment(rubric, report(all_passing(rubric))).score


def test_two_thirds_of_two_checks_is_0_67_not_0_66(rubric_for):
    # Audit 28 #4: 1 of 3 rank configurations passes in each of P6's two data checks.
    rubric = rubric_for("practical6")
    outcomes = ["passed", "failed", "failed"]
    result = score_assignment(rubric, report(graded_with(rubric, {
        "practical6.per_rank_batch": cases("practical6.per_rank_batch", outcomes),
        "practical6.different_data": cases("practical6.different_data", outcomes)})))
    assert check(result, "practical6.per_rank_batch").score == 0.33   # each check as shown
    data = item(result, "practical6.data")
    assert data.score == 0.67, f"2 x 1/3 of a point is 0.67 as a TA adds it; scored {data.score}"
    assert result.score == round(full_marks(rubric) - 2 + 0.67, 2)


def test_thirteen_of_nineteen_layouts_is_1_37_of_task_3(rubric_for):
    # Audit 28 #12: 13 of the 19 counted layouts pass Task 3's three checks (12 skipped):
    # 13/19 x 2 = 1.368, where the checks rounded first gave 0.68 + 0.34 + 0.34 = 1.36.
    rubric = rubric_for("hw3")
    outcomes = ["passed"] * 13 + ["failed"] * 6 + ["skipped"] * 12
    result = score_assignment(rubric, report(graded_with(rubric, {
        c: cases(c, outcomes) for c in ("hw3.task3.all_gpus_used", "hw3.task3.balanced",
                                        "hw3.task3.output_matches")})))
    assert [c.score for c in item(result, "hw3.task3").checks[:3]] == [0.68, 0.34, 0.34]
    assert item(result, "hw3.task3").score == 1.37
    assert result.score == 9.87, f"10.5 - 2 + 1.368 is 9.87 to a TA; scored {result.score}"


def test_ten_of_twenty_one_layouts_is_0_95_of_task_3(rubric_for):
    # Audit 28 #13: 10/21 x 2 = 0.952, where 0.48 + 0.24 + 0.24 gave 0.96.
    rubric = rubric_for("hw3")
    outcomes = ["passed"] * 10 + ["failed"] * 11 + ["skipped"] * 10
    result = score_assignment(rubric, report(graded_with(rubric, {
        c: cases(c, outcomes) for c in ("hw3.task3.all_gpus_used", "hw3.task3.balanced",
                                        "hw3.task3.output_matches")})))
    assert item(result, "hw3.task3").score == 0.95
    assert result.score == 9.45


def test_half_a_hundredth_is_rounded_up_as_a_person_rounds_it(rubric_for):
    # 1 of 2 rows of a 0.25-point table: 0.125, which round() makes 0.12 (audit 28 #10).
    rubric = rubric_for("practical10")
    result = score_assignment(rubric, report(graded_with(rubric, {
        "practical10.micro_table_reported": cases("practical10.micro_table_reported",
                                                  ["passed", "failed"])})))
    assert check(result, "practical10.micro_table_reported").score == 0.13
    # 0.125 less than full marks (of two decimals): x.xx875 is x.xx88.
    assert result.score == round(full_marks(rubric) - 0.12, 2)


THIRDS = {"assignment": "p", "title": "t", "version": "1", "gpus": 1,
          "due": "2026-04-30T23:59:00+02:00", "late_policy": {"per_day": 0.1, "max_days": 5},
          "items": [{"id": f"p.{name}", "title": name.upper(), "checks": [
              {"check": f"p.{name}.x", "points": 1, "partial": "proportional"}]}
              for name in ("a", "b")] + [
              {"id": "p.c", "title": "C", "checks": [{"check": "p.c.x", "points": 8}]}]}
ONE_THIRD = ["passed", "failed", "failed"]


def thirds_report():
    return report(cases("p.a.x", ONE_THIRD), cases("p.b.x", ONE_THIRD), case("p.c.x"))


def test_the_total_is_the_exact_points_rounded_once():
    # Two items of 1/3 each: each is shown 0.33, the total is 8.67 (8 + 2/3), not 8.66.
    result = score_assignment(parse_rubric(THIRDS), thirds_report())
    assert [i.score for i in result.items] == [0.33, 0.33, 8]
    assert result.score == 8.67


def test_the_late_penalty_is_a_share_of_the_exact_total():
    # One day late, 10 %: 8.667 x 0.9 = 7.8 (the rounded 8.67 would give 7.803, and the sum of
    # the rounded items 8.66 would give 7.79).
    result = score_assignment(parse_rubric(THIRDS), thirds_report(),
                              submitted_at="2026-05-01T10:00:00+02:00")
    penalty = item(result, "p.late_penalty")
    assert penalty.score == -0.87 and result.score == 7.8


def test_withheld_points_are_the_exact_points_rounded_once():
    result = score_assignment(parse_rubric(THIRDS), thirds_report(),
                              integrity=["p/x.py:1 reaches into the grader"])
    assert result.integrity["withheld_points"] == 8.67 and result.score == 0
    assert [i.withheld_score for i in result.items] == [0.33, 0.33, 8]


def test_an_override_replaces_the_item_s_exact_points():
    result = score_assignment(parse_rubric(THIRDS), thirds_report(),
                              overrides={"p.a": {"points": 1, "comment": "read by hand"}})
    assert [i.score for i in result.items] == [1, 0.33, 8] and result.score == 9.33


def test_result_json_keeps_the_rounded_points_only():
    result = score_assignment(parse_rubric(THIRDS), thirds_report())
    stored = build_result("alice", [result])
    text = json.dumps(stored)
    assert "exact" not in text and "0.333" not in text
    assert stored["assignments"][0]["score"] == 8.67 and stored["score"] == 8.67
