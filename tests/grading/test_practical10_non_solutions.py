"""Practical 10: what a loop without micro-batches earns (a TA's audit, disagreement 2).

A step of one forward and one backward on the whole batch (the TA's s10) all-reduces once and
gives the full-batch gradient at any MICRO_BATCHES, and a loop left empty (s11: the TODO's
`raise` replaced by `pass`) gives a zero gradient at every setting, which equals zero: the
synchronisation and invariance checks held for both, without a micro-batch. A sync or
invariance case counts only where the run's steps had MICRO_BATCHES forward and backward
passes, invariance needs a gradient, "training" a backward that produced one, and an answer
about the micro-batches counts only where they ran; an honest loop missing no_sync() and the
loss scaling (s17) keeps exactly what it earned.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical10 as p10
from grader.checks.support import must_agree
from grader.harness.observation import Observation

GRADIENT = {"sum": 14.82, "sumsq": 0.0055}   # rank 0's full-batch gradient at the first step
ZERO = {"sum": 0.0, "sumsq": 0.0}


def step_events(rank, step, style, batch, micro):
    """One optimizer step of rank `rank` in the trace, the way a loop of `style` makes it:
    "micro" (the reference), "never" (no_sync() around every micro-batch), "first" (no_sync()
    around all but the first), "whole" (s10), "empty" (s11), "unscaled" (s17: every micro-batch
    all-reduces, no division by MICRO_BATCHES), "one_backward" (the micro-batches' outputs
    concatenated into one loss), "zero" (micro-batches whose gradients are all zero)."""
    def forward(rows):
        return {"event": "forward", "rank": rank, "thread": "MainThread", "grad": True,
                "step": step, "batch": [rows, 512], "module": "DistributedDataParallel"}
    backward = {"event": "backward", "rank": rank}
    reduce = {"event": "collective", "rank": rank, "op": "all_reduce", "source": "ddp_gradients"}
    size = batch // micro
    grads = GRADIENT
    if style in ("micro", "zero", "never", "first"):
        events = []
        synced = {"never": None, "first": 0}.get(style, micro - 1)
        for i in range(micro):
            events += [forward(size), backward] + ([reduce] if i == synced else [])
        grads = ZERO if style == "zero" else GRADIENT
    elif style == "unscaled":
        events = [e for _ in range(micro) for e in (forward(size), backward, reduce)]
        grads = {"sum": GRADIENT["sum"] * micro, "sumsq": GRADIENT["sumsq"] * micro ** 2}
    elif style == "manual":
        own = [{"event": "collective", "rank": rank, "op": "all_reduce", "bytes": size,
                "group_size": 2, "site": "practical10/sample.py:120"}
               for size in (2097152, 4096, 4194304, 4096, 2097152, 2048)]
        events = [e for _ in range(micro) for e in (forward(size), backward)] + own
        return events + [{"event": "step", "rank": rank, "index": step + 1, "grads": grads,
                          "params": {"sum": 19.87, "sumsq": 854.8}},
                         {"event": "collective", "rank": rank, "op": "all_reduce", "bytes": 4,
                          "group_size": 2, "site": "practical10/sample.py:125"}]
    elif style == "one_backward":
        events = [forward(size) for _ in range(micro)] + [backward, reduce]
    elif style == "whole":
        events = [forward(batch), backward, reduce]
    else:
        events, grads = [], ZERO
    return events + [{"event": "step", "rank": rank, "index": step + 1, "grads": grads,
                      "params": {"sum": 19.87, "sumsq": 854.8}}]


def traced(style, batch=64, micro=4, processes=2, steps=3) -> Observation:
    events = []
    for rank in range(processes):
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": processes}]
        if style != "manual":
            events.append({"event": "ddp_wrap", "rank": rank, "world_size": processes})
        for step in range(steps):
            events += step_events(rank, step, style, batch, micro)
    return Observation("practical10/sample.py", gpus=4, nproc=processes, launcher="torchrun",
                       sets={"BATCH_SIZE": batch, "MICRO_BATCHES": micro}, returncode=0,
                       events=events)


class Handout:
    """The runs the checks ask for (HandoutRuns' interface), all of one loop's style."""

    def __init__(self, style):
        self.style = style

    def run(self, processes=2, **sets):
        wanted = {**p10.DEFAULTS, **sets}
        return traced(self.style, wanted["BATCH_SIZE"], wanted["MICRO_BATCHES"], processes)


def failure(check, *args) -> str:
    with pytest.raises(AssertionError) as raised:
        check(*args)
    return str(raised.value)


def said_all(text: str, *phrases: str) -> None:
    missing = [p for p in phrases if p not in text]
    assert not missing, f"expected the feedback to say {missing}; observed:\n{text}"


# -- synchronisation ------------------------------------------------------------------------------


@pytest.mark.parametrize("batch, micro", p10.CONFIGS)
def test_one_all_reduce_per_whole_batch_step_earns_no_sync_point(batch, micro):
    """s10: 1 forward and 1 backward per step all-reduce once by themselves."""
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("whole"), batch, micro)
    said_all(text, "Expected: gradients are all-reduced across replicas once per step",
             f"in steps of {micro} forward and {micro} backward passes",
             f"Observed: 1 forward pass(es) on [{batch}] rows, 1 backward pass(es), 1 of them "
             "all-reducing the gradients",
             "one all-reduce per step without them shows nothing",
             "Where to look: the micro-batch loop")


def test_an_empty_loop_earns_no_sync_point_and_is_told_it_runs_no_pass():
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("empty"), 64, 4)
    said_all(text, "Observed: no forward and no backward pass before the optimizer step",
             "Where to look: the micro-batch loop")


def test_losses_summed_into_one_backward_earn_no_sync_point():
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("one_backward"), 64, 2)
    said_all(text, "2 forward pass(es) on [32, 32] rows, 1 backward pass(es)",
             "only a step of 2 forward and 2 backward passes has all-reduces")


@pytest.mark.parametrize("batch, micro", p10.CONFIGS)
def test_a_micro_batch_loop_with_no_sync_keeps_its_sync_point(batch, micro):
    p10.test_gradients_synchronised_once_per_step(Handout("micro"), batch, micro)


def test_no_sync_around_every_micro_batch_is_told_to_leave_the_last_outside():
    """The matrix's p10_no_sync_on_every_micro_batch (graded with PDL_EXTENDED_MATRIX=1)."""
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("never"), 64, 4)
    said_all(text, "the gradients were never all-reduced",
             "leave the last micro-batch's forward and backward outside `with model.no_sync():`")


