"""Practical 10: a GPU is a stage only where its layers carry the pass by more than rounding.

A one-stage replica on cuda:r with a spare nn.Linear on cuda:r+2 whose result is added as
`x + 1e-6 * spare(x)` (adv46 p10_spare_eps) got a gradient back to the spare, 1e-6 the size, and
the gradient watch counted its GPU as a stage: the two-stage layout's 10 of 12 where the
one-stage replica earns 7.25. The watch now weighs each layer output by its first-order part in
the outputs it feeds (norm times gradient's norm, step by step toward the pass's output:
grader/vgpu/observe.py _GradWatch.share); a GPU whose outputs carry less than _CARRY_SHARE of
the pass is read as one that got zeros, and the student is told what was seen. Honest stages
keep their GPUs however deep (16 Linear layers a stage with ReLU, tanh or sigmoid: a sigmoid
stage shrinks the gradient 7 times a layer), with LayerNorm and Dropout, an LSTM, a residual.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical10 as p10
from grader.vgpu import observe
from tests.grading import test_practical10_stage_rows as stage_rows
from tests.grading.test_practical10_stage_rows import CUDA0, CUDA2, DIM, HIDDEN, trained

COURSE_DIM = 512   # the handout's DIM


class SpareTimesEps(nn.Module):
    """adv46 p10_spare_eps: every layer on cuda:0, a spare on cuda:2 fed the whole micro-batch
    (cut into rows of DIM / 2), its result added times 1e-6."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA0)
        self.spare = nn.Linear(DIM // 2, DIM // 2).to(CUDA2)

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = self.spare(x.reshape(x.shape[0] * 2, -1).to(CUDA2))
        x = x.to(CUDA2)
        return x + 1e-6 * side.reshape(x.shape)


class SpareBackThroughStage0(SpareTimesEps):
    """The spare's result handed to a layer on cuda:0 before its 1e-6 reaches the output: that
    layer carries the spare's result whole, and 1e-6 of the pass."""

    def __init__(self):
        super().__init__()
        self.back = nn.Linear(DIM, DIM).to(CUDA0)

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = self.spare(x.reshape(x.shape[0] * 2, -1).to(CUDA2)).reshape(x.shape)
        return (x + 1e-6 * self.back(side.to(CUDA0))).to(CUDA2)


class OwnSpareTimesEps(nn.Module):
    """The spare as the model's own parameter on cuda:2, used on every row, times 1e-6."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA0)
        self.w = nn.Parameter(torch.randn(DIM, DIM, device=CUDA2) / DIM ** 0.5)

    def forward(self, x):
        x = self.stage0(x.to(CUDA0)).to(CUDA2)
        return x + 1e-6 * (x @ self.w)


@pytest.mark.parametrize("model_class", [SpareTimesEps, SpareBackThroughStage0, OwnSpareTimesEps],
                         ids=["a spare added times 1e-6", "through a layer on cuda:0",
                              "an own parameter times 1e-6"])
def test_a_spare_whose_result_is_added_times_1e_6_is_no_stage(traced_vnode, model_class):
    run = trained(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    faint = [p["grad_faint"] for p in passes]
    assert passes and all(set(f) == {"cuda:2"} and f["cuda:2"] < 1e-4 for f in faint), (
        f"expected each training pass to record cuda:2 as carrying about 1e-6 of the pass "
        f"(grad_faint); observed {faint}; where to look: grader/vgpu/observe.py "
        "_GradWatch.share")
    stages = p10.stage_gpus(run, 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 (the spare on cuda:2 changes the output by 1e-6 of it); "
        f"observed {stages}; where to look: test_practical10.stage_gpus")
    note = p10.faint_note(run, [0])
    assert "the layers on cuda:2 change the pass's output by about 1e-06 of it" in note, (
        f"expected the student told what was seen on cuda:2; observed {note!r}; where to look: "
        "test_practical10.faint_note")


def deep(activation, layers=16, extra=(), width=DIM):
    """`layers` Linear layers of `width`, each followed by `activation` and `extra` modules."""
    return nn.Sequential(*[m for _ in range(layers) for m in (
        nn.Linear(width, width), activation(), *(e() for e in extra))])


class DeepStages(nn.Module):
    def __init__(self, activation=nn.ReLU, extra=(), width=DIM):
        super().__init__()
        self.stage0 = deep(activation, extra=extra, width=width).to(CUDA0)
        self.stage1 = deep(activation, extra=extra, width=width).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class DeepSigmoid(DeepStages):
    def __init__(self):
        super().__init__(nn.Sigmoid)


class DeepTanh(DeepStages):
    def __init__(self):
        super().__init__(nn.Tanh)


class NormalizedStages(DeepStages):
    def __init__(self):
        super().__init__(nn.ReLU, (lambda: nn.LayerNorm(DIM), lambda: nn.Dropout(0.1)))


class LSTMStage(nn.Module):
    """Stage 1 a batch-first nn.LSTM over the rows cut into 2 steps."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.LSTM(DIM // 2, DIM // 2, batch_first=True).to(CUDA2)

    def forward(self, x):
        steps = self.stage0(x.to(CUDA0)).to(CUDA2).reshape(x.shape[0], 2, -1)
        return self.stage1(steps)[0].reshape(x.shape[0], -1)


class ResidualStage(nn.Module):
    """Stage 1 a residual block: its input added to what its layers make of it."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA2)

    def forward(self, x):
        x = self.stage0(x.to(CUDA0)).to(CUDA2)
        return x + self.stage1(x)


@pytest.mark.parametrize("model_class", [DeepStages, DeepSigmoid, DeepTanh, NormalizedStages,
                                         LSTMStage, ResidualStage],
                         ids=["16 Linear+ReLU a stage", "16 Linear+Sigmoid a stage",
                              "16 Linear+Tanh a stage", "LayerNorm and Dropout", "an LSTM stage",
                              "a residual stage"])
def test_honest_deep_stages_carry_the_pass_on_both_gpus(traced_vnode, model_class):
    run = trained(traced_vnode, model_class)
    passes = [p for p in p10.forward_passes(run) if p["trains"]]
    shares = [e.get("share") for e in run.events if e.get("event") == "grad_used"]
    assert passes and all(not p["grad_faint"] and not p["grad_unused"] for p in passes), (
        f"expected every training pass of {model_class.__name__} to carry its pass on both "
        f"GPUs; observed faint {[p['grad_faint'] for p in passes]}, unused "
        f"{[p['grad_unused'] for p in passes]}; where to look: grader/vgpu/observe.py "
        "_GradWatch.share")
    # Some margin at the tests' width of 8 (16 LayerNorms over 8 numbers carry 0.015 at the
    # least); the course's width has 100x (test_a_deep_sigmoid_stage_at_the_course_width...).
    known = [s for s in shares if s is not None]
    assert known and min(known) >= 10 * observe._CARRY_SHARE, (
        f"expected the shares of {model_class.__name__}'s GPUs at least 10 x _CARRY_SHARE "
        f"({10 * observe._CARRY_SHARE:g}); observed {sorted(set(known))[:5]}")
    assert p10.stage_gpus(run, 0) == [0, 2]


class WideSigmoid(DeepStages):
    """The least share measured of an honest stage: 16 Linear+Sigmoid layers of the handout's
    DIM a stage, the gradient shrinking 7 times a layer."""

    def __init__(self):
        super().__init__(nn.Sigmoid, width=COURSE_DIM)


def test_a_deep_sigmoid_stage_at_the_course_width_carries_100x_the_threshold(traced_vnode,
                                                                             monkeypatch):
    monkeypatch.setattr(stage_rows, "DIM", COURSE_DIM)
    run = trained(traced_vnode, WideSigmoid)
    shares = [e.get("share") for e in run.events if e.get("event") == "grad_used"]
    known = [s for s in shares if s is not None]
    assert known and min(known) >= 100 * observe._CARRY_SHARE, (
        f"expected both GPUs' shares at least 100 x _CARRY_SHARE ({100 * observe._CARRY_SHARE:g}:"
        f" the margin the threshold was chosen with); observed {sorted(set(known))[:5]}; where "
        "to look: grader/vgpu/observe.py _CARRY_SHARE")
    assert p10.stage_gpus(run, 0) == [0, 2]
