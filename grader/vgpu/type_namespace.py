"""A name written into the namespace of a C extension's class that refuses setattr.

`np.ndarray.tolist = f` raises TypeError: numpy's array type is immutable, as most classes of C
extensions are. Its namespace is still a dict, the one the mappingproxy `vars(cls)` wraps
(gc.get_referents hands it over). A name written there, and the type's lookup caches dropped
(PyType_Modified, what type.__setattr__ calls after its own write), is what every instance finds
from its next lookup on: the method cache and the interpreter's specialised bytecode both check
the type's version tag, which PyType_Modified resets. The instances stay of the class itself,
so `type(a) is np.ndarray` holds (grader/vgpu/numpy_lists.py).

CPython only, and only for classes of extension modules: the interpreter's own built-in types
share their namespaces between interpreters and are refused.
"""
from __future__ import annotations

import ctypes
import gc

# Py_TPFLAGS_IMMUTABLETYPE: a class whose attributes setattr refuses.
_IMMUTABLE = 1 << 8
# What `write` is given to delete the name instead.
DELETED = object()


def immutable(owner) -> bool:
    return isinstance(owner, type) and bool(owner.__flags__ & _IMMUTABLE)


def write(owner: type, name: str, value) -> None:
    """`owner.<name> = value` (or `del owner.<name>` where `value` is DELETED) for an immutable
    class of an extension module."""
    if not immutable(owner) or owner.__module__ == "builtins":
        raise TypeError(f"{owner!r}: only immutable classes of extension modules are written "
                        "this way")
    namespace = [found for found in gc.get_referents(owner.__dict__) if type(found) is dict]
    if len(namespace) != 1:
        raise TypeError(f"{owner!r}: its namespace could not be found")
    if value is DELETED:
        namespace[0].pop(name, None)
    else:
        namespace[0][name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(owner))
