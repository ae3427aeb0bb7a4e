"""Practical 5: DataParallel must carry the gradient of every step, along it (red team adv56
F2, F3).

- One honest step among shells (F2): `wrapped(x)` at the first step (or an untimed warm-up),
  then `model(spread(x))` through adv52's shell: one step through the replicas had accepted
  the run (9.25 of 12; a TA gives 1.5 to 3). All steps but a tenth must now be carried.
- A cancelled DataParallel gradient (F3): `loss_fn(model(x), y) + wrapped(x).sum() -
  model(x).sum()`: the replicas' gradient is taken away again by the outside pass, the model
  trains unwrapped on cuda:0, and norms alone read every step carried (9.25 of 12, a TA about
  1.5). `dp_carried` is now the part of `.grad` along what the replicas gave.

Honest twins keep every step carried: clipping, a loss scaled and `.grad` unscaled
(GradScaler's way). Run in-process on virtual GPUs, the course's MLP made small.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical5 as p5
from grader.checks.practical_measures import replicas_untrained
from grader.harness.observation import Observation
from tests.grading.test_practical5_dp_beside import BATCH, DIM, MLP, Spread

STEPS = 5


def mse(out, y):
    return nn.functional.mse_loss(out, y)


def first_step_only(model, wrapped, shell, x, y, step):
    return mse(wrapped(x) if step == 0 else model(shell(x)), y)


def cancelled(model, wrapped, shell, x, y, step):
    return mse(model(x), y) + wrapped(x).sum() - model(x).sum()


def honest(model, wrapped, shell, x, y, step):
    return mse(wrapped(x), y)


def clipped(model, wrapped, shell, x, y, step):
    return mse(wrapped(x), y), lambda: nn.utils.clip_grad_norm_(model.parameters(), 1e-3)


def unscaled(model, wrapped, shell, x, y, step):
    def unscale():
        for p in model.parameters():
            p.grad.div_(1024.0)
    return 1024.0 * mse(wrapped(x), y), unscale


def run(traced_vnode, loss_at) -> Observation:
    events = traced_vnode(3)
    torch.manual_seed(0)
    model = MLP().cuda()
    wrapped, shell = nn.DataParallel(model), nn.DataParallel(Spread(model, False))
    x = torch.randn(BATCH, DIM, device="cuda:0")
    y = torch.randn(BATCH, DIM, device="cuda:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        optimizer.zero_grad()
        made = loss_at(model, wrapped, shell, x, y, step)
        loss, before_step = made if isinstance(made, tuple) else (made, lambda: None)
        loss.backward()
        before_step()
        optimizer.step()
    for event in events:
        event.setdefault("rank", 0)
    return Observation(p5.DP, gpus=3, returncode=0, events=list(events), stdout="")


def carried(observed) -> list:
    return [(s.get("dp_carried"), s.get("dp_held"), s.get("dp_own")) for s in observed.of("step")]


@pytest.mark.parametrize("loss_at", [first_step_only, cancelled], ids=lambda f: f.__name__)
def test_model_trained_beside_the_replicas_fails(traced_vnode, loss_at):
    observed = run(traced_vnode, loss_at)
    said = replicas_untrained(observed)
    assert said and "trained outside the wrapper" in said, (
        f"Expected: {loss_at.__name__} reads as the model trained outside DataParallel. "
        f"Observed: {said!r}; (dp_carried, dp_held, dp_own) per step: {carried(observed)}. "
        "Where to look: grader/vgpu/replica_grads.py (_along), practical_measures."
        "replicas_untrained (UNCARRIED_STEPS)")
    with pytest.raises(AssertionError, match="trained outside the wrapper"):
        p5.used_data_parallel(observed)


@pytest.mark.parametrize("loss_at", [honest, clipped, unscaled], ids=lambda f: f.__name__)
def test_honest_data_parallel_carries_every_step(traced_vnode, loss_at):
    observed = run(traced_vnode, loss_at)
    steps = observed.of("step")
    assert len(steps) == STEPS and all(abs(s.get("dp_carried", 0) - 1) < 0.01
                                       for s in steps), (
        f"Expected: {loss_at.__name__} (honest) has all of every step's .grad along what the "
        f"replicas gave (dp_carried 1). Observed: {carried(observed)}. Where to look: "
        "grader/vgpu/replica_grads.py (_along)")
    assert replicas_untrained(observed) is None
