"""The HW3 reference's layout and transfers on nodes of 2 to 5 virtual GPUs, in-process."""
import importlib.util
from pathlib import Path

import pytest
import torch

from grader.checks.hw3_layout import describe_layout, even_contiguous_layout

MODEL = Path(__file__).resolve().parents[2] / "reference" / "hw3" / "model_parallel.py"


@pytest.fixture(scope="module")
def reference_module():
    spec = importlib.util.spec_from_file_location("reference_model_parallel", MODEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("gpus", [2, 3, 4, 5])
@pytest.mark.parametrize("depth", [6, 12, 20, 24])
def test_even_contiguous_layout_and_n_minus_1_transfers(vnode, reference_module, gpus, depth):
    handle = vnode(gpus)
    model = reference_module.LargeLinearModelMP(dim=8, depth=depth)
    events = []
    handle.trace.listeners.append(events.append)
    devices = [str(next(layer.parameters()).device) for layer in model.layers]
    assert devices == even_contiguous_layout(depth, gpus), describe_layout(devices)
    with torch.no_grad():
        out = model(torch.randn(4, 8))          # the input starts on the host
    assert out.device == torch.device(f"cuda:{gpus - 1}")
    moves = [(e["src"], e["dst"]) for e in events if e["event"] == "to" and e["copied"]]
    assert moves[0] == ("cpu", "cuda:0"), "the input's move onto the first GPU comes first"
    between = moves[1:]
    assert between == [(f"cuda:{g}", f"cuda:{g + 1}") for g in range(gpus - 1)]
    assert len([e for e in events if e["event"] == "to"]) == depth, "one .to() per layer"
