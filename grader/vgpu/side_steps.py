"""Optimizer steps beside the model's own ("side steps"), and the guard that keeps them honest.

A student checking Practical 10's claim may train a whole-batch copy of the model
(`copy.deepcopy(model.module)`) beside it with an optimizer of its own, or a probe on
`out.detach()` stepped each iteration. Every optimizer step had closed the model's step window,
so the model's micro-batches per step came out wrong (an honest script scored 3.75-4.5 of 10,
adv32 H1). So a step of an optimizer over none of the parameters of the model the script
parallelizes (a module wrapped in DDP) is a side step: it closes no window (observe.py emits a
`side_step` record and leaves the step's accounting running).

Hiding it opens a forgery: the copy trained on the whole batch by its own optimizer (or by
hand, as plain tensors: F.linear, autograd.grad or backprop written out, adv35 F1), its weights
loaded into the model (`load_state_dict`, `p.data.copy_`, `p.copy_` under no_grad, `p.data =`),
then "micro-batches" of a loss scaled by 1e-9 before the model's step. So the model's weights
are marked as its last step (or its wrapping in DDP) left them, and at its next step, whatever
trained in between, the values at SAMPLED positions of each parameter (drawn from a generator
seeded from the system's randomness: a forger cannot know which are watched) are compared with
the mark: where any of them grew in magnitude beyond float rounding (`grew`), a write beside
the optimizer made the step's weights elsewhere (`weights_written` in the step record;
practical_measures.made_outside). A load of weights trained elsewhere grows about half of them
(a training update is of either sign); what an honest script writes into the model's weights
(a clamp, weight decay or a renormalization by hand, under no_grad) only shrinks them, and
keeps its steps (adv35 H14: a clamp beside a probe had been read as a load, 4.5 of 10). It
costs a gather of SAMPLED values per parameter at each model step.

Until the model's first step, the mark is taken again at each of its passes (`pass_begins`):
weights set up after the wrap (an initialization, a checkpoint loaded through `model.module`)
are the model's start, not a write beside its optimizer (adv38 H1: 4.5 of 10). Not where they
were trained rather than set afresh (AFRESH; a copy trained by hand on the batch written in
before the first pass stays judged at the first step), nor where other optimizers stepped
meanwhile (their weights, loaded: the mark vouches for nothing, as adv35 F6's before the wrap).

A write that brings back a state the model's weights were in at an earlier mark that vouched
(bit for bit at that mark's sampled values: `_restored`) is no write beside the optimizer: a
checkpoint of the run's own loaded back mid-run (a resume tested after a step, a rollback to the
best step, the start restored after a trial step) holds weights the model's own optimizer made,
or its start. So is a write that moves the weights back toward such a state, each value sampled
by its mark lying between its value there and the last mark's (`_between`: Lookahead written
by hand, the slow weights interpolated into the model every k steps); a step of training onward
leaves that span at about half the values. A write so accepted is remembered as a state of the
run's own (Lookahead's next slow weights start from it). Only distinct states are remembered
(REMEMBERED per parameter), so decoys that leave the weights as they were leave nothing to
restore or move toward but the weights the last mark holds; a state a step judged written left
(or one not vouched for) is never restored.

The mark is taken after the model's step, so what runs inside that step is taken as the
optimizer's: a step of the script's own (a subclass's `step`), a closure handed to `step()`, or a
step hook may write the weights there unseen (the first two forgeries of the load inside the
model's step scored 10 of 10). The optimizer's own step hooks are watched (WatchedHook: the
weights sampled before and after each call, a logging hook vouches as torch's step does, adv35
H8); where the model's step runs a subclass's step, a closure or a global step hook of the
script's own, nothing vouches for its weights, and a window where something else trained counts
as written (`step_code`), and the step record says which code (`weights_unvouched`).
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


# Growth in magnitude, in ulps of the dtype (relative: eps per ulp), that float rounding may
# make of a write that keeps the weights (ranks' equal weights averaged by hand over a world
# size not a power of two: fl(fl(3x) / 3) is within one ulp of x); a training update is orders
# larger.
ROUNDING = 2


def _grown_at(parameter, positions: torch.Tensor, values: torch.Tensor) -> int:
    """How many of the values at `positions` are now larger in magnitude than `values` by more
    than float rounding (ROUNDING ulps of their dtype)."""
    with torch.no_grad(), torch._C.DisableTorchFunction():
        now = parameter.detach().reshape(-1)[positions]
        slack = 1 + ROUNDING * torch.finfo(values.dtype).eps if values.is_floating_point() else 1
        return int((now.abs().double() > values.abs().double() * slack).sum())


def _values_at(parameter, positions: torch.Tensor) -> torch.Tensor:
    with torch.no_grad(), torch._C.DisableTorchFunction():
        return parameter.detach().reshape(-1)[positions].clone()


def _between_at(parameter, positions: torch.Tensor, one: torch.Tensor, other: torch.Tensor) -> bool:
    """Whether the parameter's values at `positions` each lie between `one` and `other` (two
    states' values there), float rounding (ROUNDING ulps) aside."""
    if not one.is_floating_point():
        return False
    with torch.no_grad(), torch._C.DisableTorchFunction():
        now = parameter.detach().reshape(-1)[positions].double()
        eps = torch.finfo(one.dtype).eps
        one, other = one.double(), other.double()
        slack = ROUNDING * eps * torch.maximum(one.abs(), other.abs())
        return bool(((now >= torch.minimum(one, other) - slack)
                     & (now <= torch.maximum(one, other) + slack)).all())


