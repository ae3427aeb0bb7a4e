"""The HW3 probe reads a layout where each layer was when forward() ran it: a forward that moves
the layers (all back onto cuda:0, or onto their GPUs only on the first call) is judged by the
layout that computed, not by where __init__ left the layers. It calls forward() twice, the
second time with gradients on as a training step does, and judges the later call: a forward
that keeps its layers spread only on its first call, or only under no_grad, is read as the
layout it trains with. Task 4's runs (and the transfer counts) read the layers where the
model's forward put them too.

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

# Forgeries: __init__ spreads the layers and the first forward (the grader's, under no_grad)
# runs them spread; every later call, or every call with gradients on (training), runs them
# all on cuda:0.
COLLAPSE_FROM_SECOND_CALL = (
    "    def forward(self, x):\n",
    "    def forward(self, x):\n        self.calls = getattr(self, 'calls', 0) + 1\n"
    "        if self.calls > 1:\n            for layer in self.layers:\n"
    "                layer.to('cuda:0')\n")
COLLAPSE_WHEN_TRAINING = (
    "    def forward(self, x):\n",
    "    def forward(self, x):\n        if torch.is_grad_enabled():\n"
    "            for layer in self.layers:\n                layer.to('cuda:0')\n")
# An output right under no_grad only: the second call's output is checked too.
WRONG_WHEN_TRAINING = ("        return x\n",
                       "        return x + 1 if torch.is_grad_enabled() else x\n")


def planted(tmp_path, *edits) -> Path:
    source = REFERENCE.read_text()
    for old, new in edits:
        assert source.count(old) == 1, "reference/hw3/model_parallel.py changed under this test"
        source = source.replace(old, new)
    path = tmp_path / "model_parallel.py"
    path.write_text(source)
    return path


@pytest.fixture
def layout_of(vnode, tmp_path):
    from grader.harness.hw3_probe import Probe

    def measure(model_file: Path) -> dict:
        vnode(GPUS)
        emitted = []
        probe = Probe(str(model_file), emitted.append)
        probe.weights_dir = str(tmp_path)
        probe.layouts([GPUS], [DEPTH], DIM, BATCH)
        (found,) = [r for r in emitted if r.get("kind") == "layout"]
        assert not found.get("error") and not found.get("forward_error"), found
        return found
    return measure


@pytest.fixture
def task4_and_transfers_of(vnode):
    """(layers per GPU in Task 4's run, the transfers record's layer devices) of a model."""
    from grader.harness.hw3_probe import Probe

    def measure(model_file: Path) -> tuple[list[int], list]:
        vnode(GPUS)
        emitted = []
        probe = Probe(str(model_file), emitted.append)
        probe.timing("task4", [[GPUS, DEPTH]], DIM, BATCH, warmup=1, rounds=1)
        probe.transfers([GPUS], DEPTH, DIM, BATCH)
        (timed,) = [r for r in emitted if r.get("kind") == "task4"]
        (moved,) = [r for r in emitted if r.get("kind") == "transfers"]
        assert not timed.get("error") and not moved.get("error"), (timed, moved)
        return timed["results"][f"{GPUS}x{DEPTH}"]["layers_per_gpu"], moved["devices"]
    return measure


def recomputed(found: dict, folder: Path) -> dict:
    """The grader's recomputation, outside the run, of the outputs the probe saved."""
    import torch

    from grader.harness.hw3_recompute import recompute_one
    kept = found["recompute"]
    return recompute_one(folder / kept["file"], kept["layers"], torch)


def test_the_reference_runs_where_init_placed_its_layers(layout_of, tmp_path):
    found = layout_of(REFERENCE)
    assert found["devices"] == SPREAD and "devices_built" not in found, found
    assert "devices_first_call" not in found, found
    assert recomputed(found, tmp_path)["matches"] is True, (
        "expected both calls' outputs of the reference to equal one GPU's, recomputed outside "
        f"the run: {recomputed(found, tmp_path)}")


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


