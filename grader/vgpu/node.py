"""The virtual node: how many GPUs it has, which virtual GPU owns each storage, and memory.

Device labels live on *storages*, not on tensor objects: a view, `.data`, a parameter swapped
by `Module.to` and an optimizer's state all share (or take over) a storage, so the label
follows them for free, exactly as real device memory would.
"""
from __future__ import annotations

import threading
import weakref

import torch

from grader.vgpu.c_path import c_module
from grader.vgpu.random_state import DeviceGenerators

# PyTorch's caching allocator rounds every block up to 512 bytes; do the same so the numbers
# students read from `memory_allocated` look like the ones a real GPU gives.
ALLOCATION_GRANULE = 512
# The identity of a tensor's storage (what labels are keyed by): PyTorch's own, about three
# times cheaper than `tensor.untyped_storage()._cdata`, which it equals.
storage_id = getattr(torch._C, "_storage_id", None) or (
    lambda tensor: tensor.untyped_storage()._cdata)
VIRTUAL_TOTAL_MEMORY = 80 * 2**30  # an 80 GiB card, the course cluster's A100/H100 size
VIRTUAL_DEVICE_NAME = "Virtual GPU (pdl-autograder)"


def rounded(nbytes: int) -> int:
    return -(-nbytes // ALLOCATION_GRANULE) * ALLOCATION_GRANULE


class InvalidDeviceOrdinal(RuntimeError):
    pass


class Node:
    def __init__(self, n_gpus: int):
        from grader.vgpu.clock import SimulatedClock
        self.clock = SimulatedClock(n_gpus)
        self.random = DeviceGenerators()   # each GPU's own random numbers
        self.resize(n_gpus)
        self.labels: dict[int, int] = {}
        self._watched: dict[int, tuple] = {}  # id(weak reference) -> (it, key, GPU, bytes)
        # Which entry of the clock's tape last wrote each storage (backward_schedule).
        self.producers: dict[int, int] = {}
        self._tls = threading.local()
        # The hot paths in C, or None: the Python ones (grader/vgpu/c_path.py).
        self.c_path = c_module()
        # Where the C path runs, its lock, which the C sections wait on without calling into
        # Python (grader/vgpu/_fastpath.c, GilLock); the Python sections take either alike.
        self._lock = self.c_path.GilLock() if self.c_path is not None else threading.Lock()
        # The weak references' callback, bound once (label_storage runs for every new tensor).
        self._on_release = self._release

    def resize(self, n_gpus: int) -> None:
        """Change the node's size (harnesses reuse one process for several node sizes)."""
        if n_gpus < 1:
            raise ValueError(f"a virtual node needs at least one GPU, got {n_gpus}")
        old = getattr(self, "n", 0)
        self.n = n_gpus
        self.clock.resize(n_gpus)
        self.devices = [torch.device("cuda", i) for i in range(n_gpus)]
        grow = max(0, n_gpus - old)
        self.allocated = getattr(self, "allocated", [])[:n_gpus] + [0] * grow
        self.peak = getattr(self, "peak", [])[:n_gpus] + [0] * grow

    # -- the current device, per thread as in CUDA ------------------------------------------
    def current_device(self) -> int:
        return getattr(self._tls, "device", 0)

    def set_current_device(self, index: int) -> None:
        self.check_ordinal(index)
        self._tls.device = index

    def check_ordinal(self, index: int) -> None:
        if not 0 <= index < self.n:
            # The text CUDA gives for a device that does not exist on this node.
            raise InvalidDeviceOrdinal(
                "CUDA error: invalid device ordinal\n"
                f"(the virtual node has {self.n} GPU(s): cuda:0 .. cuda:{self.n - 1}; "
                f"cuda:{index} does not exist)"
            )

    # -- labels --------------------------------------------------------------------------------
    def label_of(self, tensor: torch.Tensor) -> int | None:
        try:
            return self.labels.get(storage_id(tensor))
        except (RuntimeError, NotImplementedError, TypeError):
            return None  # sparse and other storage-less tensors live on the CPU here

    def label(self, tensor: torch.Tensor, index: int | None) -> None:
        """Mark the tensor's storage as living on cuda:index (None: the host)."""
        if index is None:
            return
        try:
            key = storage_id(tensor)
        except (RuntimeError, NotImplementedError, TypeError):
            return
        if key not in self.labels:
            self.label_storage(tensor, key, index)

    def label_storage(self, tensor: torch.Tensor, key: int, index: int) -> None:
        """`label` of a tensor whose storage (`key`) has no label yet."""
        self._label(tensor.untyped_storage(), key, index)

    def label_loaded_storage(self, storage, index: int) -> None:
        """Label an untyped storage that torch.load restores to cuda:index, or a copy that
        `storage.cuda(index)` made (grader/vgpu/serialization.py)."""
        if storage._cdata not in self.labels:
            self._label(storage, storage._cdata, index)

    def _label(self, storage, key: int, index: int) -> None:
        nbytes = -(-storage.nbytes() // ALLOCATION_GRANULE) * ALLOCATION_GRANULE
        # A weak reference that tells when PyTorch frees the storage (also one autograd saved).
        watch = weakref.ref(storage, self._on_release)
        # Made before the lock is taken: making it may start a garbage collection, which may
        # free another labelled storage, whose callback (_release) takes the same lock.
        record = (watch, key, index, nbytes)
        with self._lock:
            self.labels[key] = index
            self._watched[id(watch)] = record
            allocated = self.allocated[index] = self.allocated[index] + nbytes
            if allocated > self.peak[index]:
                self.peak[index] = allocated

    def _release(self, watch) -> None:
        with self._lock:
            found = self._watched.pop(id(watch), None)
            if found is None:
                return
            _, key, index, nbytes = found
            if self.labels.pop(key, None) is not None and index < self.n:
                self.allocated[index] -= nbytes
            self.producers.pop(key, None)

    # -- memory statistics ------------------------------------------------------------------
    def reset_peak(self, index: int) -> None:
        with self._lock:
            self.peak[index] = self.allocated[index]


_node: Node | None = None


def get_node() -> Node | None:
    return _node


def set_node(node: Node | None) -> None:
    global _node
    _node = node
