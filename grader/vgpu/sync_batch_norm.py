"""SyncBatchNorm across processes on virtual GPUs, with the statistics of the global batch.

torch's own `SyncBatchNorm.forward` still decides everything it decides on real GPUs (eval
mode, one process, `num_batches_tracked`, momentum None, the process group, an input left on
the host); only the step that needs CUDA kernels (`batch_norm_stats`, `batch_norm_elemt`,
...: the autograd Function torch keeps as `batchnorm.sync_batch_norm`) is replaced, by plain
operations on the host tensors under the virtual GPUs:

- each rank's per-channel sum, sum of squares and element count are all-reduced over the
  group (gloo), so the mean and variance are those of every rank's rows together;
- gradients flow back through that all-reduce (its backward all-reduces the gradients of the
  sums, as torch's CUDA backward all-reduces `sum_dy` and `sum_dy_xmu`), so each rank's input
  gradient carries the other ranks' losses as on real GPUs;
- running_mean / running_var move by `momentum` towards the global mean and the global
  unbiased variance, as `batch_norm_gather_stats_with_counts` does.
"""
from __future__ import annotations

import torch

# The sums are kept in double: E[x^2] - E[x]^2 in float32 loses digits that CUDA's Welford
# merge keeps, and the statistics then differ from one BatchNorm on the whole batch.
_STATS_DTYPE = torch.float64
_LOW_PRECISION = (torch.float16, torch.bfloat16)


class SummedOverGroup(torch.autograd.Function):
    """The sum over the group's ranks of a tensor; its gradient is summed over them too (each
    rank's sums feed every rank's normalisation, hence every rank's loss)."""

    @staticmethod
    def forward(ctx, local, group):
        ctx.group = group
        return _all_reduced(local.clone(), group)

    @staticmethod
    def backward(ctx, grad):
        return _all_reduced(grad.clone(memory_format=torch.contiguous_format), ctx.group), None


def _all_reduced(tensor, group):
    from grader.vgpu.distributed import library_collectives
    import torch.distributed as dist
    with library_collectives("sync_batch_norm"):
        dist.all_reduce(tensor, group=group)
    return tensor


class GlobalBatchNorm:
    """Stands where torch keeps its CUDA SyncBatchNorm Function; called as it is, with
    `apply(input, weight, bias, running_mean, running_var, eps, momentum, group, world_size)`."""

    @staticmethod
    def apply(input, weight, bias, running_mean, running_var, eps, momentum, process_group,
              world_size):
        channels = input.shape[1]
        reduced = [0, *range(2, input.dim())]
        wide = input.to(_STATS_DTYPE)
        count = input.new_full((1,), input.numel() // max(channels, 1), dtype=_STATS_DTYPE)
        local = torch.cat([wide.sum(reduced), (wide * wide).sum(reduced), count])
        total = SummedOverGroup.apply(local, process_group)
        sums, squares, n = total[:channels], total[channels:2 * channels], total[2 * channels]
        mean = sums / n
        variance = squares / n - mean * mean     # biased, as the normalisation uses
        _update_running_stats(running_mean, running_var, mean, variance, n, momentum)

        compute = torch.float32 if input.dtype in _LOW_PRECISION else input.dtype
        shape = [1, channels] + [1] * (input.dim() - 2)
        invstd = torch.rsqrt(variance + eps)
        out = (input.to(compute) - mean.to(compute).view(shape)) * invstd.to(compute).view(shape)
        if weight is not None:
            out = out * weight.to(compute).view(shape)
        if bias is not None:
            out = out + bias.to(compute).view(shape)
        return out.to(input.dtype)


def _update_running_stats(running_mean, running_var, mean, variance, n, momentum) -> None:
    with torch.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
        if running_var is not None:
            unbiased = variance * n / (n - 1)
            running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))


def install(patcher) -> None:
    import torch.nn.modules.batchnorm as batchnorm
    patcher.set(batchnorm, "sync_batch_norm", GlobalBatchNorm)
