"""Practical 10: a GPU is a stage only where its layers' values reach the pass's output.

A one-stage replica on cuda:r with a spare nn.Linear on cuda:r+2 whose result is added so that
its value cancels while its gradient comes back whole (`x + torch.sub(side, side.detach())`, a
custom autograd.Function whose forward returns x and whose backward returns (grad, grad), `side
* 0` with a hook on the node giving the gradient back, `x + side / 1e30`: red team adv48 F1-F3)
had the two-stage layout's 10 of 12 where the one-stage replica earns 7.25: the gradient watch
reads derivatives, which these forge. The grader now also runs the handout's configuration as
a value probe (grader/vgpu/perturb.py: noise of their own size added to one GPU's layer outputs
per training pass) and reads a GPU whose perturbed layers left a pass's output unchanged as no
stage (grader/checks/value_probe.py). Honest stages, however written (with dropout, LayerNorm,
an LSTM, checkpointing, bare parameters), move the output and keep their GPUs.

The models train here on a virtual node as a graded run's do, once as the normal run and once
as the probe (the probe switched on by hand: a graded run's comes in its seal key).
"""
from __future__ import annotations

import time

import pytest
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from grader.checks import test_practical10 as p10
from grader.checks.value_probe import (probe_holds, probe_shortfall, unmoved_gpus,
                                       unmoved_note)
from grader.harness.observation import Observation
from grader.records.seal import key_marked, new_key
from grader.vgpu import activate, perturb
from tests.fixtures.practical_variants import REFERENCE
from tests.grading import test_practical10_stage_rows as stage_rows
from tests.grading.test_practical10_stage_rows import (CUDA0, CUDA2, DIM, HIDDEN, BareParameters,
                                                       SeqFirst, Sequential, SeparateStages,
                                                       SpareBeside)

# The course's width, where a model's rounding is the size the graded runs see.
WIDE = 512


class _OneStage(SpareBeside):
    """Every layer on cuda:0, the spare on cuda:2 fed the whole micro-batch: `join` adds it."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = self.spare(x.to(CUDA2))
        return self.join(x.to(CUDA2), side)


class CancelledBySub(_OneStage):
    """adv48 p10_tsub."""

    def join(self, x, side):
        return x + torch.sub(side, side.detach())


class _Join(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, side):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class CancelledByFunction(_OneStage):
    """adv48 p10_func."""

    def join(self, x, side):
        return _Join.apply(x, side)


class CancelledByNodeHook(_OneStage):
    """adv48 p10_nodehook."""

    def join(self, x, side):
        zero = side * 0
        zero.grad_fn.register_hook(lambda grads_in, grads_out: (grads_out[0].clone(),)
                                   + tuple(grads_in[1:]))
        return x + zero


class AddedAndTakenBack(_OneStage):
    """adv48 p10_aug: added and taken back in place, the output off by the rounding."""

    def join(self, x, side):
        y = x.clone()
        y += side
        y -= side.detach()
        return y


class ClockStamped(_OneStage):
    """adv50 p10_stamp: the spare's value taken away by a remainder, and a clock reading
    returned first, which moves in every pass of every run."""

    def join(self, x, side):
        return (torch.tensor(time.perf_counter(), dtype=torch.float64),
                x + torch.remainder(side, 1e-30))


class RecomputedSpare(_OneStage):
    """adv50 p10_recomp (F1): the spare's output minus its functional recomputation, 0 in a
    normal run and the noise where the probe perturbs what the module returns."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        hidden = x.to(CUDA2)
        side = self.spare(hidden)
        return x.to(CUDA2) + (side - nn.functional.linear(hidden, self.spare.weight,
                                                          self.spare.bias))


class ProjectedAlongBias(nn.Module):
    """adv50 p10_proj (F3): a one-stage replica on cuda:0 whose spare on cuda:2 is fed zeros
    (its output its bias on every row), that output then projected out along the bias, which
    generic noise is not along. At the course's width (512), as the projection's rounding
    (1.8e-8 of the output at width 8, 9e-11 at 512) is the probe's to tell from none."""

    width = WIDE

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Linear(DIM, WIDE).to(CUDA0)
        self.spare = nn.Linear(WIDE, WIDE).to(CUDA2)

    def direction(self):
        along = self.spare.bias.detach()
        return along / along.norm()

    def forward(self, x):
        hidden = self.stage0(x.to(CUDA0)).to(CUDA2)
        side = self.spare(torch.zeros_like(hidden))
        along = self.direction()
        return hidden + (side - (side @ along)[:, None] * along)


