"""Optimizer steps beside the model's own ("side steps"), and the guard that keeps them honest.

A student checking Practical 10's claim may train a whole-batch copy of the model
(`copy.deepcopy(model.module)`) beside it with an optimizer of its own, or a probe on
`out.detach()` stepped each iteration. Every optimizer step had closed the model's step window,
so the model's micro-batches per step came out wrong (an honest script scored 3.75-4.5 of 10,
adv32 H1). So a step of an optimizer over none of the parameters of the model the script
parallelizes (a module wrapped in DDP) is a side step: it closes no window (observe.py emits a
`side_step` record and leaves the step's accounting running).

Hiding it opens a forgery: the copy trained on the whole batch by its own optimizer, its weights
loaded into the model (`load_state_dict`, `p.data.copy_`, `p.copy_` under no_grad, `p.data =`),
then "micro-batches" of a loss scaled by 1e-9 before the model's step. So the model's weights
are marked as its last step (or its wrapping in DDP) left them, and at its next step, where
anything beside its parameters trained in between (a side step, or a pass left out as
`unstepped`), they are compared with the mark: a write beside the optimizer made the step's
weights elsewhere (`weights_written` in the step record; practical_measures.made_outside).

The comparison: each parameter's version counter (in-place writes, `copy_`, `load_state_dict`),
its storage address (`p.data = ...` swaps it), the sum and sum of squares of all their values
(`p.data.copy_(...)` writes through a tensor with a version counter of its own), and the values
at SAMPLED positions of each drawn from a generator seeded from the system's randomness (a
forger who fixes up two numbers after `p.data.copy_` so that the sums match cannot know which
values are watched). It costs one pass over the weights at a step, and only in a window where
something else trained, and a gather of SAMPLED values per parameter at each model step.

The mark is taken after the model's step, so what runs inside that step is taken as the
optimizer's: a step of the script's own (a subclass's `step`), a closure handed to `step()`, or a
step hook of the script's own may write the weights there unseen (the first two forgeries of
the load inside the model's step scored 10 of 10). Where the model's step is not torch's own
step alone, nothing vouches for its weights, and a window where something else trained counts
as written (`own_step`).
"""
from __future__ import annotations

import inspect
import os
import weakref

import torch
import torch.optim.optimizer as _optimizer

_TORCH = os.path.dirname(torch.__file__) + os.sep
_GRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# Values watched per parameter: a load of other weights changes nearly every value, so a write
# that keeps these unchanged keeps nearly all (a forger must write the model's own weights).
SAMPLED = 64
_DRAWS = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def _sampled(parameter) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, the values there) of the parameter, positions drawn afresh for each mark."""
    with torch.no_grad(), torch._C.DisableTorchFunction():
        flat = parameter.detach().reshape(-1)
        count = flat.numel()
        positions = torch.randint(count, (min(SAMPLED, count),), generator=_DRAWS) if count else \
            torch.zeros(0, dtype=torch.long)
        return positions, flat[positions].clone()


def _same_at(parameter, positions: torch.Tensor, values: torch.Tensor) -> bool:
    with torch.no_grad(), torch._C.DisableTorchFunction():
        return bool(torch.equal(parameter.detach().reshape(-1)[positions], values))


def fingerprint(tensors) -> tuple[float, float]:
    """The sum and the sum of squares of the tensors' values, in float64."""
    total = squares = 0.0
    with torch.no_grad(), torch._C.DisableTorchFunction():
        for t in tensors:
            d = t.detach().reshape(-1).double()
            total += float(d.sum())
            squares += float(torch.dot(d, d))
    return total, squares


def _where(parameter) -> tuple[int, int]:
    with torch._C.DisableTorchFunction():
        return parameter._version, parameter.data_ptr()


