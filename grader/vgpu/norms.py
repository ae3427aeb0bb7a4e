"""The float64 norm the runtime takes of the script's tensors (outputs, gradients, `.grad`).

`torch.linalg.vector_norm(t, dtype=torch.float64)` casts element by element inside its
reduction: for a million float32 elements on one CPU thread it took 5.1 ms, against 1.8 ms for
casting the tensor first and taking the norm of the copy (torch 2.13, eng_speed1). The two give
the same value to the last bit (float32, bfloat16, float16 and float64; contiguous, transposed
and strided; 1, 2 and 4 threads: tests/vgpu/test_norms.py), so every reading stays as it was.
A grading takes several such norms of every parameter's gradient at every backward
(gradient_sources.py, grad_writes.py): a third of a Practical 10 run's CPU went there.

Call it with torch functions disabled and gradients off, as the runtime's looks are taken.
"""
from __future__ import annotations

import torch

# A tensor of more elements than this is reduced as torch casts it, in place of a float64
# copy made first (32 MiB): a student's large layer must not add its gradient's size twice
# over to the run's memory for a look.
CAST_FIRST_UP_TO = 1 << 22


def norm64(tensor: torch.Tensor) -> torch.Tensor:
    """The norm of `tensor`'s elements in float64 (0-dim, on its device: nothing read back)."""
    if (not tensor.is_floating_point() or tensor.dtype == torch.float64
            or tensor.numel() > CAST_FIRST_UP_TO):   # as torch takes it (an error stays one)
        return torch.linalg.vector_norm(tensor, dtype=torch.float64)
    return torch.linalg.vector_norm(tensor.to(torch.float64))