class ProjectedAlongItsStep(ProjectedAlongBias):
    """adv50 F3 with the direction read where the optimizer left the bias (a copy taken when
    its version moves), not in the pass: a perturbation of the parameters is not along it, so
    only the one along the output itself (the rows mixed) finds the projection."""

    def direction(self):
        bias = self.spare.bias
        if getattr(self, "version", None) != bias._version:
            self.version, self.along = bias._version, bias.detach() / bias.detach().norm()
        return self.along


class _Probed(Exception):
    pass


class StopsWhenProbed(_OneStage):
    """adv50 p10_crash (F4): ends where the spare's output is not its recomputation (the probe
    perturbed it), so the probe has no pass of it to compare; its value taken by a remainder."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        hidden = x.to(CUDA2)
        side = self.spare(hidden)
        if not torch.equal(side, nn.functional.linear(hidden, self.spare.weight,
                                                      self.spare.bias)):
            raise _Probed
        return x.to(CUDA2) + torch.remainder(side, 1e-30)


class _SeesTheProbe(_OneStage):
    """adv54 F1 (p10_spare3): the spare's value cancelled by a copy of it spelled so that the
    scan does not read a `.detach` (`frozen`), and a term that is 0 in a normal run and moves
    only where the probe perturbs: the spare computed again from its input, and its weight
    against a copy kept since the optimizer last moved it (`drift`, under no_grad)."""

    def frozen(self, side):
        return getattr(side, "det" + "ach")()

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        hidden = x.to(CUDA2)
        side = self.spare(hidden)
        frozen = self.frozen(side)
        weight = self.spare.weight
        if getattr(self, "version", None) != weight._version:
            self.version, self.kept = weight._version, weight.detach().clone()
        with torch.no_grad():
            drift = (side - nn.functional.linear(hidden, weight, self.spare.bias)).abs().sum() \
                + (weight - self.kept).abs().sum()
        return x.to(CUDA2) + (self.cancel(side, frozen) + 1e-3 * drift)

    def cancel(self, side, frozen):
        return side - frozen


class SeesTheProbeByABroadcast(_SeesTheProbe):
    """adv57 F-C (p10/spare_bcast): the copy given a leading axis of one, so that the two terms'
    shapes differ and broadcast."""

    def cancel(self, side, frozen):
        return (side - frozen.unsqueeze(0)).squeeze(0)


class SeesTheProbeByADiff(_SeesTheProbe):
    """adv57 F-C (p10/spare_diff): the difference taken by `diff` of the two stacked."""

    def cancel(self, side, frozen):
        return torch.stack([frozen, side]).diff(dim=0).squeeze(0)


class SeesTheProbeByAStackSummed(_SeesTheProbe):
    """adv57 F-C's sum-of-stack form: the copy negated, stacked with the spare and summed."""

    def cancel(self, side, frozen):
        return torch.stack([side, -frozen]).sum(0)


class SeesTheProbeByAClone(_SeesTheProbe):
    """adv54 F1 with the copy made under no_grad, sharing nothing with `side`."""

    def frozen(self, side):
        with torch.no_grad():
            return side.clone()


class SeesTheProbeByARemainder(_SeesTheProbe):
    """adv54 F1 with a millionth of the spare's value left: it moves under every perturbation
    of the probe, and had read as a stage (eng_probe4, measured)."""

    def frozen(self, side):
        return side.detach() * (1 - 1e-6)


