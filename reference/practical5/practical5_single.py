"""Practical 5 (baseline): train a small MLP on one GPU.

Same model, data, seed and step count as practical5_dp.py, so the two
final losses can be compared and the step times set side by side.

Run:  python practical5/practical5_single.py
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
    sys.exit("No CUDA GPU found: this script needs a GPU. Without one, use a virtual GPU:"
             " "
             "pdl-grade run --gpus 1 practical5/practical5_single.py")


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


def main():
    print(f"GPUs visible: {torch.cuda.device_count()}")
    device = torch.device("cuda:0")

    # Seed before building both model and data so the DP run starts from
    # identical weights and sees identical batches.
    torch.manual_seed(SEED)
    model = MLP().to(device)
    x = torch.randn(BATCH_SIZE, DIM, device=device)
    y = torch.randn(BATCH_SIZE, DIM, device=device)

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
