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
as written (`step_code`), and the step record says which code (`weights_unvouched`).
"""
from __future__ import annotations

import inspect
import os
import weakref

import torch
import torch.optim.optimizer as _optimizer

from grader.vgpu.fingerprints import Print, combined, prints_of

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
    return combined(prints_of(tensors))


def _where(parameter) -> tuple[int, int]:
    with torch._C.DisableTorchFunction():
        return parameter._version, parameter.data_ptr()


class ParameterMark:
    """One parameter as it was at one moment: its version and storage address, its values at
    sampled positions, and its fingerprint. `vouches`: False where the mark was taken at the
    parameter's first wrap in DDP after other optimizers had already trained (side steps): the
    weights it holds then may be theirs (a copy trained up front and loaded before the wrap)."""

    def __init__(self, parameter, vouches: bool = True, printed: Print | None = None):
        self._ref = weakref.ref(parameter)
        self._where = _where(parameter)
        self._sample = _sampled(parameter)
        # `printed`: its fingerprint, where the step's record already read it (fingerprints.py)
        self._print = printed if printed is not None else prints_of([parameter])[0]
        self.vouches = vouches

    def of(self, parameter) -> bool:
        """Whether this is the mark of `parameter` (an id reused by another is not)."""
        return self._ref() is parameter

    def alive(self) -> bool:
        return self._ref() is not None

    def written(self) -> bool:
        """Whether the parameter was written since (one let go of was not)."""
        parameter = self._ref()
        if parameter is None:
            return False
        return _where(parameter) != self._where or not _same_at(parameter, *self._sample) or \
            prints_of([parameter])[0] != self._print


class WeightMark:
    """The marks of several parameters: written where any one still alive was."""

    def __init__(self, parameters):
        self._marks = [ParameterMark(p) for p in parameters]

    def written(self) -> bool:
        return any(mark.written() for mark in self._marks)


class SideSteps:
    """The parameters of the models wrapped in DDP, and the mark of each as the model's last
    step that stepped it (or its first wrap) left it.

    A mark is per parameter and only the model's steps retake it: a later wrap (the model
    wrapped again, or a throwaway module wrapped after a load, adv35 F2/F5) marks only
    parameters not yet marked, and a step compares and marks the model's parameters among those
    it steps, whatever else its optimizer holds (one extra parameter had switched the check off,
    adv35 F3/F4)."""

    def __init__(self):
        self._wrapped: dict[int, weakref.ref] = {}
        self._marks: dict[int, ParameterMark] = {}
        self._unvouched: str | None = None   # what beside torch's ran in the model's last step
        self._window_beside = False   # something else trained in the window (joined steps)
        self.hidden = 0   # side steps since the model's last step
        self._side_steps = 0   # side steps in the run so far

    def _mark_of(self, parameter) -> ParameterMark | None:
        mark = self._marks.get(id(parameter))
        return mark if mark is not None and mark.of(parameter) else None

    def _model_parameters(self, parameters) -> list:
        """Those of `parameters` that are the wrapped models'."""
        held = self._wrapped
        return [p for p in parameters if (ref := held.get(id(p))) is not None and ref() is p]

    def wrapped(self, module) -> None:
        """A module was wrapped in DDP: its parameters are the model's; those not marked yet
        are marked as they are, vouching for nothing where side steps came before (adv35 F6:
        a copy trained up front beside a throwaway DDP module, loaded, the model wrapped
        only then)."""
        unmarked = []
        for parameter in module.parameters():
            self._wrapped[id(parameter)] = weakref.ref(parameter)
            if self._mark_of(parameter) is None:
                unmarked.append(parameter)
        for parameter, printed in zip(unmarked, prints_of(unmarked)):
            self._marks[id(parameter)] = ParameterMark(parameter, vouches=not self._side_steps,
                                                       printed=printed)

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
        self._side_steps += 1

    def written_beside(self, parameters, others_trained: bool, code: str | None,
                       joins: bool = False) -> str | None:
        """At the model's step (of `parameters`): whether its weights were written beside its
        optimizer since they were marked, where something else trained in between (a side step
        hidden, or `others_trained`: a pass that trained none of the stepped parameters).
        `code`: what beside torch's own step runs in the step about to run (`step_code`); where
        anything does, in it or in the previous step, what ran inside those steps is not known:
        that code is returned (the weights are not vouched for). `joins`:
        the step goes on the model's last one (observe.py: no pass between, other parameters),
        so what trained before that one counts too. A mark that vouches for nothing makes the
        step written wherever it is. Returns None, "written", or the code not vouched for."""
        unknown, self._unvouched = self._unvouched, code
        marks = [mark for p in self._model_parameters(parameters)
                 if (mark := self._mark_of(p)) is not None]
        if any(not mark.vouches for mark in marks):
            return "written"
        beside = bool(self.hidden or others_trained or (joins and self._window_beside))
        self._window_beside = beside
        if not beside:
            return None
        if code or unknown:
            return code or unknown
        return "written" if any(mark.written() for mark in marks) else None

    def stepped(self, parameters, prints: list[Print] | None = None) -> None:
        """The model's step is done: the model's parameters it stepped are marked as it left
        them; marks of parameters let go of are dropped. `prints`: the parameters'
        fingerprints, as the step's record read them (none read twice)."""
        self.hidden = 0
        printed = dict(zip(map(id, parameters), prints)) if prints is not None else {}
        for parameter in self._model_parameters(parameters):
            self._marks[id(parameter)] = ParameterMark(parameter, printed=printed.get(id(parameter)))
        if len(self._marks) > 2 * len(self._wrapped) + 64:
            self._marks = {k: m for k, m in self._marks.items() if m.alive()}


def _defined_in(function, folder: str) -> bool:
    """Whether `function` (a hook, a method; unwrapped) is code from a file under `folder`."""
    function = inspect.unwrap(getattr(function, "__func__", function))
    code = getattr(function, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(folder)


def step_code(optimizer, args, kwargs) -> str | None:
    """What, beside torch's own step, runs in the optimizer's step (about to run: the pre-step
    hook's arguments): its class's `step` where that is not torch's, a closure handed to it, or
    a step hook not the grader's; None where it is torch's own step alone."""
    if not _defined_in(getattr(type(optimizer), "step", None), _TORCH):
        return "the step of an optimizer class of the script's own"
    closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
    if closure is not None:
        return "a closure handed to optimizer.step()"
    hooks = [*_optimizer._global_optimizer_pre_hooks.values(),
             *_optimizer._global_optimizer_post_hooks.values()]
    if getattr(optimizer, "_optimizer_step_pre_hooks", None) or \
            getattr(optimizer, "_optimizer_step_post_hooks", None) or \
            not all(_defined_in(hook, _GRADER) for hook in hooks):
        return "a step hook of the script's own (register_step_pre_hook / register_step_post_hook)"
    return None
