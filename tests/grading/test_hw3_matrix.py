"""HW3 graded end to end: each submission of the matrix earns exactly the points the rubric
says, task by task (tests/fixtures/hw3_variants.py gives the submissions and, worked out from
the rubric's stated intent, the points).

Every variant is one full grading (`pdl-grade grade`'s python API, virtual GPUs): the untouched
template, the reference, Task 3's layouts (all on cuda:0, the unchanged two-GPU split,
round-robin, uneven, a GPU that does not exist), the course's ways of writing the code
(module constants and `__init__(self)`, a forward that moves only when needed, helper modules),
Task 5 counted by hand, wrong answers in four tasks, and code the grader cannot build or run.

Slow: one grading per variant, 15-25 s each on 2 cores (about 5 minutes in all). The variants
whose checks the default suite shows elsewhere (hv.GRADED_ON_REQUEST, each naming where) are
graded only with PDL_EXTENDED_MATRIX=1.
"""
from __future__ import annotations


import pytest

from tests.fixtures import hw3_variants as hv
from tests.support.gradings import Gradings, names_in_order

from grader.grading import grade_submission
from grader.scoring import default_rubrics_dir, load_rubric

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """variant name -> its HW3 assignment in result.json, graded once per module (the next
    ones the selected tests need are graded meanwhile: tests/support/gradings.py)."""
    def grade_one(name: str) -> dict:
        base = tmp_path_factory.mktemp(f"hw3-{name}")
        submission = hv.build(hv.graded_as(name), base / "submission")
        result = grade_submission(submission, base / "out", ["hw3"])
        assert not result["errors"], f"[{name}] grading errors: {result['errors']}"
        (assignment,) = result["assignments"]
        return assignment

    # A variant graded together with others (hv.GRADED_TOGETHER) reads its group's grading.
    order = list(dict.fromkeys(hv.graded_as(name).name for name in names_in_order(request)))
    gradings = Gradings(grade_one, order)
    yield lambda name: gradings.get(hv.graded_as(name).name)
    gradings.close()


def earned(item: dict) -> float:
    # A submission held for review keeps what the checks gave in `withheld_score`.
    return item["withheld_score"] if item["status"] == "withheld" else item["score"]


def by_id(assignment: dict) -> dict[str, dict]:
    return {item["id"]: item for item in assignment["items"]}


NAMES = [variant.name for variant in hv.GRADED]


@pytest.mark.parametrize("name", NAMES)
def test_each_task_earns_exactly_its_points(graded, name):
    variant = hv.BY_NAME[name]
    assignment = graded(name)
    items = by_id(assignment)
    wrong = [f"{task}: expected {want:g}, observed {earned(items[task]):g} of "
             f"{items[task]['max_score']:g} ({items[task]['status']})\n--- feedback ---\n"
             f"{items[task]['feedback']}"
             for task, want in variant.expected.items()
             if earned(items[task]) != pytest.approx(want, abs=0.005)]
    graded_as = hv.graded_as(name)
    assert not wrong, (f"[{name}] {variant.description}"
                       + (f"\n(graded together: {graded_as.description})"
                          if graded_as.name != name else "") + "\n\n" + "\n\n".join(wrong))
    # The timing checks show the measurement, Task 3's blocks the layout's shape; they are
    # worth nothing themselves.
    assert all(earned(items[i]) == 0 for i in ("hw3.task2.measured", "hw3.task3.blocks",
                                                "hw3.task4.measured", "hw3.runnable"))
    # The script runs to its end unless the variant says it stops (an honest script saving
    # beside itself, which only the grader makes read-only, is not counted).
    runs_to_its_end = items["hw3.runnable"]["status"] in ("passed", "skipped")
    assert runs_to_its_end != ("hw3.script_runs" in variant.failing), (
        f"[{name}] hw3.runnable: {items['hw3.runnable']['status']}\n"
        f"{items['hw3.runnable']['feedback']}")


@pytest.mark.parametrize("name", NAMES)
def test_only_checks_the_grader_could_not_run_on_working_code_wait_for_a_person(graded, name):
    """Points wait (no verdict) only where the grader failed on a script that runs to its end
    (hv.Variant.waiting); a student's own failure (the template, a crash, a missing answer)
    keeps its 0, with nothing waiting."""
    variant = hv.BY_NAME[name]
    assignment = graded(name)
    observed = {item["id"]: item.get("pending_points") or 0 for item in assignment["items"]
                if item["kind"] == "auto" and (item.get("pending_points") or 0) > 0}
    expected = {task: points for task, points in variant.waiting.items() if points}
    assert observed == pytest.approx(expected), (
        f"[{name}] automatic points waiting for a person: expected {expected}, observed "
        f"{observed} (grader/checks/test_hw3.py built(), grader/scoring/score.py)")
    assert sorted(assignment.get("pending_by_hand") or []) == sorted(expected), assignment.get(
        "pending_by_hand")
    assert not assignment.get("pending_unread"), assignment.get("pending_unread")