class SeesTheProbeByANegation(_SeesTheProbe):
    """adv54 F1 with the copy negated and added (`side + (-frozen)`)."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        side = self.spare(x.to(CUDA2))
        return x.to(CUDA2) + torch.add(side, -self.frozen(side))


class RecomputedFromAKeptCopy(_OneStage):
    """eng_probe3's leftover: the spare less its recomputation from copies of its parameters
    taken where the optimizer last moved them, which the perturbed parameters do not move."""

    def forward(self, x):
        x = self.stage0(x.to(CUDA0))
        hidden = x.to(CUDA2)
        side = self.spare(hidden)
        if getattr(self, "version", None) != self.spare.weight._version:
            self.version = self.spare.weight._version
            self.kept = [p.detach().clone() for p in (self.spare.weight, self.spare.bias)]
        return x.to(CUDA2) + (side - nn.functional.linear(hidden, *self.kept))


class ScaledTo1e30(_OneStage):
    """adv48 p10_tiny."""

    def join(self, x, side):
        return x + side / 1e30


class WithDropoutAndLayerNorm(nn.Module):
    """Honest: stage 1 normalised, with (seeded) dropout in both stages."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Dropout(0.2)).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN, DIM), nn.LayerNorm(DIM),
                                    nn.Dropout(0.2)).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class DeepSigmoidStage1(nn.Module):
    """Honest: stage 1 of 4 Linear+Sigmoid layers, through which stage 0's perturbation reaches
    the output 3e-5 the size (9.9e-7 at the course's width; a threshold of 1e-4 had read cuda:0
    as no stage)."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN, DIM), nn.Sigmoid(), *(
            layer for _ in range(3) for layer in (nn.Linear(DIM, DIM), nn.Sigmoid()))).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class DeepReLUStage1(nn.Module):
    """Honest: stage 1 of 16 Linear+ReLU layers, through which stage 0's perturbation reaches
    the output 8.2e-9 the size at the tests' width (7.1e-8 at the course's): below one float32
    rounding, which a threshold of 1e-7 had read as no stage (lead, s30)."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(CUDA0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN, DIM), nn.ReLU(), *(
            layer for _ in range(15) for layer in (nn.Linear(DIM, DIM), nn.ReLU()))).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class Checkpointed(Sequential):
    """Honest: stage 1 under activation checkpointing, reentrant and not."""

    reentrant = False

    def forward(self, x):
        hidden = self.stage0(x.to(CUDA0)).to(CUDA2)
        return checkpoint(self.stage1, hidden, use_reentrant=self.reentrant)


class CheckpointedReentrant(Checkpointed):
    reentrant = True


class ZeroInitLast(Sequential):
    """Honest (adv49 F1): the last layer starts at zeros, "the model starts predicting zeros".
    In the first step the output is the bias whatever stage 0 computes, and no gradient comes
    back to it."""

    def __init__(self):
        super().__init__()
        nn.init.zeros_(self.stage1[-1].weight)
        nn.init.zeros_(self.stage1[-1].bias)


class ZeroInitLastWeight(Sequential):
    """Honest (adv49 F1): the last layer's weight alone starts at zeros."""

    def __init__(self):
        super().__init__()
        nn.init.zeros_(self.stage1[-1].weight)


