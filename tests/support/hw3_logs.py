"""The HW3 probe's forward log of a layout, as the probe writes it for the reference's forward
pass: `x.to(layer_device)` before each layer, a copy only where the device changes."""
from __future__ import annotations


def even_layout(gpus: int, depth: int) -> list[str]:
    """The reference's layout: contiguous blocks, the first GPUs one layer more where `depth`
    does not divide evenly."""
    per_gpu, extra = divmod(depth, gpus)
    return [f"cuda:{g}" for g in range(gpus) for _ in range(per_gpu + (g < extra))]


def forward_log(devices: list[str]) -> list[dict]:
    """The probe's log of a forward pass over layers on `devices`, in order."""
    log, at = [], devices[0]
    for index, device in enumerate(devices):
        log += [{"kind": "to", "src": at, "dst": device, "copied": at != device},
                {"kind": "layer", "index": index}]
        at = device
    return log
