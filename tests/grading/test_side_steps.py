"""Steps of an optimizer over none of the DDP-wrapped model's parameters close none of its step
windows, unless the model's weights were written beside its optimizer (adv32 H1).

An honest Practical 10 that trains a whole-batch copy of the model (`copy.deepcopy(
model.module)`) beside it with an optimizer of its own, or a probe on `out.detach()` stepped
each micro-batch, had its micro-batches per step cut at the other optimizer's steps (3.75-4.5 of
10). Those steps are now `side_step` records (grader/vgpu/side_steps.py). The forgery that
hiding them opens: the copy trained on the whole batch, its weights written into the model, and
"micro-batches" of a loss scaled by 1e-9 before the model's step: the step is then made beside
its passes (`weights_written`), as is a load inside the model's own step that no torch step
vouches for (a subclass's step, a closure, a step hook of the script's own).

Each test runs one process group of one rank in the test's own process, the model in DDP.
"""
from __future__ import annotations

import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from tests.grading.test_gradients_made_elsewhere import batch, observed, wide_model
from tests.grading.test_passes_of_copies import decoys, micro_batches

STEPS = 2


@pytest.fixture
def ddp_run(traced_vnode):
    """A traced virtual node of one GPU with a process group of one rank: () -> (the trace's
    records, the model wrapped in DDP, its optimizer)."""
    started = []

    def make():
        events = traced_vnode(1)
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        started.append(True)
        model = DDP(wide_model())
        return events, model, torch.optim.SGD(model.parameters(), lr=0.1)

    yield make
    if started and dist.is_initialized():
        dist.destroy_process_group()


class Copy:
    """A copy of the model (`copy.deepcopy(model.module)`) with an optimizer of its own."""

    def __init__(self, model):
        self.net = copy.deepcopy(model.module)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def step(self, x, y):
        """One step of the copy on the whole batch."""
        self.optimizer.zero_grad()
        F.mse_loss(self.net(x), y).backward()
        self.optimizer.step()


def passes_per_step(events) -> list[tuple[int, list, int]]:
    """(forward passes, their rows, backward passes) per step of the model, as P10 reads them."""
    return [(s["forwards"], s["rows"], s["backwards"]) for s in p10.step_pattern(observed(events))]


def steps_of(events) -> list[dict]:
    return [e for e in events if e["event"] == "step"]


MICRO_BATCHED = [(4, [8] * 4, 4)] * STEPS


# -- honest: other optimizers beside the model's --------------------------------------------


@pytest.mark.parametrize("copy_first", [False, True], ids=["copy_after", "copy_first"])
def test_a_whole_batch_copy_with_its_own_optimizer_closes_no_step_of_the_model(ddp_run,
                                                                                 copy_first):
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)

    for _ in range(STEPS):
        if copy_first:
            check.step(x, y)
        optimizer.zero_grad()
        micro_batches(model, x, y)
        optimizer.step()
        if not copy_first:
            check.step(x, y)
    assert passes_per_step(events) == MICRO_BATCHED, (
        f"expected {STEPS} steps of 4 micro-batches of 8 rows, the copy's steps hidden; "
        f"observed {passes_per_step(events)} (look: side_steps.SideSteps.is_side)")
    assert len([e for e in events if e["event"] == "side_step"]) == STEPS
    assert not any(pm.made_outside(s) for s in steps_of(events)), steps_of(events)
    # The copy's pass in the model's window is no micro-batch of it.
    left_out = [s.get("unstepped") for s in steps_of(events)]
    assert left_out == ([[1], [6]] if copy_first else [None, [5]]), left_out


def train_with_a_probe(model, optimizer, x, y) -> None:
    """STEPS steps of four micro-batches, a probe on each one's detached output stepped by an
    optimizer of its own after it."""
    probe = nn.Linear(64, 1).cuda()
    probe_optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(STEPS):
        optimizer.zero_grad()
        for mx, my in zip(x.chunk(4), y.chunk(4)):
            out = model(mx)
            (F.mse_loss(out, my) / 4).backward()
            probe_optimizer.zero_grad()
            probe(out.detach()).square().mean().backward()
            probe_optimizer.step()
        optimizer.step()