class _ReZeroBlock(nn.Module):
    """x + alpha * f(x), alpha = 0 at init (Bachlechner et al. 2020)."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM))
        self.alpha = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return x + self.alpha * self.f(x)


class ReZeroStage1(nn.Module):
    """Honest (adv49 F2): stage 1 of ReZero blocks, which add nothing in the first step."""

    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(),
                                    nn.Linear(HIDDEN, DIM)).to(CUDA0)
        self.stage1 = nn.Sequential(_ReZeroBlock(), _ReZeroBlock()).to(CUDA2)

    def forward(self, x):
        return self.stage1(self.stage0(x.to(CUDA0)).to(CUDA2))


class AuxFirst(Sequential):
    """Honest (adv49 F4): returns `(aux, out)`, aux a penalty on stage 0's output alone, which
    perturbing stage 1 never moves."""

    def forward(self, x):
        hidden = self.stage0(x.to(CUDA0))
        aux = 1e-4 * hidden.pow(2).mean()
        return aux.to(CUDA2), self.stage1(hidden.to(CUDA2))


def trained_own_loop(node, model_class) -> Observation:
    """stage_rows.trained for the models its loop does not fit: one that returns `(aux, out)`
    (aux added to the loss), one of another output width (`width`), one that ends the
    script's loop where it raises _Probed (as `os._exit(0)` ends a graded run's process)."""
    events = node(4)
    torch.manual_seed(0)
    model = model_class()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    width = getattr(model_class, "width", DIM)
    x, y = torch.randn(stage_rows.ROWS, DIM, device=CUDA0), torch.randn(stage_rows.ROWS, width,
                                                                      device=CUDA2)
    try:
        for _ in range(2):
            optimizer.zero_grad()
            for mx, my in zip(x.tensor_split(4), y.tensor_split(4)):
                out, aux = model(mx), 0
                if isinstance(out, tuple):
                    aux, out = out
                ((nn.functional.mse_loss(out, my) + aux) / 4).backward()
            optimizer.step()
    except _Probed:
        pass
    return Observation("practical10/sample.py", gpus=4, returncode=0, events=list(events),
                       stdout="")


OWN_LOOP = (AuxFirst, ClockStamped, StopsWhenProbed, ProjectedAlongBias, ProjectedAlongItsStep)


def trained(tmp_path, model_class, probing: bool) -> Observation:
    """The trace of test_practical10_stage_rows' training, on a node of its own; `probing`: as
    a value probe."""
    handles = []

    def node(gpus: int) -> list[dict]:
        handle = activate(gpus, force_virtual=True,
                          trace_path=str(tmp_path / f"trace-{int(probing)}.jsonl"))
        handles.append(handle)
        perturb._probe.perturbing = probing
        events: list[dict] = []
        handle.trace.listeners.append(events.append)
        return events

    try:
        if model_class in OWN_LOOP:
            return trained_own_loop(node, model_class)
        return stage_rows.trained(node, model_class)
    finally:
        for handle in handles:
            handle.deactivate()


def probed(tmp_path, model_class) -> tuple[Observation, dict]:
    """(the normal run, with the probe's verdict in it as the handout's run has it; the
    verdict)."""
    normal = trained(tmp_path, model_class, probing=False)
    probe = trained(tmp_path, model_class, probing=True)
    assert any(e.get("event") == "perturbed" and e.get("device") == "cuda:2"
               for e in probe.events), (
        f"expected the probe to perturb the layers on cuda:2 in some training pass of "
        f"{model_class.__name__}; observed perturbed records "
        f"{[e for e in probe.events if e.get('event') == 'perturbed']}; where to look: "
        "grader/vgpu/perturb.py ValueProbe._layer_output")
    normal.derived["unmoved"] = unmoved = unmoved_gpus(normal, probe)
    normal.derived["held"] = probe_holds(normal, probe, unmoved)
    return normal, unmoved


@pytest.mark.parametrize("model_class", [CancelledBySub, CancelledByFunction,
                                         CancelledByNodeHook, ScaledTo1e30,
                                         ClockStamped, RecomputedSpare, ProjectedAlongBias],
                         ids=["torch.sub(side, side.detach())", "a custom autograd.Function",
                              "side * 0 with a node hook", "side / 1e30",
                              "a clock reading returned beside a remainder",
                              "minus its recomputation from the parameters",
                              "projected out along its bias"])
def test_a_spare_whose_value_cancels_is_no_stage(tmp_path, model_class):
    normal, unmoved = probed(tmp_path, model_class)
    stages = p10.stage_gpus(normal, 0)
    assert stages == [0], (
        f"expected one stage, cuda:0 (the spare's value on cuda:2 cancels); observed {stages}; "
        f"the probe read {unmoved}; where to look: grader/checks/value_probe.py unmoved_gpus")
    if model_class is ScaledTo1e30:
        # Its spare gets a gradient 1e-30 the size: the watch's share test holds it (grad_faint,
        # no grad_used), and the probe reads only GPUs the watch counted.
        faint = p10.faint_note(normal, [0])
        assert "the layers on cuda:2 change the pass's output by about" in faint, (
            f"expected the gradient watch to read the spare on cuda:2 as faint; observed "
            f"{faint!r}, the probe read {unmoved}; where to look: observe.py _GradWatch")
        return
    # What the gradient watch alone reads: the forgery's two stages (the reason for the probe).
    watched = p10.stage_gpus(Observation("practical10/sample.py", gpus=4, returncode=0,
                                         events=normal.events, stdout=""), 0)
    assert watched == [0, 2], (
        f"expected the gradient watch alone to read {model_class.__name__} as two stages (its "
        f"spare on cuda:2 gets a full gradient); observed {watched}: this test no longer shows "
        "what the probe adds")
    note = unmoved_note(unmoved, [0])
    assert "perturbing the outputs of the layers on cuda:2 did not change the model's output" \
        in note, f"expected the feedback to name cuda:2; observed {note!r}"


@pytest.mark.parametrize("model_class", [
    Sequential, SeparateStages, BareParameters, SeqFirst, WithDropoutAndLayerNorm,
    Checkpointed, CheckpointedReentrant, DeepSigmoidStage1,
    ZeroInitLast, ZeroInitLastWeight, ReZeroStage1, AuxFirst, DeepReLUStage1,
], ids=["nn.Sequential stages", "stages as modules", "bare parameters", "an nn.LSTM stage",
        "dropout and LayerNorm", "checkpointing", "reentrant checkpointing",
        "a stage 1 of 4 sigmoid layers", "a last layer initialised to zeros",
        "a last weight initialised to zeros", "ReZero blocks in stage 1",
        "(aux, out) returned, aux from stage 0", "a stage 1 of 16 ReLU layers"])
def test_honest_stages_move_the_output(tmp_path, model_class):
    normal, unmoved = probed(tmp_path, model_class)
    stages = p10.stage_gpus(normal, 0)
    if model_class is ReZeroStage1:
        # Its alpha, grown from 0 in one step, gives stage 1 a faint share of the passes: the
        # gradient watch's share test reads that (observe.py), not the probe.
        stages = sorted(set(stages) | set(p10.faint_gpus(normal, 0)))
    assert not unmoved and stages == [0, 2], (
        f"expected stage 0 on cuda:0 and stage 1 on cuda:2 for {model_class.__name__}, no GPU "
        f"left unmoved by the probe; observed stages {stages}, unmoved {unmoved}; where to "
        "look: grader/checks/value_probe.py UNCHANGED, grader/vgpu/perturb.py")
    # Nor held for a person: the probe completes what the normal run does, and every kind of
    # perturbation (the parameters, the rows mixed, noise) moves the output.
    assert not normal.derived["held"], (
        f"expected nothing of the honest {model_class.__name__} held for a person; observed "
        f"{normal.derived['held']}; where to look: grader/checks/value_probe.py probe_holds")


@pytest.mark.parametrize("model_class", [_SeesTheProbe, SeesTheProbeByAClone,
                                         SeesTheProbeByANegation, RecomputedFromAKeptCopy,
                                         SeesTheProbeByARemainder, SeesTheProbeByABroadcast,
                                         SeesTheProbeByADiff, SeesTheProbeByAStackSummed],
                         ids=["getattr(side, 'det' + 'ach')()", "a clone under no_grad",
                              "its negation added", "recomputed from a kept copy",
                              "a millionth of it left", "the copy broadcast from a leading axis",
                              "stacked and differenced", "stacked negated and summed"])
def test_a_spare_taken_from_its_own_copy_is_held(tmp_path, model_class):
    """adv54 F1: however its copy is spelled, the probe's run sees `side - frozen` cancel
    exactly inside the pass (grader/vgpu/cancelled.py), and the grading goes to a person."""
    normal, unmoved = probed(tmp_path, model_class)
    held = normal.derived["held"]
    assert any("took a tensor on cuda:2 away from an equal copy of it" in why for why in held), (
        f"expected the grading of {model_class.__name__} held for the spare's value cancelled on "
        f"cuda:2; observed holds {held}, unmoved {unmoved}; where to look: "
        "grader/vgpu/cancelled.py, grader/checks/value_probe.py probe_holds")
    assert not [e for e in normal.events if e.get("event") == "cancelled"], (
        "expected the normal run not to read adds and subtracts (only the probe's run does)")


def test_a_projection_along_the_optimizers_bias_goes_to_a_person(tmp_path):
    """The parameters' perturbation moves it (the direction is read outside the pass); the
    rows mixed, along its output, do not: held for a person, never read as no stage (a
    normalisation after an honest stage on one-row micro-batches would read the same)."""
    normal, unmoved = probed(tmp_path, ProjectedAlongItsStep)
    held = normal.derived["held"]
    assert any("mixing the rows of the outputs of the layers on cuda:2" in why
               for why in held), (
        f"expected the probe to hold ProjectedAlongItsStep for a person (the rows mixed on "
        f"cuda:2 left its output unchanged); observed holds {held}, unmoved {unmoved}; where "
        "to look: grader/vgpu/perturb.py ROWS, grader/checks/value_probe.py rows_unmoved_gpus")
    assert 2 not in unmoved.get(0, {}), (
        f"expected a GPU unchanged only by the rows mixed to be left to a person, not read as "
        f"no stage; observed unmoved {unmoved}")


def test_a_script_that_ends_in_the_probe_is_held(tmp_path):
    """adv50 F4: the probe run ends at its first perturbed pass of the spare, so no pass of it
    compares, and the normal run's two stages had stood."""
    runs = _Runs(trained(tmp_path, StopsWhenProbed, probing=False),
                 trained(tmp_path, StopsWhenProbed, probing=True))
    shortfall = probe_shortfall(runs.normal, runs.probe)
    assert shortfall and shortfall[0].startswith("rank 0: 8 training passes, 2 optimizer steps"), (
        f"expected the probe's fewer passes and steps on rank 0 named; observed {shortfall}; "
        "where to look: grader/checks/value_probe.py probe_shortfall")
    p10.HandoutRuns(runs, REFERENCE).run()
    probe = runs.script(probe=True, nproc=2)
    assert any("completed less than the normal run" in problem for problem in probe.integrity), (
        f"expected the grading held for review (the probe's integrity problems); observed "
        f"{probe.integrity}; where to look: test_practical10.HandoutRuns.run")


