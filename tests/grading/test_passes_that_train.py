"""Which forward and backward passes train, from a real traced run (a red team's forgery, adv26).

A template's Practical 10 loop earned 5.5 code points with no micro-batch at all: the real pass
on the whole batch ran inside a module without parameters that calls the model (its pass was
nested and went unrecorded), beside "micro-batch" passes whose outputs were thrown away and
backward passes of a scalar of the script's own. Practical 6 earned 2 points alike (a thrown-away
pass on a share of the batch, the real one hidden). Now a pass-through module hides nothing, a
pass trains only where a backward pass reaches its output (or, checkpointed, recomputes it), and
a backward counts only where it reaches a pass.
"""
from __future__ import annotations

import warnings
from contextlib import nullcontext

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation


class Through(nn.Module):
    """No parameters of its own: calls what it is given."""

    def forward(self, f, *args):
        return f(*args)


def model_on_gpu() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()


def observed(events) -> Observation:
    return Observation("sample.py", gpus=1, returncode=0, events=list(events), stdout="")


def test_a_pass_through_module_hides_no_pass(traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    Through()(model, torch.randn(16, 6, device="cuda:0")).sum().backward()
    forwards = [e for e in events if e["event"] == "forward"]
    assert [(e["module"], e["batch"]) for e in forwards] == [("Sequential", [16, 6])], (
        f"expected the model's pass inside the pass-through recorded; observed {forwards}")


def test_only_passes_a_backward_reaches_train(traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 6, device="cuda:0")
    for micro in x.chunk(4):
        model(micro)                                    # thrown away
        torch.zeros((), requires_grad=True).backward()  # reaches no pass of the model
    Through()(model, x).sum().backward()                # the real step, on the whole batch
    optimizer.step()
    run = observed(events)
    passes = pm.forward_passes(run)
    assert [(pm.rows_of(p["batch"]), p["trains"]) for p in passes] == \
        [(4, False)] * 4 + [(16, True)], passes
    assert p10.step_pattern(run) == [{"forwards": 1, "rows": [16], "backwards": 1,
                                      "synced": 0, "synced_at": None}], p10.step_pattern(run)


def test_micro_batches_as_the_handout_writes_them_all_train(traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for micro in torch.randn(16, 6, device="cuda:0").chunk(4):
        (model(micro).sum() / 4).backward()
    with torch.no_grad():
        model(torch.randn(2, 6, device="cuda:0"))       # a loss logged: no micro-batch
    optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run) == [{"forwards": 4, "rows": [4] * 4, "backwards": 4,
                                      "synced": 0, "synced_at": None}], p10.step_pattern(run)
    assert len(pm.first_step_rows(run, 0)) == 16


def test_checkpointed_passes_train_when_backward_recomputes_them(traced_vnode):
    """Reentrant checkpointing runs the pass under no_grad, its output outside autograd: it
    trains where backward recomputes it, and not where its output is thrown away."""
    events = traced_vnode(1)
    model = model_on_gpu()
    x = torch.randn(8, 6, device="cuda:0", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checkpoint(model, x, use_reentrant=True)            # thrown away
        checkpoint(model, x, use_reentrant=True).sum().backward()
        checkpoint(model, x, use_reentrant=False).sum().backward()
    passes = pm.forward_passes(observed(events))
    assert [p["trains"] for p in passes] == [False, True, True], passes


def test_a_model_returning_a_tuple_trains_through_any_of_its_outputs(traced_vnode):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(6, 2), nn.Linear(6, 3)

        def forward(self, x):
            return self.a(x), self.b(x)

    events = traced_vnode(1)
    model = TwoHeads().cuda()
    aux, logits = model(torch.randn(4, 6, device="cuda:0"))
    logits.sum().backward()        # the loss uses the second output only
    passes = pm.forward_passes(observed(events))
    assert [p["trains"] for p in passes] == [True], passes


def test_a_model_returning_a_dataclass_or_an_object_trains(traced_vnode):
    """A red team's honest P10 (adv27): `return Out(pred=x)` had looked tensor-less, and every
    pass and backward of the run "trained nothing" (6.5 points lost)."""
    from dataclasses import dataclass

    @dataclass
    class Out:
        pred: torch.Tensor
        extra: dict

    class Holder:
        def __init__(self, value):
            self.value = value

    class Model(nn.Module):
        def __init__(self, wrap):
            super().__init__()
            self.net, self.wrap = nn.Linear(6, 2), wrap

        def forward(self, x):
            return self.wrap(self.net(x))

    events = traced_vnode(1)
    wraps = [lambda y: Out(pred=y, extra={}), lambda y: [(Holder(y), 1)], lambda y: {"a": {"b": y}}]
    for wrap in wraps:
        out = Model(wrap).cuda()(torch.randn(4, 6, device="cuda:0"))
        pred = out.pred if isinstance(out, Out) else out[0][0].value if isinstance(out, list) \
            else out["a"]["b"]
        pred.sum().backward()
    passes = pm.forward_passes(observed(events))
    assert [p["trains"] for p in passes] == [True] * 3, passes


def test_a_gradient_of_zeros_trains_nothing(traced_vnode):
    """A red team (adv27): throwaway passes given `(out.sum() * 0).backward()`, plain or
    checkpointed, beside the real step."""
    events = traced_vnode(1)
    model = model_on_gpu()
    x = torch.randn(8, 6, device="cuda:0", requires_grad=True)
    (model(x).sum() * 0).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (checkpoint(model, x, use_reentrant=True).sum() * 0).backward()
    model(x).sum().backward()
    passes = pm.forward_passes(observed(events))
    assert [p["trains"] for p in passes] == [False, False, True], passes


def test_a_made_up_trace_without_numbered_passes_is_read_as_it_says():
    events = [{"event": "forward", "rank": 0, "thread": "MainThread", "step": 0,
               "batch": [8, 4]},
              {"event": "backward", "rank": 0}, {"event": "step", "rank": 0, "index": 1}]
    run = observed(events)
    assert pm.forward_passes(run)[0]["trains"] is True
    assert p10.step_pattern(run)[0]["backwards"] == 1


def test_a_pass_whose_output_has_other_rows_than_its_input_ran_on_the_larger(traced_vnode):
    """A red team (adv27): `model(x[:16], whole=x)` ran the whole batch, recorded as 16 rows
    (P10's micro-batches, P6's per-rank share). Its rows are the output's, and its input's
    fingerprints are no data of the pass."""
    class Sneaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(6, 2)
            self.scale = nn.Parameter(torch.ones(1))   # a module of its own, no mere wrapper

        def forward(self, x, whole=None):
            return self.net(whole if whole is not None else x) * self.scale

    events = traced_vnode(1)
    model = Sneaky().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 6, device="cuda:0")
    model(x[:4], whole=x).sum().backward()
    optimizer.step()
    run = observed(events)
    (forward,) = pm.forward_passes(run)
    assert (forward["rows"], forward["rows_in"]) == (16, None), forward
    assert p10.step_pattern(run)[0]["rows"] == [16], p10.step_pattern(run)
    assert pm.first_step_rows(run, 0) == []


def test_a_module_that_only_wraps_the_model_is_no_pass_the_models_inside_it_are(traced_vnode):
    """A TA's audit: Part 2 of Practical 4 written as a wrapper module whose forward runs the
    model on each chunk lost 1.4 points (only the wrapper's whole-batch pass was recorded), and
    Practical 5's DataParallel held by a module of the student's lost its output's record."""
    class Chunked(nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, x):
            return torch.cat([self.module(chunk) for chunk in x.chunk(2)])

    events = traced_vnode(2)
    model = model_on_gpu()
    x = torch.randn(8, 6, device="cuda:0")
    model(x)
    Chunked(model)(x).sum().backward()
    nn.Sequential(nn.Linear(6, 3), nn.Linear(3, 2)).cuda()(x)    # torch's own class: one pass
    passes = pm.forward_passes(observed(events))
    assert [(p["module"], p["rows"], p["rows_in"] is not None) for p in passes] == [
        ("Sequential", 8, True), ("Sequential", 4, True), ("Sequential", 4, True),
        ("Sequential", 8, True)], passes
    assert [p["trains"] for p in passes] == [False, True, True, False], passes
    run = observed(events)
    assert [e["module"] for e in run.of("placement")][:1] == ["Sequential"]


# -- a step computed outside the model's passes ------------------------------------------------
# A documented gap until now (README, Known limits): the real step computed from the model's
# weights directly, beside micro-batch passes given a tiny non-zero gradient, was micro-batching
# to every check. The observer now sums, as backward runs, the gradient the model's parameters
# get from outside its forward passes; a step made mostly there trains through none of them.


def decoy_micro_batches(model, x, factor=1e-9):
    for micro in x.chunk(4):
        (model(micro).sum() * factor).backward()


def step_outside(events) -> list:
    return [e.get("outside") for e in events if e["event"] == "step"]


def test_a_step_computed_from_the_weights_beside_tiny_micro_batches_is_no_micro_batching(
        traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 6, device="cuda:0"), torch.randn(16, 2, device="cuda:0")
    decoy_micro_batches(model, x)
    hidden = F.relu(F.linear(x, model[0].weight, model[0].bias))
    F.mse_loss(F.linear(hidden, model[2].weight, model[2].bias), y).backward()
    optimizer.step()
    run = observed(events)
    assert step_outside(events) == [pytest.approx(1.0, abs=1e-3)], step_outside(events)
    assert [p["trains"] for p in pm.forward_passes(run)] == [False] * 4
    step = p10.step_pattern(run)[0]
    assert (step["forwards"], step["rows"], step["backwards"]) == (0, [], 4), step
    said = p10.describe_step(step)
    assert "computed outside the model's forward passes" in said and "F.linear" in said, said


def test_gradients_of_autograd_grad_written_into_grad_are_outside_the_passes(traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 6, device="cuda:0"), torch.randn(16, 2, device="cuda:0")
    decoy_micro_batches(model, x, factor=1e-6)
    hidden = F.relu(F.linear(x, model[0].weight, model[0].bias))
    loss = F.mse_loss(F.linear(hidden, model[2].weight, model[2].bias), y)
    for parameter, grad in zip(model.parameters(),
                               torch.autograd.grad(loss, list(model.parameters()))):
        parameter.grad = grad
    optimizer.step()
    assert step_outside(events) == [pytest.approx(1.0, abs=1e-3)], step_outside(events)
    assert p10.step_pattern(observed(events))[0]["forwards"] == 0


def test_weight_decay_written_out_leaves_the_micro_batches_theirs(traced_vnode):
    """An honest loop's only gradient outside the passes: a penalty on the weights."""
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 6, device="cuda:0"), torch.randn(16, 2, device="cuda:0")
    for micro, target in zip(x.chunk(4), y.chunk(4)):
        penalty = 1e-4 * sum(p.pow(2).sum() for p in model.parameters())
        (F.mse_loss(model(micro), target) / 4 + penalty).backward()
    optimizer.step()
    outside = step_outside(events)
    assert outside[0] is not None and 0 < outside[0] < 0.05, outside
    assert p10.step_pattern(observed(events)) == [
        {"forwards": 4, "rows": [4] * 4, "backwards": 4, "synced": 0, "synced_at": None}]


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointed_and_plain_micro_batches_have_nothing_outside(traced_vnode, reentrant):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 6, device="cuda:0", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for micro in x.chunk(2):
            (checkpoint(model, micro, use_reentrant=reentrant).sum() / 2).backward()
        for micro in x.chunk(2):
            (model(micro).sum() / 2).backward()
    optimizer.step()
    assert step_outside(events) == [None], step_outside(events)
    assert p10.step_pattern(observed(events))[0]["forwards"] == 4


