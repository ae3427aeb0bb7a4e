"""HW3: the GPUs the student's own run trained on, read from its trace.

The probe (grader/harness/hw3_probe.py) builds the model and calls forward() itself, so a model
that ran spread for the grader's calls and trained on cuda:0 in the script's own run kept Task
3's points: one that moves every layer onto cuda:0 from its third call on, one that sees it is
run as the script (`__name__ == "__main__"`, an attribute main() sets) and keeps every layer on
cuda:0 from its first pass, one that calls each layer on an empty batch where it is and computes
the real batch on cuda:0 (adv40 F1, F2). So the script's own TRAINING passes are judged: the
passes of the probed class, with gradients on, that a backward reached and an optimizer step
took (never a no_grad evaluation, nor a pass after the run's last step), must run their layers
on as many GPUs as the run has (at most one per layer). The trace gives, per pass, the model
object (`model` of `forward`), the GPUs its layers ran rows on (`layer_devices` of
`forward_out`; `layers_on_no_rows` where every layer was handed an empty batch), and of those
the GPUs where a layer ran on the pass's whole batch, the rows its forward was handed
(`layer_devices_on_batch`, where some GPU's layers ran on fewer: a forward that runs each layer
on one row where it is and the batch on cuda:0 with F.linear on the same weights), whether its
forward moved the layers (`moved_layers`), where each layer was when a pass began (`placement`,
written where it changed), and per step the optimizer object (`optimizer_n`). Only a GPU whose
layers ran on the batch counts for the spread.

A model that never spread is told apart by where its layers were: one whose training passes
ran its layers where __init__ had put them, on fewer GPUs than the run has, nothing moving them
(the base code's cuda:0 and cuda:1 on a node of 5), has its __init__ to fix, not its forward()
(`Collapse.as_built`).

Not judged, as a student doing the tasks would write them: passes of a model main() itself moved
between passes (`model.to("cuda:0")` for a one-GPU baseline), and passes a later optimizer
stepped (Task 4 timed on fewer GPUs with the same object, a new optimizer per size); a second
model object built for fewer GPUs, where another object trained spread. Some training pass must
have run spread in any case.
"""
from __future__ import annotations

from dataclasses import dataclass

from grader.checks.hw3_layout import layers_per_gpu

MODEL_CLASS = "LargeLinearModelMP"


@dataclass(frozen=True)
class Collapse:
    """A training pass (`later`, its number in the run) that ran its layers on fewer GPUs
    (`later_gpus`) than the run's `wanted`; `earlier`: a training pass of the same model object
    that ran on all of them (on `earlier_gpus`), None where no training pass of the run did;
    `moved`: a pass of its model up to the later one moved the layers or found them placed
    elsewhere than the pass before it; `as_built`: where none was moved and the later pass ran
    its layers on the GPUs they were on, each layer's device as __init__ placed it, on the run's
    `node` GPUs (else ())."""
    earlier: int | None
    earlier_gpus: tuple[str, ...]
    later: int
    later_gpus: tuple[str, ...]
    wanted: int
    training: bool = True
    # GPUs whose layers the later pass ran on fewer rows than its batch, or whose results did
    # not reach its output (none counted).
    later_few_rows: tuple[str, ...] = ()
    moved: bool = False
    as_built: tuple[str, ...] = ()
    node: int = 0

    def said(self) -> str:
        if self.as_built:
            return (f"its layers are {layers_per_gpu(list(self.as_built), self.node)}, where "
                    "__init__ placed them, and its training passes ran them there: no training "
                    f"pass ran them on all {self.wanted} GPUs")
        few = (f" (its layers on {_gpus(self.later_few_rows)} ran on fewer rows than the pass "
               "was handed, or their results did not reach its output: the batch was computed "
               "elsewhere)" if self.later_few_rows else "")
        if self.later_gpus:
            ran = (f"ran its layers on {'the batch on ' if few else ''}"
                   f"{_gpus(self.later_gpus)} only{few}")
        elif few:
            ran = f"ran no layer on its whole batch{few}"
        else:
            ran = ("ran its layers on no rows (each was handed an empty batch: the batch was "
                   "computed elsewhere)")
        if self.earlier is None:
            return (f"its training pass {self.later} {ran}, and no training pass ran them on "
                    f"all {self.wanted} GPUs")
        return (f"its training pass {self.earlier} ran the layers on "
                f"{_gpus(self.earlier_gpus)}, its training pass {self.later} {ran}")


