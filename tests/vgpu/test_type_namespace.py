"""A name written into numpy.ndarray's namespace (grader/vgpu/type_namespace.py): every array
finds it from its next lookup on, code already specialised for the old method included, the
arrays stay numpy's own, and the Patcher puts numpy's method back."""
from __future__ import annotations

import numpy as np
import pytest

from grader.vgpu import type_namespace
from grader.vgpu.patcher import Patcher


def listed(array):
    return array.tolist()


def test_a_patched_method_is_found_by_code_specialised_before_it_and_undone():
    array = np.arange(6.0).reshape(3, 2)
    for _ in range(200):   # the interpreter specialises listed()'s method lookup
        listed(array)
    plain = np.ndarray.__dict__["tolist"]
    seen = []

    def tolist(self, *args, **kwargs):
        seen.append(type(self))
        return plain(self, *args, **kwargs)

    patcher = Patcher()
    patcher.set(np.ndarray, "tolist", tolist)
    try:
        assert listed(array) == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        assert listed(array[1]) == [2.0, 3.0]
        assert seen == [np.ndarray, np.ndarray], (
            f"expected both calls through the written method; observed {seen} "
            "(type_namespace.write: PyType_Modified)")
        assert type(array) is np.ndarray
    finally:
        patcher.restore()
    listed(array)
    assert np.ndarray.__dict__["tolist"] is plain and len(seen) == 2, (
        "expected numpy's own tolist back after restore (Patcher.restore)")


def test_a_name_added_to_numpys_class_is_deleted_on_restore():
    patcher = Patcher()
    patcher.set(np.ndarray, "grader_probe", lambda self: "probe")
    try:
        assert np.zeros(1).grader_probe() == "probe"
    finally:
        patcher.restore()
    assert not hasattr(np.zeros(1), "grader_probe")


@pytest.mark.parametrize("owner", [list, float, Patcher])
def test_only_immutable_classes_of_extensions_are_written(owner):
    """The interpreter's built-in types share their namespaces between interpreters; a class
    of Python's own takes setattr."""
    with pytest.raises(TypeError):
        type_namespace.write(owner, "grader_probe", None)


def test_a_numpy_whose_array_type_cannot_be_written_still_imports(monkeypatch, capsys):
    """Where a future Python or numpy refuses the write, the script's numpy works as it is and
    the run's log says its row lists go unseen: never a script stopped at `import numpy`."""
    from grader.vgpu import numpy_lists

    def refuse(owner, name, value):
        raise TypeError("namespace could not be found")

    plain = np.ndarray.__dict__["tolist"]
    monkeypatch.setattr(type_namespace, "write", refuse)
    patcher = Patcher()
    try:
        numpy_lists._wrap(np, recorder=None, patcher=patcher)
        assert np.ndarray.__dict__["tolist"] is plain and np.arange(2.0).tolist() == [0.0, 1.0]
    finally:
        patcher.restore()
    said = capsys.readouterr().err
    assert "ndarray.tolist is not followed" in said, (
        f"expected the run's log to say numpy's tolist is not followed; observed {said!r} "
        "(look: grader/vgpu/numpy_lists.py _wrap)")
