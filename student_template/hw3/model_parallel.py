"""HW3: naive model parallelism for a deep stack of Linear layers.

The layers are cut into contiguous blocks, one block per GPU, and the
activation is handed from GPU to GPU like a baton. Only one GPU works at any
moment, so adding GPUs buys memory capacity, not speed.

Run:  python hw3/model_parallel.py --depth 12
      python hw3/model_parallel.py --count-transfers
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn as nn

DIM = 1024
DEPTH = 12
BATCH_SIZE = 64
STEPS = 20
WARMUP = 3
LR = 1e-3
SEED = 0


class LargeLinearModelMP(nn.Module):
    def __init__(self, dim=DIM, depth=DEPTH):
        super().__init__()
        n = torch.cuda.device_count()
        # TODO (Task 1, then Task 3): fill self.devices with one
        # torch.device("cuda:k") per layer, in layer order. Task 1 splits
        # DEPTH=6 over 2 GPUs; Task 3 generalises to any depth and n.
        self.devices = []
        raise NotImplementedError(
            "TODO (HW3 Task 3): spread the layers evenly over all GPUs in contiguous "
            "blocks (per-GPU counts differ by at most 1, earlier GPUs take the extra "
            "layers) and store each layer's device in self.devices; see the HW3 "
            "handout, Task 3")

        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, dim), nn.ReLU()).to(device)
            for device in self.devices
        )
        # Task 5: reset by the caller, counted in forward.
        self.to_calls = 0
        self.transfers = 0

    def forward(self, x):
        # TODO (Task 1): the "baton pass": for each layer and its device,
        # move x to that device with .to() and apply the layer.
        # Task 5: count every .to() call in self.to_calls, and in
        # self.transfers those where x is not already on that device.
        raise NotImplementedError(
            "TODO (HW3 Task 1): write the baton-pass forward: for layer, device in "
            "zip(self.layers, self.devices), move x there with .to() and apply the "
            "layer, counting self.to_calls and self.transfers (Task 5); see the HW3 "
            "handout, Task 1")


def sync_all():
    # torch.cuda.synchronize() only waits for the current device; the work
    # of one step is spread over all of them.
    for i in range(torch.cuda.device_count()):
        torch.cuda.synchronize(i)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument("--dim", type=int, default=DIM)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--count-transfers", action="store_true",
                        help="run one forward pass and count .to() calls and real transfers")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("No CUDA GPU found: this script needs GPUs. On a machine without "
              "them, use virtual GPUs: python -m grader run --gpus 2 hw3/model_parallel.py",
              file=sys.stderr)
        sys.exit(1)

    n = torch.cuda.device_count()
    torch.manual_seed(SEED)
    model = LargeLinearModelMP(dim=args.dim, depth=args.depth)
    layers_per_gpu = [model.devices.count(torch.device(f"cuda:{i}")) for i in range(n)]
    print(f"GPUs: {n}")
    print(f"Layers per GPU: {layers_per_gpu}")

    # Input where the first layer is, target where the output comes out.
    x = torch.randn(args.batch_size, args.dim, device=model.devices[0])
    target = torch.randn(args.batch_size, args.dim, device=model.devices[-1])

    if args.count_transfers:
        model.to_calls = 0
        model.transfers = 0
        with torch.no_grad():
            model(x)
        print(f"to() calls: {model.to_calls}, real transfers: {model.transfers}")
        return

    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.MSELoss()

    step_times = []
    for step in range(args.warmup + args.steps):
        sync_all()
        t0 = time.perf_counter()

        optimizer.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        optimizer.step()

        sync_all()
        dt = time.perf_counter() - t0
        # Warm-up steps pay for CUDA context setup, allocator growth and
        # Adam's state allocation; they would skew the median.
        if step >= args.warmup:
            step_times.append(dt)

    print(f"Final loss: {loss.item():.6f}")
    if step_times:
        print(f"Median step time: {statistics.median(step_times) * 1000:.2f} ms")
    for i in range(n):
        peak = torch.cuda.max_memory_allocated(i) / 2**20
        print(f"GPU {i}: max memory allocated {peak:.1f} MiB")


if __name__ == "__main__":
    main()
