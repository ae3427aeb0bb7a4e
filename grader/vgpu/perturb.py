"""Whether a GPU's layers carry a training pass's value: the value probe.

The gradient watch (observe.py `_GradWatch`) reads a GPU as a stage of a pass where a gradient
that is not zero comes back to a layer output there. A result whose value is cancelled while
its gradient is kept (`x + (side - side.detach())`, a custom autograd.Function whose forward
ignores it and whose backward hands it the gradient, `side * 0` with a hook on the node that
puts the gradient back, `x + side / 1e30`) gets a full gradient and carries nothing of the
pass (red team adv48 F1-F3: a one-stage replica with such a spare on cuda:r+2 scored as two
stages). No test of derivatives can see it: the derivative is what they forge. Values can.

In every observed process the output of each training pass (a root pass run with gradients)
is recorded as a digest (`pass_value`: n, and the sum, sum of squares and shape of each
floating-point tensor of it). In a probe run (the
grader marks the run's seal key, grader/records/seal.py `new_key(marked=True)`: nothing in the
environment or the command line says so, and the key is read before any student code runs),
the k-th training pass of each root module also perturbs the layers on GPU (k - 1) mod G (G:
the node's GPUs): their parameters or their outputs, by as much as their own size (below;
`perturbed`: n, device, kind). The grader compares each perturbed pass's digest with the same
pass's in a normal run of the same spec (grader/checks/value_probe.py): where it did not move
beyond rounding, that GPU's layers do not carry the pass. Every perturbation is a fixed
function of what it perturbs (no random numbers drawn: the script's own draws are the same in
both runs), so an honest, reproducible script gives the same digests in both runs but for the
passes perturbed on GPUs that carry them.

What a perturbation does depends on the pass (`_schedule`; each `perturbed` record says its
`kind`). Only the passes of the first optimizer step compare: a perturbed pass of a GPU that
carries the value changes that step's gradient, and every later pass's weights differ from the
normal run's. Those passes:
- PARAMETERS (each pass on the model's own GPUs): every parameter there is moved by noise of
  its own size for the whole pass, and put back bit for bit when the pass's output is made. A
  perturbation of what a module returns can be seen and undone: `x + (side - F.linear(h, W,
  b))`, the spare's output minus its recomputation, is 0 in a normal run and the noise under
  that perturbation, so the output moved and the spare read as a stage (red team adv50 F1); a
  recomputation from the same parameters moves with them and cancels. So does a projection of
  the spare's output along its own bias (adv50 F3).
- ROWS (one pass that would perturb another rank's GPU): each output on one of the model's GPUs
  has half of another row's added (the rows rolled by one), a perturbation along the output
  itself, which a map that removes the output's own direction removes too, where it keeps
  generic noise (F3 with the direction read outside the pass). A GPU unchanged under it alone
  goes to a person (value_probe.py), not to zero: where a micro-batch has one row it is a
  scaling, which a normalisation after an honest stage undoes.
Later passes add NOISE to each layer output, as the first probes did: those compare only where
nothing perturbed before them moved.
"""
from __future__ import annotations

import math

import torch

from grader.vgpu import cancelled, observe
from grader.vgpu.perturb_kinds import NOISE, PARAMETERS, ROWS

# Digests recorded per process, at most (a run's first steps are what is compared).
_DIGESTS = 64
# Tensors of one output digested, at most.
_TENSORS = 16
# The noise: out + size * sin(out * _FOLD + _SHIFT), `size` the output's root mean square
# (1 where it is 0: an output of zeros still moves). Parameters are moved the same way.
_FOLD, _SHIFT = 1013.0, 0.5
# ROWS: out + _MIX * (out with its rows rolled by one).
_MIX = 0.5


