"""Parameters trained by hand beside the optimizer's step: the model the step leaves out.

"The model" of a step record is what the optimizer holds. An optimizer over a dummy
`DDP(nn.Linear(1, 1))` alone, the real model never wrapped and updated by hand under no_grad
(`p -= LR * p.grad`), read as a model all-reduced at every step: the dummy's bucket held all of
what the optimizer stepped (a red team, adv56 F6: 9.5 of 12 with the ranks starting from other
weights and never agreeing; a TA gives about 5.5).

So at each step the parameters its backwards gave gradients to that the step does not step
(`fed beside`: stepped_passes.py) are remembered with their values' fingerprint; at the next
step, those whose values moved with no optimizer stepping them, toward less loss (the move
lies against the gradient they had: a hand-written descent), were trained by hand
(`trained_beside`): the step record counts them as stepped (synced_grads.py). A copy of the
model run on the batch to check a gradient (adv31 H1) moves only where weights are loaded into
it, and then holds the weights of a parameter the optimizer steps (the model's): not trained
beside. One step's hand update is read at the next step, so the last goes unread.
"""
from __future__ import annotations

import weakref

import torch

from grader.vgpu.fingerprints import prints_of


class HandSteps:
    def __init__(self):
        # id -> (parameter, its values then, its gradient then), fed beside the last step
        self._watched: dict[int, tuple[weakref.ref, torch.Tensor, torch.Tensor]] = {}
        self._optimized: set[int] = set()   # ids any optimizer stepped since that step

    def optimizer_steps(self, parameters) -> None:
        """An optimizer (the model's or another) steps `parameters`."""
        if self._watched:
            self._optimized.update(id(p) for p in parameters)

    def at_step(self, fed_beside, stepped) -> list:
        """The model's step of `stepped`: the parameters fed beside the step before that moved
        by hand since (see the module's docstring); those fed beside this one are watched."""
        moved = [p for key, (ref, values, grad) in self._watched.items()
                 if (p := ref()) is not None and key not in self._optimized
                 and _descended(p, values, grad)]
        if moved:
            held = {print_ for print_ in prints_of(stepped)}
            moved = [p for p, print_ in zip(moved, prints_of(moved)) if print_ not in held]
        self._optimized = set()
        self._watched = {}
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for p in fed_beside:
                if p.grad is None or p.grad.is_sparse or p.grad.shape != p.shape:
                    continue
                try:
                    self._watched[id(p)] = (weakref.ref(p), p.detach().clone(),
                                            p.grad.detach().clone())
                except TypeError:
                    continue
        return moved


def _descended(parameter, values, grad) -> bool:
    """Whether the parameter moved from `values` against `grad` (a step of descent)."""
    with torch.no_grad(), torch._C.DisableTorchFunction():
        if parameter.shape != values.shape:
            return False
        move = (parameter.detach() - values).reshape(-1).double()
        g = grad.reshape(-1).double()
        size = float(move.norm()) * float(g.norm())
        return size > 0 and float(torch.dot(move, -g)) > 0.5 * size
