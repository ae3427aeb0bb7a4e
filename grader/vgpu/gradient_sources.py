"""Where each optimizer step's gradient came from: the model's forward passes, or elsewhere.

A forward pass trains where its step's size of gradient reaches its output (observe.py). That
says nothing of a gradient the parameters get *beside* the passes: the real step computed from
the weights directly (`F.linear(x, model.fc.weight)` on the whole batch) or written into `.grad`
by hand, beside "micro-batch" passes given a tiny gradient (two red teams, adv27 and adv29).
So, per step:

- Each forward pass marks its output's autograd node (`mark_pass_output`). When a backward pass
  (or `torch.autograd.grad`) starts, its graph is walked from the roots down to those marks
  (`backward_begins`); a node above them that hands a gradient to a parameter of the model is
  outside the passes, and a hook sums what it hands on, on the host.
- Each parameter's own hook sees the whole gradient that backward gives it, raw: before the
  script unscales, averages or clips `.grad` (a red team's honest loss scaling, `loss * 1024`
  then `p.grad /= 1024`, had read as a gradient from outside), and before any hook of the
  script's own on it (the hook is registered with the parameter, Module.register_parameter).
  There the passes' part is the whole less the outside part, both of one backward. A part of
  a pass checkpointed inside the model's forward is marked as it is recomputed (observe.py).
- The marks are the grader's own (node_marks.py), never in the node's `metadata`, which the
  script reads and writes (a red team rebuilt a pass's mark for its whole-batch loss's node
  there, adv31). The static scan holds autograd's engine called directly (`_execution_engine`).
- A part of a pass checkpointed inside the model's forward is marked as backward recomputes it
  only where the walk outside the passes did not go through that checkpoint: a whole batch
  computed by the recomputation of a checkpoint beside the passes (whose forward calls no
  module at all) is outside them (adv31).
- `outside` (in the step record): the outside part's norm over the sum of both parts' norms,
  over the parameters that had an outside part. A penalty on the weights written into the loss
  is a real part of an honest step (a tutorial's `l2_lambda = 1e-3` can be half of it); only a
  step whose passes gave next to nothing (`practical_measures.made_outside`: over 0.99) was made
  elsewhere.
- `backward_share` (in the step record, only where it is below 0.01): the gradients backward
  passes gave the parameters since the run began (each backward's norm, summed) over the norm
  of `.grad` at the step. Scaling down, averaging across ranks, clipping and a `.grad` never
  zeroed between steps keep it at 1 or more; a gradient computed on detached copies of the
  weights and added into `.grad` makes it tiny.
- `written` (in the step record, where it is 0.01 or more): the part of `.grad` at the step the
  script wrote there itself, over all of it (grad_writes.py): `.grad` set to a gradient of
  detached copies less what the last backward then adds gives backward as much to do as is
  applied, and `backward_share` says nothing (adv31).
- A walk that finds no mark within WALK_NODES nodes says so (`walk_limit`): a graph outside the
  passes that large is no course script's loss (a red team hid the whole batch's loss behind
  5000 multiplications by 1.0), and the step counts as made outside them.
"""
from __future__ import annotations

import math
import sys
import threading
import weakref

import torch

from grader.vgpu.grad_writes import GradWrites
from grader.vgpu.node_marks import NodeMarks
from grader.vgpu.norms import norm64
from grader.vgpu.stepped_passes import SteppedPasses

# The grader's marks on autograd nodes (node_marks.py): "pass", the output of a forward pass;
# "hooked", a node whose gradients for the model's parameters are already summed; "walked", a
# reentrant checkpoint the walk outside the passes went through.
_MARKS = NodeMarks()
WALK_NODES = 4096
# `backward_share` is recorded below this, `written` from this on.
WRITTEN_SHARE = 0.01


def mark_pass_output(node, forward: int) -> None:
    """The autograd node of a forward pass's output (`forward`: its number; 0 for a
    checkpoint's recomputation): a backward walk stops there."""
    _MARKS.put(node, "pass", forward)


