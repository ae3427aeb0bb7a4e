"""Practical 10's weight guard and checkpoints of the run's own loaded back mid-run
(grader/vgpu/side_steps.py, SideSteps._restored).

Honest: a checkpoint saved with `torch.save(model.module.state_dict())` after a step and loaded
back a step later to test resuming (also one saved after a clamp), the start saved before the
first step and restored after a trial step, the best step's weights rolled back to before a
step, Lookahead written by hand (the slow weights interpolated into the model). Each load
brings back weights the model's own optimizer made (or its start), bit for bit, or moves them
back toward them, yet grows about half the values the last step left: every step after the
load was read as weights written beside the optimizer (`weights_written`), which zeroes the
training checks. Forged, and still so: a copy trained by hand loaded after honest steps, the
weights a forged load left "restored" later, the model's own last move repeated by hand.

Each test runs one process group of one rank in the test's own process, the model in DDP.
"""
from __future__ import annotations

import copy
import io

import torch

from grader.checks import practical_measures as pm
from tests.grading.test_gradients_made_elsewhere import batch
from tests.grading.test_passes_of_copies import micro_batches
from tests.grading import test_side_steps as side_steps
from tests.grading.test_side_steps import steps_of
from tests.grading.test_side_steps_by_hand import LR, by_hand, pattern

ddp_run = side_steps.ddp_run   # the fixture: a one-rank process group, the model in DDP

STEPS = 3


def written(events) -> list[bool]:
    """Per step of the model: whether it was read as made beside its passes."""
    return [s.get("weights_written") is True and pm.made_outside(s) for s in steps_of(events)]


def assert_honest(events, where: str) -> None:
    steps = pattern(events)
    assert [(s["forwards"], s["rows"], s["backwards"]) for s in steps] == \
        [(4, [8] * 4, 4)] * STEPS and written(events) == [False] * STEPS, (
        f"expected {STEPS} steps of 4 micro-batches of 8 rows, none written beside the "
        f"optimizer; observed {steps}, written per step {written(events)} (look: {where})")


def saved(model) -> bytes:
    """`torch.save(model.module.state_dict(), path)`, in memory."""
    file = io.BytesIO()
    torch.save(model.module.state_dict(), file)
    return file.getvalue()


def load(model, checkpoint: bytes) -> None:
    model.module.load_state_dict(torch.load(io.BytesIO(checkpoint)))


def train(model, optimizer, x, y, before_step=None, after_step=None) -> None:
    """The handout's loop for STEPS steps; `before_step(step)` runs after the micro-batches,
    `after_step(step)` after optimizer.step()."""
    for step in range(STEPS):
        optimizer.zero_grad()
        micro_batches(model, x, y)
        if before_step:
            before_step(step)
        optimizer.step()
        if after_step:
            after_step(step)


# -- honest: the run's own checkpoints loaded back ---------------------------------------------


def test_a_checkpoint_of_step_0_loaded_back_after_step_1_to_test_resuming(ddp_run):
    events, model, optimizer = ddp_run()
    x, y = batch()
    kept = {}

    def resume(step):
        if step == 0:
            kept["ckpt"] = saved(model)
        if step == 1:
            load(model, kept["ckpt"])

    train(model, optimizer, x, y, after_step=resume)
    assert_honest(events, "side_steps.SideSteps._restored, _remember")


def test_the_start_restored_after_a_trial_step(ddp_run):
    """The weights saved before the first pass (deepcopy of the state dict), loaded back after
    a smoke test of the step: the real run starts from them."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    start = copy.deepcopy(model.module.state_dict())
    train(model, optimizer, x, y,
          after_step=lambda step: step == 0 and model.module.load_state_dict(start))
    assert_honest(events, "side_steps.SideSteps._restored (the mark at the wrap or first pass)")


def test_a_rollback_to_the_best_step_before_a_step(ddp_run):
    """The best weights so far kept as tensors; a step whose loss got worse is rolled back
    before the optimizer steps (here: every step after the first)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    best = {}

    def roll_back(step):
        if step > 0:
            with torch.no_grad():
                for p, b in zip(model.module.parameters(), best["weights"]):
                    p.copy_(b)
        best["weights"] = [p.detach().clone() for p in model.module.parameters()]

    train(model, optimizer, x, y, before_step=roll_back)
    assert_honest(events, "side_steps.SideSteps._restored")


def test_a_checkpoint_saved_after_a_clamp_loaded_back_later(ddp_run):
    """Each step followed by a clamp of the weights, the checkpoint saved after it: the state
    saved is the clamp's, which no step left (the mark is taken inside the step, before the
    clamp); it is remembered where the next step finds it let be."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    kept = {}

    def clamp_and_checkpoint(step):
        with torch.no_grad():
            for p in model.module.parameters():
                p.clamp_(-0.05, 0.05)
        if step == 0:
            kept["ckpt"] = saved(model)
        if step == 1:
            load(model, kept["ckpt"])

    train(model, optimizer, x, y, after_step=clamp_and_checkpoint)
    assert_honest(events, "side_steps.SideSteps._judge (states let be are remembered)")


def lookahead(model, alpha=0.5):
    """Lookahead written by hand: after each step the slow weights move toward the fast ones by
    `alpha` and are written into the model. () -> the after_step callback."""
    slow = [p.detach().clone() for p in model.module.parameters()]

    def sync(step):
        with torch.no_grad():
            for s, p in zip(slow, model.module.parameters()):
                s.add_(p.detach() - s, alpha=alpha)
                p.copy_(s)
    return sync


def test_lookahead_written_by_hand_moves_the_weights_back_between_past_states(ddp_run):
    """Each write lies between a state the run had (the slow weights) and the step's weights;
    from the second on the slow weights are the first write's (remembered where it was
    judged)."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    train(model, optimizer, x, y, after_step=lookahead(model))
    assert_honest(events, "side_steps.SideSteps._between, _judge (the state remembered)")


