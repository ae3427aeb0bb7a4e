"""Practical 10's invariance item with a class-weighted loss (CrossEntropyLoss(weight=...)).

Such a loss is a mean weighted by its rows' classes: each micro-batch's loss divides by the sum
of its own rows' weights, so the micro-batches' losses divided by MICRO_BATCHES do not add up to
the whole batch's, and the accumulated gradient is not the full-batch one. The item is truly
lost; its feedback had blamed rows left out or zero_grad(). Now the run's trace says where the
loss that reached backward was class-weighted (`loss_class_weights`, read from the autograd
graph, not the source), and the feedback names the weights and the handout's unweighted mean.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.checks import test_practical10 as p10
from tests.grading.test_practical10_non_solutions import Handout, failure, said_all

CLASSES = 64


def weighted_loop(events, loss_of, micro=4) -> list[dict]:
    """One optimizer step of `micro` micro-batches of a classifier, `loss_of(out, target)`
    each divided by `micro`, as the handout's loop does; the trace's loss_class_weights."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, CLASSES)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 16, device="cuda:0")
    y = torch.randint(0, CLASSES, (32,), device="cuda:0")
    for part, target in zip(x.tensor_split(micro), y.tensor_split(micro)):
        (loss_of(model(part), target) / micro).backward()
    optimizer.step()
    return [e for e in events if e["event"] == "loss_class_weights"]


def weights() -> torch.Tensor:
    return torch.linspace(0.5, 1.5, CLASSES, device="cuda:0")


@pytest.mark.parametrize("loss", [
    lambda: nn.CrossEntropyLoss(weight=weights()),
    lambda: (lambda out, target: F.cross_entropy(out, target, weight=weights())),
    lambda: (lambda out, target: F.nll_loss(F.log_softmax(out, dim=1), target, weight=weights())),
], ids=["CrossEntropyLoss", "F.cross_entropy", "F.nll_loss"])
def test_a_class_weighted_mean_loss_is_recorded_once(traced_vnode, loss):
    recorded = weighted_loop(traced_vnode(1), loss())
    assert [(e["loss"], e["classes"]) for e in recorded] == [("NllLossBackward0", CLASSES)], recorded


@pytest.mark.parametrize("loss", [
    lambda: nn.CrossEntropyLoss(),
    lambda: nn.CrossEntropyLoss(weight=torch.ones(CLASSES, device="cuda:0")),   # no class counts more
    lambda: nn.CrossEntropyLoss(weight=weights(), reduction="sum"),             # no mean: no weights' sum
    lambda: (lambda out, target: F.mse_loss(out, F.one_hot(target, CLASSES).float())),
], ids=["unweighted", "equal_weights", "sum", "mse"])
def test_a_loss_without_class_weights_is_not(traced_vnode, loss):
    assert weighted_loop(traced_vnode(1), loss()) == []


class Weighted(Handout):
    """The reference's loop with a class-weighted loss: its one-process runs record the
    weights, and the gradient accumulated over micro-batches differs a little from the full
    batch's (0.995x, as graded on sample.py with CrossEntropyLoss(weight=linspace(0.5, 1.5)))."""

    def __init__(self, recorded=True):
        super().__init__("micro")
        self.recorded = recorded

    def run(self, processes=2, **sets):
        run = super().run(processes, **sets)
        if self.recorded:
            run.events.insert(3, {"event": "loss_class_weights", "rank": 0, "loss": "NllLossBackward0",
                                  "classes": 512, "step": 0})
        if sets.get("MICRO_BATCHES", p10.MICRO) > 1:
            for event in run.events:
                if event.get("event") == "step":
                    event["grads"] = {"sum": 14.61, "sumsq": 0.00545}
        return run


def test_a_class_weighted_loss_is_named_as_why_the_gradient_differs():
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Weighted(), 4)
    said_all(text, "Expected: with MICRO_BATCHES = 4, the gradient accumulated",
             "the accumulated gradient differs from the full-batch gradient",
             "the loss that reached backward is class-weighted (CrossEntropyLoss(weight=...) or "
             "nll_loss with weight=, 512 classes): a weighted loss averages by the weights of its rows' "
             "classes, not over its rows, so the micro-batches' losses divided by MICRO_BATCHES do not "
             "add up to the whole batch's",
             "Where to look: the loss: use an unweighted mean loss, as the handout's sample.py does "
             "(nn.MSELoss(), a mean over the rows), divided by MICRO_BATCHES for every micro-batch")
    assert "rows left out" not in text and "zero_grad" not in text, text


def test_without_class_weights_in_the_run_the_cause_is_as_before():
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Weighted(recorded=False), 4)
    said_all(text, "rows left out, counted twice", "optimizer.zero_grad() once per step")
    assert "weight" not in text, text