@pytest.mark.parametrize("name", NAMES)
def test_failing_checks_say_what_was_expected_and_observed(graded, name):
    variant = hv.BY_NAME[name]
    checks = {check["id"]: check for item in graded(name)["items"] for check in item["checks"]}
    for check_id, phrases in variant.failing.items():
        check = checks[check_id]
        # A check shown for no points (Task 3's blocks) fails all the same.
        assert check["score"] < check["max_score"] or (
            check["max_score"] == 0 and check["status"] != "passed"), \
            f"[{name}] {check_id} lost no point"
        missing = [p for p in phrases if p not in check["feedback"]]
        assert not missing, (f"[{name}] {check_id}: the feedback lacks {missing}\n"
                             f"--- feedback ---\n{check['feedback']}")


@pytest.mark.parametrize("name", ["reference", "template", "round_robin"])
def test_written_answers_wait_for_a_person_with_their_points(graded, name):
    assignment = graded(name)
    rubric = load_rubric(default_rubrics_dir() / "hw3.yaml")
    manual = {item.id: item.points for item in rubric.items if item.is_manual}
    assert sum(manual.values()) == 4.5
    items = by_id(assignment)
    for item_id, points in manual.items():
        assert items[item_id]["status"] == "manual" and items[item_id]["pending"], item_id
        assert items[item_id]["max_score"] == points and items[item_id]["score"] == 0
    assert sorted(assignment["pending_manual"]) == sorted(manual)
    assert assignment["rubric_max_score"] == 15


@pytest.mark.parametrize("name", NAMES)
def test_only_what_the_variant_says_is_held_or_noted_for_a_person(graded, name):
    held_for, noted_for = hv.BY_NAME[name].held_for, hv.BY_NAME[name].noted_for
    integrity = graded(name)["integrity"] or {}
    if noted_for:
        assert any(noted_for in note for note in integrity.get("notes") or []), integrity
    # The outputs are recomputed outside the run for every submission that built a model
    # (the sandboxed child must be able to read the weights it is handed).
    assert not [n for n in integrity.get("notes") or [] if "could not be recomputed" in n], \
        integrity.get("notes")
    if not held_for:
        assert not integrity.get("withheld"), f"[{name}] held: {integrity.get('problems')}"
        return
    assert integrity.get("withheld"), f"[{name}] not held for review: {integrity}"
    assert any(held_for in problem for problem in integrity["problems"]), integrity["problems"]


def test_a_renamed_model_class_is_noted_for_no_points(graded):
    """adv39 F1b: the handout names the class LargeLinearModelMP but never asks to keep the
    name; the student is told which class was graded, under Notes (no points)."""
    notes = graded("renamed_class_built_as_main_builds_it").get("environment_notes") or []
    assert any("no class LargeLinearModelMP" in note and "NaiveModelParallel" in note
               and "No points are lost" in note for note in notes), (
        f"expected a note naming NaiveModelParallel, observed {notes}; where to look: "
        "ScriptRuns.environment_notes in grader/checks/conftest.py")
    assert not graded("reference").get("environment_notes"), "the reference keeps the name"


def test_the_expectations_keep_the_rubrics_bounds():
    """What the rubric promises of Task 3, read off the matrix's expectations (no grading)."""
    expected = {variant.name: variant.expected for variant in hv.VARIANTS}
    assert sum(expected["template"].values()) == 0, "no points for what a non-solution has"
    assert expected["all_on_gpu0"]["hw3.task3"] == 0, "a one-GPU layout is no Task 3 solution"
    assert expected["unchanged_two_gpu_split"]["hw3.task3"] == 0, "the base split: none"
    assert expected["round_robin"]["hw3.task3"] == hv.FULL["hw3.task3"], \
        "round-robin is an even spread, all the handout asks"
    # Tasks 4 and 5 run Task 3's model: a layout leaving GPUs without layers loses there what
    # depends on the spread, and keeps the .to() calls and 'not faster' (adv52 F3).
    for name in ("all_on_gpu0", "unchanged_two_gpu_split"):
        assert hv.share(1, 0, 2) + 0.5 <= expected[name]["hw3.task4"] < hv.FULL["hw3.task4"], name
        assert hv.share(2, 2, 4) <= expected[name]["hw3.task5"] < hv.FULL["hw3.task5"], name
    for name in ("round_robin", "uneven_split", "layers_on_missing_gpu", "counted_by_hand"):
        own = "hw3.task5" if name == "counted_by_hand" else "hw3.task3"
        others = {t: p for t, p in expected[name].items() if t != own}
        assert others == {t: hv.FULL[t] for t in others}, f"{name} costs points outside {own}"
