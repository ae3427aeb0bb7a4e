"""Practical 6, Part 2: each process prints its rank (a student's audit: the grader never
looked). The handout asks for the print and for what it shows ("Rank 0 -> GPU 0, Rank 1 ->
GPU 1") and gives it no points, as it gives none to any part: the rubric tells it for no point
(practical6.rank_printed) and its totals stay the handout's split.

The check runs here on runs written by hand: the ranks' output is one stream, read line by
line for a number that a word for rank names, in any wording.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from grader.scoring import default_rubrics_dir, load_rubric


def ddp_run(stdout: str, processes: int = 2, joined: bool = True, returncode: int = 0,
            events=()) -> Observation:
    started = [{"event": "start", "rank": r, "virtual": True} for r in range(processes)]
    group = [{"event": "init_process_group", "rank": r, "world_size": processes}
             for r in range(processes)] if joined else []
    return Observation("practical6/practical6_ddp.py", gpus=processes, nproc=processes,
                       launcher="torchrun", returncode=returncode, stdout=stdout,
                       events=started + group + list(events))


class Runs:
    """ScriptRuns' interface: every run of the DDP script is `run`."""

    def __init__(self, run, submission=Path("/nonexistent-submission")):
        self.run, self.submission = run, submission   # no file: the handout's BATCH_SIZE

    def script(self, **spec):
        return self.run


def failure(run, processes=2) -> str:
    with pytest.raises(AssertionError) as raised:
        p6.test_each_process_prints_its_rank(Runs(run), processes)
    return str(raised.value)


@pytest.mark.parametrize("output, ranks", [
    ("Rank: 0 | Local Rank: 0\nRank: 1 | Local Rank: 1\n", {0, 1}),    # the handout's line
    ("[rank1] hello\n[rank0] hello\n", {0, 1}),
    ("I am process 1 of 2\nI am process 0 of 2\n", {0, 1}),
    ("local_rank=0 world_size=2\nlocal_rank=1 world_size=2\n", {0, 1}),
    ("RANK #2 on cuda:2\n", {2}),
    ("worker 3 ready\n", {3}),
    # Two ranks' prints run together in the one stream (text and newline written apart).
    ("Rank: 3 | Local Rank: 3Rank: 0 | Local Rank: 0rank 1: batch shape (16, 10)\n\n\n",
     {0, 1, 3}),
    ("rank 2: batch shape (16, 10)rank 3: batch shape (16, 10)\n\n", {2, 3}),
    # A device, a count of processes, a process group: no rank.
    ("running on cuda:1\nGPU 0\n", set()),
    ("processes: 2\njoined a process group of world size 2\n", set()),
    ("World size: 2\nstep 0: loss 1.0\n", set()),
    ("", set()),
])
def test_a_rank_is_a_number_a_word_for_rank_names(output, ranks):
    assert p6.ranks_printed(output) == ranks


def test_every_rank_printing_its_own_rank_passes():
    output = "World size: 3\n" + "".join(f"Rank: {r} | Local Rank: {r}\n" for r in (2, 0, 1))
    p6.test_each_process_prints_its_rank(Runs(ddp_run(output, 3)), 3)


def test_in_its_own_words_passes_too():
    p6.test_each_process_prints_its_rank(
        Runs(ddp_run("hello from process 0 on cuda:0\nhello from process 1 on cuda:1\n")), 2)


def test_a_rank_print_under_rank_0_alone_is_told_which_ranks_said_nothing():
    text = failure(ddp_run("Rank: 0 | Local Rank: 0\nWorld size: 4\n", 4), 4)
    assert "Expected: Part 2, worth no point: each of the 4 processes" in text
    assert "Observed: the output names rank(s) 0 only: no line names rank(s) 1, 2, 3" in text
    assert "TODO (Part 2)" in text and 'print(f"Rank: {dist.get_rank()}' in text


