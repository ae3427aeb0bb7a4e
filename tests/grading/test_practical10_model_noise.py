"""Practical 10's invariance item for a model with dropout or batch normalisation (adv49 S1).

The item compares the gradient accumulated over MICRO_BATCHES micro-batches with the full-batch
gradient. With dropout in training mode (other masks in each run) or BatchNorm's batch
statistics (each micro-batch normalised by its own rows) the two differ by a few percent also
where the loop is right: honest scripts lost 2 of 2, told "rows left out, counted twice, ... or
gradients zeroed between micro-batches", false for them. Now the virtual GPUs record that such
layers ran (`model_noise`, grader/vgpu/model_noise.py) and the check compares what stays
comparable (grader/checks/gradient_noise.py): the gradient reaching the micro-batches' outputs,
which shows the loss's division by MICRO_BATCHES, and the zero_grad records. A loop that forgets
the division or zeroes between micro-batches still loses the item; where nothing settles it,
a person grades it (GradedByHand), the cause named.

The runs are real traced loops (the handout's, smaller), run in this process on 2 virtual GPUs.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from grader.checks import test_practical10 as p10
from grader.checks.support import GradedByHand
from grader.harness.observation import Observation
from grader.vgpu import activate, active

DIM, HIDDEN = 32, 64


def dropout_model() -> nn.Module:
    """Two dropouts on stage 1's GPU: its generator's draws interleave otherwise with
    micro-batches than with the whole batch, so the masks differ (one dropout per GPU draws
    the same stream row after row either way)."""
    return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()),
                     nn.Sequential(nn.Dropout(0.2), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                   nn.Dropout(0.2), nn.Linear(HIDDEN, DIM)))


def batch_norm_model() -> nn.Module:
    return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()),
                     nn.Sequential(nn.BatchNorm1d(HIDDEN), nn.Linear(HIDDEN, DIM)))


def plain_model() -> nn.Module:
    return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()),
                     nn.Sequential(nn.Linear(HIDDEN, DIM)))


class TwoStages(nn.Module):
    """The handout's TwoStageModel: stage 0 on cuda:0, stage 1 on cuda:1."""

    def __init__(self, stage0, stage1):
        super().__init__()
        self.stage0, self.stage1 = stage0.to("cuda:0"), stage1.to("cuda:1")

    def forward(self, x):
        return self.stage1(self.stage0(x.to("cuda:0")).to("cuda:1"))


def traced_loop(tmp_path, make_model, micro: int, *, divide=True, zero_each=False, seed=0,
                ddp=False, shift_targets=False, before=None) -> Observation:
    """The handout's loop, one process, one step of `micro` micro-batches, traced on a virtual
    node of its own: `divide` the loss by MICRO_BATCHES, `zero_each` micro-batch's gradients
    away first (a zero_grad inside the loop), the model built after torch.manual_seed(`seed`),
    wrapped in `ddp` (a process group of one rank) or not; `shift_targets`: each micro-batch
    trained on the next one's targets (adv54 F2's bug); `before`: called before the loop."""
    assert active() is None, "a node from an earlier test is still active"
    handle = activate(2, force_virtual=True, trace_path=str(tmp_path / f"trace-{micro}.jsonl"))
    events: list[dict] = []
    handle.trace.listeners.append(events.append)
    try:
        if ddp:
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        torch.manual_seed(seed)
        model = DDP(make_model()) if ddp else make_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        g = torch.Generator().manual_seed(1)
        x = torch.randn(p10.BATCH, DIM, generator=g).to("cuda:0")
        y = torch.randn(p10.BATCH, DIM, generator=g).to("cuda:1")
        if before is not None:
            before()
        targets = list(y.tensor_split(micro))
        if shift_targets:
            targets = targets[1:] + targets[:1]
        optimizer.zero_grad()
        for mx, my in zip(x.tensor_split(micro), targets):
            if zero_each:
                optimizer.zero_grad()
            loss = F.mse_loss(model(mx), my)
            (loss / micro if divide else loss).backward()
        optimizer.step()
    finally:
        if ddp and dist.is_initialized():
            dist.destroy_process_group()
        handle.deactivate()
    return Observation("practical10/sample.py", gpus=2, nproc=1, launcher="torchrun",
                       sets={"BATCH_SIZE": p10.BATCH, "MICRO_BATCHES": micro}, returncode=0,
                       events=events)


class Handout:
    """The runs the invariance check asks for (HandoutRuns' interface): one process each."""

    def __init__(self, tmp_path, make_model, ddp=False, **loop):
        self.tmp_path, self.make_model, self.ddp, self.loop = tmp_path, make_model, ddp, loop
        self.runs: dict[int, Observation] = {}

    def run(self, processes=2, **sets):
        micro = sets.get("MICRO_BATCHES", p10.MICRO)
        if micro not in self.runs:
            loop = self.loop if micro > 1 else {}   # the full batch: one micro-batch, as is
            self.runs[micro] = traced_loop(self.tmp_path, self.make_model, micro, ddp=self.ddp,
                                           **loop)
        return self.runs[micro]


def check(handout, micro=4):
    p10.test_accumulated_gradient_equals_full_batch_gradient(handout, micro)


def failure(handout, micro=4) -> AssertionError:
    with pytest.raises(AssertionError) as raised:
        check(handout, micro)
    return raised.value


# -- what the virtual GPUs record -----------------------------------------------------------


@pytest.mark.parametrize("make_model, kinds", [
    (dropout_model, ["dropout"]), (batch_norm_model, ["batch_norm"]), (plain_model, [])])
