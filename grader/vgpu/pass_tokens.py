"""A pass's own rows cut into more rows (tokens) inside it, told from other data.

A layer inside a pass handed more rows than the pass was handed ran on data the pass was not
given (a whole batch held by the model, adv28: `rows_inside`, observe.py), unless those rows are
the pass's own numbers cut finer: a Practical 10 stage working on tokens, `x.reshape(rows * 8,
-1)` of its micro-batch or of the activation the stage before handed it, reshaped back after.
Those hold the very numbers of the pass's input or of an output of one of its layers so far:
as many, with the same sum and sum of squares (fingerprints.py); the layers after the first on
tokens are handed the outputs of those before (nn.Sequential(Linear, ReLU, Linear) on tokens),
so outputs of as many rows as tokens found so far are kept as the pass's too. A whole batch
holds more numbers; other numbers of as many hold another sum. Known limit: tokens passed
between layers by a function, not a module (`torch.relu(layer(tokens))`), are no module's
output, and the layer after reads as run on other rows, as before. The tokens' rows are then no rows the pass
ran on beyond its own (an honest token stage had read as a pass on 8 times the micro-batch's
rows, its rows as no data of the batch: 7 of 12 where the reference earns 10).

Per thread, for the pass it runs: `opened` with the pass's input at its start, `layer_output`
after each layer call inside it (those of the pass's rows kept, the latest few, until the pass
ends: `closed`).
"""
from __future__ import annotations

import threading

import torch

from grader.vgpu.fingerprints import prints_of

# Layer outputs of a pass kept to compare with, at most (the latest).
_KEPT = 32
_tls = threading.local()


def opened(first: torch.Tensor | None) -> None:
    """A pass begins on `first` (its first tensor argument)."""
    if first is not None and first.dim():
        _tls.rows, _tls.data, _tls.counts = first.shape[0], [first], {first.shape[0]}
    else:
        closed()


def layer_output(output) -> None:
    """A layer inside the pass returned `output`: kept where it has the pass's rows, or as
    many as tokens of the pass found so far."""
    if getattr(_tls, "rows", 0) and isinstance(output, torch.Tensor) and output.dim() and \
            output.shape[0] in _tls.counts:
        _tls.data.append(output)
        del _tls.data[1:-_KEPT]


def closed() -> None:
    """The pass ended: nothing of it is held any longer."""
    _tls.rows, _tls.data, _tls.counts = 0, [], set()


def cut_from_pass(tensor: torch.Tensor) -> bool:
    """Whether `tensor`, a layer's input of more rows than its pass, holds the same numbers as
    the pass's input or an output of one of its layers so far (see the module's docstring)."""
    rows = getattr(_tls, "rows", 0)
    if not rows or not tensor.dim() or tensor.shape[0] <= rows:
        return False
    alike = [t for t in _tls.data if t.numel() == tensor.numel()]
    if not alike:
        return False
    (total, squares), *others = prints_of([tensor, *alike])
    if not any(_equal(total, other_total, squares) and _equal(squares, other_squares, squares)
               for other_total, other_squares in others):
        return False
    _tls.counts.add(tensor.shape[0])
    return True


def _equal(a: float, b: float, squares: float) -> bool:
    """Equal but for the order the float64 sums added the same numbers in."""
    scale = max(abs(a), abs(b), abs(squares) ** 0.5, 1e-30)
    return abs(a - b) <= 1e-9 * scale
