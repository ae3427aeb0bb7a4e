"""Practical 6: a dummy DDP beside a model never wrapped (red team adv52 F2).

`head = DDP(nn.Linear(1, 1))` added to the loss times 0.0, the MLP itself never wrapped and the
same rows on every rank: DDP all-reduces the head's bucket of two numbers in every backward,
and the ranks' MLPs agree only because they compute alike. `grads_synchronised` and
`params_equal_after_step` gave their 3 points (8.5 of 12; a TA gives about 5.5). The runtime
now records, at each step, which of the stepped parameters DDP's buckets held (`synced`,
`synced_elements`: grader/vgpu/synced_grads.py), and a step counts as synchronised only where
they held (most of) them.

The runtime's reading runs here in-process on virtual GPUs (a group of one rank: DDP's
all-reduce really runs); the checks on traces written by hand, as the 2 ranks write them.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical6 as p6
from grader.checks.practical_measures import synced_step
from grader.harness.observation import Observation
from tests.grading.test_practical6_non_solutions import Runs, traced
from tests.vgpu import test_ddp_buckets

DIM, HIDDEN = 8, 16


# A gloo group of one rank in this process: DDP's all-reduce really runs.
one_rank_group = test_ddp_buckets.one_rank_group


def mlp():
    return nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM)).cuda()


def step_records(traced_vnode, one_rank_group, dummy: bool, frozen: bool = False) -> list[dict]:
    from torch.nn.parallel import DistributedDataParallel as DDP
    events = traced_vnode(1)
    one_rank_group()
    torch.manual_seed(0)
    model = mlp()
    if frozen:   # a first layer frozen, the optimizer still given model.parameters()
        model[0].requires_grad_(False)
    x, y = torch.randn(16, DIM, device="cuda:0"), torch.randn(16, DIM, device="cuda:0")
    if dummy:
        head = DDP(nn.Linear(1, 1).cuda(), device_ids=[0])
        ones = torch.ones(1, 1, device="cuda:0")
        params = list(model.parameters()) + list(head.parameters())
        loss_of = lambda: nn.functional.mse_loss(model(x), y) + 0.0 * head(ones).sum()  # noqa: E731
    else:
        wrapped = DDP(model, device_ids=[0])
        params = list(wrapped.parameters())
        loss_of = lambda: nn.functional.mse_loss(wrapped(x), y)  # noqa: E731
    optimizer = torch.optim.SGD(params, lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        loss_of().backward()
        optimizer.step()
    return [e for e in events if e.get("event") == "step"]


@pytest.mark.parametrize("frozen", [False, True], ids=["all trained", "first layer frozen"])
def test_wrapped_model_is_synchronised(traced_vnode, one_rank_group, frozen):
    """Frozen: DDP buckets only the parameters that take gradients; SGD(model.parameters()) is
    still given the frozen ones, and skips them (no `.grad`). Counted, the frozen first layer
    (144 of the MLP's 280 elements here) had made an honest student's steps 'never
    synchronised' (red team adv53 F1: 9.75 -> 4.75 of 12)."""
    steps = step_records(traced_vnode, one_rank_group, dummy=False, frozen=frozen)
    assert len(steps) == 2 and all(s.get("synced") == 1 and s.get("synced_elements") == 1
                                   for s in steps), (
        "Expected: DDP's buckets held every stepped parameter that takes gradients (synced 1, "
        f"synced_elements 1). Observed: {[(s.get('synced'), s.get('synced_elements')) for s in steps]}. "
        "Where to look: grader/vgpu/synced_grads.py, step_fields (frozen parameters)")
    assert all(synced_step(s) for s in steps)


def test_dummy_ddp_beside_the_model_synchronises_nothing(traced_vnode, one_rank_group):
    steps = step_records(traced_vnode, one_rank_group, dummy=True)
    assert len(steps) == 2 and all(s.get("synced") == 0 and s.get("synced_elements", 1) < 0.01
                                   for s in steps), (
        "Expected: DDP's buckets held none of the MLP's parameters (synced 0). "
        f"Observed: {[(s.get('synced'), s.get('synced_elements')) for s in steps]}. "
        "Where to look: grader/vgpu/synced_grads.py")
    assert not any(synced_step(s) for s in steps)


def traced_holding(held: float):
    """2 ranks, the same rows on each (equal gradients), DDP's all-reduce in every backward
    (test_practical6_non_solutions.traced), its buckets holding `held` of the stepped
    parameters."""
    run = traced(all_reduced_steps=range(3))
    for event in run.events:
        if event.get("event") == "step":
            event.update(synced=held, synced_elements=held)
    return run


@pytest.mark.parametrize("check", [p6.test_gradients_all_reduced,
                                   p6.test_parameters_equal_after_step])
def test_sync_checks_fail_for_a_dummy_bucket(tmp_path, check):
    with pytest.raises(AssertionError, match="held 0% of the parameters the optimizer steps"):
        check(Runs(traced_holding(0.0), tmp_path))
    check(Runs(traced_holding(1.0), tmp_path))   # the wrapped model's all-reduce passes


def one_optimizer_per_layer(all_reduced: bool) -> Observation:
    """2 ranks, each iteration one backward (DDP's all-reduce in it or not) and then two
    optimizer steps, one per layer: the second has no pass or backward before it (the runtime
    marks it `joins`: one step of the model with the one before)."""
    events = []
    for rank in (0, 1):
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": 2}]
        for step in range(3):
            events += [{"event": "forward", "rank": rank, "thread": "MainThread", "grad": True,
                        "step": step, "batch": [32, 1024], "module": "MLP"},
                       {"event": "backward", "rank": rank}]
            if all_reduced:
                events.append({"event": "collective", "rank": rank, "op": "all_reduce",
                               "source": "ddp_gradients"})
            events += [{"event": "step", "rank": rank, "index": 2 * step + 1},
                       {"event": "step", "rank": rank, "index": 2 * step + 2, "joins": True}]
    return Observation("practical6/practical6_ddp.py", gpus=2, nproc=2, launcher="torchrun",
                       returncode=0, events=events)


def test_a_second_optimizers_step_joins_the_all_reduce_before_it():
    """One optimizer per layer (red team adv53 F2): the second step after the one backward had
    read as a step with no all-reduce before it, the sync items lost (9.75 -> 6.75 of 12)."""
    assert p6.steps_without_all_reduce(one_optimizer_per_layer(True)) == {}, (
        "Expected: a step that joins the one before it (no pass or backward between them) is "
        "synchronised by that step's all-reduce. Where to look: test_practical6.py "
        "steps_without_all_reduce")
    assert p6.steps_without_all_reduce(one_optimizer_per_layer(False)) == {
        0: [1, 2, 3, 4, 5, 6], 1: [1, 2, 3, 4, 5, 6]}
