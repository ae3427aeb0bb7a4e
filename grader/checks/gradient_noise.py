"""Practical 10's full-batch gradient where the model itself keeps it from being equal.

practical10.gradient_equals_full_batch compares the gradient accumulated over MICRO_BATCHES
micro-batches with the full-batch gradient (MICRO_BATCHES = 1) at the first step. A model with
dropout in training mode (other random masks in each run) or batch normalisation with the
batch's statistics (each micro-batch normalised by its own rows, not the whole batch's) gives a
gradient 1-4% off even where the loss line is right, and a model that starts from other weights
in each run (`ddp_wrap`'s `params` differ) another gradient altogether: a red team's honest
scripts (adv49 S1: Dropout, BatchNorm1d, bf16 autocast; unseeded Dropout with a shuffling
DataLoader) lost the item, told that rows were left out or gradients zeroed, which was false for
them.

What stays comparable is the weight the loss gives each micro-batch's output: the gradient that
reaches the passes' outputs (`forward_used`'s g, grader/vgpu/observe.py). With each micro-batch's
mean loss divided by MICRO_BATCHES, the outputs of the step's passes together get the gradient
the whole batch's output gets (the same per row, up to what the noise changes in the outputs);
without the division MICRO_BATCHES times it, divided twice 1/MICRO_BATCHES of it. So for such a
model the check reads the loss weighting from the passes, the zero_grad records for gradients
thrown away between micro-batches, and where neither settles it, holds the item for a person
with the cause named, never a 0 for a cause the code does not have.
"""
from __future__ import annotations

import math

from grader.checks.practical_measures import first_step_passes, zeroed_passes

# What each kind of `model_noise` record (grader/vgpu/model_noise.py) does to the comparison.
NOISE_SAID = {
    "dropout": "dropout in training mode (each run draws other random masks)",
    "batch_norm": "batch normalisation with the batch's own statistics (each micro-batch is "
                  "normalised by its own rows, not by the whole batch's)",
    "start": "weights that start elsewhere in each run (the model is built before any fixed "
             "seed, or from a seed drawn anew each run)",
}
# How far the outputs' gradient may be from the full batch's and still be the same weighting:
# the noise moves the outputs, the targets dominate the loss's gradient (adv49's scripts: under
# 0.5%); a weighting off by a factor is off by 2x or more.
WEIGHT_REL = 0.05
# How far the accumulated gradient may be from the full-batch one where the weighting is right and
# no gradient was thrown away: the noise's own share (adv49's scripts: 0.4-3%).
NOISE_REL = 0.1
# The least cosine of the accumulated gradient with the full-batch one that noise the runs cannot
# hold still explains (the first steps' sketches, grader/vgpu/gradient_sketch.py). Measured on
# the handout's loop (MICRO_BATCHES 2, 4, 8; DIM/HIDDEN 512/1024 and 32/64): BatchNorm1d with
# batch statistics 0.80-0.95 where the norms agree within NOISE_REL; each micro-batch trained on
# the next one's targets 0.16-0.58 (the bias gradients, sums over the whole step's targets, agree
# whatever their order). Dropout masks drawn anew give an honest loop 0.21-0.86 (two
# Dropout(0.5): 0.21), no better than wrong targets: which is why the check's runs hold dropout
# still (grader/vgpu/model_noise.py) and compare exactly, and never rely on this.
DIRECTION_MIN = 0.7


def noise_in(*runs) -> list[str]:
    """The kinds of noise the runs' models showed (rank 0's `model_noise` records), in order,
    and "start" where two runs' models started from other weights (`started_apart`). Noise the
    runs held still (`held`: the check's own runs, grader/vgpu/model_noise.py) is none: it
    changes no gradient, and a loop it would have excused (adv54 F2's wrong targets beside a
    Dropout(0.1)) is judged as one without it."""
    kinds = {e.get("op") for run in runs for e in run.of("model_noise", 0)
             if e.get("op") in NOISE_SAID and not e.get("held")}
    if len(runs) == 2 and started_apart(*runs):
        kinds.add("start")
    return sorted(kinds)


def start_of(run) -> tuple[float, float] | None:
    """(sum, sum of squares) of the weights rank 0's model was wrapped in DDP with (the first
    `ddp_wrap` record's `params`); None in a trace without them."""
    for event in run.of("ddp_wrap", 0):
        params = event.get("params")
        if isinstance(params, dict) and isinstance(params.get("sumsq"), (int, float)):
            return float(params.get("sum", 0.0)), float(params["sumsq"])
    return None


def started_apart(one, other) -> bool:
    """Whether the two runs' models started from other weights: the same seed gives the same
    weights bit for bit, so any difference beyond float printing is another start."""
    first, second = start_of(one), start_of(other)
    if first is None or second is None:
        return False
    return any(abs(a - b) > 1e-9 * max(1.0, abs(a), abs(b)) for a, b in zip(first, second))


def noise_said(kinds) -> str:
    return " and ".join(NOISE_SAID[kind] for kind in kinds)


def output_gradient(run) -> float | None:
    """The norm of the gradient that reached the outputs of the passes of rank 0's first step,
    all of them together; None where a pass's is not recorded."""
    reached = {e.get("n"): e.get("g") for e in run.of("forward_used", 0)}
    norms = [reached.get(p["n"]) for p in first_step_passes(run, 0)]
    if not norms or not all(isinstance(g, (int, float)) for g in norms):
        return None
    return math.sqrt(sum(g * g for g in norms))


def loss_weight(run, full_run) -> float | None:
    """The outputs' gradient in `run` over the full-batch run's: 1 where each micro-batch's loss
    is divided by MICRO_BATCHES; None where either is not known or the full batch's is zero."""
    mine, full = output_gradient(run), output_gradient(full_run)
    if mine is None or not full:
        return None
    return mine / full


def first_sketch(run) -> list | None:
    """The count sketch of rank 0's gradient at its first optimizer step (the `grads`
    fingerprint's `sketch`, written in the check's own steady runs: grader/vgpu/
    gradient_sketch.py); None where the run wrote none."""
    prints = run.fingerprints("grads").get(0, [])
    sketch = prints[0].get("sketch") if prints else None
    return sketch if isinstance(sketch, list) and sketch else None


def direction(run, full_run) -> float | None:
    """The cosine of the first step's gradient with the full-batch run's, from their sketches;
    None where either has none, they differ in size or one is zero."""
    one, other = first_sketch(run), first_sketch(full_run)
    if one is None or other is None or len(one) != len(other):
        return None
    dot = sum(a * b for a, b in zip(one, other))
    norms = math.sqrt(sum(a * a for a in one)) * math.sqrt(sum(b * b for b in other))
    return dot / norms if norms > 0 else None


def zeroed_in_first_step(run) -> bool:
    """Whether a zero_grad threw away gradients of rank 0's first step's passes before its
    optimizer step (`zeroed_passes`: made, then zeroed in the same step)."""
    zeroed = zeroed_passes(run, 0)
    return any(e.get("step") == 0 and e.get("n") in zeroed for e in run.of("forward", 0))
