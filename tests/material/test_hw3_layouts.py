"""HW3's reference and template on nodes of virtual GPUs, in-process: the layouts their
__init__ builds and the moves their forward makes (what the grader's probe measures)."""
import importlib.util
from pathlib import Path

import pytest
import torch

from grader.checks.hw3_layout import describe_layout, even_contiguous_layout

ROOT = Path(__file__).resolve().parents[2]


def load(tree):
    spec = importlib.util.spec_from_file_location(f"{tree}_model_parallel",
                                                  ROOT / tree / "hw3" / "model_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference_module():
    return load("reference")


@pytest.fixture(scope="module")
def template_module():
    return load("student_template")


def layer_devices(model):
    return [str(next(layer.parameters()).device) for layer in model.layers]


def forward_moves(handle, model, x):
    events = []
    handle.trace.listeners.append(events.append)
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        handle.trace.listeners.remove(events.append)
    return out, [e for e in events if e["event"] == "to"]


@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("depth", [5, 6, 12, 20, 24])
def test_reference_even_contiguous_layout_and_n_minus_1_transfers(vnode, reference_module,
                                                                  gpus, depth):
    handle = vnode(gpus)
    model = reference_module.LargeLinearModelMP(dim=8, depth=depth)
    devices = layer_devices(model)
    assert devices == even_contiguous_layout(depth, gpus), describe_layout(devices)
    first = next(model.layers[0].parameters()).device
    out, calls = forward_moves(handle, model, torch.randn(4, 8, device=first))
    assert out.device == torch.device(f"cuda:{gpus - 1}")
    copies = [(e["src"], e["dst"]) for e in calls if e["copied"]]
    assert copies == [(f"cuda:{g}", f"cuda:{g + 1}") for g in range(gpus - 1)]
    assert len(calls) == depth, "one .to() per layer"
    # The counters of Task 5 say the same.
    assert (model.to_calls, model.transfers) == (depth, gpus - 1)


def test_template_is_the_base_code_half_and_half_on_two_gpus(vnode, template_module):
    handle = vnode(2)
    model = template_module.LargeLinearModelMP(dim=8, depth=6)
    assert layer_devices(model) == ["cuda:0"] * 3 + ["cuda:1"] * 3
    out, calls = forward_moves(handle, model, torch.randn(4, 8, device="cuda:0"))
    assert out.device == torch.device("cuda:1")
    assert [(e["src"], e["dst"]) for e in calls if e["copied"]] == [("cuda:0", "cuda:1")]
    assert len(calls) == 6
    assert (model.to_calls, model.transfers) == (0, 0), "Task 5's counting is the student's"


def test_template_computes_what_the_reference_computes(vnode, template_module, reference_module):
    """Same seed, same layers, same forward: the tasks change where layers live, not the maths."""
    vnode(2)
    outs = []
    for module in (template_module, reference_module):
        torch.manual_seed(0)
        model = module.LargeLinearModelMP(dim=8, depth=6)
        with torch.no_grad():
            outs.append(model(torch.ones(2, 8, device="cuda:0")))
    assert torch.equal(outs[0], outs[1])
