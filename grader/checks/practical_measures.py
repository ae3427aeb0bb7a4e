"""What the practicals' checks measure on a run of the student's code, from its trace.

Each function reads one fact (the forward passes of the script and the rows they saw,
a concatenation, the steps and their times, memory per GPU) and returns None, or an empty
list, where the run did not record it. A check then asks `evidence(run, fact, ...)`: a fact
recorded before a later part crashed still counts (Parts 1 and 3 of a Practical 4 script earn
their points when Part 2 crashes); a missing fact fails with the run's crash as its cause,
or with what is missing when the run completed.
"""
from __future__ import annotations

import ast
import functools
import math
import statistics
from pathlib import Path, PurePosixPath

from grader.checks.second_stage_device import part5_edit, part5_undone_edit
from grader.checks.support import explain
from grader.common.constant_targets import assignment_targets, paired_values
from grader.common.constant_values import whole_number_assigned
from grader.common.loop_bound import constant_fewest, loop_default

# -- evidence before a crash -------------------------------------------------------------------


def evidence(run, found, expected: str, missing: str, look: str | None = None):
    """`found` when the run recorded it (even if it crashed later); otherwise the check fails:
    with the run's problem (crash, hang, missing file) as the cause, or with `missing`."""
    if found:
        return found
    if not run.ok:
        raise AssertionError(explain(expected, run.problem(), look))
    raise AssertionError(explain(expected, missing, look))


# -- forward passes and the rows they saw ------------------------------------------------------


def forward_passes(run, rank: int = 0) -> list[dict]:
    """The rank's forward passes of root modules, in the order they began, each as
    {module, step, batch, rows, rows_in, out_shape, out_device, rows_out, storage_out, grad,
    trains, n}:
    the main thread's and those of threads the script starts itself (a chunk per thread), never
    a DataParallel replica's (part of the wrapper's pass). Rows are fingerprints (sum, sum of
    squares per row), recorded before the first optimizer step only. `rows`: the rows it ran
    on (see `_rows_as_run`). `trains`: run with gradients and its output reached by a backward
    pass (see `trains`). `rows_dropped` / `rows_out_dropped`: the input's / output's rows were
    not recorded (the process had spent its records of rows: grader/vgpu/rows.py), which is
    not known, never other rows; a pass with gradients that found them spent has them from
    the `forward_rows` record written when a backward reached it. `sum_out`: its output's sum
    (recorded whatever the budget of rows). `layer_devices`: the GPUs its layers ran on, in
    the order they first ran (`forward_out`'s); `layer_rows`: the most rows a layer on each of
    them was handed (None where not recorded); `grad_unused`: the GPUs among them where the
    pass's layers (or the model's own parameters) were watched and no gradient but zeros came
    back through any of them (`forward_out`'s `grad_judged`, the `grad_used` records: their
    results did not reach the output; grader/vgpu/observe.py _GradWatch), [] in a trace
    without them; `grad_faint`: {GPU: share} for those of them where a gradient came back but
    their results carry only that share of the pass (`grad_faint` records: `x + 1e-6 *
    spare(x)`); `data_parallel`: the pass is an nn.DataParallel's (its output's record says
    its `device_ids`); `elements`: the parameter elements its module holds (the model's
    first `placement` record, which follows its first pass's `forward`), None where not
    recorded."""
    passes, open_passes = [], {}
    known = recorded_rows(run, rank)
    grad_used = {(e.get("n"), e.get("device")) for e in run.events
                 if e.get("event") == "grad_used" and e.get("rank", 0) == rank}
    faint = {(e.get("n"), e.get("device")): e.get("share") for e in run.events
             if e.get("event") == "grad_faint" and e.get("rank", 0) == rank}
    reached_rows = {e.get("n"): _rows_in(e, known) for e in run.events
                    if e.get("event") == "forward_rows" and e.get("rank", 0) == rank}
    reached = reached_passes(run, rank)
    wrappers = wrapper_passes(run.events)
    elements, last_model = {}, None   # {model number: its parameter elements}
    for event in run.events:
        if event.get("rank", 0) != rank:
            continue
        thread = (event.get("thread"), event.get("tid"))
        if event.get("event") == "placement" and last_model is not None:
            elements.setdefault(last_model, sum(int(layer.get("params") or 0)
                                                for layer in event.get("layers") or ()))
        if event.get("event") == "forward":
            last_model = event.get("model")
            if not script_forward(event):
                continue
            if (event.get("rank", 0), event.get("n")) in wrappers:
                open_passes.pop(thread, None)   # its output is the wrapper's, not a pass's
                continue
            rows_in, dropped = _rows_in(event, known), bool(event.get("rows_dropped"))
            if dropped and reached_rows.get(event.get("n")) is not None:
                rows_in, dropped = reached_rows[event.get("n")], False
            open_passes[thread] = {
                "module": event.get("module"), "class_id": event.get("class_id"),
                "step": event.get("step"),
                "batch": event.get("batch"), "rows_in": rows_in,
                "rows_dropped": dropped, "rows_out_dropped": False,
                "out_shape": None, "out_device": None, "rows_out": None,
                "input_device": event.get("input_device"), "grad": event.get("grad", True),
                "trains": trains(event, reached), "n": event.get("n"),
                "model": event.get("model"), "input_at": event.get("input_at"),
                "rows": rows_of(event.get("batch")), "rows_all": event.get("rows_all"),
                "rows_inside": None, "inside_calls": None, "sum_out": None,
                "layer_devices": None, "layer_rows": None, "grad_unused": [],
                "grad_faint": {}, "data_parallel": False, "elements": None}
            passes.append(open_passes[thread])
        elif event.get("event") == "forward_out" and thread in open_passes:
            done = open_passes.pop(thread)
            done.update(out_shape=event.get("shape"), out_device=event.get("device"),
                        sum_out=event.get("sum"), layer_devices=event.get("layer_devices"),
                        layer_rows=event.get("layer_rows"),
                        grad_unused=[d for d in event.get("grad_judged") or ()
                                     if (done["n"], d) not in grad_used],
                        grad_faint={d: faint[(done["n"], d)] for d in event.get("grad_judged")
                                    or () if (done["n"], d) not in grad_used
                                    and (done["n"], d) in faint},
                        rows_out=_rows_in(event, known), storage_out=event.get("storage"),
                        rows_out_dropped=bool(event.get("rows_dropped")),
                        rows_inside=event.get("rows_inside"),
                        inside_calls=_micro_batches_inside(event.get("inside_calls"),
                                                           rows_of(done["batch"])),
                        data_parallel=bool(event.get("device_ids")))
            _rows_as_run(done)
            if event.get("stage") and event.get("continues"):
                _stage_joins(passes, max(event["continues"]), done)
    for found in passes:
        found["elements"] = elements.get(found["model"])
    return passes


