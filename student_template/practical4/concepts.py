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
    # TODO (Part 2): split the batch x into CHUNKS chunks along the batch
    # dimension (torch.chunk), print each one as
    #     print(f"Processing chunk {i} with shape {chunk.shape}")
    # run the SAME model on each chunk, and combine the chunks' outputs, in
    # order, into one tensor called final_output (torch.cat).
    raise NotImplementedError(
        "TODO (Practical 4 Part 2): split the batch with torch.chunk, run the model "
        "on each chunk and torch.cat the outputs into final_output; see the Practical 4 "
        "handout, Part 2 (simulated data parallelism)")
    print("Final output shape:", final_output.shape)
    # Rows of a batch are independent in an MLP, so splitting must not change the
    # result (up to float rounding: other matrix sizes may be tiled differently).
    print("Outputs equal:", torch.allclose(final_output, output, atol=1e-5))

    # ---- Part 3: Simulated Model Parallelism ------------------------------
    # Check if at least 2 GPUs are available
    if torch.cuda.device_count() >= 2:
        device0 = torch.device("cuda:0")
        device1 = torch.device("cuda:1")

        # TODO (Part 3): put layer1 = nn.Linear(IN_DIM, HIDDEN) on device0 and
        # layer2 = nn.Linear(HIDDEN, OUT_DIM) on device1; make an input x of
        # shape (BATCH_SIZE, IN_DIM) on device0; run layer1, move its output to
        # device1 with .to(), and run layer2 on it. Call the result out.
        raise NotImplementedError(
            "TODO (Practical 4 Part 3): put layer1 on cuda:0 and layer2 on cuda:1, and "
            "move the activation between them with .to(device1); see the Practical 4 "
            "handout, Part 3 (simulated model parallelism)")

        print("Output shape:", out.shape)
    else:
        print("Model parallelism requires at least 2 GPUs.")


if __name__ == "__main__":
    main()
