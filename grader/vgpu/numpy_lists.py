"""Row lists of the host arrays of the model's outputs (`Tensor.numpy()`), by numpy's `tolist`.

Practical 4's Part 2 may take each chunk's output to the host through numpy and list it: `rows
+= model(c).detach().cpu().numpy().tolist()`, then `np.array(rows)` or `torch.tensor(rows)`.
Those lists were no chunk's rows, and an honest student lost 2.4 points (7.1 of 9.5).
`ndarray.tolist` called from the user's code on an array whose memory is (a part of) a tensor
of a forward pass's input or output, or of a copy of one (the array `Tensor.numpy()` gives, a
row `a[i]` of it, a reshape: numpy_joins.tensor_of), while rows are recorded, remembers its row
lists as `Tensor.tolist`'s are (row_lists.py), with the storage of that tensor. Part 1's output
listed this way is Part 1's rows, never a chunk's, as its `.tolist()` is: the rows' values could
not tell (a chunk's rows are Part 1's numbers).

numpy's array type refuses new attributes, so `tolist` is written into its namespace
(type_namespace.py): the arrays stay numpy's own, `type(a) is np.ndarray` holds (a subclass
had stopped a script at `assert type(a) is np.ndarray`, adv38 H3: 0.4 of 12). `Tensor.numpy()`
called from the user's code (or by numpy for it, through torch's `__array__`: `np.array(t)`)
on a pass's data says the data was taken to the host (RowRecorder.exported).
"""
from __future__ import annotations

import functools
import os
import sys

import torch

from grader.vgpu.post_import import when_imported
from grader.vgpu.trace import _OWN_CODE, get_trace

_TORCH = os.sep + "torch" + os.sep
# The grader's frames between numpy's call of torch's __array__ and the script: np.array's
# wrapper, the virtual GPUs' mode, and the mode's dispatch where it runs in Python (c_path.py).
_PASSED = tuple(os.sep + os.path.join("vgpu", name)
                for name in ("numpy_joins.py", "mode.py", "python_dispatch.py"))


def install(recorder, patcher) -> None:
    """Wrap `Tensor.numpy` and `ndarray.tolist` (once numpy is imported: no array without it)
    for `recorder`."""
    when_imported("numpy", lambda numpy: _wrap(numpy, recorder, patcher))


def _wrap(numpy, recorder, patcher) -> None:
    original = torch.Tensor.numpy

    @functools.wraps(original)
    def to_numpy(tensor, *args, **kwargs):
        array = original(tensor, *args, **kwargs)
        if get_trace().enabled and recorder.recording() and _users_call():
            origin = recorder.pass_origin(tensor)
            if origin is not None:
                recorder.exported(origin, "numpy")
        return array
    patcher.set(torch.Tensor, "numpy", to_numpy)
    try:
        patcher.set(numpy.ndarray, "tolist", _listing(numpy, recorder))
    except (TypeError, AttributeError, OSError) as refused:
        # A Python or numpy whose array type cannot be written this way (type_namespace.py):
        # the script runs with numpy as it is; only rows listed by `ndarray.tolist` go unseen
        # (a combination of them is told as none), never the script stopped at its import.
        # Said in the run's log (no trace record: this module writes none of its own).
        sys.stderr.write(f"pdl-autograder: numpy's ndarray.tolist is not followed here "
                         f"({refused}); rows listed by it are not seen as a chunk's\n")


def _listing(numpy, recorder):
    """numpy's `ndarray.tolist`, whose row lists of a pass's data are remembered (module doc)."""
    from grader.vgpu.numpy_joins import tensor_of   # it imports rows, which imports this
    original = numpy.ndarray.tolist
    inside_numpy = os.path.dirname(numpy.__file__) + os.sep

    @functools.wraps(original)
    def tolist(array, *args, **kwargs):
        rows = original(array, *args, **kwargs)
        # Lists of rows only, and the cheap tests first: every tolist of the process comes here.
        if type(rows) is list and rows and get_trace().enabled:
            tensor = tensor_of(numpy, array)
            if tensor is not None and recorder.recording():
                caller = sys._getframe(1).f_code.co_filename
                # numpy's, torch's and the grader's own lists are none of the script's rows.
                if not caller.startswith(inside_numpy) \
                        and not any(part in caller for part in _OWN_CODE):
                    recorder.lists.listed_from(recorder.pass_origin(tensor), rows, array.size,
                                               "numpy")
        return rows
    return tolist


def _users_call() -> bool:
    """Whether Tensor.numpy was called by the script, or by numpy for it (torch's __array__:
    np.array(t), np.asarray(t)); not by torch's or the grader's own code."""
    frame = sys._getframe(2)
    code = frame.f_code
    if code.co_name == "__array__" and _TORCH in code.co_filename:
        # numpy calls it from C for the frame above it, past torch's dispatch of __array__
        # (_PASSED).
        outer = frame.f_back
        while outer is not None and (_TORCH in outer.f_code.co_filename
                                     or outer.f_code.co_filename.endswith(_PASSED)):
            outer = outer.f_back
        return outer is not None and not any(part in outer.f_code.co_filename
                                             for part in _OWN_CODE)
    return not any(part in code.co_filename for part in _OWN_CODE)