class ParameterMark:
    """One parameter as it was at one moment: its values at sampled positions (a load, a write
    through `.data` or a swap of storage all show there: `grew`, `set_afresh`, `moved`).
    `vouches`: False where the mark was taken at the parameter's first wrap in DDP after other
    optimizers had already trained (side steps): the weights it holds then may be theirs (a
    copy trained up front and loaded before the wrap)."""

    restorable = False   # a state a later load may bring back (SideSteps._mark, _restored)

    def __init__(self, parameter, vouches: bool = True, side_steps: int = 0):
        self._ref = weakref.ref(parameter)
        self._sample = _sampled(parameter)
        self.vouches = vouches
        self.side_steps = side_steps   # the run's side steps when it was taken
        # The parameter's values, when this mark was taken, at the sampled positions of the
        # states remembered before it (id of their mark -> values): SideSteps._remember,
        # _between. Each mark's own: a dict shared by the class would be one write away from
        # every mark's.
        self.at_past: dict[int, torch.Tensor] = {}

    def of(self, parameter) -> bool:
        """Whether this is the mark of `parameter` (an id reused by another is not)."""
        return self._ref() is parameter

    def alive(self) -> bool:
        return self._ref() is not None

    def grown(self) -> tuple[int, int]:
        """(sampled values now larger in magnitude than at the mark, values sampled); (0, 0)
        for a parameter let go of."""
        parameter = self._ref()
        if parameter is None:
            return 0, 0
        positions, values = self._sample
        return _grown_at(parameter, positions, values), len(values)

    def set_afresh(self) -> bool:
        """Whether the parameter's sampled values were set afresh since the mark, not trained:
        the median of their changes is AFRESH of their size or more (values drawn again, or
        loaded from weights of their own, change by about their size; a training update moves
        each by a small share of it)."""
        parameter = self._ref()
        if parameter is None:
            return False
        positions, values = self._sample
        with torch.no_grad(), torch._C.DisableTorchFunction():
            now = parameter.detach().reshape(-1)[positions].double()
            then = values.double()
            size = torch.maximum(now.abs(), then.abs())
            changed = size > 0
            if not bool(changed.any()):
                return False
            share = (now - then).abs()[changed] / size[changed]
            return float(share.median()) >= AFRESH

    def sample_positions(self) -> torch.Tensor:
        return self._sample[0]

    def sample_values(self) -> torch.Tensor:
        return self._sample[1]

    def moved(self) -> bool:
        """Whether any sampled value of the parameter differs from the mark's."""
        parameter = self._ref()
        return parameter is not None and not _same_at(parameter, *self._sample)

# A parameter's sampled values changed by this share of their size or more, at their median,
# were set afresh (an initialization, a checkpoint), not trained (set_afresh).
AFRESH = 0.5


def grew(marks) -> bool:
    """Whether any sampled value of the parameters of `marks` grew in magnitude since the mark
    (beyond float rounding): between its steps nothing but its optimizer grows a model's
    weights. A load of weights trained elsewhere grows about half of them (a training update is
    of either sign); a clamp, weight decay, a max-norm renormalization by hand or a weight
    average of equal ranks keeps or shrinks every one (rounding is monotone). Not a share: a
    write that grew a random 16% of the values a load would grow (8% of all, per step) had
    passed under a tenth and kept 7.65 of 10 (adv38 F1, the control 3.5)."""
    return any(mark.grown()[0] for mark in marks)


# States remembered before a parameter's mark whose sampled values the mark records too, so that
# weights moved back toward one of them are seen as such (`SideSteps._between`).
BETWEEN = 8

