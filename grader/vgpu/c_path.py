"""The virtual node's hot path in C (grader/vgpu/_fastpath.c), where it could be built.

`pip install` compiles it where a C compiler is found; elsewhere (a laptop without one) the
node does the very same bookkeeping in Python (grader/vgpu/mode.py, backward_schedule.py),
only slower at small sizes. Tests run both and compare them record for record.
"""
from __future__ import annotations

import os

# "1": the Python path even where the C one was built.
ENV_PURE_PYTHON = "PDL_VGPU_PURE_PYTHON"


def c_module():
    """grader.vgpu._fastpath, or None where it was not built or is switched off."""
    if os.environ.get(ENV_PURE_PYTHON) == "1":
        return None
    try:
        from grader.vgpu import _fastpath
    except ImportError:
        return None
    return _fastpath
