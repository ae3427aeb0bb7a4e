"""A sum or difference whose two terms cancel exactly inside a training pass: a value taken away
from itself, seen at run time in the value probe's run.

A one-stage replica passed its spare on cuda:r+2 off as a second stage by adding `side -
frozen`, `frozen` a copy of `side` without its gradient (its full gradient comes back to the
spare, its value never reaches the output), and moving the output only where it noticed the
probe (red team adv54 F1: `frozen = getattr(side, "det" + "ach")()`, which the scan of the text,
grader/integrity/cancelling.py, does not read). However the copy is spelled (`.detach()` by any
name, `.data`, a clone under no_grad, the layer computed again from its parameters), the op
that takes it away sees both terms: equal, not zero, the result zero everywhere while a
gradient flows through it. No course solution computes that in its forward. The value probe's
run (grader/vgpu/perturb.py) routes these ops here (mode.py `_route`) and records each place
once (`cancelled`: device, op, site), which grader/checks/value_probe.py holds for a person.
A normal run does not pay for it: its ops keep their routes. The terms are compared broadcast,
as the op combines them: a leading axis of one on the copy had walked past a comparison of equal
shapes, and `torch.stack([frozen, side]).diff(dim=0)` takes one from the other in a `diff`
(`.sum(0)` of a stack with the copy negated, in a `sum`; red team adv57 F-C, 10 of 12 where a
TA gives 7.25).
"""
from __future__ import annotations

import math

import torch

from grader.vgpu import observe
from grader.vgpu.trace import call_site, get_trace

# The ops that add or take away one tensor from another, by name; `rsub` and `__rsub__` take
# the first from the second, and the cancellation reads the same either way.
SUBTRACTING = frozenset({"sub", "sub_", "subtract", "subtract_", "rsub", "__rsub__",
                         "__sub__", "__isub__"})
# `diff` takes each slice from the next: `torch.stack([frozen, side]).diff(dim=0)` is `side -
# frozen` in one op on one tensor (red team adv57 F-C).
DIFFERENCING = frozenset({"diff"})
# `torch.stack([side, -frozen]).sum(0)` adds the two in a reduction; read only where the summed
# tensor was joined in one op from a part without a gradient (a sum is a hot op).
SUMMING = frozenset({"sum"})
CANCELLING = SUBTRACTING | DIFFERENCING | SUMMING | frozenset({"add", "add_", "__add__", "__iadd__",
                                                     "__radd__"})
# Places recorded per process, at most: each site once is what a person reads.
_PLACES = 16
# A remainder of at most this much of the first term (largest element against largest) reads as
# cancelled too, where one term takes a gradient and the other does not (a copy without it):
# `side - frozen * (1 - 1e-6)` keeps a millionth of the spare's value, which the probe's
# perturbation moves, and read as a stage beside a term that notices the probe (measured,
# eng_probe4). Honest arithmetic in a forward does not take a tensor from a copy of itself.
NEAR = 1e-3

_seen: set = set()


def reset() -> None:
    """A new run in this process (a node activated again) records its places afresh."""
    _seen.clear()


def watching() -> bool:
    """Whether this process is a value probe's run (its ops in CANCELLING come here)."""
    from grader.vgpu import perturb
    probe = perturb._probe
    return probe is not None and probe.perturbing


def check(name: str, args, kwargs, label_of) -> None:
    """Record `name(*args, **kwargs)` where it takes a tensor from an equal one (adds its
    negation), or from one within NEAR of it that has no gradient where the other has, inside a
    training pass, with a gradient through it: before the op runs, as an in-place one (`y -=
    frozen`) leaves nothing of its first term to read. Terms of different shapes are read
    broadcast (`(side - frozen.unsqueeze(0)).squeeze(0)`, adv57 F-C); a `diff` is read slice
    against slice. `label_of`: the node's, the GPU of a tensor."""
    if not args or not _in_training_pass() or not watching():
        return   # (a route kept from a probe switched off since)
    if name in DIFFERENCING or name in SUMMING:
        _check_joined(name, args, kwargs, label_of)
        return
    if len(args) < 2:
        return
    first, second = args[0], args[1]
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)) \
            or first is second or not (first.requires_grad or second.requires_grad) \
            or not first.is_floating_point() or not second.is_floating_point() \
            or not first.numel() or not second.numel():
        return
    alpha = (kwargs or {}).get("alpha", args[2] if len(args) > 2 else 1)
    if not isinstance(alpha, (int, float)) or not alpha:
        return
    sign = -alpha if name in SUBTRACTING else alpha
    with torch._C.DisableTorchFunction(), torch.no_grad():
        try:
            first_value, second_value = torch.broadcast_tensors(first, second)
        except RuntimeError:
            return   # (shapes that do not broadcast: the op itself will say so)
        size = float(first_value.abs().max())
        left = float((first_value + sign * second_value).abs().max())
    _record_if_cancelled(name, first, size, left,
                         first.requires_grad != second.requires_grad, label_of)


def _check_joined(name: str, args, kwargs, label_of) -> None:
    """`diff` or `sum` of a tensor with a gradient whose slices cancel: a `diff` exactly, or
    either within NEAR where the tensor was stacked or joined from a part without a gradient (a
    copy of the other)."""
    values = args[0]
    if not isinstance(values, torch.Tensor) or not values.requires_grad \
            or not values.is_floating_point() or values.numel() < 2:
        return
    joined = _joined_with_a_gradless_part(values)
    if name in SUMMING and not joined:
        return
    operation = torch.diff if name in DIFFERENCING else torch.sum
    with torch._C.DisableTorchFunction(), torch.no_grad():
        try:
            result = operation(*args, **(kwargs or {}))
        except (RuntimeError, TypeError, IndexError):
            return
        if not isinstance(result, torch.Tensor) or not result.numel():
            return
        size = float(values.abs().max())
        left = float(result.abs().max())
    _record_if_cancelled(name, values, size, left, joined, label_of)


def _joined_with_a_gradless_part(values: torch.Tensor) -> bool:
    """Whether `values` was made in one op from parts of which one takes no gradient
    (`torch.stack([frozen, side])`: no edge goes back to `frozen`)."""
    grad_fn = values.grad_fn
    edges = getattr(grad_fn, "next_functions", ()) if grad_fn is not None else ()
    return any(edge is None for edge, _ in edges) and any(edge is not None for edge, _ in edges)


def _record_if_cancelled(name: str, first: torch.Tensor, size: float, left: float,
                         one_side_gradless: bool, label_of) -> None:
    """Record the op where it leaves nothing of a nonzero value, or at most NEAR of it with one
    side taking no gradient; each site once."""
    if not size or not math.isfinite(size) or not math.isfinite(left) or left and not (
            left <= NEAR * size and one_side_gradless):
        return
    site = call_site(4)
    place = (name, site)
    if place in _seen or len(_seen) >= _PLACES:
        return
    _seen.add(place)
    index = label_of(first)
    get_trace().emit("cancelled", op=name, site=site, left=left / size,
                     device=f"cuda:{index}" if index is not None else "cpu",
                     **observe._thread_fields())


def _in_training_pass() -> bool:
    tls = observe._tls
    return getattr(tls, "depth", 0) >= 1 and getattr(tls, "grad_watch", None) is not None \
        and torch.is_grad_enabled() and get_trace().enabled and not observe.in_backward()
