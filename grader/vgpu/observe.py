"""What the script does, observed the same way on real and on virtual GPUs.

Forward passes of root modules (with the placement of every parameter), backward passes,
optimizer steps (timing, gradient and parameter fingerprints, memory per device) and a
memory summary at exit go to the trace. On virtual GPUs each step also carries the simulated
clock (`sim_t`, `sim_step_ms`: docs/trace-format.md). Transfers and collectives are recorded where they
happen (mode, dataparallel, distributed).
"""
from __future__ import annotations

import atexit
import math
import sys
import threading
import weakref

import torch

from grader.common.row_vectors import row_vectors
from grader.vgpu.grad_resets import GradResets
from grader.vgpu.gradient_sources import (GradientSources, checkpoint_walked, mark_pass_output,
                                          pass_of)
from grader.vgpu.input_identity import InputIdentity
from grader.vgpu.loss_weights import class_weighted_mean
from grader.vgpu.norms import norm64
from grader.vgpu import pass_tokens
from grader.vgpu.patcher import Patcher
from grader.vgpu.gradient_sketch import sketch_of
from grader.vgpu.replica_grads import REPLICA_GRADIENTS
from grader.vgpu.rows import RowRecorder, in_replica_thread, storage_of
from grader.vgpu.hand_steps import HandSteps
from grader.vgpu.side_steps import SideSteps, step_code
from grader.vgpu.synced_grads import SYNCED_GRADIENTS
from grader.vgpu.fingerprints import combined, prints_of
from grader.vgpu.trace import Trace, call_site

_tls = threading.local()


# DataParallel's own forward, as torch defines it (read before any script runs).
_DATA_PARALLEL_FORWARD = torch.nn.DataParallel.forward.__code__
# Frames looked through for it when a thread starts: parallel_apply is a few calls below.
_DATA_PARALLEL_FRAMES = 64


def inside_data_parallel() -> bool:
    """Whether a DataParallel forward is running in this thread: a thread it starts is a
    replica's (rows.in_replica_thread)."""
    return _on_stack(_DATA_PARALLEL_FORWARD, sys._getframe(1), _DATA_PARALLEL_FRAMES)


def _data_parallel_fields(module) -> dict:
    """DataParallel's output_device and device_ids as its forward's record says them: where a
    script asks for the outputs on another GPU than the first of device_ids (output_device=2, a
    documented option), Practical 5's gather check holds the gather to that GPU."""
    if not isinstance(module, torch.nn.DataParallel) or not getattr(module, "device_ids", None):
        return {}
    return {"output_device": f"cuda:{module.output_device}",
            "device_ids": [f"cuda:{d}" for d in module.device_ids]}


def _thread_fields() -> dict:
    """The thread a forward record is of: its name, and where that is not the main thread its
    id too (names are the script's to choose; a pass is paired with its output by both)."""
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return {"thread": thread.name}
    return {"thread": thread.name, "tid": threading.get_ident()}


# How far into a forward's output its tensors are looked for: containers, dataclasses and
# plain objects nested this deep, at most this many values.
_OUTPUT_DEPTH, _OUTPUT_VALUES = 4, 256


def _output_tensors(output) -> list:
    """The tensors of a forward's output: a tensor, or inside lists, tuples, dicts, dataclasses
    and plain objects (`Out(pred=...)`, a distribution), nested a few deep. A dataclass output
    had looked tensor-less: none of its passes "trained" (a red team's honest P10 lost 6.5)."""
    found, budget = [], [_OUTPUT_VALUES]

    def walk(value, depth):
        if budget[0] <= 0:
            return
        budget[0] -= 1
        if isinstance(value, torch.Tensor):
            found.append(value)
            return
        if depth >= _OUTPUT_DEPTH or isinstance(value, (str, bytes, int, float, bool, type(None))):
            return
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = list(value)
        elif isinstance(value, torch.nn.Module):
            return
        else:
            items = list(getattr(value, "__dict__", {}).values()) + [
                getattr(value, name, None) for name in getattr(type(value), "__slots__", ())
                if isinstance(name, str)]
        for item in items:
            walk(item, depth + 1)

    walk(output, 0)
    return found


def _may_wrap(module) -> bool:
    """Whether a root module may be a wrapper of the script's own: its class is not torch's
    (DataParallel and DDP are passes of their own) and it has no parameters of its own."""
    return (not type(module).__module__.startswith("torch.")
            and next(module.parameters(recurse=False), None) is None)


def _size(tensor):
    """The norm of `tensor` (float64, 0-dim, on its device: nothing read back)."""
    with torch._C.DisableTorchFunction(), torch.no_grad():
        return norm64(tensor.detach())


def _size_of(grads):
    """The norm of `grads` together (float64, 0-dim: nothing read back); a hook's gradients
    are one tensor, on one device, a pass's output's gradients one per output tensor. (A twin
    that read one tensor's norm back as the root of its square had read one below 1.5e-154 as
    0 and one above 1.3e154 as inf, where this reads the norm.)"""
    with torch._C.DisableTorchFunction(), torch.no_grad():
        norms = [norm64(g) for g in grads if isinstance(g, torch.Tensor) and g.numel()]
        if len(norms) == 1:
            return norms[0]
        return torch.tensor(math.sqrt(sum(float(n) ** 2 for n in norms)), dtype=torch.float64)


def _largest_rows(value) -> int:
    """The most rows (dim 0) of any tensor in `value` (arguments, nested as outputs are)."""
    return max((t.shape[0] for t in _output_tensors(value) if t.dim()), default=0)


