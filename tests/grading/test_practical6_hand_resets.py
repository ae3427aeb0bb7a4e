"""Practical 6: gradients thrown away by hand are resets, as optimizer.zero_grad() is.

A rank's share is the rows of the passes that train its step, after the last reset of the
step (step_batches; adv40 H4: an untimed warm-up forward and backward before the loop, its
gradients thrown away). Only `zero_grad()` calls were recorded, so a student who writes the
common `for p in model.parameters(): p.grad = None` (or `p.grad.zero_()`, after `detach_()`,
or `p.grad = torch.zeros_like(p)`) for the warm-up and for every step had the warm-up's rows
counted into the first step: 64 rows on each of 2 ranks, per_rank_batch and different_data
lost (the adv40 H4 script so written graded 7.5 of 12, optimizer.zero_grad() 9.75). The
trace now reads those resets from the gradients themselves (grader/vgpu/grad_resets.py).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from tests.grading.test_practical6_accumulated_share import different_data_check, ranks_of

IN, OUT, SHARE = 12, 5, 32


def throw_away(model, optimizer, spare, style: str) -> None:
    """The gradients of `model` thrown away as `style` writes it."""
    if style == "optimizer.zero_grad()":
        optimizer.zero_grad()
    elif style == "another optimizer's zero_grad()":
        spare.zero_grad()
    elif style == "model.zero_grad(set_to_none=True)":
        model.zero_grad(set_to_none=True)
    for p in model.parameters():
        if style == "p.grad = None":
            p.grad = None
        elif style == "p.grad.zero_()" and p.grad is not None:
            p.grad.zero_()
        elif style == "p.grad.detach_(); p.grad.zero_()" and p.grad is not None:
            p.grad.detach_()
            p.grad.zero_()
        elif style == "p.grad = torch.zeros_like(p)":
            p.grad = torch.zeros_like(p)


RESETS = ["optimizer.zero_grad()", "another optimizer's zero_grad()",
          "model.zero_grad(set_to_none=True)", "p.grad = None", "p.grad.zero_()",
          "p.grad.detach_(); p.grad.zero_()", "p.grad = torch.zeros_like(p)"]


def train(style: str, steps: int = 2, warm_up: bool = True, keep: str | None = None):
    """One rank: an untimed warm-up forward and backward on rows of its own (adv40 H4), its
    gradients thrown away as `style` writes it, then `steps` steps on the share, each
    beginning with the same reset. `keep`: instead of a reset, what the script does to the
    gradients that is none (clips them, or zeroes one layer's only)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    spare = torch.optim.SGD(model.parameters(), lr=0.1)   # the same parameters
    if warm_up:
        model(torch.randn(SHARE, IN, device="cuda:0")).pow(2).mean().backward()
        if keep == "clip":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
        elif keep == "one layer":
            model[0].weight.grad = None
        else:
            throw_away(model, optimizer, spare, style)
    x = torch.randn(SHARE, IN).to("cuda:0")
    for _ in range(steps):
        if keep is None:
            throw_away(model, optimizer, spare, style)
        model(x).pow(2).mean().backward()
        optimizer.step()


def ranks_run(traced_vnode, processes=2, **style) -> Observation:
    events = traced_vnode(1)
    train(**style)
    return ranks_of(events, processes)


@pytest.mark.parametrize("style", RESETS)
def test_a_warm_up_thrown_away_by_hand_trains_none_of_the_first_step(traced_vnode,
                                                                     monkeypatch, style):
    run = ranks_run(traced_vnode, style=style)
    assert p6.first_batches(run) == {0: SHARE, 1: SHARE}, (
        f"expected each rank's first step to train on its {SHARE} rows, the warm-up's "
        f"gradients thrown away by `{style}`; observed {p6.first_batches(run)} rows per step "
        "(a reset the trace did not record as a zero_grad: grader/vgpu/grad_resets.py)")
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: run)
    p6.test_each_rank_trains_on_its_share(None, 2)
    different_data_check(monkeypatch, run, 2)


@pytest.mark.parametrize("style", RESETS[3:])
def test_a_reset_by_hand_is_recorded_once_before_the_next_pass(traced_vnode, style):
    events = traced_vnode(1)
    train(style, steps=2)
    kinds = [e["event"] for e in events if e.get("event") in ("zero_grad", "forward")]
    # The first step's reset finds no gradient left (the warm-up's are gone): nothing to tell.
    assert kinds == ["forward", "zero_grad", "forward", "zero_grad", "forward"], (
        f"expected `{style}` after the warm-up and after the first step to be recorded as a "
        f"zero_grad each, once, before the next forward; observed {kinds}")
    assert all(e.get("owner") == "by hand" for e in events if e.get("event") == "zero_grad")


@pytest.mark.parametrize("keep", ["clip", "one layer"])
def test_gradients_changed_but_kept_are_no_reset(traced_vnode, keep):
    """Clipped gradients, or one layer's thrown away and the other's kept: the warm-up still
    trains the first step (the model's gradients are not all gone)."""
    events = traced_vnode(1)
    train("p.grad = None", steps=1, keep=keep)
    resets = [e for e in events if e.get("event") == "zero_grad"]
    assert not resets, f"expected no reset recorded ({keep}); observed {resets}"


class Holder(nn.Module):
    """A module of the script's own that only holds the model (as DDP does): both are models
    of the trace, sharing their parameters."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def test_a_reset_by_hand_covers_a_model_and_the_module_holding_it(traced_vnode):
    events = traced_vnode(1)
    torch.manual_seed(0)
    model = Holder(nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT))).to("cuda:0")
    model(torch.randn(SHARE, IN, device="cuda:0")).pow(2).mean().backward()
    for p in model.parameters():
        p.grad = None
    model(torch.randn(SHARE, IN, device="cuda:0")).pow(2).mean().backward()
    seen = {e["model"] for e in events if e.get("event") == "forward" and "model" in e}
    resets = [e.get("models") for e in events if e.get("event") == "zero_grad"]
    assert len(seen) == 2 and resets == [sorted(seen)], (
        f"expected one reset of both models {sorted(seen)} (the holder and the model it holds "
        f"share their parameters); observed {resets} (grad_resets.GradResets.thrown_away)")
