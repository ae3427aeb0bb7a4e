"""Run a callback right after a module is imported (or now, if it already is).

Some patches concern heavy modules (FSDP, cpp_extension: about a second to import): patch
them only if the student's script imports them.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_callbacks: dict[str, list] = {}


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _callbacks:
            return None
        sys.meta_path.remove(self)  # find the real spec without finding ourselves
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module, _original=original_exec):
            _original(module)
            for callback in _callbacks.pop(fullname, []):
                callback(module)

        loader.exec_module = exec_module
        return spec


_finder = _PostImportFinder()


def when_imported(name: str, callback) -> None:
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _callbacks.setdefault(name, []).append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