# Past states of each parameter of the model remembered (`SideSteps._remember`), at most: the
# first (the model's start) and the latest are kept.
REMEMBERED = 256


# A module wrapped in DDP with fewer parameter values than this share of the largest one
# wrapped is no part of the model: a probe on the model's output wrapped in DDP too (adv35 H9).
MODEL_SHARE = 0.1


class SideSteps:
    """The parameters of the model wrapped in DDP, and the mark of each as the model's last
    step that stepped it (or its first wrap) left it.

    A mark is per parameter and only the model's steps retake it: a later wrap (the model
    wrapped again, or a throwaway module wrapped after a load, adv35 F2/F5) marks only
    parameters not yet marked, and a step compares and marks the model's parameters among those
    it steps, whatever else its optimizer holds (one extra parameter had switched the check off,
    adv35 F3/F4). The model is the modules wrapped that are not far smaller than the largest
    one (MODEL_SHARE): a probe wrapped in DDP steps beside it."""

    def __init__(self):
        self._wrapped: dict[int, tuple[weakref.ref, int]] = {}   # id -> (parameter, its wrap's size)
        self._marks: dict[int, ParameterMark] = {}
        # Per parameter, a mark of each distinct state its marks found, oldest first: the last
        # is its mark now (`_remember`, `_restored`)
        self._past: dict[int, list[ParameterMark]] = {}
        # The model's parameters marked at their wrap, not yet stepped by the model: retaken at
        # each pass of the model (`pass_begins`)
        self._unstepped: set[int] = set()
        self._unvouched: str | None = None   # what beside torch's ran in the model's last step
        self.hook_wrote = False   # a step hook of the script's own wrote in the last step
        self._window_beside = False   # something else trained in the window (joined steps)
        self.hidden = 0   # side steps since the model's last step
        self._judged = None   # what written_beside said of the model's step now running
        self._side_steps = 0   # side steps in the run so far

    def _mark_of(self, parameter) -> ParameterMark | None:
        mark = self._marks.get(id(parameter))
        return mark if mark is not None and mark.of(parameter) else None

    def _mark(self, parameter, vouches: bool, restorable: bool = True) -> None:
        """Mark `parameter` as it is now, and remember the state (`_remember`): one a load may
        bring back where the mark vouches and `restorable` (not the weights a step judged
        written left)."""
        mark = ParameterMark(parameter, vouches=vouches, side_steps=self._side_steps)
        mark.restorable = vouches and restorable
        self._marks[id(parameter)] = mark
        self._remember(parameter, mark)

    def _remember(self, parameter, mark: ParameterMark) -> None:
        """`mark` is the parameter's now: kept as a state it had, in place of the last one
        remembered where the weights did not move since (the same state, sampled afresh: so
        each state remembered but the last differs from the weights the last mark holds)."""
        past = self._past.setdefault(id(parameter), [])
        if past and not past[-1].of(parameter):   # an id the parameter had, let go of
            past.clear()
        if past and not past[-1].moved():
            past.pop()
        mark.at_past = {id(old): _values_at(parameter, old.sample_positions())
                        for old in past[-BETWEEN:] if old.restorable}
        if past:
            past[-1].at_past = {}   # read of the last mark only (`_between`)
        past.append(mark)
        if len(past) > REMEMBERED:
            del past[1]

    def _restored(self, parameter) -> bool:
        """Whether the parameter holds again, at every value sampled, a state an earlier mark
        that vouched found it in (not its mark now): a checkpoint of the run's own loaded back
        (a resume tested mid-run, a rollback to the best step, the start restored after a
        trial step) brings back weights the model's own optimizer made, or its start. Loaded
        weights trained elsewhere match no past state: a training update changes nearly every
        value, and decoys of a loss scaled by 1e-9 leave one state only (the last mark's)."""
        past = self._past.get(id(parameter), [])
        return any(mark.restorable and mark.of(parameter) and not mark.moved()
                   for mark in past[:-1])

    def _between(self, parameter) -> bool:
        """Whether the parameter's weights lie, at every value sampled by one of the last
        BETWEEN states remembered before its mark now, between that state's values and the
        mark's: weights moved back toward a past state of the run's own (Lookahead written by
        hand: the slow weights, a past state, interpolated toward the fast ones and written in
        every k steps). Decoys leave no past state to move toward; a step of training onward
        leaves the span of its past states at about half the values."""
        past = self._past.get(id(parameter), [])
        if len(past) < 2 or not past[-1].of(parameter):
            return False
        last = past[-1]
        return any(old.restorable and old.of(parameter) and id(old) in last.at_past
                   and _between_at(parameter, old.sample_positions(), old.sample_values(),
                                   last.at_past[id(old)])
                   for old in past[:-1])

    def _least_model_size(self) -> float | None:
        """The fewest parameter values a wrap of the model's holds; None with none alive."""
        sizes = [size for ref, size in self._wrapped.values() if ref() is not None]
        return MODEL_SHARE * max(sizes) if sizes else None

    def _model_parameters(self, parameters) -> list:
        """Those of `parameters` that are the wrapped model's."""
        least = self._least_model_size()
        if least is None:
            return []
        held = self._wrapped
        return [p for p in parameters if (entry := held.get(id(p))) is not None
                and entry[0]() is p and entry[1] >= least]

    def wrapped(self, module) -> None:
        """A module was wrapped in DDP: its parameters are the model's (where the module is not
        far smaller than the largest wrapped); those not marked yet are marked as they are,
        vouching for nothing where side steps came before (adv35 F6: a copy trained up front
        beside a throwaway DDP module, loaded, the model wrapped only then)."""
        parameters = list(module.parameters())
        size = sum(p.numel() for p in parameters)
        unmarked = []
        for parameter in parameters:
            entry = self._wrapped.get(id(parameter))
            if entry is None or entry[0]() is not parameter or entry[1] < size:
                self._wrapped[id(parameter)] = (weakref.ref(parameter), size)
            if self._mark_of(parameter) is None:
                unmarked.append(parameter)
        for parameter in unmarked:
            self._mark(parameter, vouches=not self._side_steps)
            self._unstepped.add(id(parameter))

    def pass_begins(self, module) -> None:
        """A pass of `module` begins: the model's parameters in it that no step of the model
        has stepped yet are marked again as they are, so what the script did to its weights
        between the wrap and its training (an initialization, `model.module.apply(init)`, a
        checkpoint loaded through `model.module`) is no write beside its optimizer (adv38 H1:
        4.5 of 10, was 10). Where the weights grew since the mark while other optimizers
        stepped, they may be those optimizers' (a copy trained after the wrap and loaded, as
        adv35 F6 before it): the mark vouches for nothing. Where they grew but were trained
        rather than set afresh (`set_afresh`), the old mark is kept and the first step judges
        them. Only before the model's first step: after it, a write beside its optimizer is
        judged at its next step wherever it is."""
        if not self._unstepped:
            return
        retaken = [p for p in module.parameters() if id(p) in self._unstepped]
        for parameter in retaken:
            old = self._mark_of(parameter)
            if old is None:   # an id the wrapped parameter had, let go of
                continue
            grown = grew([old])
            beside = grown and self._side_steps > old.side_steps
            if grown and not beside and not old.set_afresh():
                # Trained, not set up: a copy of the weights trained by hand on the batch and
                # written in before the first pass (adv35 F1, F1b) is judged at the first step.
                continue
            self._mark(parameter, vouches=old.vouches and not beside)

    def is_side(self, optimizer) -> bool:
        """Whether the optimizer steps none of the wrapped model's parameters, where there is
        one: with no model wrapped, every step is the model's (as before)."""
        if self._least_model_size() is None:
            return False
        return not self._model_parameters(
            [p for group in optimizer.param_groups for p in group["params"]])

    def side_step(self) -> None:
        self.hidden += 1
        self._side_steps += 1

    def written_beside(self, parameters, others_trained: bool, code: str | None,
                       joins: bool = False) -> str | None:
        """At the model's step (of `parameters`): whether its weights were written beside its
        optimizer since they were marked: any of their sampled values grew in magnitude
        (`grew`; a copy of the weights trained by hand as plain tensors and
        written in, with nothing else seen training, had scored 10 of 10: adv35 F1). `code`:
        what beside torch's own step runs in the step about to run (`step_code`); where anything does, in it or in the
        previous step, and something else trained in between (a side step hidden, or
        `others_trained`: a pass that trained none of the stepped parameters), what ran inside
        those steps is not known: that code is returned (the weights are not vouched for).
        `joins`: the step goes on the model's last one (observe.py: no pass between, other
        parameters), so what trained before that one counts too. A mark that vouches for
        nothing makes the step written wherever it is. Returns None, "written", or the code not
        vouched for."""
        unknown, self._unvouched = self._unvouched, code
        _HOOK_WRITES.clear()
        marked = [(p, mark) for p in self._model_parameters(parameters)
                  if (mark := self._mark_of(p)) is not None]
        self._judged = self._judge(marked, others_trained, code or unknown, joins)
        return self._judged

    def _judge(self, marked, others_trained: bool, code: str | None, joins: bool) -> str | None:
        """written_beside's verdict on `marked` ((parameter, its mark) pairs): a value grown
        is a write, unless the parameter holds a past state of its own again (`_restored`)."""
        grown = [p for p, mark in marked if grew([mark])]
        if any(not mark.vouches for _, mark in marked) or \
                any(not self._restored(p) and not self._between(p) for p in grown):
            return "written"
        beside = bool(self.hidden or others_trained or (joins and self._window_beside))
        self._window_beside = beside
        verdict = code if beside and code else None
        for parameter, mark in marked:
            # Written since the mark and let be (a clamp, a past state brought back, one
            # between): the run's own state, one a checkpoint saved now may bring back.
            if mark.moved():
                self._mark(parameter, vouches=True, restorable=verdict is None)
        return verdict

    def stepped(self, parameters) -> None:
        """The model's step is done: the model's parameters it stepped are marked as it left
        them; marks of parameters let go of are dropped. A mark that vouched for
        nothing goes on vouching for nothing while the model's steps leave the weights as it
        found them (adv35 F6: decoys of a loss scaled by 1e-9 after the load had kept all steps
        but the first). `hook_wrote`: whether a step hook of the script's own grew the weights
        in this step (WatchedHook): the weights it leaves are not its optimizer's. Nor are
        they where the step was judged written or not vouched for: no later load may bring
        them back as the model's own (`_restored`)."""
        self.hidden = 0
        self.hook_wrote = bool(_HOOK_WRITES)
        _HOOK_WRITES.clear()
        for parameter in self._model_parameters(parameters):
            old = self._mark_of(parameter)
            self._mark(parameter, vouches=old is None or old.vouches or old.moved(),
                       restorable=not self._judged and not self.hook_wrote)
            self._unstepped.discard(id(parameter))
        if len(self._marks) > 2 * len(self._wrapped) + 64:
            self._marks = {k: m for k, m in self._marks.items() if m.alive()}
            self._unstepped &= self._marks.keys()
            self._past = {k: past for k, past in self._past.items() if k in self._marks}
        self._judged = None


