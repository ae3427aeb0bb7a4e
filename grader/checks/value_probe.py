"""Which GPUs' layers carry no value into the training passes: a probe run against a normal one.

A probe run (grader/vgpu/perturb.py) adds noise of their own size to the outputs of one GPU's
layers in each training pass, the GPU going round the node pass by pass, and records each
pass's output digest (`pass_value`: sum, sum of squares of each tensor) as every run does. A
GPU whose perturbed layers left some pass's output where the normal run of the same spec has
it, to within rounding, carries nothing of that pass: its layers' result does not reach the
output, whatever gradient came back to them (a spare nn.Linear on cuda:r+2 added as `x + (side
- side.detach())`, through a custom autograd.Function, as `side * 0` with a hook on the node:
red team adv48 F1-F3, each a one-stage replica paid as two stages; `x + side / 1e30` gets a
gradient too faint for the watch's share test, which holds it).

Only an output unchanged under the perturbation is read, never one that moved: a run that is
not reproducible (its own seed drawn from the clock) moves everywhere and keeps what the
gradient watch says of it. And only in a pass where a gradient came back to that GPU's layers
(`grad_used`): an honest model whose last layer or ReZero alpha starts at zero leaves its
output unchanged in its first step whatever is perturbed upstream, and gets no gradient there.

A GPU left unchanged only by the passes that mix the rows (perturb.ROWS) goes to a person, not to
zero (`rows_unmoved_gpus`): a map that removes the output's own direction removes that mixing
too (adv50 F3's projection), but so does a normalisation after an honest stage where a
micro-batch has one row. And a probe run that completes less than the normal run (fewer passes
or steps, another exit, a rank missing: a script that spots the perturbation and ends, adv50
F4) has no pass to compare where it stopped, and shows no stage: `probe_shortfall` says what
differed, and the grading is held for a person.
"""
from __future__ import annotations

import math

from grader.checks.practical_answers import gpu_index
from grader.vgpu.perturb_kinds import ROWS

# The largest change of a pass's output digest (relative: sum against the output's norm times
# the square root of its size, sum of squares against itself) still read as unchanged: far
# below one float32 rounding (1.2e-7), as only a value that does not reach the output at all
# stays put. Measured (eng_value, lead): a cancelled spare's perturbed pass moves by 0 exactly
# (`side - side.detach()`, a custom Function, a node hook, `side / 1e30`); the reference's
# perturbed passes by 0.17 to 2.2. An honest stage 0 whose result reaches the output through a
# deep stage 1 moves it by little: 16 Linear+ReLU layers 7.1e-8 at the course's width and
# 8.2e-9 at the tests' width 8 (at 1e-7 both had been read as no stage, 2.75 of 12 lost), 4
# Linear+Sigmoid 9.9e-7. A spare added and taken back (`y += side; y -= side.detach()`) moves
# it by the rounding of the two (2.8e-8 at the course's width, 4.5e-8 at width 8): as much as
# the honest deep stage, so it is not the probe's to hold but the scan's, which reads those
# forms (grader/integrity/cancelling.py). Still read as no stage: 16 Linear+Sigmoid layers after
# stage 0 (9e-10: the output is independent of stage 0 to float32 precision at init).
UNCHANGED = 1e-9


def pass_values(run, rank: int) -> dict:
    """{pass number: its `pass_value` record} of one rank."""
    return {e.get("n"): e for e in run.events
            if e.get("event") == "pass_value" and e.get("rank", 0) == rank}


def change(normal: dict, probed: dict, unsteady: frozenset = frozenset()) -> float | None:
    """How far a pass's output moved between the two runs (relative, see UNCHANGED): the most
    any of its floating-point tensors moved, so that it is unchanged only where every one is;
    None where the two are not the same pass (other tensors, another shape) or not numbers, or
    where every tensor is `unsteady` (places in the output that move between the two runs
    without any perturbation: `unsteady_tensors`)."""
    digests, moved = digested_tensors(normal), digested_tensors(probed)
    if len(digests) != len(moved):
        return None
    changes = [tensor_change(one, other) for index, (one, other)
               in enumerate(zip(digests, moved)) if index not in unsteady]
    return None if None in changes or not changes else max(changes)


def digested_tensors(record: dict) -> list[dict]:
    """A `pass_value` record's digests, one per tensor of the output (a record of one digest
    alone, as the first probes wrote it, is its own)."""
    return record.get("tensors") or [record]


