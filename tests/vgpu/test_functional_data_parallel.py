"""`torch.nn.parallel.data_parallel`, "the functional version of the DataParallel module", is
seen as DataParallel (a TA's audit29 D2: `out = nn.parallel.data_parallel(model, x,
device_ids=gpu_ids, output_device=0)` in Practical 5's loop scored 4.75 of 9.25, its replicas
taken for passes of the script's own on parts of the batch, with "your code splits the batch
itself"). It runs as nn.DataParallel(module, device_ids, output_device, dim) does: the same
steps, the same output, and the same records (the wrapper's pass, the scatter, the replicas'
passes as part of it, the gather).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

BATCH, IN, OUT = 64, 8, 4


def model_and_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    return model, torch.randn(BATCH, IN, device="cuda:0")


def what_ran(events):
    """The records the Practical 5 checks read, without times and ids."""
    kept = []
    for e in events:
        if e["event"] in ("forward", "forward_out"):
            kept.append((e["event"], e.get("module"), tuple(e.get("batch") or ()),
                         bool(e.get("nested")), e.get("device")))
        elif e["event"] == "dp_scatter":
            kept.append(("dp_scatter", tuple(e["sizes"]), tuple(e["devices"])))
        elif e["event"] == "transfer":
            kept.append(("transfer", e["kind"], e["src"], e["dst"]))
    return kept


def train(forward, steps=2):
    model, x = model_and_batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = forward(model, x).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("call", ["package", "module", "kwargs_default_devices"])
def test_the_functional_form_is_recorded_as_the_wrapper(traced_vnode, call):
    events = traced_vnode(3)
    if call == "package":
        losses = train(lambda m, x: nn.parallel.data_parallel(m, x, device_ids=[0, 1, 2],
                                                               output_device=0))
    elif call == "module":
        from torch.nn.parallel.data_parallel import data_parallel
        losses = train(lambda m, x: data_parallel(m, (x,), [0, 1, 2]))
    else:
        losses = train(lambda m, x: nn.parallel.data_parallel(m, x))
    functional = what_ran(events)
    events.clear()
    wrapped = {}
    expected = train(lambda m, x: wrapped.setdefault(id(m), nn.DataParallel(m))(x))
    # The same records (the replicas' threads finish in any order).
    assert sorted(map(repr, functional)) == sorted(map(repr, what_ran(events)))
    assert losses == pytest.approx(expected)
    replicas = [r for r in functional if r[0] == "forward" and r[3]]
    assert sorted(r[2][0] for r in replicas[:3]) == [20, 22, 22], functional
    assert ("forward", "DataParallel", (BATCH, IN), False, None) in functional


def test_where_the_functional_form_would_not_replicate_it_runs_as_it_is(traced_vnode):
    events = traced_vnode(2)
    model, x = model_and_batch()
    out = nn.parallel.data_parallel(model, x, device_ids=[0])   # one GPU: the module itself
    assert out.shape == (BATCH, OUT)
    assert not any(e.get("module") == "DataParallel" for e in events)
    model.to("cuda:1")   # the parameters off device_ids[0]: PyTorch's own error
    with pytest.raises((ValueError, RuntimeError), match="module must have its parameters"):
        nn.parallel.data_parallel(model, x, device_ids=[0, 1])


def test_installed_on_real_gpus_too_and_taken_back():
    import sys

    from grader.vgpu.dataparallel import install_observer
    from grader.vgpu.patcher import Patcher

    defining = sys.modules["torch.nn.parallel.data_parallel"]
    original = defining.data_parallel
    patcher = Patcher()
    install_observer(patcher)
    try:
        assert defining.data_parallel is not original
        assert nn.parallel.data_parallel is defining.data_parallel
        assert defining.data_parallel.__wrapped__ is original
    finally:
        patcher.restore()
    assert defining.data_parallel is original and nn.parallel.data_parallel is original