# Step hooks of the script's own (WatchedHook) that grew the weights of the optimizer they ran
# in, since the model's last step: read and cleared by SideSteps.stepped.
_HOOK_WRITES: list[bool] = []


class WatchedHook:
    """A step hook of the script's own (`register_step_pre_hook` / `register_step_post_hook`),
    run as written, with its optimizer's parameters sampled before it and compared after it: a
    hook that grew any (`grew`) wrote the weights the step leaves. A hook
    that logs writes nothing and vouches as torch's step does (adv35 H8: a logging hook beside a
    probe had made every step unvouched, 3.5 of 10). Run before the grader's post-step hook, so
    the step's record says so (SideSteps.hook_wrote)."""

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, optimizer, *args):
        marks = [ParameterMark(p) for group in optimizer.param_groups for p in group["params"]]
        result = self.hook(optimizer, *args)
        if grew(marks):
            _HOOK_WRITES.append(True)
        return result


def _watch_hooks(hooks: dict) -> None:
    """Each hook of the script's own in `hooks` (an optimizer's, keyed by handle) watched in
    place: the dict's keys are kept, so a handle's remove() still removes it."""
    for key, hook in list(hooks.items()):
        if not isinstance(hook, WatchedHook):
            hooks[key] = WatchedHook(hook)


