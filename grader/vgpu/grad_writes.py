"""What the script wrote into the model's `.grad` itself, per optimizer step.

The gradient sources (gradient_sources.py) see what backward hands each parameter. They did not
see what `.grad` holds at the step: a red team (adv31) set `.grad`, before the last backward, to
the whole batch's gradient taken on detached copies of the weights less what that backward then
adds. Backward still gave about as much as was applied, so `backward_share` said nothing, and
the step was micro-batching to every check.

So `.grad` is looked at where the script cannot have changed it unseen since the last look: as
backward is about to accumulate into it (the parameter's first hook), once it has (a
post-accumulate hook), at the step, and after a backward of a distributed run (below). What it
holds is compared with what the last look left there (`S`) and what backward has given the
parameter since the step before (`D`):
- nothing changed (the same tensor, its version unchanged), `None`, zeros: nothing written;
- a combination of `S` and `D`: scaling (`p.grad /= 1024`, `mul_(scale)`, clip_grad_norm_,
  GradScaler's unscale_), gradients summed in buffers of the script's own and assigned back;
- scaled, then clipped elementwise at one bound (clip_grad_value_, a clamping hook of the
  script's own): a clip, nothing written;
- anything else is written: what the combination leaves unexplained (`W`) is added to the
  parameter's written part (`U`), which later scalings scale and zeroing clears.
At the step, `written` is the written part's norm over `.grad`'s, over the stepped parameters:
a write that makes most of the applied gradient (`practical_measures.made_outside`) made the
step beside the passes, whatever the passes gave. Weight decay added into `.grad` is a few
hundredths of it; F3's write is nine tenths or more.

DDP averages `.grad` across the ranks as its backward ends (after the last look): in a
distributed run, what `.grad` holds then is taken as the new starting point, the written part
kept in proportion. A hook of the script's own that writes `.grad` during such a backward is
therefore not seen (README, Known limits). A gradient of `torch.autograd.grad` the script
assigns to `.grad` is written too: backward accumulated none of it.
"""
from __future__ import annotations

import math
import threading
import weakref

import torch

from grader.vgpu.norms import norm64

# `.grad` read as torch keeps it: the virtual GPUs' `Tensor.grad` (tensor_patches.py) labels the
# gradient with its parameter's GPU as it is read, and a look must not count its memory earlier
# than the script's own reads do.
_GRAD = torch._C.TensorBase.grad

# A change of `.grad` that a combination of what was there and what backward gave explains to
# within this share of its norm is no write (float32 rounding of a scaling is about 1e-7).
EXPLAINED = 1e-5


def _flat(tensor) -> torch.Tensor | None:
    """A float32 host copy of a dense floating-point gradient, flat; None for any other (a
    sparse one) or one that holds an inf or a NaN (GradScaler skips that step)."""
    if tensor.layout != torch.strided or not tensor.is_floating_point():
        return None
    flat = tensor.detach().reshape(-1).to("cpu", torch.float32, copy=True)
    return flat if _finite(flat) else None


def _finite(flat) -> bool:
    """Whether `flat` holds no inf and no NaN. Its float32 norm is finite only then, at a
    fifth of the float64 norm's cost (0.12 ms against 0.54 for a million elements; every
    parameter's `.grad` is looked at after every backward); where that overflows, the float64
    norm says."""
    return math.isfinite(float(torch.linalg.vector_norm(flat))) or math.isfinite(_norm(flat))


def _norm(vector) -> float:
    return float(norm64(vector))


def _dot(a, b) -> float:
    return float(torch.dot(a, b))


def _fit(now, basis, small: float) -> tuple[list, torch.Tensor, float]:
    """Least-squares coefficients of `now` on the vectors of `basis`, what they leave (the
    residual) and its norm, refined once where that is over `small` (float32 dot products of a
    million elements are good to about 1e-6, and a scaling must leave nothing)."""
    coefficients = [0.0] * len(basis)
    residual = now
    for _ in range(2):
        gram = torch.tensor([[_dot(a, b) for b in basis] for a in basis], dtype=torch.float64)
        right = torch.tensor([_dot(a, residual) for a in basis], dtype=torch.float64)
        step = (torch.linalg.pinv(gram) @ right).tolist()
        residual = residual.clone()
        for c, b in zip(step, basis):
            residual.sub_(b, alpha=c)
        coefficients = [c + d for c, d in zip(coefficients, step)]
        size = _norm(residual)
        if size <= small:
            break
    return coefficients, residual, size