@pytest.mark.parametrize("forgery", [COLLAPSE_FROM_SECOND_CALL, COLLAPSE_WHEN_TRAINING],
                         ids=["from-second-call", "when-training"])
def test_a_forward_spread_only_on_the_graders_first_call_is_read_as_one_gpu(
        layout_of, tmp_path, forgery):
    found = layout_of(planted(tmp_path, forgery))
    assert found["devices"] == ["cuda:0"] * DEPTH, (
        "expected the layout of forward()'s second call, with gradients on (all on cuda:0), "
        f"observed {found['devices']} (hw3_probe.Probe._layout)")
    assert found["devices_first_call"] == SPREAD and found["devices_built"] == SPREAD, found
    with pytest.raises(AssertionError) as failure:
        spread_layout(([found], None), GPUS, DEPTH)
    message = str(failure.value)
    assert "no layer on cuda:1, cuda:2" in message and "second call" in message, message
    assert "Where to look: LargeLinearModelMP.forward" in message, message


def test_an_output_wrong_only_with_gradients_on_does_not_match(layout_of, tmp_path):
    found = layout_of(planted(tmp_path, WRONG_WHEN_TRAINING))
    assert found["devices"] == SPREAD and "devices_first_call" not in found, found
    answer = recomputed(found, tmp_path)
    assert answer["matches"] is False and found["matches_single_gpu"] is False, (
        "expected the second call's output (off by 1) to fail the comparison, inside the run "
        f"and outside it: probe {found['matches_single_gpu']}, recomputed {answer}")


def test_task4_and_the_transfers_read_layers_placed_by_forward(task4_and_transfers_of,
                                                                tmp_path):
    layers_per_gpu, devices = task4_and_transfers_of(
        planted(tmp_path, LAZY_LIST, LAZY_INIT, LAZY_FORWARD))
    assert layers_per_gpu == [2, 2, 2] and devices == SPREAD, (
        "expected Task 4's run and the transfers record to see the layers where forward() "
        f"placed them ([2, 2, 2]); observed {layers_per_gpu}, {devices} "
        "(hw3_probe.Probe._timed_configs, _transfers)")


@pytest.mark.parametrize("forgery", [COLLAPSE_FROM_SECOND_CALL, COLLAPSE_WHEN_TRAINING],
                         ids=["from-second-call", "when-training"])
def test_task4_and_the_transfers_read_the_layout_it_trains_with(task4_and_transfers_of,
                                                                tmp_path, forgery):
    layers_per_gpu, devices = task4_and_transfers_of(planted(tmp_path, forgery))
    assert layers_per_gpu == [DEPTH, 0, 0] and devices == ["cuda:0"] * DEPTH, (
        f"expected Task 4 and Task 5 to read where the layers train ([{DEPTH}, 0, 0], all on "
        f"cuda:0), observed {layers_per_gpu}, {devices} (hw3_probe.Probe._timed_configs, "
        "_transfers)")


def test_lazy_layers_are_read_as_their_gpus_and_their_sizes_after_the_first_pass(layout_of,
                                                                                  tmp_path):
    """nn.LazyLinear (its weight an UninitializedParameter until its first pass) was refused
    as "a layer's parameter is a UninitializedParameter, not a torch tensor": an honest HW3
    scored 2 of 15 (adv43). torch's own lazy kinds are read as tensors are."""
    lazy = ('                self.layers.append(nn.Linear(dim, dim).to(torch.device(f"cuda:{gpu}")))\n',
            '                self.layers.append(nn.LazyLinear(dim).to(torch.device(f"cuda:{gpu}")))\n')
    found = layout_of(planted(tmp_path, lazy))
    assert found["devices"] == SPREAD, (
        f"expected the lazy layers read where forward() ran them, {SPREAD}; observed "
        f"{found['devices']} (grader/harness/hw3_probe.py TorchReadings.tensor_types)")
    assert recomputed(found, tmp_path)["matches"] is True