def test_dataparallel_replicas_gradients_are_the_wrappers_pass(traced_vnode):
    events = traced_vnode(2)
    model = nn.DataParallel(model_on_gpu())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(16, 6, device="cuda:0")).sum().backward()
    optimizer.step()
    assert step_outside(events) == [None], step_outside(events)


# -- a whole batch inside a pass recorded as a micro-batch (a red team, adv28) ---------------


class HidesTheBatch(nn.Module):
    """Runs its layers on a batch it was not handed as its first argument and returns rows
    the size of that argument, carrying the whole batch's loss."""

    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(6, 8), nn.Linear(8, 2)
        self.held = None

    def net(self, x):
        return self.second(self.first(x).relu())

    def forward(self, x, whole=None, target=None):
        out = self.net(x)
        whole = whole if whole is not None else self.held
        if whole is None:
            return out
        target = target if target is not None else torch.zeros(len(whole), 2, device=x.device)
        return out * 0 + F.mse_loss(self.net(whole), target) / out.numel()


def test_a_pass_handed_the_whole_batch_in_a_keyword_ran_on_it(traced_vnode):
    events = traced_vnode(1)
    model = HidesTheBatch().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 6, device="cuda:0"), torch.randn(16, 2, device="cuda:0")
    model(x[:4], whole=x, target=y).sum().backward()
    optimizer.step()
    run = observed(events)
    (forward,) = pm.forward_passes(run)
    assert (forward["rows"], forward["rows_in"], forward["trains"]) == (16, None, True), forward
    assert p10.step_pattern(run)[0]["rows"] == [16]


