"""Practical 10's weight guard where nothing else is seen training, and honest styles beside
a probe (adv35 F1, F1b, F6, H8, H9, H14; grader/vgpu/side_steps.py).

Forged: the model's weights copied out as plain tensors (no module, no optimizer), trained
on the whole batch by hand (F.linear and autograd.grad, or backprop written out), written back
into the model before "micro-batches" of a loss scaled by 1e-9 (10 of 10, the control 3.5);
the copy trained before the model's DDP wrap, then decoys (4.5); the copy written back growing
only a sixth of the values a load would grow (adv38 F1: 7.65). Honest: a probe wrapped in
DDP too (4.25), a logging step hook beside a probe (3.5), a clamp beside a probe (4.5), the
weights initialized or loaded from a checkpoint after the wrap (adv38 H1: 4.5); all should
stay with the reference's 10.

Each test runs one process group of one rank in the test's own process, the model in DDP.
"""
from __future__ import annotations

import copy
from contextlib import nullcontext

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.vgpu.side_steps import ROUNDING, ParameterMark, grew
from tests.grading.test_gradients_made_elsewhere import batch, observed, wide_model
from tests.grading.test_passes_of_copies import micro_batches
from tests.grading import test_side_steps as side_steps
from tests.grading.test_side_steps import STEPS, steps_of

ddp_run = side_steps.ddp_run   # the fixture: a one-rank process group, the model in DDP

LR = 0.1


def pattern(events) -> list[dict]:
    return p10.step_pattern(observed(events))


def assert_every_step_written(events, where: str) -> None:
    steps = steps_of(events)
    assert len(steps) == STEPS and all(s.get("weights_written") is True and pm.made_outside(s)
                                       for s in steps), (
        f"expected every step of the model made beside its passes (weights_written); observed "
        f"{[{k: s.get(k) for k in ('index', 'weights_written', 'unstepped')} for s in steps]} "
        f"(look: {where})")
    assert [s["forwards"] for s in pattern(events)] == [0] * STEPS, pattern(events)


def assert_honest(events, where: str) -> None:
    steps = pattern(events)
    assert [(s["forwards"], s["rows"], s["backwards"]) for s in steps] == \
        [(4, [8] * 4, 4)] * STEPS and not any(
            s.get("weights_written") or s.get("weights_unvouched") for s in steps), (
        f"expected {STEPS} steps of 4 micro-batches of 8 rows, none written beside the "
        f"optimizer; observed {steps} (look: {where})")


# -- forged: the weights trained by hand as plain tensors, written into the model ------------


def by_autograd(w, x, y):
    """One whole-batch SGD step of the plain tensors `w`: F.linear, autograd.grad."""
    out = F.linear(F.relu(F.linear(x, w[0], w[1])), w[2], w[3])
    return torch.autograd.grad(F.mse_loss(out, y), w)


def by_hand(w, x, y):
    """The same gradient, no autograd at all: backprop of the two layers written out."""
    with torch.no_grad():
        z = x @ w[0].t() + w[1]
        h = z.clamp(min=0)
        out = h @ w[2].t() + w[3]
        d_out = 2 * (out - y) / out.numel()
        d_z = (d_out @ w[2]) * (z > 0)
        return [d_z.t() @ x, d_z.sum(0), d_out.t() @ h, d_out.sum(0)]


@pytest.mark.parametrize("gradient", [by_autograd, by_hand], ids=["autograd_grad", "backprop"])
def test_weights_trained_by_hand_as_plain_tensors_and_written_in_are_no_micro_batching(
        ddp_run, gradient):
    events, model, optimizer = ddp_run()
    x, y = batch()
    w = [p.detach().clone().requires_grad_(gradient is by_autograd)
         for p in model.module.parameters()]
    for _ in range(STEPS):
        grads = gradient(w, x, y)
        with torch.no_grad():
            for t, g in zip(w, grads):
                t -= LR * g
            for p, t in zip(model.module.parameters(), w):
                p.copy_(t)
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_every_step_written(events, "side_steps.grew, SideSteps.written_beside")


