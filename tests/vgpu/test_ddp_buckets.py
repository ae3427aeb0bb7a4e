"""DDP's gradient buckets on virtual GPUs hold one GPU's gradients each, as on real GPUs, where
DDP buckets by (device, dtype) (grader/vgpu/ddp_buckets.py).

Every virtual GPU's storage is on the host, so DDP had put a module spread over two GPUs
(Practical 10: a stage per GPU, DDP without device_ids) into buckets holding both GPUs'
gradients. With DDP(model, gradient_as_bucket_view=True) each `.grad` is a view of its bucket,
whose storage carries one GPU's label: Practical 10's optimizer step stopped with "Expected all
tensors to be on the same device, but found at least two devices, cuda:3 and cuda:1" (a red
team, adv30 A4: 1.5 of 12 for an honest option).
"""
import json
import subprocess
import sys
import textwrap
from contextlib import nullcontext

import pytest
import torch
import torch.nn as nn

MICRO_BATCHES = 2


class TwoStage(nn.Module):
    """Practical 10's model: stage 0 on one GPU, stage 1 on another."""

    def __init__(self, first, second):
        super().__init__()
        torch.manual_seed(0)
        self.stage0 = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to(first)
        self.stage1 = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)).to(second)
        self.first, self.second = first, second

    def forward(self, x):
        return self.stage1(self.stage0(x.to(self.first)).to(self.second))


@pytest.fixture
def one_rank_group(tmp_path):
    """A gloo group of one rank in this process, as nccl runs on virtual GPUs: DDP's
    all-reduce really runs (over one rank it leaves the gradient as it is)."""
    import torch.distributed as dist

    def make():   # after the node's activation, which runs nccl as gloo
        dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'store'}", rank=0,
                                world_size=1)
    yield make
    if dist.is_initialized():
        dist.destroy_process_group()


def train(model, batch, target, steps):
    """Practical 10's loop: micro-batches, all but the last under no_sync. Returns each
    step's gradients, as plain host tensors."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    grads = []
    for _ in range(steps):
        optimizer.zero_grad()
        for i, (x, y) in enumerate(zip(batch.chunk(MICRO_BATCHES), target.chunk(MICRO_BATCHES))):
            last = i == MICRO_BATCHES - 1
            with nullcontext() if last or not hasattr(model, "no_sync") else model.no_sync():
                loss = nn.functional.mse_loss(model(x), y.to(model_output_device(model)))
                (loss / MICRO_BATCHES).backward()
        grads.append([p.grad.detach().cpu().clone() for p in model.parameters()])
        optimizer.step()
    return grads


def model_output_device(model):
    return getattr(model, "module", model).second


@pytest.mark.parametrize("options", [{"gradient_as_bucket_view": True}, {},
                                     {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.001},
                                     {"find_unused_parameters": True}])
def test_a_module_on_two_gpus_trains_as_on_the_host(vnode, one_rank_group, options):
    """Three steps: DDP's buckets of the first step, and the second and third after DDP's
    rebuild of its buckets, which on a real GPU keeps each bucket on one device too."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(1)
    batch, target = torch.randn(6, 8), torch.randn(6, 4)
    expected = train(TwoStage("cpu", "cpu"), batch, target, steps=3)
    vnode(4)
    one_rank_group()
    ddp = DDP(TwoStage("cuda:1", "cuda:3"), **options)
    seen = []

    def hook(state, bucket):   # the GPUs of each bucket's parameters, then DDP's default
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        seen.append(sorted({str(p.device) for p in bucket.parameters()}))
        return default_hooks.allreduce_hook(None, bucket)
    ddp.register_comm_hook(None, hook)
    got = train(ddp, batch, target, steps=3)
    for step, (ours, theirs) in enumerate(zip(got, expected)):
        for g, e in zip(ours, theirs):
            assert torch.allclose(g, e, atol=1e-6), f"step {step + 1}: gradients differ"
    for p in ddp.parameters():
        assert p.grad.device == p.device, f"a gradient on {p.grad.device} for a weight on {p.device}"
    assert seen and all(len(devices) == 1 for devices in seen), \
        f"every bucket holds one GPU's gradients; the buckets' devices were {seen}"
    assert {devices[0] for devices in seen} == {"cuda:1", "cuda:3"}