@pytest.mark.parametrize("micro", [2, 4])
def test_an_all_reduce_on_the_first_micro_batch_is_named_as_the_script_numbers_it(micro):
    """A TA's audit (D5): "the all-reduce came with backward 1" read as micro-batch 1 to a
    student whose script prints micro-batches from 0; and the hint did not say the condition
    picked the first micro-batch where the last was meant."""
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("first"), 64, micro)
    said_all(text, f"the all-reduce came with the first of {micro} micro-batches' backward "
             f"(index 0), not the last one's (index {micro - 1})",
             "Where to look: your loop leaves micro-batch 0 (the first) outside "
             f"`with model.no_sync():`; only the last, index {micro - 1} = MICRO_BATCHES - 1, "
             "must be left outside")
    assert "backward 1" not in text, text


@pytest.mark.parametrize("batch, micro", p10.CONFIGS)
def test_gradients_all_reduced_by_the_script_itself_are_said_so_not_never_all_reduced(batch, micro):
    """A TA's audit28 #10: DDP removed, the gradients averaged by the script's own
    dist.all_reduce once per step. The points stay a policy call (the rubric words the item
    for DDP), but "the gradients were never all-reduced" and "leave the last micro-batch
    outside no_sync()" were both wrong for that code."""
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("manual"), batch, micro)
    said_all(text, "the gradients were all-reduced by the script's own dist.all_reduce, not by "
             "DDP: the practical asks for the model wrapped in DDP and no_sync() on all but the "
             "last micro-batch", "Where to look: `model = DDP(model)`")
    assert "never all-reduced" not in text and "leave the last micro-batch" not in text, text


def test_a_script_without_ddp_that_all_reduces_its_gradients_is_flagged_for_the_instructor():
    flags = []
    text = failure(p10.test_one_process_per_replica, Handout("manual"), flags.append)
    said_all(text, "no model was wrapped in DDP: the gradients are all-reduced by the script's "
             "own dist.all_reduce")
    assert len(flags) == 1 and "replaced DDP" in flags[0] and "dist.all_reduce" in flags[0], flags


