"""Backward on the simulated clock: the forward's work replayed in reverse at twice its cost.

The kernels of backward run inside autograd's C++ engine and never pass through the
torch-function mode. So while the forward runs, every operation whose result needs a gradient
is written on a tape (per host thread), with the entries that made those of its inputs a
gradient flows back into (found by the storages they wrote: `node.producers`; a detached
input needs no gradient, so none flows through it). When `backward()` is called, the entries
its tensors depend on are replayed in reverse, before autograd runs, and the tape is cleared
(work that backward does not reach, e.g. before a `detach()`, costs nothing):

- an operation's backward costs `backward_factor` times its forward, on the same GPU, launched
  `backward_factor` times; its gradient is needed by the operation before it, so launches
  follow one another as the engine's would;
- a copy between GPUs copies the gradient back the other way, once the stream that computed
  the gradient is done with it;
- DataParallel's Scatter, Broadcast and Gather move the gradients back the way their forward
  moved the data (a gather, a reduce onto GPU 0, a scatter), on GPU 0;
- the replicas DataParallel ran in threads are replayed side by side, each GPU's backward
  launched by its own engine thread, as PyTorch's engine does with one thread per device;
- a gradient added to an existing `.grad` costs an addition.

When each parameter's gradient is complete is kept (`clock.grad_ready`) for DDP's buckets.
A tape that no backward clears (a forward with gradients on that nothing back-propagates)
keeps at most `clock.TAPE_LIMIT` entries.
"""
from __future__ import annotations

import contextlib
import itertools
import threading

import torch

from grader.vgpu.clock import SimulatedClock
from grader.vgpu.node import storage_id

# The C getter of `.grad`: the node's own `Tensor.grad` property would label the gradient too.
_grad_getter = torch._C.TensorBase.grad.__get__
_is_leaf = torch._C.TensorBase.is_leaf.__get__


def _grad_of(tensor):
    """The gradient `tensor` holds, None for one autograd made (an autograd Function's output,
    which the tape takes for a leaf: it saw no operation make it): reading its `.grad` warned
    "not a leaf Tensor" from inside backward, an error under warnings.simplefilter("error")."""
    return _grad_getter(tensor) if _is_leaf(tensor) else None

# Entries: (kind, id, what the replay needs..., ids of the entries that made the inputs).
# An operation's: (OP, id, GPU, backward's device time in ns, its leaves or None, made by).
OP, COPY, MOVES, PARALLEL = range(4)
next_entry = itertools.count(1).__next__  # ids of entries (thread-safe in CPython)


def _made_by(node, tensors) -> tuple:
    """The entries that wrote the storages of `tensors` that a gradient flows back into
    (none for parameters, data, and detached tensors)."""
    producers = node.producers
    found = ()
    for tensor in tensors:
        if not tensor.requires_grad:
            continue
        try:
            entry = producers.get(storage_id(tensor))
        except (RuntimeError, NotImplementedError, TypeError):
            continue
        if entry is not None:
            found += (entry,)
    return found


def _made(node, entry: int, outputs) -> None:
    for tensor in outputs:
        try:
            node.producers[storage_id(tensor)] = entry
        except (RuntimeError, NotImplementedError, TypeError):
            pass


def record_operation(node, device: int, seconds: float, inputs, output) -> None:
    """An operation on `device` whose `output` needs a gradient; `inputs` are its tensor
    arguments: those no entry made and that need a gradient are the parameters (and inputs)
    its backward gives a gradient to. (The mode inlines this for its common path.)"""
    clock = node.clock
    producers = node.producers
    made_by, leaves = [], []
    for tensor in inputs:
        if not tensor.requires_grad:  # no gradient flows back into it (data, or detached)
            continue
        try:
            entry = producers.get(storage_id(tensor))
        except (RuntimeError, NotImplementedError, TypeError):
            continue
        if entry is not None:
            made_by.append(entry)
        else:
            leaves.append(tensor)
    entry = next_entry()
    clock.record((OP, entry, device, round(clock.model.backward_factor * seconds * 1e9),
                  leaves or None, made_by))
    _made(node, entry, (output,))


def record_copy(node, source: int | None, target: int | None, nbytes: int, tensor,
                out) -> None:
    if source is not None and target is not None:
        entry = next_entry()
        node.clock.record((COPY, entry, source, target, nbytes, _made_by(node, (tensor,))))
        _made(node, entry, (out,))


_moved = threading.local()


@contextlib.contextmanager
def transfers_of_function():
    """Collect the transfers a Python autograd Function's forward makes (DataParallel's
    Scatter, Broadcast, Gather), so its backward can move the gradients back."""
    stack = getattr(_moved, "stack", None)
    if stack is None:
        stack = _moved.stack = []
    found: list = []
    stack.append(found)
    try:
        yield found
    finally:
        stack.pop()


def note_transfer(source: int, target: int, nbytes: int, lane: int) -> None:
    stack = getattr(_moved, "stack", None)
    if stack:
        stack[-1].append((source, target, nbytes, lane))