# -- forged: loads of weights the model's optimizer never made ---------------------------------


def test_weights_extrapolated_past_the_last_step_are_written(ddp_run):
    """The model's own last move repeated by hand (w + (w - w_before)): training onward, not
    back toward a past state."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    before = {}

    def extrapolate(step):
        if "w" in before:
            with torch.no_grad():
                for p, b in zip(model.module.parameters(), before["w"]):
                    p.add_(p.detach() - b)
        before["w"] = [p.detach().clone() for p in model.module.parameters()]

    train(model, optimizer, x, y, before_step=extrapolate)
    assert written(events) == [False, True, True], (
        f"expected the steps after the extrapolations written; observed {written(events)} "
        f"(look: side_steps._between_at)")


def hand_trained(model, x, y, steps: int) -> list[torch.Tensor]:
    w = [p.detach().clone() for p in model.module.parameters()]
    for _ in range(steps):
        with torch.no_grad():
            for t, g in zip(w, by_hand(w, x, y)):
                t -= LR * g
    return w


def write(model, weights) -> None:
    with torch.no_grad():
        for p, t in zip(model.module.parameters(), weights):
            p.copy_(t)


def decoy_step(model, optimizer, x, y) -> None:
    """A step of "micro-batches" of a loss scaled by 1e-9: the weights stay as they are."""
    optimizer.zero_grad()
    micro_batches(model, x, y, scale=1e-9)
    optimizer.step()


def test_a_copy_trained_by_hand_and_loaded_after_an_honest_step_is_still_written(ddp_run):
    """An honest first step leaves two states to restore (the start, its weights); weights
    trained by hand are neither."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    optimizer.zero_grad()
    micro_batches(model, x, y)
    optimizer.step()
    for step in range(1, STEPS):
        write(model, hand_trained(model, x, y, 1))
        decoy_step(model, optimizer, x, y)
    assert written(events) == [False, True, True], (
        f"expected the steps after the loads written beside the optimizer; observed "
        f"{written(events)} (look: side_steps.SideSteps._restored)")


def test_weights_a_written_step_left_are_no_state_to_restore(ddp_run):
    """The forged weights loaded before step 0 (written), saved after it; a trial of other
    weights, then the forged ones "restored": the step after is written too."""
    events, model, optimizer = ddp_run()
    x, y = batch()
    forged = hand_trained(model, x, y, 5)
    start = [p.detach().clone() for p in model.module.parameters()]
    for step in range(STEPS):
        write(model, forged if step != 1 else start)
        decoy_step(model, optimizer, x, y)
    assert written(events) == [True, False, True], (
        f"expected steps 0 and 2 written (the forged weights), step 1 not (the start "
        f"restored); observed {written(events)} (look: SideSteps.stepped, restorable)")


def test_decoys_leave_one_state_so_a_sparse_write_finds_no_older_match():
    """Where the model's steps never move its weights (decoys of a loss scaled by 1e-9) only
    one state is remembered however many marks were taken: a write growing some values cannot
    pass as a restore of an older mark of that same state."""
    from grader.vgpu.side_steps import SideSteps
    side = SideSteps()
    module = torch.nn.Linear(64, 64)
    side.wrapped(module)
    parameters = list(module.parameters())
    for _ in range(5):
        assert side.written_beside(parameters, False, None) is None
        side.stepped(parameters)
    assert all(len(side._past[id(p)]) == 1 for p in parameters), (
        f"expected one state remembered per parameter; observed "
        f"{[len(side._past[id(p)]) for p in parameters]} (look: SideSteps._remember)")
    with torch.no_grad():
        module.weight.view(-1)[::8].mul_(1.5)   # a sparse write growing 1 value in 8
    assert side.written_beside(parameters, False, None) == "written"


def test_each_mark_holds_its_own_values_at_past_states():
    """A mark's values at the states remembered before it are its own: a dict shared by every
    mark (a class-level default) would let one mark's record show in another's, and
    `_between` read a past state the parameter never had."""
    from grader.vgpu.side_steps import ParameterMark
    first, second = torch.nn.Parameter(torch.ones(8)), torch.nn.Parameter(torch.zeros(8))
    marks = [ParameterMark(first), ParameterMark(second)]
    marks[0].at_past[12345] = torch.ones(2)
    assert marks[1].at_past == {} and ParameterMark(first).at_past == {}, (
        f"expected a fresh mark's at_past empty; observed {marks[1].at_past} after another "
        "mark's was written (look: ParameterMark.__init__, SideSteps._remember)")
    assert marks[0].at_past is not marks[1].at_past
