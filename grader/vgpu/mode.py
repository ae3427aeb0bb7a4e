"""The torch-function mode that makes host tensors behave as if they lived on virtual GPUs.

Every PyTorch call of the script passes through `VirtualGPUMode.__torch_function__`:
- factories with `device="cuda:k"` run on the host and their result is labelled cuda:k;
- any other op checks that its tensors share one device (raising PyTorch's own message
  otherwise) and labels its new outputs with that device;
- `.to`, `.cuda`, `.cpu`, `copy_` and indexing are where data crosses devices: they copy
  for real (a fresh storage, so the label can differ) and write a transfer to the trace;
- each op, copy and read-back is charged to the node's simulated clock (grader/vgpu/clock.py),
  and its backward noted for when `backward()` is called (grader/vgpu/backward_schedule.py).
The mode is thread-local, so `grader.vgpu.activate` enters it in every new thread too.
"""
from __future__ import annotations

import threading
from types import MethodType

import torch
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

from grader.vgpu.backward_schedule import (COPY, OP, next_entry, record_copy,
                                           record_operation, schedule_backward)
from grader.vgpu.cancelled import CANCELLING, check as check_cancelled
from grader.vgpu.cancelled import watching as cancels_watched
from grader.vgpu.clock import TAPE_LIMIT
from grader.vgpu.cost_model import FLOP_OPS, FREE_OPS, flops
from grader.vgpu.devices import describe, parse
from grader.vgpu.node import ALLOCATION_GRANULE, Node, storage_id
from grader.vgpu.observe import backward_begins, backward_ends
from grader.vgpu.random_state import RANDOM_OPS, is_virtual
from grader.vgpu.rows import copied, wrote
from grader.vgpu.stand_ins import original_of
from grader.vgpu.model_noise import BATCH_NORM, DROPOUTS, ModelNoise, hold_still
from grader.vgpu.trace import call_site, get_trace

Tensor = torch.Tensor
_TENSOR_TO = Tensor.to   # as imported, before any script could replace it
_UNSET = object()
_DECLINED = object()  # what the C fast path answers for an op it leaves to `_generic`
# The mode whose handler started the thread's backward pass (`_run_backward`): autograd's
# engine runs under it (`engine_under_mode`).
_engine = threading.local()
# The id of the graph task autograd's engine is running on this thread; -1 outside backward.
in_backward_task = torch._C._current_graph_task_id
# Each thread's own mode (entered at activation, or by the thread's start: grader.vgpu).
_thread = threading.local()


def thread_mode():
    """The calling thread's VirtualGPUMode, or None."""
    return getattr(_thread, "mode", None)

# Calls whose result never carries new device memory: skip the device bookkeeping entirely.
_PASSTHROUGH_NAMES = frozenset({
    "__get__", "__set__", "dim", "size", "numel", "stride", "is_contiguous", "element_size",
    "data_ptr", "untyped_storage", "storage_offset", "__len__", "is_floating_point",
    "is_complex", "__hash__", "requires_grad_", "retain_grad", "register_post_accumulate_grad_hook",
    "_is_view", "nelement", "ndimension", "is_leaf", "_has_compatible_shallow_copy_type",
    "set_", "is_set_to", "get_device",
})
# Calls that bring a value from the device to the host: the host waits for the GPU.
_READ_BACK_NAMES = frozenset({
    "item", "tolist", "__bool__", "__format__", "__repr__", "__index__", "__int__",
    "__float__", "__complex__", "equal", "allclose", "is_nonzero", "__array__",
})


def mismatch(first: int | None, second: int | None) -> RuntimeError:
    # PyTorch's own wording, so students can search for it and the handout's advice applies.
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{describe(first)} and {describe(second)}!"
    )


def _tensors_in(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, Tensor):
                yield item


def _nbytes(values) -> int:
    total = 0
    for value in values:
        for tensor in _tensors_in(value):
            total += tensor.nbytes
    return total


def _tensors(args, kwargs) -> list:
    found = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        found.extend(_tensors_in(value))
    return found


# How the mode treats a call, by the function's name (decided once per name).
_PASS, _READ, _FOREACH, _FREE, _GENERIC = (object() for _ in range(5))
# Functions whose route the mode keeps (more would be functions made on the fly, e.g. bound
# methods passed as `func`: past this, they are routed by name every time, as before).
_ROUTES_KEPT = 4096


# Ops that copy a tensor whole (a new storage, the same rows): `_copying`. Not `.to()`, which
# `_move` handles, nor `detach`, a view of the same storage.
COPYING = tuple(f for f in (
    Tensor.clone, torch.clone, Tensor.contiguous, Tensor.double, Tensor.float, Tensor.half,
    Tensor.bfloat16, Tensor.type, Tensor.__deepcopy__) if f is not None)


def _kind_of(name: str):
    if name in _PASSTHROUGH_NAMES:
        return _PASS
    if name in _READ_BACK_NAMES:
        return _READ
    if name.startswith(("_foreach_", "_fused_")):
        return _FOREACH
    if name in FREE_OPS:
        return _FREE  # a view: labelled, but no kernel runs
    return _GENERIC


