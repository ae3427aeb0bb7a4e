"""`torch.profiler` on virtual GPUs: the CPU's activity only.

Asked for CUDA activity (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`, the
default where CUDA seems available, `use_cuda=True`, `use_device="cuda"`), the CPU build of
PyTorch fails to record a CUDA event for every operation and prints a C++ stack trace each
time: 13,000 lines and 11 s for three steps of one layer, 192,000 lines for a Practical 6 step
loop, whose runs then overran their time (a red team's adv34 F6: an honest 9.75 -> 9.25, told
to look for an endless loop). There is no GPU to trace, so CUDA activity is left out, once said
on stderr; the profile holds the CPU's activity: how fast this computer emulates the GPUs, not
GPU time.
"""
from __future__ import annotations

import functools
import sys

SAID = ("pdl-grade: torch.profiler records no CUDA activity on virtual GPUs (there is no GPU to "
        "trace): the profile holds the CPU's activity only, how fast this computer emulates the "
        "GPUs, not GPU time")
_said = False


def _say_once() -> None:
    global _said
    if not _said:
        _said = True
        print(SAID, file=sys.stderr, flush=True)


def _is_cuda(activity) -> bool:
    return getattr(activity, "name", None) == "CUDA"


def cpu_activities(activities):
    """`activities` without CUDA (a list of activities, or of {activity: filters}); the CPU's
    where none were given (the default asks for CUDA wherever CUDA seems available)."""
    from torch.profiler import ProfilerActivity
    if activities is None:
        return [ProfilerActivity.CPU]
    kept = []
    for entry in activities:
        if isinstance(entry, dict):
            entry = {a: f for a, f in entry.items() if not _is_cuda(a)}
            if entry:
                kept.append(entry)
        elif not _is_cuda(entry):
            kept.append(entry)
    return kept


def profile_init(original):
    """torch.profiler.profile's constructor, without CUDA activity."""
    @functools.wraps(original)
    def init(self, *args, activities=None, use_cuda=None, **kwargs):
        asked = activities is None or use_cuda or any(
            _is_cuda(a) or (isinstance(a, dict) and any(map(_is_cuda, a))) for a in activities)
        if asked:
            _say_once()
        return original(self, *args, activities=cpu_activities(activities), **kwargs)
    return init


def legacy_profile_init(original):
    """torch.autograd.profiler.profile's constructor, without CUDA (`use_cuda`, `use_device`)."""
    @functools.wraps(original)
    def init(self, *args, use_cuda=False, use_device=None, **kwargs):
        if use_cuda or (use_device is not None and str(use_device).startswith("cuda")):
            _say_once()
            use_cuda, use_device = False, None
        return original(self, *args, use_cuda=use_cuda, use_device=use_device, **kwargs)
    return init


def install(patcher) -> None:
    import torch.autograd.profiler as legacy
    import torch.profiler as profiler
    patcher.set(profiler.profile, "__init__", profile_init(profiler.profile.__init__))
    patcher.set(legacy.profile, "__init__", legacy_profile_init(legacy.profile.__init__))