def test_dropout_and_batch_statistics_in_training_are_recorded_once(tmp_path, make_model, kinds):
    run = traced_loop(tmp_path, make_model, 2)
    noted = [e["op"] for e in run.of("model_noise")]
    assert noted == kinds, (f"expected one model_noise record per kind, {kinds}; observed "
                            f"{run.of('model_noise')} (grader/vgpu/mode.py _random, _batch_norm)")


@pytest.mark.parametrize("layer", [lambda: nn.Dropout(0.0), lambda: nn.Dropout(0.5).eval(),
                                   lambda: nn.BatchNorm1d(HIDDEN).eval(),
                                   lambda: nn.Dropout(1e-9)],
                         ids=["p=0", "dropout_eval", "batch_norm_eval", "p=1e-9"])
def test_layers_that_change_nothing_are_not_recorded(tmp_path, layer):
    def make():
        return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), layer()),
                         nn.Sequential(nn.Linear(HIDDEN, DIM)))
    run = traced_loop(tmp_path, make, 2)
    assert run.of("model_noise") == [], run.of("model_noise")


def dropout_and_batch_norm_outside_the_model():
    """What adv54 F2's script called before its loop, on a dummy tensor: no layer of the model."""
    F.dropout(torch.ones(4, device="cuda:0"), 0.5)
    F.batch_norm(torch.ones(4, 3, device="cuda:0"), None, None, training=True)


def test_dropout_and_batch_norm_outside_the_models_passes_are_not_recorded(tmp_path):
    run = traced_loop(tmp_path, plain_model, 2, before=dropout_and_batch_norm_outside_the_model)
    assert run.of("model_noise") == [], (
        "expected no model_noise record for ops outside the model's forward (a dummy tensor's "
        f"dropout before the loop); observed {run.of('model_noise')} (grader/vgpu/model_noise.py "
        "ModelNoise.unnoted, observe.in_model_pass)")


def tiny_dropout_model() -> nn.Module:
    return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()),
                     nn.Sequential(nn.Linear(HIDDEN, DIM), nn.Dropout(p=1e-9)))


@pytest.mark.parametrize("make_model, before", [
    (tiny_dropout_model, None), (plain_model, dropout_and_batch_norm_outside_the_model)],
    ids=["dropout_1e-9_in_model", "dropout_outside_model"])
def test_wrong_targets_lose_the_item_whatever_dropout_that_changes_nothing_is_added(
        tmp_path, make_model, before):
    """adv54 F2: each micro-batch trained on the next one's targets passed by gradient norms
    (2 of 2) once the script added a dropout that changes nothing; without it, 0 of 2."""
    error = failure(Handout(tmp_path, make_model, shift_targets=True, before=before), 4)
    text = str(error)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {text}"
    assert "differs from the full-batch gradient" in text and "dropout" not in text, text


# -- honest loops keep the item ------------------------------------------------------------


@pytest.mark.parametrize("make_model", [dropout_model, batch_norm_model])
@pytest.mark.parametrize("micro", [2, 4])
def test_an_honest_loop_with_dropout_or_batch_norm_keeps_the_item(tmp_path, make_model, micro):
    handout = Handout(tmp_path, make_model)
    check(handout, micro)   # before adv49 S1: "rows left out ... or gradients zeroed"


# -- buggy loops still lose it, told the true cause ---------------------------------------------


@pytest.mark.parametrize("make_model", [dropout_model, batch_norm_model])
def test_a_loop_without_the_division_still_loses_the_item(tmp_path, make_model):
    error = failure(Handout(tmp_path, make_model, divide=False), 4)
    text = str(error)
    assert not isinstance(error, GradedByHand), text
    assert "without dividing by MICRO_BATCHES" in text and "rows left out" not in text, text


def test_a_loop_that_zeroes_between_micro_batches_still_loses_the_item(tmp_path):
    error = failure(Handout(tmp_path, dropout_model, zero_each=True), 4)
    assert not isinstance(error, GradedByHand), str(error)
    assert "zero" in str(error), str(error)


def test_a_gradient_the_noise_does_not_explain_is_held_for_a_person(tmp_path):
    """The weighting right, nothing zeroed, yet the gradient 30% off: no comparable measure
    settles it, so no verdict, the cause named."""
    handout = Handout(tmp_path, dropout_model)
    for event in handout.run(processes=1, MICRO_BATCHES=4).of("step"):
        event["grads"] = {"sum": event["grads"]["sum"] * 1.3,
                          "sumsq": event["grads"]["sumsq"] * 1.69}
    error = failure(handout, 4)
    assert isinstance(error, GradedByHand), f"expected GradedByHand; observed {error!r}"
    assert "dropout in training mode" in str(error) and "a person grades" in str(error), error


# -- two runs that start from other weights -------------------------------------------------------


def test_the_weights_a_model_is_wrapped_with_are_recorded(tmp_path):
    from grader.checks.gradient_noise import start_of, started_apart
    one, same, other = (traced_loop(tmp_path, plain_model, 2, seed=seed, ddp=True)
                        for seed in (0, 0, 1))
    assert start_of(one) is not None, one.of("ddp_wrap")
    assert not started_apart(one, same) and started_apart(one, other), (
        start_of(one), start_of(same), start_of(other))


def test_runs_that_start_from_other_weights_are_never_told_rows_were_left_out(tmp_path):
    """A seed drawn anew each run: the two gradients are not comparable at all. The item is
    kept or held for a person, never 0 for rows left out."""
    handout = Handout(tmp_path, plain_model, ddp=True, seed=1)
    try:
        check(handout, 4)
    except GradedByHand as held:
        assert "start elsewhere in each run" in str(held) and "rows left out" not in str(held), held
