"""HW3's "every layer once, in order": a forward that skips or repeats a layer on every device
count alike gives the same output on one GPU, so only the layers' own composition (recomputed
outside the run) and the layers the forward ran tell it from an honest forward of its own."""
from __future__ import annotations

import pytest
import torch

from grader.checks.hw3_layout import layers_not_run_once_in_order
from grader.harness.hw3_recompute import describe_layers, recompute_one


def ran(*indices):
    return [{"kind": "layer", "index": i, "input_device": "cuda:0"} for i in indices]


@pytest.mark.parametrize("log", [
    ran(0, 1, 2, 3),
    # .to() entries between the layers change nothing
    ran(0, 1) + [{"kind": "to", "src": "cuda:0", "dst": "cuda:1", "copied": True}] + ran(2, 3),
    [],          # F.linear on the weights runs no module: nothing to tell
])
def test_a_forward_that_runs_every_layer_once_in_order_is_not_told_anything(log):
    assert layers_not_run_once_in_order(log, 4) is None


@pytest.mark.parametrize("log,told", [
    (ran(0, 1, 2), "layer 3 never ran in the forward pass"),
    (ran(1, 2), "layers 0, 3 never ran in the forward pass"),
    (ran(0, 1, 1, 2, 3), "layer 1 ran more than once"),
    (ran(3, 2, 1, 0), "the layers ran in the order 3, 2, 1, 0"),
])
def test_a_skipped_repeated_or_reordered_layer_is_named(log, told):
    assert layers_not_run_once_in_order(log, 4) == told


def saved_layout(tmp_path, forward):
    """A layout's tensors as the probe saves them, `forward` giving both the N-GPU and the
    1-GPU output (the student's forward is the same code on both)."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 8) for _ in range(4)]
    x = torch.randn(3, 8)
    with torch.no_grad():
        out = forward(layers, x)
    tensors = {"input": x, "output": out, "single": out.clone()}
    for index, layer in enumerate(layers):
        for key, value in layer.state_dict().items():
            tensors[f"layer{index}.{key}"] = value
    path = tmp_path / "layout.pt"
    torch.save(tensors, path)
    structure, custom = describe_layers(layers, torch)
    assert custom is None
    return path, structure


def every_layer(layers, x):
    for layer in layers:
        x = torch.relu(layer(x))
    return x


def all_but_the_last(layers, x):
    for layer in layers[:-1]:
        x = torch.relu(layer(x))
    return x


def no_relu_after_the_last(layers, x):
    for layer in layers[:-1]:
        x = torch.relu(layer(x))
    return layers[-1](x)


@pytest.mark.parametrize("forward,composed", [
    (every_layer, True), (all_but_the_last, False), (no_relu_after_the_last, False)])
def test_the_recomputation_says_whether_the_layers_composition_gives_the_output(
        tmp_path, forward, composed):
    path, structure = saved_layout(tmp_path, forward)
    answer = recompute_one(path, structure, torch)
    # Every one equals its own 1-GPU output; only the composition tells them apart.
    assert answer["matches"] is True
    assert answer["matches_layers"] is composed


def test_layers_the_grader_cannot_rebuild_leave_the_composition_unknown(tmp_path):
    path, _ = saved_layout(tmp_path, all_but_the_last)
    assert recompute_one(path, None, torch)["matches_layers"] is None