def _stage_joins(passes: list[dict], continued: int, stage: dict) -> None:
    """A further stage of pass `continued` (a root module in its own DDP handed that pass's
    output, its parameters on other GPUs: grader/vgpu/observe.py `_is_stage`; adv49 F5, two
    stages as two root modules, each in its own DDP): its layers ran in that pass, so their GPUs,
    rows and gradients are the pass's, after its own. The stage's record stays a pass that
    trains nothing of its own, as a continuing module's always was."""
    joined = next((p for p in passes if p["n"] == continued), None)
    if joined is None or not stage["layer_devices"]:
        return
    devices = list(joined["layer_devices"] or [])
    rows = joined["layer_rows"] if isinstance(joined["layer_rows"], list) else None
    stage_rows = stage["layer_rows"] if isinstance(stage["layer_rows"], list) else None
    for index, device in enumerate(stage["layer_devices"]):
        if device in devices:
            continue
        devices.append(device)
        if rows is not None:
            rows.append(stage_rows[index] if stage_rows is not None
                        and index < len(stage_rows) else None)
    joined.update(layer_devices=devices, layer_rows=rows,
                  grad_unused=joined["grad_unused"] + [d for d in stage["grad_unused"]
                                                       if d not in joined["grad_unused"]],
                  grad_faint={**stage["grad_faint"], **joined["grad_faint"]})


def _micro_batches_inside(calls, rows) -> list[int] | None:
    """The rows of the micro-batches a pass's own forward cut its batch into: its first layer's
    calls (`inside_calls`), where there are several, each on fewer rows than the pass, and
    together its rows; None otherwise (a layer applied again to the same rows is no cut)."""
    if not isinstance(calls, list) or len(calls) < 2 or not isinstance(rows, int) or \
            not all(isinstance(c, int) and not isinstance(c, bool) and 0 < c < rows
                    for c in calls):
        return None
    return calls if sum(calls) == rows else None


def recorded_rows(run, rank: int = 0) -> dict[str, list]:
    """{rows_id: rows} of the rank's records: a record whose rows equal an earlier one's says
    `rows_as` (that one's rows_id) instead of repeating them (grader/vgpu/rows.py)."""
    return {e["rows_id"]: e["rows"] for e in run.events if e.get("rank", 0) == rank
            and isinstance(e.get("rows_id"), str) and e.get("rows")}


def _rows_in(event: dict, known: dict) -> list | None:
    """A record's rows: its own, or those of the earlier record it names (`rows_as`)."""
    rows = event.get("rows")
    if rows is None and isinstance(event.get("rows_as"), str):
        return known.get(event["rows_as"])
    return rows


def _rows_as_run(forward: dict) -> None:
    """A pass whose output has other rows than its first argument, or that was handed a tensor
    of more rows beside it, or whose layers were handed more, ran the model on other data than
    that argument: `model(x[:16], whole=x)` is a pass on the whole batch recorded as 16 rows
    (two red teams' P10 and P6, adv27 and adv28, the second returning 16 rows that carry the
    whole batch's loss). Its rows are then the largest count, and its input's fingerprints are
    not its data."""
    rows, out = rows_of(forward["batch"]), rows_of(forward["out_shape"])
    if rows is None:
        return
    more = [n for n in (out, forward.get("rows_all"), forward.get("rows_inside"))
            if isinstance(n, int) and not isinstance(n, bool)]
    if any(n != rows for n in more[:1]) or any(n > rows for n in more[1:]):
        forward["rows"] = max([rows, *more])
        forward["rows_in"] = None


def script_forward(event: dict) -> bool:
    """A forward pass the script itself runs (in any thread of its own), not a replica's."""
    return event.get("event") == "forward" and not event.get("nested")


def wrapper_passes(events) -> set[tuple[int, int]]:
    """(rank, n) of the passes of modules that only wrap the model (a module of the script's
    own without parameters of its own): the model's passes inside them (`within`) are the
    passes."""
    return {(e.get("rank", 0), e["within"]) for e in events
            if e.get("event") == "forward" and e.get("within") is not None}


def reached_passes(run, rank: int = 0) -> set:
    """The numbers of the rank's forward passes whose output a backward pass reached with a
    gradient of their step's size (`reached_in`), less those of steps whose gradient was
    computed mostly outside the passes (`made_outside`) and those that trained none of the
    parameters their step stepped (`unstepped`)."""
    steps = run.of("step", rank)
    outside = {e.get("index", 0) - 1 for e in steps if made_outside(e)}
    of_outside = {e.get("n") for e in run.of("forward", rank) if e.get("step") in outside}
    left_out = set().union(*map(unstepped, steps))
    return reached_in([e for e in run.of("forward_used", rank)
                       if e.get("n") not in left_out]) - of_outside


# A pass trains where the gradient reaching its output is at least this share of the largest
# reaching a pass of the same step. Honest micro-batches of one step get gradients of one size
# (a loss divided by MICRO_BATCHES, micro-batches within a row or a few of each other: a
# factor of 3 at the very most); a "micro-batch" given `out.sum() * 1e-30` beside the pass that
# makes the step trains nothing (a red team, adv28).
REACHED_SHARE = 1e-2


def reached_in(used: list[dict]) -> set:
    """The numbers of the passes `forward_used` records say a gradient reached, each step's
    passes whose gradient (`g`) is below REACHED_SHARE of the step's largest left out. A record
    without `g` (a trace written before it was recorded) counts."""
    largest: dict = {}
    for event in used:
        g = event.get("g")
        if isinstance(g, (int, float)) and not isinstance(g, bool):
            largest[event.get("step")] = max(largest.get(event.get("step"), 0.0), float(g))
    return {event.get("n") for event in used
            if not isinstance(event.get("g"), (int, float)) or isinstance(event.get("g"), bool)
            or event["g"] >= REACHED_SHARE * largest.get(event.get("step"), 0.0)}


# A step was made beside the model's forward passes where the part of its gradient computed
# outside them is over this share of the two parts (by norm, grader/vgpu/gradient_sources.py):
# the passes gave next to nothing. An honest loop puts a penalty on the weights there, which a
# tutorial's l2_lambda = 1e-3 can make half of the step (a red team's honest P10, adv29); a step
# computed from the weights directly (`F.linear(x, model.fc.weight)`, gradients of
# `torch.autograd.grad`) beside passes given a tiny gradient is all of it (adv27).
OUTSIDE_LIMIT = 0.99
# ... or where the script wrote more than this share of the `.grad` applied (`written`,
# grader/vgpu/grad_writes.py): honest loops write at most a penalty into .grad (weight decay, a
# few hundredths of it) or scale it; `.grad` replaced by a gradient of detached copies of the
# weights, less what the last backward adds, is nine tenths or more of it (a red team, adv31).
WRITTEN_LIMIT = 0.5


