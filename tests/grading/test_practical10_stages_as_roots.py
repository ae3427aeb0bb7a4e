"""Two pipeline stages written as two root modules, each in its own DDP (a red team's honest P10,
adv49 F5: 7.25 of 12 where a TA gives 10).

    stage0 = DDP(full.stage0, device_ids=[device0])
    stage1 = DDP(full.stage1, device_ids=[device1])
    out = stage1(stage0(mx).to(device1))

Stage 1 is handed stage 0's output, so it continues stage 0's pass (grader/vgpu/observe.py
`_continued`, adv30's rule for a loss or head with weights); read only as a head, its GPU was no
stage and the replica "ran layers on cuda:0 only". A continuing root module in a DDP of its own,
with parameters on a GPU the pass did not run on, is now a further stage of the pass: its GPU is
the pass's second stage. A head or loss with weights, or a stage on the pass's own GPU, still
only continues the pass (adv30's tests in test_passes_that_train.py keep their reading).

Each test runs one process group of one rank in the test's own process, on 2 virtual GPUs.
"""
from __future__ import annotations

from contextlib import ExitStack

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation

MICRO = 4


@pytest.fixture
def one_rank(traced_vnode):
    """A traced virtual node of 2 GPUs with a process group of one rank: () -> its records."""
    started = []

    def make():
        events = traced_vnode(2)
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        started.append(True)
        return events

    yield make
    if started and dist.is_initialized():
        dist.destroy_process_group()


def observed(events) -> Observation:
    return Observation("sample.py", gpus=2, returncode=0, events=list(events), stdout="")


def stages(second: str, *, own_ddp: bool = True):
    """Stage 0 on cuda:0 in its own DDP; stage 1 on `second`, in its own DDP or bare."""
    torch.manual_seed(0)
    stage0 = nn.Sequential(nn.Linear(64, 128), nn.ReLU()).to("cuda:0")
    stage1 = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 64)).to(second)
    wrapped0 = DDP(stage0, device_ids=[0])
    wrapped1 = DDP(stage1, device_ids=[int(second[-1])]) if own_ddp else stage1
    return wrapped0, wrapped1


def train(stage0, stage1, second: str, steps: int = 2) -> None:
    """The handout's loop, with the two stages called one after the other and both no_sync()s
    entered for all but the last micro-batch."""
    optimizer = torch.optim.SGD([*stage0.parameters(), *stage1.parameters()], lr=0.01)
    x = torch.randn(32, 64, device="cuda:0")
    y = torch.randn(32, 64, device=second)
    for _ in range(steps):
        optimizer.zero_grad()
        for i, (mx, my) in enumerate(zip(x.tensor_split(MICRO), y.tensor_split(MICRO))):
            with ExitStack() as stack:
                if i < MICRO - 1:
                    for stage in (stage0, stage1):
                        if isinstance(stage, DDP):
                            stack.enter_context(stage.no_sync())
                out = stage1(stage0(mx).to(second))
                (F.mse_loss(out, my) / MICRO).backward()
        optimizer.step()


def test_a_second_stage_in_its_own_ddp_on_another_gpu_is_a_stage_of_the_pass(one_rank):
    events = one_rank()
    train(*stages("cuda:1"), "cuda:1")
    run = observed(events)
    assert p10.stage_gpus(run, 0) == [0, 1], (
        f"expected stage 0's GPU then stage 1's, [0, 1]; observed {p10.stage_gpus(run, 0)} "
        f"(forward_out records: {[(e.get('layer_devices'), e.get('continues'), e.get('stage')) for e in run.of('forward_out')]}; "
        "grader/vgpu/observe.py _is_stage, practical_measures._stage_joins)")
    # Still one pass per micro-batch: the stage continues stage 0's pass, it is none of its own.
    assert [s["forwards"] for s in p10.step_pattern(run)] == [MICRO, MICRO], p10.step_pattern(run)
    staged = [e.get("continues") for e in run.of("forward_out") if e.get("stage")]
    assert staged[:MICRO] == [[1], [3], [5], [7]], staged


def test_a_second_module_without_a_ddp_of_its_own_only_continues_the_pass(one_rank):
    """adv30's reading kept: a module with weights called after the model, not in a DDP of
    its own (a head, a loss with a learnable weight), is no stage, on whatever GPU it sits."""
    events = one_rank()
    train(*stages("cuda:1", own_ddp=False), "cuda:1")
    run = observed(events)
    assert not any(e.get("stage") for e in run.of("forward_out")), run.of("forward_out")
    assert p10.stage_gpus(run, 0) == [0], p10.stage_gpus(run, 0)


def test_a_second_ddp_on_the_passes_own_gpu_is_no_second_stage(one_rank):
    """Part 5's broken layout written with two roots: both on cuda:0, one GPU."""
    events = one_rank()
    train(*stages("cuda:0"), "cuda:0")
    run = observed(events)
    assert not any(e.get("stage") for e in run.of("forward_out")), run.of("forward_out")
    assert p10.stage_gpus(run, 0) == [0], p10.stage_gpus(run, 0)
