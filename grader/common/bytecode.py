"""Whether torch's compiled bytecode is there for the sandboxed runs to use.

Every run imports torch from a read-only view of the installation, so it can never write a
`.pyc` of its own: where the installation has none (installed with `pip --no-compile`, an
image that strips `__pycache__`, files touched after install), every run compiles torch's
Python files again, about 2.4 times the CPU of an import that reads them (3.3 against 1.4
CPU-seconds on the 2-core machine; with dynamo 6.7 against 2.7). The batch says so once.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from grader.common.locations import installed_torch_folder

# Modules every run imports: torch's top, the tensor, nn's Module, and dynamo (optimizers).
PROBES = ("__init__.py", "_tensor.py", os.path.join("nn", "modules", "module.py"),
          os.path.join("_dynamo", "__init__.py"))


def stale_or_missing(source: Path) -> bool:
    """Whether importing `source` would have to compile it: no cached bytecode, or bytecode
    of another Python or of another version of the file."""
    try:
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:16]
        stat = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return True
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return True
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:              # hash-based: checked against the source's hash (or trusted)
        return False
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime != (int(stat.st_mtime) & 0xFFFFFFFF) or size != (stat.st_size & 0xFFFFFFFF)


def torch_bytecode_warning(folder: Path | None = None) -> str | None:
    """A message for the instructor when torch's bytecode is missing or stale, else None."""
    folder = installed_torch_folder() if folder is None else folder
    if folder is None:
        return None
    missing = [name for name in PROBES
               if (folder / name).exists() and stale_or_missing(folder / name)]
    if not missing:
        return None
    return (f"torch's compiled bytecode is missing or out of date in {folder} ("
            f"{', '.join(missing)}): every sandboxed run compiles torch's Python files again, "
            "about twice the CPU per run. Once, as the user who installed torch: "
            f"python3 -m compileall -q {folder}")