OUTSIDE_SAID = ("computed outside the model's forward passes (from its weights directly, e.g. "
                "F.linear(x, model.fc.weight), or written into .grad)")
# ... or where the model's weights were written beside its optimizer between its steps
# (`weights_written`, grader/vgpu/side_steps.py): a copy trained on the whole batch (by an
# optimizer of its own, or by hand as plain tensors), loaded into the model before
# "micro-batches" of a loss scaled by 1e-9 (adv32 H1's forgery, adv35 F1).
WEIGHTS_WRITTEN_SAID = ("the model's weights were written between its optimizer steps, not by "
                        "its optimizer (load_state_dict, copy_ or .data, or a step hook of the "
                        "script's own: some of them grew in magnitude, as a load of weights "
                        "trained elsewhere makes them; a clamp or weight decay only shrinks "
                        "them), so they did not come from this step's passes")


def unvouched_said(code: str) -> str:
    """Why a step's weights are not vouched for: code of the script's own ran in the step."""
    return (f"{code} ran in the model's optimizer step while another optimizer or pass trained "
            "other parameters; the grader cannot vouch that it left the weights alone, so they "
            "are not known to come from this step's passes (a step hook that only logs: "
            "log after optimizer.step() instead)")


def outside_share_said(share: float) -> str:
    """How much of a step's gradient came from outside the passes, in words: a share of 1 or
    more (a DDP rank's own gradient outside beside the ranks' average applied) is all of it."""
    return "all" if share >= 0.995 else f"{share:.0%}"


def steps_made_outside(run, rank: int = 0) -> str:
    """'' or what the rank's steps made outside the passes were, for a message that found no
    training pass."""
    made = [e for e in run.of("step", rank) if made_outside(e)]
    if not made:
        return ""
    loaded = sum(e.get("weights_written") is True for e in made)
    unvouched = [e["weights_unvouched"] for e in made if e.get("weights_unvouched")]
    if unvouched and len(unvouched) == len(made):
        return f"; in {len(made)} optimizer step(s) {unvouched_said(unvouched[0])}, so no pass " \
            "of them trains"
    if loaded == len(made):
        return f"; in {loaded} optimizer step(s) {WEIGHTS_WRITTEN_SAID}, so no pass of them trains"
    return (f"; the gradient of {len(made)} optimizer step(s) was {OUTSIDE_SAID}, so no pass "
            "of those steps trains")


def made_outside(step: dict) -> bool:
    """Whether a step record's gradient was made beside the model's forward passes
    (grader/vgpu/gradient_sources.py): its `outside` share over OUTSIDE_LIMIT, or a
    `backward_share` (what backward passes gave the parameters was a hundredth of the gradient
    applied: the rest written into .grad), or a `written` share over WRITTEN_LIMIT (the script
    wrote most of .grad itself), or a walk of its graph that found no pass (`walk_limit`), or
    the weights it stepped written beside it since its last step while others trained
    (`weights_written`)."""
    return _share_over(step.get("outside"), OUTSIDE_LIMIT) or "backward_share" in step or \
        _share_over(step.get("written"), WRITTEN_LIMIT) or bool(step.get("walk_limit")) or \
        step.get("weights_written") is True


def _share_over(share, limit: float) -> bool:
    return isinstance(share, (int, float)) and not isinstance(share, bool) and share > limit


def outside_of(step: dict) -> float:
    """The share of a step's gradient made beside the passes, for the messages: 1 where
    backward gave next to none of .grad or its graph was too large to follow, the share the
    script wrote where it wrote most of .grad."""
    share = step.get("outside")
    if "backward_share" in step or step.get("walk_limit") or step.get("weights_written") is True:
        return 1.0
    if _share_over(step.get("written"), WRITTEN_LIMIT):
        return min(1.0, float(step["written"]))    # the part the script wrote into .grad
    if not isinstance(share, (int, float)) or isinstance(share, bool):
        return 1.0
    return float(share)


def unstepped(step: dict) -> set:
    """The numbers of the passes a step record says trained none of the parameters that step
    stepped, where another of its passes did (grader/vgpu/stepped_passes.py): a copy of the
    model run on the whole batch to check the accumulated gradient against (a red team's
    honest P10, adv31, had its pass and backward counted as a fifth micro-batch)."""
    numbers = step.get("unstepped")
    if not isinstance(numbers, list):
        return set()
    return {n for n in numbers if isinstance(n, int) and not isinstance(n, bool)}


def trains(forward: dict, reached: set) -> bool:
    """Whether a forward record trains: run with gradients, and its output reached by a
    backward pass. A pass whose output no backward reaches (thrown away, or made without a
    graph) trains nothing: a red team had passed such "micro-batches" beside one hidden
    full-batch pass. A record without a number (a made-up trace) is taken as it says."""
    return bool(forward.get("grad", True)) and ("n" not in forward or forward["n"] in reached)


def model_steps(windows: list[list[dict]]) -> list[list[dict]]:
    """Observation.by_step's windows with the model's steps that go on the one before them
    (`joins`: no pass between, other parameters; one optimizer per pipeline stage, both stepped
    after the micro-batches, adv35 H10) joined into it. The joined window closes on one record
    for its steps: the first made beside its passes, else the first, `weights_written` where
    any part's weights were."""
    joined: list[list[dict]] = []
    for events in windows:
        closing = events[-1] if events and events[-1].get("event") == "step" else {}
        if not (closing.get("joins") and joined):
            joined.append(events)
            continue
        previous = joined[-1]
        parts = [previous[-1], closing]
        record = dict(next((p for p in parts if made_outside(p)), parts[0]))
        for field in ("weights_written", "weights_unvouched"):
            record.update(next(({field: p[field]} for p in parts if p.get(field)), {}))
        joined[-1] = previous[:-1] + events[:-1] + [record]
    return joined


def training_events(events: list[dict]) -> list[dict]:
    """Events of one step (Observation.by_step) less what trains nothing: forward passes no
    backward reached, and backward passes that reached none of the step's forward passes (a
    backward of a tensor of the script's own); no forward pass where the step's gradient came
    mostly from outside the passes (`made_outside`); no pass that trained none of the
    parameters the step stepped, nor a backward that reached only such passes (`unstepped`: a
    copy of the model checked on the whole batch), nor a DDP all-reduce inside such a backward.
    Kept as they are where the passes are not numbered (a made-up trace)."""
    if not any("n" in e for e in events if e.get("event") == "forward"):
        return events
    closing = events[-1] if events and events[-1].get("event") == "step" else {}
    left_out = unstepped(closing)
    reached = set() if made_outside(closing) else reached_in(
        [e for e in events if e.get("event") == "forward_used" and e.get("n") not in left_out])
    wrappers = {n for _, n in wrapper_passes(events)}
    kept, dropped = [], False
    for at, event in enumerate(events):
        kind = event.get("event")
        if kind == "forward" and (not trains(event, reached) or event.get("n") in wrappers):
            continue
        if kind == "backward":
            dropped = not _reaches_a_pass(events, at, left_out)
            if dropped:
                continue
        # A DDP all-reduce in a backward left out is that backward's: a probe wrapped in DDP
        # too, on the model's detached output (adv35 H9), all-reduces its own gradients.
        if dropped and kind == "collective" and event.get("source") == "ddp_gradients":
            continue
        kept.append(event)
    return kept


