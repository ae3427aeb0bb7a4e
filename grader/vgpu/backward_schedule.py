"""Lay a backward pass on the simulated clock before autograd runs it.

The kernels of backward run in C++ and never pass through the torch-function mode, so their
costs are noted at forward time, on each operation's backward node (`grad_fn.metadata`), and
laid out here when `backward()` is called, in the order autograd's engine runs the nodes:

- a node of an operation costs `backward_factor` times the operation's forward cost, on the
  operation's GPU, launched `backward_factor` times;
- a node of a copy between GPUs copies the gradient back the other way;
- a node of DataParallel's Scatter, Broadcast or Gather moves the gradients back the way its
  forward moved the data (a gather, a reduce onto GPU 0, a scatter), on GPU 0;
- a gradient accumulated into an existing `.grad` costs an addition;
- each node waits for the gradients it needs (dataflow), and each GPU's nodes are launched by
  that GPU's engine thread, as PyTorch's autograd engine does with one thread per device.

When a parameter's gradient is complete is kept (`clock.grad_ready`) for DDP's buckets.
"""
from __future__ import annotations

import contextlib
import heapq
import threading

from grader.vgpu.clock import SimulatedClock, ns

COST = "pdl_cost"            # grad_fn.metadata[COST]: (device, forward seconds)
COPY = "pdl_copy"            # grad_fn.metadata[COPY]: (source, target, nbytes) of the forward
TRANSFERS = "_pdl_backward_transfers"  # on a Python Function's node: [(src, dst, nbytes, lane)]


def note_operation(output, device: int, seconds: float) -> None:
    """At forward time: the backward of the operation that made `output` costs this much."""
    grad_fn = output.grad_fn
    if grad_fn is not None:
        grad_fn.metadata[COST] = (device, seconds)


def note_copy(output, source: int | None, target: int | None, nbytes: int) -> None:
    grad_fn = output.grad_fn
    if grad_fn is not None:
        grad_fn.metadata[COPY] = (source, target, nbytes)


_moved = threading.local()


@contextlib.contextmanager
def transfers_of_function():
    """Collect the transfers a Python autograd Function's forward makes (DataParallel's
    Scatter, Broadcast, Gather), to give its backward node the same moves reversed."""
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


def note_function_backward(output, transfers: list) -> None:
    """On the node of a Function's `output`: its backward moves `transfers` back."""
    grad_fn = output.grad_fn
    if grad_fn is not None:
        try:
            setattr(grad_fn, TRANSFERS, [(t, s, n, lane) for s, t, n, lane in transfers])
        except AttributeError:
            pass


def _graph(roots):
    """Every node reachable from `roots`, with how many reachable nodes feed each one."""
    feeding: dict = {}
    stack = [r for r in roots if r is not None]
    for root in stack:
        feeding.setdefault(root, 0)
    seen = set(stack)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            feeding[child] = feeding.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return feeding


def _order(node) -> int:
    try:
        return -node._sequence_nr()  # the engine runs the most recently created node first
    except (AttributeError, RuntimeError):
        return 0


def schedule_backward(clock: SimulatedClock, roots, label_of) -> None:
    """Lay the backward pass from `roots` (grad_fns) on `clock`; `label_of(tensor)` gives a
    tensor's GPU (None: the host)."""
    if not clock.timed:
        return
    model = clock.model
    host = clock.host()
    feeding = _graph(roots)
    launched_in = {node: host for node in feeding}   # when the node's inputs were launched
    ready_in = {node: host for node in feeding}      # when its input gradients exist
    engine: dict = {}                                # per device: its engine thread's host time
    counter = 0
    queue = []
    for node, count in feeding.items():
        if count == 0:
            heapq.heappush(queue, (_order(node), counter, node))
            counter += 1
    while queue:
        _, _, node = heapq.heappop(queue)
        launched, ready = _run(node, clock, model, engine, launched_in[node], ready_in[node],
                               label_of)
        for child, _ in node.next_functions:
            if child is None:
                continue
            if launched > launched_in[child]:
                launched_in[child] = launched
            if ready > ready_in[child]:
                ready_in[child] = ready
            feeding[child] -= 1
            if feeding[child] == 0:
                heapq.heappush(queue, (_order(child), counter, child))
                counter += 1
    # backward() returns when the engine has launched everything (not when the GPUs are done).
    clock.host_wait(max(engine.values(), default=host))


def _launch(clock, engine, device, launched, ready, seconds, launches):
    """`launches` kernels taking `seconds` in all on `device`, after `launched` (host) and
    `ready` (data); returns (host time after launching, device time when done)."""
    at = max(engine.get(device, launched), launched) + launches * ns(clock.model.host_op_s)
    engine[device] = at
    start = max(clock.busy_until[device], at, ready)
    done = clock.busy_until[device] = start + ns(seconds)
    return at, done


def _run(node, clock, model, engine, launched, ready, label_of):
    metadata = node.metadata
    cost = metadata.get(COST)
    if cost is not None:
        device, seconds = cost
        factor = model.backward_factor
        return _launch(clock, engine, device, launched, ready, factor * seconds, factor)
    copy = metadata.get(COPY)
    if copy is not None:
        source, target, nbytes = copy
        if source is None or target is None:
            return launched, ready  # a gradient leaving for the host: not on a GPU's timeline
        # The gradient goes back from `target` to `source`, once `source`'s stream is free.
        return _launch(clock, engine, source, launched, max(ready, clock.busy_until[target]),
                       model.copy(nbytes), 1)
    transfers = getattr(node, TRANSFERS, None)
    if transfers:
        at, done = launched, ready
        for source, target, nbytes, lane in transfers:
            at, done = _launch(clock, engine, lane, at, max(done, clock.busy_until[source]),
                               model.copy(nbytes), 1)
        return at, done
    variable = getattr(node, "variable", None) if type(node).__name__ == "AccumulateGrad" else None
    if variable is not None:
        device = label_of(variable)
        if device is None:
            return launched, ready
        if variable.grad is not None:  # accumulating into an existing gradient: an addition
            nbytes = variable.numel() * variable.element_size()
            launched, ready = _launch(clock, engine, device, launched, ready,
                                      model.kernel(0, 3 * nbytes), 1)
        clock.grad_ready[id(variable)] = ready
        return launched, ready
    return launched, ready
