"""DDP's synchronisation read from the gradient it reduced, not from its buckets' holding
(red team adv56 F0, F1, F4, F6, F7).

- Frozen at step time (F0/F1/F7): `requires_grad_(False)` on an unwrapped model around
  `optimizer.step()`, a dummy `DDP(nn.Linear(1, 1))` beside it: SGD still steps the model (it
  has a `.grad`), which had read as no stepped parameter at all, so the dummy's bucket held
  "all" of the step (P6 8.5 of 12, a TA 5.5; P10 10 = the reference).
- Two backwards (F4): a 0.0-weighted backward through DDP all-reduces zeros, then
  `model.module`'s own backward trains each rank unsynchronised: every parameter was in a
  bucket (8.5 of 12).
- The first step through DDP, then the model alone: the first step's all-reduce had been
  read again by every later step.
- A model trained by hand (F6): the optimizer over a dummy DDP only, the model updated by
  `p -= LR * p.grad` under no_grad (9.5 of 12, a TA about 5.5); the same update done before
  `optimizer.step()` with `.grad` cleared, or between micro-batches (adv57 F-H: 9.5 again).

Their honest twins keep `synced` 1: a frozen layer, clipping, a loss scaled and `.grad`
unscaled (GradScaler's way), Practical 10's no_sync micro-batches, accumulation through DDP
without no_sync, a copy of the model run on the batch to check a gradient (reloaded from the
model before and after the step too); a probe trained by hand beside a model in DDP keeps the
step synchronised. The runtime's reading runs in-process on virtual GPUs (a gloo group of one
rank: DDP's all-reduce runs).
"""
from __future__ import annotations

import copy
from contextlib import nullcontext

import pytest
import torch
import torch.nn as nn

from grader.checks.practical_measures import synced_step
from tests.vgpu import test_ddp_buckets

DIM, HIDDEN, LR = 8, 16, 0.01

one_rank_group = test_ddp_buckets.one_rank_group


def steps_of(traced_vnode, one_rank_group, loop) -> list[dict]:
    """The step records of `loop(model, x, y)` run for 3 steps on a virtual GPU in a DDP group
    of one rank."""
    events = traced_vnode(1)
    one_rank_group()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM)).cuda()
    x, y = torch.randn(16, DIM, device="cuda:0"), torch.randn(16, DIM, device="cuda:0")
    loop(model, x, y)
    return [e for e in events if e.get("event") == "step"]


def ddp(module):
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(module, device_ids=[0])


def mse(out, y):
    return nn.functional.mse_loss(out, y)


# -- forgeries ------------------------------------------------------------------------------

def frozen_at_step(model, x, y):
    head, ones = ddp(nn.Linear(1, 1).cuda()), torch.ones(1, 1, device="cuda:0")
    optimizer = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        (mse(model(x), y) + 0.0 * head(ones).sum()).backward()
        model.requires_grad_(False)
        optimizer.step()
        model.requires_grad_(True)


def two_backwards(model, x, y):
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        (0.0 * wrapped(x).sum()).backward()   # DDP all-reduces zeros
        mse(wrapped.module(x), y).backward()   # the gradient stepped, never all-reduced
        optimizer.step()


def first_step_only(model, x, y):
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for step in range(3):
        optimizer.zero_grad()
        mse((wrapped if step == 0 else model)(x), y).backward()
        optimizer.step()