def _reaches_a_pass(events: list[dict], at: int, left_out: set) -> bool:
    for event in events[at + 1:]:
        kind = event.get("event")
        if kind == "forward_used" and event.get("n") not in left_out:
            return True
        if kind in ("backward", "step"):
            return False
    return False


def rows_of(batch_shape) -> int | None:
    return batch_shape[0] if isinstance(batch_shape, list) and batch_shape else None


def same_row(a, b) -> bool:
    """Two row fingerprints [sum, sum of squares] of one row computed twice (float rounding
    from other kernel tilings allowed), or of two different rows."""
    try:
        (s1, q1), (s2, q2) = a, b
    except (TypeError, ValueError):
        return False
    norm = math.sqrt(max(abs(q1), abs(q2), 0.0))
    return (abs(s1 - s2) <= 1e-4 * max(abs(s1), abs(s2)) + 1e-3 * norm + 1e-9
            and abs(q1 - q2) <= 1e-4 * max(abs(q1), abs(q2)) + 1e-9)


def match_rows(rows, reference) -> list[int | None]:
    """For each row of `rows`, the index of an equal row of `reference` (None if none)."""
    found = []
    for row in rows or []:
        found.append(next((i for i, other in enumerate(reference or []) if same_row(row, other)),
                          None))
    return found


def concatenations(run, rank: int = 0) -> list[dict]:
    """torch.cat (concat, concatenate, vstack, stack) calls of the user's code along dim 0,
    each with its rows (those of the record it names by `rows_as`; None where they were not
    recorded: `rows_dropped`)."""
    known = recorded_rows(run, rank)
    return [{**e, "rows": _rows_in(e, known)} for e in run.of("concat", rank)
            if e.get("dim") in (0, None)]


def comparisons(run, rank: int = 0) -> list[dict]:
    """torch.allclose / torch.equal calls of the user's code, each with its two operands'
    {shape, rows, storage}."""
    return [e for e in run.of("compare", rank) if len(e.get("operands") or []) == 2]


# -- processes, steps, placement ----------------------------------------------------------------


def trained_ranks(run) -> list[int]:
    """Ranks that took at least one optimizer step."""
    return sorted({e.get("rank", 0) for e in run.of("step")})


def learning_ranks(run) -> list[int]:
    """Ranks that took an optimizer step after a backward pass through the model's forward
    passes (training_events). An optimizer.step() with no backward before it (a training loop
    left empty, a TA's P10 s11) or after a backward of a tensor of the script's own changes
    nothing, so it is no training; a loop whose loss weight is 0 runs its passes and is one
    (its zero gradient is the gradient checks' to charge: a TA's audit 29 had lost the layout's
    points for it). Where the passes are not numbered (a made-up trace) a backward counts only
    beside gradients that are not all zero."""
    found = set()
    for rank in trained_ranks(run):
        for events in run.by_step(rank):
            numbered = any("n" in e for e in events if e.get("event") == "forward")
            grads = events[-1].get("grads") or {}
            backward = any(e.get("event") == "backward" for e in training_events(events))
            if backward and (numbered or (grads.get("sumsq") or 0) > 0):
                found.add(rank)
                break
    return sorted(found)


def not_learning(run) -> str:
    """Why learning_ranks(run) is empty, as the feedback says it."""
    stepped = trained_ranks(run)
    if not stepped:
        return "no rank took an optimizer step"
    return (f"optimizer steps on rank(s) {stepped}, but none after a backward pass that "
            "produced gradients: an optimizer.step() with no gradient to apply trains nothing")


def unscattered_training(run) -> str | None:
    """How a DataParallel script's run trained without DataParallel scattering a batch, in the
    feedback's words; None where it scattered one or never trained. Such a run (a wrapper made
    and never called: a TA's s14) trains on one GPU and measures nothing of DataParallel:
    Practical 5's answers about DataParallel and Practical 6's comparison with it are not
    checked against it."""
    if not run.of("step") or run.of("dp_scatter"):
        return None
    if any(e.get("module") == "DataParallel" for e in run.of("forward")):
        return "DataParallel ran, but split no batch over the GPUs (device_ids with one GPU?)"
    return ("the model trained, but never through a DataParallel wrapper: on one GPU, no batch "
            "split, no replica")


# A step's gradients were synchronised by DDP where the buckets it all-reduced since the steps
# before held at least this share of the stepped parameters' `.grad` (by norm: `synced`) and of
# their elements (`synced_elements`, grader/vgpu/synced_grads.py). An honest DDP gives 1 and 1;
# a DDP(nn.Linear(1, 1)) added to the loss times 0.0 beside a model never wrapped gives 0
# (adv52 F2); a head or loss weight left out of the wrapper lowers it a little.
SYNCED_SHARE = 0.5


def synced_step(step: dict) -> bool:
    """Whether a step record's all-reduces held the parameters it stepped (True where that is
    not recorded: a trace written before it was)."""
    if "synced" not in step and "synced_elements" not in step:
        return True
    return all(_share_over(step.get(key), SYNCED_SHARE - 1e-9)
               for key in ("synced", "synced_elements"))


# A step trained through DataParallel where what its replicas' gradients summed back onto the
# stepped parameters is at least this share of their `.grad` (by norm: `dp_carried`,
# grader/vgpu/replica_grads.py), and they hold at least this share of the stepped elements
# (`dp_held`). An honest wrapper gives 1 and 1 (more where the script clips or unscales .grad);
# a wrapper around a module that returns its input, the model then run on the whole batch on
# cuda:0, gives 0 (adv52 F1); a penalty on the weights written into the loss lowers it a little.
# A step whose every training pass is the wrapper's needs only this share of the wrapped
# model's own gradient (`dp_own`): what trains beside it then continues its output (a head).
CARRIED_SHARE = 0.5


