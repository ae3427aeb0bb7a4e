"""Practical 4: the two basic ideas behind parallel training, on one small MLP.

Part 1  Baseline (single GPU): the whole model on one device, the full batch at once.
Part 2  Simulated data parallelism: split the data, not the model. The same model
        processes each chunk of the batch; the outputs are combined at the end.
Part 3  Simulated model parallelism: split the model, not the data. The first
        layer lives on GPU 0, the second on GPU 1, and the activation moves
        between them.

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

    # ---- Part 1: Baseline (single GPU) ------------------------------------
    # Select device: GPU if available, otherwise CPU
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # A simple neural network (2 linear layers), moved to the device
    model = nn.Sequential(
        nn.Linear(IN_DIM, HIDDEN),  # First layer
        nn.ReLU(),                  # Activation
        nn.Linear(HIDDEN, OUT_DIM)  # Second layer
    ).to(device)

    # Dummy input data: a batch of 64 samples, each of size 1000
    x = torch.randn(BATCH_SIZE, IN_DIM).to(device)

    # Forward pass: the full batch goes through the model at once
    output = model(x)
    print("Output shape:", output.shape)

    # ---- Part 2: Simulated Data Parallelism -------------------------------
    # Split the batch into 2 smaller chunks (64 samples -> 2 chunks of 32)
    chunks = torch.chunk(x, CHUNKS)

    outputs = []
    for i, chunk in enumerate(chunks):
        print(f"Processing chunk {i} with shape {chunk.shape}")
        # The SAME model processes each chunk; in real data parallelism each
        # chunk would run on its own GPU, on its own copy of the model.
        out = model(chunk)
        outputs.append(out)

    # Combine the outputs back into a single tensor, in the chunks' order
    final_output = torch.cat(outputs)
    print("Final output shape:", final_output.shape)
    # Rows of a batch are independent in an MLP, so splitting must not change the
    # result (up to float rounding: other matrix sizes may be tiled differently).
    print("Outputs equal:", torch.allclose(final_output, output, atol=1e-5))

    # ---- Part 3: Simulated Model Parallelism ------------------------------
    # Check if at least 2 GPUs are available
    if torch.cuda.device_count() >= 2:
        device0 = torch.device("cuda:0")
        device1 = torch.device("cuda:1")

        # Split the model into two parts
        layer1 = nn.Linear(IN_DIM, HIDDEN).to(device0)   # First layer on GPU 0
        layer2 = nn.Linear(HIDDEN, OUT_DIM).to(device1)  # Second layer on GPU 1

        # Input data starts on GPU 0
        x = torch.randn(BATCH_SIZE, IN_DIM).to(device0)

        # Forward pass through the first layer (GPU 0)
        out = layer1(x)
        # A layer only accepts inputs on its own device: the activation moves
        # to GPU 1, once per forward pass. This is model parallelism's overhead.
        out = out.to(device1)
        # Continue the forward pass on GPU 1
        out = layer2(out)

        print("Output shape:", out.shape)
    else:
        print("Model parallelism requires at least 2 GPUs.")


if __name__ == "__main__":
    main()