def test_a_pass_whose_layers_run_on_a_batch_held_elsewhere_ran_on_it(traced_vnode):
    events = traced_vnode(1)
    model = HidesTheBatch().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.held = torch.randn(16, 6, device="cuda:0")
    for micro in torch.randn(16, 6, device="cuda:0").chunk(4):
        (model(micro).sum() / 4).backward()
    optimizer.step()
    passes = pm.forward_passes(observed(events))
    assert [(p["rows"], p["rows_in"]) for p in passes] == [(16, None)] * 4, passes


def test_a_micro_batch_given_a_vanishing_gradient_trains_nothing(traced_vnode):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 6, device="cuda:0")
    micro = x.chunk(4)
    for part in micro[:3]:
        (model(part).sum() * 1e-30).backward()
    (model(micro[3]).sum()).backward()
    optimizer.step()
    run = observed(events)
    assert [p["trains"] for p in pm.forward_passes(run)] == [False] * 3 + [True]
    assert p10.step_pattern(run)[0]["forwards"] == 1


@pytest.mark.parametrize("sizes", [[13, 13, 13, 13, 12], [1, 15], [4, 4, 4, 4]])
def test_honest_micro_batches_of_any_split_all_train(traced_vnode, sizes):
    events = traced_vnode(1)
    model = model_on_gpu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(sum(sizes), 6, device="cuda:0"), torch.randn(sum(sizes), 2, device="cuda:0")
    for part, target in zip(x.split(sizes), y.split(sizes)):
        (F.mse_loss(model(part), target) / len(sizes)).backward()
    optimizer.step()
    run = observed(events)
    assert [p["trains"] for p in pm.forward_passes(run)] == [True] * len(sizes)
    assert p10.step_pattern(run)[0]["rows"] == sizes