class ValueProbe:
    def __init__(self, trace, perturbing: bool, gpus: int):
        self.handles: list = []
        self._pre_handle = None
        self.trace, self.perturbing, self.gpus = trace, perturbing, max(1, gpus)
        self.counted: dict[int | None, int] = {}   # id of a root module -> its training passes
        self.digested: set[int] = set()
        # The pass under way in this process: (its root module, the GPU it perturbs, the kind),
        # the devices it perturbed, and the parameters moved with their values to put back.
        self.current: tuple | None = None
        self.devices: set[str] = set()
        self.moved: dict[int, tuple] = {}

    def install(self) -> None:
        from torch.nn.modules import module as module_hooks
        # After the observer's own hooks: its pass begins (and marks the weights, side_steps.py)
        # before any is moved; the gradient watch and the rows see each layer's output as the
        # layer made it; the pass's output, as the perturbed layers made it.
        self.handles = [module_hooks.register_module_forward_hook(self._post_forward,
                                                                  always_call=True)]
        self._hook_parameters()

    def _hook_parameters(self) -> None:
        """The pre-hook that moves parameters, only while perturbing: a normal run (every traced
        run of every grading) does not pay a Python call per module call for it."""
        if self.perturbing and self.handles and self._pre_handle is None:
            from torch.nn.modules import module as module_hooks
            self._pre_handle = module_hooks.register_module_forward_pre_hook(self._pre_forward)
            self.handles.append(self._pre_handle)

    @property
    def perturbing(self) -> bool:
        return self._perturbing

    @perturbing.setter
    def perturbing(self, value: bool) -> None:
        self._perturbing = value
        self._hook_parameters()
        if value:
            # Adds and subtracts are read for terms that cancel (cancelled.py) from here on,
            # also where the node's mode routed some of them already.
            from grader.vgpu.mode import thread_mode
            mode = thread_mode()
            if mode is not None:
                mode.forget_routes(cancelled.CANCELLING)

    def uninstall(self) -> None:
        self._put_back()
        for handle in self.handles:
            handle.remove()
        self.handles, self._pre_handle = [], None

    def _pre_forward(self, module, args):
        if not self.perturbing or not self.trace.enabled or observe.in_backward() \
                or getattr(observe._tls, "grad_watch", None) is None:
            return None
        root = getattr(observe._tls, "root", None)
        depth = getattr(observe._tls, "depth", 0)
        if depth == 1 and root and root[0] is module:
            self._begin(module)
        elif depth > 1 and self.current is not None and self.current[2] == PARAMETERS:
            # A layer outside the model's parameters (a module the forward holds elsewhere):
            # moved before it runs, as the model's were before the pass.
            self._move(module.parameters(recurse=False))
        return None

    def _begin(self, root) -> None:
        """A training pass of `root` begins: which GPU it perturbs and how. Counted per root
        module: passes of another module with gradients (a probe trained beside the model, a
        forged one) do not shift which GPU the model's passes perturb."""
        self._put_back()
        place = self.counted.get(id(root), 0)
        self.counted[id(root)] = place + 1
        gpu, kind = _schedule(place, self.gpus, _gpus_of(root))
        self.current = (root, f"cuda:{gpu}", kind)
        self.devices = set()
        if kind == PARAMETERS:
            self._move(root.parameters())

    def _move(self, parameters) -> None:
        """Noise of their own size added to those of `parameters` on the pass's GPU, their
        values kept to be put back. In place on `.data`: autograd's record of the parameter is
        left as it is (no version bumped), and the backward reads the values put back."""
        device = self.current[1]
        for parameter in parameters:
            if id(parameter) in self.moved or not parameter.is_floating_point() \
                    or str(parameter.device) != device or not parameter.numel():
                continue
            changed, moved = _perturbed(parameter.data, NOISE)
            if not changed:
                continue
            with torch.no_grad():
                kept = parameter.data.clone()
                parameter.data.copy_(moved)
            self.moved[id(parameter)] = (parameter, kept)
            self.devices.add(device)

    def _put_back(self) -> None:
        with torch.no_grad():
            for parameter, kept in self.moved.values():
                parameter.data.copy_(kept)
        self.moved = {}

    def _post_forward(self, module, args, output):
        if not self.trace.enabled or observe.in_backward():
            return None
        watch = getattr(observe._tls, "grad_watch", None)
        if watch is None:
            return None      # no training pass under way (no_grad, before any pass)
        if getattr(observe._tls, "depth", 0) >= 1:
            return self._layer_output(module, output) if self.perturbing else None
        if self.current is not None and self.current[0] is module:
            self._end(watch.n)
        if observe._is_model(module):
            self._digest(watch.n, output)
        return None

    def _end(self, n: int) -> None:
        """The pass's output is made: its parameters put back, what it perturbed recorded."""
        self._put_back()
        kind = self.current[2]
        for device in sorted(self.devices):
            self.trace.emit("perturbed", n=n, device=device, kind=kind,
                            **observe._thread_fields())
        self.current, self.devices = None, set()

    def _layer_output(self, module, output):
        """The output of a layer inside the training pass, perturbed where the layer's GPU is
        the one this pass perturbs and the pass's kind is one of outputs; None (left as it is)
        otherwise."""
        if self.current is None or self.current[2] == PARAMETERS:
            return None
        parameter = next((p for p in module._parameters.values() if p is not None), None)
        if parameter is None or any(True for _ in observe._layers_below(module)):
            return None
        device = str(parameter.device)
        if device != self.current[1]:
            return None
        changed, output = _perturbed(output, self.current[2])
        if changed:
            self.devices.add(device)
        return output if changed else None

    def _digest(self, n: int, output) -> None:
        if n in self.digested or len(self.digested) >= _DIGESTS:
            return
        tensors = [t for t in observe._output_tensors(output) if t.is_floating_point()]
        if not tensors:
            return
        self.digested.add(n)
        # Every floating-point tensor of the output, each digested on its own: a model that
        # returns `(aux, out)`, aux a penalty on stage 0 alone, had only aux digested, and
        # perturbing stage 1 never moved it (red team adv49 F4, honest).
        digests = []
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for out in tensors[:_TENSORS]:
                values = out.detach().to(torch.float64)
                digests.append({"sum": float(values.sum()),
                                "sumsq": float((values * values).sum()),
                                "shape": list(out.shape)})
        self.trace.emit("pass_value", n=n, tensors=digests, **observe._thread_fields())