def replicas_untrained(run) -> str | None:
    """How a DataParallel script's run scattered its batches but trained its model beside the
    wrapper, in the feedback's words; None where the gradient of all its steps but a tenth at
    most (UNCARRIED_STEPS) came back through DataParallel's replicas (`_through_replicas`), or
    where that is not recorded (a trace without `dp_carried`). `nn.DataParallel(Spread(
    model))`, whose forward returns its input, scatters, replicates and gathers the batch, and
    the model then trains on cuda:0 on all of it (adv52 F1): no replica of it computed anything
    the step used."""
    steps = [e for e in run.of("step") if "dp_carried" in e]
    if not steps or not run.of("dp_scatter"):
        return None
    passes: dict[int, list[dict]] = {}   # per rank, read once where a step asks for them

    def passes_of(rank: int) -> list[dict]:
        if rank not in passes:
            passes[rank] = forward_passes(run, rank)
        return passes[rank]

    beside = [e for e in steps if not _through_replicas(e, passes_of)]
    if len(beside) <= UNCARRIED_STEPS * len(steps):
        return None
    if len(beside) < len(steps):
        first = beside[0].get("index", steps.index(beside[0]) + 1)
        return (f"DataParallel trained only {len(steps) - len(beside)} of the {len(steps)} "
                f"optimizer steps; from step {first} on (of {len(beside)} steps) the gradient "
                "the optimizer stepped did not come back through its replicas: the model "
                "trained outside the wrapper, on one GPU (call the model through it at every "
                "step: model = nn.DataParallel(model), then model(x))")
    most = max(float(e.get("dp_carried") or 0.0) for e in steps)
    came = "none" if most == 0 else f"at most {most:.0%}"
    return (f"DataParallel split each batch and ran its replicas, but {came} of the gradient the "
            "optimizer stepped came back through them: the model trained outside the wrapper, "
            "on one GPU (call the model through it: model = nn.DataParallel(model), then "
            "model(x))")


# The share of a DataParallel run's steps that may train beside the replicas: one honest step
# among shells (the first, or an untimed warm-up) had paid every point (adv56 F2: 9.25 of 12
# where a TA gives 1.5 to 3); a tenth leaves a step of a check or a baseline beside them.
UNCARRIED_STEPS = 0.1


def _through_replicas(step: dict, passes_of) -> bool:
    """Whether a step record's gradient came back through DataParallel's replicas: at least
    CARRIED_SHARE of the stepped gradient's norm and of the stepped elements; or, where every
    pass that trains the step is a DataParallel wrapper's (a head on cuda:0 after it only
    continues its output), at least that share of the wrapped parameters' own gradient
    (`dp_own`), and one of those wrappers holds the template's MLP (`_wraps_the_model`). A
    head four times the wrapped MLP's size holds 80% of the stepped elements and more than
    half of the gradient (adv53 F3: 0.75 of 12 where a TA gives 9.25); a small wrapper called
    on the batch beside a model run on it unwrapped leaves that model's pass one of the
    step's own, which trains. `passes_of(rank)`: the rank's forward_passes."""
    if _share_over(step.get("dp_carried"), CARRIED_SHARE - 1e-9) \
            and _share_over(step.get("dp_held"), CARRIED_SHARE - 1e-9):
        return True
    if not _share_over(step.get("dp_own"), CARRIED_SHARE - 1e-9):
        return False
    of_step = [p for p in passes_of(step.get("rank", 0))
               if p["step"] == step.get("index", 0) - 1]
    passes = [p for p in of_step if p["trains"]]
    features = max((p["batch"][-1] for p in of_step if p["grad"] and p["batch"]
                    and isinstance(p["batch"][-1], int)), default=0)
    return bool(passes) and all(p["data_parallel"] for p in passes) \
        and any(_wraps_the_model(p, features) for p in passes)


# The template's MLP (student_template/practical5/practical5_dp.py): Linear(DIM, HIDDEN) and
# Linear(HIDDEN, DIM), HIDDEN = 2 * DIM (512 and 1024): 4 * DIM**2 weights.
MODEL_WEIGHTS_PER_SQUARED_FEATURE = 4


def _wraps_the_model(dp_pass: dict, features: int) -> bool:
    """Whether a DataParallel pass's module holds the template's MLP: at least its weights for
    rows of `features` (DIM, the widest rows a pass of the step with gradients was handed: a
    wrapper handed the batch cut into narrower rows is measured by the model's; 4 * DIM**2),
    counted from the wrapper's `placement` record, whatever its classes are named or whose
    they are. The model run unwrapped on a small wrapped layer's output continues the wrapper
    as a head does (`model(nn.DataParallel(nn.Linear(DIM, DIM))(x))`, eng_p5steps'
    small_dp_in_front: 7.5 of 12 with every DataParallel item passing, where a TA gives them
    nothing): the wrapper holds DIM**2 weights, not the model, whether the model is a class of
    the script's own or torch's nn.Sequential (eng_p5model's forge_torchonly). A head after
    the wrapped MLP, however large and of whatever class (eng_p5model's owncls_head), leaves
    the MLP wrapped."""
    return features > 0 and dp_pass["elements"] is not None \
        and dp_pass["elements"] >= MODEL_WEIGHTS_PER_SQUARED_FEATURE * features ** 2


def devices_of_rank(run, rank: int) -> set[str]:
    """Devices of the rank's model parameters, as its forward passes found them."""
    found = set()
    for event in run.of("placement", rank):
        for layer in event.get("layers", []):
            device = layer.get("device")
            found.update(map(str, device) if isinstance(device, list) else [str(device)])
    return found


def zeroed_passes(run, rank: int) -> set:
    """The numbers of the rank's passes whose gradients a later zero_grad of the same step threw
    away (an optimizer's or a module's covering all of the pass's model's trained parameters:
    the trace's `zero_grad` records). An untimed warm-up forward and backward before the loop,
    its gradients zeroed without a step, trains no rows of the first step (adv40 H4)."""
    # Only gradients already made are thrown away: a pass whose backward comes after the
    # zero_grad (`out = model(x); optimizer.zero_grad(); loss.backward()`) trains the step.
    passes, made, zeroed = {}, [], set()
    for event in run.events:
        if event.get("rank", 0) != rank:
            continue
        kind = event.get("event")
        if kind == "forward" and "n" in event:
            passes[event["n"]] = (event.get("step"), event.get("model"))
        elif kind == "forward_used" and event.get("n") in passes:
            made.append(event["n"])
        elif kind == "zero_grad":
            models = set(event.get("models") or [])
            zeroed.update(n for n in made
                          if passes[n][0] == event.get("step") and passes[n][1] in models)
    return zeroed


def same_input(forward: dict, earlier: dict) -> bool:
    """Whether two passes read the very same rows: the same memory, offset, shape and strides
    (the trace's `input_at`). Equal values in other memory are other rows: a row with its
    columns reversed has the same sum and sum of squares, and torch.ones' rows are all alike
    (adv40 F3, H5)."""
    at = forward.get("input_at")
    return at is not None and at == earlier.get("input_at")


