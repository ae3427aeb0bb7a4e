"""Which frames run the grader's own code, judged by what the frame runs in, not by its name.

A code object's file name is whatever its compiler was told: a red team had a template engine
compile its code under a file name in the grader's folder, and that code passed for the
grader's own with the sealers, which then sealed the reference's records for an untouched
template. A frame is the grader's here only where its globals are the namespace of one of the
grader's modules, as imported (a module object in `sys.modules` whose file is in the grader's
folder), and its code names that module's file. Code of the submission, however it was
compiled, runs in a namespace of its own; running it in a grader module's namespace needs the
module's functions' `__code__` or a code object made under a grader file name, what the
runtime's audit hook reports (grader/vgpu/guard.py).
"""
from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Callable


def writes_records(code) -> bool:
    """Whether a code object is one of the instrumentation's writers' callers: it names the
    writer (`trace.emit(...)`, `self.emit(...)`, an `emit` or `write` it holds). A red team had
    the grader's own pass-through closures (a patched function's `_call(method)`, reached
    through its `__globals__`) call the trace's emit with whatever records it chose."""
    return not _WRITER_ATTRIBUTES.isdisjoint(code.co_names) or not _WRITER_NAMES.isdisjoint(
        code.co_varnames + code.co_freevars)


_WRITER_ATTRIBUTES = frozenset({"emit", "_emit"})        # trace.emit, the probe's self._emit
_WRITER_NAMES = frozenset({"emit", "_emit", "write"})    # a writer held in a local or a cell


def frame_judge(folder: str, modules: tuple[str, ...]
                ) -> tuple[Callable[[object], bool], Callable[[ModuleType], None],
                           Callable[[object], None]]:
    """(genuine, admit_unlisted, close).

    genuine(frame): whether `frame` runs code of one of `modules` (names of modules of
    `folder`, ending in os.sep), in that module's own namespace, as imported. Those not imported
    yet are looked up in `sys.modules` under their own names when first needed, until close():
    a red team's helper module of its own had set its `__file__` to a grader file's, run that
    file's text in its own namespace and been taken for the grader.

    admit_unlisted(module): one module of the folder kept out of `sys.modules` on purpose (the
    HW3 probe, which student code must not find by name), admitted by its launcher before any
    student code runs; once only, and only before close().

    close(frame): the runner's own frame (its module may be `__main__` only until the student's
    script takes that name) is trusted, and nothing more is learnt: called once the runtime is
    in place, just before student code starts. The state is keyword-only defaults, never closure
    cells: a function's `__kwdefaults__` raises the audit event the runtime's hook reports, its
    `__closure__` (or a cell's contents rewritten) none."""
    namespaces: dict[int, tuple[dict, str]] = {}    # id(namespace) -> (namespace, file)
    closed: list[bool] = []

    def learn(*, _namespaces=namespaces, _modules=sys.modules, _names=modules, _folder=folder,
              _abspath=os.path.abspath, _closed=closed) -> None:
        if _closed:
            return
        for name in _names:
            module = _modules.get(name)
            if type(module) is not ModuleType:
                continue
            file = module.__dict__.get("__file__")
            if isinstance(file, str) and _abspath(file).startswith(_folder):
                namespace = module.__dict__
                _namespaces[id(namespace)] = (namespace, _abspath(file))

    def genuine(frame, *, _namespaces=namespaces, _learn=learn, _folder=folder) -> bool:
        filename = frame.f_code.co_filename
        if not filename.startswith(_folder):
            return False
        namespace = frame.f_globals
        entry = _namespaces.get(id(namespace))
        if entry is None:
            _learn()
            entry = _namespaces.get(id(namespace))
        return entry is not None and entry[0] is namespace and entry[1] == filename

    def admit(namespace: dict, file: str, *, _namespaces=namespaces, _folder=folder,
              _abspath=os.path.abspath) -> None:
        file = _abspath(file)
        if not file.startswith(_folder):
            raise ValueError(f"{file}: not a module of {_folder}")
        _namespaces[id(namespace)] = (namespace, file)

    def admit_unlisted(module: ModuleType, *, _admit=admit, _admitted=[], _closed=closed) -> None:
        if _admitted or _closed:
            raise PermissionError("a module kept out of sys.modules is admitted once, before "
                                  "student code runs")
        _admitted.append(True)
        if type(module) is not ModuleType:
            raise ValueError("not a module")
        _admit(module.__dict__, module.__file__)

    def close(frame, *, _admit=admit, _learn=learn, _closed=closed) -> None:
        if _closed:
            raise PermissionError("the grader's own code was already settled")
        _learn()
        _admit(frame.f_globals, frame.f_code.co_filename)
        _closed.append(True)

    learn()
    return genuine, admit_unlisted, close