def _gpus_of(root) -> list[int]:
    """The GPUs `root`'s parameters are on, by index."""
    found = set()
    for parameter in root.parameters():
        device = parameter.device
        if device.type == "cuda" and device.index is not None:
            found.add(device.index)
    return sorted(found)


def _schedule(place: int, gpus: int, own: list[int]) -> tuple[int, str]:
    """(the GPU, the kind) of the perturbation of a model's pass at `place` among its passes
    (0 first), on a node of `gpus` GPUs, the model's parameters on the GPUs `own`. The GPU goes
    round the node; the kind is PARAMETERS in the first round, NOISE after it. Only the first
    round compares (the passes of the first optimizer step): a perturbed pass of a GPU that
    carries the value changes the step's gradient, and the weights of every later pass differ
    from the normal run's. In that round the first pass whose GPU holds none of the model's
    (another rank's pair) mixes the rows (ROWS) of the model's GPU that comes next round the
    node; the others stay unperturbed for the model, which `unsteady_tensors` reads. With two
    ranks of two GPUs, rank 0 mixes stage 1's rows and rank 1 stage 0's."""
    gpu, round_ = place % gpus, place // gpus
    if round_:
        return gpu, NOISE
    if gpu in own or not own:
        return gpu, PARAMETERS
    free = next(g for g in range(gpus) if g not in own)
    if gpu != free:
        return gpu, PARAMETERS       # a GPU without the model's parameters: changes nothing
    return next((g for g in own if g > gpu), own[0]), ROWS


def _perturbed(output, kind: str) -> tuple[bool, object]:
    """(whether any tensor was changed, `output` perturbed as `kind` (NOISE, ROWS) says in
    each floating-point tensor of it: a tensor, or a tuple or list of them, as an LSTM
    returns)."""
    if isinstance(output, torch.Tensor):
        if not output.is_floating_point() or not output.numel():
            return False, output
        with torch._C.DisableTorchFunction(), torch.no_grad():
            size = float(torch.linalg.vector_norm(output.detach(), dtype=torch.float64))
            size = size / math.sqrt(output.numel())
        if not math.isfinite(size):
            return False, output
        if kind == ROWS and size:
            with torch.no_grad():
                other = output.detach().roll(1, 0) if output.dim() else output.detach()
            return True, output + _MIX * other
        # (An output of zeros has no rows to mix: the noise moves it, as any other. A last
        # layer initialised to zeros had left its GPU unchanged by the rows mixed, adv49 F1.)
        with torch.no_grad():
            noise = torch.sin(output.detach() * _FOLD + _SHIFT) * (size or 1.0)
        return True, output + noise
    if isinstance(output, (tuple, list)) and type(output) in (tuple, list):
        parts = [_perturbed(item, kind) for item in output]
        if not any(changed for changed, _ in parts):
            return False, output
        return True, type(output)(item for _, item in parts)
    return False, output


_probe: ValueProbe | None = None


def install(trace, perturbing: bool, gpus: int) -> ValueProbe:
    global _probe
    cancelled.reset()
    _probe = ValueProbe(trace, perturbing, gpus)
    _probe.install()
    return _probe


def uninstall() -> None:
    global _probe
    if _probe is not None:
        _probe.uninstall()
        _probe = None
