"""The grader's marks on autograd nodes (grader/vgpu/node_marks.py): out of the script's reach,
and gone with their node."""
import gc

import torch

from grader.vgpu.node_marks import NodeMarks


def test_a_mark_is_the_nodes_alone_and_not_in_its_metadata():
    marks = NodeMarks()
    x = torch.randn(3, requires_grad=True)
    marked, other = (x * 2).sum(), (x * 3).sum()
    assert marks.put(marked.grad_fn, "pass", 7)
    other.grad_fn.metadata.update(marked.grad_fn.metadata)
    assert marks.get(marked.grad_fn, "pass") == 7
    assert marks.get(other.grad_fn, "pass") is None
    assert marked.grad_fn.metadata == {}, (
        f"expected nothing of the grader's in the node's metadata; observed "
        f"{marked.grad_fn.metadata}")


def test_a_mark_outlives_the_nodes_python_object_and_goes_with_the_node():
    marks = NodeMarks()
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).sum()
    marks.put(y.grad_fn, "pass", 1)
    gc.collect()                       # the node's Python object made again on the next read
    assert marks.get(y.grad_fn, "pass") == 1
    del y
    gc.collect()
    assert len(marks) == 0, "expected the mark to go with its node (no graph kept alive)"
