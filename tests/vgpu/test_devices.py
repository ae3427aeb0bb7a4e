"""Tensors and modules on virtual GPUs report and enforce devices as PyTorch on real GPUs does."""
import pytest
import torch
import torch.nn as nn


def test_cuda_answers_as_an_n_gpu_node(vnode):
    vnode(3)
    assert torch.cuda.is_available() and torch.cuda.device_count() == 3
    assert torch.cuda.current_device() == 0
    with torch.cuda.device(2):
        assert torch.cuda.current_device() == 2
        assert torch.zeros(1, device="cuda").device == torch.device("cuda:2")
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(1)
    assert torch.randn(2).cuda().device == torch.device("cuda:1")
    torch.cuda.set_device(0)
    assert "Virtual" in torch.cuda.get_device_name(0)
    assert torch.cuda.get_device_properties(1).total_memory > 0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) >= 0.0


def test_factories_moves_and_views_carry_the_device(vnode):
    vnode(2)
    a = torch.ones(4, 4, device="cuda:1")
    assert a.device == torch.device("cuda:1") and a.is_cuda and a.get_device() == 1
    assert a[1:].device == a.t().device == a.data.device == torch.device("cuda:1")
    assert (a * 2).device == torch.device("cuda:1")
    assert torch.zeros_like(a).device == torch.device("cuda:1")
    assert a.new_zeros(3).device == torch.device("cuda:1")
    b = a.to("cuda:0")
    assert b.device == torch.device("cuda:0") and a.device == torch.device("cuda:1")
    assert b.data_ptr() != a.data_ptr(), "a move between GPUs must be a real copy"
    assert a.to("cuda:1") is a, "moving to the device a tensor is on is a no-op, as in PyTorch"
    assert b.cpu().device == torch.device("cpu") and not b.cpu().is_cuda
    assert a.to(0).device == torch.device("cuda:0")
    assert "device='cuda:1'" in repr(a)


def test_mixing_devices_raises_pytorchs_message(vnode):
    vnode(2)
    a = torch.ones(3, device="cuda:0")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                       "found at least two devices, cuda:0 and cuda:1!"):
        a + torch.ones(3, device="cuda:1")
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        torch.cat([a, torch.ones(3)])
    layer = nn.Linear(3, 2).to("cuda:1")
    with pytest.raises(RuntimeError, match="same device"):
        layer(a)
    # A host scalar mixes with any device, as in PyTorch.
    assert (a * torch.tensor(2.0)).device == torch.device("cuda:0")
    # Comparisons that hand a Python value back compare on one device too (Practical 4's
    # `torch.allclose(final_output, output.cpu())` fails on real GPUs).
    for compare in (torch.allclose, torch.equal):
        with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
            compare(a, torch.ones(3))
        assert compare(a, torch.ones(3, device="cuda:0"))


def test_invalid_ordinal_and_host_only_operations(vnode):
    vnode(2)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.zeros(1, device="cuda:2")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.ones(1).to("cuda:5")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.cuda.set_device(2)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        torch.ones(2, device="cuda:0").numpy()
    assert torch.ones(2, device="cuda:0").cpu().numpy().tolist() == [1.0, 1.0]


def test_numpy_with_force_copies_to_the_host_as_cpu_does(vnode):
    """`numpy(force=True)` is PyTorch's detach().cpu().numpy(): on a real GPU it works (a red
    team's honest Practical 4 stopped here with TypeError and scored 0.4 of 9.5, adv32 H2)."""
    vnode(2)
    layer = nn.Linear(3, 2).to("cuda:1")
    out = layer(torch.ones(4, 3, device="cuda:1"))      # requires grad: force detaches it
    with pytest.raises(RuntimeError, match="requires grad"):
        out.cpu().numpy()
    array = out.numpy(force=True)
    assert array.shape == (4, 2) and array.tolist() == out.detach().cpu().numpy().tolist()
    assert torch.ones(2, device="cuda:0").numpy(force=True).tolist() == [1.0, 1.0]


def test_module_parameters_and_gradients_follow_the_module(vnode):
    vnode(2)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    weight = model[0].weight
    model.to("cuda:1")
    assert model[0].weight is weight, "Module.to keeps the Parameter objects, as in PyTorch"
    assert {p.device for p in model.parameters()} == {torch.device("cuda:1")}
    model(torch.randn(5, 4, device="cuda:1")).sum().backward()
    assert {p.grad.device for p in model.parameters()} == {torch.device("cuda:1")}
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    state = optimizer.state[model[0].weight]
    assert state["exp_avg"].device == torch.device("cuda:1")


