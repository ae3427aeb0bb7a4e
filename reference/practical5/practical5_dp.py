"""Practical 5: the same training loop wrapped in nn.DataParallel.

DataParallel is a single process: every forward it scatters the batch over
the visible GPUs, copies the model to each of them, runs the replicas in
threads and gathers the outputs back on GPU 0, where loss and optimizer live.

Run:  python practical5/practical5_dp.py
"""
import sys
import time

import torch
import torch.nn as nn

DIM = 512
HIDDEN = 1024
BATCH_SIZE = 64
STEPS = 10
LR = 0.01
SEED = 0

# Run without a GPU: say how to run on virtual ones instead of failing with a CUDA error.
if __name__ == "__main__" and not torch.cuda.is_available():
    sys.exit("No CUDA GPU found: this script needs GPUs to split the batch over. Without "
             "them, use virtual GPUs: "
             "pdl-grade run --gpus 3 practical5/practical5_dp.py")


class MLP(nn.Module):
    def __init__(self, dim=DIM, hidden=HIDDEN):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, dim),
        )

    def forward(self, x):
        # Printed by every replica: shows how DataParallel split the batch.
        # One write per line: the replicas run in threads, and print()'s
        # separate write of "\n" would let their lines interleave.
        print(f"Inside model on device {x.device}, shape: {x.shape}\n", end="")
        return self.net(x)


def main():
    print(f"GPUs visible: {torch.cuda.device_count()}")
    device = torch.device("cuda:0")

    # Seed before building both model and data so the single-GPU run starts
    # from identical weights and sees identical batches.
    torch.manual_seed(SEED)
    model = MLP().to(device)
    x = torch.randn(BATCH_SIZE, DIM, device=device)
    y = torch.randn(BATCH_SIZE, DIM, device=device)

    # The master copy of the weights stays on cuda:0; DataParallel replicates
    # it to the other GPUs on every forward pass.
    model = nn.DataParallel(model)

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.MSELoss()

    step_times = []
    for step in range(STEPS):
        # CUDA kernels are asynchronous: without a synchronize the timer
        # would measure only how long it took to queue the work.
        torch.cuda.synchronize()
        t0 = time.perf_counter()

        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        step_times.append(dt)
        print(f"step {step}: loss {loss.item():.6f}, step time {dt:.4f} s")

    print(f"total time: {sum(step_times):.4f} s")
    for i in range(torch.cuda.device_count()):
        alloc = torch.cuda.memory_allocated(i) / 2**20
        peak = torch.cuda.max_memory_allocated(i) / 2**20
        print(f"GPU {i}: memory allocated {alloc:.2f} MiB, max allocated {peak:.2f} MiB")
    print(f"final loss: {loss.item():.6f}")


if __name__ == "__main__":
    main()
