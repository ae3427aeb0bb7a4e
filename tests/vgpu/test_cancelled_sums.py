"""The value probe's run records a sum whose terms cancel exactly inside a training pass
(grader/vgpu/cancelled.py): a spare's output taken away from a copy of it, however the copy is
spelled (red team adv54 F1: `getattr(side, "det" + "ach")()`, which the scan of the text does
not read). Honest arithmetic inside a pass, the same forgery outside one, and every normal run
record nothing."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.vgpu import perturb

CUDA0 = torch.device("cuda:0")


class Spare(nn.Module):
    """One layer on cuda:0 whose output `join` combines with a copy of itself."""

    def __init__(self, join):
        super().__init__()
        self.layer = nn.Linear(8, 8).to(CUDA0)
        self.join = join

    def forward(self, x):
        return self.join(self.layer(x))


FORGED = {
    "a detach by getattr": lambda side: side - getattr(side, "det" + "ach")(),
    ".data": lambda side: torch.sub(side, side.data),
    "a clone under no_grad": lambda side: side.sub(_no_grad_clone(side)),
    "its negation added": lambda side: side + (-side.detach()),
    "add with alpha -1": lambda side: torch.add(side, side.detach(), alpha=-1),
    "taken back in place": lambda side: _in_place(side),
    "a copy a millionth short": lambda side: side - side.detach() * (1 - 1e-6),
    # adv57 F-C: a leading axis of one on the copy, and the difference taken by `diff`.
    "a copy with a leading axis": lambda side: (side - side.detach().unsqueeze(0)).squeeze(0),
    "a copy indexed with None": lambda side: side[None] - side.detach(),
    "a stack differenced": lambda side: torch.stack([side.detach(), side]).diff(dim=0)[0],
    "a stack differenced, a millionth short":
        lambda side: torch.stack([side.detach() * (1 - 1e-6), side]).diff(dim=0)[0],
    "a stack with the copy negated, summed":
        lambda side: torch.stack([side, -side.detach()]).sum(0),
}
HONEST = {
    "a residual": lambda side: side + side.detach().roll(1, 0),
    "a bias subtracted": lambda side: side - side.detach().mean(0),
    "a zero added": lambda side: side + torch.zeros_like(side),
    "twice itself": lambda side: side + side,
    "a tenth of itself taken away": lambda side: side - 0.1 * side.detach(),
    "a row mean taken away, broadcast": lambda side: side - side.mean(1, keepdim=True),
    "a bias row broadcast": lambda side: side + torch.ones(1, 8, device=CUDA0),
    "a sequence differenced": lambda side: side.diff(dim=0),
    "a stack of two outputs differenced":
        lambda side: torch.stack([side.detach() * 0.5, side]).diff(dim=0)[0],
    "a stack with a copy summed": lambda side: torch.stack([side, side.detach()]).sum(0),
    "a stack of outputs summed": lambda side: torch.stack([side, side.roll(1, 0)]).sum(0),
}


def _no_grad_clone(side):
    with torch.no_grad():
        return side.clone()


def _in_place(side):
    out = side.clone()
    out -= side.detach()
    return out


def cancelled_records(traced_vnode, join, probing=True, grad=True) -> list[dict]:
    events = traced_vnode(4)
    perturb._probe.perturbing = probing
    torch.manual_seed(0)
    model = Spare(join)
    x = torch.randn(4, 8, device=CUDA0)
    with torch.set_grad_enabled(grad):
        out = model(x)
    if grad:
        out.sum().backward()
    return [e for e in events if e.get("event") == "cancelled"]


@pytest.mark.parametrize("join", FORGED.values(), ids=FORGED.keys())
def test_a_value_taken_from_its_copy_is_recorded(traced_vnode, join):
    found = cancelled_records(traced_vnode, join)
    assert len(found) == 1 and found[0]["device"] == "cuda:0" \
        and "test_cancelled_sums.py:" in (found[0]["site"] or ""), (
        f"expected one `cancelled` record on cuda:0 with the script's site; observed {found}; "
        "where to look: grader/vgpu/cancelled.py check, mode.py VirtualGPUMode._route")


@pytest.mark.parametrize("join", HONEST.values(), ids=HONEST.keys())
def test_honest_sums_are_not_recorded(traced_vnode, join):
    found = cancelled_records(traced_vnode, join)
    assert not found, (
        f"expected no `cancelled` record for honest arithmetic in a pass; observed {found}; "
        "where to look: grader/vgpu/cancelled.py check")


def test_only_the_probes_training_passes_are_read(traced_vnode):
    join = FORGED["a detach by getattr"]
    assert not cancelled_records(traced_vnode, join, probing=False), (
        "expected a normal run to record nothing (its adds and subtracts keep their routes)")


def test_an_evaluation_pass_is_not_read(traced_vnode):
    join = FORGED["a detach by getattr"]
    assert not cancelled_records(traced_vnode, join, grad=False), (
        "expected nothing recorded under no_grad: no gradient comes back through it")
