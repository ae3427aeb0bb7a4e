"""Gradients the script threw away by hand, read from the gradients themselves.

`optimizer.zero_grad()` and `model.zero_grad()` are recorded as they are called (observe.py's
zero_grad watch). Students throw gradients away other ways too: `p.grad = None` over the
parameters, `p.grad.zero_()` (after `p.grad.detach_()`), `p.grad = torch.zeros_like(p)`.
None of them calls anything the grader wraps (`Tensor.grad` is a property of torch's C
tensor; zero_ is an op like any other), so they are seen in `.grad`: what it holds as a
backward ends (DDP has averaged it by then) is remembered, and before the next pass or
backward a model all of whose remembered gradients are now None or zeros had them thrown
away. A gradient changed and not zero (clipped, unscaled, replaced by a non-zero tensor) was
not thrown away (what was written there is grad_writes.py's question).
"""
from __future__ import annotations

import weakref

import torch

# `.grad` read as torch keeps it (the virtual GPUs' Tensor.grad labels what it reads:
# grad_writes.py).
_GRAD = torch._C.TensorBase.grad


def _zero(grad) -> bool:
    """Whether every element of `grad` is zero (read outside the virtual GPUs' mode)."""
    try:
        with torch.no_grad(), torch._C.DisableTorchFunction():
            return not bool(grad.detach().any())
    except (RuntimeError, TypeError, NotImplementedError):
        return False


class GradResets:
    """The gradients left by the last backward, per parameter, and the models that lost them."""

    def __init__(self):
        # id(parameter) -> (weak reference to the parameter, to its .grad, .grad's version)
        self._left: dict[int, tuple] = {}

    def remember(self, parameters) -> None:
        """What `.grad` of each parameter (every model's) holds now (a backward ended, or a
        zero_grad the trace recorded ran): the gradients a later reset throws away."""
        left = {}
        for parameter in parameters:
            try:
                grad = _GRAD.__get__(parameter)
                if grad is not None:
                    left[id(parameter)] = (weakref.ref(parameter), weakref.ref(grad),
                                           grad._version)
            except (RuntimeError, TypeError, AttributeError):
                continue   # not known: never told thrown away
        self._left = left

    def holding(self) -> bool:
        """Whether any gradient is remembered (none after a zero_grad the trace recorded)."""
        return bool(self._left)

    def thrown_away(self, models) -> list[int]:
        """The numbers of the models ({number: its trained parameters}) every one of whose
        remembered gradients is gone (None) or zeroed since: each reset is told once, the
        gradients it threw away forgotten."""
        found, gone = [], []
        for number, parameters in models.items():
            # A model that holds another (DDP and the module it wraps) shares its parameters:
            # each is judged before any is forgotten.
            left = [p for p in parameters if self._remembered(p)]
            if left and all(self._reset(p) for p in left):
                found.append(number)
                gone += left
        for parameter in gone:
            self._left.pop(id(parameter), None)
        return sorted(found)

    def _remembered(self, parameter) -> bool:
        entry = self._left.get(id(parameter))
        return entry is not None and entry[0]() is parameter

    def _reset(self, parameter) -> bool:
        try:
            grad = _GRAD.__get__(parameter)
            if grad is None:
                return True
            _, before, version = self._left[id(parameter)]
            if before() is grad and grad._version == version:
                return False
        except (RuntimeError, TypeError, AttributeError):
            return False
        return _zero(grad)