def test_a_probe_that_exits_otherwise_is_held():
    normal = Observation("practical10/sample.py", gpus=4, nproc=2, returncode=0, events=[])
    probe = Observation("practical10/sample.py", gpus=4, nproc=2, returncode=1, events=[],
                        stderr="Traceback ...\nRuntimeError: probed\n")
    shortfall = probe_shortfall(normal, probe)
    assert shortfall and "exited with status 1" in shortfall[0], (
        f"expected a probe run that exits otherwise than the normal run named; observed "
        f"{shortfall}; where to look: grader/checks/value_probe.py probe_shortfall")
    normal.returncode = 1
    assert probe_shortfall(normal, probe) == [], (
        "expected nothing held where the normal run failed itself (its checks say so)")


def test_a_spare_added_and_taken_back_is_the_scans_to_hold():
    """Its output moves by the rounding of adding and taking back the perturbed spare, as much
    as an honest deep stage's (DeepReLUStage1): the probe cannot tell them apart, and the scan
    reads the in-place pair (grader/integrity/cancelling.py)."""
    import ast
    import inspect
    import textwrap

    from grader.integrity.cancelling import cancelling_findings
    source = textwrap.dedent(inspect.getsource(AddedAndTakenBack.join))
    held = list(cancelling_findings(ast.parse(source)))
    assert held, ("expected the scan to hold `y += side; y -= side.detach()` (a cancelling term "
                  "the value probe reads as rounding); observed no finding; where to look: "
                  "grader/integrity/cancelling.py")


