"""What GPUs this machine really has (not the virtual node's)."""
from __future__ import annotations

import os
import re
import sys

from grader.common.locations import installed_torch_folder

# The count the grading's CLI found, handed to the checks process it starts (same machine,
# same CUDA_VISIBLE_DEVICES): that process asks again for every check that needs GPUs.
REAL_GPUS_ENV = "PDL_REAL_GPUS"
# torch/version.py's line for the CUDA it was built with: `cuda: Optional[str] = '13.0'`, or
# None for a CPU build (older releases write `cuda = None`).
_CUDA_LINE = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*(?P<value>\S+)", re.MULTILINE)


def cuda_hidden(environ=os.environ) -> bool:
    """Whether CUDA_VISIBLE_DEVICES hides every GPU from CUDA (and so from torch): empty, or
    starting with a negative index ("-1"), which ends the list of visible devices."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return False
    first = visible.split(",")[0].strip()
    return first == "" or first.startswith("-")


def torch_built_with_cuda(version_text: str | None = None) -> bool:
    """Whether the installed torch is a CUDA build, read from torch/version.py without
    importing torch (a CUDA build's import costs about 6 CPU-seconds). True when it cannot be
    told: the caller then asks torch itself."""
    if version_text is None:
        folder = installed_torch_folder()
        try:
            version_text = (folder / "version.py").read_text(encoding="utf-8")
        except (TypeError, OSError, ValueError):    # (TypeError: no folder)
            return True
    found = _CUDA_LINE.search(version_text)
    return found is None or found.group("value") != "None"


def real_gpu_count() -> int:
    """How many CUDA GPUs torch sees here; 0 without a driver or a CUDA build. Every grading
    process asks, so the answers that need no `import torch` are given without it: the count
    the grading's CLI passed on (PDL_REAL_GPUS), no NVIDIA driver, a CPU build of torch, or
    CUDA_VISIBLE_DEVICES hiding every GPU (grading on a GPU node's cores)."""
    told = os.environ.get(REAL_GPUS_ENV, "")
    if told.isdigit():
        return int(told)
    if "torch" not in sys.modules:
        if sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl"):
            return 0  # no NVIDIA driver
        if cuda_hidden() or not torch_built_with_cuda():
            return 0
    try:
        import torch
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def real_gpu_environment() -> dict[str, str]:
    """What a grading process passes on to the processes it starts so they need not ask."""
    return {REAL_GPUS_ENV: str(real_gpu_count())}


def real_gpu_names(count: int) -> list[str]:
    """The names of the first `count` real GPUs ([] where they cannot be read)."""
    if count <= 0:
        return []
    try:
        import torch
        return [torch.cuda.get_device_name(i) for i in range(count)]
    except Exception:
        return []
