"""What each nn.Module class of the submission's own was built with, written as plain data.

The HW3 probe builds the student's model itself, as the script's main() builds it, read from
the script's text (grader/harness/hw3_script_call.py). A call it cannot replay (a required
argument set with `+=`, a seed or a config object filled in by the script: adv42 F1) had left
it without a model, and 8.5 points of Tasks 2-5 without a measurement. So the script's own run
records, as each model of a class the submission defines is built, the arguments its
constructor received: the probe builds the model with them (grader/harness/hw3_recorded_call.py),
its DIM, DEPTH and GPU count set to the configuration's.

Values are written as data, never as objects, so that the scoring process loads nothing of
the student's code: numbers, strings, booleans and None as JSON has them; anything else as a
one-key object naming its kind: {"list": [...]}, {"tuple": [...]}, {"dict": [[key, value],
...]}, {"float": "nan"}, {"device": "cuda:1"}, {"dtype": "torch.float32"}, a dataclass or a
namespace of the submission's whose fields are such values ({"dataclass": "Config", "fields":
{...}}, {"namespace": "SimpleNamespace", "fields": {...}}), and what is none of these as
{"object": "<its type's name>"}, which the probe cannot replay.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import types

from grader.vgpu.trace import display_path

EVENT = "constructor"
# Records per class, at most (a model built once or twice; its blocks, of a class of their own,
# many times), and how much of one value is written.
MAX_PER_CLASS = 4
_DEPTH, _ITEMS, _TEXT = 4, 64, 200
_VALUES = 256   # values written per argument, nested ones included
# How far above nn.Module.__init__ the class's own __init__ is looked for (super().__init__()
# is called from it, or from a helper it calls).
_FRAMES = 8
_NAMESPACES = (types.SimpleNamespace, argparse.Namespace)


def _submission_folder() -> str | None:
    root = os.environ.get("PDL_SUBMISSION_ROOT")
    return os.path.abspath(root) + os.sep if root else None


def install(patcher, trace) -> None:
    """nn.Module.__init__ wrapped: a module of a class the submission defines records its
    constructor's arguments (at most MAX_PER_CLASS per class)."""
    import torch
    folder = _submission_folder()
    if folder is None:
        return
    original = torch.nn.Module.__init__
    counts: dict[str, int] = {}
    in_folder: dict = {}   # a constructor's code -> whether it is the submission's (torch's: no)

    def __init__(module, *args, **kwargs):
        original(module, *args, **kwargs)
        if not trace.enabled:
            return
        try:
            found = _constructor_frame(type(module), folder, in_folder)
            if found is None:
                return
            cls, frame = found
            name = cls.__name__
            if counts.get(name, 0) >= MAX_PER_CLASS:
                return
            counts[name] = counts.get(name, 0) + 1
            caller = frame.f_back
            trace.emit(EVENT, cls=name, arguments=arguments_of(frame, folder),
                       file=display_path(caller.f_code.co_filename) if caller else None,
                       line=caller.f_lineno if caller else None)
        except Exception:   # a class of the student's that refuses to be read: not recorded
            return

    __init__.__wrapped__ = original
    patcher.set(torch.nn.Module, "__init__", __init__)


def _constructor_frame(cls, folder: str, in_folder: dict):
    """(cls, the frame of cls's own __init__) where that __init__ is in the submission's files
    and is running just above; else None."""
    init = getattr(_own_init(cls), "__code__", None)
    if init is None:
        return None
    if init not in in_folder:
        in_folder[init] = os.path.abspath(init.co_filename).startswith(folder)
    if not in_folder[init]:
        return None
    frame = sys._getframe(2)
    for _ in range(_FRAMES):
        if frame is None:
            return None
        if frame.f_code is init:
            return cls, frame
        frame = frame.f_back
    return None


def _own_init(cls):
    """The __init__ that Python runs for cls: its own, or its nearest base's."""
    for owner in cls.__mro__:
        if "__init__" in owner.__dict__:
            return owner.__dict__["__init__"]
    return None


def arguments_of(frame, folder: str) -> list[list]:
    """[[name, kind, value as data], ...] of the constructor's parameters (self left out), as
    its frame holds them when nn.Module.__init__ is called."""
    code = frame.f_code
    names = list(code.co_varnames)
    positional, keyword = code.co_argcount, code.co_kwonlyargcount
    kinds = ["positional_only"] * code.co_posonlyargcount
    kinds += ["positional"] * (positional - code.co_posonlyargcount)
    kinds += ["keyword_only"] * keyword
    at = positional + keyword
    if code.co_flags & 0x04:   # CO_VARARGS
        kinds.append("var_positional")
        at += 1
    if code.co_flags & 0x08:   # CO_VARKEYWORDS
        kinds.append("var_keyword")
        at += 1
    values = frame.f_locals
    return [[name, kind, as_data(values[name], folder)]
            for name, kind in list(zip(names[:at], kinds))[1:] if name in values]


def as_data(value, folder: str, depth: int = 0, budget: list | None = None):
    """`value` written as data (the module's docstring says how), at most _VALUES of them."""
    kind = type(value)
    budget = [_VALUES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return {"object": kind.__name__}
    if value is None or kind in (bool, str) and (kind is bool or len(value) <= _TEXT):
        return value
    if kind is int and abs(value) < 2 ** 63:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    torch = sys.modules.get("torch")    # recorded only where torch was imported
    if torch is not None and kind is torch.device:
        return {"device": str(value)}
    if torch is not None and kind is torch.dtype:
        return {"dtype": str(value)}
    if depth >= _DEPTH:
        return {"object": kind.__name__}
    if kind in (list, tuple) and len(value) <= _ITEMS:
        return {kind.__name__: [as_data(v, folder, depth + 1, budget) for v in value]}
    if kind is dict and len(value) <= _ITEMS:
        return {"dict": [[as_data(k, folder, depth + 1, budget),
                          as_data(v, folder, depth + 1, budget)] for k, v in value.items()]}
    fields = _fields_of(value, folder)
    if fields is not None:
        tag = "dataclass" if dataclasses.is_dataclass(kind) else "namespace"
        return {tag: kind.__name__,
                "fields": {k: as_data(v, folder, depth + 1, budget) for k, v in fields.items()}}
    return {"object": kind.__name__}


def _fields_of(value, folder: str) -> dict | None:
    """The fields a config object is rebuilt from: a dataclass of the submission's (its
    fields set by its constructor), or a namespace (SimpleNamespace, argparse's)."""
    kind = type(value)
    if kind in _NAMESPACES:
        held = vars(value)
        return dict(held) if len(held) <= _ITEMS else None
    if not dataclasses.is_dataclass(kind) or not _defined_in(kind, folder):
        return None
    held = vars(value)
    names = [f.name for f in dataclasses.fields(kind) if f.init]
    if len(names) > _ITEMS or any(name not in held for name in names):
        return None
    return {name: held[name] for name in names}


def _defined_in(cls, folder: str) -> bool:
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and os.path.abspath(file).startswith(folder)
