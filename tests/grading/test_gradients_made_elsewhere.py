"""A step's gradient made beside its passes, three more ways (a red team's fourth look, adv31).

Each forgery below ran "micro-batch" passes beside a whole-batch step and had earned Practical
10's and Practical 6's points for micro-batching (7 of 12 each, where the plain step earns 1.5
and 5):
- the whole batch run by reentrant checkpointing's recomputation, in backward: a function that
  calls no module in the checkpoint's forward, and the model on every row when backward
  recomputes it;
- a pass mark rebuilt for the whole-batch loss's own node (the grader's marks were in the node's
  `metadata`, which the script reads and writes);
- `.grad` replaced by the whole-batch gradient of detached copies of the weights, less what the
  last backward then adds (backward still gave as much as was applied, so `backward_share` was
  silent).
Beside each, the honest loops that must keep their points: a stage checkpointed inside the
model's forward, a checkpointed micro-batch, clipping, unscaling, zeroing, weight decay written
into .grad, a clamping hook, and gradients summed in buffers of the script's own.
"""
from __future__ import annotations

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation


def observed(events) -> Observation:
    return Observation("sample.py", gpus=1, returncode=0, events=list(events), stdout="")


def wide_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).cuda()


def batch():
    return torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")


def the_step(events) -> dict:
    return next(e for e in events if e["event"] == "step")


def whole_batch_loss(model, x, y):
    """The whole batch's loss from the model's weights, beside its passes."""
    hidden = F.relu(F.linear(x, model[0].weight, model[0].bias))
    return F.mse_loss(F.linear(hidden, model[2].weight, model[2].bias), y)


def detached_gradient(model, loss_of):
    """The gradient of `loss_of(net)` taken on detached copies of the model's weights."""
    copies = [p.detach().clone().requires_grad_() for p in model.parameters()]

    def net(x):
        return F.linear(F.relu(F.linear(x, copies[0], copies[1])), copies[2], copies[3])

    return torch.autograd.grad(loss_of(net), copies)


def quiet():
    catcher = warnings.catch_warnings()
    catcher.__enter__()
    warnings.simplefilter("ignore")
    return catcher


# -- the whole batch inside reentrant checkpointing's recomputation --------------------------


def whole_batch_when_recomputed(model, x, y, anchor):
    if not torch.is_grad_enabled():          # the checkpoint's forward: no module called
        return torch.zeros((), device=x.device)
    return F.mse_loss(model(x), y)           # backward's recomputation: the real step


