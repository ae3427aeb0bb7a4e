"""HW3: the GPUs the student's own run trained on, read from its trace.

The probe (grader/harness/hw3_probe.py) calls forward() a fixed number of times, so a forward
that keeps its layers spread for the grader's calls and moves them all onto cuda:0 from some
later call on (its third, its hundredth) was judged spread although every training step of the
script ran on one GPU. The script's own run records, for each forward pass, the model object it
is of (`model` of the `forward` event) and the GPUs its layers ran on (`layer_devices` of the
`forward_out` event, grader/vgpu/observe.py), and whether its forward moved the model's layers
(`moved_layers`): a pass of one model object that ran on fewer GPUs than an earlier pass of the
same object, where forward() moved the layers in between (in that pass or one before it), is
that collapse. Separate objects are never compared (a script that also builds a model on fewer
GPUs, a Task 4 comparison in one run), nor is a model the script's main() moves between passes
(`model.to("cuda:0")` for a one-GPU baseline): forward() did not move it.
"""
from __future__ import annotations

from dataclasses import dataclass

MODEL_CLASS = "LargeLinearModelMP"


@dataclass(frozen=True)
class Collapse:
    """A pass (`later`, its number in the run) of one model object that ran its layers on fewer
    GPUs (`later_gpus`) than an earlier pass of it (`earlier`, on `earlier_gpus`)."""
    earlier: int
    earlier_gpus: tuple[str, ...]
    later: int
    later_gpus: tuple[str, ...]
    training: bool   # the later pass had gradients on (a training step)

    def said(self) -> str:
        return (f"its forward pass {self.earlier} ran the layers on {_gpus(self.earlier_gpus)}, "
                f"its pass {self.later}{' (a training step)' if self.training else ''} on "
                f"{_gpus(self.later_gpus)} only")


def _gpus(devices: tuple[str, ...]) -> str:
    return ", ".join(devices) if devices else "no GPU"


def model_passes(events: list[dict], model_class: str = MODEL_CLASS) -> list[dict]:
    """The root passes of `model_class` in the run's main thread, in order, each as
    {"n", "model", "grad", "gpus", "moved"} (gpus: the GPUs its layers ran on, in order; None
    where no layer was seen run, as for a forward calling F.linear on the weights; moved: its
    forward moved the model's layers)."""
    passes, open_passes = [], []
    for event in events:
        kind = event.get("event")
        if event.get("thread", "MainThread") != "MainThread" or event.get("nested"):
            continue
        if kind == "forward":
            if not event.get("within"):
                open_passes = []   # a pass whose output was no tensor never closed
            open_passes.append(event)
        elif kind == "forward_out" and open_passes:
            opened = open_passes.pop()
            if opened.get("within") or opened.get("module") != model_class \
                    or opened.get("model") is None:
                continue
            devices = event.get("layer_devices")
            passes.append({"n": opened.get("n"), "model": opened["model"],
                           "grad": bool(opened.get("grad")),
                           "moved": bool(event.get("moved_layers")),
                           "gpus": None if devices is None else
                           tuple(d for d in devices if str(d).startswith("cuda"))})
    return passes


def first_collapse(events: list[dict], model_class: str = MODEL_CLASS) -> Collapse | None:
    """The first pass of a model object that ran on fewer GPUs than an earlier pass of the same
    object did, its forward having moved the layers since that pass (in it, in a pass after it,
    or in this one), or None."""
    widest: dict[int, dict] = {}   # per model object: its pass on the most GPUs so far
    moved_since: dict[int, bool] = {}   # per model object: forward() moved its layers since
    for found in model_passes(events, model_class):
        model = found["model"]
        moved = moved_since.get(model, False) or found["moved"]
        moved_since[model] = moved
        if found["gpus"] is None:
            continue
        best = widest.get(model)
        if best is not None and len(set(found["gpus"])) < len(set(best["gpus"])):
            if moved:
                return Collapse(best["n"], best["gpus"], found["n"], found["gpus"],
                                found["grad"])
            continue
        if best is None or len(set(found["gpus"])) > len(set(best["gpus"])):
            widest[model], moved_since[model] = found, found["moved"]
    return None
