"""HW3: naive model parallelism with LargeLinearModelMP, the base code of Lecture 8's practical.

A deep stack of Linear layers is cut in two: the first half of the layers on GPU 0, the second
half on GPU 1. In forward() the activation is handed from GPU to GPU like a baton.

Run (2 GPUs):  python hw3/model_parallel.py
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
        # TODO (Task 3): detect all GPUs (torch.cuda.device_count()) and distribute the
        # layers evenly across all of them; this split uses exactly two.
        self.layers = nn.ModuleList()
        for i in range(depth):
            if i < depth // 2:
                device = torch.device("cuda:0")
            else:
                device = torch.device("cuda:1")
            self.layers.append(nn.Linear(dim, dim).to(device))
        # Task 5: counters of the baton pass, reset before the forward pass they count.
        self.to_calls = 0
        self.transfers = 0

    def forward(self, x):
        for layer in self.layers:
            layer_device = next(layer.parameters()).device
            # TODO (Task 5): count how many times the baton pass below is triggered
            # (self.to_calls) and how many of those really move x to another GPU
            # (self.transfers); or count them by hand from each layer's device. The
            # four numbers you report (answers.yaml) are what is graded.
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