def test_no_flag_where_ddp_does_the_all_reduce():
    flags = []
    for style in ("micro", "whole", "never"):
        p10.test_one_process_per_replica(Handout(style), flags.append)
    assert flags == []


def test_a_micro_batch_loop_without_no_sync_is_told_what_it_was_told_before():
    """s17: the same failure and words as before the gate (it has its micro-batches)."""
    text = failure(p10.test_gradients_synchronised_once_per_step, Handout("unscaled"), 64, 2)
    said_all(text, "2 forward pass(es) on [32, 32] rows, 2 backward pass(es), 2 of them "
             "all-reducing the gradients", "Where to look: wrap all but the last micro-batch")
    assert "the micro-batch loop:" not in text, text


# -- invariance -----------------------------------------------------------------------------------


@pytest.mark.parametrize("micro", p10.INVARIANCE)
def test_a_whole_batch_gradient_earns_no_invariance_point(micro):
    """s10: the full-batch gradient at every MICRO_BATCHES, with no micro-batch."""
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Handout("whole"),
                   micro)
    said_all(text, f"Expected: with MICRO_BATCHES = {micro}, the gradient accumulated",
             f"accumulated over {micro} forward and {micro} backward passes per step",
             f"Observed: with MICRO_BATCHES = {micro}: 1 forward pass(es) on [64] rows, "
             "1 backward pass(es)", "accumulates nothing, whatever it equals",
             "Where to look: the micro-batch loop")


def test_an_empty_loops_zero_gradient_earns_no_invariance_point():
    """s11: {sum: 0, sumsq: 0} at MICRO_BATCHES = 1 and 4 are equal, and prove nothing."""
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Handout("empty"), 4)
    said_all(text, "Observed: with MICRO_BATCHES = 4: no forward and no backward pass")


def test_a_zero_full_batch_gradient_is_nothing_to_equal():
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Handout("zero"), 4)
    said_all(text, "Expected: with MICRO_BATCHES = 4, the gradient accumulated",
             "Observed: the full-batch run's (MICRO_BATCHES = 1) gradient at its first "
             "optimizer step is zero", "Where to look: loss.backward()")


@pytest.mark.parametrize("micro", p10.INVARIANCE)
def test_an_accumulated_gradient_equal_to_the_full_batch_one_keeps_its_point(micro):
    p10.test_accumulated_gradient_equals_full_batch_gradient(Handout("micro"), micro)


def test_a_missing_loss_scaling_is_still_told_its_factor():
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient,
                   Handout("unscaled"), 2)
    said_all(text, "the accumulated gradient is 2.00x the full-batch gradient",
             "without dividing by MICRO_BATCHES = 2")


class SyncOnTheFirstMicroBatch(Handout):
    """A TA's audit: no_sync() around micro-batches 1..M-1 instead of 0..M-2. With 2 processes
    rank 0 then steps with the average of micro-batch 0 plus its own later ones: not the
    full-batch gradient. With one process the all-reduce changes nothing."""

    def __init__(self):
        super().__init__("micro")

    def run(self, processes=2, **sets):
        run = super().run(processes, **sets)
        if processes > 1 and sets.get("MICRO_BATCHES", p10.MICRO) > 1:
            for event in run.events:
                if event.get("event") == "step":
                    event["grads"] = {"sum": GRADIENT["sum"] * 1.17, "sumsq": GRADIENT["sumsq"] * 1.4}
        return run


@pytest.mark.parametrize("micro", p10.INVARIANCE)
def test_a_sync_on_the_wrong_micro_batch_loses_the_sync_item_only(micro):
    """The invariance item asks about the loss scaling and the data: it reads one-process runs,
    where the sync bug (practical10.sync's) changes no gradient."""
    p10.test_accumulated_gradient_equals_full_batch_gradient(SyncOnTheFirstMicroBatch(), micro)


def test_a_gradient_that_differs_for_no_reason_seen_names_zero_grad_too():
    class Differs(Handout):
        def run(self, processes=2, **sets):
            run = super().run(processes, **sets)
            if sets.get("MICRO_BATCHES", p10.MICRO) > 1:
                for event in run.events:
                    if event.get("event") == "step":
                        event["grads"] = {"sum": 3.1, "sumsq": 0.0011}
            return run
    text = failure(p10.test_accumulated_gradient_equals_full_batch_gradient, Differs("micro"), 4)
    said_all(text, "or gradients zeroed between micro-batches",
             "optimizer.zero_grad() once per step, before the first micro-batch",
             "(torchrun --nproc_per_node=1)")