def _gpus(devices: tuple[str, ...]) -> str:
    return ", ".join(devices) if devices else "no GPU"


def model_passes(events: list[dict], model_class: str = MODEL_CLASS) -> list[dict]:
    """The root passes of `model_class` in the run's main thread, in order, each as
    {"n", "model", "grad", "gpus", "few_rows", "moved", "step", "used", "placed", "layers",
    "placement", "rows"}
    (gpus: the GPUs its layers ran the pass's batch on, in order, and whose results carried
    gradient back where the trace says (`grad_judged`), () where every layer was handed no rows
    or fewer than the batch, None where no layer was seen run, as for a forward calling
    F.linear on the weights; few_rows: the GPUs whose layers ran on fewer, or gave no part of
    the output; moved: its
    forward moved the model's layers; step: the optimizer steps before it; used: a backward
    reached it; placed: the model's layers were elsewhere when it began than when its last pass
    began; layers: how many layers the model has, where the trace said; placement: each
    layer's device when it began, None where the trace did not say; rows: the rows of its
    input, None where the trace did not say)."""
    used = {e.get("n") for e in events if e.get("event") == "forward_used"}
    grad_used = {(e.get("n"), e.get("device")) for e in events if e.get("event") == "grad_used"}
    passes, open_passes, layers, placements = [], [], {}, {}
    for event in events:
        kind = event.get("event")
        if event.get("thread", "MainThread") != "MainThread" or event.get("nested"):
            continue
        if kind == "forward":
            if not event.get("within"):
                open_passes = []   # a pass whose output was no tensor never closed
            open_passes.append([event, False])
        elif kind == "placement" and open_passes and not open_passes[-1][0].get("within"):
            open_passes[-1][1] = True
            if open_passes[-1][0].get("model") is not None:
                layers[open_passes[-1][0]["model"]] = len(event.get("layers") or ())
                placements[open_passes[-1][0]["model"]] = tuple(
                    _device(layer) for layer in event.get("layers") or ())
        elif kind == "forward_out" and open_passes:
            opened, placed = open_passes.pop()
            if opened.get("within") or opened.get("module") != model_class \
                    or opened.get("model") is None:
                continue
            ran = event.get("layer_devices")
            devices = event.get("layer_devices_on_batch", ran)
            # Where the trace says which GPUs' layers carried gradient back, only those (where
            # no backward reached the pass, as the run stopped in its loss: those whose layer
            # outputs lie in its output's graph): a layer called on the whole batch there, its
            # result thrown away, ran on no part of the output (adv43 F3; grader/vgpu/observe.py
            # _GradWatch).
            unused = ({d for d in event.get("grad_judged") or ()
                       if (opened.get("n"), d) not in grad_used}
                      if opened.get("n") in used else set(event.get("graph_unreached") or ()))
            gpus = None if devices is None else tuple(d for d in devices
                                                      if str(d).startswith("cuda")
                                                      and d not in unused)
            if gpus is None and event.get("layers_on_no_rows"):
                gpus = ()
            few_rows = tuple(d for d in ran or () if str(d).startswith("cuda")
                             and d not in (gpus or ()))
            passes.append({"n": opened.get("n"), "model": opened["model"],
                           "grad": bool(opened.get("grad")),
                           "moved": bool(event.get("moved_layers")), "gpus": gpus,
                           "few_rows": few_rows,
                           "step": opened.get("step"), "used": opened.get("n") in used,
                           "placed": placed, "layers": layers.get(opened["model"]),
                           "placement": placements.get(opened["model"]),
                           "rows": _rows(opened.get("batch"))})
    return passes


def _rows(batch) -> int | None:
    """The rows of a pass's input (`batch` of its `forward` event: the input's shape)."""
    return batch[0] if isinstance(batch, list) and batch and isinstance(batch[0], int) else None


def _device(layer) -> str:
    """A layer's device in a `placement` event ("cuda:1"; for a layer whose parameters are on
    several devices, the text of their list, which names no one GPU)."""
    device = layer.get("device") if isinstance(layer, dict) else None
    return device if isinstance(device, str) else str(device)


