"""What GPUs this machine really has (not the virtual node's)."""
from __future__ import annotations

import os
import sys


def real_gpu_count() -> int:
    """How many CUDA GPUs torch sees here; 0 without a driver or a CUDA build."""
    if sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl") \
            and "torch" not in sys.modules:
        return 0  # no NVIDIA driver: importing torch (1-2 s of CPU) would only say the same
    try:
        import torch
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def real_gpu_names(count: int) -> list[str]:
    """The names of the first `count` real GPUs ([] where they cannot be read)."""
    if count <= 0:
        return []
    try:
        import torch
        return [torch.cuda.get_device_name(i) for i in range(count)]
    except Exception:
        return []
