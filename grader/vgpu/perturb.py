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
the k-th training pass of each root module also adds to the output of every layer on GPU
(k - 1) mod G (G: the node's GPUs) noise of that output's own size (`perturbed`: n, device).
The grader compares each perturbed pass's digest with the same pass's in a normal run of the
same spec (grader/checks/value_probe.py): where it did not move beyond rounding, that GPU's
layers do not carry the pass. The noise is a fixed function of the output (no random numbers
drawn: the script's own draws are the same in both runs), so an honest, reproducible script
gives the same digests in both runs but for the passes perturbed on GPUs that carry them.
"""
from __future__ import annotations

import math

import torch

from grader.vgpu import observe

# Digests recorded per process, at most (a run's first steps are what is compared).
_DIGESTS = 64
# Tensors of one output digested, at most.
_TENSORS = 16
# The noise: out + size * sin(out * _FOLD + _SHIFT), `size` the output's root mean square
# (1 where it is 0: an output of zeros still moves).
_FOLD, _SHIFT = 1013.0, 0.5


class ValueProbe:
    def __init__(self, trace, perturbing: bool, gpus: int):
        self.trace, self.perturbing, self.gpus = trace, perturbing, max(1, gpus)
        self.passes: dict[int, int] = {}      # pass number -> its place among its model's
        self.models: dict[int, int | None] = {}   # pass number -> id of its root module
        self.digested: set[int] = set()
        self.noted: set[tuple] = set()        # (pass, device) perturbed, recorded once
        self.handle = None

    def install(self) -> None:
        from torch.nn.modules import module as module_hooks
        # After the observer's own hook: the gradient watch and the rows see each layer's
        # output as the layer made it; the pass's output, as the perturbed layers made it.
        self.handle = module_hooks.register_module_forward_hook(self._post_forward,
                                                                always_call=True)

    def uninstall(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def _post_forward(self, module, args, output):
        if not self.trace.enabled or observe.in_backward():
            return None
        watch = getattr(observe._tls, "grad_watch", None)
        if watch is None:
            return None      # no training pass under way (no_grad, before any pass)
        if getattr(observe._tls, "depth", 0) >= 1:
            return self._layer_output(module, output, watch.n) if self.perturbing else None
        if observe._is_model(module):
            self._digest(watch.n, output)
        return None

    def _layer_output(self, module, output, n: int):
        """The output of a layer inside training pass `n`, perturbed where the layer's GPU is
        the one this pass perturbs; None (left as it is) otherwise."""
        parameter = next((p for p in module._parameters.values() if p is not None), None)
        if parameter is None or any(True for _ in observe._layers_below(module)):
            return None
        if n not in self.passes:
            # Counted per root module: passes of another module with gradients (a probe
            # trained beside the model, a forged one) do not shift which GPU the model's
            # passes perturb.
            root = getattr(observe._tls, "root", None)
            model = id(root[0]) if root else None
            self.passes[n] = sum(1 for m in self.models.values() if m == model)
            self.models[n] = model
        device = str(parameter.device)
        if device != f"cuda:{self.passes[n] % self.gpus}":
            return None
        changed, output = _perturbed(output)
        if changed and (n, device) not in self.noted:
            self.noted.add((n, device))
            self.trace.emit("perturbed", n=n, device=device, **observe._thread_fields())
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


def _perturbed(output) -> tuple[bool, object]:
    """(whether any tensor was changed, `output` with noise of its own size added to each
    floating-point tensor in it: a tensor, or a tuple or list of them, as an LSTM returns)."""
    if isinstance(output, torch.Tensor):
        if not output.is_floating_point() or not output.numel():
            return False, output
        with torch._C.DisableTorchFunction(), torch.no_grad():
            size = float(torch.linalg.vector_norm(output.detach(), dtype=torch.float64))
            size = size / math.sqrt(output.numel())
        if not math.isfinite(size):
            return False, output
        with torch.no_grad():
            noise = torch.sin(output.detach() * _FOLD + _SHIFT) * (size or 1.0)
        return True, output + noise
    if isinstance(output, (tuple, list)) and type(output) in (tuple, list):
        parts = [_perturbed(item) for item in output]
        if not any(changed for changed, _ in parts):
            return False, output
        return True, type(output)(item for _, item in parts)
    return False, output


_probe: ValueProbe | None = None


def install(trace, perturbing: bool, gpus: int) -> ValueProbe:
    global _probe
    _probe = ValueProbe(trace, perturbing, gpus)
    _probe.install()
    return _probe


def uninstall() -> None:
    global _probe
    if _probe is not None:
        _probe.uninstall()
        _probe = None