def _defined_in(function, folder: str) -> bool:
    """Whether `function` (a hook, a method; unwrapped) is code from a file under `folder`."""
    function = inspect.unwrap(getattr(function, "__func__", function))
    code = getattr(function, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(folder)


def step_code(optimizer, args, kwargs) -> str | None:
    """What, beside torch's own step, runs in the optimizer's step (about to run: the pre-step
    hook's arguments): its class's `step` where that is not torch's, a closure handed to it, or
    a global step hook not the grader's; None where it is torch's own step alone. The
    optimizer's own step hooks are watched instead (WatchedHook): one that wrote the weights
    makes its step written."""
    if not _defined_in(getattr(type(optimizer), "step", None), _TORCH):
        return "the step of an optimizer class of the script's own"
    closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
    if closure is not None:
        return "a closure handed to optimizer.step()"
    for own in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks"):
        if isinstance(getattr(optimizer, own, None), dict):
            _watch_hooks(getattr(optimizer, own))
    hooks = [*_optimizer._global_optimizer_pre_hooks.values(),
             *_optimizer._global_optimizer_post_hooks.values()]
    if not all(_defined_in(hook, _GRADER) for hook in hooks):
        return "a step hook of the script's own (register_step_pre_hook / register_step_post_hook)"
    return None