def test_micro_batches_run_inside_the_models_forward_are_one_pass_on_its_batch(traced_vnode):
    """GPipe written inside forward: the layers see parts of the batch, never more than it."""
    class Piped(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = nn.Linear(6, 8), nn.Linear(8, 2)

        def forward(self, x):
            return torch.cat([self.second(self.first(part).relu()) for part in x.chunk(4)])

    events = traced_vnode(1)
    Piped().cuda()(torch.randn(16, 6, device="cuda:0")).sum().backward()
    (forward,) = pm.forward_passes(observed(events))
    assert (forward["rows"], forward["rows_in"] is not None) == (16, True), forward


def test_micro_batches_cut_inside_forward_are_the_answers_micro_batches(traced_vnode):
    """A TA's audit 28: GPipe written inside the model's forward ran 4 micro-batches of 16 rows
    through both stages with one backward per step. The answers about its micro-batches are
    right about that code; the code items, which ask for a backward per micro-batch, see one
    pass and say what ran inside it."""
    class Piped(nn.Module):
        def __init__(self):
            super().__init__()
            self.stage0, self.stage1 = nn.Linear(6, 8), nn.Linear(8, 2)

        def forward(self, x):
            return torch.cat([self.stage1(self.stage0(part).relu()) for part in x.chunk(4)])

    events = traced_vnode(1)
    model = Piped().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(16, 6, device="cuda:0")).sum().backward()
    optimizer.step()
    run = observed(events)
    (code,) = p10.step_pattern(run)
    assert (code["forwards"], code["rows"], code["inside"]) == (1, [16], [[4, 4, 4, 4]]), code
    assert "its layers ran on 4 parts of [4, 4, 4, 4] rows" in p10.describe_step(code)
    (answered,) = p10.step_pattern(run, inside=True)
    assert (answered["forwards"], answered["rows"], "inside" in answered) == (4, [4] * 4, False)


