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


def big_head(model, x, y):
    """A trained decoder on cuda:0 after the wrapper, 15 times the wrapped MLP's size, one
    optimizer over both (adv53 F3): most of the stepped elements and gradient are the head's,
    all of the MLP's gradient comes back through the replicas."""
    wrapped = nn.DataParallel(model)
    head = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, DIM)).cuda()
    return lambda: nn.functional.mse_loss(head(wrapped(x)), y), head


class Head(nn.Module):
    """A decoder written as a class of the script's own (eng_p5model's owncls_head)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, DIM))

    def forward(self, x):
        return self.net(x)


def own_class_head(model, x, y):
    """big_head's decoder as a class of the script's own: 0.75 of 12 under 96e4cfa's class
    rule, where a TA gives 9.25."""
    wrapped = nn.DataParallel(model)
    head = Head().cuda()
    return lambda: nn.functional.mse_loss(head(wrapped(x)), y), head


def small_wrapper_beside(model, x, y):
    """A small layer wrapped in DataParallel and trained on the batch, the model run on the
    batch beside it unwrapped, one optimizer over both: the model trains on cuda:0 alone."""
    small = nn.DataParallel(nn.Linear(DIM, DIM).cuda())
    return lambda: nn.functional.mse_loss(model(x), y) + nn.functional.mse_loss(small(x), y), \
        small


class Front(nn.Module):
    """A small layer of the script's own class, wrapped in front of the model."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(DIM, DIM)

    def forward(self, x):
        return self.layer(x)


def small_wrapper_in_front(front):
    """A small layer wrapped in DataParallel, the model run unwrapped on its output, one
    optimizer over both (eng_p5steps' forge/small_dp_in_front): the wrapper's pass is the only
    one that trains, the model's continues it, as a head would; the model trains on cuda:0."""
    def make(model, x, y):
        small = nn.DataParallel(front().cuda())
        return lambda: nn.functional.mse_loss(model(small(x)), y), small
    return make


def spread(touch):
    def make(model, x, y):
        shell = nn.DataParallel(nn.Identity() if touch == "identity" else Spread(model, touch))
        return lambda: nn.functional.mse_loss(model(shell(x)), y)
    return make


def torch_mlp() -> nn.Module:
    """The MLP built from torch's classes alone (eng_p5model's forge_torchonly)."""
    return nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM))


def run(traced_vnode, form, build=MLP) -> Observation:
    events = traced_vnode(3)
    torch.manual_seed(0)
    model = build().cuda()
    x = torch.randn(BATCH, DIM, device="cuda:0")
    y = torch.randn(BATCH, DIM, device="cuda:0")
    made = form(model, x, y)   # the loss, and a module trained beside the model where any
    loss_of, beside = made if isinstance(made, tuple) else (made, nn.Sequential())
    optimizer = torch.optim.SGD([*model.parameters(), *beside.parameters()], lr=0.01)
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


@pytest.mark.parametrize("head", [big_head, own_class_head], ids=["torch-head", "own-class-head"])
def test_trained_head_after_the_wrapper_counts(traced_vnode, head):
    """adv53 F3: 0.75 of 12 where a TA gives 9.25, its head's share of the gradient taken for
    the model trained outside the wrapper; the head written as a class of the script's own
    read as the model under 96e4cfa's class rule (eng_p5model's owncls_head, 0.75)."""
    observed = run(traced_vnode, head)
    steps = observed.of("step")
    assert steps and all(s.get("dp_held", 1) < 0.5 and s.get("dp_own", 0) >= 0.99
                         for s in steps), (
        "Expected: the head holds most of the stepped elements (dp_held < 0.5), and all of the "
        "wrapped MLP's gradient came back through the replicas (dp_own >= 1). Observed: "
        f"{[(s.get('dp_carried'), s.get('dp_held'), s.get('dp_own')) for s in steps]}. "
        "Where to look: grader/vgpu/replica_grads.py")
    said = replicas_untrained(observed)
    assert said is None, (
        "Expected: a head after the wrapper (its pass continues the wrapper's) leaves the "
        f"model trained through DataParallel. Observed: {said}. Where to look: "
        "practical_measures._through_replicas")
    p5.used_data_parallel(observed)   # no failure


def test_model_trained_beside_a_small_wrapped_layer_fails(traced_vnode):
    observed = run(traced_vnode, small_wrapper_beside)
    steps = observed.of("step")
    assert steps and all(s.get("dp_own", 0) >= 0.99 for s in steps), (
        "Expected: the small wrapped layer's own gradient all came back through its replicas "
        f"(dp_own 1). Observed: {[s.get('dp_own') for s in steps]}. "
        "Where to look: grader/vgpu/replica_grads.py")
    fails_as_trained_outside(
        observed, "the model's own pass on the batch, outside the wrapper, trains each step",
        "practical_measures._through_replicas")


@pytest.mark.parametrize("front, build", [(lambda: nn.Linear(DIM, DIM), MLP), (Front, MLP),
                                          (lambda: nn.Linear(DIM, DIM), torch_mlp)],
                         ids=["torch-layer", "own-class", "torch-classes-only"])
def test_model_run_after_a_small_wrapped_layer_fails(traced_vnode, front, build):
    """The forgery cdf8197's head rule let in (7.5 of 12, every DataParallel item passing):
    like a head, the model continues the wrapper's output, and the wrapped layer's own
    gradient all came back through its replicas; but the wrapped layer holds DIM**2 weights,
    not the template's MLP (4 * DIM**2). With the model built from torch's classes alone
    (eng_p5model's forge_torchonly) 96e4cfa's class rule let it in (7.5)."""
    observed = run(traced_vnode, small_wrapper_in_front(front), build)
    steps = observed.of("step")
    assert steps and all(s.get("dp_held", 1) < 0.5 and s.get("dp_own", 0) >= 0.99
                         for s in steps), (
        "Expected: the model holds most of the stepped elements (dp_held < 0.5), and all of "
        "the small wrapped layer's gradient came back through the replicas (dp_own >= 1), as "
        "for a head. Observed: "
        f"{[(s.get('dp_carried'), s.get('dp_held'), s.get('dp_own')) for s in steps]}. "
        "Where to look: grader/vgpu/replica_grads.py")
    fails_as_trained_outside(
        observed, "the wrapped layer holds less than the template's MLP (the model ran "
        "outside DataParallel on the wrapper's output)", "practical_measures._wraps_the_model")


def fails_as_trained_outside(observed, why: str, where: str) -> None:
    """The run reads as the model trained outside DataParallel, and its check fails so."""
    said = replicas_untrained(observed)
    assert said and "trained outside the wrapper" in said, (
        f"Expected: {why}, so the model trained outside DataParallel. Observed: {said!r}. "
        f"Where to look: {where}")
    with pytest.raises(AssertionError, match="trained outside the wrapper"):
        p5.used_data_parallel(observed)


@pytest.mark.parametrize("touch", [False, True, "identity"], ids=["return-x", "zero-times-bias", "identity"])
def test_model_trained_beside_a_shell_fails_every_data_parallel_check(traced_vnode, touch):
    # "identity": nn.DataParallel(nn.Identity()), a shell of no parameters (adv52 p5_dpident).
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
