"""What virtual GPUs cannot emulate stops with a clear message, never a silent wrong answer."""
import importlib

import pytest
import torch
import torch.nn as nn

from grader.vgpu.unsupported import VirtualGPUUnsupported


def test_torch_compile_runs_the_eager_model(vnode):
    vnode(2)
    model = nn.Linear(2, 2)
    assert torch.compile(model) is model
    assert torch.compile(mode="max-autotune")(model) is model


@pytest.mark.parametrize("use", [
    lambda: torch.cuda.CUDAGraph(),
    lambda: torch.cuda.FloatTensor(3),
    lambda: torch.cuda.utilization(0),
    lambda: torch.cuda.nccl.version(),
])
def test_refused_features_name_themselves(vnode, use):
    vnode(2)
    with pytest.raises(VirtualGPUUnsupported, match="not supported on virtual GPUs"):
        use()


def test_fsdp_is_refused_when_imported(vnode):
    vnode(2)
    from torch.distributed.fsdp import FullyShardedDataParallel
    with pytest.raises(VirtualGPUUnsupported, match="FSDP"):
        FullyShardedDataParallel(nn.Linear(2, 2))


def test_triton_import_is_refused(vnode):
    vnode(2)
    with pytest.raises(ImportError, match="Triton kernels is not supported on virtual GPUs"):
        importlib.import_module("triton")


def test_deactivation_restores_plain_torch(vnode):
    plain = (torch.cuda.is_available(), torch.cuda.device_count())  # real GPUs, if any
    handle = vnode(2)
    assert (torch.cuda.is_available(), torch.cuda.device_count()) == (True, 2)
    handle.deactivate()
    assert (torch.cuda.is_available(), torch.cuda.device_count()) == plain
    assert torch.ones(1).device == torch.device("cpu")