def test_a_layer_applied_twice_to_the_whole_batch_is_no_cut(traced_vnode):
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared, self.head = nn.Linear(6, 6), nn.Linear(6, 2)

        def forward(self, x):
            return self.head(self.shared(self.shared(x).relu()))

    events = traced_vnode(1)
    model = Twice().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(16, 6, device="cuda:0")).sum().backward()
    optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run, inside=True) == p10.step_pattern(run) == [
        {"forwards": 1, "rows": [16], "backwards": 1, "synced": 0, "synced_at": None}]


# -- the passes' part and the outside part, both raw (a red team, adv29) ----------------------


def wide_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).cuda()


def honest_step(model, optimizer, *, scale=1.0, penalty=0.0, divide_after=1.0, micro=4):
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for part, target in zip(x.chunk(micro), y.chunk(micro)):
        loss = F.mse_loss(model(part), target) / micro
        if penalty:
            loss = loss + penalty * sum(p.pow(2).sum() for p in model.parameters())
        (loss * scale).backward()
    for parameter in model.parameters():
        parameter.grad /= scale * divide_after
    optimizer.step()


@pytest.mark.parametrize("scale, penalty, divide_after", [
    (1024.0, 1e-4, 1.0),     # loss scaling, unscaled in .grad, beside weight decay written out
    (1.0, 1e-3, 1.0),        # a tutorial's l2_lambda = 1e-3: a real part of the step
    (1.0, 1e-4, 4.0),        # the gradient divided by MICRO_BATCHES after the loop
])
def test_a_penalty_on_the_weights_leaves_the_micro_batches_theirs(traced_vnode, scale, penalty,
                                                                  divide_after):
    events = traced_vnode(1)
    model = wide_model()
    honest_step(model, torch.optim.SGD(model.parameters(), lr=0.1), scale=scale, penalty=penalty,
                divide_after=divide_after)
    step = next(e for e in events if e["event"] == "step")
    assert not pm.made_outside(step), step
    assert p10.step_pattern(observed(events))[0]["rows"] == [8] * 4