def test_a_probe_on_the_detached_output_stepped_every_micro_batch_closes_no_step(ddp_run):
    events, model, optimizer = ddp_run()
    x, y = batch()
    train_with_a_probe(model, optimizer, x, y)
    assert passes_per_step(events) == MICRO_BATCHED, passes_per_step(events)
    assert not any(pm.made_outside(s) for s in steps_of(events)), steps_of(events)


def test_a_copy_synced_from_the_model_writes_the_copy_not_the_model(ddp_run):
    """`check.load_state_dict(model.module.state_dict())` before each check: no write to the
    model's weights."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)
    for _ in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        optimizer.step()
        check.net.load_state_dict(model.module.state_dict())
        check.step(x, y)
    assert passes_per_step(events) == MICRO_BATCHED, passes_per_step(events)
    assert not any(pm.made_outside(s) for s in steps_of(events)), steps_of(events)


def test_weights_written_where_nothing_else_trained_are_judged_as_before(ddp_run):
    """A clamp of the weights under no_grad, no other optimizer: graded as before (no guard)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    for _ in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                p.clamp_(-0.05, 0.05)
    assert passes_per_step(events) == MICRO_BATCHED, passes_per_step(events)
    assert not any("weights_written" in s for s in steps_of(events)), steps_of(events)


# -- forged: a copy trained on the whole batch, written into the model ---------------------


def load_state(model, check):
    model.module.load_state_dict(check.state_dict())


def copy_through_data(model, check):
    for p, q in zip(model.parameters(), check.parameters()):
        p.data.copy_(q.data)


def copy_without_grad(model, check):
    with torch.no_grad():
        for p, q in zip(model.parameters(), check.parameters()):
            p.copy_(q)


def assign_data(model, check):
    for p, q in zip(model.parameters(), check.parameters()):
        p.data = q.data.clone()


WRITES = [load_state, copy_through_data, copy_without_grad, assign_data]


def assert_made_beside(events):
    steps = steps_of(events)
    assert len(steps) == STEPS and all(s.get("weights_written") is True and pm.made_outside(s)
                                       for s in steps), (
        f"expected every step of the model made beside its passes (weights_written); observed "
        f"{steps} (look: side_steps.SideSteps.written_beside)")
    pattern = p10.step_pattern(observed(events))
    assert [s["forwards"] for s in pattern] == [0] * STEPS, pattern
    said = [p10.describe_step(s) for s in pattern]
    assert all(p10.WEIGHTS_WRITTEN_SAID in d or "cannot vouch" in d for d in said), said


@pytest.mark.parametrize("write", WRITES, ids=lambda w: w.__name__)
def test_a_copy_stepped_on_the_whole_batch_and_written_into_the_model_is_no_micro_batching(
        ddp_run, write):
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)
    for _ in range(STEPS):
        check.step(x, y)
        write(model, check.net)
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_made_beside(events)


def test_decoys_before_the_copys_step_and_the_load_are_no_micro_batching(ddp_run):
    """The decoys first, then the copy's step and the load, then the model's step: the load
    still comes after the window's side step."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)
    for _ in range(STEPS):
        optimizer.zero_grad()
        decoys(model, x)
        check.step(x, y)
        load_state(model, check.net)
        optimizer.step()
    assert_made_beside(events)


def test_a_copy_trained_by_hand_and_loaded_is_no_micro_batching(ddp_run):
    """No optimizer of the copy's own: its pass is left out of the model's step (`unstepped`),
    and the load is seen all the same (it had scored 10 of 10)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = copy.deepcopy(model.module)
    for _ in range(STEPS):
        check.zero_grad()
        F.mse_loss(check(x), y).backward()
        with torch.no_grad():
            for q in check.parameters():
                q -= 0.1 * q.grad
        load_state(model, check)
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_made_beside(events)


class LoadingSGD(torch.optim.SGD):
    """The model's optimizer, loading the copy's weights inside its own step."""

    def __init__(self, params, check, model):
        super().__init__(params, lr=0.1)
        self.check, self.model = check, model

    def step(self, closure=None):
        load_state(self.model, self.check)


def in_a_subclass(model, check):
    return LoadingSGD(model.parameters(), check, model), None


