"""Practical 5: DataParallel around a shell, the model trained beside it (red team adv52 F1).

`spread = nn.DataParallel(Spread(model))`, whose forward returns its input (or adds
`0.0 * model.net[0].bias.sum()`), then `loss_fn(model(spread(x)), y)`: DataParallel scatters
the batch, broadcasts the model's weights, runs replicas that compute nothing and gathers the
batch back; the model then trains on cuda:0 on the whole batch. Every DataParallel check
passed (9.25 of 12, the reference's score; a TA gives about 1.5). The runtime now records, at
each step, how much of the stepped gradient came back through DataParallel's replicas
(`dp_carried`, `dp_held`: grader/vgpu/replica_grads.py), and the checks count DataParallel's
split, replicas and gather only where some step's gradient did.

Run here in-process on virtual GPUs, with the course's MLP made small.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical5 as p5
from grader.checks.practical_measures import replicas_untrained
from grader.harness.observation import Observation

DIM, HIDDEN, BATCH, STEPS = 8, 16, 64, 2


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM))

    def forward(self, x):
        return self.net(x)


class Spread(nn.Module):
    """adv52's shell: hands the batch out over the GPUs and back."""

    def __init__(self, inner, touch):
        super().__init__()
        self.inner, self.touch = inner, touch

    def forward(self, x):
        return x + 0.0 * self.inner.net[0].bias.sum() if self.touch else x


def honest(model, x, y):
    wrapped = nn.DataParallel(model)
    return lambda: nn.functional.mse_loss(wrapped(x), y)


def accumulated(model, x, y):
    """Two micro-batches through the wrapper per step, the loss halved: still DataParallel."""
    wrapped = nn.DataParallel(model)
    return lambda: [nn.functional.mse_loss(wrapped(a), b) / 2
                    for a, b in zip(x.chunk(2), y.chunk(2))]


def spread(touch):
    def make(model, x, y):
        shell = nn.DataParallel(Spread(model, touch))
        return lambda: nn.functional.mse_loss(model(shell(x)), y)
    return make


def run(traced_vnode, form) -> Observation:
    events = traced_vnode(3)
    torch.manual_seed(0)
    model = MLP().cuda()
    x = torch.randn(BATCH, DIM, device="cuda:0")
    y = torch.randn(BATCH, DIM, device="cuda:0")
    loss_of = form(model, x, y)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        optimizer.zero_grad()
        losses = loss_of()
        for loss in losses if isinstance(losses, list) else [losses]:
            loss.backward()
        optimizer.step()
    for event in events:
        event.setdefault("rank", 0)
    return Observation(p5.DP, gpus=3, returncode=0, events=list(events), stdout="")


@pytest.mark.parametrize("form", [honest, accumulated], ids=["honest", "micro-batches"])
def test_model_trained_through_data_parallel_counts(traced_vnode, form):
    observed = run(traced_vnode, form)
    steps = observed.of("step")
    assert len(steps) == STEPS and all(s.get("dp_carried", 0) >= 0.99 and s.get("dp_held") == 1
                                       for s in steps), (
        "Expected: each step's gradient came back through DataParallel's replicas "
        "(dp_carried >= 1, dp_held 1). Observed: "
        f"{[(s.get('dp_carried'), s.get('dp_held')) for s in steps]}. "
        "Where to look: grader/vgpu/replica_grads.py")
    assert replicas_untrained(observed) is None
    p5.used_data_parallel(observed)   # no failure


@pytest.mark.parametrize("touch", [False, True], ids=["return-x", "zero-times-bias"])
def test_model_trained_beside_a_shell_fails_every_data_parallel_check(traced_vnode, touch):
    observed = run(traced_vnode, spread(touch))
    assert observed.of("dp_scatter"), "the shell still scatters: the old checks' evidence"
    steps = observed.of("step")
    assert steps and all(s.get("dp_carried") == 0 for s in steps), (
        "Expected: no gradient came back through the shell's replicas (dp_carried 0). "
        f"Observed: {[s.get('dp_carried') for s in steps]}. "
        "Where to look: grader/vgpu/replica_grads.py")
    said = replicas_untrained(observed)
    assert said and "none of the gradient" in said, said
    with pytest.raises(AssertionError, match="trained outside the wrapper"):
        p5.used_data_parallel(observed)


def test_answers_about_data_parallel_not_checked_against_a_shell(traced_vnode):
    from grader.answers.collect import Answers
    observed = run(traced_vnode, spread(False))
    answers = Answers("practical5", "sheet", values={"usage.gpu0_more_loaded": True})
    flags = []
    with pytest.raises(AssertionError, match="never trained its model through DataParallel"):
        p5.require_data_parallel(answers, "usage.gpu0_more_loaded", observed, flag=flags.append)
    assert flags and "never trained its model through DataParallel" in flags[0], flags
