"""The model's placement (grader/vgpu/observe.py `placement`), read where every traced root pass
begins and ends: plain parameters are read without the torch-function dispatch (the virtual
node's mode only passes those reads through, at a Python frame each), with the very values a
read through the mode gives; parameters of another kind are read as they answer."""
from __future__ import annotations

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

import pytest

from grader.vgpu.observe import placement


def read_through_the_mode(module) -> list[dict]:
    """placement as it was read before (every size through the torch-function dispatch)."""
    layers = []
    for name, sub in module.named_modules():
        own = list(sub.parameters(recurse=False))
        if not own:
            continue
        devices = sorted({str(p.device) for p in own})
        layers.append({"name": name or "(root)", "type": type(sub).__name__,
                       "device": devices[0] if len(devices) == 1 else devices,
                       "params": sum(p.numel() for p in own),
                       "bytes": sum(p.numel() * p.element_size() for p in own)})
    return layers


class Reads(TorchFunctionMode):
    """The names of the torch functions called under it."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


class Tagged(nn.Parameter):
    """A parameter subclass of the script's own that answers `numel` itself."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "numel":
            return 7
        with torch._C.DisableTorchFunction():
            return func(*args, **(kwargs or {}))


class TwoGPUs(nn.Module):
    """Layers on two GPUs, one of them half precision, a weight shared by two layers, and a
    layer whose bias is on another GPU than its weight."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(6, 5).to("cuda:0")
        self.second = nn.Linear(5, 4).to("cuda:1").half()
        self.tied = nn.Linear(6, 5, bias=False).to("cuda:0")
        self.tied.weight = self.first.weight
        self.split = nn.Linear(4, 3).to("cuda:0")
        self.split.bias = nn.Parameter(torch.zeros(3, device="cuda:1"))
        self.norm = nn.LayerNorm(3)


def test_placement_on_virtual_gpus_reads_as_through_the_mode(traced_vnode):
    traced_vnode(2)
    model = TwoGPUs()
    assert placement(model) == read_through_the_mode(model), (
        f"expected {read_through_the_mode(model)}; observed {placement(model)} "
        "(look: grader/vgpu/observe.py placement)")
    devices = [layer["device"] for layer in placement(model)]
    assert devices == ["cuda:0", "cuda:1", "cuda:0", ["cuda:0", "cuda:1"], "cpu"], devices


def test_plain_parameters_are_read_without_the_dispatch():
    model = nn.Sequential(*(nn.Linear(8, 8) for _ in range(4)))
    with Reads() as reads:
        found = placement(model)
    assert found == read_through_the_mode(model)
    assert not {"numel", "element_size"} & set(reads.names), (
        f"expected no numel/element_size call through the torch-function dispatch for plain "
        f"parameters; observed {sorted(set(reads.names))} (look: observe.placement)")


def test_a_parameter_of_the_scripts_own_kind_is_read_as_it_answers():
    model = nn.Linear(4, 4)
    model.weight = Tagged(torch.ones(4, 4))
    assert placement(model) == read_through_the_mode(model)
    assert placement(model)[0]["params"] == 7 + 4, placement(model)


def test_a_lazy_modules_parameters_have_no_size_before_its_first_pass():
    """Reading an UninitializedParameter's size raises: a traced run of a correct script with
    nn.LazyLinear had crashed at its first pass (tests/vgpu/test_lazy_modules.py)."""
    model = nn.Sequential(nn.LazyLinear(3), nn.Linear(3, 2))
    with pytest.raises(ValueError, match="uninitialized parameter"):
        read_through_the_mode(model)
    assert placement(model)[0] == {"name": "0", "type": "LazyLinear", "device": "cpu",
                                   "params": 0, "bytes": 0}, placement(model)
    model(torch.ones(4, 5))
    assert placement(model) == read_through_the_mode(model)
