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

import os
import random
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from grader.checks import test_practical10 as p10
from grader.checks.support import GradedByHand
from grader.harness.observation import Observation
from grader.vgpu import activate, active, steady_start

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
                ddp=False, shift_targets=False, before=None, steady=False,
                double_first=False) -> Observation:
    """The handout's loop, one process, one step of `micro` micro-batches, traced on a virtual
    node of its own: `divide` the loss by MICRO_BATCHES, `zero_each` micro-batch's gradients
    away first (a zero_grad inside the loop), the model built after torch.manual_seed(`seed`)
    (after torch.seed() where `seed` is "os", after `seed()` where it is a function),
    wrapped in `ddp` (a process group of one rank) or not; `shift_targets`: each micro-batch
    trained on the next one's targets (adv54 F2's bug); `before`: called before the loop;
    `double_first`: the first micro-batch's loss counted twice; `steady`: run as the check's
    own runs are, the noise held still and the gradient sketched
    (what a steady seal key says, grader/records/seal.py)."""
    assert active() is None, "a node from an earlier test is still active"
    handle = activate(2, force_virtual=True, trace_path=str(tmp_path / f"trace-{micro}.jsonl"))
    handle.trace.steady = steady
    steady_start.install(handle.patcher, handle.trace)   # as activation does for a steady key
    events: list[dict] = []
    handle.trace.listeners.append(events.append)
    try:
        if ddp:
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        torch.seed() if seed == "os" else seed() if callable(seed) else torch.manual_seed(seed)
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
        for index, (mx, my) in enumerate(zip(x.tensor_split(micro), targets)):
            if zero_each:
                optimizer.zero_grad()
            loss = F.mse_loss(model(mx), my) * (2 if double_first and index == 0 else 1)
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

    def __init__(self, tmp_path, make_model, ddp=False, full=None, **loop):
        self.tmp_path, self.make_model, self.ddp, self.loop = tmp_path, make_model, ddp, loop
        self.full = full or {}   # the full-batch run's own options (its loop is the handout's)
        self.runs: dict[int, Observation] = {}

    def run(self, processes=2, steady=False, **sets):
        micro = sets.get("MICRO_BATCHES", p10.MICRO)
        if micro not in self.runs:
            loop = self.loop if micro > 1 else self.full   # the full batch: one micro-batch
            self.runs[micro] = traced_loop(self.tmp_path, self.make_model, micro, ddp=self.ddp,
                                           steady=steady, **loop)
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
    settles it, so no verdict, the cause named (batch statistics without running ones: noise
    the check's runs cannot hold still)."""
    handout = Handout(tmp_path, running_free_batch_norm_model)
    for event in handout.run(processes=1, MICRO_BATCHES=4, steady=True).of("step"):
        event["grads"] = {"sum": event["grads"]["sum"] * 1.3,
                          "sumsq": event["grads"]["sumsq"] * 1.69}
    error = failure(handout, 4)
    assert isinstance(error, GradedByHand), f"expected GradedByHand; observed {error!r}"
    assert "batch normalisation" in str(error) and "a person grades" in str(error), error


# -- the check's own runs hold the noise still (adv54 F2 with a real dropout) ----------------------


def running_free_batch_norm_model() -> nn.Module:
    """Batch statistics that cannot be held still: no running statistics are kept."""
    return TwoStages(nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()),
                     nn.Sequential(nn.BatchNorm1d(HIDDEN, track_running_stats=False),
                                   nn.Linear(HIDDEN, DIM)))


def test_a_steady_run_is_said_by_its_key_alone():
    """The invariance runs are told by a bit of the seal key (no student code can read it),
    apart from the value probe's bit."""
    from grader.records.seal import key_marked, key_steady, new_key
    for marked, steady in [(False, False), (True, False), (False, True), (True, True)]:
        keys = [new_key(marked=marked, steady=steady) for _ in range(32)]
        assert all(key_marked(k) == marked and key_steady(k) == steady for k in keys), (
            f"expected keys marked={marked}, steady={steady}; observed "
            f"{[(key_marked(k), key_steady(k)) for k in keys][:4]} (grader/records/seal.py)")


RUNNING_MEAN, RUNNING_VAR, EPS = 0.0, 1.0, 1e-5
HELD_DROPOUT = "its input"
HELD_BATCH_NORM = "its input normalised by the running statistics"