def step_batches(run, rank: int) -> dict[int, list[dict]]:
    """{step: the rank's passes that train that optimizer step}, by the `step` their records
    carry (the optimizer steps before them): the passes run with gradients that a backward
    reached, after the last zero_grad of the step that threw their gradients away, a pass on
    the very rows of an earlier one of the step (`same_input`) counted once. Passes after the
    last optimizer step train none and are left out, unless no pass was followed by one.
    Worked out once per run and rank (the run's `derived`: the first-step helpers and the
    checks each ask for it, and it walks the run's events); read it, never change it."""
    key = ("step_batches", rank)
    if key not in run.derived:
        run.derived[key] = _step_batches(run, rank)
    return run.derived[key]


def _step_batches(run, rank: int) -> dict[int, list[dict]]:
    zeroed = zeroed_passes(run, rank)
    steps = len(run.of("step", rank))
    found: dict[int, list[dict]] = {}
    for forward in forward_passes(run, rank):
        if not forward["trains"] or forward["n"] in zeroed or forward["step"] is None:
            continue
        kept = found.setdefault(forward["step"], [])
        if not any(same_input(forward, earlier) for earlier in kept):
            kept.append(forward)
    stepped = {s: p for s, p in found.items() if s < steps and p}
    return stepped or {s: p for s, p in sorted(found.items())[:1]}


def first_step_passes(run, rank: int) -> list[dict]:
    """The passes that train the rank's first optimizer step (step_batches)."""
    return step_batches(run, rank).get(0, [])


def first_step_rows(run, rank: int) -> list[list[float]]:
    """The rows the rank's model trained on before its first optimizer step (its first batch;
    an evaluation pass under torch.no_grad(), a pass no backward reached, or one whose
    gradients a zero_grad threw away, is no training batch; step_batches)."""
    rows = []
    for forward in first_step_passes(run, rank):
        if forward["rows_in"]:
            rows += forward["rows_in"]
    return rows


def first_step_output_sums(run, rank: int) -> list[float]:
    """The sums of the outputs of the passes the rank trained on before its first optimizer
    step, recorded whatever the budget of rows: the ranks' replicas start with the same weights
    (DDP broadcasts rank 0's), so the same rows give the same outputs, where the rows
    themselves were not recorded."""
    return [float(p["sum_out"]) for p in first_step_passes(run, rank)
            if isinstance(p["sum_out"], (int, float)) and not isinstance(p["sum_out"], bool)]


def first_step_rows_dropped(run, rank: int) -> bool:
    """Whether some rows of the rank's first step were not recorded (first_step_rows is then
    a part of them): its process had spent its records of rows (grader/vgpu/rows.py)."""
    return any(forward["rows_dropped"] for forward in first_step_passes(run, rank))


def distinct_rows(rows) -> list:
    kept = []
    for row in rows:
        if not any(same_row(row, other) for other in kept):
            kept.append(row)
    return kept


# -- memory ---------------------------------------------------------------------------------------


def peak_memory(run) -> dict[str, int]:
    """Peak bytes per GPU over the whole run, every rank's process together (on virtual GPUs
    each process sees only what it allocated itself)."""
    peaks: dict[str, int] = {}
    for event in [*run.of("step"), *run.of("exit")]:
        for m in event.get("memory") or []:
            device = str(m.get("device", ""))
            if device.startswith("cuda"):
                peaks[device] = max(peaks.get(device, 0), int(m.get("peak", 0) or 0))
    return peaks


def training_peak_memory(run) -> dict[str, int]:
    """peak_memory of a run that trained (took at least one optimizer step), else {}: what a
    script holds when it stops before training (at a TODO, say) tells nothing about how
    training uses the GPUs, so answers about that usage are not checked against it."""
    return peak_memory(run) if run.of("step") else {}


BALANCED = 1.10   # peaks within 10% of each other are balanced; GPU 0 above that is "more loaded"


def gpu0_more_loaded(peaks: dict[str, int]) -> bool | None:
    """Does GPU 0 hold clearly more than every other GPU of the node (an idle GPU holds 0)?"""
    others = [p for d, p in peaks.items() if d != "cuda:0"]
    if "cuda:0" not in peaks or not others or not any(peaks.values()):
        return None
    return peaks["cuda:0"] > BALANCED * max(others)


def balanced(peaks: dict[str, int]) -> bool | None:
    """Do all GPUs of the node hold about the same (an idle GPU holds 0)?"""
    if len(peaks) < 2 or not any(peaks.values()):
        return None
    return max(peaks.values()) <= BALANCED * min(peaks.values())


def describe_memory(peaks: dict[str, int]) -> str:
    return ", ".join(f"{d}: {p / 2**20:.2f} MiB" for d, p in sorted(peaks.items())) or \
        "no memory readings"


# -- time -------------------------------------------------------------------------------------------
# The one place the practicals' checks read how long a run's steps took, and on which clock.
# On real GPUs: the gaps between rank 0's optimizer steps in the trace (real time). On virtual
# GPUs every "GPU" is the same shared CPU, and a wall clock there says nothing about GPUs and
# moves with the machine's load: only the virtual node's simulated clock counts (issue 16:
# each `step` record's `sim_t`, seconds on that clock). A run without it has no clock, so no
# verdict: either answer is accepted. Switching to another source of step times (e.g. the
# Observation's own helper once it exists) is a change of `step_seconds` alone.
SIMULATED_STEP_FIELD = "sim_t"
CLOCKS = {"real": "real GPUs (wall clock)", "simulated": "the virtual GPUs' simulated clock"}
# How far apart two step times must be to call one faster: a wall clock is noisy, the
# simulated one is exact (its model's own margin, like HW3's no-speed-up check).
MARGIN = {"real": 1.25, "simulated": 1.05}


def step_clock(run) -> str | None:
    """"real", "simulated", or None where the run has no clock that says anything about GPUs."""
    starts = run.of("start")
    if not starts:
        return None
    if not any(e.get("virtual") for e in starts):
        return "real"
    steps = run.of("step")
    if steps and all(isinstance(e.get(SIMULATED_STEP_FIELD), (int, float)) for e in steps):
        return "simulated"
    return None


def step_ends(run, rank: int = 0) -> list[dict]:
    """The step records that end each of the rank's training steps: a step that joins the one
    before it (`joins`: no pass or backward between, other parameters; one optimizer per layer
    or pipeline stage, each stepped after the same backward, as model_steps reads them) ends
    that training step in its place. What steps are counted and timed by: the gaps between
    two optimizers' steps had been read as step times (adv53 F4: "faster with DataParallel",
    7e-06 s against 6e-06 s per step)."""
    return [records[-1] for records in _training_steps(run, rank)]