def unsteady_tensors(run, probe, rank: int) -> frozenset:
    """The places in a pass's output (0: the first tensor it returns) that moved between the
    normal run and the probe in a pass of `rank` the probe perturbed nothing of, before the
    rank's first optimizer step (after it the two runs' weights differ): what the script makes
    differ from run to run by itself. A model that also returned a clock reading
    (`torch.tensor(time.perf_counter())`) had every pass read as moved, and its spare on
    cuda:r+2, whose value a remainder took away, as a stage (red team adv50 F2); such a place
    is left out of `change`, and a script whose every place is unsteady is read by the
    gradient watch alone, as before."""
    perturbed = {e.get("n") for e in probe.events
                 if e.get("event") == "perturbed" and e.get("rank", 0) == rank}
    normal = pass_values(run, rank)
    unsteady: set[int] = set()
    for event in probe.events:
        if event.get("rank", 0) != rank:
            continue
        if event.get("event") == "step":
            break
        if event.get("event") != "pass_value" or event.get("n") in perturbed \
                or event.get("n") not in normal:
            continue
        ours, theirs = digested_tensors(event), digested_tensors(normal[event.get("n")])
        for index, (one, other) in enumerate(zip(theirs, ours)):
            moved = tensor_change(one, other)
            if moved is None or moved > UNCHANGED:
                unsteady.add(index)
    return frozenset(unsteady)


def tensor_change(normal: dict, probed: dict) -> float | None:
    """How far one tensor of a pass's output moved (see `change`)."""
    if normal.get("shape") != probed.get("shape"):
        return None
    try:
        total, squares = float(normal["sum"]), float(normal["sumsq"])
        moved_sum = abs(float(probed["sum"]) - total)
        moved_squares = abs(float(probed["sumsq"]) - squares)
    except (KeyError, TypeError, ValueError):
        return None
    if not all(map(math.isfinite, (total, squares, moved_sum, moved_squares))):
        return None
    size = math.prod(normal.get("shape") or [1]) or 1
    if squares == 0:
        return 0.0 if moved_sum == 0 and moved_squares == 0 else math.inf
    return max(moved_sum / math.sqrt(size * squares), moved_squares / squares)


def gradient_reached(run, rank: int) -> set[tuple]:
    """{(pass number, GPU)} where the gradient watch of `run` counted a GPU of one rank: a
    gradient that is not zero came back to its layers' outputs in that pass (`grad_used`)."""
    return {(e.get("n"), gpu_index(e.get("device"))) for e in run.events
            if e.get("event") == "grad_used" and e.get("rank", 0) == rank}


def unmoved_gpus(run, probe, rows: bool = False) -> dict[int, dict[int, float]]:
    """{rank: {GPU: the least change}} of the GPUs some perturbed training pass of `probe` left
    unchanged against `run` (the same spec without perturbation), in a pass where `run`'s
    gradient watch counted that GPU. The forgery has both: a gradient comes back to the GPU's
    layers while their value does not reach the output. Where no gradient came back (a last
    layer initialised to zeros, ReZero's alpha = 0: red team adv49 F1-F2, honest, in their
    first step) the unchanged output is what the gradient already says, and reads nothing.
    `rows`: read only the passes that mixed the rows (perturb.ROWS), which no other reads."""
    found: dict[int, dict[int, float]] = {}
    if probe is None or not probe.events:
        return found
    # rank -> what is read of it, once: (reached, unsteady, the normal run's digests, the
    # probe's); they had been read again for every perturbed pass.
    ranks: dict[int, tuple] = {}
    for event in probe.events:
        if event.get("event") != "perturbed" or (event.get("kind") == ROWS) != rows:
            continue
        rank, gpu = event.get("rank", 0), gpu_index(event.get("device"))
        if rank not in ranks:
            ranks[rank] = (gradient_reached(run, rank), unsteady_tensors(run, probe, rank),
                           pass_values(run, rank), pass_values(probe, rank))
        reached, unsteady, normals, probeds = ranks[rank]
        if (event.get("n"), gpu) not in reached:
            continue
        normal, probed = normals.get(event.get("n")), probeds.get(event.get("n"))
        moved = change(normal, probed, unsteady) if normal and probed and gpu is not None \
            else None
        if moved is not None and moved <= UNCHANGED:
            gpus = found.setdefault(rank, {})
            gpus[gpu] = min(moved, gpus.get(gpu, math.inf))
    return found


def unmoved_note(unmoved: dict[int, dict[int, float]], ranks) -> str:
    """The GPUs of `ranks` read as no stage for carrying no value, as words to add to a
    message; "" where none."""
    gpus = sorted({gpu for rank in ranks for gpu in unmoved.get(rank, {})})
    if not gpus:
        return ""
    named = " and ".join(f"cuda:{gpu}" for gpu in gpus)
    return (f"; perturbing the outputs of the layers on {named} did not change the model's "
            f"output: their result does not reach it (a term that cancels its own value, "
            f"`side - side.detach()` or the like, makes no stage)")


