"""DDP's gradient buckets on virtual GPUs: each holds one GPU's gradients, as on real GPUs.

DDP copies gradients into flat buckets for its all-reduce, grouping parameters by (dtype,
device) (C++ `compute_bucket_assignment_by_size`). Every virtual GPU's storage is on the host,
so a module spread over two GPUs (Practical 10: a stage per GPU, DDP without device_ids) had
buckets holding both GPUs' gradients, while a storage carries one GPU's label (grader/vgpu/
node.py). With `gradient_as_bucket_view=True` each `.grad` is a view of its bucket, and the
optimizer step met "cuda:3 and cuda:1" (a red team, adv30 A4: 1.5 of 12 for an honest option).

- The assignment DDP makes at construction (`torch.distributed._compute_bucket_assignment_by_size`)
  is made per (virtual GPU, dtype): C++'s own rule within each group, the buckets in its order.
- DDP rebuilds its buckets once, after the first step, in the order the gradients became ready
  (C++ `Reducer::rebuild_buckets`, which groups by the real device only and cannot be reached
  from Python). A module spanning several virtual GPUs keeps its construction buckets instead
  (with DDP's defaults: one per GPU and dtype). Its gradients are all-reduced and averaged as
  before; only the number of buckets, so the simulated overlap of their all-reduces with
  backward, differs from a real GPU's after the first step. A module on one GPU is rebuilt as
  on a real one.
"""
from __future__ import annotations

import weakref


class PerGpuBuckets:
    """The bucket assignment per virtual GPU, and no rebuild for a module on several GPUs."""

    def __init__(self, dist, node):
        self.dist = dist
        self.node = node
        self.original_assignment = dist._compute_bucket_assignment_by_size
        self.original_rebuild = dist.Reducer._rebuild_buckets
        # Reducers of modules spanning several virtual GPUs (DDP keeps one per wrapper).
        self.spanning = weakref.WeakSet()

    def gpu_of(self, tensor):
        return self.node.label_of(tensor)

    def assignment(self, tensors, bucket_size, expect_sparse_gradient=(), tensor_indices=(),
                   logger=None):
        """`_compute_bucket_assignment_by_size` keyed by virtual GPU as well: C++ groups by
        (dtype, device), and here every device is the host."""
        tensors, expect_sparse_gradient = list(tensors), list(expect_sparse_gradient)
        tensor_indices = list(tensor_indices)
        groups: dict[object, list[int]] = {}
        for position, tensor in enumerate(tensors):
            groups.setdefault(self.gpu_of(tensor), []).append(position)
        if len(groups) < 2:
            return self.original_assignment(tensors, bucket_size, expect_sparse_gradient,
                                            tensor_indices, logger)
        buckets, limits = [], []
        for positions in groups.values():
            members = [tensors[p] for p in positions]
            if tensor_indices:   # indices given: the buckets name them, sparse is by them
                found, sizes = self.original_assignment(
                    members, bucket_size, expect_sparse_gradient,
                    [tensor_indices[p] for p in positions], logger)
            else:                # the buckets name positions in the group's own list
                sparse = [expect_sparse_gradient[p] for p in positions] \
                    if expect_sparse_gradient else []
                found, sizes = self.original_assignment(members, bucket_size, sparse, [], logger)
                found = [[positions[i] for i in bucket] for bucket in found]
            buckets += found
            limits += sizes
        if tensor_indices:
            # In the order the tensors were given (for DDP's rebuild: the order they got ready).
            order = {index: position for position, index in enumerate(tensor_indices)}
            key = [order[bucket[0]] for bucket in buckets]
        else:
            key = [min(bucket) for bucket in buckets]   # C++ sorts by a bucket's least index
        ranked = sorted(range(len(buckets)), key=key.__getitem__)
        return [buckets[i] for i in ranked], [limits[i] for i in ranked]

    def watch(self, ddp) -> None:
        """After DDP's construction: note its reducer if its module spans several GPUs."""
        reducer = getattr(ddp, "reducer", None)
        gpus = {self.gpu_of(p) for p in ddp.module.parameters() if p.requires_grad}
        if reducer is not None and len(gpus) > 1:
            self.spanning.add(reducer)

    def rebuild(self, reducer) -> bool:
        """`Reducer._rebuild_buckets`: False (nothing rebuilt) for a module on several GPUs,
        whose rebuilt buckets would mix them."""
        if reducer in self.spanning:
            return False
        return self.original_rebuild(reducer)

    def install(self, patcher) -> None:
        buckets = self

        def _compute_bucket_assignment_by_size(tensors, bucket_size, expect_sparse_gradient=(),
                                               tensor_indices=(), logger=None):
            return buckets.assignment(tensors, bucket_size, expect_sparse_gradient,
                                      tensor_indices, logger)

        def _rebuild_buckets(reducer):
            return buckets.rebuild(reducer)

        patcher.set(self.dist, "_compute_bucket_assignment_by_size",
                    _compute_bucket_assignment_by_size)
        patcher.set(self.dist.Reducer, "_rebuild_buckets", _rebuild_buckets)