def _first_tensor(out):
    if isinstance(out, Tensor):
        return out
    if isinstance(out, (list, tuple)):
        for item in out:
            if isinstance(item, Tensor):
                return item
    return None


class VirtualGPUMode(TorchFunctionMode):
    def __init__(self, node: Node):
        super().__init__()
        self.node = node
        self.clock = node.clock
        self._kinds: dict = {}  # function name -> how it is treated (_kind_of)
        self._routes: dict = {}  # function -> (special handler or kind, name): see _route
        self._devices: dict = {}  # `.to()` argument ("cuda:1", torch.device) -> GPU index
        self.special = {
            Tensor.to: self._to,
            Tensor.cuda: self._cuda,
            Tensor.cpu: self._cpu,
            Tensor.copy_: self._copy_,
            Tensor.numpy: self._numpy,
            Tensor.pin_memory: lambda func, args, kwargs: args[0],
            Tensor.is_pinned: lambda func, args, kwargs: False,
            Tensor.__getitem__: self._getitem,
            Tensor.__setitem__: self._setitem,
            Tensor.backward: self._backward,
            Tensor.register_hook: self._register_hook,
            torch.autograd.backward: self._backward,
            torch.autograd.grad: self._grad,
            # Module.to parses its arguments with this before it moves any tensor.
            torch._C._nn._parse_to: self._parse_to,
            Tensor.index_copy_: self._index_copy_,
            # Batch statistics make a row's output depend on its batch (model_noise.py).
            torch.nn.functional.batch_norm: self._batch_norm,
            torch.batch_norm: self._batch_norm,
        }
        self.noise = ModelNoise()
        # A copy of a tensor is that tensor for the rows' records (rows.copied): a chunk's
        # output cloned is still that output, Part 1's output cloned is still Part 1's.
        for method in COPYING:
            self.special[method] = self._copying
        self._fast = None
        if self.node.c_path is not None:
            self._bind_c_path(self.node.c_path)
        # Saved-tensor hooks in force on this thread (`start_saving`), the dispatch they
        # replaced, and the op in flight under them: (its GPU, its inputs' storages).
        self._saving = 0
        self._dispatch = None
        self._in_flight = None

    def __enter__(self):
        _thread.mode = self
        return super().__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if getattr(_thread, "mode", None) is self:
            _thread.mode = None
        return super().__exit__(exc_type, exc_val, exc_tb)

    def _bind_c_path(self, c_path) -> None:
        """`_generic`, and the common routes of `__torch_function__`, in C
        (grader/vgpu/c_path.py), where it was built."""
        fast = c_path.FastPath(
            tensor_type=Tensor, storage_id=storage_id, node=self.node, flop_ops=FLOP_OPS,
            flops=flops, next_entry=next_entry, mismatch=mismatch, account=self._account,
            declined=_DECLINED, op_kind=OP, granule=ALLOCATION_GRANULE, tape_limit=TAPE_LIMIT)
        self._fast = fast.generic
        # Every op passes through `__torch_function__`: in C its common routes (an op of
        # `_generic`, a passthrough, `x.to(device)` to a device seen before) cost no Python
        # frame; any other call goes on to the Python method below, as before. Bound to this
        # mode, as torch requires of a mode's method.
        fast.bind_mode(self._routes, _GENERIC, _FREE, _PASS,
                       MethodType(VirtualGPUMode.__torch_function__, self),
                       self._generic, self.special[Tensor.to], self._devices,
                       lambda: get_trace().enabled, COPY, torch.preserve_format)
        self.__torch_function__ = MethodType(fast.dispatch, self)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            kind, name = self._routes[func]
        except KeyError:  # a function not seen yet
            original = original_of(func)
            if original is not None:   # never kept in the routes: the C path would call `func`
                return self.__torch_function__(original, types, args, kwargs)
            kind, name = self._route(func)
        if kind is _GENERIC or kind is _FREE:
            fast = self._fast
            if fast is not None:
                out = fast(func, name, kind is _FREE, args, kwargs)
                if out is not _DECLINED:
                    return out
            return self._generic(func, name, kind, args, kwargs)
        if kind is _PASS:
            return func(*args, **kwargs) if kwargs else func(*args)
        if kind is _READ:
            return self._read_back(func, args, kwargs or {})
        if kind is _FOREACH:
            return self._foreach(func, name, args, kwargs or {})
        return kind(func, args, kwargs or {})  # one of `special`'s handlers

    def _route(self, func) -> tuple:
        """(how the mode treats `func`: a `special` handler or a `_kind_of`, its name), kept
        per function object: a script calls the same few functions over and over, and one
        dict lookup is cheaper than finding the handler, the name and its kind every time."""
        handler = self.special.get(func)
        name = getattr(func, "__name__", "")
        if handler is None and name in RANDOM_OPS:
            handler = self._random
        if handler is None and name in CANCELLING and cancels_watched():
            handler = self._cancelling
        if handler is None:
            handler = self._kinds.get(name)
            if handler is None:
                handler = self._kinds[name] = _kind_of(name)
        route = (handler, name)
        if len(self._routes) < _ROUTES_KEPT:
            self._routes[func] = route
        return route

    # -- every other op ------------------------------------------------------------------------
    # The hottest path of the node: every op of the script passes here, so it is written out
    # flat (local names, no helper calls on the common path) rather than in small functions.
    # grader/vgpu/_fastpath.c does the same in C where it was built: a change here is a change
    # there (tests/vgpu/test_c_path.py compares the two).
    def _generic(self, func, name, kind, args, kwargs):
        if kwargs and "device" in kwargs:
            return self._factory(func, name, args, kwargs)
        node = self.node
        labels = node.labels
        # The devices of the op's tensors (one, or PyTorch's error) and the bytes they hold.
        found = _UNSET
        nbytes = 0
        inputs = []
        keys = []
        try:
            for value in (*args, *kwargs.values()) if kwargs else args:
                if isinstance(value, Tensor):
                    tensors = (value,)
                elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Tensor):
                    tensors = value
                else:
                    continue
                for tensor in tensors:
                    key = storage_id(tensor)
                    inputs.append(tensor)
                    keys.append(key)
                    index = labels.get(key)
                    nbytes += tensor.nbytes
                    if index is None and tensor.dim() == 0:
                        continue  # host scalars may meet tensors on any device, as in PyTorch
                    if found is _UNSET:
                        found = index
                    elif index != found:
                        raise mismatch(found, index)
        except (NotImplementedError, TypeError):  # sparse and other storage-less tensors
            found = self._common_device(args, kwargs or {})
            inputs, keys = _tensors(args, kwargs), []
        out = func(*args, **kwargs) if kwargs else func(*args)
        return self._account(out, name, kind is _FREE, args, found, inputs, keys, nbytes)

    def _account(self, out, name, free, args, found, inputs, keys, nbytes):
        """What follows the op of `_generic` (also the C fast path's, for an output other than
        one tensor): the output's label, the op's cost and its backward's tape entry."""
        node = self.node
        labels = node.labels
        clock = self.clock
        state = clock._local
        if found is _UNSET or found is None:
            if not free and state.on and _first_tensor(out) is not None:
                clock.host_op()  # grad mode, profiler marks and the like launch nothing
            return out
        if isinstance(out, Tensor):
            first = out
            try:
                out_key = storage_id(out)
                if out_key not in labels:
                    node.label_storage(out, out_key, found)
            except (NotImplementedError, TypeError):
                out_key = None
            nbytes += out.nbytes
        else:
            first = _first_tensor(out)
            out_key = None
            self._label(out, found)
            nbytes += _nbytes((out,))
        if free or not state.on:
            return out
        # The op's cost on the simulated clock (CostModel.kernel and clock.launch, inlined) ...
        work = nbytes * clock.s_per_byte
        if name == "linear" and first is not None and args and args[0].dim():
            work = max(work, 2.0 * first.numel() * args[0].shape[-1] * clock.s_per_flop)
        elif name in FLOP_OPS:
            work = max(work, flops(name, args, first) * clock.s_per_flop)
        seconds = clock.kernel_s + work
        host = state.host = state.host + clock.host_op_ns
        busy = clock.busy_until
        busy[found] = (busy[found] if busy[found] > host else host) + round(seconds * 1e9)
        # ... and its backward's, on the tape (backward_schedule.record_operation, inlined).
        if first is not None and first.requires_grad:
            producers = node.producers
            made_by, leaves = [], []
            for tensor, key in zip(inputs, keys):
                if tensor.requires_grad:  # a gradient flows back into it (not if detached)
                    entry = producers.get(key)
                    if entry is not None:
                        made_by.append(entry)
                    else:
                        leaves.append(tensor)
            entry = next_entry()
            tape = state.tape
            tape.append((OP, entry, found, round(clock.backward_factor * seconds * 1e9),
                         leaves or None, made_by))
            if len(tape) > TAPE_LIMIT:
                clock.record(tape.pop())  # trims the tape
            if out_key is None:
                try:
                    out_key = storage_id(first)
                except (NotImplementedError, TypeError):
                    return out
            producers[out_key] = entry
        return out

    def _charge(self, name, args, kwargs, out, first, device, nbytes):
        """The op's cost on the simulated clock; its backward's, on the clock's tape."""
        clock = self.clock
        nbytes += _nbytes((out,)) if first is not out else out.nbytes
        flop_count = flops(name, args, first) if name in FLOP_OPS else 0
        seconds = clock.model.kernel(flop_count, nbytes)
        clock.launch(device, seconds)
        if first is not None and first.requires_grad:
            record_operation(self.node, device, seconds, _tensors(args, kwargs), first)

    def _random(self, func, args, kwargs):
        """An op that draws random numbers: on a virtual GPU, from that GPU's own generator
        (grader/vgpu/random_state.py); a generator the script passes is its own choice."""
        name = getattr(func, "__name__", "")
        if kwargs.get("device") is not None:
            index = parse(self.node, kwargs["device"])
        else:
            first = next(_tensors_in(args), None)
            index = self.node.label_of(first) if first is not None else None
        on_gpu = isinstance(index, int)
        if name in DROPOUTS:
            args, kwargs = self._noise(func, name, args, kwargs, lambda: index)
        generator = kwargs.get("generator")
        if generator is not None:
            if on_gpu != is_virtual(generator):
                # PyTorch's own words: a generator draws on its own device's kind only.
                raise RuntimeError(
                    f"Expected a '{'cuda' if on_gpu else 'cpu'}' device type for generator but "
                    f"found '{'cpu' if on_gpu else 'cuda'}'")
            return self._generic(func, name, _GENERIC, args, kwargs)
        if not on_gpu:
            return self._generic(func, name, _GENERIC, args, kwargs)
        with self.node.random.drawing_on(index):
            return self._generic(func, name, _GENERIC, args, kwargs)

    def _batch_norm(self, func, args, kwargs):
        """batch_norm as any op, noted where it normalises with the batch's own statistics."""
        def gpu():
            first = next(_tensors_in(args), None)
            return self.node.label_of(first) if first is not None else None
        args, kwargs = self._noise(func, BATCH_NORM, args, kwargs, gpu)
        return self._generic(func, BATCH_NORM, _GENERIC, args, kwargs)

    def _noise(self, func, name: str, args, kwargs, gpu):
        """The arguments of a dropout or batch_norm call: held still in one of Practical 10's
        invariance runs (model_noise.hold_still), as given anywhere else; a `model_noise`
        record where its kind is new, held or not (model_noise.py), written here, where the
        trace takes records from. `gpu()`: the index of the GPU it runs on."""
        held = hold_still(func, name, args, kwargs) if get_trace().steady else None
        kind = self.noise.unnoted(name, args, kwargs, held is not None)
        trace = get_trace()
        if kind is not None and trace.enabled:
            self.noise.noted(kind, held is not None)
            index = gpu()
            trace.emit("model_noise", op=kind,
                       device=f"cuda:{index}" if isinstance(index, int) else "cpu",
                       **({"held": True} if held is not None else {}))
        return held if held is not None else (args, kwargs)

    def _factory(self, func, name, args, kwargs):
        """`torch.zeros(..., device="cuda:k")` and the like: made on the host, labelled k."""
        target = parse(self.node, kwargs["device"])
        if isinstance(target, str):
            return func(*args, **kwargs)  # meta and friends: not ours
        if isinstance(target, int):
            kwargs = dict(kwargs, device="cpu")
        out = func(*args, **kwargs)
        self._label(out, target)
        clock = self.clock
        first = _first_tensor(out)
        if first is None or not clock.timed or _kind_of(name) is _FREE:
            return out
        if target is None:
            clock.host_op()
        else:
            self._charge(name, args, kwargs, out, first, target, 0)
        return out

    def _read_back(self, func, args, kwargs):
        if len(args) > 1 and isinstance(args[1], Tensor):
            # equal, allclose: PyTorch compares on one device and refuses two.
            self._common_device(args[:2], {})
        if args and isinstance(args[0], Tensor):
            index = self.node.label_of(args[0])
            if index is not None and self.clock.timed:
                self.clock.read_back(index)
        return func(*args, **kwargs)

    def _common_device(self, args, kwargs):
        found = _UNSET
        label_of = self.node.label_of
        for value in (*args, *kwargs.values()):
            for tensor in _tensors_in(value):
                index = label_of(tensor)
                if index is None and tensor.dim() == 0:
                    continue  # host scalars may meet tensors on any device, as in PyTorch
                if found is _UNSET:
                    found = index
                elif index != found:
                    raise mismatch(found, index)
        return None if found is _UNSET else found

    def _foreach(self, func, name, args, kwargs):
        # Optimizers group tensors by their *real* device (always the host here), so one
        # foreach call can hold parameters of several GPUs: check position by position.
        lists = [a for a in (*args, *kwargs.values()) if isinstance(a, (list, tuple)) and a
                 and isinstance(a[0], Tensor)]
        per_position = []
        if lists:
            for i in range(len(lists[0])):
                per_position.append(self._common_device(
                    [lst[i] for lst in lists if i < len(lst)],
                    {k: v for k, v in kwargs.items() if isinstance(v, Tensor)}))
        out = func(*args, **kwargs)
        if isinstance(out, (list, tuple)):
            for tensor, index in zip(out, per_position):
                self._label(tensor, index)
        if self.clock.timed:
            self._charge_foreach(lists, per_position, out)
        return out

    def _charge_foreach(self, lists, per_position, out):
        # On a GPU, PyTorch groups the lists by device: one kernel per GPU, over all its tensors.
        traffic: dict = {}
        outputs = out if isinstance(out, (list, tuple)) else ()
        for i, index in enumerate(per_position):
            nbytes = sum(lst[i].nbytes for lst in lists if i < len(lst))
            if i < len(outputs) and isinstance(outputs[i], Tensor):
                nbytes += outputs[i].nbytes
            traffic[index] = traffic.get(index, 0) + nbytes
        for index, nbytes in traffic.items():
            if index is None:
                self.clock.host_op()
            else:
                self.clock.launch(index, self.clock.model.kernel(0, nbytes))

    def _label(self, out, index):
        if index is None:
            return
        for tensor in _tensors_in(out):
            self.node.label(tensor, index)

    # -- crossing devices ---------------------------------------------------------------------
    @staticmethod
    def _parse_to(func, args, kwargs):
        """`.to(1)` means cuda:1 on a GPU machine (the DDP tutorial's `model.to(rank)`), but on a
        CPU build an int names "the accelerator", and there is none: ints become cuda:N."""
        args, kwargs = list(args), dict(kwargs)
        if args and isinstance(args[0], int) and not isinstance(args[0], bool):
            args[0] = torch.device("cuda", args[0])
        if isinstance(kwargs.get("device"), int) and not isinstance(kwargs["device"], bool):
            kwargs["device"] = torch.device("cuda", kwargs["device"])
        return torch._C._nn._parse_to(*args, **kwargs)

    def _to(self, func, args, kwargs):
        if len(args) == 2 and not kwargs:
            # `x.to(device)` with a device argument seen before: the forward's baton pass.
            target = self._devices.get(args[1], _UNSET)
            if target is not _UNSET:
                if target == self.node.label_of(args[0]):  # x already is there
                    self._note_to(args[0], target, target)
                    return args[0]
                if target is None or target < self.node.n:  # (the node may have shrunk since)
                    # What the general path below does with this argument, without parsing it
                    # again.
                    return self._move(args[0], target, None, copy=False,
                                      memory_format=torch.preserve_format)
        tensor, rest, kw = args[0], list(args[1:]), dict(kwargs)
        copy = kw.pop("copy", False)
        if rest and isinstance(rest[0], Tensor):
            other = rest.pop(0)
            return self._move(tensor, self.node.label_of(other), other.dtype,
                              copy=copy, memory_format=torch.preserve_format)
        device, dtype, _, memory_format = self._parse_to(None, rest, kw)
        target = self.node.label_of(tensor) if device is None else parse(self.node, device)
        if isinstance(target, str):
            return func(*args, **kwargs)
        if len(args) == 2 and not kwargs and device is not None and dtype is None \
                and memory_format is None and (device.index is not None or device.type == "cpu"):
            try:
                self._devices[args[1]] = target  # a device argument always means the same GPU
            except TypeError:
                pass
        return self._move(tensor, target, dtype, copy=copy,
                          memory_format=memory_format or torch.preserve_format,
                          record=device is not None)  # a dtype-only .to() is no device move

    def _cuda(self, func, args, kwargs):
        device = args[1] if len(args) > 1 else kwargs.get("device")
        index = self.node.current_device() if device is None else parse(self.node, device)
        return self._move(args[0], index, None, copy=False,
                          memory_format=kwargs.get("memory_format", torch.preserve_format))

    def _cpu(self, func, args, kwargs):
        return self._move(args[0], None, None, copy=False,
                          memory_format=kwargs.get("memory_format", torch.preserve_format))

    def _note_to(self, tensor, source, target):
        trace = get_trace()
        # Moves made while autograd's engine runs a backward pass (a checkpoint's
        # recomputation, a custom Function's backward) are the backward's: on the clock through
        # the tape (backward_schedule), never the training loop's forward moves that the trace
        # records (and that a real GPU's observer, off during backward, never sees either).
        if trace.enabled and in_backward_task() == -1:
            moved = source != target
            # A lazy module's parameter before its first pass (nn.LazyLinear) has no size yet:
            # it moves nothing (numel raises on it; a correct script had crashed under the trace).
            lazy = _uninitialized(tensor)
            trace.emit("to", src=describe(source), dst=describe(target), copied=moved,
                       bytes=tensor.numel() * tensor.element_size() if moved and not lazy
                       else 0, shape=[] if lazy else list(tensor.shape), site=call_site(4))

    def _move(self, tensor, target, dtype, *, copy, memory_format, record=True):
        node = self.node
        source = node.label_of(tensor)
        moved = source != target
        if record:
            self._note_to(tensor, source, target)
        # Tensor.to as the node found it: a script's own (a counter calling the original) ran
        # already, around the call that brought the move here.
        out = _TENSOR_TO(tensor, dtype=dtype or tensor.dtype, copy=copy or moved,
                         memory_format=memory_format)
        if out is not tensor:
            node.label(out, target)
            self._charge_move(tensor, out, source, target, moved)
            copied(tensor, out)   # a moved chunk output is still that output (rows.py)
        return out

    def _charge_move(self, tensor, out, source, target, moved):
        clock = self.clock
        if not clock.timed or _uninitialized(out):
            return
        nbytes = out.nbytes
        if moved:
            clock.copy(source, target, nbytes)
            if out.requires_grad:
                record_copy(self.node, source, target, nbytes, tensor, out)
        elif target is None:
            clock.host_op()
        else:  # a new dtype or layout on the same GPU: one kernel
            seconds = clock.model.kernel(0, tensor.nbytes + nbytes)
            clock.launch(target, seconds)
            if out.requires_grad:
                record_operation(self.node, target, seconds, (tensor,), out)

    def _copy_(self, func, args, kwargs):
        destination, source = args[0], args[1]
        self._record_copy(source, destination, "copy")
        out = func(*args, **kwargs)
        self._charge_copy(source, destination)
        wrote(destination, source)   # a copy, or some rows of a combined output (rows.py)
        return out

    def _copying(self, func, args, kwargs):
        """clone, contiguous, a dtype's method, deepcopy: the op as any other (`_generic`),
        the copy remembered as of the tensor it copies (rows.copied)."""
        out = self._op(func, getattr(func, "__name__", ""), args, kwargs)
        if args and isinstance(out, Tensor) and out is not args[0]:
            copied(args[0], out)
        return out

    def _cancelling(self, func, args, kwargs):
        """An add or subtract in the value probe's run: the op as any other, where its terms
        cancel exactly recorded first (grader/vgpu/cancelled.py)."""
        name = getattr(func, "__name__", "")
        check_cancelled(name, args, kwargs, self.node.label_of)
        return self._op(func, name, args, kwargs)

    def forget_routes(self, names) -> None:
        """Route the functions of `names` afresh at their next call (the value probe switched
        on after some were routed)."""
        for func, (_, name) in list(self._routes.items()):
            if name in names:
                del self._routes[func]

    def _op(self, func, name, args, kwargs):
        """An op of `_generic`'s, in C where it was built, from a handler of `special`."""
        fast = self._fast
        if fast is not None:
            out = fast(func, name, False, args, kwargs)
            if out is not _DECLINED:
                return out
        return self._generic(func, name, _GENERIC, args, kwargs)

    def _index_copy_(self, func, args, kwargs):
        """`destination.index_copy_(dim, index, source)`: the op as any other, and along dim
        0 the rows written (rows.wrote)."""
        out = self._op(func, "index_copy_", args, kwargs)
        params = dict(zip(("self", "dim", "index", "source"), args), **kwargs)
        if params.get("dim") == 0:
            wrote(params.get("self"), params.get("source"), params.get("index"), indexed=True)
        return out

    def _charge_copy(self, source, destination):
        """`destination[...] = source` or `destination.copy_(source)` on the clock."""
        clock = self.clock
        if not clock.timed:
            return
        label_of = self.node.label_of
        src, dst = label_of(source) if isinstance(source, Tensor) else None, label_of(destination)
        nbytes = source.nbytes if isinstance(source, Tensor) else 0
        if src != dst and not (src is None and isinstance(source, Tensor) and source.dim() == 0):
            clock.copy(src, dst, nbytes)
        elif dst is None:
            clock.host_op()
        else:
            clock.launch(dst, self.clock.model.kernel(0, 2 * max(nbytes, 1)))

    def _record_copy(self, source, destination, kind):
        node = self.node
        src, dst = node.label_of(source), node.label_of(destination)
        if src == dst or (src is None and source.dim() == 0):
            return
        trace = get_trace()
        if trace.enabled and in_backward_task() == -1:  # as _note_to
            trace.emit("transfer", kind=kind, src=describe(src), dst=describe(dst),
                       bytes=source.numel() * source.element_size(),
                       shape=list(source.shape), site=call_site(4))

    def _numpy(self, func, args, kwargs):
        index = self.node.label_of(args[0])
        if index is not None and kwargs.get("force"):
            # PyTorch's numpy(force=True) is detach().cpu().numpy(): the copy to the host is a
            # move as `.cpu()` is (recorded, the same tensor for the rows' records), then numpy.
            return func(self._cpu(Tensor.cpu, args[:1], {}), **kwargs)
        if index is not None:
            raise TypeError(
                f"can't convert cuda:{index} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first.")
        return func(*args, **kwargs)

    def _getitem(self, func, args, kwargs):
        # Index tensors may live on the host next to a GPU tensor, as in PyTorch.
        out = func(*args, **kwargs)
        index = self.node.label_of(args[0])
        self._label(out, index)
        clock = self.clock
        if index is not None and clock.timed and isinstance(out, Tensor) \
                and out.untyped_storage().data_ptr() != args[0].untyped_storage().data_ptr():
            # Advanced indexing gathers into new memory (basic indexing is a view: free).
            seconds = clock.model.kernel(0, 2 * out.nbytes)
            clock.launch(index, seconds)
            if out.requires_grad:
                record_operation(self.node, index, seconds, (args[0],), out)
        return out

    def _setitem(self, func, args, kwargs):
        if len(args) > 2 and isinstance(args[2], Tensor):
            self._record_copy(args[2], args[0], "copy")
        out = func(*args, **kwargs)
        if len(args) > 2:
            self._charge_copy(args[2], args[0])
            wrote(args[0], args[2], args[1], indexed=True)   # rows of a combined output?
        return out

    # -- saved tensors -------------------------------------------------------------------------
    # A pack hook (torch.autograd.graph.saved_tensors_hooks: non-reentrant checkpointing,
    # save_on_cpu, a script's own) sees the tensors an op saves for backward *inside* the op,
    # its output included, before the mode has labelled that output (`_account` runs after the
    # op): the output looked like a host tensor there, and checkpointing's check that the
    # recomputed tensors are those of the forward (shape, dtype, device) failed on virtual GPUs
    # only. While such hooks are in force on the thread, every call first notes its GPU and
    # inputs (`_in_flight`), and the pack hook labels an unlabelled saved tensor that is none of
    # the inputs (the op's output) with it. Ops outside such hooks are dispatched as always.
    def start_saving(self) -> None:
        self._saving += 1
        if self._saving == 1:
            self._dispatch = self.__dict__.get("__torch_function__")
            self.__torch_function__ = MethodType(VirtualGPUMode._saving_torch_function, self)

    def stop_saving(self) -> None:
        if self._saving == 0:
            return
        self._saving -= 1
        if self._saving == 0:
            if self._dispatch is None:
                self.__dict__.pop("__torch_function__", None)
            else:
                self.__torch_function__ = self._dispatch
            self._dispatch = None

    def _saving_torch_function(self, func, types, args=(), kwargs=None):
        labels = self.node.labels
        found, keys = None, set()
        for tensor in _tensors(args, kwargs or {}):
            try:
                key = storage_id(tensor)
            except (RuntimeError, NotImplementedError, TypeError):
                continue
            keys.add(key)
            if found is None:
                found = labels.get(key)
        outer, self._in_flight = self._in_flight, (found, keys)
        try:
            if self._dispatch is not None:
                return self._dispatch(func, types, args, kwargs)
            return VirtualGPUMode.__torch_function__(self, func, types, args, kwargs)
        finally:
            self._in_flight = outer

    def label_saved(self, tensor) -> None:
        """A tensor a pack hook is handed: an output of the op in flight gets its GPU now."""
        in_flight = self._in_flight
        if in_flight is None or in_flight[0] is None:
            return
        try:
            key = storage_id(tensor)
        except (RuntimeError, NotImplementedError, TypeError):
            return
        if key not in in_flight[1] and key not in self.node.labels:
            self.node.label_storage(tensor, key, in_flight[0])

    # -- autograd -----------------------------------------------------------------------------
    def _backward(self, func, args, kwargs):
        trace = get_trace()
        # A backward inside a backward (reentrant checkpointing's recomputation) is part of
        # the one the training loop called, and was never recorded on its own.
        if trace.enabled and in_backward_task() == -1:
            trace.emit("backward", site=call_site(3))
        return self._run_backward(func, args, kwargs)

    def _run_backward(self, func, args, kwargs):
        """Lay the whole backward pass on the clock first, then let autograd run it untimed
        (DataParallel's backward collectives are already on the timelines then), under this
        mode (`engine_under_mode`)."""
        outer = getattr(_engine, "mode", None)
        _engine.mode = self
        try:
            roots = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
            backward_begins(roots)
            clock = self.clock
            if not clock.timed:
                out = func(*args, **kwargs)
            else:
                clock.host_op()
                schedule_backward(self.node, list(_tensors_in(roots)))
                with clock.untimed():
                    out = func(*args, **kwargs)
            backward_ends()
            return out
        finally:
            _engine.mode = outer

    def _register_hook(self, func, args, kwargs):
        """`tensor.register_hook(hook)`: the gradient autograd's engine hands the hook is made
        on the host; it belongs to the tensor's GPU (the hook runs under the mode: a hook adding
        a tensor of that GPU to it must work, as on a real one)."""
        tensor = args[0]
        hook = args[1] if len(args) > 1 else kwargs.get("hook")
        index = self.node.label_of(tensor)
        if index is None or not callable(hook):
            return func(*args, **kwargs)
        label = self.node.label

        def labelled(grad):
            if isinstance(grad, Tensor):
                label(grad, index)
            return hook(grad)

        labelled.__wrapped__ = hook
        return func(tensor, labelled)

    def _grad(self, func, args, kwargs):
        grads = self._run_backward(func, args, kwargs)
        inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs or ())
        for grad, source in zip(grads, inputs):
            if isinstance(grad, Tensor):
                self.node.label(grad, self.node.label_of(source))
        return grads