def _first_tensor(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
        if isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    return item
    return None


# The observer of this process (install); a backward started by a virtual node's mode or by
# the real-GPU recorder reaches it through `backward_begins`.
_observer: "Observer | None" = None


def backward_begins(roots) -> None:
    """A backward pass (or `torch.autograd.grad`) is about to run from `roots`."""
    observer = _observer
    if observer is not None:
        observer.backward_begins(roots)


def parallel_model(module) -> None:
    """`module` was wrapped in DDP: its parameters are the model's, and an optimizer over none
    of them makes side steps (side_steps.py)."""
    observer = _observer
    if observer is not None and observer.trace.enabled:
        observer.side.wrapped(module)


def backward_ends() -> None:
    """A backward pass the script called has returned (not one inside another)."""
    observer = _observer
    if observer is not None and not in_backward() and observer.trace.enabled:
        observer.hand.backward_ended(observer.sources.backward_ended())
        observer.resets.remember(observer.model_parameters())


# Calls of a pass's first layer noted, at most (`inside_calls`).
_INSIDE_CALLS = 64
# GPUs a pass's layers ran on noted, at most (`layer_devices`).
_LAYER_DEVICES = 16
# Layers whose rows a pass adds up, at most (`layer_devices_on_batch`): a layer past them is
# left out, never a GPU taken from the pass.
_ROWS_PER_LAYER = 4096


def _note_rows_inside(module, args, kwargs) -> None:
    """What the layers inside the root pass are handed (a module with parameters of its own
    called within it): the most rows any is handed (a model whose forward runs its layers on a
    batch it was not handed as its first argument, a keyword or a global, ran on those rows: a
    red team, adv28), and the rows of each call of the first such layer (a model whose own
    forward cuts the batch into micro-batches calls it once per micro-batch: a TA's audit)."""
    if not module._parameters:
        return
    first = _first_tensor(args, kwargs or {})
    if first is not None and first.dim() and first.shape[0] == 0:
        # A layer run on no rows computes nothing where it is: a forward that calls each layer
        # on an empty batch on its own GPU and the real batch on cuda:0 with F.linear on copies
        # of the weights (adv40 F2) had its trace name every GPU.
        _tls.layers_on_no_rows = True
        return
    _note_layer_device(module, row_vectors(first.shape) if first is not None else None)
    _add_rows(module, first.shape[0] if first is not None and first.dim() else None)
    if first is None or not first.dim():
        return
    rows = first.shape[0]
    # The pass's own rows cut into tokens are no rows beyond its own (pass_tokens.py).
    if rows > getattr(_tls, "rows_inside", 0) and not pass_tokens.cut_from_pass(first):
        _tls.rows_inside = rows
    calls = getattr(_tls, "inside_calls", None)
    if calls is None:
        return
    if _tls.inside_first is None:
        _tls.inside_first = id(module)
    if _tls.inside_first == id(module) and len(calls) < _INSIDE_CALLS:
        calls.append(rows)


def _note_layer_device(module, rows: int | None) -> None:
    """The device of a layer run inside the root pass, where no layer of the pass ran there
    before: the GPUs in the order the pass runs its stages (`layer_devices`), which the order
    the layers are registered in need not be (Practical 10: a spare layer registered first, on
    stage 1's GPU, had made stage 1's GPU read as stage 0's); and the most rows a layer there
    was handed (`layer_rows`, as row vectors: row_vectors): a spare layer fed two rows on a GPU
    of its own runs there, but is no stage of the micro-batch (Practical 10, eng_p10s)."""
    parameter = next((p for p in module._parameters.values() if p is not None), None)
    if parameter is None:
        return
    if module._modules and any(True for _ in _layers_below(module)):
        # A model holding parameters of its own beside its layers (`x @ self.w2`): its first
        # parameter's GPU is not where it ran (_note_own_parameters, when its pass ends).
        held = getattr(_tls, "own_parameters", None)
        if held is not None and len(held) < _LAYER_DEVICES:
            held.append(module)
        return
    _note_device(str(parameter.device), rows)


def _layers_below(module):
    return (p for child in module.children() for p in child.parameters())


def _note_device(device: str, rows: int | None, before: str | None = None) -> None:
    """`device` noted in `layer_devices` (where it is not yet: at the end, or right before
    `before`), with `rows` in `layer_rows`."""
    devices = getattr(_tls, "layer_devices", None)
    if devices is None:
        return
    if device not in devices:
        if len(devices) >= _LAYER_DEVICES:
            return
        devices.insert(devices.index(before) if before in devices else len(devices), device)
    most = getattr(_tls, "layer_rows", None)
    if most is not None and rows is not None:
        most[device] = max(rows, most.get(device, 0))


def _add_rows(module, rows: int | None) -> None:
    """The rows a layer run inside the root pass is handed, added up over its calls (None: not
    read, taken as all of them), with the device it ran on: HW3's Task 3 counts a GPU of the
    pass only where a layer there ran on as many rows as the pass was handed
    (`layer_devices_on_batch`). A forward that runs each layer on one row where it is, while
    the batch goes through F.linear on cuda:0 with the same weights, had its trace name every
    GPU; a model that cuts the batch into micro-batches itself runs each layer on all of it."""
    ran = getattr(_tls, "rows_per_layer", None)
    if ran is None:
        return
    key = id(module)
    if key not in ran:
        if len(ran) >= _ROWS_PER_LAYER:
            return
        parameter = next((p for p in module._parameters.values() if p is not None), None)
        ran[key] = [str(parameter.device) if parameter is not None else None, 0]
    ran[key][1] = None if rows is None or ran[key][1] is None else ran[key][1] + rows


def _devices_short_of(rows: int) -> set:
    """The devices of the pass's layers where no layer ran on `rows` rows (the pass's batch)."""
    fed: dict = {}   # device -> whether a layer there ran on the whole batch
    for device, ran in (getattr(_tls, "rows_per_layer", None) or {}).values():
        if device is not None:
            fed[device] = fed.get(device, False) or ran is None or ran >= rows
    return {device for device, whole in fed.items() if not whole}


# Outputs of layer calls (and uses of the model's own parameters) on one GPU hooked per pass, at
# most (`_GradWatch`): a GPU is judged by those; a pass of an honest model's layers carries
# gradient through its first calls on each GPU.
_GRAD_HOOKS = 64
# The least share of the pass (`_GradWatch.share`) a layer output must carry for a gradient
# coming back to it to count. Measured (eng_p10dep; the first hooked output on each GPU, every
# pass of 2 steps of 4 micro-batches): honest stages at the course's width (DIM 512, HIDDEN 1024)
# carry 0.13 at the least (16 Linear+Sigmoid layers a stage: the gradient shrinks 7 times a
# layer; 16 Linear+ReLU 0.37, Tanh 0.53, LayerNorm+Dropout 0.87, an LSTM 0.66, bare parameters,
# the reference and bf16 autocast 1.0); at the tests' width of 8 the least is 0.015 (16 layers of
# LayerNorm on 8 numbers). A spare added as `x + 1e-6 * side` carries 7e-7 to 1.9e-6 (1e-3:
# 8.6e-4). So 3e-4 stands 160x above the forgeries and 430x below the course's honest stages
# (50x below the 8-wide LayerNorm stack). Shares of the whole pass (an output's part in the loss
# against the pass output's) separate nothing: a 16 Linear+ReLU stage's first GPU carries 6e-7
# of the output (its gradient shrinks 0.41 a layer while its activations stay the biases' size),
# a 16-layer sigmoid one's 4e-15.
_CARRY_SHARE = 3e-4
# Steps taken walking from the hooked outputs toward the pass's output, at most, per pass.
_CARRIER_STEPS = 8000


class _GradWatch:
    """Which GPUs of a root pass run with gradients computed something its output's gradient
    came back through: a hook on the output of each layer call there (and on each use of the
    model's own parameters there, `_note_own_parameters`) notes the GPU (`grad_used`, written
    when the backward reaches it) where that gradient is not all zeros and the output carries
    the pass by more than rounding (`share`). A layer whose result is thrown away gets none,
    one whose result is added times 0 gets zeros: a spare nn.Linear fed the whole micro-batch
    on cuda:r+2 had made a one-stage replica two stages (Practical 10, adv43 F2), and layers
    each called on the whole batch on its GPU, the result thrown away while F.linear computed
    the batch on cuda:0, had made HW3's spread (adv43 F3). One whose result is added times
    1e-6 gets a gradient 1e-6 the size (adv46 p10_spare_eps): its GPU is noted `grad_faint`,
    with the share, and counts as one that got zeros. `judged`: the GPUs hooked (or whose
    layers gave outputs without gradients), for `forward_out`'s `grad_judged`; a GPU whose
    layers ran inside reentrant checkpointing (under no_grad, their gradients come from the
    recomputation) is left unjudged. For a pass no backward reaches (the run stopped in its
    loss), `unreached`: the judged GPUs none of whose layer outputs lies in the output's
    autograd graph (a result thrown away is in none)."""

    def __init__(self, trace, n: int):
        self.trace, self.n = trace, n
        self.hooked: dict = {}   # device -> hooks made there; None: not judged
        self.used: set = set()
        self.faint: set = set()
        # device -> the autograd nodes of its layers' outputs, held until the pass ends (a
        # node freed with a result thrown away must not lend its id to one of the output's)
        self.nodes: dict = {}
        # What `share` reads. A key is (id(node), output_nr) for a layer's output, ("use",
        # id(node), index) for a use of an own parameter: its norm; the nearest hooked outputs
        # below it toward the pass's output (None: not known, the graph too large); the
        # pass's output tensors; the product of norms each hook saw, and the shares read.
        self.sizes: dict = {}
        self.carriers: dict | None = None
        self.outputs: set = set()
        self.products: dict = {}
        self.shares: dict = {}
        self.values: dict = {}
        self.needed: set = set()   # the keys some hooked output's share reads
        self.uses: list = []   # the nodes of `parameter_use`, held until the pass ends

    def layer_output(self, device: str, output) -> None:
        if device not in self.hooked and len(self.hooked) >= _LAYER_DEVICES:
            return
        made = self.hooked.setdefault(device, 0)
        if made is None or made >= _GRAD_HOOKS:
            return
        tensors = [t for t in _output_tensors(output) if t.grad_fn is not None]
        if not tensors and _on_stack(_checkpoint_code("forward"), sys._getframe(1)):
            self.hooked[device] = None
        for tensor in tensors[:_GRAD_HOOKS - made]:
            key = (id(tensor.grad_fn), tensor.output_nr)
            try:
                tensor.register_hook(lambda grad, device=device, key=key:
                                     self.reached(device, [grad], key))
            except RuntimeError:
                continue
            self.sizes[key] = _size(tensor)
            self.hooked[device] += 1
            self.nodes.setdefault(device, []).append(tensor.grad_fn)

    def parameter_use(self, device: str, node, index: int, parameter=None) -> None:
        """The use of an own parameter on `device` by autograd node `node` (its `index`th
        input): the gradient the parameter gets there."""
        made = self.hooked.setdefault(device, 0)
        if made is None or made >= _GRAD_HOOKS:
            return
        key = ("use", id(node), index)
        try:
            node.register_hook(lambda grads_in, _out, device=device, key=key:
                               self.reached(device, grads_in[index:index + 1], key))
        except (RuntimeError, AttributeError, TypeError):
            return
        if parameter is not None:
            self.sizes[key] = _size(parameter)
            self.uses.append(node)   # alive until the walk: its id is its key
        self.hooked[device] = made + 1

    def reached(self, device: str, grads, key=None) -> None:
        if not self.trace.enabled or len(self.used) == len(self.hooked):
            return   # every GPU counted already: nothing more to weigh
        gradient = None
        if key in self.sizes and (device not in self.used or key in self.needed):
            gradient = _size_of(grads)
            with torch._C.DisableTorchFunction(), torch.no_grad():
                self.products[key] = gradient * self.sizes[key]
        if device in self.used:
            return
        norm = float(gradient if gradient is not None else _size_of(grads))
        if norm == 0:
            return   # NaN counts: a gradient came back
        share = self.share(key)
        if share is not None and share < _CARRY_SHARE:
            if device not in self.faint:   # its first, nearest the output: the largest
                self.faint.add(device)
                self.trace.emit("grad_faint", n=self.n, device=device,
                                share=float(f"{share:.2g}"), **_thread_fields())
            return
        self.used.add(device)
        self.trace.emit("grad_used", n=self.n, device=device,
                        **({"share": float(f"{share:.2g}")} if share is not None else {}),
                        **_thread_fields())

    def share(self, key) -> float | None:
        """The part of the pass the output `key` carries, as far as the gradients show it: at
        each step from one hooked output to the nearest hooked ones it feeds, toward the pass's
        output, its norm times its gradient's against theirs (the first-order size of its part
        in theirs), the least of these along the way, the most over the ways. None where it is
        not known (the graph was not walked, a hook below did not run, not a number): read as
        before, by the gradient alone. An honest chain of layers keeps it of one order at each
        step (activations shrink forward as gradients shrink backward; a layer that is
        positively homogeneous keeps the product's inner part exactly), while an output added
        to the pass's times 1e-6 carries 1e-6 of it at that step."""
        if self.carriers is None:
            return None
        # Depth first from `key`, each share after those of the outputs it feeds (a chain of
        # hooked outputs can be longer than Python's recursion allows).
        stack = [(key, False)]
        while stack:
            at, ready = stack.pop()
            if at in self.shares:
                continue
            below = self.carriers.get(at) or ()
            if not ready:
                stack.append((at, True))
                stack.extend((c, False) for c in below if c not in self.shares)
                continue
            self.shares[at] = self._step_share(at, below)
        return self.shares[key]

    def _step_share(self, key, below) -> float | None:
        if key in self.outputs:
            return 1.0
        mine = self._read(key)
        if mine is None:
            return None
        best = None
        for carrier in below:
            theirs, carried = self._read(carrier), self.shares.get(carrier)
            if theirs is None or carried is None:
                continue
            step = mine / theirs if theirs > 0 else math.inf
            best = max(best or 0.0, min(step, carried))
        return best

    def _read(self, key) -> float | None:
        """The product of norms the hook of `key` saw, read back once."""
        if key not in self.values:
            product = self.products.get(key)
            self.values[key] = None if product is None else float(product)
        value = self.values[key]
        return value if value is not None and math.isfinite(value) else None

    def judged(self) -> list:
        return [device for device, made in self.hooked.items() if made is not None]

    def unreached(self, tensors) -> list | None:
        """The judged GPUs none of whose layer outputs lies in the graph of `tensors` (the
        pass's output), walked at most _GRAPH_NODES nodes; None where it is larger. The walk
        also finds what `share` reads: the hooked outputs each hooked one feeds."""
        nodes, self.nodes = self.nodes, {}
        queue = [t.grad_fn for t in tensors if t.grad_fn is not None]
        seen, at = set(), 0
        users: dict = {}   # (id(node), output_nr) -> the nodes that use that output
        while at < len(queue):
            node, at = queue[at], at + 1
            if id(node) in seen:
                continue
            if len(seen) >= _GRAPH_NODES:
                return None
            seen.add(id(node))
            for child, number in node.next_functions:
                if child is not None:
                    users.setdefault((id(child), number), []).append(node)
                    if id(child) not in seen:
                        queue.append(child)
        self._find_carriers(tensors, users)
        self.uses = []   # held through the walk, where their ids were matched
        return [device for device in self.judged()
                if not any(id(node) in seen for node in nodes.get(device, ()))]

    def _find_carriers(self, tensors, users) -> None:
        """For each hooked output, the nearest hooked outputs (or the pass's output tensors)
        that use it on some way toward the pass's output (`carriers`)."""
        for tensor in tensors:
            if tensor.grad_fn is not None:
                key = (id(tensor.grad_fn), tensor.output_nr)
                self.outputs.add(key)
                if key not in self.sizes:   # a hook for its product, as a layer output's
                    try:
                        tensor.register_hook(lambda grad, key=key: self._output_reached(
                            key, grad))
                    except RuntimeError:
                        continue
                    self.sizes[key] = _size(tensor)
        at_node: dict = {}   # id(node) -> the keys of its hooked or output tensors
        for key in self.sizes:
            if key[0] != "use":
                at_node.setdefault(key[0], []).append(key)
        by_node: dict = {}   # id(node) -> the nodes using any of its outputs
        for (node_id, _), using in users.items():
            by_node.setdefault(node_id, []).extend(using)
        carriers, steps = {}, 0
        for key in self.sizes:
            if key in self.outputs:
                continue
            if key[0] == "use" and at_node.get(key[1]):
                carriers[key] = tuple(at_node[key[1]])
                continue
            start = by_node.get(key[1], ()) if key[0] == "use" else users.get(key, ())
            found, stack, walked = set(), list(start), set()
            while stack:
                node = stack.pop()
                steps += 1
                if steps > _CARRIER_STEPS:
                    return   # too large to walk: shares not known, read as before
                if id(node) in walked:
                    continue
                walked.add(id(node))
                if at_node.get(id(node)):
                    found.update(at_node[id(node)])
                else:
                    stack.extend(by_node.get(id(node), ()))
            carriers[key] = tuple(found)
        self.carriers = carriers
        self.needed = {carrier for found in carriers.values() for carrier in found}

    def _output_reached(self, key, grad) -> None:
        if self.trace.enabled and key in self.needed:
            gradient = _size_of([grad])
            with torch._C.DisableTorchFunction(), torch.no_grad():
                self.products[key] = gradient * self.sizes[key]


def _watch_layer_output(module, output) -> None:
    """The output of a layer called inside a root pass with gradients, hooked (_GradWatch) on
    the GPU its parameters are on, as _note_layer_device notes it."""
    watch = getattr(_tls, "grad_watch", None)
    if watch is None or not module._parameters:
        return
    parameter = next((p for p in module._parameters.values() if p is not None), None)
    if parameter is None or (module._modules and any(True for _ in _layers_below(module))):
        return
    watch.layer_output(str(parameter.device), output)


# Nodes of a pass's autograd graph walked for the model's own parameters, at most; and the
# nodes above a parameter looked at for the rows of the operation that used it (torch.einsum
# puts an unsqueeze, two permutes and a view between a parameter and its bmm: with 3, an honest
# einsum stage's rows read as unknown, which is no stage: stages_of_pass).
_GRAPH_NODES = 2000
_USE_DEPTH = 6


def _note_own_parameters(models, tensors) -> None:
    """The GPUs of parameters a model holds itself beside its layers (`self.w2 =
    nn.Parameter(...)` used as `x @ self.w2` in its forward: no layer is called there, so no
    call notes them), where the pass's output was computed from them, with the rows of the
    operation that used each (`layer_devices`, `layer_rows`). A stage of bare parameters on
    cuda:r+2 had been no stage (Practical 10, eng_p10s), or its GPU taken for the first one.
    Each such GPU is noted before the first GPU of the pass whose parameters all lie nearer
    the output in the graph (its stage ran later), else last."""
    own = {id(p): p for model in models for p in model._parameters.values()
           if p is not None and p.requires_grad}
    devices = getattr(_tls, "layer_devices", None)
    if not own or devices is None:
        return
    queue = [t.grad_fn for t in tensors if t.grad_fn is not None]
    above, seen, at, level = {}, set(), 0, {id(node): 0 for node in queue}
    deepest, found = {}, []   # device -> the farthest level of a parameter there; own ones
    watch = getattr(_tls, "grad_watch", None)
    while at < len(queue) and len(seen) < _GRAPH_NODES:
        node, at = queue[at], at + 1
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            device, depth = str(variable.device), level[id(node)]
            deepest[device] = max(deepest.get(device, depth), depth)
            if id(variable) in own:
                found.append((device, _rows_used(node, above, variable), depth))
            continue
        for index, (child, _) in enumerate(node.next_functions):
            used = getattr(child, "variable", None)
            if watch is not None and isinstance(used, torch.Tensor) and id(used) in own:
                watch.parameter_use(str(used.device), node, index, used)   # each use
            if child is not None and id(child) not in seen and id(child) not in above:
                above[id(child)], level[id(child)] = node, level[id(node)] + 1
                queue.append(child)
    for device, rows, depth in found:
        later = [d for d in devices if d != device and deepest.get(d, depth) < depth]
        _note_device(device, rows, before=later[0] if later else None)


def _rows_used(node, above, parameter) -> int | None:
    """The rows of the data that the operation where the parameter meets it (the first node
    above the parameter's with more than one input: `x @ w`, not `w.t()` or `relu(w)`) saved
    for its backward, the parameter's own memory left out, the fewest where it saved several
    (`x[:2] @ relu(w)` ran on 2 rows); None where none shows."""
    kept = parameter.untyped_storage().data_ptr()
    for _ in range(_USE_DEPTH):
        node = above.get(id(node))
        if node is None:
            return None
        if len(node.next_functions) < 2:   # an input without gradients is one too
            continue
        rows = [row_vectors(value.shape) for name in dir(node) if name.startswith("_saved_")
                for value in [_saved(node, name)]
                if isinstance(value, torch.Tensor) and value.dim()
                and value.untyped_storage().data_ptr() != kept]
        if rows:
            return min(rows)
    return None


def _saved(node, name):
    try:
        return getattr(node, name)
    except RuntimeError:   # freed by a backward already
        return None


def _more_rows(first, args, kwargs) -> dict:
    """`{"rows_all": n}` where another tensor argument of the pass (a keyword, one inside a
    container) has more rows than its first, which is what `batch` and `rows` are about."""
    rows = first.shape[0] if first is not None and first.dim() else 0
    most = _largest_rows((args, kwargs or {}))
    return {"rows_all": most} if most > rows else {}


# The id of the graph task autograd's engine runs on this thread; -1 outside backward.
_graph_task = torch._C._current_graph_task_id
# Frames looked through for a reentrant checkpoint's forward (`_checkpointed`), at most.
_CHECKPOINT_FRAMES = 40


def in_model_pass() -> bool:
    """Whether a model's forward is under way on this thread (a root module's pass, or its
    recomputation): the ops called now are the model's, not the loop's around it."""
    return getattr(_tls, "depth", 0) >= 1


def in_backward() -> bool:
    """Whether autograd's engine is running a backward pass on this thread: a forward pass
    now is a recomputation (activation checkpointing, a custom Function's backward), part of
    that backward, not a forward pass of the training loop."""
    return _graph_task() != -1


def _checkpointed() -> bool:
    """Whether this forward runs inside reentrant checkpointing's forward
    (`torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`), which runs the function
    under torch.no_grad() although it trains: its gradients come from the recomputation."""
    return _on_stack(_checkpoint_code("forward"), sys._getframe(2))


def _reentrant_recomputation() -> bool:
    """Whether this forward is reentrant checkpointing's recomputation, in its backward."""
    return _on_stack(_checkpoint_code("backward"), sys._getframe(2))


def _on_stack(code, frame, frames: int = _CHECKPOINT_FRAMES) -> bool:
    """Whether `code` runs in `frame` or one of the `frames` frames below it."""
    if code is None:
        return False
    for _ in range(frames):
        if frame is None:
            return False
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _checkpoint_code(method: str):
    module = sys.modules.get("torch.utils.checkpoint")
    function = getattr(module, "CheckpointFunction", None) if module is not None else None
    return getattr(getattr(function, method, None), "__code__", None)


# Autograd nodes walked down from a root module's arguments to the output of a pass they were
# made from, at most (`Observer._continued`): a pass's output handed on as it is, moved, sliced
# or through an activation is a few nodes away.
_CONTINUE_NODES = 64
# Passes of a step remembered for that, at most (the latest): a script that never steps (an
# evaluation or timing loop) runs many.
_STEP_PASSES = 4096


def _passes_below(tensors) -> set[int]:
    """The forward passes whose outputs the graphs of `tensors` reach, walked down from their
    nodes (at most _CONTINUE_NODES nodes, none below a pass's output)."""
    found: set[int] = set()
    stack = [t.grad_fn for t in tensors if t.grad_fn is not None]
    seen: set[int] = set()
    while stack and len(seen) < _CONTINUE_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        forward = pass_of(node)
        if forward is not None:
            found.add(forward)
            continue
        try:
            stack.extend(child for child, _ in node.next_functions if child is not None)
        except (AttributeError, RuntimeError, TypeError):
            continue
    return found


def _is_model(module) -> bool:
    # A loss or activation module called on its own is no model's forward pass; DataParallel's
    # replicas hold their weights as plain tensors, so they have no parameters() yet count.
    return getattr(module, "_is_replica", False) or next(module.parameters(), None) is not None


# Parameters no `__torch_function__` of their own answers for: their sizes are read with torch
# functions off, where the virtual node's mode would only pass the calls through (mode.py
# `_PASSTHROUGH_NAMES`) at a Python frame each (a traced pass reads every layer's twice, where
# it begins and where it ends: benchmarks/observe_overhead.py). Any other kind (a subclass of
# the script's, a lazy module's UninitializedParameter) is read as it answers.
_PLAIN_PARAMETERS = (torch.nn.Parameter, torch.Tensor)


def placement(module: torch.nn.Module) -> list[dict]:
    """Every submodule that owns parameters, in registration order, with its device."""
    owners = [(name, sub, own) for name, sub in module.named_modules()
              if (own := list(sub.parameters(recurse=False)))]
    if all(type(p) in _PLAIN_PARAMETERS for _, _, own in owners for p in own):
        with torch._C.DisableTorchFunction():
            return [_layer(name, sub, own) for name, sub, own in owners]
    return [_layer(name, sub, own) for name, sub, own in owners]


def _devices_of(layers: list[dict]) -> list[tuple]:
    return [(layer["name"], layer["device"]) for layer in layers]


def _layer(name: str, sub: torch.nn.Module, own: list) -> dict:
    devices, params, size = set(), 0, 0
    for parameter in own:
        devices.add(parameter.device)
        if isinstance(parameter, torch.nn.parameter.UninitializedTensorMixin):
            continue   # a lazy module's before its first pass: no size yet (numel raises)
        count = parameter.numel()
        params += count
        size += count * parameter.element_size()
    named = sorted({str(device) for device in devices})
    return {"name": name or "(root)", "type": type(sub).__name__,
            "device": named[0] if len(named) == 1 else named, "params": params, "bytes": size}


# Modules looked at where a script stopped with an error, at most (each walked once).
MAX_MODULES_AT_ERROR = 32


def placements_at_error(traceback_, own_file) -> None:
    """Where the modules the script's own frames held were, when an exception stopped it:
    a layer placed but never run (Practical 4's layer2 on cuda:1, the script stopped by layer1's
    input left on the CPU) had been "on no device seen" (a TA's audit). One `placement_at_error`
    event per module (its local name and layers), never the forward passes' `placement`:
    their consumers read a model's layout as its forward passes found it."""
    from grader.vgpu.trace import get_trace
    trace = get_trace()
    if not trace.enabled:
        return
    seen: set[int] = set()
    tb = traceback_
    while tb is not None and len(seen) < MAX_MODULES_AT_ERROR:
        frame = tb.tb_frame
        if own_file(frame.f_code.co_filename):
            for name, value in list(frame.f_locals.items()):
                if isinstance(value, torch.nn.Module) and id(value) not in seen \
                        and len(seen) < MAX_MODULES_AT_ERROR:
                    seen.add(id(value))
                    layers = placement(value)
                    if layers:
                        trace.emit("placement_at_error", name=str(name)[:100],
                                   module=type(value).__name__, layers=layers)
        tb = tb.tb_next


def _fingerprint(tensors) -> dict:
    # Two numbers per set of tensors are enough to tell "equal on every rank" from "not".
    total, squares = combined(prints_of(tensors))
    return {"sum": total, "sumsq": squares}


def memory_by_device() -> list[dict]:
    if not torch.cuda.is_available():
        return []
    return [{"device": f"cuda:{i}", "allocated": torch.cuda.memory_allocated(i),
             "peak": torch.cuda.max_memory_allocated(i)}
            for i in range(torch.cuda.device_count())]


class ObjectNumbers:
    """Objects numbered 1, 2, ... in the order first seen: passes of one model object are told
    from those of another built alike (HW3: a forward that moves its own layers onto fewer GPUs
    after some calls, read from the script's own run), and the steps of one optimizer from
    those of another (a Task 4 sweep training the same model anew on fewer GPUs). By id, with
    a weak reference telling a new object that took a freed one's id from the old one."""

    def __init__(self):
        self._known: dict[int, tuple] = {}
        self._seen = 0

    def number(self, thing) -> int:
        known = self._known.get(id(thing))
        if known is not None and known[1]() is thing:
            return known[0]
        try:
            alive = weakref.ref(thing)
        except TypeError:   # a class with __slots__ and no __weakref__
            alive = lambda: None   # noqa: E731  (numbered afresh each time: never one object)
        self._seen += 1
        self._known[id(thing)] = (self._seen, alive)
        return self._seen

    def values(self):
        """(number, weak reference) of each object numbered, the latest under each id."""
        return self._known.values()


class Observer:
    def __init__(self, trace: Trace, clock=None):
        self.trace = trace
        self.clock = clock  # the node's simulated clock (virtual GPUs); None on real GPUs
        self._last_sim_t = 0  # ns on the clock
        self.steps = 0
        self.forwards = 0
        self._placements: dict[int, list] = {}
        # Each model object a pass was seen of, and each optimizer that stepped, numbered in the
        # order first seen (HW3: passes of one model object, and the optimizer that stepped them).
        self._models = ObjectNumbers()
        self._optimizers = ObjectNumbers()
        self._handles = []
        self.rows = RowRecorder(lambda: self.steps)
        self.inputs = InputIdentity()   # which memory each pass read (`input_at`)
        self.resets = GradResets()   # gradients thrown away by hand (`zero_grad`, by hand)
        self._used: set[int] = set()   # forward passes a backward pass has reached
        # Passes inside reentrant checkpointing, per module, until backward recomputes them:
        # (the pass's number, its input's storage).
        self._awaiting: dict[int, list[tuple[int, int | None]]] = {}
        # The passes of this step (their numbers), each with the most rows it ran on: a module
        # handed one's output continues it (`_continued`).
        self._step_passes: dict[int, int] = {}
        # The GPUs each of those passes ran its layers on: a root module in its own DDP handed
        # one's output, with parameters elsewhere, is a further stage of it (`_is_stage`).
        self._pass_gpus: dict[int, frozenset] = {}
        self._modeled: dict[int, list] = {}   # the layout each model was last watched in
        # Where each step's gradient came from: the passes, or beside them.
        self.sources = GradientSources()
        self._grad_sources: dict = {}
        # Whether a backward's loss was seen class-weighted (written once: loss_class_weights).
        self._class_weights_seen = False
        # Steps of optimizers beside the model's, and the guard on the model's weights.
        self.side = SideSteps()
        # Parameters trained by hand beside the model's steps (hand_steps.py).
        self.hand = HandSteps()
        # The parameters the model's steps stepped since the last pass or backward (ids), and
        # whether the step under way goes on them (`_joins_window`); None after a pass.
        self._joinable: set[int] | None = None
        self._joins = False

    def install(self, patcher: Patcher) -> None:
        global _observer
        from torch.nn.modules import module as module_hooks
        from torch.optim import optimizer as optimizer_hooks

        self._handles = [
            module_hooks.register_module_forward_pre_hook(self._pre_forward),
            module_hooks.register_module_forward_hook(self._post_forward, always_call=True),
            optimizer_hooks.register_optimizer_step_pre_hook(self._pre_step),
            optimizer_hooks.register_optimizer_step_post_hook(self._post_step),
        ]
        self.rows.install_concatenations(patcher)
        self.rows.install_comparisons(patcher)
        self._install_parameter_watch(patcher)
        self._install_zero_grad_watch(patcher)
        atexit.register(self.finish)
        _observer = self

    def _install_parameter_watch(self, patcher: Patcher) -> None:
        """Every parameter's gradient hooked as the parameter is registered, before any hook
        of the script's own (gradient_sources.py)."""
        original = torch.nn.Module.register_parameter
        sources = self.sources

        def register_parameter(module, name, param):
            original(module, name, param)
            if param is not None:
                sources.watch_parameter(param)

        register_parameter.__wrapped__ = original
        patcher.set(torch.nn.Module, "register_parameter", register_parameter)

    def _install_zero_grad_watch(self, patcher: Patcher) -> None:
        """`zero_grad` records where the script threw its gradients away (an optimizer's or a
        module's): the passes before it, in the same step, train nothing (an untimed warm-up
        forward and backward before the loop, gradients zeroed without a step: adv40 H4)."""
        observer = self
        for owner in (torch.optim.Optimizer, torch.nn.Module):
            original = owner.zero_grad

            def zero_grad(target, *args, _original=original, **kwargs):
                result = _original(target, *args, **kwargs)
                if observer.trace.enabled:
                    observer.trace.emit("zero_grad", step=observer.steps,
                                        owner=type(target).__name__,
                                        models=observer._models_reset(target),
                                        **_thread_fields())
                    # Told here: the gradients it threw away are no reset by hand.
                    observer.resets.remember(observer.model_parameters())
                return result

            zero_grad.__wrapped__ = original
            patcher.set(owner, "zero_grad", zero_grad)

    def _models_reset(self, target) -> list[int]:
        """The models (their numbers, `_model_number`) all of whose trained parameters a
        zero_grad of `target` (an optimizer or a module) covers: a zero_grad of a spare optimizer
        or module throws none of the model's gradients away."""
        if isinstance(target, torch.optim.Optimizer):
            params = [p for group in target.param_groups for p in group["params"]]
        else:
            params = list(target.parameters())
        covered = {id(p) for p in params}
        return sorted(number for number, own in self._trained_parameters().items()
                      if own and all(id(p) in covered for p in own))

    def _trained_parameters(self) -> dict[int, list]:
        """{model number: its parameters that take gradients} of the models still alive."""
        found = {}
        for number, alive in list(self._models.values()):
            model = alive()
            if model is not None:
                found[number] = [p for p in model.parameters() if p.requires_grad]
        return found

    def model_parameters(self) -> list:
        """The parameters of every model still alive, each once."""
        return list({id(p): p for own in self._trained_parameters().values()
                     for p in own}.values())

    def _reset_by_hand(self) -> None:
        """A `zero_grad` record for the models whose gradients the script threw away since
        the last backward without a zero_grad call (`p.grad = None`, `p.grad.zero_()`:
        grad_resets.py), told before the pass or backward that comes next, so that the passes
        before it train nothing of the step, as with optimizer.zero_grad()."""
        if not self.resets.holding():
            return   # nothing left by a backward since the last zero_grad: nothing to throw
        models = self.resets.thrown_away(self._trained_parameters())
        if models:
            self.trace.emit("zero_grad", step=self.steps, owner="by hand", models=models,
                            **_thread_fields())

    def uninstall(self) -> None:
        global _observer
        if _observer is self:
            _observer = None
        for handle in self._handles:
            handle.remove()
        self._handles = []
        atexit.unregister(self.finish)

    # -- forward passes -----------------------------------------------------------------------
    def _pre_forward(self, module, args, kwargs=None):
        depth = getattr(_tls, "depth", 0)
        # Only a model's forward nests: a pass-through module without parameters that calls
        # the model (Through()(model, x)) had hidden the model's pass from the trace.
        if not depth and not _is_model(module):
            return None
        _tls.depth = depth + 1
        if not self.trace.enabled:
            return None
        within = None
        if depth:
            _note_rows_inside(module, args, kwargs)
            # A module of the script's own that only wraps the model (Part 2's chunks run by a
            # wrapper's forward, DataParallel or DDP held by a module): the model's pass inside
            # it is the pass, the wrapper's the wrapper's (a TA's audit, P4 and P5).
            within = self._wrapped_pass(module) if depth == 1 else None
            if within is None:
                return None
            _tls.inner = module
        first = _first_tensor(args, kwargs or {})
        if in_backward():
            # Activation checkpointing recomputes the forward inside backward: noted as such,
            # never as another forward pass (a micro-batch) of the step.
            self.trace.emit("recompute", module=type(module).__name__, step=self.steps,
                            batch=list(first.shape) if first is not None else None,
                            thread=threading.current_thread().name, site=call_site(2))
            _tls.reentrant = _reentrant_recomputation()
            if _tls.reentrant:
                self._recomputed(module, first)
            return None
        nested = in_replica_thread()
        if not nested and within is None:
            self._reset_by_hand()
        continued = None if nested or within is not None else \
            self._continued(module, args, kwargs)
        self.forwards += 1
        opened = (self.forwards, storage_of(first) if first is not None else None,
                  tuple(first.shape) if first is not None else None)
        _tls.rows_inside, _tls.inside_first, _tls.inside_calls = 0, None, []
        pass_tokens.opened(first)
        _tls.layer_devices, _tls.layers_on_no_rows, _tls.layer_rows = [], False, {}
        _tls.own_parameters = []
        _tls.rows_per_layer = {}
        _tls.grad_watch = _GradWatch(self.trace, self.forwards) if torch.is_grad_enabled() \
            else None
        rows = max(first.shape[0] if first is not None and first.dim() else 0,
                   _largest_rows((args, kwargs or {})))
        if within is None:
            # A module that continues a pass wraps no pass of its own: its layers are its.
            _tls.forward, _tls.root = opened, (
                module, self.forwards, _may_wrap(module) and continued is None, None)
            _tls.forward_rows, _tls.continued = rows, continued
        else:
            _tls.inner_forward, _tls.inner_rows = opened, rows
        if self.clock is not None and self.forwards == 1:
            self._last_sim_t = self.clock.completion()  # the first step counts from here
        # When the work enqueued before this forward (a batch's copy to the GPU, say) is done:
        # a step's training work is timed from here (practical_measures.work_seconds).
        begun = {"sim_t": self.clock.completion() / 1e9} if self.clock is not None else {}
        # grad: False under torch.no_grad() (an evaluation pass, not a training batch); a
        # reentrant checkpoint's forward runs under no_grad too, and trains.
        # class_id: which class, not only its name (a module of the student's named as the
        # model's class is no pass of that model: practical 4's chunk passes).
        self.trace.emit("forward", module=type(module).__name__, class_id=id(type(module)),
                        step=self.steps, batch=list(first.shape) if first is not None else None,
                        input_device=str(first.device) if first is not None else None,
                        n=self.forwards, model=self._models.number(module),
                        **_thread_fields(), site=call_site(2),
                        grad=torch.is_grad_enabled() or _checkpointed(),
                        **_more_rows(first, args, kwargs),
                        **({"nested": True} if nested else {}),
                        **({"within": within} if within is not None else {}),
                        **self.rows.fields(first, self.forwards), **begun,
                        input_at=self.inputs.of(first))
        if not nested and within is None:
            layout = placement(module)
            if self._placements.get(id(module)) != layout:
                self._placements[id(module)] = layout
                self.trace.emit("placement", module=type(module).__name__, layers=layout)
            if continued is None:
                self._add_model(module, layout)
                self.side.pass_begins(module)   # weights set up before training (side_steps.py)
        return None

    def _add_model(self, module, layout) -> None:
        """Watch the parameters of a model whose pass was seen (again where its layout changed:
        moved, its parameters replaced)."""
        if self._modeled.get(id(module)) != layout:
            self._modeled[id(module)] = layout
            self.sources.add_model(module)

    def _continued(self, module, args, kwargs) -> tuple[list[int], int, bool] | None:
        """([the passes], the most rows any of them ran on, whether `module` is a further stage
        of them: `_is_stage`) where a root module is handed the
        output of passes of this step, as it is or made from it (moved to another GPU, sliced,
        through an activation), and no tensor of more rows than that; else None. Such a module
        (a loss with a learnable weight, a head called after the model) continues them: it is
        no pass of its own (a red team's honest P10 with an uncertainty-weighted loss, adv30,
        had read as two passes per micro-batch); its output is left unwatched, so it never
        trains and what it computes from the model's weights is outside the passes (a forged
        "loss" with a parameter, handed the micro-batch's output, had returned the whole
        batch's loss from the weights as a pass of its own); its parameters are not the
        model's. A second model run on the micro-batch itself (a teacher) is a pass of its own,
        as is a module handed the whole batch beside a pass's output (`_pass_ends` makes one
        whose layers ran on more rows a pass too)."""
        if not self._step_passes:
            return None
        tensors = [t for t in _output_tensors((args, kwargs or {})) if t.grad_fn is not None]
        if not tensors:
            return None
        passes = sorted(n for n in _passes_below(tensors) if n in self._step_passes)
        if not passes:
            return None
        rows = max(self._step_passes[n] for n in passes)
        if _largest_rows((args, kwargs or {})) > rows:
            return None
        return passes, rows, self._is_stage(module, passes)

    def _is_stage(self, module, passes) -> bool:
        """Whether a root module that continues `passes` is a further stage of them: wrapped in
        a DDP of its own (it trains, its gradients all-reduced across the replicas) and holding
        parameters that take gradients on a GPU none of the passes ran a layer on. Two stages
        written as two root modules, each in its own DDP (`out = stage1(stage0(mx).to(device1))`,
        a red team's honest P10, adv49 F5: 7.25 of 12), had read as a head continuing stage 0's
        pass, so stage 1's GPU was no stage. A loss or head with weights (adv30: no DDP of its
        own), or a module on the passes' own GPUs, only continues them, as before; the stage's
        `forward_out` says `stage`, and the checks read its layers as the pass's
        (practical_measures.forward_passes)."""
        if not isinstance(module, torch.nn.parallel.DistributedDataParallel):
            return False
        ran = frozenset().union(*(self._pass_gpus.get(n, ()) for n in passes))
        own = {str(p.device) for p in module.parameters() if p.requires_grad}
        return bool(ran) and bool(own - ran)

    def _wrapped_pass(self, module) -> int | None:
        """The number of the root pass `module` is called in, where the root only wraps it: a
        module of the script's own, without parameters of its own, whose parameters are all
        `module`'s. None otherwise."""
        root = getattr(_tls, "root", None)
        if root is None or not root[2] or module is root[0] or in_backward():
            return None
        wrapper, number, _, held = root
        if held is None:
            held = {id(p) for p in wrapper.parameters()}
            _tls.root = (wrapper, number, True, held)
        count = 0
        for parameter in module.parameters():
            count += 1
            if count > len(held) or id(parameter) not in held:
                return None
        return number if count == len(held) and held else None

    def _post_forward(self, module, args, output):
        depth = max(0, getattr(_tls, "depth", 1) - 1)
        _tls.depth = depth
        if depth and self.trace.enabled and not in_backward():
            _watch_layer_output(module, output)
            pass_tokens.layer_output(output)
        if depth == 1 and getattr(_tls, "inner", None) is module:
            _tls.inner = None
            self._pass_ends(module, getattr(_tls, "inner_forward", (None, None, None)), output,
                            rows=getattr(_tls, "inner_rows", 0))
            return None
        if depth or not self.trace.enabled or not _is_model(module):
            return None
        if in_backward():
            # A checkpointed pass recomputed: it trains where the gradient reaching the
            # recomputation's output is not all zeros.
            forward, _tls.recomputing = getattr(_tls, "recomputing", None), None
            if forward is not None:
                self._watch_output(module, forward, None, None, _output_tensors(output))
            elif getattr(_tls, "reentrant", False) and \
                    not checkpoint_walked(torch._C._current_autograd_node()):
                # A part of a pass checkpointed inside the model's forward, recomputed: what
                # lies below its output is that pass's (a red team's honest P10, adv30, had its
                # stage's whole gradient read as made outside the passes). Not a checkpoint the
                # walk outside the passes went through: a whole batch computed by the
                # recomputation of a checkpoint beside the passes is outside them (adv31).
                for tensor in _output_tensors(output):
                    if tensor.grad_fn is not None:
                        mark_pass_output(tensor.grad_fn, 0)
            _tls.reentrant = False
            return None
        _tls.root = None
        continued, _tls.continued = getattr(_tls, "continued", None), None
        self._pass_ends(module, getattr(_tls, "forward", (None, None, None)), output,
                        continued, getattr(_tls, "forward_rows", 0),
                        moved=not in_replica_thread() and self._moved_in_pass(module))
        return None

    def _moved_in_pass(self, module) -> bool:
        """Whether the model's layers are elsewhere now than when its pass began (its forward
        moved them: HW3's layers placed when first called, or a forward that puts every layer
        on cuda:0 after some calls). The next pass's `placement` says where they went."""
        began = self._placements.get(id(module))
        # Devices only: a lazy module's layer given its size by its first pass (nn.LazyLinear
        # becomes Linear, 0 parameters become 48) moved nowhere.
        return began is not None and _devices_of(placement(module)) != _devices_of(began)

    def _pass_ends(self, module, opened, output, continued=None, rows=0, moved=False) -> None:
        """`continued`: what `_continued` said of the pass at its start; `rows`: the most rows
        of a tensor it was handed; `moved`: its forward moved the model's layers."""
        pass_tokens.closed()
        tensors = _output_tensors(output)
        ran_on = max(rows, getattr(_tls, "rows_inside", 0), _largest_rows(tensors))
        if continued is not None and ran_on > continued[1]:
            # Its layers ran on more rows than the passes it was handed (a whole batch held
            # elsewhere), or it returns more: a pass of its own, as any module's would be.
            continued = None
            self._add_model(module, placement(module))
        if continued is None:
            self._watch_output(module, *opened, tensors)
            if opened[0] is not None:
                self._step_passes[opened[0]] = ran_on
                self._pass_gpus[opened[0]] = frozenset(getattr(_tls, "layer_devices", None) or ())
                if len(self._step_passes) > _STEP_PASSES:
                    self._pass_gpus.pop(next(iter(self._step_passes)), None)
                    self._step_passes.pop(next(iter(self._step_passes)), None)
        _note_own_parameters([module, *(getattr(_tls, "own_parameters", None) or [])], tensors)
        out = tensors[0] if tensors else None
        if out is not None:
            # The output's sum lets the grader check that concatenated chunk outputs equal
            # the full batch's output without ever seeing the tensors.
            inside = getattr(_tls, "rows_inside", 0)
            calls = getattr(_tls, "inside_calls", None) or []
            devices = getattr(_tls, "layer_devices", None) or []
            short = _devices_short_of(rows) if rows and devices else set()
            rows_at = getattr(_tls, "layer_rows", None) or {}
            watch = getattr(_tls, "grad_watch", None)
            judged = watch.judged() if watch is not None and watch.n == opened[0] else []
            unreached = watch.unreached(tensors) if judged else None
            self.trace.emit("forward_out", module=type(module).__name__, shape=list(out.shape),
                            device=str(out.device), sum=_fingerprint([out])["sum"],
                            **({"rows_inside": inside} if inside else {}),
                            **({"inside_calls": list(calls)} if len(calls) > 1 else {}),
                            **({"layer_devices": list(devices)} if devices else {}),
                            **({"layer_devices_on_batch": [d for d in devices if d not in short]}
                               if short else {}),
                            **({"layer_rows": [rows_at.get(d) for d in devices]}
                               if devices and rows_at else {}),
                            **({"grad_judged": judged} if judged else {}),
                            **({"graph_unreached": unreached} if unreached else {}),
                            **({"layers_on_no_rows": True} if not devices and
                               getattr(_tls, "layers_on_no_rows", False) else {}),
                            **({"continues": continued[0]} if continued is not None else {}),
                            **({"stage": True} if continued is not None and continued[2] else {}),
                            **({"moved_layers": True} if moved else {}),
                            **_data_parallel_fields(module),
                            **_thread_fields(), **self.rows.fields(out))

    def _watch_output(self, module, forward, input_storage, input_shape, tensors) -> None:
        """Have `forward_used` recorded when a backward pass first reaches this pass's output
        (or, for a pass inside reentrant checkpointing, whose output autograd never sees,
        when backward recomputes it): a pass no backward reaches trains nothing (a forged
        micro-batch whose output is thrown away, or made without a graph)."""
        if forward is None:
            return
        nodes = {id(t.grad_fn): t.grad_fn for t in tensors if t.grad_fn is not None}
        for node in nodes.values():
            mark_pass_output(node, forward)
        if not nodes:
            if _checkpointed():
                self._awaiting.setdefault(id(module), []).append(
                    (forward, input_storage, input_shape))
            return

        def reached(grad_outputs, forward=forward):
            # How much reached it is recorded: a pass given a gradient of zeros or one scaled by
            # 1e-30 beside the pass that makes its step trains nothing (red teams, adv27 and
            # adv28); a step whose passes all got zeros (a loss weight that is 0) is still
            # their step (a TA's audit 29), practical_measures.reached_in.
            self._reached(forward, float(_size_of(grad_outputs)))
            # Every backward that reaches it, not only the first: a pass is judged by where
            # each one's gradients went (stepped_passes.py).
            self.sources.stepped.reached(forward)
            return None

        for node in nodes.values():
            try:
                node.register_prehook(reached)
            except (RuntimeError, AttributeError, TypeError):
                continue

    def _recomputed(self, module, first) -> None:
        """Backward recomputes a checkpointed pass of `module`: the latest one awaiting on the
        same input (reentrant checkpointing recomputes on its saved inputs, detached: the same
        storage), else the latest one awaiting, whose recomputed output is then watched. Only
        one of the input's shape: a recomputation on other rows than the pass (a function that
        runs the model on a micro-batch in the checkpoint's forward and on the whole batch
        when backward recomputes it: adv31) is no recomputation of that pass."""
        shape = tuple(first.shape) if first is not None else None
        awaiting = [i for i, entry in enumerate(self._awaiting.get(id(module)) or ())
                    if entry[2] == shape]
        if not awaiting:
            return
        storage = storage_of(first) if first is not None else None
        entries = self._awaiting[id(module)]
        same = [i for i in awaiting if entries[i][1] is not None and entries[i][1] == storage]
        forward = entries.pop(same[-1] if same else awaiting[-1])[0]
        _tls.recomputing = forward   # watched at the recomputation's end (_post_forward)

    def _reached(self, forward: int, norm: float) -> None:
        if forward not in self._used and self.trace.enabled:
            self._used.add(forward)
            self.trace.emit("forward_used", n=forward, step=self.steps, g=float(f"{norm:.6g}"))
            self.rows.reached(forward)   # its rows, where they were held (rows.py)

    # -- where the steps' gradients came from (gradient_sources.py) ---------------------------
    def backward_begins(self, roots) -> None:
        if self.trace.enabled:
            if not in_backward():
                self._joinable = None   # a step after this backward begins a window
                self._reset_by_hand()
                self.hand.backward_begins()
            self.sources.backward_begins(roots, nested=in_backward())
            if not self._class_weights_seen and not in_backward():
                weighted = class_weighted_mean(roots)
                if weighted is not None:
                    self._class_weights_seen = True
                    self.trace.emit("loss_class_weights", step=self.steps, **weighted)

    # -- optimizer steps ----------------------------------------------------------------------
    def _pre_step(self, optimizer, args, kwargs):
        self.hand.optimizer_steps(p for group in optimizer.param_groups for p in group["params"])
        if self.trace.enabled and self.side.is_side(optimizer):
            return    # a side step: the model's step window goes on (side_steps.py)
        self._step_params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [p.grad for p in self._step_params if p.grad is not None]  # labels them too
        self._joins = self._joins_window(self._step_params)
        if self.trace.enabled:
            self._grad_print = _fingerprint(grads)
            if self.trace.steady:   # Practical 10's invariance runs: a direction to compare
                self._grad_print["sketch"] = sketch_of(grads)
            self._grad_sources = self.sources.step_fields(self._grad_print["sumsq"],
                                                          self._step_params)
            # What the step's backwards fed beside it and the script then trained by hand
            # (hand_steps.py); read before `unstepped` forgets the backwards.
            by_hand = self.hand.at_step(self.sources.stepped.fed_beside(self._step_params),
                                        self._step_params)
            # The step's passes that trained none of the parameters it steps (a copy of the
            # model checked on the whole batch): no pass of this step (stepped_passes.py).
            unstepped = self.sources.stepped.unstepped(list(self._step_passes),
                                                       self._step_params)
            if unstepped:
                self._grad_sources["unstepped"] = unstepped
            written = self.side.written_beside(self._step_params, bool(unstepped),
                                               step_code(optimizer, args, kwargs), self._joins)
            if written:
                self._grad_sources["weights_written"] = True
            if written and written != "written":
                self._grad_sources["weights_unvouched"] = written
            if self._joins:
                self._grad_sources["joins"] = True
            # What came back through DataParallel's replicas (replica_grads.py).
            self._grad_sources.update(REPLICA_GRADIENTS.step_fields(
                self._step_params, self._grad_print["sumsq"]))
            # Which of them DDP all-reduced (synced_grads.py).
            self._grad_sources.update(SYNCED_GRADIENTS.step_fields(self._step_params, by_hand))
            if by_hand:
                self._grad_sources["trained_by_hand"] = sum(p.numel() for p in by_hand)

    def _joins_window(self, parameters) -> bool:
        """Whether a step of the model goes on its last one: no pass or backward between them,
        and none of the parameters the window's steps stepped (one optimizer per pipeline
        stage, all stepped after the micro-batches: adv35 H10). A step after each micro-batch
        has a pass before it; an optimizer stepped twice steps the same parameters again."""
        stepped = self._joinable
        return stepped is not None and not self._step_passes and \
            all(id(p) not in stepped for p in parameters)

    def _post_step(self, optimizer, args, kwargs):
        if self.trace.enabled and self.side.is_side(optimizer):
            self.side.side_step()
            self.trace.emit("side_step", step=self.steps, optimizer=type(optimizer).__name__,
                            params=sum(len(g["params"]) for g in optimizer.param_groups),
                            site=call_site(2))
            return
        self.steps += 1
        # Held only across the step: kept longer, a model the program has let go of (and its
        # gradients) would stay allocated on its GPUs until the next optimizer's step, and
        # every memory reading in between would count it.
        params, self._step_params = self._step_params, []
        self._step_passes = {}   # a module handed an earlier step's output begins a pass
        self._pass_gpus = {}
        ids = {id(p) for p in params}
        self._joinable = (self._joinable | ids) if self._joins else ids
        if not self.trace.enabled:
            return
        printed = _fingerprint(params)
        self.side.stepped(params)
        if self.side.hook_wrote:   # its own step hook wrote the weights (side_steps.WatchedHook)
            self._grad_sources["weights_written"] = True
        self.trace.emit("step", index=self.steps, optimizer=type(optimizer).__name__,
                        optimizer_n=self._optimizers.number(optimizer),
                        grads=self._grad_print, **self._grad_sources, params=printed,
                        memory=memory_by_device(), site=call_site(2), **self._simulated_time())

    def _simulated_time(self) -> dict:
        """When the work enqueued so far will be done, and how long since the previous step
        (the first step: since the first forward pass began), in simulated time; nothing on
        real GPUs."""
        if self.clock is None:
            return {}
        now = self.clock.completion()
        since, self._last_sim_t = now - self._last_sim_t, now
        return {"sim_t": now / 1e9, "sim_step_ms": since / 1e6}

    def finish(self) -> None:
        extra = {"sim_t": self.clock.completion() / 1e9} if self.clock is not None else {}
        self.trace.emit("exit", steps=self.steps, forwards=self.forwards,
                        memory=memory_by_device(), **extra)