def rows_unmoved_gpus(run, probe, unmoved: dict[int, dict[int, float]]) -> dict[int, list[int]]:
    """{rank: [GPU]} of the GPUs only the passes that mixed the rows left unchanged (not in
    `unmoved`, what the other perturbations read): for a person, never read as no stage."""
    found: dict[int, list[int]] = {}
    for rank, gpus in unmoved_gpus(run, probe, rows=True).items():
        only = sorted(gpu for gpu in gpus if gpu not in unmoved.get(rank, {}))
        if only:
            found[rank] = only
    return found


def completed(run) -> dict[int, tuple]:
    """{rank: (training passes digested, optimizer steps, the steps and passes its exit
    record counts or None where the process ended without one)} of a run."""
    found: dict[int, list] = {}
    for event in run.events:
        kind = event.get("event")
        if kind not in ("pass_value", "step", "exit"):
            continue
        counts = found.setdefault(event.get("rank", 0), [0, 0, None])
        if kind == "pass_value":
            counts[0] += 1
        elif kind == "step":
            counts[1] += 1
        else:
            counts[2] = (event.get("steps"), event.get("forwards"))
    return {rank: tuple(counts) for rank, counts in found.items()}


def _completion_words(counts: tuple | None) -> str:
    if counts is None:
        return "nothing recorded"
    passes, steps, exit_ = counts
    ended = "no exit record (the process ended before Python's exit)" if exit_ is None \
        else f"an exit after {exit_[0]} steps and {exit_[1]} forward passes"
    return f"{passes} training passes, {steps} optimizer steps, {ended}"


def probe_shortfall(run, probe) -> list[str]:
    """What the value probe of `run` completed less than `run` itself (the same spec without
    perturbation): another exit, a rank missing, fewer passes or steps. An honest script does
    the same in both; one that spots the perturbation and ends there (`os._exit(0)` in the
    probe alone, red team adv50 F4) leaves no perturbed pass to compare where it stopped, and
    its GPUs read as stages. [] where the normal run did not complete itself (its own checks
    say so) or nothing differs."""
    if probe is None or not run.ok:
        return []
    if not probe.ok:
        return [probe.problem() or "the probe run did not complete"]
    normal, probed = completed(run), completed(probe)
    return [f"rank {rank}: {_completion_words(counts)} in the normal run, "
            f"{_completion_words(probed.get(rank))} in the probe"
            for rank, counts in sorted(normal.items()) if probed.get(rank) != counts]


def cancellations(probe) -> list[dict]:
    """The probe run's records of a sum whose terms cancel exactly inside a training pass
    (grader/vgpu/cancelled.py), each place once."""
    if probe is None:
        return []
    found = {}
    for event in probe.events:
        if event.get("event") == "cancelled":
            found.setdefault((event.get("rank", 0), event.get("op"), event.get("site")), event)
    return list(found.values())


def probe_holds(run, probe, unmoved: dict[int, dict[int, float]]) -> list[str]:
    """Why the value probe of `run` cannot say which GPUs are stages, in words for the
    instructor (held for review: the normal run's reading is left to a person); [] where it
    can."""
    held = []
    shortfall = probe_shortfall(run, probe)
    if shortfall:
        held.append("the value probe of the handout's configuration completed less than the "
                    "normal run of it, so it shows no stage where it stopped (a script that "
                    "spots the probe and ends): " + "; ".join(shortfall))
    for event in cancellations(probe):
        held.append(f"rank {event.get('rank', 0)}: in a training pass, `{event.get('op')}` at "
                    f"{event.get('site') or 'a place outside the script'} took a tensor on "
                    f"{event.get('device')} away from an equal copy of it (the same values, "
                    "or within a thousandth of them, one of them without its gradient, or "
                    "computed again): the result is "
                    + (f"at most {event['left']:.0e} of it" if event.get("left") else "zero")
                    + " everywhere while its gradient comes back whole, so that GPU's value does "
                    "not reach the output (a term that cancels its own value makes no stage); "
                    "read the forward to tell which GPUs are stages")
    for rank, gpus in sorted(rows_unmoved_gpus(run, probe, unmoved).items()):
        named = " and ".join(f"cuda:{gpu}" for gpu in gpus)
        held.append(f"rank {rank}: mixing the rows of the outputs of the layers on {named} "
                    "(the value probe) did not change the model's output, though other "
                    "perturbations of them did: a term that removes their output's own "
                    "direction, or a normalisation after them on micro-batches of one row; "
                    "read the forward to tell whether they are a stage")
    return held
