"""Row lists of the host arrays `Tensor.numpy()` gives of the model's outputs.

Practical 4's Part 2 may take each chunk's output to the host through numpy and list it: `rows
+= model(c).detach().cpu().numpy().tolist()`, then `np.array(rows)` or `torch.tensor(rows)`.
numpy's methods cannot be wrapped (ndarray is a type of C's), so those lists were no chunk's
rows and an honest student lost 2.4 points (7.1 of 9.5). `Tensor.numpy()` called from the
user's code on (a copy or part of) a forward pass's input or output, while rows are recorded,
returns its array as a `ListedArray`: a view of the same memory, shape and dtype whose
`tolist()` (of the whole array, a row `a[i]`, a reshape) remembers its row lists as
`Tensor.tolist`'s are (row_lists.py), with the storage of the tensor the memory belongs to.
Part 1's output listed this way is Part 1's rows, never a chunk's, as its `.tolist()` is.

Otherwise the array behaves as numpy's own: arithmetic and reductions on it give numpy's plain
arrays and scalars (`__array_ufunc__`), its repr and pickle are a plain array's. Each call also
says the data was taken to the host (RowRecorder.exported), as `np.array(t)` (torch's `__array__`)
does without a ListedArray.

Only an exact type check tells it apart (`type(a) is np.ndarray` is False; isinstance holds):
no plain array's `tolist()` can be followed, and rows recognised by their values could not tell
a chunk's rows from Part 1's (the same numbers). So its type says what it is (`<class 'grader's
tracked view of numpy.ndarray'>`), and a script stopped at such a check (`type_check_at_error`)
is told to use isinstance (course_environment.tracked_array_note).
"""
from __future__ import annotations

import functools
import linecache
import os
import sys

import torch

from grader.vgpu.post_import import when_imported
from grader.vgpu.trace import _OWN_CODE, get_trace

_TORCH = os.sep + "torch" + os.sep
_PASSED = tuple(os.sep + os.path.join("vgpu", name) for name in ("numpy_joins.py", "mode.py"))
# The module the tracked arrays' type names: `type(a)` prints <class 'TRACKED.ndarray'>.
TRACKED = "grader's tracked view of numpy"


def install(recorder, patcher) -> None:
    """Wrap `Tensor.numpy` (once numpy is imported: no array without it) for `recorder`."""
    when_imported("numpy", lambda numpy: _wrap(numpy, recorder, patcher))


def _wrap(numpy, recorder, patcher) -> None:
    listed_array = _listed_array_class(numpy, recorder)
    original = torch.Tensor.numpy

    @functools.wraps(original)
    def to_numpy(tensor, *args, **kwargs):
        array = original(tensor, *args, **kwargs)
        caller = _caller()
        if caller is None or not get_trace().enabled or not recorder.recording():
            return array
        origin = recorder.origin(tensor)
        if not recorder.from_a_pass(origin):
            return array
        recorder.exported(origin, "numpy")
        # Through torch's __array__ (np.array(t), np.asarray(t)) numpy makes its own array of
        # it: the plain one it asked for.
        return array.view(listed_array) if caller == "user" else array
    patcher.set(torch.Tensor, "numpy", to_numpy)


def _caller() -> str | None:
    """Who called Tensor.numpy: "user" (the script), "array" (torch's __array__, called by
    numpy for the script), or None (torch's or the grader's own code)."""
    frame = sys._getframe(2)
    code = frame.f_code
    if code.co_name == "__array__" and _TORCH in code.co_filename:
        # numpy calls it from C for the frame above it, past torch's dispatch of __array__
        # (the virtual GPUs' mode) and the wrapper numpy_joins put on np.array / np.asarray.
        outer = frame.f_back
        while outer is not None and (_TORCH in outer.f_code.co_filename
                                     or outer.f_code.co_filename.endswith(_PASSED)):
            outer = outer.f_back
        if outer is None or any(part in outer.f_code.co_filename for part in _OWN_CODE):
            return None
        return "array"
    return None if any(part in code.co_filename for part in _OWN_CODE) else "user"


def _listed_array_class(numpy, recorder):
    from grader.vgpu.numpy_joins import tensor_of   # it imports rows, which imports this

    def plain(value):
        return value.view(numpy.ndarray) if isinstance(value, ListedArray) else value

    class ListedArray(numpy.ndarray):
        """A host array of a forward pass's data whose `tolist()` is remembered (module doc)."""

        def tolist(self):
            rows = super().tolist()
            tensor = tensor_of(numpy, self)
            if tensor is not None and get_trace().enabled and recorder.recording():
                recorder.lists.listed_from(recorder.origin(tensor), rows, self.size, "numpy")
            return rows

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            # numpy's plain results: `a - b`, `a.max()` give what they give of numpy's arrays.
            if "out" in kwargs:
                kwargs["out"] = tuple(plain(out) for out in kwargs["out"])
            return getattr(ufunc, method)(*(plain(value) for value in inputs), **kwargs)

        def __repr__(self):
            return repr(plain(self))

        def __reduce__(self):
            return plain(self).__reduce__()

        def __reduce_ex__(self, protocol):
            return plain(self).__reduce_ex__(protocol)

    # As the script sees it: type(a) names numpy's class, and says it is the grader's view of it
    # (a failed `type(a) is np.ndarray` had printed <class 'numpy.ndarray'>, adv38 H3).
    ListedArray.__name__ = ListedArray.__qualname__ = "ndarray"
    ListedArray.__module__ = TRACKED
    return ListedArray


def type_check_at_error(error: BaseException, folder: str) -> bool:
    """Whether a script stopped at an exact type check of a tracked array: the last line of the
    script's folder in the error's traceback reads `type(` or `__class__`, and the error's
    message names the tracked type (`assert type(a) is np.ndarray, type(a)`) or that line's
    frame holds a tracked array."""
    last, traceback_ = None, error.__traceback__
    while traceback_ is not None:
        if os.path.abspath(traceback_.tb_frame.f_code.co_filename).startswith(folder + os.sep):
            last = traceback_
        traceback_ = traceback_.tb_next
    if last is None:
        return False
    line = linecache.getline(last.tb_frame.f_code.co_filename, last.tb_lineno)
    if "type(" not in line and "__class__" not in line:
        return False
    return TRACKED in str(error) or any(type(value).__module__ == TRACKED
                                        for value in list(last.tb_frame.f_locals.values()))
