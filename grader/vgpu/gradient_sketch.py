"""A sketch of a step's gradient that keeps its direction: SKETCH_SIZE numbers whose cosine
with another gradient's sketch is near the cosine of the two gradients.

Practical 10's invariance check compares the gradient accumulated over micro-batches with the
full-batch one. Where the two differ for an honest reason (a model whose noise cannot be held
still, grader/vgpu/model_noise.py) the check had only norms to compare, and a norm cannot see a
wrong direction: each micro-batch trained on the next one's targets kept the item beside a
Dropout(0.1) (adv54 F2). The step's (sum, sum of squares) fingerprint cannot give a cosine; this
sketch can. It is a count sketch: every element of every gradient is added, with a sign, into
one of SKETCH_SIZE buckets, both drawn from a generator seeded by the tensor's place among the
step's gradients alone, so the two runs of one script sketch alike and the sketches' inner
product estimates the gradients' (error about 1/sqrt(SKETCH_SIZE) of the norms' product;
read by grader/checks/gradient_noise.py `direction`).
Written only in the check's own runs (a steady seal key): it costs a pass over the gradients.
"""
from __future__ import annotations

import torch

SKETCH_SIZE = 256
_SEED = 977


def sketch_of(tensors) -> list[float]:
    """The count sketch of `tensors` together (their order matters); read around the node's
    torch-function mode, from a generator of its own (no draw of the script's is moved)."""
    total = torch.zeros(SKETCH_SIZE, dtype=torch.float64)
    with torch.no_grad(), torch._C.DisableTorchFunction():
        for place, tensor in enumerate(tensors):
            values = tensor.detach().reshape(-1).double().cpu()
            drawn = torch.Generator().manual_seed(_SEED + place)
            buckets = torch.randint(0, SKETCH_SIZE, values.shape, generator=drawn)
            signs = torch.randint(0, 2, values.shape, generator=drawn).double() * 2 - 1
            total.index_add_(0, buckets, values * signs)
    return [float(f"{value:.6g}") for value in total.tolist()]

