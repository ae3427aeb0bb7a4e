"""A shorter way into the node's mode for the torch functions written in Python.

`F.relu`, `Tensor.backward`, `torch.split` and the other functions torch writes in Python hand
a call to an active torch-function mode through `torch.overrides.handle_torch_function`, which
collects the overloaded arguments and their types and pops the mode with a generator context on
every call. At the sizes the checks use (DIM 64) that detour cost more than the node's own
bookkeeping of the op (benchmarks/vgpu_overhead.py). While the node's mode is the only one on
the thread's stack, the call goes to it straight away, popped and pushed back around the call
as PyTorch does; the mode reads neither the types nor the overloaded arguments. Anything else
(a mode of the script's own, torch functions disabled) takes torch's own path, unchanged.
Where the node's C module was built (grader/vgpu/c_path.py) the shortcut is its `Shortcut`,
the same steps without a Python frame per call.
"""
from __future__ import annotations

import sys

import torch
import torch.overrides

_pop_mode = torch._C._pop_torch_function_stack
_push_mode = torch._C._push_on_torch_function_stack
_modes_on_stack = torch._C._len_torch_function_stack
_modes_enabled = torch._C._is_torch_function_mode_enabled


def shortcut(torch_handle, mode_type, c_module=None):
    """`torch_handle` (torch.overrides.handle_torch_function) that hands the call straight to
    a lone mode of `mode_type`: `c_module`'s Shortcut where given, else in Python."""
    if c_module is not None:
        fast = c_module.Shortcut(torch_handle, mode_type, _modes_on_stack, _modes_enabled,
                                 _pop_mode, _push_mode)
        fast.__wrapped__ = torch_handle
        fast.__doc__ = torch_handle.__doc__
        return fast

    def handle_torch_function(public_api, relevant_args, *args, **kwargs):
        if _modes_on_stack() == 1 and _modes_enabled():
            mode = _pop_mode()
            try:
                if type(mode) is mode_type:
                    result = mode.__torch_function__(public_api, (), args, kwargs)
                    if result is not NotImplemented:
                        return result
                    # What torch does next: ask the arguments' own __torch_function__ (with
                    # the mode off the stack, torch's path goes straight there).
                    return torch_handle(public_api, relevant_args, *args, **kwargs)
            finally:
                _push_mode(mode)
        return torch_handle(public_api, relevant_args, *args, **kwargs)

    handle_torch_function.__wrapped__ = torch_handle
    handle_torch_function.__doc__ = torch_handle.__doc__
    return handle_torch_function


def install(patcher, mode_type, c_module=None) -> None:
    """Every torch module imported so far that calls torch's handle_torch_function calls the
    shortcut instead (torch.overrides' too, for those imported later)."""
    torch_handle = torch.overrides.handle_torch_function
    if getattr(torch_handle, "__wrapped__", None) is not None:
        return  # installed already (a node made twice in one process)
    fast = shortcut(torch_handle, mode_type, c_module)
    for name, module in list(sys.modules.items()):
        if name.startswith("torch") and module is not None \
                and getattr(module, "handle_torch_function", None) is torch_handle:
            patcher.set(module, "handle_torch_function", fast)
