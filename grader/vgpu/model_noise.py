"""Layers that make a model's output depend on more than its weights and its rows: dropout in
training mode (a random mask drawn per call) and batch normalisation with the batch's own
statistics (each row normalised by the rows it rides with).

Practical 10 checks that the gradient accumulated over MICRO_BATCHES micro-batches equals the
full-batch gradient. For such a model it does not, honestly: other dropout masks, and statistics
of each micro-batch instead of the whole batch's (a red team's honest scripts with Dropout and
BatchNorm1d, adv49 S1, lost the item to a message that blamed rows left out). The virtual GPUs
note the first call of each such op in a process (a `model_noise` record: the op, its GPU), so the
check can tell that the two gradients are not comparable, from what ran rather than from the
script's text (a Dropout built and left in eval mode, or of p = 0, changes nothing, and is not
noted). Only calls inside a pass of the model count (a root module's forward under way,
grader/vgpu/observe.py `in_model_pass`), and only dropout of p >= MIN_DROPOUT: a red team's script
with wrong targets (adv54 F2) won the item back with `nn.Dropout(p=1e-9)` in the model, or one
`F.dropout(torch.ones(4, device=device0), 1e-9)` on a dummy tensor before the loop, since the
noisy path compared gradient norms only.

In the check's own runs the noise is held still (`hold_still`, in a run whose seal key says
steady: grader/records/seal.py): dropout is not applied (what eval mode does) and batch_norm
normalises with its running statistics, in the full-batch run and the micro-batch runs alike, so
a row's output no longer depends on the masks drawn or the rows it rides with and the two
gradients are compared exactly again. A Dropout(0.1) beside a loop that trained each micro-batch
on the next one's targets had kept the item by norms (adv54 F2). Sound for what the item asks:
the loop's weighting of the micro-batches and the rows and targets they hold, none of which the
noise is part of; the handout's model has neither layer. A batch_norm keeping no running
statistics (track_running_stats=False) cannot be held still: its runs keep the weaker comparison.
"""
from __future__ import annotations

import torch

from grader.vgpu.observe import in_model_pass

# The dropout family: (input, p, training) as torch's functions and nn.Dropout's forward call them.
DROPOUTS = frozenset({
    "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "feature_dropout",
    "feature_dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_",
})
BATCH_NORM = "batch_norm"
# Where F.batch_norm's `training` argument sits: (input, running_mean, running_var, weight, bias,
# training, momentum, eps).
_BATCH_NORM_TRAINING = 5
# The least dropout that counts as noise. A smaller p is no regularisation anyone trains with
# (courses use 0.1-0.5; p = 1e-9 drops no element of the handout's batch): noting it changed no
# honest grade and only opened the weaker, norms-only comparison to a loop with wrong targets
# (adv54 F2). Such a dropout is compared exactly, as a model without one.
MIN_DROPOUT = 0.01


def _argument(args, kwargs, index: int, names: tuple[str, ...], default):
    if len(args) > index:
        return args[index]
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return default


def changes_the_output(name: str, args, kwargs) -> bool:
    """Whether a call of op `name` makes the output depend on a random mask or on the other rows
    of its batch: dropout with p >= MIN_DROPOUT in training mode (F.dropout's default),
    batch_norm in training mode (nn.BatchNorm* passes `training` true also where it keeps no
    running statistics)."""
    if name in DROPOUTS:
        p = _argument(args, kwargs, 1, ("p",), 0.5)
        training = _argument(args, kwargs, 2, ("training", "train"), True)
        try:
            return bool(training) and float(p) >= MIN_DROPOUT
        except (TypeError, ValueError):
            return bool(training)
    if name == BATCH_NORM:
        return bool(_argument(args, kwargs, _BATCH_NORM_TRAINING, ("training",), False))
    return False


# Where each op keeps its running statistics: F.batch_norm (input, running_mean, running_var, ...),
# torch.batch_norm (input, weight, bias, running_mean, running_var, training, ...).
_RUNNING = {"F": ((1, "running_mean"), (2, "running_var")), "aten": ((3, "running_mean"),
                                                                      (4, "running_var"))}


def _with_argument(args, kwargs, index: int, names: tuple[str, ...], value):
    """(args, kwargs) with the argument at `index` (or named one of `names`) set to `value`,
    given as the first name where the call gave it neither way."""
    if len(args) > index:
        return args[:index] + (value,) + args[index + 1:], kwargs
    name = next((name for name in names if name in kwargs), names[0])
    return args, {**kwargs, name: value}


def hold_still(func, name: str, args, kwargs):
    """(args, kwargs) of a call of op `name` with its noise held still: a dropout not applied
    (training false, as in eval mode: the op returns its input), a batch_norm in training mode
    normalising with the running statistics it keeps; None where the call has nothing to hold
    (no dropout, batch_norm in eval mode) or cannot be held (batch_norm keeping no running
    statistics)."""
    args = tuple(args)
    if name in DROPOUTS:
        if not _argument(args, kwargs, 2, ("training", "train"), True):
            return None
        return _with_argument(args, kwargs, 2, ("training", "train"), False)
    if name != BATCH_NORM or not changes_the_output(name, args, kwargs):
        return None
    running = _RUNNING["F" if func is torch.nn.functional.batch_norm else "aten"]
    if not all(isinstance(_argument(args, kwargs, index, (key,), None), torch.Tensor)
               for index, key in running):
        return None
    return _with_argument(args, kwargs, _BATCH_NORM_TRAINING, ("training",), False)


class ModelNoise:
    """Which kinds of op of DROPOUTS and BATCH_NORM were seen changing a model's output, held
    still or not: each is written down once per process (a `model_noise` record, by
    grader/vgpu/mode.py), and a kind held still once more where a call of it is not."""

    def __init__(self):
        self._noted: set[tuple[str, bool]] = set()

    def unnoted(self, name: str, args, kwargs, held: bool = False) -> str | None:
        """The kind of op ("dropout", "batch_norm") a call of `name` is, where it changes the
        output inside a pass of the model and that kind is not noted yet (as `held` still, or
        not); else None (the common case, and cheap). A call outside the passes (a dummy
        tensor's dropout before the loop) changes no gradient the check compares."""
        kind = BATCH_NORM if name == BATCH_NORM else "dropout"
        if (kind, held) in self._noted or not in_model_pass() or \
                not changes_the_output(name, args, kwargs):
            return None
        return kind

    def noted(self, kind: str, held: bool = False) -> None:
        """`kind` was written down (by grader/vgpu/mode.py, a module the trace takes records
        from): never again in this process, held still or not as it was."""
        self._noted.add((kind, held))