def _clipped(now, before):
    """`now` read as `before` scaled, then clipped elementwise at one bound (clip_grad_value_,
    a clamping hook): (the scale, what that leaves unexplained). The elements at the bound are
    explained where `before`, scaled, reached it with the same sign; the others are `before`
    scaled."""
    bound = float(now.abs().max())
    at_bound = now.abs() >= bound * (1 - 1e-6)
    inside = ~at_bound
    scale = 1.0
    if bool(inside.any()):
        below = before[inside]
        scale = _dot(now[inside], below) / max(_dot(below, below), 1e-300)
    scaled = before * scale
    residual = now - scaled
    reached = at_bound & (now * scaled > 0) & (scaled.abs() >= bound * (1 - 1e-4))
    residual[reached] = 0
    return scale, residual


def _explain(now, before, given, size: float):
    """How `now` follows from `before` (the last look) and `given` (what backward gave since
    the step): (the share of `before` kept, the unexplained residual or None). Of the ways it
    may follow (scaled; with what backward gave; scaled and clipped by value), the first that
    explains it, else the one that leaves least unexplained. Each way's residual norm is taken
    once (kept, residual, its norm): a million-element norm costs more than the fit."""
    small = EXPLAINED * size
    found = []
    if before is not None:
        (kept,), residual, left = _fit(now, [before], small)
        found.append((kept, residual, left))
    if given is not None and not (found and found[-1][2] <= small):
        basis = [before, given] if before is not None else [given]
        coefficients, residual, left = _fit(now, basis, small)
        found.append((coefficients[0] if before is not None else 0.0, residual, left))
    if before is not None and not (found and found[-1][2] <= small):
        scale, residual = _clipped(now, before)
        found.append((scale, residual, _norm(residual)))
    kept, residual, left = min(found, key=lambda f: f[2], default=(0.0, now, None))
    if left is None:
        left = _norm(residual)
    return kept, (None if left <= small else residual)


class _Parameter:
    __slots__ = ("parameter", "last", "seen", "written", "given", "raw")

    def __init__(self, parameter, gone):
        self.parameter = weakref.ref(parameter, gone)
        self.last = None      # S: .grad at the last look (flat copy), None where None or zero
        self.seen = None      # (weak reference to that .grad tensor, its version)
        self.written = None   # U: the part of .grad the script wrote (flat), None where none
        self.given = None     # D: what backward accumulated since the last step (flat)
        self.raw = None       # the gradient backward is accumulating now, before any hook


