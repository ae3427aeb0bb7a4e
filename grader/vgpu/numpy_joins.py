"""numpy's joins of the model's outputs, recorded as torch.cat's are (rows.py's `concat`).

Practical 4's Part 2 may combine the chunks' outputs on the host: `outputs = [model(c).detach()
.cpu().numpy() for c in chunks]; final = np.concatenate(outputs)` (or np.vstack), compared by
np.allclose, np.array_equal or `np.abs(a - b).max()`. numpy's calls never reach the virtual
GPUs, so no combination was seen and an honest student lost 2.4 points. A join of numpy's
(concatenate, concat, vstack, row_stack, stack, append) called from the user's code is recorded
here as a `concat`, with the same fields, so the checks' verdict on it is torch.cat's.

Each input is written with the storage of the tensor its memory belongs to: an array made by
`Tensor.numpy()` (or a view of one) keeps that tensor as its `base`, and a host copy made by
`.cpu()` / `.to("cpu")` is written as the tensor it copies (rows.py `copied`), so a chunk's
output brought to the host is still that output. An array whose memory is numpy's own (a copy:
`np.array(t)`, `a.copy()`, anything numpy computed) belongs to no tensor: its storage is None,
never a chunk's output, so Part 1's output copied, cut and glued back combines nothing. Only
joins with an input that is (a copy or part of) a forward pass's input or output are recorded,
as fills are: a dataset built with numpy spends none of the concatenations' budget.
"""
from __future__ import annotations

import functools
import os
import sys

import torch

from grader.vgpu.post_import import when_imported
from grader.vgpu.rows import row_prints
from grader.vgpu.trace import _OWN_CODE, call_site, get_trace

# The joins of whole arrays along an axis. hstack/column_stack join columns of 2-D arrays (no
# rows of a combined batch); np.r_ is an object, not a call.
JOINS = ("concatenate", "concat", "vstack", "row_stack", "stack", "append")


def install(recorder, patcher) -> None:
    """Wrap numpy's joins (now, or once the script imports numpy) to record into `recorder`."""
    when_imported("numpy", lambda numpy: _wrap_joins(numpy, recorder, patcher))


def _wrap_joins(numpy, recorder, patcher) -> None:
    inside_numpy = os.path.dirname(numpy.__file__) + os.sep
    for name in JOINS:
        # From the module's own namespace: getattr would call numpy's deprecation hooks.
        original = numpy.__dict__.get(name)
        if callable(original):
            patcher.set(numpy, name, _recorded(numpy, name, original, recorder, inside_numpy))


def _recorded(numpy, name, original, recorder, inside_numpy):
    @functools.wraps(original)
    def join(*args, **kwargs):
        out = original(*args, **kwargs)
        caller = sys._getframe(1).f_code.co_filename
        # numpy's own joins (np.append calls concatenate) and the grader's are no student's.
        if get_trace().enabled and not caller.startswith(inside_numpy) \
                and not any(part in caller for part in _OWN_CODE):
            try:
                _record(numpy, name, args, kwargs, out, recorder)
            except (TypeError, ValueError, RuntimeError, IndexError):
                pass   # something that has no rows of numbers: nothing to record
        return out
    return join


def _parts_and_axis(name, args, kwargs):
    """(the joined arrays, the axis) of a call of numpy's `name`, as numpy reads them."""
    if name == "append":
        parts = [args[0] if args else kwargs.get("arr"),
                 args[1] if len(args) > 1 else kwargs.get("values")]
        return parts, (args[2] if len(args) > 2 else kwargs.get("axis"))
    parts = args[0] if args else kwargs.get("arrays", kwargs.get("tup", ()))
    if name in ("vstack", "row_stack"):
        return list(parts), 0
    return list(parts), (args[1] if len(args) > 1 else kwargs.get("axis", 0))


def tensor_of(numpy, part):
    """The tensor whose memory `part` is: a tensor itself, or the tensor an array made by
    Tensor.numpy() (or a view of one) keeps as its base; None for memory of numpy's own."""
    base = part
    while isinstance(base, numpy.ndarray):
        base = base.base
    return base if isinstance(base, torch.Tensor) else None


def _storage(numpy, recorder, part):
    """Where an input's rows live: the storage of the tensor its memory is (`tensor_of`, a copy
    written as its original), or, for an array of numpy's own, its memory's address, which
    names an earlier join's result (RowRecorder.join_inputs), or None: numpy's own memory is no
    tensor's, even at an address a freed chunk output had."""
    tensor = tensor_of(numpy, part)
    if tensor is not None:
        return recorder.origin(tensor)
    if isinstance(part, numpy.ndarray):
        return recorder.join_result(int(part.__array_interface__["data"][0]))
    return None


def _record(numpy, name, args, kwargs, out, recorder) -> None:
    if not isinstance(out, numpy.ndarray) or out.ndim == 0 or not recorder.recording():
        return
    parts, axis = _parts_and_axis(name, args, kwargs)
    if not isinstance(axis, int) or isinstance(axis, bool):
        return   # axis=None flattens: no rows
    if axis < 0:
        axis += out.ndim
    storages, shapes = recorder.join_inputs((_storage(numpy, recorder, part),
                                             list(numpy.shape(part))) for part in parts)
    if not any(recorder.from_a_pass(storage) for storage in storages):
        return   # no forward pass's input or output (nor a copy of one) in it
    address = int(out.__array_interface__["data"][0])
    if axis == 0:
        recorder.joined(address, storages, shapes)
    rows = out.reshape(-1, *out.shape[2:]) if name == "stack" and axis == 0 and out.ndim >= 2 \
        else out
    with torch._C.DisableTorchFunction():
        prints = row_prints(torch.from_numpy(numpy.ascontiguousarray(rows)))
    get_trace().emit("concat", op=f"numpy.{name}", shape=list(rows.shape), device="cpu",
                     inputs=shapes, storages=storages, storage=address, dim=axis,
                     **recorder.concat_rows(prints), site=call_site(2))
