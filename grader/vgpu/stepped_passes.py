"""Which forward passes trained the parameters the optimizer steps.

A student who checks Practical 10's claim runs a copy of the model (`copy.deepcopy(
model.module)`) on the whole batch, backward, and compares the copy's gradient with the
accumulated one. That pass and its backward had counted as a fifth micro-batch (a red team's
honest P10 scored 3.75 of 10, adv31 H1). A copy's weights are tensors of their own that no
optimizer holds: its pass made nothing of the step.

So, per step: a pass whose every backward gave gradients to none of the parameters the
optimizer then steps is left out of that step (`unstepped` in the step record, the pass
numbers; practical_measures.training_events). Judged by where each backward's gradients went
(the grader's hook on every parameter, gradient_sources.py), never by the parameters the
pass's module holds: a module holding the real model unregistered, a dummy parameter of its
own, trains the stepped weights inside its pass, and counts; a pass reached a second time by a
backward through its retained graph is judged by that backward too. What a copy's gradient
does after its backward (copied into the model's `.grad`) is the script's write (grad_writes.py).

A pass counts, as before, wherever this is not known: a stepped parameter hooked only after
the backward began (never registered with a module, as a deepcopy's, and not yet held by a
model whose pass was seen), backwards of two threads at once, more backwards or passes in a
step than are kept. And where no pass of the step gave the stepped parameters anything (an
optimizer over other tensors than the model's), no pass is left out.
"""
from __future__ import annotations

import threading
import weakref

# Backwards and passes of one step remembered, at most (the latest): a step past that counts
# every pass, as before.
KEPT = 4096


class SteppedPasses:
    """Each outer backward's number, the parameters it gave gradients to, the passes it
    reached; each watched parameter's hooking time (in backward numbers)."""

    def __init__(self):
        # Reentrant: a garbage collection inside a locked part may free a parameter, whose
        # callback takes the lock again in the same thread.
        self._lock = threading.RLock()
        self._number = 0          # outer backwards begun so far
        self._current = 0         # the one running (0: none yet)
        self._running: dict[int, int] = {}          # thread id -> its outer backward
        self._hooked: dict[int, tuple[weakref.ref, int]] = {}   # id -> (parameter, _number then)
        self._delivered: dict[int, set[int]] = {}   # backward -> ids of the parameters it fed
        self._reached: dict[int, set[int]] = {}     # pass number -> backwards that reached it
        self._unknown: set[int] = set()             # backwards run beside another thread's

    # -- what the hooks tell ----------------------------------------------------------------
    def hooked(self, parameter) -> None:
        """The grader's gradient hook is on `parameter` from now on."""
        key = id(parameter)

        def gone(ref, key=key):
            with self._lock:
                held = self._hooked.get(key)
                if held is not None and held[0] is ref:
                    del self._hooked[key]

        with self._lock:
            self._hooked[key] = (weakref.ref(parameter, gone), self._number)

    def backward_begins(self, nested: bool) -> None:
        """A backward (or torch.autograd.grad) begins; `nested`: inside another, part of it."""
        if nested:
            return
        thread = threading.get_ident()
        with self._lock:
            self._number += 1
            number = self._current = self._number
            beside = [n for t, n in self._running.items() if t != thread]
            if beside:
                self._unknown.update(beside + [number])
            self._running[thread] = number
            self._delivered[number] = set()
            if len(self._delivered) > KEPT:
                self._delivered.pop(next(iter(self._delivered)))

    def backward_ended(self) -> list:
        """The outer backward this thread called has returned: the parameters it fed (those
        hooked; hand_steps.py watches them from here)."""
        with self._lock:
            number = self._running.pop(threading.get_ident(), None)
            found = [self._hooked.get(key) for key in self._delivered.get(number, ())]
        return [p for held in found if held is not None and (p := held[0]()) is not None]

    def delivered(self, parameter) -> None:
        """The running backward gives `parameter` a gradient."""
        fed = self._delivered.get(self._current)
        if fed is not None:
            fed.add(id(parameter))

    def reached(self, forward: int) -> None:
        """The running backward reaches the output of pass `forward`."""
        with self._lock:
            backwards = self._reached.get(forward)
            if backwards is None:
                if len(self._reached) >= KEPT:
                    return
                backwards = self._reached[forward] = set()
            backwards.add(self._current)

    # -- the step ----------------------------------------------------------------------------
    def fed_beside(self, stepped) -> list:
        """The parameters this step's backwards gave gradients to that are none of `stepped`
        (hand_steps.py); read before `unstepped`, which forgets the backwards."""
        with self._lock:
            fed = set().union(*self._delivered.values()) - {id(p) for p in stepped}
            found = [self._hooked.get(key) for key in fed]
        return [p for held in found if held is not None and (p := held[0]()) is not None]

    def unstepped(self, passes, stepped) -> list[int]:
        """The numbers of `passes` (this step's) whose every backward gave none of `stepped`
        (the parameters the optimizer steps now) a gradient, where another of them gave some;
        what the step's backwards did is forgotten then."""
        with self._lock:
            try:
                return self._unstepped(passes, stepped)
            finally:
                running = set(self._running.values())
                self._delivered = {n: fed for n, fed in self._delivered.items() if n in running}
                self._unknown &= running
                self._reached = {}

    def _unstepped(self, passes, stepped) -> list[int]:
        ids, watched_from = set(), 0
        for parameter in stepped:
            held = self._hooked.get(id(parameter))
            if held is None or held[0]() is not parameter:
                return []        # its gradients are not seen: nothing is known
            ids.add(id(parameter))
            watched_from = max(watched_from, held[1])
        left_out, trained = [], False
        for forward in passes:
            backwards = self._reached.get(forward)
            if not backwards:
                continue
            fed = {n: self._delivered.get(n) for n in backwards}
            if any(f is not None and f & ids for f in fed.values()):
                trained = True
            elif all(f is not None and n > watched_from and n not in self._unknown
                     for n, f in fed.items()):
                left_out.append(forward)
        return left_out if trained else []
