"""Practical 4: the two basic ideas behind parallel training, on one small MLP.

Part 1  baseline: one model, one device, one batch.
Part 2  data parallelism, simulated: split the batch, run the same model on
        each piece, glue the outputs back together.
Part 3  model parallelism: split the model, put each half on its own GPU and
        move the activation between them.

Run:  python practical4/concepts.py
"""
import sys

import torch
import torch.nn as nn

BATCH_SIZE = 64
IN_DIM = 1000
HIDDEN = 2000
OUT_DIM = 1000
CHUNKS = 2
SEED = 0

# Run without a GPU: say how to run Part 3 on virtual ones.
if __name__ == "__main__" and not torch.cuda.is_available():
    print("No CUDA GPU found: Parts 1-2 run on the CPU, Part 3 needs 2 GPUs. Without "
          "GPUs, use virtual ones: "
          "pdl-grade run --gpus 2 practical4/concepts.py", file=sys.stderr)


def main():
    torch.manual_seed(SEED)
    # Parts 1-2 are the practical's baseline and make sense on one device, so
    # they fall back to the CPU; Part 3 does not.
    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    print(f"Using device: {device}")

    # ---- Part 1: baseline -------------------------------------------------
    model = nn.Sequential(
        nn.Linear(IN_DIM, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, OUT_DIM),
    ).to(device)
    x = torch.randn(BATCH_SIZE, IN_DIM, device=device)
    with torch.no_grad():
        full_output = model(x)
    print(f"Part 1: output shape {full_output.shape}")

    # ---- Part 2: simulated data parallelism -------------------------------
    # Every "replica" is the same model here; on a real DP setup each chunk
    # would go to its own GPU with its own copy of the weights.
    # TODO (Part 2): split x into CHUNKS pieces along the batch dimension
    # (torch.chunk), run `model` on each piece under torch.no_grad(), print
    # each piece as  print(f"Part 2: chunk {i} shape {chunk.shape}")  and join
    # the pieces' outputs back into one tensor called `combined` (torch.cat).
    raise NotImplementedError(
        "TODO (Practical 4 Part 2): split the batch with torch.chunk, run the model "
        "on each chunk and torch.cat the outputs into `combined`; see the Practical 4 "
        "handout, Part 2 (simulated data parallelism)")
    print(f"Part 2: combined output shape {combined.shape}")
    # Rows of a batch are independent in an MLP, so splitting must not change
    # the result (up to float rounding from different kernel tilings).
    print(f"Part 2: outputs equal: {torch.allclose(combined, full_output, atol=1e-5)}")

    # ---- Part 3: simulated model parallelism ------------------------------
    if torch.cuda.device_count() < 2:
        print("Model parallelism requires at least 2 GPUs")
        return

    # TODO (Part 3): build
    #     layer1 = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU())  on "cuda:0"
    #     layer2 = nn.Linear(HIDDEN, OUT_DIM)                           on "cuda:1"
    # make an input x0 of shape (BATCH_SIZE, IN_DIM) on cuda:0, and under
    # torch.no_grad() run layer1, move its activation to cuda:1 with .to(),
    # and run layer2; call the result `out`.
    raise NotImplementedError(
        "TODO (Practical 4 Part 3): put layer1 on cuda:0 and layer2 on cuda:1, and "
        "move the activation between them with .to(\"cuda:1\"); see the Practical 4 "
        "handout, Part 3 (simulated model parallelism)")
    dev1 = next(layer1.parameters()).device
    dev2 = next(layer2.parameters()).device
    print(f"Part 3: layer1 on {dev1}, layer2 on {dev2}, "
          f"output shape {out.shape} on {out.device}")
    print("Part 3: activation transfers per forward pass: 1")


if __name__ == "__main__":
    main()
