"""The node's shortcut into its mode for torch functions written in Python (F.relu,
Tensor.backward, torch.split): the same devices, errors, costs and hooks as torch's own path."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import torch.overrides
from torch.overrides import TorchFunctionMode

from grader.vgpu.c_path import ENV_PURE_PYTHON, c_module

TORCH_HANDLE = torch.overrides.handle_torch_function
BUILT = c_module() is not None


@pytest.fixture(autouse=True, params=["c", "python"])
def implementation(request, monkeypatch):
    """Every test runs against the C shortcut (where it was built) and the Python one."""
    if request.param == "c":
        if not BUILT:
            pytest.skip("the C module was not built here")
        monkeypatch.delenv(ENV_PURE_PYTHON, raising=False)
        return c_module()
    monkeypatch.setenv(ENV_PURE_PYTHON, "1")
    return None


def test_the_node_installs_the_shortcut_of_its_own_path(vnode, implementation):
    vnode(2)
    if implementation is None:
        assert callable(F.handle_torch_function) and \
            type(F.handle_torch_function).__name__ == "function", (
                "without the C module the shortcut should be the Python function")
    else:
        assert isinstance(F.handle_torch_function, implementation.Shortcut), (
            "where the C module is built the node should install its Shortcut, got "
            f"{type(F.handle_torch_function)}")


def test_the_shortcut_is_in_place_while_the_node_is_and_gone_after(vnode):
    handle = vnode(2)
    assert F.handle_torch_function is not TORCH_HANDLE, (
        "torch.nn.functional should call the node's shortcut while a node is active")
    assert F.handle_torch_function.__wrapped__ is TORCH_HANDLE
    handle.deactivate()
    assert F.handle_torch_function is TORCH_HANDLE, "deactivating should give torch its own back"
    assert torch.overrides.handle_torch_function is TORCH_HANDLE


def test_python_functions_keep_devices_mismatches_and_the_clock(vnode):
    handle = vnode(2)
    clock = handle.node.clock
    x = torch.randn(8, 8, device="cuda:1", requires_grad=True)
    before = clock.busy_until[1]
    out = F.relu(x)
    assert str(out.device) == "cuda:1", f"F.relu of a cuda:1 tensor gave {out.device}"
    assert clock.busy_until[1] > before, "F.relu on cuda:1 should take time on cuda:1's stream"
    parts = torch.split(out, 4)
    assert [str(p.device) for p in parts] == ["cuda:1", "cuda:1"]
    with pytest.raises(RuntimeError, match="same device"):
        F.mse_loss(out, torch.zeros(8, 8, device="cuda:0"))
    out.sum().backward()  # Tensor.backward is written in Python too: laid on the clock
    assert x.grad is not None and str(x.grad.device) == "cuda:1"


def test_a_mode_of_the_script_on_top_still_sees_every_python_function(vnode):
    vnode(2)
    seen = []

    class Logging(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    x = torch.randn(4, 4, device="cuda:1")
    with Logging():
        out = F.relu(x)
    assert "relu" in seen, f"the script's own mode saw {seen}, not F.relu"
    assert str(out.device) == "cuda:1", "under the script's mode the node still labels outputs"


def test_a_tensor_subclass_still_gets_its_own_torch_function(vnode):
    vnode(2)
    calls = []

    class Tagged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.randn(4, 4, device="cuda:0").as_subclass(Tagged)
    out = F.relu(x)
    assert "relu" in calls, f"the subclass's __torch_function__ saw {calls}, not F.relu"
    assert str(out.device) == "cuda:0"


def test_an_error_inside_the_mode_leaves_the_mode_on_the_stack(vnode):
    vnode(2)
    depth = torch._C._len_torch_function_stack()
    with pytest.raises(RuntimeError, match="same device"):
        F.mse_loss(torch.zeros(2, device="cuda:0"), torch.zeros(2, device="cuda:1"))
    assert torch._C._len_torch_function_stack() == depth, (
        "the shortcut should push the node's mode back even when the op raised")
    assert str(F.relu(torch.ones(2, device="cuda:1")).device) == "cuda:1"


def test_keyword_arguments_reach_the_function(vnode):
    vnode(2)
    x = torch.tensor([-1.0, 2.0], device="cuda:1")
    out = F.leaky_relu(x, negative_slope=0.5)
    assert out.tolist() == [-0.5, 2.0], f"F.leaky_relu(x, negative_slope=0.5) gave {out}"
    assert str(out.device) == "cuda:1"


def test_a_declining_mode_result_goes_on_to_the_arguments_as_torch_does(implementation):
    from grader.vgpu.python_dispatch import shortcut

    class Declines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return NotImplemented

    class Answers(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "answered by the argument"

    handle = shortcut(TORCH_HANDLE, Declines, implementation)
    value = torch.zeros(2).as_subclass(Answers)
    with Declines():
        result = handle(F.relu, (value,), value)
        assert torch._C._len_torch_function_stack() == 1, "the mode should be back on the stack"
    assert result == "answered by the argument"
