"""The HW3 probe reads a layout where each layer was when forward() ran it: a forward that moves
the layers (all back onto cuda:0, or onto their GPUs only on the first call) is judged by the
layout that computed, not by where __init__ left the layers.

The probe runs here in the test process on a virtual node (the grader runs it sandboxed); Task
3's check (grader/checks/test_hw3.py's spread_layout) reads the same records.
"""
from pathlib import Path

import pytest

from grader.checks.test_hw3 import spread_layout

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "hw3" / "model_parallel.py"
DIM, BATCH, GPUS, DEPTH = 16, 4, 3, 6
SPREAD = ["cuda:0"] * 2 + ["cuda:1"] * 2 + ["cuda:2"] * 2

# A "solution" whose __init__ spreads the layers and whose forward() puts each back on cuda:0
# before it runs: every GPU but cuda:0 is idle while it computes.
BACK_ON_CUDA0 = ("        for layer in self.layers:\n            layer_device",
                 "        for layer in self.layers:\n            layer.to('cuda:0')\n"
                 "            layer_device")
# An honest lazy placement: __init__ keeps the layers on the host with the GPU each is for,
# forward() moves each there when first called (a style seen in students' code).
LAZY_INIT = ('                self.layers.append(nn.Linear(dim, dim).to(torch.device(f"cuda:{gpu}")))\n',
             "                self.layers.append(nn.Linear(dim, dim))\n"
             "                self.gpu_of.append(gpu)\n")
LAZY_LIST = ("        self.layers = nn.ModuleList()\n",
             "        self.layers = nn.ModuleList()\n        self.gpu_of = []\n")
LAZY_FORWARD = ("        for layer in self.layers:\n            layer_device",
                "        for gpu, layer in zip(self.gpu_of, self.layers):\n"
                "            layer.to(f'cuda:{gpu}')\n            layer_device")


def planted(tmp_path, *edits) -> Path:
    source = REFERENCE.read_text()
    for old, new in edits:
        assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
        source = source.replace(old, new)
    path = tmp_path / "model_parallel.py"
    path.write_text(source)
    return path


@pytest.fixture
def layout_of(vnode):
    from grader.harness.hw3_probe import Probe

    def measure(model_file: Path) -> dict:
        vnode(GPUS)
        emitted = []
        Probe(str(model_file), emitted.append).layouts([GPUS], [DEPTH], DIM, BATCH)
        (found,) = [r for r in emitted if r.get("kind") == "layout"]
        assert not found.get("error") and not found.get("forward_error"), found
        return found
    return measure


def test_the_reference_runs_where_init_placed_its_layers(layout_of):
    found = layout_of(REFERENCE)
    assert found["devices"] == SPREAD and "devices_built" not in found, found


def test_a_forward_moving_every_layer_back_to_cuda0_is_read_as_one_gpu(layout_of, tmp_path):
    found = layout_of(planted(tmp_path, BACK_ON_CUDA0))
    assert found["devices"] == ["cuda:0"] * DEPTH, (
        f"expected the layout forward() ran (all on cuda:0), observed {found['devices']}")
    assert found["devices_built"] == SPREAD
    with pytest.raises(AssertionError) as failure:
        spread_layout(([found], None), GPUS, DEPTH)
    message = str(failure.value)
    assert "no layer on cuda:1, cuda:2" in message and "forward() ran them" in message, message
    assert "Where to look: LargeLinearModelMP.forward" in message, (
        f"the student is told to look at forward(), which moved the layers: {message}")


def test_layers_placed_by_forward_on_first_call_earn_the_spread(layout_of, tmp_path):
    found = layout_of(planted(tmp_path, LAZY_LIST, LAZY_INIT, LAZY_FORWARD))
    assert found["devices"] == SPREAD, found["devices"]
    assert found["devices_built"] == ["cpu"] * DEPTH
    _, devices, counts = spread_layout(([found], None), GPUS, DEPTH)
    assert counts == [2, 2, 2] and found["matches_single_gpu"] is True, found
