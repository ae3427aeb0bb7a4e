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


def frame_judge(folder: str) -> tuple[Callable[[object], bool], Callable[[ModuleType], None]]:
    """(genuine, admit_unlisted).

    genuine(frame): whether `frame` runs code of a module of `folder` (ending in os.sep), in
    that module's own namespace. Modules imported later are learnt when first seen. The state
    is a keyword-only default, not a closure cell: a function's `__kwdefaults__` raises the
    audit event the runtime's hook reports, its `__closure__` none.

    admit_unlisted(module): one module of the folder kept out of `sys.modules` on purpose (the
    HW3 probe, which student code must not find by name), admitted by its launcher before any
    student code runs; once only, so nothing admits a namespace of its own later."""
    namespaces: dict[int, tuple[dict, str]] = {}    # id(namespace) -> (namespace, file)

    def learn(*, _namespaces=namespaces, _modules=sys.modules, _folder=folder,
              _abspath=os.path.abspath) -> None:
        for module in list(_modules.values()):
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

    def admit_unlisted(module: ModuleType, *, _namespaces=namespaces, _folder=folder,
                       _admitted=[], _abspath=os.path.abspath) -> None:
        if _admitted:
            raise PermissionError("a module kept out of sys.modules was already admitted")
        _admitted.append(True)
        file = _abspath(module.__file__)
        if type(module) is not ModuleType or not file.startswith(_folder):
            raise ValueError(f"{file}: not a module of {_folder}")
        _namespaces[id(module.__dict__)] = (module.__dict__, file)

    learn()
    return genuine, admit_unlisted
