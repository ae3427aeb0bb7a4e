"""What a submission's code may import when it is graded: the course's environment.

The course's handouts use PyTorch and Python's standard library; students also reach for
NumPy (a median, an array of timings). Those are installed wherever the grader is
(pyproject.toml, scripts/install.sh), and the README lists them under "what your code may
import". A script that imports anything else stops with ModuleNotFoundError: the run's
problem then says that the module is not in the grading environment, not only the traceback.
tqdm and matplotlib, which only display, have stand-ins that draw nothing, said in a note.
"""
from __future__ import annotations

import importlib.util
import re

# Beside Python's standard library; each is a dependency of the grader itself.
COURSE_PACKAGES = ("torch", "numpy")

# What a display-only stand-in (grader/vgpu/boot/display_only) writes to stderr when first
# used, and what it drew nothing of.
_STAND_IN_USED = re.compile(r"^pdl-autograder: (\w+) is not in the grading environment: a "
                            r"display-only stand-in was used", re.MULTILINE)
_NOT_DRAWN = {"tqdm": "your progress bars were not drawn", "matplotlib": "your plots were not drawn"}
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_READ_ONLY = re.compile(r"\[Errno 30\] Read-only file system")


def may_import() -> str:
    return ", ".join(COURSE_PACKAGES) + " and Python's standard library"


def missing_module_note(message: str) -> str | None:
    """For "No module named 'x'": what it means here and what to do; None otherwise."""
    found = _NO_MODULE.search(str(message))
    if not found:
        return None
    name = found.group(1)
    top = name.split(".")[0]
    if top != name and _installed(top):
        return (f"{top} is installed in the grading environment but has no module {name} "
                f"there; the course's code may import: {may_import()}.")
    return (f"{top} is not installed in the grading environment; the course's code may import: "
            f"{may_import()}. If {top} is a module of your own, hand in {top}.py beside your "
            "script.")


def display_stand_in_notes(stderr: str) -> list[str]:
    """For each display-only stand-in a run used (its line on stderr): the report's note.
    A note, no points: the stand-ins compute nothing a check reads."""
    names = dict.fromkeys(m for m in _STAND_IN_USED.findall(str(stderr or "")) if m in _NOT_DRAWN)
    return [f"{name} is not in the grading environment: a display-only stand-in was used; "
            f"{_NOT_DRAWN[name]}" for name in names]


def read_only_note(message: str) -> str | None:
    """For a write refused as "Read-only file system": why, and where a run may write."""
    if not _READ_ONLY.search(str(message)):
        return None
    return ("While it is graded, the submission's folder is read-only (nothing a run writes may "
            "change what is graded); the current working directory is writable: write files "
            "to paths relative to it (e.g. open(\"results.json\", \"w\")), not beside the "
            "script (os.path.dirname(__file__)).")


_DUPLICATE_GPU = re.compile(r"Duplicate GPU detected")


def duplicate_gpu_note(message: str) -> str | None:
    """For NCCL's "Duplicate GPU detected": the usual cause in a DDP script, and the fix."""
    if not _DUPLICATE_GPU.search(str(message)):
        return None
    return ("NCCL gives every rank a GPU of its own: local_rank = "
            "int(os.environ[\"LOCAL_RANK\"]), torch.cuda.set_device(local_rank), device = "
            "torch.device(f\"cuda:{local_rank}\") (\"cuda\" alone is cuda:0 on every rank), and "
            "DDP(model, device_ids=[local_rank]).")


_TWO_DEVICES = re.compile(r"Expected all tensors to be on the same device")
_DEVICES_NAMED = re.compile(r"found at least two devices, (\w+(?::\d+)?) and (\w+(?::\d+)?)")


def device_mismatch_note(message: str, site: str | None = None) -> str | None:
    """For PyTorch's "Expected all tensors to be on the same device": the line, and the usual
    cause (a layer's input not moved to that layer's GPU first: a forward pass without its
    `x = x.to(layer_device)`, which a student was left to work out from PyTorch's text)."""
    if not _TWO_DEVICES.search(str(message)):
        return None
    at = f"At {site} one" if site else "One"
    named = _DEVICES_NAMED.search(str(message))
    devices = f" ({named[1]} and {named[2]})" if named else ""
    return (f"{at} operation was handed tensors on two different devices{devices}: the input of "
            "the layer on cuda:k must be moved to cuda:k first, before that layer is called "
            "(x = x.to(next(layer.parameters()).device), the baton pass of a model split over "
            "GPUs; a batch is moved to the GPU of the model it is fed to).")


_STATIC_GRAPH_ASSERT = re.compile(r"expect_autograd_hooks_ INTERNAL ASSERT FAILED")


def static_graph_note(message: str) -> str | None:
    """For DDP's "expect_autograd_hooks_ INTERNAL ASSERT FAILED ... please report a bug to
    PyTorch": PyTorch's own error, which real GPUs raise too (torch 2.13 on CPU tensors with
    gloo, no grader, stops alike), where static_graph=True meets a first backward inside
    no_sync(). PyTorch's words read as a fault of the grader's virtual GPUs (adv30 A4)."""
    if not _STATIC_GRAPH_ASSERT.search(str(message)):
        return None
    return ("This error is PyTorch's own (DDP's reducer), not the grader's, and real GPUs raise "
            "it too: DDP(model, static_graph=True) stops when the first backward pass runs "
            "inside model.no_sync(), as gradient accumulation's first micro-batch does (a known "
            "PyTorch bug: https://github.com/pytorch/pytorch/issues/143580). Leave "
            "static_graph=True out: DDP(model) accumulates no_sync() micro-batches as the "
            "practical asks.")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
