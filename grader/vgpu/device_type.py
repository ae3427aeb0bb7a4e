"""`torch.device(1)`: an index alone names a GPU, as on a node with CUDA.

torch.device's constructor is C++: given an int it asks for "the current accelerator", and a CPU
build of torch has none ("Cannot access accelerator device when none is available"), so a
student's `torch.device(gpu)` stopped every run on virtual GPUs. torch.device cannot be
subclassed, so the name `torch.device` is given a stand-in class whose calls make real
torch.device objects (an int alone becomes `cuda:N`, everything else is passed through) and
which answers `isinstance`/`issubclass` for them, so nothing else tells the two apart. Pickles
of a device name `torch.device` by reference: while the stand-in is in place they name it, which
makes the same real device where it is loaded, with or without virtual GPUs.
"""
from __future__ import annotations

import copyreg

import torch

REAL_DEVICE = torch.device


class _DeviceMeta(type):
    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and type(args[0]) is int:
            return REAL_DEVICE("cuda", args[0])
        return REAL_DEVICE(*args, **kwargs)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, REAL_DEVICE)

    def __subclasscheck__(cls, subclass) -> bool:
        return issubclass(subclass, REAL_DEVICE)

    def __getattr__(cls, name):
        return getattr(REAL_DEVICE, name)


class device(metaclass=_DeviceMeta):  # noqa: N801  (torch's own name)
    __doc__ = REAL_DEVICE.__doc__


device.__module__ = "torch"
device.__qualname__ = "device"


def _reduce(value):
    """A device as pickle saves it: by the name torch.device, which must be the object it
    calls (pickle checks), so the stand-in where it is in place."""
    arguments = (value.type,) if value.index is None else (value.type, value.index)
    return (device if torch.device is device else REAL_DEVICE), arguments


def install(patcher) -> None:
    patcher.set(torch, "device", device)
    copyreg.pickle(REAL_DEVICE, _reduce)