def _marked(node) -> bool:
    return _MARKS.get(node, "pass") is not None


def pass_of(node) -> int | None:
    """The number of the forward pass whose output `node` is (its own mark), or None."""
    return _MARKS.get(node, "pass")


def checkpoint_walked(node) -> bool:
    """Whether `node` (a reentrant checkpoint's, recomputing now) lies outside the passes: the
    walk from a backward's roots went through it before reaching any pass's output."""
    return node is not None and bool(_MARKS.get(node, "walked"))


def _reentrant_checkpoint(node) -> bool:
    module = sys.modules.get("torch.utils.checkpoint")
    function = getattr(module, "CheckpointFunction", None) if module is not None else None
    return function is not None and getattr(type(node), "_forward_cls", None) is function


def _squared(tensor) -> float:
    flat = tensor.reshape(-1)
    return float(torch.dot(flat, flat))


class GradientSources:
    """The per-step accounting above, for the parameters of the models whose passes were seen."""

    def __init__(self):
        self._params: dict[int, weakref.ref] = {}
        self._hooked: dict[int, weakref.ref] = {}      # parameters whose gradients are hooked
        self._lock = threading.Lock()
        self._pending: dict[int, torch.Tensor] = {}   # this backward's outside part, per parameter
        self._raw_now: list = []                      # this backward's squared norms (0-dim)
        # Each backward's gradient norm, summed since the run began: a script that never zeroes
        # .grad applies every earlier backward's gradient again.
        self._raw_norms = 0.0
        self.writes = GradWrites()   # what the script wrote into .grad itself
        self.stepped = SteppedPasses()   # which passes' backwards fed the stepped parameters
        self._reset_step()

    def _reset_step(self) -> None:
        self._outside_sq = 0.0    # this step, over parameters with an outside part
        self._passes_sq = 0.0
        self._walk_limit = False

    # -- the parameters and the passes -------------------------------------------------------
    def watch_parameter(self, parameter) -> None:
        """Hook a parameter's gradient as it is made (Module.register_parameter): before any
        hook of the script's own, which may scale it (a red team's `p.register_hook(lambda g:
        g * 1024)` beside an outside step, adv30); again later where it did not need a gradient
        then (a layer frozen at first)."""
        if not isinstance(parameter, torch.Tensor) or id(parameter) in self._hooked and \
                self._hooked[id(parameter)]() is parameter:
            return
        with torch._C.DisableTorchFunction():
            if not (parameter.requires_grad and parameter.is_leaf):
                return
            try:
                parameter.register_hook(self._raw_hook(weakref.ref(parameter)))
            except RuntimeError:
                return
            self.writes.watch(parameter)
        self._hooked[id(parameter)] = weakref.ref(parameter)
        self.stepped.hooked(parameter)

    def add_model(self, module: torch.nn.Module) -> None:
        """Watch the parameters of a model whose forward pass was seen."""
        for parameter in module.parameters():
            held = self._params.get(id(parameter))
            if held is None or held() is not parameter:
                self._params[id(parameter)] = weakref.ref(parameter)
            self.watch_parameter(parameter)

    def _is_parameter(self, tensor) -> bool:
        held = self._params.get(id(tensor))
        return held is not None and held() is tensor

    # -- a backward pass -----------------------------------------------------------------------
    def backward_begins(self, roots, nested: bool) -> None:
        """Walk the graph from `roots` down to the passes' marks, hooking each node that hands
        a parameter a gradient from outside the passes. `nested`: a backward run inside
        another (a checkpoint's recomputation), part of it."""
        self.stepped.backward_begins(nested)
        if not self._params:
            return
        if not nested:
            self._close_backward()
        if isinstance(roots, torch.Tensor):
            roots = (roots,)
        try:
            stack = [t.grad_fn for t in roots
                     if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        except TypeError:
            return
        seen: set[int] = set()
        while stack:
            if len(seen) >= WALK_NODES:
                self._walk_limit = True
                return
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if _marked(node):
                continue
            if _reentrant_checkpoint(node):
                _MARKS.put(node, "walked")
            consumed = []
            for index, (child, _) in enumerate(node.next_functions):
                if child is None:
                    continue
                variable = getattr(child, "variable", None)
                if variable is None:
                    stack.append(child)
                elif self._is_parameter(variable):
                    consumed.append((index, weakref.ref(variable)))
                    self.watch_parameter(variable)   # unfrozen since it was first seen
            if consumed and not _MARKS.get(node, "hooked") and _MARKS.put(node, "hooked"):
                node.register_hook(self._outside_hook(consumed))

    def _outside_hook(self, consumed):
        def hook(grad_inputs, grad_outputs):
            with torch.no_grad(), torch._C.DisableTorchFunction():
                for index, parameter in consumed:
                    grad, held = grad_inputs[index], parameter()
                    if not isinstance(grad, torch.Tensor) or held is None:
                        continue
                    grad = grad.detach().to("cpu", torch.float64)
                    with self._lock:
                        total = self._pending.get(id(held))
                        self._pending[id(held)] = grad.clone() if total is None else total.add_(grad)
            return None

        return hook

    def _raw_hook(self, parameter):
        """The whole gradient one backward gives the parameter: its norm, and the passes' part
        where an outside part came this backward (the outside hooks ran before: a leaf's hooks
        run once every gradient for it is in)."""
        def hook(grad):
            with torch.no_grad(), torch._C.DisableTorchFunction():
                held = parameter()
                if held is not None:
                    self.stepped.delivered(held)   # any model's: a copy's too
                if not isinstance(grad, torch.Tensor) or held is None or \
                        not self._is_parameter(held):
                    return None
                self.writes.before_accumulation(held, grad)
                self._raw_now.append(norm64(grad) ** 2)
                with self._lock:
                    outside = self._pending.pop(id(held), None)
                if outside is not None:
                    passes = grad.detach().to("cpu", torch.float64) - outside
                    with self._lock:
                        self._outside_sq += _squared(outside)
                        self._passes_sq += _squared(passes)
            return None

        return hook

    def _close_backward(self) -> None:
        with torch.no_grad(), torch._C.DisableTorchFunction():
            raw, self._raw_now = self._raw_now, []
            if raw:
                self._raw_norms += math.sqrt(sum(float(x) for x in raw))
            with self._lock:
                # An outside part no parameter's accumulation took (torch.autograd.grad, whose
                # gradients go where the script puts them): all of it outside.
                pending, self._pending = self._pending, {}
                self._outside_sq += sum(_squared(g) for g in pending.values())

    def backward_ended(self) -> list:
        """The outermost backward pass has returned (DDP has averaged `.grad` by now): the
        parameters it fed."""
        fed = self.stepped.backward_ended()
        if self._params:
            self.writes.backward_ended()
        return fed

    # -- the step ------------------------------------------------------------------------------
    def step_fields(self, grads_squared: float, parameters=()) -> dict:
        """The step record's `outside`, `backward_share`, `written` and `walk_limit`, where
        they say something; `grads_squared`: the squared norm of `.grad` at the step;
        `parameters`: those the optimizer steps."""
        if not self._params:
            return {}
        self._close_backward()
        fields: dict = {}
        written = self.writes.step_share(parameters)
        if written is not None and written >= WRITTEN_SHARE:
            fields["written"] = round(written, 4)
        if self._outside_sq > 0:
            outside, passes = math.sqrt(self._outside_sq), math.sqrt(self._passes_sq)
            fields["outside"] = round(outside / (outside + passes), 4)
        applied = math.sqrt(grads_squared) if grads_squared > 0 else 0.0
        # (an inf in .grad, a diverged run's or AMP's overflow, says nothing of where it came from)
        if 0 < applied < math.inf and self._raw_norms < WRITTEN_SHARE * applied:
            fields["backward_share"] = float(f"{self._raw_norms / applied:.3g}")
        if self._walk_limit:
            fields["walk_limit"] = True
        self._reset_step()
        return fields
