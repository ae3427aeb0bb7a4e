"""DDP(model, static_graph=True) with Practical 10's no_sync() micro-batches stops at the first
backward with PyTorch's "expect_autograd_hooks_ INTERNAL ASSERT FAILED ... please report a bug
to PyTorch". Real GPUs raise it too (the same pattern on CPU tensors with gloo and torch 2.13,
without the grader, stops alike; pytorch/pytorch#143580), so the run is failed as it would
fail; but PyTorch's words read as a fault of the grader's virtual GPUs (a red team, adv30 A4).
The run's problem says whose error it is, when it happens and what to do
(grader/harness/course_environment.py `static_graph_note`)."""
from __future__ import annotations

from grader.harness.course_environment import static_graph_note
from grader.harness.observation import Observation

ASSERTION = ('expect_autograd_hooks_ INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/torch/csrc/'
             'distributed/c10d/reducer.cpp":1732, please report a bug to PyTorch. ')


def test_the_note_says_it_is_pytorchs_own_and_what_to_do():
    note = static_graph_note(ASSERTION)
    assert "PyTorch's own" in note and "real GPUs raise it too" in note
    assert "static_graph=True" in note and "model.no_sync()" in note
    assert "pytorch/pytorch/issues/143580" in note
    assert static_graph_note("CUDA error: invalid device ordinal") is None


def test_a_run_that_stopped_with_it_carries_it():
    run = Observation("practical10/sample.py", gpus=4, nproc=2, launcher="torchrun",
                      returncode=1, events=[
                          {"event": "exception", "rank": r, "type": "RuntimeError",
                           "site": "sample.py:109", "message": ASSERTION} for r in (0, 1)])
    problem = run.problem()
    assert problem.splitlines()[0].startswith("practical10/sample.py")
    assert "expect_autograd_hooks_ INTERNAL ASSERT FAILED" in problem.splitlines()[0]
    assert problem.splitlines()[1].startswith("This error is PyTorch's own"), problem
