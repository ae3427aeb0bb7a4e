"""What `python FOLDER/script.py` imports from the script's own folder.

A fresh interpreter puts the script's folder first on sys.path, so a student's helper module
named like a standard or installed one (hw3/profile.py, utils.py beside a library's) is the
one the script's `import` finds, unless the interpreter had already imported that name before
the script started. The grader's processes import more than a fresh interpreter before the
script runs (the node imports torch; a run forked from the fork server has torch._dynamo,
which imports the standard `profile`), so these helpers make the folder's own modules win as
they would on the student's machine.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys

_SUFFIXES = tuple(sorted({*importlib.machinery.SOURCE_SUFFIXES,
                          *importlib.machinery.EXTENSION_SUFFIXES}, key=len, reverse=True))


def module_names_in(folder: str) -> set[str]:
    """Top-level names `import NAME` finds in `folder`: NAME.py, an extension module, or a
    package (NAME/__init__.py)."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    names = set()
    for entry in entries:
        suffix = next((s for s in _SUFFIXES if entry.endswith(s)), None)
        if suffix is not None:
            names.add(entry[:-len(suffix)])
        elif os.path.isfile(os.path.join(folder, entry, "__init__.py")):
            names.add(entry)
    return {name for name in names if name.isidentifier()}


def standard_names_in(folder: str) -> set[str]:
    """Standard modules that a file or package in `folder` would shadow."""
    return module_names_in(folder) & set(sys.stdlib_module_names)


def interpreter_startup_modules() -> frozenset[str]:
    """What every interpreter of a run has imported before its script (the boot's
    sitecustomize records it at start-up; without it, the modules built into Python)."""
    boot = sys.modules.get("sitecustomize")
    return getattr(boot, "STARTUP_MODULES", frozenset(sys.builtin_module_names))


def forget_modules_shadowed_by(folder: str) -> list[str]:
    """Forget the imported modules that `folder`'s own would shadow in a fresh interpreter
    (not those an interpreter has at start-up: no folder shadows them), so the script's
    `import` finds its own; the grader's code keeps the references it holds. Returns them."""
    shadowing = module_names_in(folder) - interpreter_startup_modules()
    forgotten = [name for name in sys.modules if name.split(".")[0] in shadowing]
    for name in forgotten:
        del sys.modules[name]
    return forgotten
