"""Practical 10: a rank's stage order is the order its forward pass runs them (eng29b).

The GPUs of each rank "stage 0's GPU first" (practical10.rank_gpus_reported) were read from the
order the model's layers are registered in (the `placement` record). A student who registers a
spare layer first, on stage 1's GPU, and never runs it (`self.spare = nn.Linear(...)
.to(device1)` above the stages) was told "rank 0: gpus [2, 0]" and lost 0.25 for the true
answer [0, 2]. Each forward pass now records the GPUs its layers ran on, in the order they
first ran (`forward_out`'s `layer_devices`, grader/vgpu/observe.py); the stage order is that,
and only GPUs whose layers never ran follow, in the order they are registered.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation

DIM, HIDDEN = 8, 16


class SpareFirst(nn.Module):
    """The handout's TwoStageModel with a spare layer registered first, on stage 1's GPU."""

    def __init__(self, device0, device1, spare_device=None):
        super().__init__()
        self.device0, self.device1 = device0, device1
        self.spare = nn.Linear(DIM, DIM).to(spare_device or device1)   # never run
        self.stage0 = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU()).to(device0)
        self.stage1 = nn.Sequential(nn.Linear(HIDDEN, DIM)).to(device1)

    def forward(self, x):
        x = self.stage0(x.to(self.device0))
        return self.stage1(x.to(self.device1))


def observed(events) -> Observation:
    return Observation("practical10/sample.py", gpus=4, returncode=0, events=list(events),
                       stdout="")


def test_a_spare_layer_registered_first_leaves_the_stage_order_as_run(traced_vnode):
    events = traced_vnode(4)
    model = SpareFirst(torch.device("cuda:0"), torch.device("cuda:2"))
    model(torch.randn(4, DIM, device="cuda:0"))
    out = [e for e in events if e["event"] == "forward_out"]
    assert out and out[0].get("layer_devices") == ["cuda:0", "cuda:2"], out
    placed = [layer["device"] for e in events if e["event"] == "placement"
              for layer in e["layers"]]
    assert placed[0] == "cuda:2", placed       # registered first: the spare, on stage 1's GPU
    assert p10.stage_gpus(observed(events), 0) == [0, 2]


def test_stages_run_in_the_other_order_are_said_in_that_order(traced_vnode):
    """Stage 0 on cuda:2 and stage 1 on cuda:0 (registered 0 first): the order they ran."""
    events = traced_vnode(4)
    model = SpareFirst(torch.device("cuda:2"), torch.device("cuda:0"), spare_device="cuda:2")
    model(torch.randn(4, DIM, device="cuda:2"))
    assert p10.stage_gpus(observed(events), 0) == [2, 0]


def test_a_gpu_whose_layers_never_ran_is_no_stage(traced_vnode):
    """The spare on a GPU of its own runs nothing there: no stage of the replica (adv40 F5: an
    unused nn.Linear(1, 1) on cuda:r+2 beside a one-stage model had made it two GPUs)."""
    events = traced_vnode(4)
    model = SpareFirst(torch.device("cuda:0"), torch.device("cuda:2"), spare_device="cuda:1")
    model(torch.randn(4, DIM, device="cuda:0"))
    stages = p10.stage_gpus(observed(events), 0)
    assert stages == [0, 2], (
        f"expected the GPUs its layers ran on, [0, 2] (the spare's cuda:1 ran nothing); "
        f"observed {stages} (test_practical10.stage_gpus)")


def test_without_a_record_of_the_run_the_registration_order_is_kept():
    """A trace written before `layer_devices` (or a pass with no layer of its own inside)."""
    placement = {"event": "placement", "rank": 0, "module": "TwoStageModel", "layers": [
        {"name": "stage0.0", "type": "Linear", "device": "cuda:0", "params": 10},
        {"name": "stage1.0", "type": "Linear", "device": "cuda:2", "params": 10}]}
    out = {"event": "forward_out", "rank": 0, "shape": [4, DIM], "device": "cuda:2"}
    assert p10.stage_gpus(observed([placement, out]), 0) == [0, 2]
    ran = dict(out, layer_devices=["cuda:2", "cuda:0"])
    assert p10.stage_gpus(observed([placement, ran]), 0) == [2, 0]


def test_a_check_of_stage_1_alone_before_training_leaves_the_stage_order_as_trained(
        traced_vnode):
    """`with torch.no_grad(): model.stage1(...)` before training (a shape check, adv32 L1): the
    first pass seen ran only stage 1's GPU, and had made rank 0's stages [2, 0]. Only passes
    that train (run with gradients, reached by a backward) give the order."""
    events = traced_vnode(4)
    model = SpareFirst(torch.device("cuda:0"), torch.device("cuda:2"))
    with torch.no_grad():
        model.stage1(torch.zeros(1, HIDDEN, device="cuda:2"))
    model(torch.randn(4, DIM, device="cuda:0")).sum().backward()
    assert p10.stage_gpus(observed(events), 0) == [0, 2]


def test_without_a_pass_that_trains_the_order_of_the_passes_is_kept(traced_vnode):
    """No backward at all (a script that only runs the model): every pass's order, as before."""
    events = traced_vnode(4)
    model = SpareFirst(torch.device("cuda:2"), torch.device("cuda:0"), spare_device="cuda:2")
    model(torch.randn(4, DIM, device="cuda:2"))
    assert p10.stage_gpus(observed(events), 0) == [2, 0]