def test_the_templates_output_names_no_rank_and_points_at_its_todo():
    """The template prints the world size on rank 0, then stops at the DDP wrap's TODO: the
    rank print is missing, not the crash's fault (it comes after the print's place)."""
    stop = {"event": "exception", "rank": 0, "type": "NotImplementedError",
            "site": "practical6_ddp.py:74", "message": "TODO (Practical 6): wrap the model in DDP"}
    # Each rank stopped by the exception ends by itself: its exit record is written.
    ended = [{"event": "exit", "rank": r} for r in (0, 1)]
    text = failure(ddp_run("World size: 2\n", returncode=1, events=[stop, *ended]))
    assert "Observed: no line of the output names a rank" in text
    assert "NotImplementedError" not in text and "TODO (Part 2)" in text


def test_a_run_that_stopped_before_any_process_joined_names_its_stop():
    stop = {"event": "exception", "rank": 0, "type": "ImportError", "site": "practical6_ddp.py:3",
            "message": "No module named 'numpyy'"}
    text = failure(ddp_run("", joined=False, returncode=1, events=[stop]))
    assert "stopped with ImportError at practical6_ddp.py:3" in text


def test_the_rank_print_is_worth_no_point_and_the_totals_stay_the_handouts():
    rubric = load_rubric(default_rubrics_dir() / "practical6.yaml")
    rules = {rule.check: (item.id, rule.points) for item in rubric.items for rule in item.checks}
    assert rules["practical6.rank_printed"] == ("practical6.setup", 0)
    points = {item.id: item.points for item in rubric.items}
    assert rubric.total_points == 12 and sum(points.values()) == 12
    assert points["practical6.setup"] == 2
    code = sum(p for i, p in points.items() if i in ("practical6.setup", "practical6.data",
                                                      "practical6.sync"))
    assert (code, points["practical6.report"]) == (7, 2.75)


def test_a_rank_missing_from_a_failed_runs_output_is_not_told_silent():
    """The template's TODO stops every rank; torchrun stops the others when one fails, and what
    a process printed may never be flushed (a pipe is block-buffered, and its exit record comes
    before the last flush): whether rank 0's line came out was timing, and the check passed or
    failed by it (p6_todo_left_sheet_filled and p6_all_ranks_on_gpu0, one run in three). Where
    the run failed, a missing rank counts only where no line names any rank; a run that
    finished is read as it printed."""
    exits = [{"event": "exit", "rank": r} for r in (0, 1)]
    p6.test_each_process_prints_its_rank(
        Runs(ddp_run("Rank: 1 | Local Rank: 1\n", returncode=1, events=exits)), 2)
    assert "no line of the output names a rank" in failure(
        ddp_run("World size: 2\n", returncode=1, events=exits))
    assert "no line names rank(s) 0" in failure(
        ddp_run("Rank: 1 | Local Rank: 1\n", returncode=0, events=exits))


def test_the_templates_own_per_rank_line_passes_it_and_the_check_says_so():
    """A student's audit (users28): the handout's print under `if rank == 0:` passed, because
    the template's own `rank {rank}: batch shape ...` line names every rank once its TODOs are
    written. The check cannot tell the two apart, and says so: it reports, it does not test the
    Part 2 print (no points are made up for it)."""
    template = (Path(p6.__file__).resolve().parents[2] / "student_template" / "practical6"
                / "practical6_ddp.py").read_text()
    assert 'print(f"rank {rank}: batch shape {x.shape} on {x.device}")' in template
    output = ("Rank: 0 | Local Rank: 0\nWorld size: 2\n"
              "rank 0: batch shape torch.Size([32, 512]) on cuda:0\n"
              "rank 1: batch shape torch.Size([32, 512]) on cuda:1\n")
    p6.test_each_process_prints_its_rank(Runs(ddp_run(output)), 2)
    doc = " ".join(p6.test_each_process_prints_its_rank.__doc__.split())
    assert "it does not test the student's Part 2 print" in doc
    assert "under `if rank == 0:`, passes as well" in doc
    text = failure(ddp_run("World size: 2\n"))
    assert ("This only reports what the run printed: once the template's TODOs are written, its "
            "own line 'rank 1: batch shape ...' names every rank, so it cannot tell whether your "
            "Part 2 print is there") in text
