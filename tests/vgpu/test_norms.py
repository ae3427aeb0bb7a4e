"""The runtime's float64 norm (grader/vgpu/norms.py) is torch's own, to the last bit: every
reading made from norms (a gradient's share of a pass, what the script wrote into `.grad`,
where a step's gradient came from) stays what it was before the norm got cheaper."""
import math

import pytest
import torch

from grader.vgpu import grad_writes
from grader.vgpu.norms import CAST_FIRST_UP_TO, norm64


def _torchs(tensor) -> float:
    return float(torch.linalg.vector_norm(tensor, dtype=torch.float64))


def _shapes(dtype):
    """Tensors as the runtime meets them: flat gradients of odd and round sizes, a weight's
    gradient (2-D), a transposed one and a strided slice, small and large values."""
    generator = torch.Generator().manual_seed(0)
    for size in (1, 17, 1000, 32769, 1 << 20):
        yield (torch.randn(size, generator=generator) * 3).to(dtype)
    matrix = torch.randn(512, 1024, generator=generator).to(dtype)
    yield from (matrix, matrix.t(), matrix[:, :300], matrix[::2, 1::3], matrix * 1e-20)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_norm64_is_torchs_float64_norm_to_the_last_bit(dtype, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for tensor in _shapes(dtype):
            expected, observed = _torchs(tensor), float(norm64(tensor))
            assert observed == expected, (
                f"expected the norm torch.linalg.vector_norm(t, dtype=float64) gives, "
                f"{expected!r}; observed {observed!r} for a {dtype} tensor of shape "
                f"{tuple(tensor.shape)}, strides {tensor.stride()}, {threads} threads: look at "
                f"grader/vgpu/norms.py (a cheaper norm must not move any reading)")
    finally:
        torch.set_num_threads(before)


def test_norm64_of_a_tensor_above_the_copy_limit_and_of_integers_is_torchs():
    large = torch.ones(CAST_FIRST_UP_TO + 1)
    assert float(norm64(large)) == _torchs(large) == math.sqrt(CAST_FIRST_UP_TO + 1)
    counts = torch.arange(10)
    for norm in (norm64, _torchs):   # torch refuses integers: so does the runtime's norm
        with pytest.raises(RuntimeError, match="floating point"):
            norm(counts)


@pytest.mark.parametrize("values, finite", [
    ([1.0, -2.0, 3.0], True),
    ([3e38, 3e38, -3e38], True),        # finite, though its float32 norm overflows
    ([1.0, float("inf")], False),
    ([1.0, float("-inf")], False),
    ([float("nan"), 1.0], False),
    ([0.0], True),
])
def test_a_grad_copy_is_finite_exactly_where_its_float64_norm_is(values, finite):
    flat = torch.tensor(values, dtype=torch.float32)
    observed = grad_writes._flat(flat) is not None
    assert observed is finite, (
        f"expected `.grad` {values} read as {'finite' if finite else 'holding an inf or a NaN'} "
        f"(its float64 norm {_torchs(flat)}); observed the opposite: look at "
        f"grader/vgpu/grad_writes.py _finite")