def step_prints(run, kind: str, rank: int = 0) -> list[dict]:
    """The `grads` or `params` fingerprints ({sum, sumsq}) of each of the rank's training steps
    (step_ends): the steps that join one another stepped other parameters, so their sums add
    up to the training step's. Practical 5 compares its two scripts' weights step by step, one
    of them perhaps with one optimizer per layer (adv53: "the weights differ from step 1 on")."""
    prints = []
    for records in _training_steps(run, rank):
        parts = [record.get(kind) or {} for record in records]
        prints.append({key: sum(part.get(key, 0.0) for part in parts)
                       for key in ("sum", "sumsq") if any(key in part for part in parts)})
    return prints


def _training_steps(run, rank: int) -> list[list[dict]]:
    """The rank's step records, those of one training step together (`joins`)."""
    steps: list[list[dict]] = []
    for step in run.of("step", rank):
        if step.get("joins") and steps:
            steps[-1].append(step)
        else:
            steps.append([step])
    return steps


def step_seconds(run, rank: int = 0) -> list[float]:
    """The rank's step times in seconds on the run's clock (the first step, a warm-up, left
    out), from each training step's end to the next (step_ends); empty where the run has no
    clock."""
    clock = step_clock(run)
    if clock is None:
        return []
    field = "t" if clock == "real" else SIMULATED_STEP_FIELD
    stamps = [e[field] for e in step_ends(run, rank) if isinstance(e.get(field), (int, float))]
    return [b - a for a, b in zip(stamps, stamps[1:])]


def median_step_seconds(run, rank: int = 0) -> float | None:
    times = step_seconds(run, rank)
    return statistics.median(times) if times else None


def work_seconds(run, rank: int = 0) -> list[float] | None:
    """The rank's steps' training work in seconds: on the simulated clock, from each step's
    first forward pass (once the work enqueued before it, such as the batch's copy to the GPU,
    is done) to its optimizer step, as the handouts' timers measure it (zero_grad to step). A
    DataLoader that copies each batch inside the loop is the same method, not a slower one.
    A step that joins the one before it (step_ends) is the same training step, timed to its
    end. None on real GPUs (kernels run after their launch) and for a trace without forward
    times. The first step, a warm-up, is left out."""
    if step_clock(run) != "simulated":
        return None
    times, begun, ended = [], None, None
    for event in run.events:
        if event.get("rank", 0) != rank:
            continue
        if script_forward(event) and begun is None:
            begun = event.get(SIMULATED_STEP_FIELD)
        elif event.get("event") == "step":
            now = event[SIMULATED_STEP_FIELD]
            if event.get("joins") and begun is None and times:
                times[-1] += now - ended
            elif not isinstance(begun, (int, float)):
                return None   # a step without a timed forward pass before it
            else:
                times.append(now - begun)
            begun, ended = None, now
    return times[1:]


def compared_step_seconds(*runs) -> list[float | None]:
    """The median step times of runs compared with each other, by one measure for all: each
    step's training work (work_seconds) where every run has it, else the gaps between steps
    (step_seconds); None for a run without a clock."""
    works = [work_seconds(run) for run in runs]
    chosen = works if all(w is not None for w in works) else [step_seconds(run) for run in runs]
    return [statistics.median(times) if times else None for times in chosen]


def shared_clock(*runs) -> str | None:
    """The clock every run has, or None (a run without one, or a real and a simulated one,
    which cannot be compared)."""
    found = {step_clock(run) for run in runs}
    return found.pop() if len(found) == 1 and None not in found else None


def clock_words(clock: str | None) -> str:
    """Which clock decided, for the feedback and the reports."""
    if clock is None:
        return ("no clock both runs share (on virtual GPUs without the simulated clock, wall "
                "times say nothing about GPUs): either answer is accepted")
    return CLOCKS[clock]


def faster(first: float | None, second: float | None, clock: str | None) -> bool | None:
    """Is `second` clearly faster than `first` (True), clearly not (False), or too close or
    unknown to say (None)? Clearly: more than the clock's MARGIN apart."""
    if not first or not second or clock is None:
        return None
    if first > MARGIN[clock] * second:
        return True
    if second > MARGIN[clock] * first:
        return False
    return None


# -- the handout's line changes ------------------------------------------------------------------
# Practical 10, Part 5: "Replace device1 = torch.device(f"cuda:{local_rank + 2}") with
# device1 = torch.device(f"cuda:{local_rank}")". The grader makes that change on the student's
# script text and runs the result; where it finds the line is read from the script's syntax tree
# (second_stage_device), never from its text, so a comment or a message is never the line and
# operator precedence is the parser's.


def broken_layout_edit(source: str) -> tuple[str, str] | None:
    """(old text, new text) for Practical 10's Part 5 in this script: the one sum of the rank
    and an offset given to device1 (or, where there is none, naming a CUDA device anywhere in
    the code) with the offset dropped; None where there is no such sum, or several."""
    return part5_edit(source)


def restored_layout_edit(source: str) -> tuple[str, str] | None:
    """(old text, new text) that undoes Part 5's change in a script handed in with it, so the
    other parts run the course's layout; None unless the script has exactly one such place and
    no sum of the rank and an offset given to device1."""
    return part5_undone_edit(source)


# -- the constants a script is handed in with ------------------------------------------------------
UNKNOWN = object()   # assigned, but not to a literal the grader can read without running it
# The handouts' batch: P5's table and P6's shares are about 64 rows.
HANDOUT_BATCH = {"BATCH_SIZE": 64}


