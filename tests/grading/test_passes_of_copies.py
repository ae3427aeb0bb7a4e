"""A pass of a model the optimizer does not step is no micro-batch (a red team's honest P10, adv31
H1).

A student who checks the practical's claim runs a copy of the model (`copy.deepcopy(
model.module)`) on the whole batch, backward, and compares its gradient with the accumulated
one: the copy's pass and backward had counted as a fifth micro-batch (3.75 of 10). Now a pass
whose every backward gave gradients to none of the parameters the next optimizer step steps is
left out of that step (`unstepped`, grader/vgpu/stepped_passes.py).

Judged by where the backward's gradients went, never by the parameters the pass's module
holds. So a "copy" still counts where it trains the model: sharing its parameters, holding the
model unregistered, or reached a second time by a backward that trains the model; and a copy's
gradient copied into the model's `.grad` is written there (grad_writes.py): the step's passes
then train nothing at all.
"""
from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
# The same model, batch and trace reading as the outside-gradient tests.
from tests.grading.test_gradients_made_elsewhere import batch, observed, wide_model


def micro_batches(model, x, y, scale=1.0):
    """The handout's loop: four micro-batches, each loss divided by their count."""
    for mx, my in zip(x.chunk(4), y.chunk(4)):
        (F.mse_loss(model(mx), my) / 4 * scale).backward()


def decoys(model, x):
    """Four "micro-batches" that learn nothing (no target): their gradient is no part of the
    whole batch's."""
    for mx in x.chunk(4):
        (model(mx).square().mean() / 4).backward()


def the_step(events) -> dict:
    return next(e for e in events if e["event"] == "step")


FOUR = [{"forwards": 4, "rows": [8] * 4, "backwards": 4, "synced": 0, "synced_at": None}]
FIVE = [{"forwards": 5, "rows": [32] + [8] * 4, "backwards": 5, "synced": 0, "synced_at": None}]


# -- honest: a copy checked against the accumulated gradient -------------------------------


