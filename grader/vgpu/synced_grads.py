"""Which of each optimizer step's parameters DDP all-reduced: those its buckets held.

An all-reduce by DDP says nothing of whose gradients it synchronised: a `DDP(nn.Linear(1, 1))`
added to the loss times 0.0, beside a model never wrapped and the same rows on every rank,
all-reduces a bucket of two numbers in every backward, while the model's ranks agree only
because they compute alike (a red team, adv52 F2: Practical 6's 3 points of synchronisation).

So each bucket DDP all-reduces (its comm hook, distributed.py) has its parameters remembered,
and at each optimizer step `step_fields` says, of the parameters it steps, `synced`: the share
of their `.grad` (by norm) that lies on parameters a bucket held in the all-reduces since the
steps before (every step after one backward reads the same: an optimizer per stage), and
`synced_elements`: the share of their elements. An honest DDP gives 1 and 1; the dummy above
gives 0 (its parameter's gradient is zeros, the model's were in no bucket). Only where DDP
all-reduced a bucket in this run: other runs' step records are as before.
"""
from __future__ import annotations

import math
import threading
import weakref

import torch

from grader.vgpu.fingerprints import prints_of


class SyncedGradients:
    def __init__(self):
        self._lock = threading.Lock()
        self._held: dict[int, weakref.ref] = {}   # the latest backward's: id -> parameter
        self._stepped = False   # a step read them: the next all-reduce begins another set
        self.seen = False

    def bucket(self, parameters) -> None:
        """DDP all-reduces a bucket holding the gradients of `parameters`."""
        with self._lock:
            self.seen = True
            if self._stepped:
                self._held, self._stepped = {}, False
            for parameter in parameters:
                try:
                    self._held[id(parameter)] = weakref.ref(parameter)
                except TypeError:
                    continue

    def step_fields(self, parameters) -> dict:
        """`synced` and `synced_elements` for a step of `parameters`; nothing where DDP never
        all-reduced a bucket in this run."""
        with self._lock:
            # Every step after a backward reads its all-reduces: one optimizer per pipeline
            # stage steps each stage's parameters in turn after the one backward.
            held, self._stepped = dict(self._held), True
        if not self.seen:
            return {}
        # Frozen parameters are none of DDP's (it buckets those that take gradients) and the
        # optimizer skips them: `SGD(model.parameters())` over a model with a frozen layer is
        # honest (red team adv53 F1: its steps had read as never synchronised, 9.75 -> 4.75).
        stepped = [p for p in parameters if isinstance(p, torch.Tensor) and p.requires_grad]
        inside = [id(p) in held and held[id(p)]() is p for p in stepped]
        total = sum(p.numel() for p in stepped)
        synced_numel = sum(p.numel() for p, held_ in zip(stepped, inside) if held_)
        with_grad = [(p.grad, held_) for p, held_ in zip(stepped, inside) if p.grad is not None]
        squares = [s for _, s in prints_of(g for g, _ in with_grad)]
        whole = sum(squares)
        part = sum(s for s, (_, held_) in zip(squares, with_grad) if held_)
        share = math.sqrt(part / whole) if whole > 0 and math.isfinite(whole) else (
            1.0 if synced_numel == total and total else 0.0)
        return {"synced": round(share, 4),
                "synced_elements": round(synced_numel / total, 4) if total else 0.0}


SYNCED_GRADIENTS = SyncedGradients()