def running_batch_norm(x):
    return F.batch_norm(x, torch.full((3,), RUNNING_MEAN, device="cuda:0"),
                        torch.full((3,), RUNNING_VAR, device="cuda:0"), training=True, eps=EPS)


@pytest.mark.parametrize("call, held", [
    (lambda x: F.dropout(x, 0.5), HELD_DROPOUT),
    (lambda x: F.dropout(x, p=0.3, training=True, inplace=True), HELD_DROPOUT),
    (lambda x: torch.dropout(x, 0.5, True), HELD_DROPOUT),
    (lambda x: F.alpha_dropout(x, 0.2, True), HELD_DROPOUT),
    (lambda x: F.dropout(x, 0.5, training=False), HELD_DROPOUT),
    (running_batch_norm, HELD_BATCH_NORM),
    (lambda x: F.batch_norm(x, None, None, training=True), None),
], ids=["F.dropout", "F.dropout_inplace_kwargs", "torch.dropout", "alpha_dropout",
        "dropout_eval", "batch_norm_running", "batch_norm_no_running"])
def test_a_steady_run_holds_dropout_and_batch_statistics_still(call, held):
    """What a steady run's op returns: a dropout its input, batch_norm its input normalised by
    its running statistics; batch_norm keeping none normalises by the batch's own, as in any
    run (None: not held)."""
    assert active() is None, "a node from an earlier test is still active"
    handle = activate(2, force_virtual=True)
    handle.trace.steady = True
    try:
        x = torch.arange(12.0, device="cuda:0").reshape(4, 3) - 5
        by_running = (x - RUNNING_MEAN) / (RUNNING_VAR + EPS) ** 0.5
        expected = x.cpu() if held == HELD_DROPOUT else by_running.cpu()
        out = call(x.clone()).cpu()
    finally:
        handle.deactivate()
    assert torch.allclose(out, expected, atol=1e-6) == (held is not None), (
        f"expected {held or 'the op as in any run'} in a steady run; observed {out.tolist()} "
        f"from {x.cpu().tolist()} (grader/vgpu/model_noise.py hold_still, mode.py _held_still)")


def test_the_check_s_runs_give_the_full_batch_gradient_exactly_through_dropout(tmp_path):
    """Two Dropout(0.2) on one GPU draw other masks for micro-batches than for the whole batch;
    held still, the accumulated gradient is the full-batch one to float rounding."""
    full, micro = (traced_loop(tmp_path, dropout_model, m, steady=True) for m in (1, 4))
    (full_sum, full_norm), (sum_, norm) = p10.first_gradient(full), p10.first_gradient(micro)
    assert abs(norm - full_norm) <= 1e-6 * full_norm and abs(sum_ - full_sum) <= 1e-6 * full_norm, (
        f"expected the steady runs' gradients equal (dropout held still); observed norms "
        f"{norm:.9g} and {full_norm:.9g}, sums {sum_:.9g} and {full_sum:.9g} "
        "(grader/vgpu/model_noise.py hold_still)")


@pytest.mark.parametrize("make_model", [dropout_model, batch_norm_model])
@pytest.mark.parametrize("micro", [2, 8])
def test_wrong_targets_lose_the_item_beside_real_dropout_or_batch_norm(tmp_path, make_model,
                                                                       micro):
    """adv54 F2 with a real dropout: each micro-batch trained on the next one's targets kept
    the item (2 of 2) by norms, 1.00x apart; held still, the exact comparison gives 0."""
    error = failure(Handout(tmp_path, make_model, shift_targets=True), micro)
    text = str(error)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {text}"
    assert "other data than the full batch" in text and "your model has" not in text, (
        f"expected the message of the same loop without the noise; observed {text}")


@pytest.mark.parametrize("make_model", [dropout_model, batch_norm_model])
def test_a_micro_batch_counted_twice_loses_the_item_beside_dropout_or_batch_norm(tmp_path,
                                                                                  make_model):
    """Its loss doubled: held for a person before (the noise's weaker path: 1.36x the outputs'
    gradient, no cause it knows); with the noise held still, 0, as without it."""
    error = failure(Handout(tmp_path, make_model, double_first=True), 4)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {error}"
    assert "counted twice" in str(error), str(error)