def test_a_copy_checked_on_the_whole_batch_is_no_micro_batch(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    check = copy.deepcopy(model)
    F.mse_loss(check(x), y).backward()
    full = [p.grad.detach().clone() for p in check.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    micro_batches(model, x, y)
    assert all(torch.allclose(p.grad, g, atol=1e-5) for p, g in zip(model.parameters(), full))
    optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run) == FOUR, p10.step_pattern(run)
    assert [p["trains"] for p in pm.forward_passes(run)] == [False] + [True] * 4
    assert the_step(events)["unstepped"] == [1], the_step(events)
    assert pm.learning_ranks(run) == [0]


def test_a_copy_with_a_summed_loss_leaves_the_micro_batches_training(traced_vnode):
    """The copy's gradient, a hundred times the micro-batches' (a loss summed, not averaged),
    is no step's largest: the micro-batches are not 'below 1% of it'."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    micro_batches(model, x, y)
    check = copy.deepcopy(model)
    check.zero_grad()
    F.mse_loss(check(x), y, reduction="sum").backward()
    optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run) == FOUR, p10.step_pattern(run)


def test_a_copy_checked_in_every_step_is_left_out_of_each(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        check = copy.deepcopy(model)
        F.mse_loss(check(x), y).backward()
        optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run) == FOUR * 2, p10.step_pattern(run)


def test_every_pass_counts_where_the_optimizer_steps_none_of_their_parameters(traced_vnode):
    """An optimizer over other tensors than the passes' (a stale model, master weights): no
    pass gave them anything, and none is left out (graded as before)."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    other = wide_model()
    optimizer = torch.optim.SGD(other.parameters(), lr=0.1)
    micro_batches(model, x, y)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    assert p10.step_pattern(observed(events)) == FOUR


# -- forged: a "copy" that trains the model -------------------------------------------------


def test_a_copys_gradient_copied_into_the_models_grad_trains_no_pass(traced_vnode):
    """Decoy micro-batches and the copy's whole-batch gradient copied into `.grad`: written by
    the script, so the step was made beside its passes (grad_writes.py)."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    decoys(model, x)
    check = copy.deepcopy(model)
    check.zero_grad()
    F.mse_loss(check(x), y).backward()
    with torch.no_grad():
        for p, q in zip(model.parameters(), check.parameters()):
            p.grad.copy_(q.grad)
    optimizer.step()
    run = observed(events)
    assert pm.made_outside(the_step(events)), the_step(events)
    steps = p10.step_pattern(run)
    assert steps[0]["forwards"] == 0 and "outside" in steps[0], steps
    assert not any(p["trains"] for p in pm.forward_passes(run))


def test_a_copys_gradient_assigned_to_grad_before_the_last_backward_trains_no_pass(
        traced_vnode):
    """The same, `.grad` set to the copy's gradient less what the last decoy then adds."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    check = copy.deepcopy(model)
    F.mse_loss(check(x), y).backward()
    chunks = x.chunk(4)
    for mx in chunks[:3]:
        (model(mx).square().mean() / 4).backward()
    last = model(chunks[3]).square().mean() / 4
    adds = torch.autograd.grad(last, list(model.parameters()), retain_graph=True)
    for p, q, a in zip(model.parameters(), check.parameters(), adds):
        p.grad = q.grad - a
    last.backward()
    optimizer.step()
    assert pm.made_outside(the_step(events)), the_step(events)
    assert p10.step_pattern(observed(events))[0]["forwards"] == 0


def a_whole_batch_pass_among(steps) -> bool:
    """The step holds the whole batch's pass (32 rows), so it is no step of 4 micro-batches."""
    return 32 in steps[0]["rows"] and p10.without_micro_batches(steps, 4) == steps


def test_a_shallow_copy_sharing_the_models_parameters_is_a_pass(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    check = copy.copy(model)                     # the same parameters
    F.mse_loss(check(x), y).backward()
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    assert a_whole_batch_pass_among(p10.step_pattern(observed(events)))


def test_a_copy_made_of_the_models_own_layers_is_a_pass(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    check = nn.Sequential(copy.deepcopy(model[0]), model[1], model[2])   # one layer shared
    F.mse_loss(check(x), y).backward()
    micro_batches(model, x, y)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    assert p10.step_pattern(observed(events)) == FIVE


class Holder(nn.Module):
    """A parameter of its own, and the real model held unregistered: its weights run the whole
    batch inside this module's pass."""

    def __init__(self, model):
        super().__init__()
        self.scale = nn.Parameter(torch.ones((), device="cuda:0"))
        object.__setattr__(self, "hidden", [model])

    def forward(self, x):
        model = self.hidden[0]
        hidden = F.relu(F.linear(x, model[0].weight, model[0].bias))
        return F.linear(hidden, model[2].weight, model[2].bias) * self.scale


def seen(model, x):
    """An evaluation pass: the model's parameters are the gradient sources' from here on (a
    gradient they get before is not backward's to them: `backward_share`)."""
    with torch.no_grad():
        model(x[:1])


def test_a_module_holding_the_model_unregistered_is_a_pass(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    seen(model, x)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    F.mse_loss(Holder(model)(x), y).backward()
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    assert a_whole_batch_pass_among(p10.step_pattern(observed(events)))


def test_a_pass_is_judged_by_every_backward_that_reached_it(traced_vnode):
    """First reached by a torch.autograd.grad for its own parameter alone, then by a backward
    through the same graph, retained, that trains the model: a pass of the step."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    seen(model, x)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    holder = Holder(model)
    loss = F.mse_loss(holder(x), y)
    torch.autograd.grad(loss, [holder.scale], retain_graph=True)
    loss.backward()
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    assert a_whole_batch_pass_among(p10.step_pattern(observed(events)))


def test_stepped_weights_not_watched_before_the_copys_backward_leave_it_counted(traced_vnode):
    """A model made by deepcopy (its parameters never registered with a module) and not yet
    run when another module's backward trains it: that backward's gradients for it were not
    seen, so its pass is not left out (the step's gradient, all but none of it from backward
    to the model's parameters as far as was seen, was made beside its passes)."""
    events = traced_vnode(1)
    template = wide_model()
    model = copy.deepcopy(template)
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    F.mse_loss(Holder(model)(x), y).backward()
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()
    assert "unstepped" not in the_step(events)
    steps = p10.step_pattern(observed(events))
    assert p10.without_micro_batches(steps, 4) == steps, steps


def test_a_copy_trained_by_an_optimizer_of_its_own_is_a_step_of_its_own(traced_vnode):
    """Trained on the whole batch by its own optimizer, then loaded into the model: the copy's
    step is a step of one pass, no micro-batch."""
    events = traced_vnode(1)
    model = wide_model()
    x, y = batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    check = copy.deepcopy(model)
    own = torch.optim.SGD(check.parameters(), lr=0.1)
    F.mse_loss(check(x), y).backward()
    own.step()
    model.load_state_dict(check.state_dict())
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()
    steps = p10.step_pattern(observed(events))
    assert [s["forwards"] for s in steps] == [1, 4], steps
    assert p10.without_micro_batches(steps, 4) == steps[:1]
