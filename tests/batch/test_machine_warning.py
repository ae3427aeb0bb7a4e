"""The batch's one line where it asks more of the machine than it has (README, Grading a class:
keep workers x runs side by side x --memory inside its memory). A user's finding (users28, 12):
at default settings it said "1 workers x 4 runs x 6 GiB = 24 GiB, over this machine's 24 GiB"
(rounded), suggested "fewer --workers" with 1 worker the instructor never chose, and was printed
again on `--overrides` re-scores that run no code."""
import io

from grader.batch.pipeline import BatchOptions, run_batch
from grader.cli.batch import machine_warning
from tests.support.fake_graders import make_submission, scoring_grade

GiB = 2**30
RUBRIC = """assignment: hw3
title: "HW3 (test rubric)"
version: "t1"
gpus: 2
total_points: 10
items:
  - id: hw3.code
    title: "The code"
    points: 10
    checks:
      - {check: hw3.code.works, points: 10, partial: proportional}
"""


def test_the_defaults_on_a_small_machine_are_compared_with_the_runs_a_grading_starts():
    # 2 cores: 1 worker, whose share of 2 cores starts 2 runs side by side: 12 GiB fits 23.5.
    assert machine_warning(1, workers_given=False, memory_given=False, cores=2,
                           memory=int(23.5 * GiB), run_memory=6 * GiB) is None
    # Exactly the machine's memory fits.
    assert machine_warning(1, workers_given=False, memory_given=False, cores=4,
                           memory=24 * GiB, run_memory=6 * GiB) is None


def test_an_unchosen_single_worker_is_told_the_memory_it_can_change_in_sizes_that_differ():
    said = machine_warning(1, workers_given=False, memory_given=False, cores=4,
                           memory=int(23.5 * GiB), run_memory=6 * GiB)
    assert said == ("1 worker (the default on 4 cores) x 4 runs side by side x 6 GiB (--memory's "
                    "default) = 24 GiB, over this machine's 23.5 GiB of memory: runs may be "
                    "stopped for memory, their checks then fail (--memory 5.5G fits)"), said
    assert "--workers" not in said


def test_workers_chosen_are_told_how_many_fit():
    said = machine_warning(4, workers_given=True, memory_given=True, cores=16, memory=60 * GiB,
                           run_memory=6 * GiB)
    assert said == ("--workers 4 x 4 runs side by side x --memory 6G = 96 GiB, over this "
                    "machine's 60 GiB of memory: runs may be stopped for memory, their checks "
                    "then fail (--workers 2 or --memory 3.5G fits)"), said
    assert machine_warning(8, workers_given=True, memory_given=False, cores=4, memory=64 * GiB,
                           run_memory=6 * GiB) == (
        "--workers 8 on 4 cores: gradings will be slow (--workers 4 fits)")


def test_it_is_said_before_the_first_grading_only_never_on_a_rescore_or_a_dry_run(tmp_path):
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "hw3.yaml").write_text(RUBRIC)
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("alice", "bob"):
        make_submission(subs / name, score=10)
    asked = []

    def check():
        asked.append(1)
        return "the machine is too small"

    def batch(**options):
        stream = io.StringIO()
        run_batch(subs, out, BatchOptions(assignments=("hw3",), rubrics_dir=str(rubrics),
                                          **options),
                  grade_fn=scoring_grade, stream=stream, live=False, before_grading=check)
        return stream.getvalue()

    said = batch()
    assert asked == [1] and said.count("warning: the machine is too small") == 1, said
    assert "the machine is too small" in said.split("Warnings:")[1]
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("alice:\n  hw3.code: {points: 9, comment: regrade}\n")
    said = batch(overrides=overrides)
    assert "1 re-scored" in said and asked == [1], (
        f"a re-score runs no code: expected no check of the machine; observed\n{said}")
    make_submission(subs / "bob", score=10, extra="a new upload")
    batch(overrides=overrides, dry_run=True)
    assert asked == [1], "a dry run grades nothing"
    said = batch(overrides=overrides)
    assert asked == [1, 1] and "warning: the machine is too small" in said
