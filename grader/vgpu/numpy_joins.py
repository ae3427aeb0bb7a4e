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

The same is recorded of the other ways to put the outputs together on the host: `np.array(
outputs)` (or np.asarray) of a list of the chunk outputs' arrays stacks them (a `.reshape(-1,
D)` after it is a view of that result), a list of rows of them (`list(a)`, or the row lists
`.tolist()` gave, row_lists.py) is their rows; `np.block([[a], [b]])` and `np.r_[a, b]` join
whole arrays along the first axis. np.array and np.asarray look further only where given a list
whose first item is a tensor's memory (or a remembered row list): their everyday calls cost a
type check. A join's inputs of numpy's own memory are looked up as earlier joins' results only
while one is remembered.
"""

from __future__ import annotations

import copy
import functools
import os
import sys

import torch

from grader.vgpu.post_import import when_imported
from grader.vgpu.row_lists import runs
from grader.vgpu.rows import storage_of
from grader.vgpu.trace import _OWN_CODE, get_trace

# The joins of whole arrays along an axis. hstack/column_stack join columns of 2-D arrays (no
# rows of a combined batch).
JOINS = ("concatenate", "concat", "vstack", "row_stack", "stack", "append")
# The calls that build an array from a list: of whole arrays, a stack; of rows, those rows.
BUILDERS = ("array", "asarray")


def install(recorder, patcher) -> None:
    """Wrap numpy's joins (now, or once the script imports numpy) to record into `recorder`."""
    when_imported("numpy", lambda numpy: _wrap_joins(numpy, recorder, patcher))


def _wrap_joins(numpy, recorder, patcher) -> None:
    inside_numpy = os.path.dirname(numpy.__file__) + os.sep
    for name in JOINS + BUILDERS + ("block",):
        # From the module's own namespace: getattr would call numpy's deprecation hooks.
        original = numpy.__dict__.get(name)
        if callable(original):
            wrap = _built if name in BUILDERS else _recorded
            patcher.set(numpy, name, wrap(numpy, name, original, recorder, inside_numpy))
    concatenator = numpy.__dict__.get("r_")
    if concatenator is not None:
        patcher.set(numpy, "r_", _recorded_r(numpy, concatenator, recorder, inside_numpy))


def _users(inside_numpy, depth: int = 2) -> bool:
    """Whether the call `depth` frames up comes from the user's code: numpy's own joins
    (np.append calls concatenate) and the grader's are no student's."""
    caller = sys._getframe(depth).f_code.co_filename
    return get_trace().enabled and not caller.startswith(inside_numpy) \
        and not any(part in caller for part in _OWN_CODE)


def _recorded(numpy, name, original, recorder, inside_numpy):
    @functools.wraps(original)
    def join(*args, **kwargs):
        out = original(*args, **kwargs)
        if _users(inside_numpy):
            try:
                _record(numpy, name, args, kwargs, out, recorder)
            except (TypeError, ValueError, RuntimeError, IndexError):
                pass   # something that has no rows of numbers: nothing to record
        return out
    return join


def _built(numpy, name, original, recorder, inside_numpy):
    """np.array / np.asarray, recorded only where given a list whose first item is (a view of)
    a tensor's memory or a row list `tolist()` gave of a forward pass's data."""
    @functools.wraps(original)
    def build(*args, **kwargs):
        out = original(*args, **kwargs)
        items = args[0] if args else None
        if type(items) in (list, tuple) and items and (
                isinstance(items[0], torch.Tensor) or recorder.lists.origin_of(items[0]) is not None
                or recorder.lists.listed_rows(items[0])
                or (isinstance(items[0], numpy.ndarray) and tensor_of(numpy, items[0]) is not None)) \
                and _users(inside_numpy):
            try:
                _record_built(numpy, name, items, out, recorder)
            except (TypeError, ValueError, RuntimeError, IndexError):
                pass
        return out
    return build


def _recorded_r(numpy, concatenator, recorder, inside_numpy):
    """np.r_ (an object indexed, not called) whose indexing records a join of whole arrays."""
    class RecordedR(type(concatenator)):
        __slots__ = ()   # numpy's own layout, so that np.r_ itself can become one

        def __getitem__(self, key):
            out = super().__getitem__(key)
            items = key if isinstance(key, tuple) else (key,)
            # Arrays only: slices, numbers and directives ('0,2', 'r') make other joins.
            if items and all(isinstance(item, (numpy.ndarray, torch.Tensor)) for item in items) \
                    and _users(inside_numpy):
                try:
                    _record_parts(numpy, "r_", list(items), 0, out, recorder)
                except (TypeError, ValueError, RuntimeError, IndexError):
                    pass
            return out
    recorded = copy.copy(concatenator)
    recorded.__class__ = RecordedR
    return recorded


def _parts_and_axis(numpy, name, args, kwargs):
    """(the joined arrays, the axis) of a call of numpy's `name`, as numpy reads them; for
    np.block, its arrays where it joins whole arrays along the first axis only."""
    if name == "append":
        parts = [args[0] if args else kwargs.get("arr"),
                 args[1] if len(args) > 1 else kwargs.get("values")]
        return parts, (args[2] if len(args) > 2 else kwargs.get("axis"))
    parts = args[0] if args else kwargs.get("arrays", kwargs.get("tup", ()))
    if name == "block":
        return _block_rows(parts)
    if name in ("vstack", "row_stack"):
        return list(parts), 0
    return list(parts), (args[1] if len(args) > 1 else kwargs.get("axis", 0))


def _block_rows(nested):
    """np.block's arrays and axis 0 where it stacks them in rows: `[[a], [b], ...]` (lists
    nested as deep as the result has dimensions, one array per inner list), else ([], None)
    (arrays side by side along another axis)."""
    depth, level = 0, nested
    while isinstance(level, list):
        depth, level = depth + 1, level[0] if level else None
    leaves = []
    for item in nested if isinstance(nested, list) else ():
        while isinstance(item, list):
            if len(item) != 1:
                return [], None
            item = item[0]
        leaves.append(item)
    return (leaves, 0) if leaves and depth >= 1 else ([], None)


def tensor_of(numpy, part):
    """The tensor whose memory `part` is: a tensor itself, or the tensor an array made by
    Tensor.numpy() (or a view of one) keeps as its base; None for memory of numpy's own."""
    base = part
    while isinstance(base, numpy.ndarray):
        base = base.base
    return base if isinstance(base, torch.Tensor) else None


def _owner(numpy, array):
    """The array of numpy's own whose memory `array` is (itself, or the array it is a view of)."""
    while isinstance(array.base, numpy.ndarray):
        array = array.base
    return array


def _input(numpy, recorder, part):
    """(own, storage, shape) of a join's input, for RowRecorder.join_inputs: a tensor's memory
    (`tensor_of`) is written with that tensor's storage (`origin`: a copy as its original);
    memory of numpy's own is no tensor's, its storage None (`own`, its address, names an
    earlier join's result while that lives); a row list `tolist()` gave, its tensor's."""
    tensor = tensor_of(numpy, part)
    if tensor is not None:
        return storage_of(tensor), recorder.origin(tensor), list(tensor.shape) \
            if part is tensor else list(numpy.shape(part))
    if isinstance(part, numpy.ndarray):
        # Its address only matters where a join's result may be there: none remembered, no cost.
        own = _address(_owner(numpy, part)) if recorder.joins_remembered() else None
        return own, None, list(part.shape)
    listed = recorder.lists.origin_of(part)
    return None, listed, ([len(part)] if listed is not None else list(numpy.shape(part)))


def _inputs(numpy, recorder, part) -> list[tuple]:
    """A join's input as `_input`s: a chunk's whole `.tolist()` (a list of its remembered row
    lists: `np.concatenate([o.tolist() for o in outputs])`, adv36 H2) is its rows' runs."""
    if recorder.lists.listed_rows(part):
        return recorder.lists.parts(part)
    return [_input(numpy, recorder, part)]


def _address(array) -> int:
    return int(array.__array_interface__["data"][0])


def _record(numpy, name, args, kwargs, out, recorder) -> None:
    parts, axis = _parts_and_axis(numpy, name, args, kwargs)
    _record_parts(numpy, name, parts, axis, out, recorder)


def _record_built(numpy, name, items, out, recorder) -> None:
    """np.array(items): of whole arrays (each of two dimensions or more), their stack; of rows
    (arrays of one dimension, row lists), those rows."""
    if not isinstance(out, numpy.ndarray) or out.ndim < 2 or out.dtype.kind not in "biuf":
        return
    parts = [_input(numpy, recorder, item) for item in items]
    if out.ndim == 2:
        _record_parts(numpy, name, None, 0, out, recorder,
                      inputs=runs([(None, storage, shape) for _, storage, shape in parts]))
    else:
        _record_parts(numpy, "stack", items, 0, out, recorder, op=f"numpy.{name}")


def _record_parts(numpy, name, parts, axis, out, recorder, *, inputs=None, op=None) -> None:
    if not isinstance(out, numpy.ndarray) or out.ndim == 0 or not recorder.recording():
        return
    if not isinstance(axis, int) or isinstance(axis, bool):
        return   # axis=None flattens: no rows
    if axis < 0:
        axis += out.ndim
    if inputs is None:
        inputs = [found for part in parts for found in _inputs(numpy, recorder, part)]
    # A stack of whole arrays is their rows; a stack of rows of one dimension already is (adv36 H1).
    rows = out.reshape(-1, *out.shape[2:]) if name == "stack" and axis == 0 and out.ndim >= 3 \
        else out
    def host():
        with torch._C.DisableTorchFunction():
            return torch.from_numpy(numpy.ascontiguousarray(rows))
    owner = _owner(numpy, out)
    recorder.record_join(op or f"numpy.{name}", inputs, host, storage=_address(owner),
                         owner=owner, device="cpu", dim=axis)