def in_a_post_hook(model, check):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.register_step_post_hook(lambda *_: load_state(model, check))
    return optimizer, None


def in_a_closure(model, check):
    def closure():
        load_state(model, check)
    return torch.optim.SGD(model.parameters(), lr=0.1), closure


@pytest.mark.parametrize("loading", [in_a_subclass, in_a_post_hook, in_a_closure],
                         ids=lambda f: f.__name__)
def test_a_load_inside_the_models_step_is_no_micro_batching(ddp_run, loading):
    """Written where the mark cannot see it (inside the step): no torch step vouches for it."""
    events, model, _ = ddp_run()
    x, y = batch()
    check = Copy(model)
    optimizer, closure = loading(model, check.net)
    for _ in range(STEPS):
        check.step(x, y)
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step(closure) if closure is not None else optimizer.step()
    assert_made_beside(events)


def test_an_optimizer_over_a_parameter_of_the_model_too_still_closes_a_step(ddp_run):
    """The copy's optimizer also holds one of the model's weights: a step of the model's, as
    before (no side step)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)
    check.optimizer = torch.optim.SGD([*check.net.parameters(), next(model.parameters())],
                                      lr=0.1)
    check.step(x, y)
    micro_batches(model, x, y)
    optimizer.step()
    assert not any(e["event"] == "side_step" for e in events)
    assert len(steps_of(events)) == 2


# -- the mark itself ----------------------------------------------------------------------------


def test_a_write_through_data_that_keeps_the_sums_is_seen_at_the_sampled_values():
    """Reversing a parameter's values through `.data` keeps its version, its storage and (small
    integers: exact in any order) the sum and the sum of squares: only the values at the
    mark's sampled positions tell the write (a forger fixing up the sums after a load)."""
    from grader.vgpu.fingerprints import prints_of
    from grader.vgpu.side_steps import ParameterMark, grew
    weight = nn.Parameter(torch.arange(16.0))
    marks = [ParameterMark(weight)]
    before = (weight._version, weight.data_ptr(), prints_of([weight]))
    with torch.no_grad():
        weight.data.copy_(weight.data.flip(0))
    assert (weight._version, weight.data_ptr(), prints_of([weight])) == before, (
        "the write should hide from all but the samples")
    assert grew(marks) and marks[0].moved(), (
        "expected the reversed values seen as grown beside the optimizer; observed not grown "
        "(look: side_steps.grew, ParameterMark.moved)")
    assert not grew([ParameterMark(weight)]), "a parameter left alone has not grown"


# -- the mark is per parameter, taken only at a parameter's first wrap and the model's steps -----
# (adv35: each forgery below scored 10 of 12, the control 3.5)


def rewrap(model, optimizer):
    """`model = DDP(model.module)` after the load: the same parameters wrapped again."""
    return DDP(model.module), optimizer


KEPT = []


def throwaway_wrap(model, optimizer):
    """`DDP(nn.Linear(1, 1))` after the load: a module the script never trains, wrapped."""
    KEPT.append(DDP(nn.Linear(1, 1).cuda()))
    return model, optimizer


def optimizer_with_an_extra_parameter(model, optimizer):
    """A fresh optimizer over the model's parameters and a new module's."""
    extra = nn.Linear(1, 1).cuda()
    return model, torch.optim.SGD([*model.parameters(), *extra.parameters()], lr=0.1)


def extra_param_group(model, optimizer):
    optimizer.add_param_group({"params": list(nn.Linear(1, 1).cuda().parameters())})
    return model, optimizer


@pytest.mark.parametrize("after_load", [rewrap, throwaway_wrap, optimizer_with_an_extra_parameter,
                                        extra_param_group], ids=lambda f: f.__name__)
def test_a_wrap_or_an_extra_parameter_after_the_load_keeps_the_models_mark(ddp_run, after_load):
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = Copy(model)
    for _ in range(STEPS):
        check.step(x, y)
        load_state(model, check.net)
        model, optimizer = after_load(model, optimizer)
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_made_beside(events)