def test_noise_held_still_is_recorded_as_held_and_excuses_nothing(tmp_path):
    from grader.checks.gradient_noise import noise_in
    run = traced_loop(tmp_path, lambda: TwoStages(
        nn.Sequential(nn.Linear(DIM, HIDDEN), nn.Dropout(0.2), nn.BatchNorm1d(HIDDEN)),
        nn.Sequential(nn.BatchNorm1d(HIDDEN, track_running_stats=False), nn.Linear(HIDDEN, DIM))),
        2, steady=True)
    noted = sorted((e["op"], bool(e.get("held"))) for e in run.of("model_noise"))
    assert noted == [("batch_norm", False), ("batch_norm", True), ("dropout", True)], noted
    assert noise_in(run) == ["batch_norm"], (
        f"expected only the batch statistics that were not held as noise; observed "
        f"{noise_in(run)} (grader/checks/gradient_noise.py noise_in)")


def test_wrong_targets_beside_batch_statistics_that_cannot_be_held_point_elsewhere(tmp_path):
    """No running statistics: the weaker comparison stays, and sees the direction now (the
    sketches' cosine about 0.3, an honest loop's 0.8 or more)."""
    error = failure(Handout(tmp_path, running_free_batch_norm_model, shift_targets=True), 4)
    text = str(error)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {text}"
    assert "point elsewhere" in text and "batch normalisation" in text, text


@pytest.mark.parametrize("micro", [2, 4])
def test_an_honest_loop_with_batch_statistics_that_cannot_be_held_keeps_the_item(tmp_path,
                                                                                 micro):
    check(Handout(tmp_path, running_free_batch_norm_model), micro)


# -- two runs that start from other weights -------------------------------------------------------


def test_the_weights_a_model_is_wrapped_with_are_recorded(tmp_path):
    from grader.checks.gradient_noise import start_of, started_apart
    one, same, other = (traced_loop(tmp_path, plain_model, 2, seed=seed, ddp=True)
                        for seed in (0, 0, 1))
    assert start_of(one) is not None, one.of("ddp_wrap")
    assert not started_apart(one, same) and started_apart(one, other), (
        start_of(one), start_of(same), start_of(other))


def test_the_check_s_runs_start_alike_after_torch_seed(tmp_path):
    """torch.seed() draws a seed from the OS: other weights in each run, but for the check's
    own runs, which hold it to one seed (grader/vgpu/steady_start.py)."""
    from grader.checks.gradient_noise import started_apart
    one, other = (traced_loop(tmp_path, plain_model, 2, seed="os", ddp=True) for _ in range(2))
    held = [traced_loop(tmp_path, plain_model, 2, seed="os", ddp=True, steady=True)
            for _ in range(2)]
    assert started_apart(one, other) and not started_apart(*held), (
        "expected torch.seed() to start two runs apart, two steady runs alike; observed apart: "
        f"{started_apart(one, other)}, {started_apart(*held)} (grader/vgpu/steady_start.py)")


def test_wrong_targets_lose_the_item_after_torch_seed(tmp_path):
    """adv54 F2 with the model built after torch.seed(): kept by norms (the runs started apart,
    nothing comparable but the weighting); started alike, compared exactly, 0."""
    error = failure(Handout(tmp_path, plain_model, ddp=True, full={"seed": "os"}, seed="os",
                            shift_targets=True), 4)
    text = str(error)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {text}"
    assert "differs from the full-batch gradient" in text and "start elsewhere" not in text, text


def test_runs_that_start_from_other_weights_are_never_told_rows_were_left_out(tmp_path):
    """A seed drawn anew each run: the two gradients are not comparable at all. The item is
    kept or held for a person, never 0 for rows left out."""
    handout = Handout(tmp_path, plain_model, ddp=True, seed=1)
    try:
        check(handout, 4)
    except GradedByHand as held:
        assert "start elsewhere in each run" in str(held) and "rows left out" not in str(held), held


# -- seeds the script draws itself each run (adv57 F-G) -------------------------------------------


def _drawn() -> int:
    """A seed a script draws anew each run, as adv57's did (os.urandom)."""
    return int.from_bytes(os.urandom(4), "little")


# Ways students seed the model's start with a seed of their own drawn each run.
DRAWN_SEEDS = {
    "torch.manual_seed(os.urandom)": lambda: torch.manual_seed(_drawn()),
    "torch.random.manual_seed(time_ns)": lambda: torch.random.manual_seed(time.time_ns() % 2**32),
    "torch.cuda.manual_seed_all + manual_seed(pid)": lambda: (
        torch.cuda.manual_seed_all(_drawn()), torch.manual_seed(os.getpid() + _drawn())),
}



