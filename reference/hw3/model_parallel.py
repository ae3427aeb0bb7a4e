"""HW3: naive model parallelism with LargeLinearModelMP (Lecture 8's base code, tasks done).

A deep stack of Linear layers is cut into contiguous blocks, one per GPU, over all the GPUs
there are. In forward() the activation is handed from GPU to GPU like a baton: only one GPU
works at any moment, so more GPUs buy memory capacity, not speed.

Run:  python hw3/model_parallel.py      (on 2 GPUs, then on 5)
Change DIM and DEPTH below for the tasks (Task 2: DEPTH = 6, 12, 24; Task 4: DEPTH = 20).
No GPU here? Virtual ones: pdl-grade run --gpus 2 hw3/model_parallel.py
"""
import statistics
import sys
import time

import torch
import torch.nn as nn

DIM = 1024
DEPTH = 6
BATCH_SIZE = 64
STEPS = 20
WARMUP = 3
LR = 1e-3
SEED = 0


class LargeLinearModelMP(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        # Task 3: contiguous blocks whose sizes differ by at most one layer, the first
        # depth % n GPUs taking one more: the activation changes GPU only n - 1 times.
        n = torch.cuda.device_count()
        per_gpu, extra = divmod(depth, n)
        self.layers = nn.ModuleList()
        for gpu in range(n):
            for _ in range(per_gpu + (1 if gpu < extra else 0)):
                self.layers.append(nn.Linear(dim, dim).to(torch.device(f"cuda:{gpu}")))
        # Task 5: counters of the baton pass, reset before the forward pass they count.
        self.to_calls = 0
        self.transfers = 0

    def forward(self, x):
        for layer in self.layers:
            layer_device = next(layer.parameters()).device
            # Task 5: .to() returns x itself when it is already there; only a change of
            # GPU copies data.
            self.to_calls += 1
            if x.device != layer_device:
                self.transfers += 1
            x = x.to(layer_device)  # the "baton pass"
            x = torch.relu(layer(x))
        return x


def sync_all():
    # torch.cuda.synchronize() waits for one device only; a step runs on all of them.
    for i in range(torch.cuda.device_count()):
        torch.cuda.synchronize(i)


def main():
    if not torch.cuda.is_available():
        print("No CUDA GPU found: this script needs GPUs. On a machine without them, use "
              "virtual GPUs: pdl-grade run --gpus 2 hw3/model_parallel.py",
              file=sys.stderr)
        sys.exit(1)

    torch.manual_seed(SEED)
    model = LargeLinearModelMP(DIM, DEPTH)
    print(f"GPUs: {torch.cuda.device_count()}, DEPTH: {DEPTH}, DIM: {DIM}")
    for i, layer in enumerate(model.layers):
        print(f"Layer {i}: {next(layer.parameters()).device}")

    # The input starts where the first layer is; the target waits where the output comes out.
    first = next(model.layers[0].parameters()).device
    last = next(model.layers[-1].parameters()).device
    x = torch.randn(BATCH_SIZE, DIM, device=first)
    target = torch.randn(BATCH_SIZE, DIM, device=last)

    # Task 5: one single forward pass, counted.
    model.to_calls = 0
    model.transfers = 0
    with torch.no_grad():
        model(x)
    print(f"to() calls: {model.to_calls}, real transfers: {model.transfers}")

    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.MSELoss()
    step_times = []
    for step in range(WARMUP + STEPS):
        sync_all()
        t0 = time.perf_counter()

        optimizer.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        optimizer.step()

        sync_all()
        # Warm-up steps pay for CUDA's start-up and Adam's first allocations: not timed.
        if step >= WARMUP:
            step_times.append(time.perf_counter() - t0)

    print(f"Final loss: {loss.item():.6f}")
    if step_times:
        print(f"Median step time: {statistics.median(step_times) * 1000:.2f} ms")
    for i in range(torch.cuda.device_count()):
        peak = torch.cuda.max_memory_allocated(i) / 2**20
        print(f"GPU {i}: max memory allocated {peak:.1f} MiB")


if __name__ == "__main__":
    main()