def test_a_module_moved_by_gpu_index_as_the_ddp_tutorial_does(vnode):
    """`model.to(rank)` (PyTorch's DDP tutorial) means cuda:rank on a GPU machine; on a CPU
    build an int names "the accelerator" and failed with "Cannot access accelerator device"."""
    vnode(2)
    model = nn.Linear(4, 2).to(1)
    assert {p.device for p in model.parameters()} == {torch.device("cuda:1")}
    assert nn.Linear(4, 2).to(device=0).weight.device == torch.device("cuda:0")
    doubled = nn.Linear(4, 2).to(1, torch.float64)
    assert doubled.weight.device == torch.device("cuda:1") and doubled.weight.dtype == torch.float64
    assert nn.Linear(4, 2).to(torch.float16).weight.device == torch.device("cpu")
    assert model(torch.randn(3, 4).to(1)).device == torch.device("cuda:1")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        nn.Linear(4, 2).to(2)


def test_optimizer_over_parameters_on_several_gpus(vnode):
    vnode(3)
    layers = [nn.Linear(4, 4).to(f"cuda:{i}") for i in range(3)]
    x = torch.randn(2, 4, device="cuda:0")
    for i, layer in enumerate(layers):
        x = layer(x.to(f"cuda:{i}"))
    x.sum().backward()
    for optimizer in (torch.optim.Adam, torch.optim.SGD, torch.optim.AdamW):
        optimizer([p for layer in layers for p in layer.parameters()], lr=0.1).step()
    assert [layer.weight.device.index for layer in layers] == [0, 1, 2]


def test_every_device_move_is_recorded_once(vnode):
    handle = vnode(2)
    events = []
    handle.trace.listeners.append(events.append)
    x = torch.ones(8, device="cuda:0")
    x.to("cuda:0")                       # a .to() call that moves nothing
    y = x.to("cuda:1")                   # a real transfer
    x.to(torch.float64)                  # a dtype change: no device move at all
    torch.empty(8, device="cuda:0").copy_(y)
    moves = [(e["event"], e["src"], e["dst"], e.get("copied", True), e["bytes"]) for e in events
             if e["event"] in ("to", "transfer")]
    assert moves == [("to", "cuda:0", "cuda:0", False, 0), ("to", "cuda:0", "cuda:1", True, 32),
                     ("transfer", "cuda:1", "cuda:0", True, 32)]
    # The site is the user's line, not a line of torch or of the grader.
    assert all("test_devices.py:" in e["site"] for e in events if e["event"] in ("to", "transfer"))


def test_patched_tensor_attributes_pass_for_the_descriptors_they_replace(vnode):
    """torch._dynamo (2.11) lists Tensor's C attribute getters on import by reading
    `fn.__self__.__objclass__` and `fn.__self__.__name__`; a plain property broke that import
    (and with it every optimizer) on virtual GPUs. Same list with and without the node."""
    import types

    from torch.overrides import get_default_nowrap_functions

    def banned_attrs():  # torch 2.11's torch._dynamo.variables.torch_function.banned_attrs
        return sorted(fn.__self__.__name__ for fn in get_default_nowrap_functions()
                      if isinstance(fn, types.MethodWrapperType) and fn.__name__ == "__get__"
                      and fn.__self__.__objclass__ is torch._C._TensorBase)

    before = banned_attrs()
    vnode(2)
    assert banned_attrs() == before
    for name in ("device", "is_cuda", "is_cpu", "grad"):
        descriptor = torch.Tensor.__dict__.get(name) or getattr(torch.Tensor, name)
        assert descriptor.__objclass__ is torch._C.TensorBase and descriptor.__name__ == name
    model = torch.nn.Linear(2, 2).to("cuda:1")
    torch.optim.Adam(model.parameters())  # imports torch._dynamo with the node active


def test_the_node_shows_its_gpus_in_cuda_visible_devices_and_gives_the_variable_back(
        vnode, monkeypatch):
    """A job on a GPU node finds CUDA_VISIBLE_DEVICES set (SLURM's --gres): a student's P6
    read `os.environ['CUDA_VISIBLE_DEVICES']` and every run stopped with a KeyError."""
    import os
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PDL_VGPU_FORCE_VIRTUAL", raising=False)
    handle = vnode(3)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1,2"
    assert os.environ["PDL_VGPU_FORCE_VIRTUAL"] == "1"   # children are virtual too
    handle.deactivate()
    assert "CUDA_VISIBLE_DEVICES" not in os.environ and "PDL_VGPU_FORCE_VIRTUAL" not in os.environ


def test_a_visible_devices_variable_already_set_is_left_alone(vnode, monkeypatch):
    import os
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")   # a GPU node's cores, its GPUs hidden
    vnode(2)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
