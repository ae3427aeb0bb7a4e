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

import torch
from torch.overrides import TorchFunctionMode

from grader.vgpu.backward_schedule import note_copy, note_operation, schedule_backward
from grader.vgpu.cost_model import FREE_OPS, flops
from grader.vgpu.devices import describe, parse
from grader.vgpu.node import Node
from grader.vgpu.trace import call_site, get_trace

Tensor = torch.Tensor
_UNSET = object()

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
        self.special = {
            Tensor.to: self._to,
            Tensor.cuda: self._cuda,
            Tensor.cpu: self._cpu,
            Tensor.copy_: self._copy_,
            Tensor.numpy: self._numpy,
            Tensor.pin_memory: lambda func, args, kwargs: args[0],
            Tensor.is_pinned: lambda func, args, kwargs: False,
            Tensor.record_stream: lambda func, args, kwargs: None,
            Tensor.__getitem__: self._getitem,
            Tensor.__setitem__: self._setitem,
            Tensor.backward: self._backward,
            torch.autograd.backward: self._backward,
            torch.autograd.grad: self._grad,
        }

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self.special.get(func)
        if handler is not None:
            return handler(func, args, kwargs)
        name = getattr(func, "__name__", "")
        if name in _PASSTHROUGH_NAMES:
            return func(*args, **kwargs)
        if name in _READ_BACK_NAMES:
            return self._read_back(func, args, kwargs)
        return self._generic(func, name, args, kwargs)

    # -- every other op ------------------------------------------------------------------------
    def _generic(self, func, name, args, kwargs):
        node = self.node
        if "device" in kwargs:
            target = parse(node, kwargs["device"])
            if isinstance(target, int):
                kwargs = dict(kwargs, device="cpu")
            elif isinstance(target, str):
                return func(*args, **kwargs)  # meta and friends: not ours
            out = func(*args, **kwargs)
            self._label(out, target)
            self._charge(name, args, kwargs, out, target)
            return out
        if name.startswith(("_foreach_", "_fused_")):
            return self._foreach(func, name, args, kwargs)
        target = self._common_device(args, kwargs)
        out = func(*args, **kwargs)
        self._label(out, target)
        self._charge(name, args, kwargs, out, target)
        return out

    def _charge(self, name, args, kwargs, out, target):
        """The op's cost on the simulated clock; its backward's, noted on its grad_fn."""
        clock = self.clock
        if name in FREE_OPS or not clock.timed:
            return
        first = _first_tensor(out)
        if target is None:
            if first is not None:  # grad mode, profiler marks and the like launch nothing
                clock.host_op()
            return
        nbytes = _nbytes(args) + _nbytes(kwargs.values()) + _nbytes((out,))
        seconds = self.clock.model.kernel(flops(name, args, first), nbytes)
        clock.launch(target, seconds)
        if first is not None and first.requires_grad:
            note_operation(first, target, seconds)

    def _read_back(self, func, args, kwargs):
        if args and isinstance(args[0], Tensor):
            index = self.node.label_of(args[0])
            if index is not None:
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
    def _to(self, func, args, kwargs):
        tensor, rest, kw = args[0], list(args[1:]), dict(kwargs)
        copy = kw.pop("copy", False)
        if rest and isinstance(rest[0], Tensor):
            other = rest.pop(0)
            return self._move(tensor, self.node.label_of(other), other.dtype,
                              copy=copy, memory_format=torch.preserve_format)
        # `torch.device(int)` fails on a CPU build, so ints never reach `_parse_to`.
        if rest and isinstance(rest[0], int) and not isinstance(rest[0], bool):
            rest[0] = torch.device("cuda", rest[0])
        if isinstance(kw.get("device"), int):
            kw["device"] = torch.device("cuda", kw["device"])
        device, dtype, _, memory_format = torch._C._nn._parse_to(*rest, **kw)
        target = self.node.label_of(tensor) if device is None else parse(self.node, device)
        if isinstance(target, str):
            return func(*args, **kwargs)
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

    def _move(self, tensor, target, dtype, *, copy, memory_format, record=True):
        node = self.node
        source = node.label_of(tensor)
        moved = source != target
        trace = get_trace()
        if trace.enabled and record:
            trace.emit("to", src=describe(source), dst=describe(target), copied=moved,
                       bytes=tensor.numel() * tensor.element_size() if moved else 0,
                       shape=list(tensor.shape), site=call_site(3))
        out = tensor.to(dtype=dtype or tensor.dtype, copy=copy or moved,
                        memory_format=memory_format)
        if out is not tensor:
            node.label(out, target)
            self._charge_move(tensor, out, source, target, moved)
        return out

    def _charge_move(self, tensor, out, source, target, moved):
        clock = self.clock
        if not clock.timed:
            return
        nbytes = out.nbytes
        if moved:
            clock.copy(source, target, nbytes)
            if out.requires_grad:
                note_copy(out, source, target, nbytes)
        elif target is None:
            clock.host_op()
        else:  # a new dtype or layout on the same GPU: one kernel
            seconds = self.clock.model.kernel(0, tensor.nbytes + nbytes)
            clock.launch(target, seconds)
            if out.requires_grad:
                note_operation(out, target, seconds)

    def _copy_(self, func, args, kwargs):
        destination, source = args[0], args[1]
        self._record_copy(source, destination, "copy")
        out = func(*args, **kwargs)
        self._charge_copy(source, destination)
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
        if trace.enabled:
            trace.emit("transfer", kind=kind, src=describe(src), dst=describe(dst),
                       bytes=source.numel() * source.element_size(),
                       shape=list(source.shape), site=call_site(4))

    def _numpy(self, func, args, kwargs):
        index = self.node.label_of(args[0])
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
            seconds = self.clock.model.kernel(0, 2 * out.nbytes)
            clock.launch(index, seconds)
            if out.requires_grad:
                note_operation(out, index, seconds)
        return out

    def _setitem(self, func, args, kwargs):
        if len(args) > 2 and isinstance(args[2], Tensor):
            self._record_copy(args[2], args[0], "copy")
        out = func(*args, **kwargs)
        if len(args) > 2:
            self._charge_copy(args[2], args[0])
        return out

    # -- autograd -----------------------------------------------------------------------------
    def _backward(self, func, args, kwargs):
        trace = get_trace()
        if trace.enabled:
            trace.emit("backward", site=call_site(3))
        roots = args[0] if args else kwargs.get("tensors")
        return self._run_backward(func, args, kwargs, roots)

    def _run_backward(self, func, args, kwargs, roots):
        """Lay the whole backward pass on the clock first, then let autograd run it untimed
        (DataParallel's backward collectives are already on the timelines then)."""
        clock = self.clock
        if not clock.timed:
            return func(*args, **kwargs)
        clock.host_op()
        schedule_backward(clock, [t.grad_fn for t in _tensors_in(roots)], self.node.label_of)
        with clock.untimed():
            return func(*args, **kwargs)

    def _grad(self, func, args, kwargs):
        outputs = args[0] if args else kwargs.get("outputs")
        grads = self._run_backward(func, args, kwargs, outputs)
        inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs or ())
        for grad, source in zip(grads, inputs):
            if isinstance(grad, Tensor):
                self.node.label(grad, self.node.label_of(source))
        return grads


class RealGPUObserverMode(TorchFunctionMode):
    """On real GPUs nothing is emulated: only the moves between devices are recorded."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        trace = get_trace()
        if not trace.enabled:
            return func(*args, **kwargs)
        if func in (Tensor.to, Tensor.cuda, Tensor.cpu):
            source = args[0].device
            out = func(*args, **kwargs)
            moved = out is not args[0] and out.device != source
            trace.emit("to", src=str(source), dst=str(out.device), copied=moved,
                       bytes=out.numel() * out.element_size() if moved else 0,
                       shape=list(out.shape), site=call_site(2))
            return out
        if func is Tensor.copy_ and args[0].device != args[1].device:
            trace.emit("transfer", kind="copy", src=str(args[1].device), dst=str(args[0].device),
                       bytes=args[1].numel() * args[1].element_size(),
                       shape=list(args[1].shape), site=call_site(2))
        elif func in (Tensor.backward, torch.autograd.backward):
            trace.emit("backward", site=call_site(2))
        return func(*args, **kwargs)