def record_function_transfers(node, transfers: list, inputs, outputs) -> None:
    """A Function whose outputs need gradients moved `transfers` forward: its backward moves
    the gradients back, the other way."""
    entry = next_entry()
    node.clock.record((MOVES, entry, [(target, source, nbytes, lane)
                                      for source, target, nbytes, lane in transfers],
                       _made_by(node, inputs)))
    _made(node, entry, outputs)


def record_threads(clock: SimulatedClock, tape: list) -> None:
    """A thread started by this one recorded `tape` (a DataParallel replica): threads joined
    one after the other are one block, replayed side by side."""
    if not tape or not clock.timed:
        return
    own = clock.tape()
    if own and own[-1][0] == PARALLEL:
        own[-1][2].append(tape)
    else:
        clock.record((PARALLEL, None, [tape]))


# -- when backward() is called ------------------------------------------------------------------
def schedule_backward(node, roots) -> None:
    """Lay the work that `roots` (the tensors backward starts from) depend on, from this
    thread's tape, reversed, on the clock; then start a new tape."""
    clock = node.clock
    if not clock.timed:
        return
    tape = clock.take_tape()
    clock.grad_ready.clear()  # DDP reads this backward's, never an earlier one's
    roots_made_by = _made_by(node, roots)
    host = clock.host()
    engine: dict = {}  # per GPU: when its engine thread has launched everything so far
    fast = node.c_path
    if fast is not None and _whole_nanoseconds(clock, host):
        needed = fast.needed_entries(tape, roots_made_by)
        fast.replay(clock, tape, needed, host, engine, clock.copy_ns, _grad_of)
    else:
        by_id: dict = {}
        _index(tape, by_id)
        needed = set()
        pending = list(roots_made_by)
        while pending:
            entry = pending.pop()
            if entry not in needed and entry in by_id:
                needed.add(entry)
                pending.extend(by_id[entry][-1])
        _replay(clock, tape, needed, host, engine)
    # backward() returns when the engine has launched everything (not when the GPUs are done).
    clock.host_wait(max(engine.values(), default=host))


def _whole_nanoseconds(clock: SimulatedClock, host) -> bool:
    """Whether every time the replay reads is an int (the C replay counts in int64); a cost
    model with a fractional backward factor makes them floats, which only Python follows."""
    return type(host) is int and type(clock.model.backward_factor) is int \
        and set(map(type, clock.busy_until)) <= _INT_ONLY


_INT_ONLY = {int}


def _index(tape: list, by_id: dict) -> None:
    for entry in tape:
        if entry[0] == PARALLEL:
            for child in entry[2]:
                _index(child, by_id)
        else:
            by_id[entry[1]] = entry


def _replay(clock: SimulatedClock, tape: list, needed: set, launched: int, engine: dict) -> int:
    """Replay the `needed` entries of `tape` backwards from host time `launched`; returns
    when its last part was launched."""
    model = clock.model
    host_op, busy, grad_ready = clock.host_op_ns, clock.busy_until, clock.grad_ready
    launches = model.backward_factor * host_op
    # What `model.kernel(0, nbytes)` adds up, for the gradients accumulated into a `.grad`
    # below (inlined: one per parameter per backward; the same arithmetic, to the digit).
    kernel_s, bytes_per_s = model.kernel_s, model.memory_bytes_per_s
    for entry in reversed(tape):
        kind = entry[0]
        if kind == PARALLEL:  # the replicas' backward, side by side
            launched = max([_replay(clock, child, needed, launched, engine)
                            for child in entry[2]])
            continue
        if entry[1] not in needed:
            continue
        if kind == OP:
            _, _, device, duration, leaves, _ = entry
            ready = engine.get(device, 0)
            launched = (ready if ready > launched else launched) + launches
            engine[device] = launched
            start = busy[device] if busy[device] > launched else launched
            done = busy[device] = start + duration
            if leaves:
                for leaf in leaves:
                    if _grad_of(leaf) is not None:  # accumulated into an existing gradient
                        launched += host_op
                        done = busy[device] = (done if done > launched else launched) + round(
                            (kernel_s + 3 * leaf.nbytes / bytes_per_s) * 1e9)
                    grad_ready[id(leaf)] = done
        elif kind == COPY:
            _, _, source, target, nbytes, _ = entry  # the gradient goes from target to source
            launched = max(engine.get(target, 0), launched) + host_op
            engine[target] = launched
            start = max(busy[source], busy[target], launched)
            busy[source] = start + clock.copy_ns(nbytes)
        else:  # MOVES
            for source, target, nbytes, lane in entry[2]:
                launched = max(engine.get(lane, 0), launched) + host_op
                engine[lane] = launched
                start = max(busy[source], busy[target], busy[lane], launched)
                busy[target] = busy[lane] = start + clock.copy_ns(nbytes)
    return launched
