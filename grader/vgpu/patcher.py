"""Attribute patches that remember what they replaced, so activation can be undone in tests."""
from __future__ import annotations

_MISSING = object()


class Patcher:
    def __init__(self):
        self._undo: list[tuple[object, str, object]] = []
        self._installed: list[tuple[object, str, object]] = []

    def set(self, owner, name: str, value) -> None:
        self._undo.append((owner, name, owner.__dict__.get(name, _MISSING)
                           if isinstance(owner, type) else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)
        self._installed.append((owner, name, value))

    def installed(self) -> list[tuple[object, str, object]]:
        """(owner, name, value) of every patch in force, in order (grader/vgpu/guard.py checks
        they are still there when the process ends)."""
        return list(self._installed)

    def restore(self) -> None:
        for owner, name, old in reversed(self._undo):
            if old is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, old)
        self._undo.clear()
        self._installed.clear()
