"""Practical 6: equal gradients without DDP (a TA's audit, disagreement 3).

With no DDP at all and the same rows on every rank (the TA's s12: `torch.randn` after the
template's `torch.manual_seed(SEED)`), the ranks compute equal gradients and take equal steps
with no communication, and `grads_synchronised` and `params_equal_after_step` gave their 3
points. They now need DDP's gradient all-reduce in every step's backward pass, as the
handout's Part 4 says it happens ("During backward pass, gradients are synchronized across all
GPUs using All-Reduce communication").

Training, for `world_size`, is an optimizer step on gradients a backward made, as Practical 10's
checks count it (learning_ranks): an optimizer.step() with no backward before it, or with every
gradient zero, applies nothing and had counted as a rank that trains.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation

GRADS = {"sum": 1.5, "sumsq": 0.25}
ZERO = {"sum": 0.0, "sumsq": 0.0}     # the gradients of a step no backward produced
PARAMS = {"sum": 19.87, "sumsq": 854.8}


def traced(all_reduced_steps, steps=3, same=True, backward=(0, 1), grads=GRADS) -> Observation:
    """2 ranks under torchrun, each taking `steps` optimizer steps after a backward pass (the
    ranks in `backward`; the others step with no backward before it), with DDP's gradient
    all-reduce in the backward of the steps (from 0) in `all_reduced_steps`; `same`: every
    rank's gradients and parameters equal (the same rows on every rank); `grads`: the gradient
    each step applies (ZERO: none)."""
    events = []
    for rank in (0, 1):
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": 2}]
        for step in range(steps):
            shift = 0.0 if same or grads is ZERO else 0.5 * rank
            events.append({"event": "forward", "rank": rank, "thread": "MainThread",
                           "grad": True, "step": step, "batch": [32, 1024], "module": "MLP"})
            if rank in backward:
                events.append({"event": "backward", "rank": rank})
                if step in all_reduced_steps:
                    events.append({"event": "collective", "rank": rank, "op": "all_reduce",
                                   "source": "ddp_gradients"})
            events.append({"event": "step", "rank": rank, "index": step + 1,
                           "grads": {k: v + shift for k, v in grads.items()},
                           "params": {k: v + shift for k, v in PARAMS.items()}})
    return Observation("practical6/practical6_ddp.py", gpus=2, nproc=2, launcher="torchrun",
                       returncode=0, events=events)


class Runs:
    """ScriptRuns' interface: every run of the DDP script is `run`."""

    def __init__(self, run, submission):
        self.run, self.submission = run, submission

    def script(self, **spec):
        return self.run


CHECKS = [(p6.test_gradients_all_reduced, "gradients"),
          (p6.test_parameters_equal_after_step, "parameters")]


def failure(check, runs) -> str:
    with pytest.raises(AssertionError) as raised:
        check(runs)
    return str(raised.value)


@pytest.mark.parametrize("check, what", CHECKS, ids=["grads", "params"])
def test_equal_ranks_without_ddp_earn_no_synchronisation_point(tmp_path, check, what):
    """s12: equal because the data is, not because anything was synchronised."""
    text = failure(check, Runs(traced(all_reduced_steps=()), tmp_path))
    for phrase in ("Expected: ", "in every step's backward" if what == "parameters" else
                   "during the backward pass of every step",
                   f"Observed: the ranks' {what} are equal, but no gradient all-reduce was "
                   "observed in rank 0's backward pass before any of its 3 steps",
                   "the same rows on every rank, not from synchronisation",
                   "Where to look: ", "DDP(model, device_ids=[local_rank])"):
        assert phrase in text, f"expected the feedback to say {phrase!r}; observed:\n{text}"


@pytest.mark.parametrize("check, what", CHECKS, ids=["grads", "params"])
def test_a_step_without_the_all_reduce_is_named(tmp_path, check, what):
    text = failure(check, Runs(traced(all_reduced_steps=(0,)), tmp_path))
    assert "no gradient all-reduce was observed in rank 0's backward pass before step 2" in text, \
        text


@pytest.mark.parametrize("check, what", CHECKS, ids=["grads", "params"])
def test_ranks_apart_without_ddp_are_told_both(tmp_path, check, what):
    """The variant p6_no_ddp_wrap's words, kept: the values differ, and no all-reduce."""
    text = failure(check, Runs(traced(all_reduced_steps=(), same=False), tmp_path))
    differ = "differ at step 1" if what == "gradients" else "differ after step 1"
    assert f"the ranks' {what} {differ}" in text and \
        "no gradient all-reduce was observed" in text, text


@pytest.mark.parametrize("check, what", CHECKS, ids=["grads", "params"])
def test_ddp_all_reducing_every_step_keeps_its_points(tmp_path, check, what):
    check(Runs(traced(all_reduced_steps=(0, 1, 2)), tmp_path))


def test_an_all_reduce_before_the_steps_backward_synchronises_none_of_its_gradients():
    """Counted only in backward, as the handout places it: a gradient all-reduce before the
    step's backward pass has not yet seen the gradients that step applies."""
    run = traced(all_reduced_steps=())
    for rank in (0, 1):
        run.events.insert(0, {"event": "collective", "rank": rank, "op": "all_reduce",
                              "source": "ddp_gradients"})
    assert p6.steps_without_all_reduce(run) == {0: [1, 2, 3], 1: [1, 2, 3]}


# -- training: an optimizer step on gradients a backward made ------------------------------------