def test_a_whole_batch_run_by_a_checkpoints_recomputation_is_made_outside_the_passes(
        traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    anchor = torch.zeros((), requires_grad=True)
    catcher = quiet()
    for i, part in enumerate(x.chunk(4)):
        loss = model(part).sum() * 1e-9
        if i == 0:
            loss = loss + checkpoint(whole_batch_when_recomputed, model, x, y, anchor,
                                     use_reentrant=True)
        loss.backward()
    catcher.__exit__(None, None, None)
    optimizer.step()
    step = the_step(events)
    assert pm.made_outside(step), (
        f"expected the whole batch recomputed beside the passes to be made outside them; "
        f"the step record says {step}")
    assert p10.step_pattern(observed(events))[0]["forwards"] == 0


def micro_batch_then_whole_batch(model, part, x, y, anchor):
    if not torch.is_grad_enabled():          # the checkpoint's forward: a micro-batch
        return model(part).sum() * 0 + anchor
    return F.mse_loss(model(x), y) / 4       # its recomputation: every row


def test_a_recomputation_on_other_rows_than_the_checkpointed_pass_is_not_that_pass(
        traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    anchor = torch.zeros((), requires_grad=True)
    catcher = quiet()
    for part in x.chunk(4):
        checkpoint(micro_batch_then_whole_batch, model, part, x, y, anchor,
                   use_reentrant=True).backward()
    catcher.__exit__(None, None, None)
    optimizer.step()
    step = the_step(events)
    assert pm.made_outside(step), step
    assert p10.step_pattern(observed(events))[0]["forwards"] == 0


class StageCheckpointed(nn.Module):
    def __init__(self, sequential: bool = False):
        super().__init__()
        self.first = nn.Linear(64, 256)
        self.rest = nn.Sequential(nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))
        self.sequential = sequential

    def forward(self, x):
        hidden = self.first(x)
        if self.sequential:
            return checkpoint_sequential(self.rest, 2, hidden, use_reentrant=True)
        return checkpoint(self.rest, hidden, use_reentrant=True)


def test_reentrant_checkpoints_inside_the_model_and_around_a_micro_batch_are_the_passes(
        traced_vnode):
    events = traced_vnode(1)
    torch.manual_seed(0)
    models = [StageCheckpointed().cuda(), StageCheckpointed(sequential=True).cuda()]
    optimizer = torch.optim.SGD([p for m in models for p in m.parameters()], lr=0.1)
    x, y = batch()
    catcher = quiet()
    for model in models:
        for part, target in zip(x.chunk(2), y.chunk(2)):
            (F.mse_loss(model(part), target) / 2).backward()
    plain = wide_model()
    inputs = x.clone().requires_grad_()
    for part, target in zip(inputs.chunk(2), y.chunk(2)):
        (F.mse_loss(checkpoint(plain, part, use_reentrant=True), target) / 2).backward()
    catcher.__exit__(None, None, None)
    optimizer.step()
    step = the_step(events)
    assert not pm.made_outside(step) and "outside" not in step, step


# -- marks the script could read and write ----------------------------------------------------


def test_whatever_the_script_writes_into_a_nodes_metadata_marks_no_pass(traced_vnode):
    """A red team rebuilt the mark for the loss's own node (its `_sequence_nr()` and `name()`),
    the key read off a real pass's `metadata`."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    out = None
    for part in x.chunk(4):
        out = model(part)
        (out.sum() * 1e-9).backward(retain_graph=True)
    full = whole_batch_loss(model, x, y)
    src, dst = out.grad_fn, full.grad_fn
    for key, value in list(src.metadata.items()):
        dst.metadata[key] = (value[0], (dst._sequence_nr(), dst.name())) \
            if isinstance(value, tuple) else value
    below = dst.next_functions[0][0]
    below.metadata.update(src.metadata)
    full.backward()
    optimizer.step()
    step = the_step(events)
    assert pm.made_outside(step), step
    assert not src.metadata, (
        f"expected nothing of the grader's in a node's metadata, which the script can read and "
        f"write; observed {dict(src.metadata)}")


# -- .grad written by the script --------------------------------------------------------------


def test_grad_replaced_before_the_last_backward_is_written_not_the_passes(traced_vnode):
    """Passes trained on no target; before the last backward .grad becomes the whole batch's
    gradient (of detached copies) less what that backward adds."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    parts = x.chunk(4)
    for i, part in enumerate(parts):
        loss = model(part).square().mean()
        if i == len(parts) - 1:
            full = detached_gradient(model, lambda net: F.mse_loss(net(x), y))
            last = detached_gradient(model, lambda net: net(part).square().mean())
            for parameter, a, b in zip(model.parameters(), full, last):
                parameter.grad = a - b
        loss.backward()
    optimizer.step()
    step = the_step(events)
    assert pm.made_outside(step) and step.get("written", 0) > pm.WRITTEN_LIMIT, step
    run = observed(events)
    assert p10.step_pattern(run)[0]["forwards"] == 0
    said = p10.describe_step(p10.step_pattern(run)[0])
    assert "written into .grad" in said, said


def test_grad_copied_over_after_the_last_backward_is_written(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    for part in x.chunk(4):
        model(part).square().mean().backward()
    full = detached_gradient(model, lambda net: F.mse_loss(net(x), y))
    for parameter, a in zip(model.parameters(), full):
        parameter.grad.copy_(a)
    optimizer.step()
    assert pm.made_outside(the_step(events)), the_step(events)


def test_grad_zeroed_and_added_to_in_place_before_the_last_backward_is_written(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch()
    parts = x.chunk(4)
    for i, part in enumerate(parts):
        loss = model(part).square().mean()
        if i == len(parts) - 1:
            full = detached_gradient(model, lambda net: F.mse_loss(net(x), y))
            last = detached_gradient(model, lambda net: net(part).square().mean())
            for parameter, a, b in zip(model.parameters(), full, last):
                parameter.grad.zero_()
                parameter.grad.add_(a).sub_(b)
        loss.backward()
    optimizer.step()
    assert pm.made_outside(the_step(events)), the_step(events)


def honest_micro_batches(model, x, y, micro=4, scale=1.0):
    for part, target in zip(x.chunk(micro), y.chunk(micro)):
        (F.mse_loss(model(part), target) / micro * scale).backward()


def test_scalings_clipping_zeroing_and_weight_decay_on_grad_are_the_passes(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = batch()
    for step in range(4):
        optimizer.zero_grad(set_to_none=step % 2 == 0)
        honest_micro_batches(model, x, y, scale=1024.0)
        for parameter in model.parameters():
            parameter.grad /= 1024
            parameter.grad.add_(parameter.detach(), alpha=1e-4)   # weight decay written out
        if step == 1:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
        if step == 2:
            torch.nn.utils.clip_grad_value_(model.parameters(), 1e-4)
        optimizer.step()
    steps = [e for e in events if e["event"] == "step"]
    assert not any(pm.made_outside(s) for s in steps), steps


def test_a_clamping_hook_and_gradients_summed_in_buffers_of_its_own_are_the_passes(
        traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    for parameter in model.parameters():
        parameter.register_hook(lambda g: g.clamp(-1e-4, 1e-4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = batch()
    honest_micro_batches(model, x, y)
    optimizer.step()
    sums = [torch.zeros_like(p) for p in model.parameters()]
    for part, target in zip(x.chunk(4), y.chunk(4)):
        optimizer.zero_grad()
        (F.mse_loss(model(part), target) / 4).backward()
        for total, parameter in zip(sums, model.parameters()):
            total += parameter.grad
    for total, parameter in zip(sums, model.parameters()):
        parameter.grad = total
    optimizer.step()
    steps = [e for e in events if e["event"] == "step"]
    assert len(steps) == 2 and not any(pm.made_outside(s) for s in steps), steps


def test_a_grad_holding_an_inf_at_the_step_stops_nothing(traced_vnode):
    """AMP's overflow: `.grad` with an inf is not known, never a write, and never an error in
    the script's step."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = batch()
    honest_micro_batches(model, x, y)
    with torch.no_grad():
        model[0].weight.grad[0, 0] = float("inf")
    optimizer.step()
    step = the_step(events)
    assert "written" not in step and not pm.made_outside(step), step
