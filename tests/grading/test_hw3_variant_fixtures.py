"""Fast checks of the HW3 matrix's submissions themselves (no grading): each still applies to
the current reference or template, is valid Python, and its expectations name the rubric's
tasks and checks. The slow end-to-end grading is test_hw3_matrix.py."""
from __future__ import annotations

import ast

import pytest
import yaml

from tests.fixtures import hw3_variants as hv
from tests.fixtures.planted_bugs import extended_matrix

from grader.scoring import default_rubrics_dir, load_rubric


@pytest.fixture(scope="module")
def rubric():
    return load_rubric(default_rubrics_dir() / "hw3.yaml")


def test_full_points_are_the_rubrics_automatic_points(rubric):
    assert hv.FULL == {item.id: item.points for item in rubric.items
                       if not item.is_manual and item.points > 0}


GROUPS = [hv.graded_together(group) for group in hv.GRADED_TOGETHER]


@pytest.mark.parametrize("variant", hv.VARIANTS + GROUPS, ids=lambda v: v.name)
def test_variant_builds_into_valid_python(variant, tmp_path):
    built = hv.build(variant, tmp_path / "submission")
    model = (built / hv.MODEL).read_text(encoding="utf-8")
    ast.parse(model, filename=f"{variant.name}:{hv.MODEL}")
    if variant.code:
        assert model != (variant.base / hv.MODEL).read_text(encoding="utf-8")
    for name in variant.files:
        if name.endswith(".py"):   # a helper module (a report.md beside it is text)
            ast.parse((built / name).read_text(encoding="utf-8"), filename=f"{variant.name}:{name}")
    answers = yaml.safe_load((built / "hw3" / "answers.yaml").read_text(encoding="utf-8"))
    for qid, value in variant.answers.items():
        entry = answers["answers"][qid]
        assert entry.get("rows", entry.get("value")) == value
    # A changed sheet is what gets read: the reference's report would say otherwise.
    assert (built / "hw3" / "report.pdf").exists() == (
        not variant.answers and (variant.base / "hw3" / "report.pdf").exists())


@pytest.mark.parametrize("variant", hv.VARIANTS, ids=lambda v: v.name)
def test_expectations_name_every_task_and_real_checks(variant, rubric):
    assert sorted(variant.expected) == hv.TASKS
    for task, points in variant.expected.items():
        assert 0 <= points <= hv.FULL[task], (variant.name, task, points)
    owner = {rule.check: item.id for item in rubric.items for rule in item.checks}
    assert set(variant.failing) <= set(owner), sorted(set(variant.failing) - set(owner))
    # A check expected to lose points belongs to a task expected to lose points (or to an item
    # worth none, shown beside its task: Task 3's blocks).
    worth = {item.id: item.points for item in rubric.items}
    losing = {owner[check] for check in variant.failing if worth[owner[check]]}
    assert all(variant.expected[task] < hv.FULL[task] for task in losing), (variant.name, losing)


@pytest.mark.parametrize("group", list(hv.GRADED_TOGETHER))
def test_a_group_of_correct_styles_holds_every_members_edit(group, tmp_path):
    built = hv.build(hv.graded_together(group), tmp_path / "submission")
    model = (built / hv.MODEL).read_text(encoding="utf-8")
    for name in hv.GRADED_TOGETHER[group]:
        member = hv.BY_NAME[name]
        lost = [new[:60] for _, new in member.code if new not in model]
        assert not lost, f"{group}: {name}'s edits are lost: {lost}"
        for file, text in member.files.items():
            assert (built / file).read_text(encoding="utf-8") == text, (group, name, file)
    assert set(hv.GROUP_OF) <= set(hv.BY_NAME) and not set(hv.GRADED_TOGETHER) & set(hv.BY_NAME)


def test_variant_names_are_unique():
    assert len(hv.BY_NAME) == len(hv.VARIANTS)


def test_variants_graded_on_request_are_graded_alone_and_say_where_they_are_shown():
    """The matrix grades them only with PDL_EXTENDED_MATRIX=1: each is a variant of its own
    (never a control, nor a member of a group graded by default), and names what shows its
    checks in the default suite."""
    assert set(hv.GRADED_ON_REQUEST) <= set(hv.BY_NAME)
    assert not set(hv.GRADED_ON_REQUEST) & (set(hv.GROUP_OF) | {"reference", "template"})
    assert all(len(where) > 40 for where in hv.GRADED_ON_REQUEST.values())
    on_request = set() if extended_matrix() else set(hv.GRADED_ON_REQUEST)
    assert {variant.name for variant in hv.GRADED} == set(hv.BY_NAME) - on_request
