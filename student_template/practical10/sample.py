"""Practical 10: data, model and pipeline parallelism in one script.

Each torchrun process is one data-parallel replica. Inside a replica the model
is cut into two stages on two different GPUs (model parallelism), and every
step's batch is fed through the stages as a sequence of micro-batches whose
gradients are accumulated (the idea behind pipeline parallelism). Here the
micro-batches still run one after another; a real pipeline schedule would
let stage 0 start micro-batch i+1 while stage 1 works on micro-batch i.

With 2 processes this uses 4 GPUs:  rank 0 -> cuda:0 + cuda:2,
                                    rank 1 -> cuda:1 + cuda:3.

Run:  torchrun --nproc-per-node 2 practical10/sample.py
"""
import os
import sys
import time
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BATCH_SIZE = 64
MICRO_BATCHES = 4
DIM = 512
HIDDEN = 1024
STEPS = 3
LR = 0.01
SEED = 0

# Run without a GPU: say how to run on virtual ones instead of failing with a CUDA error.
if __name__ == "__main__" and not torch.cuda.is_available():
    sys.exit("No CUDA GPU found: this script needs 4 GPUs (two per process). Without "
             "them, use virtual GPUs: "
             "pdl-grade torchrun --gpus 4 --nproc-per-node 2 practical10/sample.py")


class TwoStageModel(nn.Module):
    def __init__(self, device0, device1, dim=DIM, hidden=HIDDEN):
        super().__init__()
        self.device0 = device0
        self.device1 = device1
        self.stage0 = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU()).to(device0)
        self.stage1 = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, dim)).to(device1)

    def forward(self, x):
        x = self.stage0(x.to(self.device0))
        # The activation crosses GPUs once per micro-batch.
        x = self.stage1(x.to(self.device1))
        return x


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()

    # Part 5 of the handout breaks model parallelism by changing the next line to
    #     device1 = torch.device(f"cuda:{local_rank}")
    device0 = torch.device(f"cuda:{local_rank}")
    device1 = torch.device(f"cuda:{local_rank + 2}")
    print(f"[Rank {rank}] world size {world_size}: {world_size} processes, "
          f"one data-parallel replica each")
    print(f"[Rank {rank}] stage 0 on {device0}, stage 1 on {device1}")

    torch.manual_seed(SEED)
    model = TwoStageModel(device0, device1)
    # The module spans two devices, so DDP must not be given device_ids.
    model = DDP(model)

    # Each replica gets its own data.
    g = torch.Generator().manual_seed(SEED + rank)
    x = torch.randn(BATCH_SIZE, DIM, generator=g).to(device0)
    y = torch.randn(BATCH_SIZE, DIM, generator=g).to(device1)

    # tensor_split makes exactly MICRO_BATCHES micro-batches and keeps every row,
    # also when BATCH_SIZE does not divide evenly (64 over 3: 22, 21, 21 rows).
    micro_x = x.tensor_split(MICRO_BATCHES)
    micro_y = y.tensor_split(MICRO_BATCHES)
    sizes = "/".join(str(n) for n in sorted({len(m) for m in micro_x}, reverse=True))
    print(f"[Rank {rank}] batch {BATCH_SIZE} per replica -> {MICRO_BATCHES} "
          f"micro-batches of {sizes} per step")

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.MSELoss()

    for step in range(STEPS):
        torch.cuda.synchronize(device0)
        torch.cuda.synchronize(device1)
        t0 = time.perf_counter()

        optimizer.zero_grad()
        step_loss = 0.0
        # TODO: for each micro-batch i (mx, my): forward through `model`, compute
        # loss_fn(out, my) / MICRO_BATCHES (why divide?), backward, and add
        # loss.item() to step_loss. Run every micro-batch except the last
        # inside `with model.no_sync():` (nullcontext() is imported for the
        # last one). After each backward print one of
        #   print(f"[Rank {rank}] step {step}: micro-batch {i}/{MICRO_BATCHES} "
        #         f"backward -> gradients accumulated locally (no_sync)")
        #   print(f"[Rank {rank}] step {step}: micro-batch {i}/{MICRO_BATCHES} "
        #         f"backward -> gradients all-reduced across {world_size} replicas")
        raise NotImplementedError(
            "TODO (Practical 10): write the micro-batch loop (forward, loss / "
            "MICRO_BATCHES, backward per micro-batch) and use model.no_sync() for "
            "all but the last micro-batch; see the Practical 10 handout, pipeline "
            "and gradient accumulation")
        optimizer.step()

        torch.cuda.synchronize(device0)
        torch.cuda.synchronize(device1)
        dt = time.perf_counter() - t0
        print(f"[Rank {rank}] step {step}: loss {step_loss:.6f}, time {dt * 1000:.2f} ms")

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
