"""What work costs on a virtual GPU: the constants of the simulated clock, and the cost of one
operation, copy or collective. The README's "How the simulated clock works" explains the model;
grader/vgpu/clock.py keeps the timelines these costs are laid on.

The constants describe one nominal GPU of the course's cluster (an NVIDIA A100-SXM4-80GB in
FP32, the precision the course's scripts use) and the host driving it. They set the scale of
the simulated times, not their shape: which configuration is faster, and whether time grows
with the work, follow from the model whatever the exact values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CostModel:
    # The host: every operation the script calls costs it this long to launch (Python, the
    # dispatcher, cudaLaunchKernel), whatever it does; PyTorch's eager overhead per op.
    host_op_s: float = 10e-6
    # A GPU: the shortest a kernel takes (launch latency on the device) ...
    kernel_s: float = 3e-6
    # ... plus its work, by the roofline: FLOPs over the peak arithmetic throughput (A100
    # FP32, 19.5 TFLOP/s) or bytes read and written over the memory bandwidth (HBM2e,
    # 2.0 TB/s), whichever takes longer.
    flops_per_s: float = 19.5e12
    memory_bytes_per_s: float = 2.0e12
    # Backward of an operation: its forward's cost twice (the gradients of the input and of
    # the weights), launched twice.
    backward_factor: int = 2
    # Between two GPUs (NVLink 3, per direction) and between host and GPU (PCIe 4.0 x16).
    link_bytes_per_s: float = 300e9
    link_s: float = 8e-6
    host_link_bytes_per_s: float = 25e9
    host_link_s: float = 10e-6
    # Collectives between processes (NCCL): the ring formula on the GPU link, plus a latency.
    collective_s: float = 20e-6

    # -- costs ---------------------------------------------------------------------------------
    def kernel(self, flops: float, nbytes: float) -> float:
        """Device time of one kernel doing `flops` arithmetic over `nbytes` of memory traffic."""
        return self.kernel_s + max(flops / self.flops_per_s, nbytes / self.memory_bytes_per_s)

    def copy(self, nbytes: float, host_side: bool = False) -> float:
        """A copy between two GPUs, or (host_side) between the host and a GPU."""
        if host_side:
            return self.host_link_s + nbytes / self.host_link_bytes_per_s
        return self.link_s + nbytes / self.link_bytes_per_s

    def collective(self, op: str, nbytes: float, group_size: int) -> float:
        """One collective over `group_size` GPUs on the ring (NCCL's algorithm)."""
        n = max(1, group_size)
        if n == 1:
            return self.kernel_s
        if op in ("all_reduce", "all_reduce_coalesced"):
            traffic = 2 * (n - 1) / n * nbytes
        elif op in ("all_gather", "all_gather_into_tensor", "all_gather_coalesced",
                    "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
                    "all_to_all_single"):
            traffic = (n - 1) / n * nbytes
        else:  # broadcast, reduce, gather, scatter, send, recv: pipelined along the ring
            traffic = nbytes
        return self.collective_s + traffic / self.link_bytes_per_s


MODEL = CostModel()

# Operations that make a view or read metadata: no kernel runs on a real GPU.
FREE_OPS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "expand",
    "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "narrow", "select", "chunk",
    "split", "split_with_sizes", "tensor_split", "unbind", "movedim", "moveaxis", "swapaxes",
    "swapdims", "as_strided", "detach", "detach_", "diagonal", "alias", "view_as_real",
    "view_as_complex", "real", "imag", "unfold", "__get__", "__set__", "requires_grad_",
    "retain_grad", "register_hook", "type_as", "__reversed__", "__iter__", "__contains__",
    "_make_subclass", "is_shared", "share_memory_", "storage", "has_names",
})

# Matrix products: 2 FLOPs per multiply-add; `inner` is the length of the summed dimension.
_MATMUL_FIRST_OPERAND = {"linear": 0, "matmul": 0, "__matmul__": 0, "__rmatmul__": 1, "mm": 0,
                         "bmm": 0, "mv": 0, "addmm": 1, "addbmm": 1, "baddbmm": 1, "addmv": 1,
                         "dot": 0, "vdot": 0, "inner": 0}
_CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "_conv_forward", "convolution"})
_TRANSPOSED_CONVOLUTIONS = frozenset({"conv_transpose1d", "conv_transpose2d",
                                      "conv_transpose3d"})


# The operations whose cost can be bound by arithmetic rather than memory traffic.
FLOP_OPS = frozenset({*_MATMUL_FIRST_OPERAND, *_CONVOLUTIONS, *_TRANSPOSED_CONVOLUTIONS,
                      "einsum", "scaled_dot_product_attention"})


def _tensor(value):
    return value if isinstance(value, torch.Tensor) else None


def flops(name: str, args: tuple, out) -> float:
    """Arithmetic of one operation: matrix products and convolutions; 0 for the rest (they
    are bound by memory traffic)."""
    position = _MATMUL_FIRST_OPERAND.get(name)
    out = _tensor(out)
    if position is not None:
        first = args[position] if len(args) > position else None
        if not isinstance(first, torch.Tensor) or out is None or first.dim() == 0:
            return 0.0
        return 2.0 * max(out.numel(), 1) * first.shape[-1]
    if name in _CONVOLUTIONS and len(args) > 1 and out is not None:
        weight = _tensor(args[1])
        if weight is not None and weight.dim() > 1:
            return 2.0 * out.numel() * (weight.numel() // weight.shape[0])
    if name in _TRANSPOSED_CONVOLUTIONS and len(args) > 1:
        source, weight = _tensor(args[0]), _tensor(args[1])
        if source is not None and weight is not None and weight.dim() > 1:
            return 2.0 * source.numel() * (weight.numel() // weight.shape[0])
    if name == "einsum" and args and isinstance(args[0], str):
        operands = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:]
        return einsum_flops(args[0], operands)
    if name == "scaled_dot_product_attention" and len(args) > 2 and out is not None:
        query, key = _tensor(args[0]), _tensor(args[1])
        if query is not None and key is not None and key.dim() > 1:
            return 2.0 * (query.numel() + out.numel()) * key.shape[-2]
    return 0.0


def einsum_flops(equation: str, operands) -> float:
    """`torch.einsum`: 2 FLOPs per combination of all the equation's letters (a product)."""
    sizes: dict[str, int] = {}
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    for letters, operand in zip(inputs, operands):
        operand = _tensor(operand)
        if operand is None or "." in letters or len(letters) != operand.dim():
            return 0.0
        sizes.update(zip(letters, operand.shape))
    return 2.0 * math.prod(sizes.values()) if len(operands) > 1 else 0.0
