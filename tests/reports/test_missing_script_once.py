"""A script the submission lacks is one entry in report.md and report.html, at the top of its
assignment with the checks that needed it, as `pdl-grade check` groups it (grader/reports/
terminal.py `failure_causes`); each of those checks points there. HW3 without its script had
said "hw3/model_parallel.py is missing from the submission" in 33 places of report.md: every
check, every configuration of Task 3 and every skip reason."""
import html

from grader.harness.observation import missing_script
from grader.reports.render import render_html, render_markdown
from grader.scoring import build_result, load_rubrics, score_assignment
from tests.scoring.scoring_reports import case, cases, report

P6 = "practical6/practical6_ddp.py"
MISSING = missing_script(P6, ["practical6/ddp.py"])
POINTER = f"needs {P6}, missing from your submission: see the top of this assignment"


def observed(expected: str, said: str = MISSING) -> str:
    return f"Expected: {expected}\nObserved: {said}\nWhere to look: {P6}"


def graded() -> dict:
    rubric = load_rubrics()["practical6"]
    needing = ["practical6.grads_synchronised", "practical6.params_equal_after_step",
               "practical6.world_size_reported"]
    tests = [case(c) for c in rubric.check_ids if c not in needing + [
        "practical6.world_size", "practical6.rank_printed", "practical6.usage_table_reported"]]
    tests += [case(c, "failed", feedback=observed(f"what {c} checks")) for c in needing]
    tests += [case("practical6.world_size", "failed", param=str(n),
                   feedback=observed(f"{n} process(es)", f"your code did not get that far: {MISSING}"))
              for n in (1, 2, 3, 4)]
    # Skipped for the missing script in two configurations: one reason, not one per case.
    tests += cases("practical6.rank_printed", ["skipped", "skipped"],
                   skip_reason=f"not counted: {P6} with 2 GPUs: {MISSING}")
    # A check that failed for another reason as well keeps its own words.
    tests += [case("practical6.usage_table_reported", "failed", param="a",
                   feedback=observed("a table")),
              case("practical6.usage_table_reported", "failed", param="b",
                   feedback="Expected: 4 rows\nObserved: 2 rows\nWhere to look: answers.yaml")]
    return build_result("alice", [score_assignment(rubric, report(tests))])


def test_a_missing_script_is_one_entry_naming_the_checks_it_cost():
    result = graded()
    for text in (render_markdown(result), html.unescape(render_html(result))):
        # Once at the top; once more by the check that also failed for another reason.
        assert text.count(f"{P6} is missing from the submission") == 2, text
        assert "practical6/ddp.py is there: the grader runs practical6/practical6_ddp.py; rename it." in text
        assert ("The checks that needed it (5): practical6.world_size, practical6.grads_synchronised, "
                "practical6.params_equal_after_step, practical6.world_size_reported, "
                "practical6.usage_table_reported.") in text, text
    text = render_markdown(result)
    for check, n in (("practical6.world_size", 4), ("practical6.grads_synchronised", 1)):
        said = text.split(f"**{check}** (")[1].split("```", 2)[1]
        assert f"- {n} case(s): {POINTER}" in said and "Expected:" not in said, said
    skipped = text.split("**practical6.rank_printed** (")[1].split("**practical6.", 1)[0]
    assert skipped.count(f"skipped because: {POINTER}") == 1, skipped
    assert skipped.count(POINTER) == 2, "the list of reasons, and the check's own sentence once"
    mixed = text.split("**practical6.usage_table_reported** (")[1]
    assert "Observed: 2 rows" in mixed and POINTER not in mixed.split("**")[0]


def test_no_entry_without_a_missing_script():
    rubric = load_rubrics()["practical6"]
    result = build_result("alice", [score_assignment(rubric, report(
        [case(c, "failed", feedback=observed("x", "2 rows")) for c in rubric.check_ids]))])
    assert "Missing from your submission" not in render_markdown(result) + render_html(result)
