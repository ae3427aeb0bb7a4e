"""The pieces the node is installed from, each built and used alone on a Node of its own
(no activation, nothing patched), as a maintainer would when changing one of them."""
import pytest
import torch

from grader.vgpu.cuda_facade import CudaFunctions, DeviceContext, Stream, bound
from grader.vgpu.dataparallel import VirtualComm
from grader.vgpu.node import ALLOCATION_GRANULE, Node
from grader.vgpu.tensor_patches import DeviceAttributes


def test_cuda_functions_answer_from_their_node():
    node = Node(3)
    cuda = CudaFunctions(node)
    assert cuda.device_count() == 3 and cuda.current_device() == 0
    cuda.set_device("cuda:2")
    assert cuda.current_device() == 2
    node.set_current_device(0)
    x = torch.ones(100)  # 400 bytes: one 512-byte block
    node.label(x, 1)
    assert cuda.memory_allocated(1) == ALLOCATION_GRANULE and cuda.memory_allocated(0) == 0
    assert cuda.memory_stats("cuda:1")["allocated_bytes.all.peak"] == ALLOCATION_GRANULE
    assert cuda.memory_reserved(1) == 2 * 2**20, "reserved in the allocator's 2 MiB segments"
    free, total = cuda.mem_get_info(1)
    assert total - free == 2 * 2**20
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.set_device(3)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.memory_allocated("meta")


def test_stream_and_device_context_classes_bound_to_a_node():
    node = Node(2)
    NodeStream, device = bound(Stream, node), bound(DeviceContext, node)
    assert issubclass(NodeStream, Stream) and NodeStream.__name__ == "Stream"
    assert NodeStream(1).device == torch.device("cuda:1")
    with device(1):
        assert node.current_device() == 1
        assert NodeStream().device == torch.device("cuda:1"), "a stream of the current GPU"
    assert node.current_device() == 0
    assert NodeStream(0) == NodeStream("cuda:0") != NodeStream(1)


def test_device_attributes_read_the_storage_label():
    node = Node(2)
    attributes = DeviceAttributes(node)
    x = torch.ones(4)
    assert attributes.device(x) == torch.device("cpu") and attributes.is_cpu(x)
    node.label(x, 1)
    view = x[1:]
    assert attributes.device(view) == torch.device("cuda:1"), "a view shares its storage"
    assert attributes.is_cuda(view) and not attributes.is_cpu(view)
    assert attributes.get_device(view) == 1


def test_virtual_comm_scatters_by_the_chunk_rule_and_gathers_on_the_destination():
    node = Node(3)
    comm = VirtualComm(node)
    batch = torch.arange(64.0).reshape(64, 1)
    node.label(batch, 0)
    chunks = comm.scatter(batch, [0, 1, 2])
    assert [c.shape[0] for c in chunks] == [22, 22, 20]
    assert [node.label_of(c) for c in chunks] == [0, 1, 2]
    gathered = comm.gather(chunks, 0, 0)
    assert node.label_of(gathered) == 0 and torch.equal(gathered, batch)
    total = comm.reduce_add([torch.ones(2), torch.ones(2) * 2], destination=0)
    assert node.label_of(total) == 0 and total.tolist() == [3.0, 3.0]
    copies = comm.broadcast_coalesced([batch], [0, 2])
    assert copies[0][0] is batch and node.label_of(copies[1][0]) == 2
