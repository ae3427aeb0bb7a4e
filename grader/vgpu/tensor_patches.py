"""Tensor attributes that report the virtual device instead of the host."""
from __future__ import annotations

import torch

from grader.vgpu.backward_schedule import record_function_transfers, transfers_of_function
from grader.vgpu.node import Node, storage_id
from grader.vgpu.patcher import Patcher

_base = torch._C.TensorBase


class TensorAttribute(property):
    """A property that passes for the C descriptor of `TensorBase` it replaces.

    PyTorch's own code inspects those descriptors: torch._dynamo 2.11 reads `__objclass__`
    and `__name__` of `Tensor.grad.__get__.__self__` on import, which a plain property lacks
    (that broke every optimizer built on virtual GPUs under torch 2.11, seen on an H200).
    """
    __objclass__ = _base

    def __init__(self, name: str, *accessors):
        super().__init__(*accessors)
        self.__name__ = name


class DeviceAttributes:
    """`Tensor.device`, `is_cuda`, `is_cpu`, `get_device()` and `grad` read from the node."""

    def __init__(self, node: Node):
        self.node = node
        self.labels = node.labels
        self._cuda_devices: dict[int, torch.device] = {}

    def device(self, tensor):
        try:
            index = self.labels.get(storage_id(tensor))
        except (RuntimeError, NotImplementedError, TypeError):
            index = None
        if index is None:
            return _C_DEVICE.__get__(tensor)
        found = self._cuda_devices.get(index)
        if found is None:
            found = self._cuda_devices[index] = torch.device("cuda", index)
        return found

    def get_device(self, tensor) -> int:
        index = self.node.label_of(tensor)
        return _C_GET_DEVICE(tensor) if index is None else index

    def is_cuda(self, tensor) -> bool:
        return self.node.label_of(tensor) is not None or _C_IS_CUDA.__get__(tensor)

    def is_cpu(self, tensor) -> bool:
        return self.node.label_of(tensor) is None and _C_IS_CPU.__get__(tensor)

    def grad(self, tensor):
        # Gradients are made in C++ on the host; they belong to their parameter's GPU.
        grad = _C_GRAD.__get__(tensor)
        if grad is not None:
            index = self.node.label_of(tensor)
            if index is not None:
                self.node.label(grad, index)
        return grad

    def install(self, patcher: Patcher) -> None:
        patcher.set(torch.Tensor, "device", TensorAttribute("device", self.device))
        patcher.set(torch.Tensor, "is_cuda", TensorAttribute("is_cuda", self.is_cuda))
        patcher.set(torch.Tensor, "is_cpu", TensorAttribute("is_cpu", self.is_cpu))
        patcher.set(torch.Tensor, "get_device", _as_method(self.get_device))
        patcher.set(torch.Tensor, "grad", TensorAttribute(
            "grad", self.grad, _C_GRAD.__set__, _C_GRAD.__delete__))
        patcher.set(torch.Tensor, "record_stream", _record_stream)


_C_DEVICE, _C_IS_CUDA, _C_IS_CPU, _C_GRAD = _base.device, _base.is_cuda, _base.is_cpu, _base.grad
_C_GET_DEVICE = _base.get_device


def _record_stream(tensor, stream):
    """`tensor.record_stream(s)`: the caching allocator's note that a side stream uses the
    memory; nothing to note on a virtual GPU (PyTorch's own refuses the node's streams, which
    DDP's input move hands it)."""
    return None


def _as_method(function):
    """A plain function (so `tensor.get_device()` binds the tensor) calling `function`."""
    def method(self):
        return function(self)
    method.__name__ = function.__name__
    return method


class FunctionGradLabels:
    """Label the gradients that reach a Python `autograd.Function.backward`.

    Incoming gradients are made by the C++ engine on the host; DataParallel's own Functions
    (Gather, Broadcast, ...) look at their devices, so give them their forward outputs' devices:
    `apply` notes them on the backward node, `backward_apply` labels the gradients with them.
    `apply` also notes the transfers the forward made, for the simulated clock's backward.
    """

    def __init__(self, node: Node):
        from torch.autograd.function import BackwardCFunction, Function
        self.node = node
        self.original_apply = Function.__dict__["apply"].__func__
        self.original_backward_apply = BackwardCFunction.apply

    def apply(self, cls, *args, **kwargs):
        with transfers_of_function() as moved:
            out = self.original_apply(cls, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        label_of = self.node.label_of
        devices = [label_of(o) if isinstance(o, torch.Tensor) else None for o in outputs]
        if any(d is not None for d in devices):
            for o in outputs:
                if isinstance(o, torch.Tensor) and o.grad_fn is not None:
                    try:
                        o.grad_fn._pdl_output_devices = devices
                    except AttributeError:
                        pass
                    if moved and self.node.clock.timed and o.requires_grad:
                        record_function_transfers(
                            self.node, moved, [a for a in args if isinstance(a, torch.Tensor)],
                            [t for t in outputs if isinstance(t, torch.Tensor)])
                    break
        return out

    def backward_apply(self, backward_node, *grads):
        devices = getattr(backward_node, "_pdl_output_devices", None)
        if devices:
            for grad, index in zip(grads, devices):
                if isinstance(grad, torch.Tensor) and index is not None:
                    self.node.label(grad, index)
        return self.original_backward_apply(backward_node, *grads)

    def install(self, patcher: Patcher) -> None:
        from torch.autograd.function import BackwardCFunction, Function
        labels = self

        def apply(cls, *args, **kwargs):
            return labels.apply(cls, *args, **kwargs)

        def backward_apply(backward_node, *grads):
            return labels.backward_apply(backward_node, *grads)

        patcher.set(Function, "apply", classmethod(apply))
        patcher.set(BackwardCFunction, "apply", backward_apply)


def install(patcher: Patcher, node: Node) -> None:
    DeviceAttributes(node).install(patcher)
    FunctionGradLabels(node).install(patcher)
