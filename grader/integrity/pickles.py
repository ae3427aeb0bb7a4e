"""What a pickle does when it is loaded, read without loading it (pickletools): the functions
and classes it names. A pickle of numbers, lists or tensors names none or only torch's and
numpy's rebuilders; one that names `builtins.eval` or `os.system` runs code when loaded."""
from __future__ import annotations

import io
import pickletools

# Files that hold pickles (a torch checkpoint is a zip with a data.pkl inside).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".bin", ".joblib", ".npy")
# What a pickle may name and still only rebuild data when loaded (torch checkpoints, numpy).
_PICKLE_SAFE_MODULES = ("torch", "collections", "numpy", "_codecs", "copyreg", "datetime",
                        "__main__", "decimal", "fractions", "pathlib")
_PICKLE_SAFE_BUILTINS = frozenset({"set", "frozenset", "slice", "complex", "bytearray",
                                   "range", "list", "dict", "tuple", "float", "int", "bool",
                                   "str", "bytes", "object"})


def pickle_globals(data: bytes) -> list[str] | None:
    """The `module.name`s a pickle calls or builds when loaded; None if it is no pickle."""
    found, strings = [], []
    try:
        for opcode, argument, _position in pickletools.genops(io.BytesIO(data)):
            if opcode.name in ("GLOBAL", "INST"):
                found.append(str(argument).replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL":
                found.append(".".join(strings[-2:]) if len(strings) >= 2 else "?")
            if isinstance(argument, str):
                strings.append(argument)
    except Exception:
        return None if not found else found
    return found


def dangerous_globals(names: list[str]) -> list[str]:
    bad = []
    for name in names:
        module, _, attribute = name.rpartition(".")
        if module in ("builtins", "__builtin__") and attribute in _PICKLE_SAFE_BUILTINS:
            continue
        if any(module == safe or module.startswith(safe + ".") for safe in _PICKLE_SAFE_MODULES):
            continue
        bad.append(name)
    return bad