def training_passes(events: list[dict], model_class: str = MODEL_CLASS) -> list[dict]:
    """The passes judged: `model_passes` with gradients on that a backward reached and an
    optimizer step took (or, where the run stopped with an error, the step it stopped in), each
    with "judged" False where it is one a student doing the tasks runs on fewer GPUs on purpose
    (of a model main() moved, or stepped by a later optimizer of its model than the first)."""
    optimizer_of = {e.get("index"): e.get("optimizer_n") for e in events
                    if e.get("event") == "step"}
    last = max((i for i in optimizer_of if isinstance(i, int)), default=0)
    stopped = any(e.get("event") == "exception" for e in events)
    if stopped:
        # The run stopped: a pass after its last step is the training step it stopped in (a
        # forward that moved the layers under Adam's state, or away from the target's GPU,
        # stops its step or its loss), not a check after training.
        optimizer_of = {**optimizer_of, last + 1: optimizer_of.get(last)}
    found, previous, moved_by_main, first_optimizer = [], {}, set(), {}
    for one in model_passes(events, model_class):
        model, before = one["model"], previous.get(one["model"])
        previous[model] = one
        if before is not None and one["placed"] and not before["moved"]:
            moved_by_main.add(model)   # placed elsewhere between passes: main() moved it
        step = one["step"] + 1 if isinstance(one["step"], int) else None
        in_flight = stopped and step == last + 1   # its loss or backward may have failed
        if not (one["grad"] and (one["used"] or in_flight)) or one["gpus"] is None \
                or step not in optimizer_of:
            continue
        optimizer = first_optimizer.setdefault(model, optimizer_of[step])
        found.append({**one, "judged": model not in moved_by_main
                      and optimizer_of[step] == optimizer})
    return found


def first_collapse(events: list[dict], gpus: int,
                   model_class: str = MODEL_CLASS) -> Collapse | None:
    """The first judged training pass of a model object that also trained on all of the run's
    `gpus` (at most one per layer) and ran on fewer; else, where no training pass ran on all
    of them, the first training pass; else None."""
    trained = training_passes(events, model_class)
    spread, narrow = {}, []
    for one in trained:
        if one["judged"] and _wanted(one, gpus) is None:
            spread.setdefault(one["model"], one)
        elif one["judged"]:
            narrow.append(one)
    for one in narrow:
        earlier = spread.get(one["model"])
        if earlier is not None:
            return Collapse(earlier["n"], earlier["gpus"], one["n"], one["gpus"],
                            _wanted(one, gpus), later_few_rows=one["few_rows"])
    if spread:
        return None
    # No training pass ran spread: the first that did not, exempt or not (a model main()
    # moved onto cuda:0 before it trained it at all trained on one GPU).
    first = next((one for one in trained if _wanted(one, gpus) is not None), None)
    if first is None:
        return None
    moved, as_built = _as_built(events, first, model_class)
    return Collapse(None, (), first["n"], first["gpus"], _wanted(first, gpus),
                    later_few_rows=first["few_rows"], moved=moved, as_built=as_built, node=gpus)


def _as_built(events: list[dict], later: dict, model_class: str) -> tuple[bool, tuple[str, ...]]:
    """(whether a pass of `later`'s model up to it moved the layers or found them placed
    elsewhere, the layers' devices where none did and `later` ran them all where they are:
    as __init__ placed them, else ())."""
    passes = []
    for one in model_passes(events, model_class):
        if one["model"] == later["model"]:
            passes.append(one)
            if one["n"] == later["n"]:
                break
    moved = any(p["moved"] for p in passes) or any(p["placed"] for p in passes[1:])
    placement = later["placement"] or ()
    ran_there = (bool(placement) and not later["few_rows"]
                 and set(placement) == set(later["gpus"] or ()))
    return moved, (placement if ran_there and not moved else ())


def _wanted(one: dict, gpus: int) -> int | None:
    """The GPUs a training pass should have run its layers on (the run's, at most one per
    layer) where it ran on fewer; None where it ran on them all."""
    wanted = min(gpus, one["layers"] or gpus)
    return wanted if len(set(one["gpus"])) < wanted else None
