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
kept, and at each optimizer step `step_fields` says, for the parameters it steps, `dp_carried`:
the norm of the part of their `.grad` that lies along what the replicas gave them (summed over
the reduces since the steps before: micro-batches; one scale for all, as clipping and
GradScaler's unscale scale .grad) over the norm of their `.grad`: a gradient that came through
the replicas and was taken away again by another term counts for nothing (adv56 F3);
`dp_held`: the share of their elements DataParallel replicated and gave a gradient; `dp_own`:
that norm over the norm of the `.grad` of those replicated parameters alone. A trained head on
cuda:0 four times the wrapped model's size (adv53 F3) keeps `dp_carried` under a half of the
whole step's gradient, though every gradient of the wrapped model came back through its
replicas (`dp_own` 1). Only where DataParallel
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

    def scattered(self) -> None:
        """DataParallel handed a batch out to its replicas. A wrapper of no parameters
        (`nn.DataParallel(nn.Identity())` in front of the model) broadcasts nothing; its steps
        are still DataParallel's, none of whose gradient came back through the replicas
        (adv52 p5_dpident had kept 6.75 of 12 with no `dp_carried` to read)."""
        with self._lock:
            self.replicated = True

    def reduced(self, results) -> None:
        """DataParallel's backward summed the replicas' gradients into `results`, one per
        source tensor of a broadcast, in its order."""
        results = list(results)
        with self._lock:
            sources = self._sources.get(_layout(results))
        if not sources:
            return
        one = {}
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for ref, result in zip(sources, results):
                source = ref()
                if source is not None:
                    one[id(source)] = (ref, result.detach().reshape(-1).double().clone())
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
            # the model steps each part in turn), each parameter's once: a later step of it
            # with no reduce since had read the first step's again (adv56 F2, shells after one
            # step through the replicas).
            reduces, self._stepped = list(self._reduces), True
            self._reduces = [_without(one, parameters) for one in reduces]
        if not self.replicated:
            return {}
        # Frozen parameters take no gradient through the replicas or anywhere (the optimizer
        # skips them), as synced_grads.py reads them; one with a `.grad` is stepped whatever
        # its requires_grad at the step (adv56 F1: turned off around optimizer.step()).
        stepped = [p for p in parameters if isinstance(p, torch.Tensor)
                   and (p.grad is not None or p.requires_grad)]
        total = sum(p.numel() for p in stepped)
        applied = math.sqrt(grads_squared) if not grads_squared <= 0 else 0.0   # NaN stays
        summed: dict[int, torch.Tensor] = {}   # per parameter, the reduces' gradients added
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for one in reduces:
                for p in stepped:
                    entry = one.get(id(p))
                    if entry is not None and entry[0]() is p:
                        gave = summed.get(id(p))
                        summed[id(p)] = entry[1] if gave is None else gave + entry[1]
        held = [p for p in stepped if id(p) in summed]
        carried = _along([(p.grad, summed[id(p)]) for p in held if p.grad is not None])
        held_numel = sum(p.numel() for p in held)
        own_grads = [p.grad for p in held if p.grad is not None]
        own_squared = sum(squares for _, squares in prints_of(own_grads))
        return {"dp_carried": _share(carried, applied),
                "dp_held": round(held_numel / total, 4) if total else 0.0,
                "dp_own": _share(carried, math.sqrt(own_squared) if not own_squared <= 0 else 0.0)}


def _without(one: dict, parameters) -> dict:
    """A reduce's entries less those of `parameters`."""
    left = dict(one)
    for p in parameters:
        left.pop(id(p), None)
    return left


def _along(pairs) -> float:
    """The norm of the part of the `.grad`s of `pairs` ((.grad, what the replicas gave it))
    that lies along what the replicas gave, all parameters together (one scale: clipping and
    GradScaler's unscale scale every .grad alike); none where it points against it. A norm
    alone counts a gradient that came through the replicas and was then taken away again by
    another term (`+ wrapped(x).sum() - model(x).sum()`: adv56 F3, 9.25 of 12 where a TA gives
    about 1.5); NaN where a gradient is."""
    dot = squares = 0.0
    with torch.no_grad(), torch._C.DisableTorchFunction():
        for grad, gave in pairs:
            if grad.is_sparse or grad.numel() != gave.numel():
                continue
            g = grad.detach().reshape(-1).double()
            dot += float(torch.dot(g, gave))
            squares += float(torch.dot(gave, gave))
    if not (math.isfinite(dot) and math.isfinite(squares)):
        return math.nan
    return dot / math.sqrt(squares) if dot > 0 and squares > 0 else 0.0


def _share(carried: float, applied: float) -> float:
    """`carried` over `applied` (two norms), as a step record says it."""
    if not (math.isfinite(applied) and math.isfinite(carried)):
        return 1.0   # a diverged step's inf or NaN says nothing of where it came from
    share = carried / applied if applied > 0 else (1.0 if carried > 0 else 0.0)
    return float(f"{min(share, 1e6):.3g}")


REPLICA_GRADIENTS = ReplicaGradients()
