"""A script that replaces a Tensor method with its own function calling the saved original
(a TA's audit: Task 5's baton passes counted by wrapping `torch.Tensor.to` for one forward
pass) runs on virtual GPUs as on a real one: PyTorch hands the node the replacement, the node
runs the original, and the script's function runs once per call, not again inside the node."""
from __future__ import annotations

import pytest
import torch

from grader.vgpu.c_path import ENV_PURE_PYTHON
from grader.vgpu.stand_ins import original_of


@pytest.fixture(params=["c", "python"])
def node_path(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setenv(ENV_PURE_PYTHON, "1")
    else:
        monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
    return request.param


def test_a_counter_wrapping_tensor_to_counts_each_call_once(vnode, node_path, monkeypatch):
    handle = vnode(2)
    assert (handle.node.c_path is None) == (node_path == "python")
    original = torch.Tensor.to
    calls, copies = [], []

    def counting_to(tensor, *args, **kwargs):
        out = original(tensor, *args, **kwargs)
        calls.append(str(out.device))
        if out.device != tensor.device:
            copies.append(str(out.device))
        return out

    x = torch.randn(4, 4, device="cuda:0")
    monkeypatch.setattr(torch.Tensor, "to", counting_to)
    y = x.to("cuda:1")            # a copy to GPU 1
    same = y.to("cuda:1")         # already there: the tensor itself
    back = y.cuda(0)              # .cuda() is no .to() call of the script's
    monkeypatch.undo()
    assert (str(y.device), same is y, str(back.device)) == ("cuda:1", True, "cuda:0")
    assert calls == ["cuda:1", "cuda:1"], (
        f"the script's counter should run once per x.to() it made; it ran for {calls}")
    assert copies == ["cuda:1"]
    assert torch.equal(back.cpu(), x.cpu()), "the data went to GPU 1 and back unchanged"


def test_a_generic_op_wrapped_the_same_way_runs_once_on_the_right_gpu(vnode, node_path,
                                                                      monkeypatch):
    vnode(2)
    original = torch.Tensor.add
    seen = []

    def logging_add(tensor, *args, **kwargs):
        seen.append(tensor.device)
        return original(tensor, *args, **kwargs)

    a = torch.ones(3, device="cuda:1")
    monkeypatch.setattr(torch.Tensor, "add", logging_add)
    out = a.add(a)
    monkeypatch.undo()
    assert str(out.device) == "cuda:1" and out.tolist() == [2.0, 2.0, 2.0]
    assert len(seen) == 1


def test_only_a_replacement_installed_on_the_tensor_class_stands_in(monkeypatch):
    original = torch.Tensor.to

    def counting_to(tensor, *args, **kwargs):
        return original(tensor, *args, **kwargs)

    def unrelated(tensor):
        return tensor

    assert original_of(torch.relu) is None and original_of(unrelated) is None
    monkeypatch.setattr(torch.Tensor, "to", counting_to)
    assert original_of(counting_to) is original
