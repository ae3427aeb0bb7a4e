"""The model's step reads its parameters' fingerprints once, for the step record and the
side-step guard's marks together, in one read per device (grader/vgpu/fingerprints.py).

Each mark had taken its parameter's sum and sum of squares again, one number at a time, after
the step record had read them all the same way: four waits on the GPU per parameter at every
step of every traced DDP run on real GPUs (cheap on virtual ones, where this is counted)."""
from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

LAYERS = 12   # 24 parameters: a read per parameter is far above a read per device


def deep_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(16, 16) for _ in range(LAYERS)]).cuda()


# Where the step's fingerprints are read: a read of a tensor's values whose nearest code of
# the grader's is one of these is one of theirs (the gradient checks' own reads, in
# gradient_sources.py and grad_writes.py, are not this test's); row_lists.py only wraps tolist.
FINGERPRINT_CODE = ("grader/vgpu/side_steps.py", "grader/vgpu/fingerprints.py",
                    "grader/vgpu/observe.py")
WRAPPERS = ("grader/vgpu/row_lists.py",)


@pytest.fixture
def counted_reads(monkeypatch):
    """Every read of a tensor's values back to the host (float(), .item(), .tolist()) made by
    the fingerprints' code, counted while switched on: [count, on]."""
    reads = [0, False]

    def theirs() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            where = frame.f_code.co_filename.replace(os.sep, "/")
            if "/grader/" in where and not where.endswith(WRAPPERS):
                return where.endswith(FINGERPRINT_CODE)
            frame = frame.f_back
        return False

    for name in ("__float__", "item", "tolist"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, **kwargs):
            if reads[1] and theirs():
                reads[0] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(torch.Tensor, name, counted)
    return reads


def test_a_model_step_reads_its_fingerprints_once_per_device(traced_vnode, counted_reads):
    events = traced_vnode(1)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = DDP(deep_model())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        parameters = list(model.parameters())
        for _ in range(2):
            model(torch.randn(8, 16, device="cuda:0")).pow(2).mean().backward()
            counted_reads[:] = [0, True]
            optimizer.step()
            counted_reads[1] = False
            optimizer.zero_grad()
    finally:
        dist.destroy_process_group()
    assert counted_reads[0] <= 4, (
        f"expected the step's fingerprints (gradients, parameters, the side-step marks) read "
        f"back in a few reads (one per device each); observed {counted_reads[0]} reads for "
        f"{len(parameters)} parameters (grader/vgpu/fingerprints.py prints_of, observe.py "
        "_post_step, side_steps.py SideSteps.stepped)")
    with torch.no_grad(), torch._C.DisableTorchFunction():
        total = squares = 0.0
        for p in parameters:   # one read per tensor, added in order: as the record always was
            d = p.detach().reshape(-1).double()
            total += float(d.sum())
            squares += float(torch.dot(d, d))
    step = [e for e in events if e["event"] == "step"][-1]
    assert step["params"] == {"sum": total, "sumsq": squares}, (
        f"expected the step record's fingerprint to be the same number as before; observed "
        f"{step['params']}, expected {(total, squares)}")


def test_a_load_through_data_is_seen_by_the_mark_though_it_keeps_the_version():
    """A load of other weights through `.data` keeps the parameter's version counter: the
    mark's sampled values still tell it grew and was set afresh, not trained."""
    from grader.vgpu.side_steps import ParameterMark, grew
    weight = nn.Parameter(torch.randn(32, 32))
    mark = ParameterMark(weight)
    assert not grew([mark]) and not mark.moved(), "a parameter left alone has not moved"
    version = weight._version
    weight.data.copy_(torch.randn(32, 32))
    assert weight._version == version, "the write should keep the version counter"
    assert grew([mark]) and mark.set_afresh(), (
        "expected a load through .data seen as grown and set afresh; observed "
        f"grew={grew([mark])}, set_afresh={mark.set_afresh()} (look: side_steps.ParameterMark)")