def test_a_gradient_of_detached_copies_added_into_grad_is_no_passes_gradient(traced_vnode):
    """The whole batch's gradient taken on detached copies of the weights (no parameter of the
    model in its graph) and added into .grad, beside passes scaled by 1e-9."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    decoy_micro_batches(model, x)
    copies = [p.detach().clone().requires_grad_() for p in model.parameters()]
    hidden = F.relu(F.linear(x, copies[0], copies[1]))
    loss = F.mse_loss(F.linear(hidden, copies[2], copies[3]), y)
    for parameter, grad in zip(model.parameters(), torch.autograd.grad(loss, copies)):
        parameter.grad += grad
    optimizer.step()
    step = next(e for e in events if e["event"] == "step")
    assert pm.made_outside(step) and step["backward_share"] < 1e-4, step
    assert p10.step_pattern(observed(events))[0]["forwards"] == 0


def test_a_graph_too_large_to_follow_outside_the_passes_is_made_outside_them(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    decoy_micro_batches(model, x)
    loss = F.mse_loss(F.linear(F.relu(F.linear(x, model[0].weight, model[0].bias)),
                               model[2].weight, model[2].bias), y)
    for _ in range(5000):
        loss = loss * 1.0
    loss.backward()
    optimizer.step()
    step = next(e for e in events if e["event"] == "step")
    assert step.get("walk_limit") is True and pm.made_outside(step), step


def test_micro_batches_whose_loss_weight_is_zero_are_still_the_steps(traced_vnode):
    """A TA's audit 29: `loss * (mx.size(0) // x.size(0))`, a weight of 0, on every micro-batch:
    the loop is there, the step trains nothing (the invariance item's to charge); its passes
    had all been dropped, and every check said the code ran no forward pass."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for part, target in zip(x.chunk(4), y.chunk(4)):
        (F.mse_loss(model(part), target) * (part.size(0) // x.size(0))).backward()
    optimizer.step()
    run = observed(events)
    assert p10.step_pattern(run) == [
        {"forwards": 4, "rows": [8] * 4, "backwards": 4, "synced": 0, "synced_at": None}]


def test_a_grad_never_zeroed_between_steps_is_still_made_by_backward(traced_vnode):
    """A student's bug (no optimizer.zero_grad()): .grad holds every step's gradient so far,
    all of it made by backward passes through the model. The first step's loss is far the
    largest (a loss that falls fast): its gradient, a thousand times the next ones', stays in
    .grad, so a measure of each step's own backward passes alone reads the second step as a
    gradient written into .grad (steps of one size took 133 steps: half a minute)."""
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for step in range(3):
        scale = 1000.0 if step == 0 else 1.0
        for part, target in zip(x.chunk(2), y.chunk(2)):
            (F.mse_loss(model(part), target * scale) / 2).backward()
        optimizer.step()
    steps = [e for e in events if e["event"] == "step"]
    assert not any(pm.made_outside(step) for step in steps), [
        step for step in steps if pm.made_outside(step)][:1]


# -- a red team's third look (adv30) ---------------------------------------------------------


class CheckpointedStage(nn.Module):
    """A stage of the model checkpointed inside its own forward (reentrant)."""

    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(64, 256), nn.Linear(256, 64)

    def forward(self, x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return checkpoint(self.second, self.first(x).relu(), use_reentrant=True)


def test_a_stage_checkpointed_inside_the_forward_is_the_passes(traced_vnode):
    events = traced_vnode(1)
    model = CheckpointedStage().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for part, target in zip(x.chunk(2), y.chunk(2)):
        (F.mse_loss(model(part), target) / 2).backward()
    optimizer.step()
    step = next(e for e in events if e["event"] == "step")
    assert not pm.made_outside(step), step
    assert p10.step_pattern(observed(events))[0]["forwards"] == 2


def test_a_layer_frozen_at_first_then_trained_with_a_penalty_is_the_passes(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    model.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 64, device="cuda:0"))                 # seen frozen
    model.requires_grad_(True)
    honest_step(model, optimizer, penalty=1e-4)
    step = next(e for e in events if e["event"] == "step")
    assert not pm.made_outside(step), step


def test_a_mark_copied_onto_the_node_of_a_loss_beside_the_passes_marks_nothing(traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    out = None
    for part in x.chunk(4):
        out = model(part)
        (out.sum() * 1e-9).backward(retain_graph=True)
    full = F.mse_loss(F.linear(F.relu(F.linear(x, model[0].weight, model[0].bias)),
                               model[2].weight, model[2].bias), y)
    full.grad_fn.metadata.update(out.grad_fn.metadata)
    full.backward()
    optimizer.step()
    step = next(e for e in events if e["event"] == "step")
    assert pm.made_outside(step), step


def test_a_scaling_hook_of_the_scripts_own_does_not_hide_an_outside_step(traced_vnode):
    """The script's hooks run after the grader's: registered with the parameter."""
    events = traced_vnode(1)
    model = wide_model()
    for parameter in model.parameters():
        parameter.register_hook(lambda g: g * 1024)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    decoy_micro_batches(model, x)
    F.mse_loss(F.linear(F.relu(F.linear(x, model[0].weight, model[0].bias)),
                        model[2].weight, model[2].bias), y).backward()
    for parameter in model.parameters():
        parameter.grad /= 1024
    optimizer.step()
    step = next(e for e in events if e["event"] == "step")
    assert pm.made_outside(step), step


# -- a module handed a pass's output continues that pass (a red team's honest P10, adv30) -------
# A loss with a learnable weight of its own, or a head called after the model, had been a pass
# of its own (its parameters made it a "model"): two passes per micro-batch. Handed a pass's
# output (moved, sliced, through an activation), it continues that pass: no pass of its own, its
# output unmarked, so what it computes from the model's weights is outside the passes.


class UncertaintyMSE(nn.Module):
    """A loss with a learnable weight (uncertainty weighting, Kendall et al.)."""

    def __init__(self, device="cuda:0"):
        super().__init__()
        self.log_var = nn.Parameter(torch.zeros((), device=device))

    def forward(self, out, target):
        return F.mse_loss(out, target) * torch.exp(-self.log_var) + self.log_var


class Head(nn.Module):
    """A head of the script's own class, without parameters of its own."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return self.fc(x.relu())


def micro_batches_through(events, model, after, loss_of, extra=(), micro=4):
    """One step of `micro` micro-batches: `loss_of(after(model(part)), target)` each."""
    optimizer = torch.optim.SGD([*model.parameters(), *extra], lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for part, target in zip(x.chunk(micro), y.chunk(micro)):
        (loss_of(after(model(part)), target) / micro).backward()
    optimizer.step()
    return observed(events)


HONEST_STEP = {"forwards": 4, "rows": [8] * 4, "backwards": 4, "synced": 0, "synced_at": None}


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_a_loss_with_a_learnable_weight_continues_the_pass(traced_vnode, device):
    events = traced_vnode(2)
    loss = UncertaintyMSE(device)
    run = micro_batches_through(events, wide_model(), lambda out: out.to(device),
                                lambda out, target: loss(out, target.to(device)),
                                extra=loss.parameters())
    assert p10.step_pattern(run) == [HONEST_STEP], p10.step_pattern(run)
    step = run.of("step")[0]
    assert not pm.made_outside(step) and "outside" not in step, step
    continued = [e.get("continues") for e in run.of("forward_out") if e["module"] == "UncertaintyMSE"]
    assert continued == [[1], [3], [5], [7]], continued


@pytest.mark.parametrize("head", [lambda: nn.Linear(64, 64),
                                  lambda: nn.Sequential(nn.ReLU(), nn.Linear(64, 64)), Head])
def test_a_head_called_after_the_model_is_part_of_its_pass(traced_vnode, head):
    events = traced_vnode(1)
    head = head().cuda()
    run = micro_batches_through(events, wide_model(), head, F.mse_loss, extra=head.parameters())
    assert p10.step_pattern(run) == [HONEST_STEP], p10.step_pattern(run)
    assert not pm.made_outside(run.of("step")[0]), run.of("step")


def test_a_weighted_cross_entropy_is_no_pass(traced_vnode):
    """Its class weights are a buffer, no parameter: no model, as before."""
    events = traced_vnode(1)
    loss = nn.CrossEntropyLoss(weight=torch.linspace(0.5, 1.5, 64, device="cuda:0"))
    run = micro_batches_through(events, wide_model(), lambda out: out,
                                lambda out, target: loss(out, target.argmax(dim=1)))
    assert p10.step_pattern(run) == [HONEST_STEP], p10.step_pattern(run)
    assert {e["module"] for e in run.of("forward")} == {"Sequential"}


@pytest.mark.parametrize("no_grad", [True, False])
def test_a_teacher_run_on_the_micro_batch_is_a_pass_of_its_own_that_trains_nothing(
        traced_vnode, no_grad):
    """Distillation: a second model handed the micro-batch itself, not a pass's output."""
    events = traced_vnode(1)
    model, teacher = wide_model(), wide_model().requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    for part, target in zip(x.chunk(4), y.chunk(4)):
        out = model(part)
        with torch.no_grad() if no_grad else nullcontext():
            soft = teacher(part)
        ((F.mse_loss(out, target) + 0.5 * F.mse_loss(out, soft)) / 4).backward()
    optimizer.step()
    run = observed(events)
    passes = pm.forward_passes(run)
    assert [(p["rows"], p["trains"]) for p in passes] == [(8, True), (8, False)] * 4, passes
    assert not any("continues" in e for e in run.of("forward_out"))
    assert p10.step_pattern(run) == [HONEST_STEP], p10.step_pattern(run)


class WholeBatchLoss(nn.Module):
    """A forged "loss": handed the micro-batch's output, it returns the whole batch's loss
    computed from the model's weights directly (F.linear), beside that output times zero."""

    def __init__(self, model, x, y):
        super().__init__()
        self.scale = nn.Parameter(torch.ones((), device="cuda:0"))
        self.model, self.x, self.y = [model], x, y

    def forward(self, out, target):
        model = self.model[0]
        hidden = F.relu(F.linear(self.x, model[0].weight, model[0].bias))
        whole = F.mse_loss(F.linear(hidden, model[2].weight, model[2].bias), self.y)
        return self.scale * whole / 4 + 1e-9 * F.mse_loss(out, target)


def test_a_loss_module_that_computes_the_step_from_the_weights_is_outside_the_passes(
        traced_vnode):
    events = traced_vnode(1)
    model = wide_model()
    x, y = torch.randn(32, 64, device="cuda:0"), torch.randn(32, 64, device="cuda:0")
    loss = WholeBatchLoss(model, x, y)
    run = micro_batches_through(events, model, lambda out: out, loss, extra=loss.parameters())
    step = p10.step_pattern(run)[0]
    assert pm.made_outside(run.of("step")[0]) and step["forwards"] == 0, step


class CopyHead(nn.Module):
    """A forged "head": handed the micro-batch's output, it trains a copy of the model's
    layers of its own on the whole batch (handed in a keyword, or held)."""

    def __init__(self):
        super().__init__()
        self.net = wide_model()
        self.held = None

    def forward(self, out, whole=None):
        whole = whole if whole is not None else self.held
        return out * 1e-9 + self.net(whole).mean() * 0 + self.net(whole)[:len(out)]


@pytest.mark.parametrize("held", [False, True])
def test_a_head_handed_a_pass_and_run_on_the_whole_batch_is_a_pass_on_it(traced_vnode, held):
    events = traced_vnode(1)
    head = CopyHead()
    x = torch.randn(32, 64, device="cuda:0")
    head.held = x if held else None
    run = micro_batches_through(events, wide_model(),
                                (lambda out: head(out)) if held else (lambda out: head(out, whole=x)),
                                F.mse_loss, extra=head.parameters())
    step = p10.step_pattern(run)[0]
    assert step["rows"] == [32] * 4, step
    assert not any("continues" in e for e in run.of("forward_out"))


def test_practical4s_second_layer_handed_the_first_ones_output_is_still_seen(traced_vnode):
    """Practical 4, Part 3: layer2 handed layer1's output continues its pass, and its pass and
    placement are still what the checks read (the layers' GPUs, the output's)."""
    from grader.checks import test_practical4 as p4
    events = traced_vnode(2)
    layer1 = nn.Linear(p4.IN_DIM, p4.HIDDEN).to("cuda:0")
    layer2 = nn.Linear(p4.HIDDEN, p4.OUT_DIM).to("cuda:1")
    out = layer2(layer1(torch.randn(p4.BATCH, p4.IN_DIM, device="cuda:0")).to("cuda:1"))
    assert out.device == torch.device("cuda:1")
    run = observed(events)
    assert [e.get("continues") for e in run.of("forward_out")] == [None, [1]]
    assert p4.part3_layers(run) == {"layer1": {"cuda:0"}, "layer2": {"cuda:1"}}
    assert p4.part3_output(run)["out_device"] == "cuda:1"
