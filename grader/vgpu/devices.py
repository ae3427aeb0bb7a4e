"""Parsing device arguments the way PyTorch does, against the virtual node."""
from __future__ import annotations

import torch

from grader.vgpu.node import Node


def parse(node: Node, device) -> int | None | str:
    """cuda:k -> k; the host -> None; anything else (meta, ...) -> its type string."""
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        index = device  # `.to(1)`, `.cuda(1)`, `device=1` all mean cuda:1
    else:
        device = torch.device(device) if isinstance(device, str) else device
        if device.type == "cpu":
            return None
        if device.type != "cuda":
            return device.type
        index = device.index if device.index is not None else node.current_device()
    node.check_ordinal(index)
    return index


def describe(index: int | None) -> str:
    return "cpu" if index is None else f"cuda:{index}"
