"""torch.save and torch.load on virtual GPUs, as on real ones.

A virtual GPU's tensors live in host memory, so PyTorch would save them as `cpu` and load them
back on the host, and `torch.load(..., map_location="cuda:1")` would fail ("Storage device not
recognized: cuda"): the checkpoint code of PyTorch's DDP tutorial
(`map_location={"cuda:0": f"cuda:{rank}"}`) could not run. The node puts its own entry first
in torch.serialization's registry of storage locations: a storage on virtual cuda:N is saved
as "cuda:N", and one restored to "cuda:N" (saved there, or mapped there) is loaded into host
memory and labelled cuda:N, with its memory counted, as loading onto a GPU allocates it;
`storage.cuda(N)` (a `map_location` function's) makes such a copy.
"""
from __future__ import annotations

import torch

from grader.vgpu.devices import parse
from grader.vgpu.node import Node

# Before PyTorch's own entries (cpu is 10, cuda 20): the node's storages are host storages.
PRIORITY = 0


def install(patcher, node: Node) -> None:
    import torch.serialization as serialization

    def tag(storage):
        untyped = getattr(storage, "_untyped_storage", storage)
        index = node.labels.get(getattr(untyped, "_cdata", None))
        return None if index is None else f"cuda:{index}"

    def restore(storage, location):
        if not (location == "cuda" or location.startswith("cuda:")):
            return None
        device = torch.device(location)
        if device.index is not None and device.index >= node.n:
            # PyTorch's words for a checkpoint saved on a GPU this node does not have.
            raise RuntimeError(
                f"Attempting to deserialize object on CUDA device {device.index} but "
                f"torch.cuda.device_count() is {node.n}. Please use torch.load with "
                "map_location to map your storages to an existing device.")
        node.label_loaded_storage(getattr(storage, "_untyped_storage", storage),
                                  parse(node, device))
        return storage

    def storage_cuda(self, device=None, non_blocking=False):
        # `map_location=lambda storage, location: storage.cuda(rank)` (older DDP examples):
        # a copy of the host storage on virtual cuda:N, or the storage if it is there already.
        index = parse(node, "cuda" if device is None else device)
        if node.labels.get(self._cdata) == index:
            return self
        copy = self.clone()
        node.label_loaded_storage(copy, index)
        return copy
    patcher.set(torch.UntypedStorage, "cuda", storage_cuda)
    patcher.set(serialization, "_package_registry",
                sorted([(PRIORITY, tag, restore), *serialization._package_registry],
                       key=lambda entry: entry[0]))