def world_size_failure(run, tmp_path) -> str:
    return failure(lambda runs: p6.test_world_size_is_number_of_processes(runs, 2),
                   Runs(run, tmp_path))


def test_optimizer_steps_without_a_backward_are_no_training(tmp_path):
    """The loss never differentiated (no loss.backward(), as P10's s11 left its loop empty):
    optimizer.step() has nothing to apply on any rank, and no rank trains."""
    text = world_size_failure(traced(all_reduced_steps=(), backward=(), grads=ZERO), tmp_path)
    for phrase in ("Expected: torchrun --nproc_per_node=2: 2 process(es), each joining a "
                   "process group of world size 2 and training",
                   "Observed: optimizer steps on rank(s) [0, 1], but none after a backward pass "
                   "that produced gradients", "Where to look: dist.init_process_group()"):
        assert phrase in text, f"expected the feedback to say {phrase!r}; observed:\n{text}"


def test_a_backward_that_left_every_gradient_zero_is_no_training(tmp_path):
    text = world_size_failure(traced(all_reduced_steps=(0, 1, 2), grads=ZERO), tmp_path)
    assert "but none after a backward pass that produced gradients" in text, text


def test_a_rank_stepping_without_a_backward_is_told_apart(tmp_path):
    """Rank 1 calls optimizer.step() with no backward before it: only rank 0 trains."""
    text = world_size_failure(traced(all_reduced_steps=(), backward=(0,)), tmp_path)
    assert "Observed: only rank(s) [0] took an optimizer step on gradients a backward pass " \
        "produced" in text, text


def test_steps_on_gradients_a_backward_made_are_training(tmp_path):
    p6.test_world_size_is_number_of_processes(Runs(traced(all_reduced_steps=(0, 1, 2)),
                                                   tmp_path), 2)


@pytest.mark.parametrize("said, method", [
    ("ddp", "ddp"), ("DDP", "ddp"), ("nn.DataParallel", "dp"), ("DistributedDataParallel (DDP)", "ddp"),
    ("DDP, because one process per GPU; DataParallel has a bottleneck on GPU 0", "ddp"),
    # A student's audit: read as DDP, the first method named.
    ("DDP is slower than DataParallel", "dp"), ("DataParallel is slower", "ddp"),
    ("The faster one is DDP, DataParallel is slower", "ddp"), ("DP was faster than DDP here", "dp"),
    # A TA's audit: any text passed where the clock could not decide.
    ("dp or ddp, it depends on the machine", None), ("DDP (about the same)", None),
    ("ddp is faster, dp is faster", None), ("both", None), ("", None),
    # A probe of the rule: said of one method, timed, or turned by a "not"; and hedges.
    ("DP is 2x slower", "ddp"), ("DataParallel is about 40% slower", "ddp"), ("DP took longer than DDP", "ddp"),
    ("DataParallel has a higher step time than DDP", "ddp"), ("DP is outperformed by DDP", "ddp"),
    ("DP: 1.2 s, DDP: 0.8 s", "ddp"), ("DP (slower), DDP (faster)", "ddp"), ("Slower: DP", "ddp"),
    ("DDP was actually slower", "dp"), ("DDP is not faster", "dp"), ("DDP wasn't faster than DP", "dp"),
    ("DDP should be faster, but in my measurements it was not", None), ("Probably DDP", None),
    ("DDP?", None), ("DDP/DP", None), ("dp ≈ ddp", None), ("DP vs DDP: equal", None),
])
def test_which_is_faster_is_the_method_the_sentence_names_faster(said, method):
    from grader.checks.test_practical6 import method_said_faster
    assert method_said_faster(said) == method, f"{said!r} should read as {method!r}"


@pytest.mark.parametrize("aspect, cell, word", [
    ("gpu usage", "GPU 0 does more", "imbalanced"), ("gpu usage", "GPU 0 is the bottleneck", "imbalanced"),
    ("gpu usage", "uneven", "imbalanced"), ("gpu usage", "balanced", "balanced"),
    ("gpu usage", "more balanced", "balanced"), ("gpu usage", "even", "balanced"),
    # A probe: the cell's head decides, and a "not" turns a word.
    ("gpu usage", "Balanced (unlike DP where GPU 0 is the bottleneck)", "balanced"),
    ("gpu usage", "balanced, GPU 0 is not the bottleneck", "balanced"), ("gpu usage", "not even", "imbalanced"),
    ("gpu usage", "isn't balanced", "imbalanced"), ("gpu usage", "not evenly distributed", "imbalanced"),
    ("processes", "Single process (multi-threaded)", "1"), ("processes", "1 process / many threads", "1"),
    ("processes", "Mutiple", "multiple"), ("processes", "one per GPU", "multiple"),
    ("data split", "manual (not automatic)", "manual"), ("data split", "not automatic", "manual"),
    ("data split", "automatic (scatter)", "automatic")])
def test_a_comparison_cell_in_own_words_is_read(aspect, cell, word):
    """A student's audit: "GPU 0 does more" was not read, and the report said 'dp None'."""
    from grader.checks.test_practical6 import words_for
    assert words_for(aspect, cell) == word


def test_a_comparison_cell_not_read_is_shown_as_written_never_as_none():
    from grader.checks.test_practical6 import said_as
    assert said_as("gpu usage", "weird", None) == "'weird' (not read as balanced or imbalanced)"
    assert said_as("data split", "", None) == "nothing"
