"""How much of each optimizer step's gradient came back through DataParallel's replicas.

DataParallel copies the parameters of the module it wraps to every GPU (`Broadcast`, whose
forward is `comm.broadcast_coalesced`) and, in backward, sums the replicas' gradients back onto
those parameters (`ReduceAddCoalesced`, `comm.reduce_add_coalesced`). A scatter, replica passes
and a gather say nothing of what trained: `nn.DataParallel(Spread(model))` whose forward returns
its input scatters, replicates the model, gathers, and the model then trains on cuda:0 on the
whole batch (a red team, adv52 F1: 9.25 of 12, the reference's score). There no gradient comes
back through the replicas: the sum DataParallel's backward hands the parameters is zeros, or
never made.

So each broadcast's source tensors are remembered (by their shapes and devices: the reduce's
results come in the same order, on the same device), each reduce's gradient per parameter is
summed up (squared norms), and at each optimizer step `step_fields` says, for the parameters it
steps, `dp_carried`: the norm of what the replicas gave them (summed over the reduces since the
steps before: micro-batches) over the norm of their `.grad`; `dp_held`: the share of their elements
DataParallel replicated and gave a gradient; `dp_own`: that norm over the norm of the `.grad` of
those replicated parameters alone. A trained head on cuda:0 four times the wrapped model's size
(adv53 F3) keeps `dp_carried` under a half of the whole step's gradient, though every gradient
of the wrapped model came back through its replicas (`dp_own` 1). Only where DataParallel
broadcast anything in this run: other runs' step records are as before.
"""
from __future__ import annotations

import math
import threading
import weakref

import torch

from grader.vgpu.fingerprints import prints_of

# Broadcast sources remembered (the latest by their layout): a model, its buffers, a few more.
_KEPT = 16


def _layout(tensors) -> tuple:
    return tuple((tuple(t.shape), str(t.device)) for t in tensors)


class ReplicaGradients:
    def __init__(self):
        self._lock = threading.Lock()
        self._sources: dict[tuple, list] = {}   # layout -> weakrefs of a broadcast's sources
        self._reduces: list[dict] = []   # the latest backwards': id -> (ref, sumsq, numel)
        self._stepped = False   # a step read them: the next reduce begins another set
        self.replicated = False

    def broadcast(self, tensors) -> None:
        """DataParallel copies `tensors` (the wrapped module's parameters or buffers) out."""
        tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
        if not tensors:
            return
        try:
            refs = [weakref.ref(t) for t in tensors]
        except TypeError:
            return
        with self._lock:
            self.replicated = True
            self._sources.pop(_layout(tensors), None)
            self._sources[_layout(tensors)] = refs
            while len(self._sources) > _KEPT:
                self._sources.pop(next(iter(self._sources)))

    def reduced(self, results) -> None:
        """DataParallel's backward summed the replicas' gradients into `results`, one per
        source tensor of a broadcast, in its order."""
        results = list(results)
        with self._lock:
            sources = self._sources.get(_layout(results))
        if not sources:
            return
        squares = [squares for _, squares in prints_of(results)]
        one = {}
        for ref, result, square in zip(sources, results, squares):
            source = ref()
            if source is not None:
                one[id(source)] = (ref, square, result.numel())
        with self._lock:
            if self._stepped:
                self._reduces, self._stepped = [], False
            self._reduces.append(one)

    def step_fields(self, parameters, grads_squared: float) -> dict:
        """`dp_carried` and `dp_held` for a step of `parameters` (see the module's docstring),
        whose `.grad` has the squared norm `grads_squared`; nothing where DataParallel never
        replicated in this run."""
        with self._lock:
            # Every step after the backwards reads their reduces (an optimizer per part of
            # the model steps each part in turn).
            reduces, self._stepped = list(self._reduces), True
        if not self.replicated:
            return {}
        # Frozen parameters take no gradient through the replicas or anywhere (the optimizer
        # skips them), as synced_grads.py reads them.
        stepped = [p for p in parameters if isinstance(p, torch.Tensor) and p.requires_grad]
        total = sum(p.numel() for p in stepped)
        applied = math.sqrt(grads_squared) if not grads_squared <= 0 else 0.0   # NaN stays
        carried, held = 0.0, set()
        for one in reduces:
            squares = 0.0
            for p in stepped:
                entry = one.get(id(p))
                if entry is not None and entry[0]() is p:
                    squares += entry[1]
                    held.add(id(p))
            carried += math.sqrt(squares)
        held_numel = sum(p.numel() for p in stepped if id(p) in held)
        own_grads = [p.grad for p in stepped if id(p) in held and p.grad is not None]
        own_squared = sum(squares for _, squares in prints_of(own_grads))
        return {"dp_carried": _share(carried, applied),
                "dp_held": round(held_numel / total, 4) if total else 0.0,
                "dp_own": _share(carried, math.sqrt(own_squared) if not own_squared <= 0 else 0.0)}


def _share(carried: float, applied: float) -> float:
    """`carried` over `applied` (two norms), as a step record says it."""
    if not (math.isfinite(applied) and math.isfinite(carried)):
        return 1.0   # a diverged step's inf or NaN says nothing of where it came from
    share = carried / applied if applied > 0 else (1.0 if carried > 0 else 0.0)
    return float(f"{min(share, 1e6):.3g}")


REPLICA_GRADIENTS = ReplicaGradients()
