"""Practical 6: DistributedDataParallel, one process per GPU.

Unlike DataParallel, every GPU gets its own Python process with its own full
copy of the model and its own slice of the global batch. The only traffic
between processes is the gradient all-reduce that DDP overlaps with backward.

Run:  torchrun --nproc-per-node 2 practical6/practical6_ddp.py
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BATCH_SIZE = 64
DIM = 512
HIDDEN = 1024
STEPS = 10
LR = 0.01
SEED = 0

# Run without a GPU: say how to run on virtual ones instead of failing with a CUDA error.
if __name__ == "__main__" and not torch.cuda.is_available():
    sys.exit("No CUDA GPU found: this script needs one GPU per process. Without GPUs, use"
             " virtual ones: "
             "pdl-grade torchrun --gpus 2 --nproc-per-node 2 practical6/practical6_ddp.py")


class MLP(nn.Module):
    def __init__(self, dim=DIM, hidden=HIDDEN):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, dim),
        )

    def forward(self, x):
        return self.net(x)


def get_batch(batch_size, dim, device):
    # A different seed per rank: each replica must see different samples,
    # otherwise N GPUs would just compute the same gradient N times.
    g = torch.Generator().manual_seed(SEED + dist.get_rank())
    x = torch.randn(batch_size, dim, generator=g)
    y = torch.randn(batch_size, dim, generator=g)
    return x.to(device), y.to(device)


def main():
    # torchrun starts one copy of this script per GPU and tells each copy
    # who it is through environment variables.
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}")
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    # TODO (Part 2): add the handout's print of this process's rank and local rank:
    #     print(f"Rank: {dist.get_rank()} | Local Rank: {local_rank}")
    if rank == 0:
        print(f"World size: {world_size}")

    # Same seed on every rank; DDP would broadcast rank 0's weights anyway.
    torch.manual_seed(SEED)
    model = MLP().to(device)
    # TODO: wrap `model` in DDP for this process's GPU (device_ids=[...]).
    raise NotImplementedError(
        "TODO (Practical 6): wrap the model in DDP with device_ids=[local_rank]; "
        "see the Practical 6 handout, DistributedDataParallel section")

    # The global batch is shared out: each rank processes its own slice.
    # TODO: fill in the per-rank batch size: BATCH_SIZE is the global batch,
    # shared out equally over all processes (dist.get_world_size()).
    #     x, y = get_batch(BATCH_SIZE // ..., DIM, device)
    raise NotImplementedError(
        "TODO (Practical 6): give each rank its share of the global batch with "
        "x, y = get_batch(BATCH_SIZE // <number of processes>, DIM, device); "
        "see the Practical 6 handout, data sharding")
    print(f"rank {rank}: batch shape {x.shape} on {x.device}")

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.MSELoss()

    step_times = []
    for step in range(STEPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()

        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # gradients are all-reduced across ranks here
        optimizer.step()

        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        step_times.append(dt)
        if rank == 0:
            print(f"step {step}: loss {loss.item():.6f}, step time {dt:.4f} s")

    if rank == 0:
        print(f"total time: {sum(step_times):.4f} s")
        print(f"final loss: {loss.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