def test_a_copy_trained_before_the_model_is_wrapped_vouches_for_nothing(traced_vnode):
    """A DDP module kept first (so the copy's steps are side steps), the copy trained up front,
    loaded into the bare model, the model wrapped only then, decoys: its first step is made
    beside its passes (the weights its wrap marked are the copy's)."""
    events = traced_vnode(1)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        keep = DDP(nn.Linear(1, 1).cuda())
        x, y = batch()
        bare = wide_model()
        check = copy.deepcopy(bare)
        check_optimizer = torch.optim.SGD(check.parameters(), lr=0.1)
        for _ in range(STEPS):
            check_optimizer.zero_grad()
            F.mse_loss(check(x), y).backward()
            check_optimizer.step()
        bare.load_state_dict(check.state_dict())
        model = DDP(bare)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(STEPS):
            optimizer.zero_grad()
            micro_batches(model, x, y, scale=1e-9)
            optimizer.step()
        del keep
    finally:
        dist.destroy_process_group()
    steps = steps_of(events)
    assert steps[0].get("weights_written") is True, (
        f"expected the model's first step made beside its passes (its wrap came after side "
        f"steps); observed {steps} (look: side_steps.SideSteps.wrapped)")


def test_a_parameter_let_go_of_does_not_hide_the_others_writes():
    from grader.vgpu.side_steps import ParameterMark, grew
    kept, dropped = nn.Parameter(torch.arange(8.0)), nn.Parameter(torch.ones(4))
    marks = [ParameterMark(dropped), ParameterMark(kept)]
    del dropped
    with torch.no_grad():
        kept.copy_(kept.flip(0))
    assert marks[0].grown() == (0, 0), "a parameter let go of has nothing to compare"
    assert grew(marks), "a write to the kept parameter should be seen though another is gone"


# -- one optimizer per pipeline stage: its steps one step of the model (adv35 H10) -------------


def stage_optimizers(model):
    first, second = model.module[0], model.module[2]
    return [torch.optim.SGD(first.parameters(), lr=0.1),
            torch.optim.SGD(second.parameters(), lr=0.1)]


def test_one_optimizer_per_stage_stepped_after_the_micro_batches_is_one_step(ddp_run):
    events, model, _ = ddp_run()
    x, y = batch()
    optimizers = stage_optimizers(model)
    for _ in range(STEPS):
        for o in optimizers:
            o.zero_grad()
        micro_batches(model, x, y)
        for o in optimizers:
            o.step()
    assert passes_per_step(events) == MICRO_BATCHED, (
        f"expected {STEPS} steps of 4 micro-batches, each stage's optimizer step one step of the "
        f"model; observed {passes_per_step(events)} (look: observe._joins_window, "
        "practical_measures.model_steps)")
    assert not any(pm.made_outside(s) for s in steps_of(events)), steps_of(events)


def test_stage_optimizers_stepped_after_every_micro_batch_are_still_a_step_per_micro_batch(
        ddp_run):
    """The classic wrong answer, with an optimizer per stage: a pass before each step."""
    events, model, _ = ddp_run()
    x, y = batch()
    optimizers = stage_optimizers(model)
    for mx, my in zip(x.chunk(4), y.chunk(4)):
        (F.mse_loss(model(mx), my) / 4).backward()
        for o in optimizers:
            o.step()
    assert passes_per_step(events) == [(1, [8], 1)] * 4, passes_per_step(events)


def test_an_optimizer_stepped_twice_is_two_steps(ddp_run):
    """The same parameters stepped again: no step of it goes on the other."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    micro_batches(model, x, y)
    optimizer.step()
    optimizer.step()
    assert passes_per_step(events) == [(4, [8] * 4, 4), (0, [], 0)], passes_per_step(events)


def test_a_load_between_the_stages_steps_is_still_seen(ddp_run):
    """The copy trained and its second stage loaded between the two stage steps: the joined
    step is made beside its passes."""
    events, model, _ = ddp_run()
    x, y = batch()
    optimizers = stage_optimizers(model)
    check = Copy(model)
    for _ in range(STEPS):
        check.step(x, y)
        for o in optimizers:
            o.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizers[0].step()
        model.module[2].load_state_dict(check.net[2].state_dict())
        optimizers[1].step()
    pattern = p10.step_pattern(observed(events))
    assert len(pattern) == STEPS and all(s.get("weights_written") for s in pattern), pattern