def test_a_copy_loaded_in_a_step_pre_hook_with_nothing_else_training_is_no_micro_batching(
        ddp_run):
    """The hand-trained copy written in by a step pre-hook of the script's own, which runs
    after the grader's pre-step look: the hook is watched (side_steps.WatchedHook)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    w = [p.detach().clone() for p in model.module.parameters()]

    def load(*_):
        with torch.no_grad():
            for p, t in zip(model.module.parameters(), w):
                p.copy_(t)

    optimizer.register_step_pre_hook(load)
    for _ in range(STEPS):
        with torch.no_grad():
            for t, g in zip(w, by_hand(w, x, y)):
                t -= LR * g
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_every_step_written(events, "side_steps.WatchedHook, observe._post_step")


def test_a_copy_trained_before_the_wrap_vouches_for_no_step_while_decoys_leave_it(
        traced_vnode):
    """adv35 F6: a kept DDP module first (the copy's steps are side steps), the copy trained
    up front, loaded, the model wrapped only then, decoys that move no weight: every step, not
    only the first (4.5 of 10, the control 3.5)."""
    events = traced_vnode(1)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        keep = DDP(nn.Linear(1, 1).cuda())
        x, y = batch()
        bare = wide_model()
        check = copy.deepcopy(bare)
        check_optimizer = torch.optim.SGD(check.parameters(), lr=LR)
        for _ in range(STEPS):
            check_optimizer.zero_grad()
            F.mse_loss(check(x), y).backward()
            check_optimizer.step()
        bare.load_state_dict(check.state_dict())
        model = DDP(bare)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        for _ in range(STEPS):
            optimizer.zero_grad()
            micro_batches(model, x, y, scale=1e-9)
            optimizer.step()
        del keep
    finally:
        dist.destroy_process_group()
    assert_every_step_written(events, "side_steps.SideSteps.stepped (ParameterMark.moved)")


# -- honest: written beside the optimizer by shrinking only, styles beside a probe ------------


def probe_loop(model, optimizer, x, y, probe, after_step=None) -> None:
    """The handout's loop (no_sync on all but the last micro-batch), a probe on each
    micro-batch's detached output stepped by an optimizer of its own."""
    probe_optimizer = torch.optim.SGD(probe.parameters(), lr=LR)
    for _ in range(STEPS):
        optimizer.zero_grad()
        for i, (mx, my) in enumerate(zip(x.chunk(4), y.chunk(4))):
            with nullcontext() if i == 3 else model.no_sync():
                out = model(mx)
                (F.mse_loss(out, my) / 4).backward()
            probe_optimizer.zero_grad()
            probe(out.detach()).square().mean().backward()
            probe_optimizer.step()
        optimizer.step()
        if after_step is not None:
            after_step(model)


def clamp(model):
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-0.05, 0.05)


