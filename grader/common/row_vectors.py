"""How many row vectors a tensor of a given shape holds, the same way for a layer's input as
for a pass's micro-batch (grader/vgpu/observe.py's `layer_rows`, Practical 10's stages)."""
from __future__ import annotations

import math


def row_vectors(shape) -> int | None:
    """The product of all dims of `shape` but the last (its length for one dim; None for a
    scalar or no shape). Counted so, not as dim 0: an nn.LSTM stage in PyTorch's default
    (seq, batch, feature) layout is handed SEQ rows (8) in dim 0, fewer than the micro-batch
    (16), and its GPU had been no stage (adv43 F4: an honest P10 at 7.25 instead of 10)."""
    if not isinstance(shape, (list, tuple)) or not shape:
        return None
    return math.prod(shape[:-1]) if len(shape) > 1 else shape[0]
