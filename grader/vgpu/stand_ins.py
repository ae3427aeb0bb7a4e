"""Tensor methods a script replaced with its own function that calls the saved original.

A student counting Task 5's baton passes may write `original_to = torch.Tensor.to`, then
`torch.Tensor.to = counting_to` where `counting_to` calls `original_to(...)`. PyTorch's C
methods name the function they hand a torch-function mode by looking `Tensor.<name>` up at
that moment, so the mode is handed `counting_to`, not the original it was called as. What ran
is the original: a mode that called `counting_to` again would count twice on a real GPU and,
on virtual GPUs, ask the host for a real CUDA tensor (PyTorch's "Could not run
'aten::empty_strided' with arguments from the 'CUDA' backend"). The modes handle the original.
"""
from __future__ import annotations

import inspect

import torch

_TENSOR_CLASSES = (torch.Tensor, torch._C.TensorBase)
# Each name's method as torch.Tensor resolved it before any script ran (grader.vgpu is
# imported before the script): a script's `torch.Tensor.to = f` shadows TensorBase's.
_ORIGINALS = {name: inspect.getattr_static(torch.Tensor, name) for name in dir(torch.Tensor)}
_SEEN: dict = {}   # function -> the original it stands in for, or None


def original_of(func):
    """The Tensor method that `func` replaced on torch.Tensor (or its C base), or None where
    `func` is no such replacement (torch's own functions, the common case, are answered from
    a dict after their first call)."""
    try:
        return _SEEN[func]
    except KeyError:
        pass
    except TypeError:   # an unhashable callable: nothing a class attribute lookup returns
        return None
    found = None
    for cls in _TENSOR_CLASSES:
        for name, value in list(vars(cls).items()):
            original = _ORIGINALS.get(name)
            if value is func and original is not None and original is not func:
                found = original
                break
        if found is not None:
            break
    if len(_SEEN) < 4096:
        _SEEN[func] = found
    return found