class WeightMark:
    """The parameters as they were at one moment: each one's version and storage address, its
    values at sampled positions, and the fingerprint of all of them."""

    def __init__(self, parameters, printed: tuple[float, float] | None = None):
        self._held = [(weakref.ref(p), *_where(p)) for p in parameters]
        self._samples = [_sampled(p) for p in parameters]
        self._print = printed if printed is not None else fingerprint(parameters)

    def covers(self, parameters) -> bool:
        """Whether every one of `parameters` is marked (a mark another optimizer's step left
        says nothing of the model's weights)."""
        held = {id(ref()) for ref, _, _ in self._held}
        return all(id(p) in held for p in parameters)

    def written(self) -> bool:
        """Whether any of the parameters was written since (one let go of says nothing)."""
        alive = []
        for ref, version, address in self._held:
            parameter = ref()
            if parameter is None:
                return False
            if _where(parameter) != (version, address):
                return True
            alive.append(parameter)
        if any(not _same_at(p, *sample) for p, sample in zip(alive, self._samples)):
            return True
        return fingerprint(alive) != self._print


class SideSteps:
    """The parameters of the models wrapped in DDP, and the mark of the model's weights."""

    def __init__(self):
        self._wrapped: dict[int, weakref.ref] = {}
        self._mark: WeightMark | None = None
        self._unvouched = False   # the model's last step was not torch's own alone
        self.hidden = 0   # side steps since the model's last step

    def wrapped(self, module) -> None:
        """A module was wrapped in DDP: its parameters are the model's; marked as they are."""
        parameters = [p for p in module.parameters()]
        for parameter in parameters:
            self._wrapped[id(parameter)] = weakref.ref(parameter)
        if parameters:
            self._mark = WeightMark(parameters)

    def is_side(self, optimizer) -> bool:
        """Whether the optimizer steps none of the wrapped models' parameters, where there is
        one: with no model wrapped, every step is the model's (as before)."""
        if not any(ref() is not None for ref in self._wrapped.values()):
            return False
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                held = self._wrapped.get(id(parameter))
                if held is not None and held() is parameter:
                    return False
        return True

    def side_step(self) -> None:
        self.hidden += 1

    def written_beside(self, parameters, others_trained: bool, vouched: bool) -> bool:
        """At the model's step (of `parameters`): whether its weights were written beside its
        optimizer since they were marked, where something else trained in between (a side step
        hidden, or `others_trained`: a pass that trained none of the stepped parameters).
        `vouched`: the step about to run is torch's own alone (`own_step`); where it is not, or
        the previous one was not, what ran inside those steps is not known: written."""
        unknown, self._unvouched = self._unvouched, not vouched
        if not (self.hidden or others_trained):
            return False
        if unknown or not vouched:
            return True
        mark = self._mark
        return mark is not None and mark.covers(parameters) and mark.written()

    def stepped(self, parameters, printed: tuple[float, float] | None) -> None:
        """The model's step is done: its weights are marked as it left them (`printed`: their
        fingerprint, where the step record has computed it)."""
        self.hidden = 0
        self._mark = WeightMark(parameters, printed)


def _defined_in(function, folder: str) -> bool:
    """Whether `function` (a hook, a method; unwrapped) is code from a file under `folder`."""
    function = inspect.unwrap(getattr(function, "__func__", function))
    code = getattr(function, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(folder)


def own_step(optimizer, args, kwargs) -> bool:
    """Whether the optimizer's step (about to run: the pre-step hook's arguments) is torch's own
    and nothing else: its class's `step` is torch's, it is handed no closure, and no step hook
    but the grader's runs with it."""
    if not _defined_in(getattr(type(optimizer), "step", None), _TORCH):
        return False
    closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
    if closure is not None:
        return False
    if getattr(optimizer, "_optimizer_step_pre_hooks", None) or \
            getattr(optimizer, "_optimizer_step_post_hooks", None):
        return False
    hooks = [*_optimizer._global_optimizer_pre_hooks.values(),
             *_optimizer._global_optimizer_post_hooks.values()]
    return all(_defined_in(hook, _GRADER) for hook in hooks)