def engine_under_mode(run_backward):
    """`torch.autograd.graph._engine_run_backward` that runs autograd's engine under the mode
    that handed it the backward pass.

    torch pops a mode off the thread's stack while its `__torch_function__` runs, and the
    engine runs inside the mode's `_backward` handler: without this, everything Python does
    during backward (a checkpoint's recomputation, a custom `autograd.Function.backward`, a
    tensor hook) ran with the mode off, on plain host tensors labelled `cpu` (non-reentrant
    checkpointing then failed its own device check, and `g.to("cuda:0")` in a backward asked
    the CPU build for CUDA). The engine keeps the thread's torch-function modes for the
    backward's nodes, so pushing the mode back around the call is enough: the same code then
    runs on virtual GPUs as on real ones. A backward not started through the mode (none on
    the thread, or torch functions disabled) runs as it is."""
    def _engine_run_backward(*args, **kwargs):
        mode = getattr(_engine, "mode", None)
        if mode is None or any(m is mode for m in _get_current_function_mode_stack()):
            return run_backward(*args, **kwargs)
        torch._C._push_on_torch_function_stack(mode)
        try:
            return run_backward(*args, **kwargs)
        finally:
            torch._C._pop_torch_function_stack()

    _engine_run_backward.__wrapped__ = run_backward
    return _engine_run_backward


