"""A check worth no point fails `pytest` no more than it fails `pdl-grade check`.

A red team's adv47 F4: a Practical 4 whose Part 2 is `torch.split(x, BATCH_SIZE // CHUNKS)`
earns every automatic point and `pdl-grade check practical4` exits 0, but README's student line
`python -m pytest --pyargs grader.checks --submission . -k practical4` ended "1 failed, 12
passed" and exited 1: practical4.uneven_batch (no point; the handout only ever splits its batch
of 64 in two) splits the batch of 63 into [31, 31, 1]. Such a check's failure now counts as
xfailed; its note (expected / observed / where to look) stays in both commands' summary, the
grading's score is the same (the checks' JSON report says "xfailed", read as failed), and a
failed check worth points still fails the session.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from grader.pytest_plugin import CHECK_OUTCOMES, CHECKS_WORTH_NO_POINT, pytest_runtest_makereport
from grader.scoring.rubric import checks_worth_no_point
from grader.scoring.session import score_session
from tests.fixtures.planted_bugs import REFERENCE, ROOT, TEMPLATE, apply_replacements, copy_tree
from tests.support.fake_check_call import check_call, check_item

HANDOUT_SPLIT = "    chunks = torch.chunk(x, CHUNKS)\n"
UNEVEN_FEEDBACK = ("Expected: the batch of 63 rows split into 2 chunks along dim 0 (32 + 31 rows "
                   "with torch.chunk), the model run on each chunk, every row of the batch in "
                   "one chunk\nObserved: 3 forward pass(es) on parts of the batch, of [31, 31, 1] "
                   "rows\nWhere to look: Part 2: chunks = torch.chunk(x, 2), and one forward pass "
                   "of the model per chunk")


# -- the plugin, on one check's call ----------------------------------------------------------

def _reported(check: str, error: BaseException):
    """(pytest's report of the check's call after the plugin, the session's outcomes)."""
    class Config:
        stash = {CHECK_OUTCOMES: {}, CHECKS_WORTH_NO_POINT: checks_worth_no_point()}

    class Report:
        outcome, skipped, longrepr = "failed", False, None
    hook = pytest_runtest_makereport(check_item(check, f"test_practical4.py::{check}", Config()),
                                     check_call(error))
    next(hook)
    with pytest.raises(StopIteration) as done:
        hook.send(Report())
    return done.value.value, Config.stash[CHECK_OUTCOMES]


def test_a_failed_check_worth_no_point_counts_as_xfailed_and_keeps_its_note():
    report, outcomes = _reported("practical4.uneven_batch", AssertionError(UNEVEN_FEEDBACK))
    assert (report.outcome, "Observed: 3 forward pass(es)" in getattr(report, "wasxfail", "")) \
        == ("skipped", True), (
        "Expected: practical4.uneven_batch (0 points) failing counts as xfailed, its message the "
        f"reason; observed: outcome {report.outcome!r}, wasxfail "
        f"{getattr(report, 'wasxfail', None)!r} (grader/pytest_plugin.py "
        "_count_as_expected_failure)")
    # The session's own summary still has it failed, with its message, for no point.
    ((check, outcome, message, *_),) = outcomes.values()
    assert (check, outcome, message) == ("practical4.uneven_batch", "failed", UNEVEN_FEEDBACK)
    (p4,) = score_session(outcomes)["assignments"]
    scored = next(c for i in p4["items"] for c in i["checks"] if c["id"] == check)
    assert (scored["status"], scored["points"]) == ("failed", 0), scored


def test_a_failed_check_worth_points_still_fails_the_session():
    report, outcomes = _reported("practical4.chunk_shapes", AssertionError("Expected: 2 chunks"))
    assert report.outcome == "failed" and not hasattr(report, "wasxfail"), (
        "Expected: practical4.chunk_shapes (1 point) failing stays a failure of pytest; "
        f"observed: outcome {report.outcome!r}")
    assert [o[1] for o in outcomes.values()] == ["failed"]


def test_the_checks_worth_no_point_are_those_no_rubric_gives_a_point(tmp_path):
    course = checks_worth_no_point()
    assert {"practical4.uneven_batch", "practical10.uneven_micro_batches"} <= course, course
    assert not {"practical4.chunk_shapes", "practical4.chunks_equal_full"} & course, course
    # Read from the --rubrics folder the session grades with.
    rubric = {"assignment": "hw3", "title": "HW3", "version": "t", "gpus": 2, "items": [
        {"id": "hw3.a", "title": "A", "points": 1, "checks": [
            {"check": "hw3.told", "points": 0}, {"check": "hw3.scored", "points": 1}]}]}
    (tmp_path / "hw3.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    assert checks_worth_no_point(tmp_path) == {"hw3.told"}


# -- the two commands of README, on a student's folder ----------------------------------------

def _course_with_split(tmp_path, split: str):
    folder = copy_tree(TEMPLATE, tmp_path / "my-course")
    for name in ("concepts.py", "answers.yaml"):
        text = (REFERENCE / "practical4" / name).read_text(encoding="utf-8")
        if name == "concepts.py":
            text = apply_replacements(text, [(HANDOUT_SPLIT, split)], "practical4/concepts.py")
        (folder / "practical4" / name).write_text(text, encoding="utf-8")
    return folder


def _summary(output: str) -> str:
    """The points per task and what to fix, as both commands print them."""
    start = output.index("practical4: Practical 4")
    end = output.index("in all wait for a person.", start)
    return output[start:end]


@pytest.mark.slow
@pytest.mark.parametrize("split, code, last_line", [
    # adv47 F4's student: right for the handout's 64 (2 x 32), three chunks of a batch of 63.
    ("    chunks = torch.split(x, BATCH_SIZE // CHUNKS, dim=0)\n", 0, "12 passed"),
    # Three chunks of 64 too (24 + 24 + 16): a point lost, both commands say so.
    ("    chunks = torch.split(x, 24, dim=0)\n", 1, "failed"),
], ids=["split_by_half_the_batch", "split_by_24"])
def test_readmes_two_commands_end_alike(pdl_grade, tmp_path, monkeypatch, split, code, last_line):
    folder = _course_with_split(tmp_path, split)
    monkeypatch.chdir(folder)
    checked = pdl_grade("check", "practical4")
    tested = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "grader.checks",
                             "--submission", ".", "-k", "practical4", "-p", "no:cacheprovider"],
                            cwd=folder, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=600)
    final = tested.stdout.strip().splitlines()[-1]
    assert (checked.code, tested.returncode) == (code, code), (
        f"Expected: `pdl-grade check` and `pytest` both exit {code}; observed: check "
        f"{checked.code}, pytest {tested.returncode} ({final}); a failed check worth no point "
        "counts as xfailed in grader/pytest_plugin.py\n" + tested.stdout[-3000:])
    assert last_line in final and "1 xfailed" in final, (
        f"Expected: pytest's last line to count {last_line!r} and practical4.uneven_batch as "
        f"'1 xfailed'; observed: {final}")
    assert _summary(tested.stdout) == _summary(checked.out), (
        "Expected: the same points and notes from both commands; observed:\n--- pytest ---\n"
        + _summary(tested.stdout) + "\n--- pdl-grade check ---\n" + _summary(checked.out))
    told = _summary(checked.out).split("Worth no point, but worth knowing")[-1]
    assert "practical4.uneven_batch" in told and "Where to look: Part 2" in told, told