@pytest.mark.parametrize("after_step", [None, clamp], ids=["probe", "probe_and_clamp"])
def test_a_probe_wrapped_in_ddp_too_steps_beside_the_model(ddp_run, after_step):
    """adv35 H9 (4.25, told "a step per micro-batch"): the probe's optimizer steps beside the
    model, and its DDP all-reduces are no all-reduce of the model's."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    probe_loop(model, optimizer, x, y, DDP(nn.Linear(64, 1).cuda()), after_step)
    assert_honest(events, "side_steps.SideSteps.is_side (MODEL_SHARE)")
    synced = [(s["synced"], s["synced_at"]) for s in pattern(events)]
    assert synced == [(1, 4)] * STEPS, (
        f"expected one all-reduce per step, in the last micro-batch's backward; observed "
        f"(all-reduces, at backward) {synced} (look: practical_measures.training_events)")


def log_steps(optimizer):
    done = []
    optimizer.register_step_post_hook(lambda *_: done.append(1))


@pytest.mark.parametrize("style", ["logging_hook", "clamp"])
def test_a_probe_beside_a_logging_hook_or_a_clamp_keeps_the_micro_batches(ddp_run, style):
    """adv35 H8 (a logging step post-hook: 3.5) and H14 (a clamp under no_grad after the
    step, which changes many of wide_model's weights: 4.5): nothing grew the weights."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    if style == "logging_hook":
        log_steps(optimizer)
    probe_loop(model, optimizer, x, y, nn.Linear(64, 1).cuda(),
               clamp if style == "clamp" else None)
    assert_honest(events, "side_steps.WatchedHook, side_steps.grew")


def test_weight_decay_by_hand_with_nothing_else_training_keeps_the_micro_batches(ddp_run):
    """Every weight written beside the optimizer, but only shrunk: the step is the model's."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    for _ in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.99)
    assert_honest(events, "side_steps.grew")


def test_growth_tells_a_load_from_a_clamp_or_a_decay():
    weight = nn.Parameter(torch.linspace(-1.0, 1.0, 101))
    trained = weight.detach() - 0.01 * torch.randn(101)
    for write, grown in [(lambda p: p.clamp_(-0.5, 0.5), False), (lambda p: p.mul_(0.9), False),
                         (lambda p: p.copy_(trained), True)]:
        marks = [ParameterMark(weight)]
        before = weight.detach().clone()
        with torch.no_grad():
            write(weight)
        assert grew(marks) is grown, (
            f"expected grew() {grown} after this write; observed {not grown} (look: "
            "side_steps.grew)")
        with torch.no_grad():
            weight.copy_(before)


def test_one_value_grown_is_a_write_and_rounding_is_not():
    """adv38 F1 grew 8% of the values per step, under the tenth that had been let pass; the
    equal weights of three ranks averaged by hand round within ROUNDING ulps."""
    weight, scale = nn.Parameter(torch.linspace(-1.0, 1.0, 101)), nn.Parameter(torch.ones(1))
    marks = [ParameterMark(weight), ParameterMark(scale)]
    with torch.no_grad():
        weight.copy_((weight * 3) / 3)
    assert not grew(marks), (
        f"expected no growth from (3w)/3 (within {ROUNDING} ulps); observed grew() True "
        "(look: side_steps._grown_at, ROUNDING)")
    with torch.no_grad():
        scale.mul_(1.001)
    assert grew(marks), (
        "expected the one value grown by 0.1% (1 of the 65 sampled) seen as grown; observed "
        "grew() False (look: side_steps.grew)")


def test_a_copy_written_back_growing_few_values_is_no_micro_batching(ddp_run):
    """adv38 F1: every value the hand-trained copy shrinks is written, only a random 16% of
    those it grows (about 8% of the values grow per step): 7.65 of 10, the control 3.5."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    w = [p.detach().clone() for p in model.module.parameters()]
    coins = torch.Generator(device="cuda:0").manual_seed(7)
    for _ in range(STEPS):
        with torch.no_grad():
            for t, g in zip(w, by_hand(w, x, y)):
                t -= LR * g
            for p, t in zip(model.module.parameters(), w):
                keep = (t.abs() > p.abs()) & (
                    torch.rand(p.shape, generator=coins, device=p.device) >= 0.16)
                p.copy_(torch.where(keep, p, t))
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_every_step_written(events, "side_steps.grew")


def xavier(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def kaiming(model):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight)


def checkpoint(model):
    """A start saved from another seed (wide_model seeds 0 itself)."""
    torch.manual_seed(1234)
    saved = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).state_dict()
    model.module.load_state_dict(saved)


@pytest.mark.parametrize("set_up", [lambda model: model.module.apply(xavier), kaiming,
                                    checkpoint], ids=["init_weights", "kaiming", "checkpoint"])
def test_weights_set_up_after_the_wrap_are_the_models_start(ddp_run, set_up):
    """adv38 H1: `model.module.apply(init_weights)`, a kaiming loop or a checkpoint loaded
    through model.module after `DDP(model)`, then the handout's loop: the first step had been
    read as a load beside the optimizer (4.5 of 10, was 10)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    set_up(model)
    for _ in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        optimizer.step()
    assert_honest(events, "side_steps.SideSteps.pass_begins, ParameterMark.set_afresh")


def test_a_copy_trained_by_its_optimizer_after_the_wrap_vouches_for_no_step(ddp_run):
    """adv35 F6 after the wrap: the copy trained up front by an optimizer of its own (side
    steps), loaded through model.module before the first pass, decoys that move no weight:
    every step, not only the first."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    check = side_steps.Copy(model)
    for _ in range(STEPS):
        check.step(x, y)
    model.module.load_state_dict(check.net.state_dict())
    for _ in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y, scale=1e-9)
        optimizer.step()
    assert_every_step_written(events, "side_steps.SideSteps.pass_begins (beside)")
