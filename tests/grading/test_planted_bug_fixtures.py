"""Fast checks of the planted-bug fixtures themselves (no grading): every bug still applies to
the current reference, changes what it says it changes, and its expectations name real
rubric items and checks. The slow end-to-end grading is in test_planted_bugs.py."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.fixtures import planted_bugs as pb

from grader.scoring import default_rubrics_dir, load_rubric  # noqa: E402


@pytest.mark.parametrize("bug", pb.BUGS, ids=lambda bug: bug.name)
def test_bug_applies_to_the_reference_and_stays_valid_python(bug, tmp_path):
    planted = pb.plant(bug, tmp_path / "submission")
    original = (pb.REFERENCE / bug.file).read_text(encoding="utf-8")
    patched = (planted / bug.file).read_text(encoding="utf-8")
    assert patched != original, f"[{bug.name}] planting changed nothing in {bug.file}"
    ast.parse(patched, filename=f"{bug.name}:{bug.file}")
    # Only the bug's file differs from the reference.
    for path in pb.REFERENCE.rglob("*.py"):
        rel = path.relative_to(pb.REFERENCE).as_posix()
        if rel != bug.file:
            assert (planted / rel).read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_a_drifted_reference_breaks_the_fixture_loudly():
    with pytest.raises(pb.FixtureDrift, match="occurs 0 times"):
        pb.apply_replacements("x = 1\n", [("y = 2\n", "y = 3\n")], "demo")
    with pytest.raises(pb.FixtureDrift, match="occurs 2 times"):
        pb.apply_replacements("y = 2\ny = 2\n", [("y = 2\n", "y = 3\n")], "demo")


@pytest.mark.parametrize("bug", pb.BUGS, ids=lambda bug: bug.name)
def test_expectations_name_real_items_and_checks(bug):
    rubric = load_rubric(default_rubrics_dir() / f"{bug.assignment}.yaml")
    items = {item.id: item for item in rubric.items if item.kind == "auto"}
    checks = {rule.check: item.id for item in items.values() for rule in item.checks}
    assert set(bug.expected) <= set(items), sorted(set(bug.expected) - set(items))
    assert set(bug.failing) <= set(checks), sorted(set(bug.failing) - set(checks))
    assert set(bug.grader_bugs) <= set(items), sorted(set(bug.grader_bugs) - set(items))
    for item_id, score in bug.expected.items():
        assert 0 <= score < items[item_id].points, (bug.name, item_id, score)
    # An item that loses points has a failing check, and a failing check costs its item points.
    assert {checks[c] for c in bug.failing} == set(bug.expected), (
        f"[{bug.name}] items of the failing checks {sorted({checks[c] for c in bug.failing})} "
        f"!= items expected to lose points {sorted(bug.expected)}")


def test_bug_names_are_unique():
    assert len(pb.BY_NAME) == len(pb.BUGS)