def packing(pack_hook):
    """A saved-tensor pack hook that sees the tensor's GPU (VirtualGPUMode.label_saved) and
    runs under the thread's mode, as the script's code does: torch calls it inside the op, while
    the mode is off the stack."""
    def pack(tensor):
        mode = thread_mode()
        if mode is None:
            return pack_hook(tensor)
        mode.label_saved(tensor)
        if any(m is mode for m in _get_current_function_mode_stack()):
            return pack_hook(tensor)
        torch._C._push_on_torch_function_stack(mode)
        try:
            return pack_hook(tensor)
        finally:
            torch._C._pop_torch_function_stack()

    pack.__wrapped__ = pack_hook
    return pack


def saved_tensors_hooks_enter(hooks):
    """`saved_tensors_hooks.__enter__`: its pack hook through `packing`, and the thread's mode
    noting the ops' GPUs while it is in force."""
    mode = thread_mode()
    if mode is None:
        return _HOOKS_ENTER(hooks)
    torch._C._autograd._push_saved_tensors_default_hooks(packing(hooks.pack_hook),
                                                         hooks.unpack_hook)
    mode.start_saving()
    hooks._pdl_mode = mode
    return None


def saved_tensors_hooks_exit(hooks, *args):
    mode = hooks.__dict__.pop("_pdl_mode", None)
    out = _HOOKS_EXIT(hooks, *args)
    if mode is not None:
        mode.stop_saving()
    return out


