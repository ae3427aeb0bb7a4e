"""Attribute patches that remember what they replaced, so activation can be undone in tests."""
from __future__ import annotations

from grader.vgpu import type_namespace

_MISSING = object()


class Patcher:
    def __init__(self):
        self._undo: list[tuple[object, str, object]] = []
        self._installed: list[tuple[object, str, object]] = []

    def set(self, owner, name: str, value) -> None:
        old = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else \
            getattr(owner, name, _MISSING)
        _assign(owner, name, value)   # a write refused leaves nothing to undo
        self._undo.append((owner, name, old))
        self._installed.append((owner, name, value))

    def installed(self) -> list[tuple[object, str, object]]:
        """(owner, name, value) of every patch in force, in order (grader/vgpu/guard.py checks
        they are still there when the process ends)."""
        return list(self._installed)

    def restore(self) -> None:
        for owner, name, old in reversed(self._undo):
            if old is _MISSING:
                try:
                    _assign(owner, name, type_namespace.DELETED)
                except AttributeError:
                    pass
            else:
                _assign(owner, name, old)
        self._undo.clear()
        self._installed.clear()


def _assign(owner, name: str, value) -> None:
    """setattr (delattr for type_namespace.DELETED); for an immutable class of a C extension,
    which refuses both (numpy.ndarray), a write into its namespace (type_namespace.py)."""
    if type_namespace.immutable(owner):
        type_namespace.write(owner, name, value)
    elif value is type_namespace.DELETED:
        delattr(owner, name)
    else:
        setattr(owner, name, value)