def trained_by_hand(model, x, y):
    head, ones = ddp(nn.Linear(1, 1).cuda()), torch.ones(1, 1, device="cuda:0")
    optimizer = torch.optim.SGD(head.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        model.zero_grad()
        (mse(model(x), y) + 1e-6 * head(ones).sum()).backward()
        optimizer.step()
        with torch.no_grad():
            for p in model.parameters():
                p -= LR * p.grad
                p.grad = None


def trained_by_hand_before_step(model, x, y):   # adv57 F-H: .grad cleared before the step
    head, ones = ddp(nn.Linear(1, 1).cuda()), torch.ones(1, 1, device="cuda:0")
    optimizer = torch.optim.SGD(head.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        (mse(model(x), y) + 1e-6 * head(ones).sum()).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= LR * p.grad
                p.grad = None
        optimizer.step()


def trained_by_hand_per_micro_batch(model, x, y):   # the hand step between two backwards
    head, ones = ddp(nn.Linear(1, 1).cuda()), torch.ones(1, 1, device="cuda:0")
    optimizer = torch.optim.SGD(head.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        for xm, ym in zip(x.chunk(2), y.chunk(2)):
            (mse(model(xm), ym) + 1e-6 * head(ones).sum()).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= LR * p.grad
                    p.grad = None
        optimizer.step()


# -- honest twins ---------------------------------------------------------------------------

def plain(model, x, y, before_step=lambda m: None, scale=1.0):
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        (scale * mse(wrapped(x), y)).backward()
        before_step(wrapped)
        optimizer.step()


def own_comm_hook(model, x, y):   # a hook of the script's own (fp16 compression)
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    wrapped = ddp(model)
    wrapped.register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        mse(wrapped(x), y).backward()
        optimizer.step()


def frozen_layer(model, x, y):
    model[0].requires_grad_(False)
    plain(model, x, y)


def clipped(model, x, y):
    plain(model, x, y, lambda m: nn.utils.clip_grad_norm_(m.parameters(), 1e-3))


def unscaled(model, x, y):   # GradScaler's way by hand: the loss scaled, .grad unscaled
    def unscale(m):
        for p in m.parameters():
            p.grad.div_(1024.0)
    plain(model, x, y, unscale, scale=1024.0)


def no_sync_micro_batches(model, x, y):
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        for i, (xm, ym) in enumerate(zip(x.chunk(4), y.chunk(4))):
            with nullcontext() if i == 3 else wrapped.no_sync():
                (mse(wrapped(xm), ym) / 4).backward()
        optimizer.step()


def accumulated_through_ddp(model, x, y):   # every micro-batch all-reduced (no no_sync)
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        for xm, ym in zip(x.chunk(2), y.chunk(2)):
            (mse(wrapped(xm), ym) / 2).backward()
        optimizer.step()


def copy_checked(model, x, y):   # Practical 10's claim checked on a copy (adv31 H1)
    wrapped = ddp(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    reference = copy.deepcopy(model)
    for _ in range(3):
        optimizer.zero_grad()
        mse(wrapped(x), y).backward()
        reference.load_state_dict(model.state_dict())
        reference.zero_grad()
        mse(reference(x), y).backward()
        optimizer.step()


def copy_checked_then_reloaded(model, x, y):   # the copy refreshed after its check, before
    wrapped = ddp(model)                          # the step, and after the step
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    reference = copy.deepcopy(model)
    for _ in range(3):
        optimizer.zero_grad()
        mse(wrapped(x), y).backward()
        reference.zero_grad()
        mse(reference(x), y).backward()
        reference.load_state_dict(model.state_dict())
        optimizer.step()
        reference.load_state_dict(model.state_dict())


def probe_trained_by_hand(model, x, y):   # 127e13f: a small probe beside a model in DDP
    wrapped, probe = ddp(model), nn.Linear(DIM, 1).cuda()
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=LR)
    for _ in range(3):
        optimizer.zero_grad()
        (mse(wrapped(x), y) + probe(x).pow(2).mean()).backward()
        with torch.no_grad():
            for p in probe.parameters():
                p -= LR * p.grad
                p.grad = None
        optimizer.step()


FORGERIES = [frozen_at_step, two_backwards, first_step_only, trained_by_hand,
             trained_by_hand_before_step, trained_by_hand_per_micro_batch]
HONEST = [plain, own_comm_hook, frozen_layer, clipped, unscaled, no_sync_micro_batches,
          accumulated_through_ddp, copy_checked, copy_checked_then_reloaded]


def said(steps) -> list:
    return [(s.get("synced"), s.get("synced_elements")) for s in steps]


@pytest.mark.parametrize("loop", FORGERIES, ids=lambda f: f.__name__)
def test_forged_synchronisation_reads_unsynced(traced_vnode, one_rank_group, loop):
    steps = steps_of(traced_vnode, one_rank_group, loop)
    # The hand update is seen at the step after it: the first step's record cannot know;
    # first_step_only's first step is DDP's.
    judged = steps[1:] if loop in (trained_by_hand, first_step_only) else steps
    assert len(steps) == 3 and not any(synced_step(s) for s in judged), (
        f"Expected: {loop.__name__}'s steps read as not synchronised (synced under a half). "
        f"Observed (synced, synced_elements) per step: {said(steps)}. Where to look: "
        "grader/vgpu/synced_grads.py step_fields, grader/vgpu/hand_steps.py")
    if loop in (trained_by_hand, trained_by_hand_before_step, trained_by_hand_per_micro_batch):
        assert all(s.get("trained_by_hand") for s in judged), (
            f"Expected: {loop.__name__}'s steps (after the first where the update follows "
            "the step) say the model was trained by hand "
            f"(trained_by_hand). Observed: {[s.get('trained_by_hand') for s in steps]}. "
            "Where to look: grader/vgpu/hand_steps.py")


@pytest.mark.parametrize("loop", HONEST, ids=lambda f: f.__name__)
def test_honest_ddp_reads_synced(traced_vnode, one_rank_group, loop):
    steps = steps_of(traced_vnode, one_rank_group, loop)
    assert len(steps) == 3 and all(s.get("synced", 0) >= 0.99 and synced_step(s)
                                   for s in steps), (
        f"Expected: {loop.__name__} (honest) reads synchronised at every step (synced 1). "
        f"Observed (synced, synced_elements) per step: {said(steps)}. Where to look: "
        "grader/vgpu/synced_grads.py step_fields (the reduced gradient kept per parameter, "
        "compared by direction)")
    assert not any(s.get("trained_by_hand") for s in steps), (
        f"Expected: nothing of {loop.__name__} (honest) reads as trained by hand. Observed: "
        f"{[s.get('trained_by_hand') for s in steps]}. Where to look: grader/vgpu/hand_steps.py")


def test_a_rank_that_trained_by_hand_trained_nothing_through_ddp():
    """adv56 F6: the hand update is seen from the second step on; the first step reads
    synchronised, which had kept the answers about DDP (ddp_trained: one step suffices)."""
    from grader.checks import test_practical6 as p6
    from tests.grading.test_practical6_non_solutions import traced
    run = traced(all_reduced_steps=range(3))
    assert p6.ddp_trained(run)
    for event in run.events:
        if event.get("event") == "step" and event["index"] > 1:
            event.update(synced=0.0, trained_by_hand=280)
    assert not p6.ddp_trained(run), (
        "Expected: a rank whose steps say trained_by_hand did not train through DDP. "
        "Where to look: test_practical6.py ddp_trained")
    for event in run.events:   # a small probe trained by hand beside the model in DDP
        if event.get("event") == "step" and event["index"] > 1:
            event.update(synced=0.98, synced_elements=0.99, trained_by_hand=9)
    assert p6.ddp_trained(run), (
        "Expected: a step trained partly by hand that stays synchronised (synced 0.98) keeps "
        "the rank's DDP training. Where to look: test_practical6.py ddp_trained")


def test_dataparallel_share_counts_a_model_frozen_at_step_time():
    """P5's reading has the same rule (replica_grads.py): a small wrapped layer's gradient
    comes back through the replicas, the model beside it is frozen around optimizer.step()
    and still stepped (its .grad): its elements are stepped, none replicated."""
    from grader.vgpu.replica_grads import ReplicaGradients
    readings = ReplicaGradients()
    wrapped, model = torch.ones(2, requires_grad=True), torch.ones(1000, requires_grad=True)
    readings.broadcast([wrapped])
    readings.reduced([torch.ones(2)])
    wrapped.grad, model.grad = torch.ones(2), torch.ones(1000)
    model.requires_grad_(False)
    fields = readings.step_fields([wrapped, model], 1002.0)
    assert fields["dp_held"] < 0.01, (
        "Expected: a parameter with a .grad is stepped whatever its requires_grad at the step "
        f"(dp_held about 0.002). Observed: {fields}. Where to look: grader/vgpu/replica_grads.py "
        "step_fields")


def test_a_probe_trained_by_hand_keeps_the_step_synchronised(traced_vnode, one_rank_group):
    """A probe trained by hand before the step, beside a model in DDP (127e13f's honest case,
    now seen at the step it was trained in): its steps say trained_by_hand, and stay
    synchronised."""
    steps = steps_of(traced_vnode, one_rank_group, probe_trained_by_hand)
    assert len(steps) == 3 and all(synced_step(s) for s in steps), (
        "Expected: a model in DDP with a probe trained by hand beside it reads synchronised "
        f"(synced_step). Observed (synced, synced_elements) per step: {said(steps)}. Where to "
        "look: grader/checks/practical_measures.py synced_step, grader/vgpu/hand_steps.py")
    assert all(s.get("trained_by_hand") == DIM + 1 for s in steps), (
        f"Expected: each step counts the probe's {DIM + 1} elements as trained by hand. "
        f"Observed: {[s.get('trained_by_hand') for s in steps]}. Where to look: "
        "grader/vgpu/hand_steps.py")