def test_the_normal_run_perturbs_nothing(tmp_path):
    normal = trained(tmp_path, Sequential, probing=False)
    assert not [e for e in normal.events if e.get("event") == "perturbed"], (
        "expected no perturbed records in a normal run; where to look: grader/vgpu/perturb.py")
    assert [e for e in normal.events if e.get("event") == "pass_value"], (
        "expected a pass_value digest of each training pass in a normal run")


def test_only_a_marked_key_makes_a_probe():
    assert not any(key_marked(new_key()) for _ in range(64)), \
        "expected a normal run's key never to be marked (grader/records/seal.py new_key)"
    assert all(key_marked(new_key(marked=True)) for _ in range(64)), \
        "expected a probe's key always to be marked"


class _Runs:
    """The handout's runs as test_practical10.HandoutRuns asks for them: `normal` for the runs
    of any number of processes, `probe` for the value probe."""

    def __init__(self, normal: Observation, probe: Observation):
        self.normal, self.probe = normal, probe
        self.made: dict = {}

    def script(self, probe=False, **spec):
        key = (probe, spec["nproc"], tuple(sorted((spec.get("sets") or {}).items())))
        if key not in self.made:
            source = self.probe if probe else self.normal
            self.made[key] = Observation("practical10/sample.py", gpus=4, nproc=spec["nproc"],
                                         returncode=0, events=list(source.events), stdout="")
        return self.made[key]


def test_part_4s_single_process_reads_the_probe_of_rank_0(tmp_path):
    runs = _Runs(trained(tmp_path, CancelledBySub, probing=False),
                 trained(tmp_path, CancelledBySub, probing=True))
    handout = p10.HandoutRuns(runs, REFERENCE)
    assert p10.stage_gpus(handout.run(), 0) == [0]
    single = p10.stage_gpus(handout.run(processes=1), 0)
    assert single == [0], (
        f"expected Part 4's one process (rank 0, the same code on cuda:0 and cuda:2) to read the "
        f"cancelled spare on cuda:2 as no stage, as the handout's run does; observed {single}; "
        "where to look: test_practical10.HandoutRuns.run")