class GradWrites:
    """The looks at the watched parameters' `.grad` and the written share at each step."""

    def __init__(self):
        # Reentrant: a garbage collection inside a locked part may free a node or parameter,
        # whose callback takes the lock again in the same thread.
        self._lock = threading.RLock()
        self._states: dict[int, _Parameter] = {}

    def watch(self, parameter) -> None:
        """A post-accumulate hook on the parameter, registered with it (before the script's
        own, which may write `.grad`: seen at the next look)."""
        try:
            parameter.register_post_accumulate_grad_hook(self._accumulated)
        except (RuntimeError, AttributeError):
            pass

    def _state(self, parameter) -> _Parameter:
        state = self._states.get(id(parameter))
        if state is None or state.parameter() is not parameter:
            key = id(parameter)

            def gone(ref, key=key):   # its copies go with the parameter (a model let go of)
                with self._lock:
                    held = self._states.get(key)
                    if held is not None and held.parameter is ref:
                        del self._states[key]

            state = _Parameter(parameter, gone)
            with self._lock:
                self._states[key] = state
        return state

    # -- the looks ---------------------------------------------------------------------------
    def before_accumulation(self, parameter, raw) -> None:
        """Backward is about to accumulate `raw` into the parameter's `.grad` (the parameter's
        first hook, before any of the script's)."""
        with torch.no_grad(), torch._C.DisableTorchFunction():
            state = self._state(parameter)
            self._safely(self._look, state, _GRAD.__get__(parameter))
            # Kept only where the script hooked the parameter too (the grader's hook is one of
            # `_backward_hooks`): without a hook of its own, backward accumulates it as it is.
            hooks = getattr(parameter, "_backward_hooks", None)
            state.raw = _flat(raw) if isinstance(raw, torch.Tensor) and hooks is not None \
                and len(hooks) > 1 else None

    def _accumulated(self, parameter) -> None:
        with torch.no_grad(), torch._C.DisableTorchFunction():
            state = self._states.get(id(parameter))
            if state is None or state.parameter() is not parameter:
                return   # not a watched model's (GradientSources.add_model)
            self._safely(self._after_accumulation, state, _GRAD.__get__(parameter))

    def _after_accumulation(self, state: _Parameter, grad) -> None:
        """Backward has accumulated into `.grad`: what it added (`given`) is the raw gradient,
        scaled or clipped by the script's hooks; the rest of the change was written there (a
        hook of the script's own that hands on a tensor of its own, or writes `.grad`)."""
        raw, state.raw = state.raw, None
        now = _flat(grad) if isinstance(grad, torch.Tensor) else None
        if now is None:
            state.last = state.seen = state.written = None
            return
        if raw is not None:
            given = now.clone() if state.last is None else now - state.last
            size = _norm(given)
            _, residual = _explain(given, raw, None, size) if size > 0 else (0.0, None)
            if residual is not None:
                state.written = residual if state.written is None else \
                    state.written.add_(residual)
                state.given = given - residual if state.given is None else \
                    state.given.add_(given).sub_(residual)
            else:
                state.given = given if state.given is None else state.given.add_(given)
        elif state.given is None:
            state.given = now.clone() if state.last is None else now - state.last
        else:
            state.given.add_(now)
            if state.last is not None:
                state.given.sub_(state.last)
        state.last, state.seen = now, (weakref.ref(grad), grad._version)

    def backward_ended(self) -> None:
        """The outermost backward has returned. In a distributed run DDP has averaged `.grad`
        across the ranks by now: that is the new starting point, the written part kept in
        proportion (the other ranks' parts cannot be seen from here)."""
        if not _distributed():
            return
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for state in list(self._states.values()):
                parameter = state.parameter()
                grad = _GRAD.__get__(parameter) if parameter is not None else None
                if not isinstance(grad, torch.Tensor) or _unchanged(state, grad):
                    continue
                now = _flat(grad)
                if now is None:
                    continue
                if state.written is not None:
                    before = _norm(state.last) if state.last is not None else 0.0
                    state.written = state.written * (_norm(now) / before) if before else None
                state.last, state.seen = now, (weakref.ref(grad), grad._version)

    def step_share(self, parameters) -> float | None:
        """The share of the stepped parameters' `.grad` the script wrote (norm over norm), or
        None where `.grad` is empty; what backward gave starts again from here."""
        written_sq = applied_sq = 0.0
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for parameter in parameters:
                state = self._states.get(id(parameter))
                if state is None or state.parameter() is not parameter:
                    continue
                self._safely(self._look, state, _GRAD.__get__(parameter))
                if state.last is not None:
                    applied_sq += _norm(state.last) ** 2
                    if state.written is not None:
                        written_sq += _norm(state.written) ** 2
            for state in list(self._states.values()):
                state.given = None
        if applied_sq <= 0:
            return None
        return math.sqrt(written_sq / applied_sq)

    @staticmethod
    def _safely(look, state: _Parameter, grad) -> None:
        """A look that cannot stop the script's backward or step: where it fails, the
        parameter's `.grad` is not known from there on (nothing written, nothing to compare)."""
        try:
            look(state, grad)
        except (RuntimeError, ValueError, TypeError, ZeroDivisionError):
            state.last = state.seen = state.written = state.given = state.raw = None

    def _look(self, state: _Parameter, grad) -> None:
        """Compare `.grad` now with what the last look left (module docstring)."""
        if not isinstance(grad, torch.Tensor):
            state.last = state.seen = state.written = None
            return
        if _unchanged(state, grad):
            return
        now = _flat(grad)
        if now is None:
            state.last = state.seen = state.written = None
            return
        state.seen = (weakref.ref(grad), grad._version)
        size = _norm(now)
        if size == 0:
            state.last = state.written = None
            return
        kept, residual = _explain(now, state.last, state.given, size)
        if state.written is not None:
            state.written = state.written * kept if kept else None
        if residual is not None:
            state.written = residual if state.written is None else state.written.add_(residual)
        state.last = now


def _unchanged(state: _Parameter, grad) -> bool:
    seen = state.seen
    return seen is not None and seen[0]() is grad and seen[1] == grad._version


def _distributed() -> bool:
    dist = getattr(torch, "distributed", None)
    try:
        return bool(dist is not None and dist.is_available() and dist.is_initialized()
                    and dist.get_world_size() > 1)
    except (RuntimeError, ValueError):
        return False
