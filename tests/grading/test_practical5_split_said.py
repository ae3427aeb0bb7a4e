"""Practical 5's "Is the batch split manually in your code?": the functional
`nn.parallel.data_parallel` is DataParallel splitting the batch, and a split made by the code
is said as it was seen (a TA's audit29 D2: the functional form was told "your code splits the
batch itself", with nothing of what was seen).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from grader.checks import test_practical5 as p5
from grader.checks.practical_measures import forward_passes
from grader.harness.observation import Observation

BATCH = 64


def observed(events) -> Observation:
    return Observation("practical5/practical5_dp.py", gpus=2, returncode=0, events=list(events),
                       stdout="")


def model_and_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 10)).to("cuda:0")
    return model, torch.randn(BATCH, 10, device="cuda:0")


def test_the_functional_form_splits_nothing_itself(traced_vnode):
    events = traced_vnode(2)
    model, x = model_and_batch()
    nn.parallel.data_parallel(model, x, device_ids=[0, 1], output_device=0)
    run = observed(events)
    passes = forward_passes(run)
    assert [p["module"] for p in passes] == ["DataParallel"]
    assert not any(p["rows"] < BATCH for p in passes)       # the truth: not split by the code
    assert p5.forward_scatters(run)


def test_a_split_by_the_code_is_said_as_seen(traced_vnode):
    events = traced_vnode(2)
    model, x = model_and_batch()
    replicas = nn.parallel.replicate(model, [0, 1])
    inputs = nn.parallel.scatter(x, [0, 1])
    nn.parallel.gather(nn.parallel.parallel_apply(replicas, inputs), 0)
    run = observed(events)
    said = p5.split_by_the_code(run, forward_passes(run))
    assert said.startswith("runs the model itself on parts of the batch (32/32 rows"), said
    assert "torch.nn.parallel's scatter split the batch at" in said, said
    assert "not inside an nn.DataParallel wrapper's forward" in said