# -- training: an optimizer step on gradients ------------------------------------------------


def test_optimizer_steps_without_gradients_are_no_training():
    """s11: optimizer.step() with nothing to step on every rank."""
    text = failure(p10.test_one_process_per_replica, Handout("empty"), [].append)
    said_all(text, "Expected: 2 processes, each one data-parallel replica wrapped in DDP",
             "Observed: optimizer steps on rank(s) [0, 1], but none after a backward pass that "
             "produced gradients", "Where to look:")


@pytest.mark.parametrize("style", ["micro", "whole", "unscaled"])
def test_steps_on_gradients_are_training(style):
    p10.test_one_process_per_replica(Handout(style), [].append)


# -- answers about the micro-batches ----------------------------------------------------------


def sheet(**values) -> Answers:
    return Answers("practical10", "sheet", values=values,
                   origin={qid: "practical10/answers.yaml" for qid in values})


def check_kit(answers):
    """The fixtures an answer check takes: agree as grader/checks/conftest.py makes it."""
    measured, reported, flags = {}, {}, []

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        measured[qid], reported[qid] = truth, value
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, flags.append)
    return agree, flags


@pytest.mark.parametrize("style, pattern", [("whole", "each optimizer step runs 1 forward + "
                                                      "backward pass(es) on the whole batch of 32 "
                                                      "rows"),
                                            ("empty", "its optimizer steps run no forward pass")])
def test_the_batch_pattern_answer_counts_only_where_micro_batches_ran(style, pattern):
    """s10 and s11: "does the pattern change with the batch size? no" is true of a loop with no
    micro-batches (the same single pass, or none, at every size), and answers nothing."""
    answers = sheet(**{"batch.pattern_changes": False})
    agree, flags = check_kit(answers)
    text = failure(p10.test_reported_pattern_change_with_batch_size, Handout(style), answers,
                   agree, flags.append)
    said_all(text, "Expected: your answers about the micro-batches can be compared with the "
             "micro-batches your code runs", "Observed: your code never ran micro-batches: with "
             f"BATCH_SIZE = 32 and MICRO_BATCHES = 4 {pattern}", "none earns a point",
             "Where to look: the micro-batch loop")
    assert flags and flags[0].startswith("batch.pattern_changes: answered False, but the code "
                                         "never ran micro-batches"), flags


def test_the_flag_of_a_micro_table_answered_without_micro_batches_shows_its_rows():
    """A TA's audit28 M4: instructor.md showed the table as a Python list of dicts."""
    table = [{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32},
             {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}]
    answers = sheet(**{"micro.table": table})
    flags = []
    failure(p10.test_reported_micro_batch_table, Handout("whole"), answers, {}, {},
            flags.append, 2)
    assert flags and flags[0].startswith(
        "micro.table: answered row 1: micro_batches 2, passes_per_step 2, micro_batch_size 32; "
        "row 2: micro_batches 8,"), flags


@pytest.mark.parametrize("style", ["micro", "unscaled", "one_backward"])
def test_the_batch_pattern_answer_of_a_loop_with_micro_batches_is_checked(style):
    answers = sheet(**{"batch.pattern_changes": False})
    agree, flags = check_kit(answers)
    p10.test_reported_pattern_change_with_batch_size(Handout(style), answers, agree,
                                                     flags.append)
    assert not flags, flags


@pytest.mark.parametrize("check, qid, value", [
    (p10.test_reported_micro_batches_per_step, "hybrid.micro_batches_per_step", 1),
    (p10.test_reported_micro_batch_size, "hybrid.micro_batch_size", 64)])
def test_answers_true_of_a_whole_batch_step_are_no_micro_batch_answers(check, qid, value):
    """"1 micro-batch of 64 rows" describes s10's loop, which has no micro-batches."""
    answers = sheet(**{qid: value})
    agree, flags = check_kit(answers)
    text = failure(check, Handout("whole"), answers, agree, flags.append)
    said_all(text, "Observed: your code never ran micro-batches")


def test_a_missing_answer_beside_a_whole_batch_step_is_told_missing():
    agree, flags = check_kit(sheet())
    text = failure(p10.test_reported_pattern_change_with_batch_size, Handout("whole"), sheet(),
                   agree, flags.append)
    said_all(text, "Observed: no answer found")
