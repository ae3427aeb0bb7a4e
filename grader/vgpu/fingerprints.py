"""The sum and sum of squares of each of many tensors, read back to the host once per device.

The step record (observe.py) takes the fingerprint of every parameter the model's step stepped,
and every DDP pass that of the gradients it synchronised. Read one number at a time, each was a
wait on the GPU (two per parameter: hundreds per step of a real model). Here each tensor's two numbers are worked out on its device and all of a device's
are read in one copy; the combined fingerprint is the per-tensor ones added in the same order,
so it is the very number one read per tensor gave.
"""
from __future__ import annotations

import torch

Print = tuple[float, float]   # (sum, sum of squares), float64


def prints_of(tensors) -> list[Print]:
    """(sum, sum of squares) of each tensor's values, in float64, in the tensors' order; read
    around the node's torch-function mode (no op of the script's, no time on the virtual
    clock)."""
    tensors = list(tensors)
    prints: list[Print] = [(0.0, 0.0)] * len(tensors)
    on_device: dict[torch.device, list[tuple[int, torch.Tensor]]] = {}
    with torch.no_grad(), torch._C.DisableTorchFunction():
        for index, tensor in enumerate(tensors):
            values = tensor.detach().reshape(-1).double()
            on_device.setdefault(values.device, []).append(
                (index, torch.stack([values.sum(), torch.dot(values, values)])))
        for pairs in on_device.values():
            read = torch.stack([pair for _, pair in pairs]).tolist()   # the one copy
            for (index, _), (total, squares) in zip(pairs, read):
                prints[index] = (total, squares)
    return prints


def combined(prints: list[Print]) -> Print:
    """The fingerprint of the tensors together: their sums added in their order."""
    total = squares = 0.0
    for one_total, one_squares in prints:
        total += one_total
        squares += one_squares
    return total, squares