@pytest.mark.parametrize("seeding", list(DRAWN_SEEDS), ids=list(DRAWN_SEEDS))
def test_the_check_s_runs_start_alike_whatever_seed_the_script_draws(tmp_path, seeding):
    """A manual_seed whose argument the script draws (os.urandom, the time, the pid) starts
    two runs apart, but two of the check's own runs alike (grader/vgpu/steady_start.py)."""
    from grader.checks.gradient_noise import started_apart
    seed = DRAWN_SEEDS[seeding]
    one, other = (traced_loop(tmp_path, plain_model, 2, seed=seed, ddp=True) for _ in range(2))
    held = [traced_loop(tmp_path, plain_model, 2, seed=seed, ddp=True, steady=True)
            for _ in range(2)]
    assert started_apart(one, other) and not started_apart(*held), (
        f"expected {seeding} to start two runs apart, two steady runs alike; observed apart: "
        f"{started_apart(one, other)}, {started_apart(*held)} (grader/vgpu/steady_start.py)")


def test_python_s_and_numpy_s_seeds_are_the_steady_one_in_a_steady_run():
    """random.seed and numpy.random.seed with another argument each time draw the same numbers
    in a steady run (weights a script initialises from them start alike)."""
    assert active() is None, "a node from an earlier test is still active"

    class Steady:
        steady = True
    handle = activate(2, force_virtual=True)
    try:
        steady_start.install(handle.patcher, Steady())
        draws = []
        for _ in range(2):
            random.seed(_drawn())
            np.random.seed(_drawn())
            draws.append((random.random(), float(np.random.rand())))
    finally:
        handle.deactivate()
    assert draws[0] == draws[1], (
        f"expected the same draws after random.seed/np.random.seed of other arguments in a "
        f"steady run; observed {draws} (grader/vgpu/steady_start.py install)")


def test_wrong_targets_lose_the_item_with_a_seed_drawn_each_run(tmp_path):
    """adv57 F-G: adv54 F2's wrong targets with torch.manual_seed(os.urandom) kept the item by
    norms (the runs started apart, "start" skipped the direction test): 10 of 12 where a TA
    gives 8. The check's runs hold the seed: compared exactly, 0, as with a fixed SEED."""
    seed = DRAWN_SEEDS["torch.manual_seed(os.urandom)"]
    error = failure(Handout(tmp_path, plain_model, ddp=True, full={"seed": seed}, seed=seed,
                            shift_targets=True), 4)
    text = str(error)
    assert not isinstance(error, GradedByHand), f"expected a 0, not held; observed {text}"
    assert "differs from the full-batch gradient" in text and "start elsewhere" not in text, (
        f"expected the message of the same loop with a fixed seed; observed {text}")


@pytest.mark.parametrize("seeding", list(DRAWN_SEEDS), ids=list(DRAWN_SEEDS))
def test_an_honest_loop_with_a_seed_drawn_each_run_keeps_the_item(tmp_path, seeding):
    """The honest twin: the handout's loop, the seed drawn each run; 2 of 2 (adv49's unseeded
    scripts kept it by norms, now by the exact comparison)."""
    seed = DRAWN_SEEDS[seeding]
    check(Handout(tmp_path, plain_model, ddp=True, full={"seed": seed}, seed=seed), 4)


def _default_generator_drawn():
    """A seed drawn each run, set through the generator object itself, which the steady runs
    cannot hold (a C method): the runs still start apart."""
    torch.default_generator.manual_seed(_drawn())


@pytest.mark.parametrize("shift_targets", [True, False], ids=["wrong_targets", "honest"])
def test_a_start_that_still_differs_is_held_for_a_person_not_passed_on_norms(tmp_path,
                                                                               shift_targets):
    """Where the runs still start apart, norms cannot tell wrong targets (1.002x) from right
    ones: the item is held for a person, wrong targets or not, never kept on norms."""
    error = failure(Handout(tmp_path, plain_model, ddp=True,
                            full={"seed": _default_generator_drawn},
                            seed=_default_generator_drawn, shift_targets=shift_targets), 4)
    text = str(error)
    assert isinstance(error, GradedByHand) and "start elsewhere in each run" in text and \
        "rows left out" not in text, (
            f"expected the item held for a person, the start named; observed "
            f"{type(error).__name__}: {text} (test_practical10.py noisy_gradient)")