def test_bucket_views_are_the_gradients_and_stay_on_their_gpu(vnode, one_rank_group):
    """gradient_as_bucket_view=True: each `.grad` is its bucket's view (DDP's memory saving
    kept), and the optimizer's step reads it on its weight's GPU."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    vnode(4)
    one_rank_group()
    ddp = DDP(TwoStage("cuda:0", "cuda:2"), gradient_as_bucket_view=True)
    train(ddp, torch.randn(6, 8), torch.randn(6, 4), steps=2)
    storages = {}
    for p in ddp.parameters():
        storages.setdefault(str(p.device), set()).add(p.grad.untyped_storage().data_ptr())
    assert {device: len(found) for device, found in storages.items()} == {
        "cuda:0": 1, "cuda:2": 1}, "one bucket per GPU, every gradient a view of its own GPU's"


@pytest.mark.parametrize("second, rebuilt", [("cuda:0", True), ("cuda:2", False)])
def test_only_a_module_on_several_gpus_keeps_its_first_buckets(vnode, one_rank_group, second,
                                                                rebuilt):
    """DDP rebuilds its buckets after the first step in the order gradients got ready, grouped
    by the real device (the host here): a module on one GPU is rebuilt as on a real GPU; one on
    two keeps its construction buckets, one per GPU, which the rebuild would mix."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    vnode(4)
    one_rank_group()
    ddp = DDP(TwoStage("cuda:0", second), gradient_as_bucket_view=True)
    train(ddp, torch.randn(6, 8), torch.randn(6, 4), steps=2)
    logged = ddp._get_ddp_logging_data()
    assert bool(logged["has_rebuilt_buckets"]) is rebuilt
    assert len(logged["bucket_sizes"].split(",")) == (1 if rebuilt else 2)


HYBRID = textwrap.dedent('''
    import os, torch, torch.nn as nn, torch.distributed as dist
    from contextlib import nullcontext
    from torch.nn.parallel import DistributedDataParallel as DDP
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    first, second = f"cuda:{local_rank}", f"cuda:{local_rank + 2}"

    class TwoStage(nn.Module):
        def __init__(self):
            super().__init__()
            self.stage0 = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to(first)
            self.stage1 = nn.Linear(16, 4).to(second)

        def forward(self, x):
            return self.stage1(self.stage0(x.to(first)).to(second))

    torch.manual_seed(0)
    model = DDP(TwoStage(), gradient_as_bucket_view=True)
    torch.manual_seed(100 + dist.get_rank())          # different data on every rank
    x, y = torch.randn(16, 8), torch.randn(16, 4, device=second)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        for i, (mx, my) in enumerate(zip(x.chunk(2), y.chunk(2))):
            with nullcontext() if i == 1 else model.no_sync():
                (nn.functional.mse_loss(model(mx), my) / 2).backward()
        optimizer.step()
    dist.destroy_process_group()
''')


@pytest.mark.slow   # two processes under torchrun, each importing torch
def test_two_ranks_with_bucket_views_really_all_reduce(tmp_path):
    """Practical 10's hybrid on 4 virtual GPUs with gradient_as_bucket_view=True: the ranks,
    given different rows, hold the same gradients after each step (gloo moved them), and each
    step's synchronising backward all-reduced one bucket per GPU of the rank."""
    script = tmp_path / "hybrid.py"
    script.write_text(HYBRID)
    trace = tmp_path / "trace.jsonl"
    done = subprocess.run([sys.executable, "-m", "grader", "torchrun", "--gpus", "4",
                           "--nproc-per-node", "2", "--virtual", "--trace", str(trace),
                           str(script)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    grads = {}
    for event in events:
        if event["event"] == "step":
            grads.setdefault(event["rank"], []).append(round(event["grads"]["sum"], 6))
    assert len(grads[0]) == 3 and grads[0] == grads[1], grads
    reduced = [e for e in events if e["event"] == "collective"
               and e.get("source") == "ddp_gradients" and e["rank"] == 0]
    assert len(reduced) == 3 * 2, "one bucket per GPU of the rank, once per step"