_HOOKS_ENTER = torch.autograd.graph.saved_tensors_hooks.__enter__
_HOOKS_EXIT = torch.autograd.graph.saved_tensors_hooks.__exit__


def install_autograd(patcher) -> None:
    """Autograd's engine under the node's mode (engine_under_mode), where torch calls it, and
    saved-tensor hooks that see their tensors' GPUs (`packing`)."""
    import torch.autograd
    import torch.autograd.graph
    original = torch.autograd.graph._engine_run_backward
    wrapped = engine_under_mode(original)
    patcher.set(torch.autograd.graph, "_engine_run_backward", wrapped)
    if getattr(torch.autograd, "_engine_run_backward", None) is original:
        patcher.set(torch.autograd, "_engine_run_backward", wrapped)
    hooks = torch.autograd.graph.saved_tensors_hooks
    patcher.set(hooks, "__enter__", saved_tensors_hooks_enter)
    patcher.set(hooks, "__exit__", saved_tensors_hooks_exit)


class RealGPUObserverMode(TorchFunctionMode):
    """On real GPUs nothing is emulated: only the moves between devices are recorded."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        func = original_of(func) or func   # what ran, where a script replaced a Tensor method
        trace = get_trace()
        if not trace.enabled:
            return func(*args, **kwargs)
        if func in (Tensor.to, Tensor.cuda, Tensor.cpu):
            source = args[0].device
            out = func(*args, **kwargs)
            moved = out is not args[0] and out.device != source
            if out is not args[0]:
                copied(args[0], out)
            trace.emit("to", src=str(source), dst=str(out.device), copied=moved,
                       bytes=out.numel() * out.element_size() if moved else 0,
                       shape=list(out.shape), site=call_site(2))
            return out
        if func in COPYING:   # as the virtual GPUs' mode: a copy is the tensor it copies
            out = func(*args, **kwargs)
            if args and isinstance(out, Tensor) and out is not args[0]:
                copied(args[0], out)
            return out
        if func in (Tensor.copy_, Tensor.__setitem__, Tensor.index_copy_):
            if func is Tensor.copy_ and args[0].device != args[1].device:
                trace.emit("transfer", kind="copy", src=str(args[1].device),
                           dst=str(args[0].device), bytes=args[1].numel() * args[1].element_size(),
                           shape=list(args[1].shape), site=call_site(2))
            out = func(*args, **kwargs)
            if func is Tensor.copy_:
                wrote(args[0], args[1])
            elif func is Tensor.__setitem__ and len(args) > 2:
                wrote(args[0], args[2], args[1], indexed=True)
            elif func is Tensor.index_copy_:
                params = dict(zip(("self", "dim", "index", "source"), args), **kwargs)
                if params.get("dim") == 0:
                    wrote(params.get("self"), params.get("source"), params.get("index"),
                          indexed=True)
            return out
        if func in (Tensor.backward, torch.autograd.backward):
            trace.emit("backward", site=call_site(2))
            backward_begins(args[0] if args else kwargs.get("tensors"))
        elif func is torch.autograd.grad:
            backward_begins(args[0] if args else kwargs.get("outputs"))
        else:
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        backward_ends()   # DDP has averaged .grad by now (gradient_sources.backward_ended)
        return out


def _uninitialized(tensor) -> bool:
    """A lazy module's parameter (or buffer) not yet given its shape by a first pass."""
    return isinstance(tensor, torch.nn.parameter.UninitializedTensorMixin)
