"""`torch.device(1)`: an index alone names a GPU on virtual GPUs, as on a node with CUDA (a CPU
build of torch had stopped every run that wrote it: "Cannot access accelerator device")."""
import io
import pickle

import pytest
import torch
import torch.nn as nn

from grader.vgpu.device_type import REAL_DEVICE


def test_an_index_alone_is_that_gpu(vnode):
    vnode(2)
    gpu = torch.device(1)
    assert gpu == torch.device("cuda:1") == torch.device("cuda", 1)
    assert type(gpu) is REAL_DEVICE and isinstance(gpu, torch.device)
    layer = nn.Linear(4, 4).to(gpu)
    x = torch.randn(3, 4, device=torch.device(0))
    assert x.device == torch.device("cuda:0")
    assert layer(x.to(gpu)).device == next(layer.parameters()).device == gpu


def test_everything_else_is_torchs_own_device(vnode):
    vnode(2)
    assert torch.device("cpu") == REAL_DEVICE("cpu")
    assert torch.device(type="cuda", index=1) == REAL_DEVICE("cuda", 1)
    assert torch.device(torch.device("cuda:0")) == REAL_DEVICE("cuda:0")
    assert not isinstance("cuda:0", torch.device) and issubclass(REAL_DEVICE, torch.device)
    assert torch.device.__doc__ == REAL_DEVICE.__doc__
    with pytest.raises(RuntimeError):
        torch.device("nonsense")


def test_a_device_pickled_on_the_node_loads_as_the_same_device_anywhere(vnode):
    handle = vnode(2)
    gpu = torch.device(1)
    pickled = pickle.dumps({"device": gpu})
    buffer = io.BytesIO()
    torch.save({"device": gpu, "weights": torch.ones(2)}, buffer)
    assert pickle.loads(pickled)["device"] == gpu
    handle.deactivate()
    assert torch.device is REAL_DEVICE
    assert pickle.loads(pickled)["device"] == REAL_DEVICE("cuda", 1)
    buffer.seek(0)
    assert torch.load(buffer, weights_only=True)["device"] == REAL_DEVICE("cuda", 1)
    # and off the node, a device pickles as torch's own again
    assert pickle.loads(pickle.dumps(REAL_DEVICE("cpu"))) == REAL_DEVICE("cpu")