def assigned_constants(source: str, names, modules=None) -> dict:
    """{NAME: value} of the top-level `NAME = <literal>` assignments of `names` in a script's
    text (the last one wins); assigned something else, UNKNOWN, or, given `modules` (the
    student's own modules beside the script: own_modules, whose environment writes at import
    count), the whole number it holds in a graded run where the grader works it out as for the
    STEPS cap (`args.batch_size` of an argparse default, `int(os.environ.get("MB", 4))`, `32 *
    2`: constant_values.py; adv41 F5 had been told "handed in with BATCH_SIZE = an expression"
    of an argparse default of 64); names the script does not assign at its top level are left
    out. Read without
    running it; {} if it does not parse (a student's file nested past the parser's depth raises
    RecursionError or MemoryError, which had errored every check of the module's `handout`
    fixture: a grading problem, no grade, every batch, for the student's own file)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found = {}
    for node in tree.body:
        for target in assignment_targets(node):
            # `A, B = 64, 4` and `A = B = 4` assign A too (a literal tuple: each its own part).
            for name, value in paired_values(target, node.value):
                if name in names:
                    found[name] = value.value if isinstance(value, ast.Constant) else UNKNOWN
    for name in [n for n, value in found.items() if value is UNKNOWN and modules is not None]:
        worked_out = whole_number_assigned(source, name, modules)
        found[name] = UNKNOWN if worked_out is None else worked_out
    return found


def script_text(submission: Path, script: str) -> str:
    """A script's text as handed in, read once per checks process ("" where it is not a file
    the grader may read)."""
    return _script_text(str(Path(submission) / script))


@functools.lru_cache(maxsize=32)
def _script_text(path: str) -> str:
    from grader.common.text import python_source
    from grader.records import untrusted_files
    try:
        data = untrusted_files.read_bytes(Path(path), limit=2**20)
    except (OSError, untrusted_files.NotARegularFile):
        return ""
    return python_source(data) if data is not None else ""


def handout_sets(submission: Path, script: str, defaults=None) -> dict | None:
    """The constants to set for a run of `script` made the course's way: those of `defaults`
    (the handout's values: HANDOUT_BATCH) that the file assigns another value, as a student
    leaves them after trying other ones (the file itself is never changed), and STEPS lowered
    to the template's (steps_limit); None where it holds the handout's values or does not
    assign them at its top level."""
    defaults = HANDOUT_BATCH if defaults is None else defaults
    written = assigned_constants(script_text(submission, script), set(defaults),
                                 own_modules(submission, script))
    changed = {name: value for name, value in defaults.items()
               if written.get(name, value) != value}
    return {**changed, **steps_limit(submission, script)} or None


# The steps the course's template scripts take (their `STEPS = ...`; the handouts give none).
# The grader's runs take no more: a script left at STEPS = 300 ran out of time in every run
# (adv37 F5), and what the checks judge (splits, gradients, memory, per-step times) is there
# from the first steps on.
TEMPLATE_STEPS = {"practical5/practical5_dp.py": 10, "practical5/practical5_single.py": 10,
                  "practical6/practical6_ddp.py": 10, "practical10/sample.py": 3}


def steps_limit(submission: Path, script: str) -> dict:
    """{"STEPS": the template's (more where a loop of STEPS does something only past a
    warm-up: `if step >= 20:` keeps 20 + the template's; loop_thresholds.py), where less than
    the file's} for a run of `script` where the file assigns STEPS a larger
    whole number at its top level, written as a number or as an expression the grader can work
    out without running it (`10 * 30`, earlier constants, `int(os.environ.get("STEPS", 300))`:
    grader/common/constant_values.py); {} otherwise: a smaller STEPS is run as written (never
    raised), and one the grader cannot work out (a call of the script's own, a value an own
    module may set at import) is left alone (lowering it could be raising it). A loop bound by
    a command-line value, with no STEPS, is steps_edits'."""
    most = TEMPLATE_STEPS.get(script)
    steps = steps_written(submission, script)
    if most is None or steps is None or steps <= most:
        return {}
    # A loop of STEPS that times only past a warm-up (`if step >= 20:`) keeps the template's
    # steps past it (loop_thresholds.py): at 10 it had timed none and divided by zero.
    fewest = _steps_fewest(str(submission), script, steps, most)
    return {"STEPS": fewest} if fewest < steps else {}


@functools.lru_cache(maxsize=32)
def _steps_fewest(submission: str, script: str, steps: int, most: int) -> int:
    """constant_fewest of the script's STEPS, once per checks process (as _lowered_default)."""
    return constant_fewest(script_text(Path(submission), script), "STEPS", steps, most,
                           own_modules(Path(submission), script))


def steps_edits(submission: Path, script: str) -> tuple:
    """The run's edit that lowers to the template's steps the default of the one command-line
    value bounding the training loop (`parser.add_argument("--steps", type=int, default=300)`
    read as `range(args.steps)`, `int(sys.argv[1]) if len(sys.argv) > 1 else 300`, click's
    option: grader/common/loop_bound.py), where the file has no STEPS the cap sets
    (steps_limit) and the default is larger; () otherwise. Only that value's text changes; a
    run given no arguments takes the default, so the run's steps are lowered, never raised."""
    lowered = _lowered_default(submission, script)
    return (lowered[0].lowered_to(lowered[1]),) if lowered else ()


def _lowered_default(submission: Path, script: str):
    """(the LoopDefault steps_edits lowers, the steps it lowers it to), or None: the
    template's steps, more where the loop times only past a warm-up (`if step >= 20:`: 20 +
    the template's; loop_thresholds.py), never the written steps or more. Worked out once per
    checks process and script, as the script's text is read once (script_text): reading a
    warm-up over a long default's steps takes a while."""
    return _lowered_default_of(str(submission), script)


@functools.lru_cache(maxsize=32)
def _lowered_default_of(submission: str, script: str):
    submission = Path(submission)
    most = TEMPLATE_STEPS.get(script)
    if most is None or steps_limit(submission, script):
        return None
    default = loop_default(script_text(submission, script), own_modules(submission, script))
    if default is None or default.fewest(most) >= default.written:
        return None
    return default, default.fewest(most)


def loop_steps_lowered(run, submission: Path, script: str) -> int | None:
    """The steps the student's own run of `script` takes where the grader's run lowered the
    default that bounds its training loop (steps_edits), else None."""
    lowered = _loop_lowered(run, submission, script)
    return lowered[0].written if lowered else None


def loop_steps_run(run, submission: Path, script: str) -> int | None:
    """The steps the grader's run of `script` lowered the default bounding its training loop
    to (steps_edits: the template's, more past a warm-up), else None."""
    lowered = _loop_lowered(run, submission, script)
    return lowered[1] if lowered else None


def _loop_lowered(run, submission: Path, script: str):
    edits = steps_edits(submission, script)
    if edits and all(edit in [tuple(e) for e in run.edits or ()] for edit in edits):
        return _lowered_default(submission, script)
    return None


def own_modules(submission: Path, script: str):
    """`modules(name)` of script_writes: the text of the student's module `name` beside the
    script (what `import name` runs: the script's folder is sys.path[0]), else None. A
    `config.py` that sets the environment at its import changes what the script reads."""
    folder = PurePosixPath(script).parent

    def source(name: str) -> str | None:
        base = folder.joinpath(*name.split("."))
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            text = script_text(submission, candidate)
            if text:
                return text
        return None
    return source


def steps_written(submission: Path, script: str) -> int | None:
    """The file's STEPS: a whole number at its top level, or an expression worked out
    (constant_values.py), or None."""
    text = script_text(submission, script)
    steps = whole_number_assigned(text, "STEPS", own_modules(submission, script))
    if steps is None:   # a literal that a top-level block may change again: read as written
        steps = assigned_constants(text, {"STEPS"}).get("STEPS")
    return steps if type(steps) is int else None


def steps_as_written(run, submission: Path, script: str) -> int:
    """The optimizer steps the student's own run of `script` takes: the file's STEPS where the
    grader's run lowered it (steps_limit), the default of the argument bounding its loop where
    the run lowered that (steps_edits), else the steps the grader's run took. What a student's
    table of their own run is compared with."""
    if "STEPS" in (run.sets or {}):
        written = steps_written(submission, script)
        if written is not None:
            return written
    return loop_steps_lowered(run, submission, script) or len(step_ends(run))
