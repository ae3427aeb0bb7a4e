"""`nn.DataParallel`'s collectives (`torch.nn.parallel.comm`) between virtual GPUs.

The split rule is PyTorch's own (C++ `comm::scatter`): `tensor.chunk(len(devices), dim)`
unless chunk sizes are given, so a batch can give fewer chunks than GPUs and DataParallel
then runs fewer replicas, exactly as on real hardware. Every chunk, copy, sum and
concatenation is recorded in the trace.
"""
from __future__ import annotations

import torch

from grader.vgpu.devices import describe
from grader.vgpu.node import Node
from grader.vgpu.patcher import Patcher
from grader.vgpu.trace import call_site, get_trace


def record(kind: str, source: int | None, target: int | None, tensor) -> None:
    """One DataParallel move of `tensor` between two devices (GPU index or None: the host)."""
    trace = get_trace()
    if trace.enabled and source != target:
        trace.emit("transfer", kind=kind, src=describe(source), dst=describe(target),
                   bytes=tensor.numel() * tensor.element_size(), shape=list(tensor.shape),
                   site=call_site(3))


def install(patcher: Patcher, node: Node) -> None:
    import torch.cuda.comm as cuda_comm
    import torch.nn.parallel._functions as functions
    import torch.nn.parallel.comm as comm

    disabled = torch._C.DisableTorchFunction

    def index(device) -> int | None:
        if device is None:
            return node.current_device()
        if isinstance(device, torch.device):
            return None if device.type == "cpu" else (
                device.index if device.index is not None else node.current_device())
        if isinstance(device, str):
            return index(torch.device(device))
        return None if device == -1 else int(device)

    def copy_to(tensor, target):
        with disabled():
            out = tensor.detach().clone(memory_format=torch.contiguous_format)
        node.label(out, target)
        return out

    def broadcast(tensor, devices=None, *, out=None):
        targets = [index(d) for d in devices] if devices is not None else [
            node.label_of(o) for o in out]
        source = node.label_of(tensor)
        results = []
        for target in targets:
            record("broadcast", source, target, tensor)
            results.append(tensor if target == source else copy_to(tensor, target))
        return tuple(results)

    def broadcast_coalesced(tensors, devices, buffer_size=10485760):
        targets = [index(d) for d in devices]
        results = [list(tensors)]  # the first device keeps the originals, as in C++
        for target in targets[1:]:
            copies = []
            for tensor in tensors:
                record("broadcast", node.label_of(tensor), target, tensor)
                copies.append(copy_to(tensor, target))
            results.append(copies)
        return results

    def reduce_add(inputs, destination=None):
        target = index(destination)
        for tensor in inputs:
            record("reduce", node.label_of(tensor), target, tensor)
        with disabled():
            total = inputs[0].detach().clone()
            for tensor in inputs[1:]:
                total.add_(tensor)
        node.label(total, target)
        return total

    def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
        return [reduce_add(list(group), destination) for group in zip(*inputs)]

    def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
        targets = [index(d) for d in devices] if devices is not None else [
            node.label_of(o) for o in out]
        with disabled():
            chunks = (tensor.split(list(chunk_sizes), dim) if chunk_sizes is not None
                      else tensor.chunk(len(targets), dim))
        source = node.label_of(tensor)
        trace = get_trace()
        if trace.enabled:
            trace.emit("dp_scatter", src=describe(source), dim=dim,
                       sizes=[c.shape[dim] if c.dim() else 1 for c in chunks],
                       devices=[describe(t) for t in targets[:len(chunks)]],
                       batch=tensor.shape[dim] if tensor.dim() else 1, site=call_site(3))
        results = []
        for chunk, target in zip(chunks, targets):
            record("scatter", source, target, chunk)
            results.append(copy_to(chunk, target))
        return tuple(results)

    def gather(tensors, dim=0, destination=None, *, out=None):
        target = node.label_of(out) if out is not None else index(destination)
        for tensor in tensors:
            record("gather", node.label_of(tensor), target, tensor)
        with disabled():
            result = torch.cat([t.detach() for t in tensors], dim)
            if out is not None:
                out.copy_(result)
                return out
        node.label(result, target)
        return result

    for module in (comm, cuda_comm):
        for name, value in (("broadcast", broadcast),
                            ("broadcast_coalesced", broadcast_coalesced),
                            ("reduce_add", reduce_add),
                            ("reduce_add_coalesced", reduce_add_coalesced),
                            ("scatter", scatter), ("gather", gather)):
            patcher.set(module, name, value)

    def scatter_forward(ctx, target_gpus, chunk_sizes, dim, input):
        # The original opens side streams with `torch.device(int)`, which a CPU build refuses.
        from torch._utils import _get_device_index
        target_gpus = [_get_device_index(x, True) for x in target_gpus]
        ctx.dim = dim
        ctx.input_device = input.get_device() if input.device.type != "cpu" else -1
        return comm.scatter(input, target_gpus, chunk_sizes, ctx.dim, None)

    patcher.set(functions.Scatter, "forward", staticmethod(scatter_forward))
    patcher.set(functions, "_get_stream", lambda device: None)


def install_observer(patcher: Patcher) -> None:
    """On real GPUs: DataParallel's collectives run as they are, and are recorded."""
    import torch.cuda.comm as cuda_comm
    import torch.nn.parallel.comm as comm

    def device_of(tensor):
        return None if tensor.device.type == "cpu" else tensor.device.index

    original = {name: getattr(comm, name) for name in
                ("broadcast_coalesced", "reduce_add_coalesced", "scatter", "gather")}

    def broadcast_coalesced(tensors, devices, buffer_size=10485760):
        out = original["broadcast_coalesced"](tensors, devices, buffer_size)
        for copies in out[1:]:
            for source, copy in zip(tensors, copies):
                record("broadcast", device_of(source), device_of(copy), copy)
        return out

    def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
        out = original["reduce_add_coalesced"](inputs, destination, buffer_size)
        for group in inputs:
            for tensor, result in zip(group, out):
                record("reduce", device_of(tensor), device_of(result), tensor)
        return out

    def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
        chunks = original["scatter"](tensor, devices, chunk_sizes, dim, streams, out=out)
        trace = get_trace()
        if trace.enabled:
            trace.emit("dp_scatter", src=describe(device_of(tensor)), dim=dim,
                       sizes=[c.shape[dim] if c.dim() else 1 for c in chunks],
                       devices=[str(c.device) for c in chunks],
                       batch=tensor.shape[dim] if tensor.dim() else 1, site=call_site(3))
        for chunk in chunks:
            record("scatter", device_of(tensor), device_of(chunk), chunk)
        return chunks

    def gather(tensors, dim=0, destination=None, *, out=None):
        result = original["gather"](tensors, dim, destination, out=out)
        for tensor in tensors:
            record("gather", device_of(tensor), device_of(result), tensor)
        return result

    for module in (comm, cuda_comm):
        for name, value in (("broadcast_coalesced", broadcast_coalesced),
                            ("reduce_add_coalesced", reduce_add_coalesced),
                            ("scatter", scatter), ("gather", gather)):
            patcher.set(module, name, value)
