"""Practical 10: hybrid data + model + pipeline parallelism (practical10/sample.py).

The script is launched as the handout launches it, `torchrun --nproc_per_node=2` on 4 GPUs,
and changed as the handout's parts change it: MICRO_BATCHES = 2 and 8 (Part 2), BATCH_SIZE =
32 and 128 (Part 3), one process (Part 4), and the line `device1 = torch.device(
f"cuda:{local_rank + 2}")` replaced by `... f"cuda:{local_rank}" ...` (Part 5; the grader
makes that change on a copy of the text, see practical_measures.broken_layout_edit; a script
handed in with that change, or with the constants at the last values tried, is run the course's
way all the same: HandoutRuns). Two more runs check what those parts teach: MICRO_BATCHES = 1,
the full-batch step that the accumulated gradient of 2, 4 and 8 micro-batches must equal, and
MICRO_BATCHES = 3, where 64 rows do not divide evenly (every row should still be trained on;
told, for no point, as no handout part splits unevenly).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import math
import re

import pytest

from grader.checks.practical_answers import (answer_and_truth, gpu_index, gpu_list,
                                             per_rank_line, rows_by, whole_numbers)
from grader.checks.practical_measures import (OUTSIDE_SAID, UNKNOWN, WEIGHTS_WRITTEN_SAID,
                                              assigned_constants, broken_layout_edit,
                                              devices_of_rank, distinct_rows, evidence,
                                              first_step_rows, first_step_rows_dropped,
                                              forward_passes, learning_ranks, made_outside,
                                              model_steps, not_learning, outside_of,
                                              outside_share_said, own_modules,
                                              restored_layout_edit, rows_of,
                                              script_forward, script_text, steps_edits,
                                              steps_limit, synced_step,
                                              training_events, unvouched_said)
from grader.checks.gradient_noise import (DIRECTION_MIN, NOISE_REL, WEIGHT_REL, direction,
                                          loss_weight, noise_in, noise_said,
                                          zeroed_in_first_step)
from grader.checks.second_stage_device import layout_switch
from grader.checks.support import AnswerNotRead, GradedByHand, close, explain, must_agree
from grader.checks.value_probe import probe_holds, unmoved_gpus, unmoved_note
from grader.common.row_vectors import row_vectors
from grader.common.text import answer_shown

SCRIPT = "practical10/sample.py"
GPUS = 4
BATCH = 64
MICRO = 4
DEFAULTS = {"MICRO_BATCHES": MICRO, "BATCH_SIZE": BATCH}
# (BATCH_SIZE, MICRO_BATCHES) of the handout's Parts 2 and 3.
CONFIGS = [(64, 2), (64, 4), (64, 8), (32, 4), (128, 4)]
# 64 rows in 3 micro-batches: no even split. No handout part runs it, so it earns no point;
# its check tells a student whose split would drop rows (practical10.uneven_micro_batches).
UNEVEN = (64, 3)
INVARIANCE = [2, 4, 8]     # against MICRO_BATCHES = 1, the full-batch step
BROKEN_LINE = 'device1 = torch.device(f"cuda:{local_rank + 2}")'


class HandoutRuns:
    """The runs the handout makes of sample.py, from the script in whatever state a student
    who followed the handout hands it in: its constants left at the last values tried (Parts 2
    and 3) and Part 5's line left replaced. Every run sets the constants it is about (a value
    the file already holds is left as written, so runs asking the same share one), and runs
    the course's layout (`cuda:{local_rank + 2}`) except the run of Part 5, which runs the
    broken one (`cuda:{local_rank}`); the file itself is never touched."""

    def __init__(self, runs, submission):
        self.runs = runs
        self.text = text = script_text(submission, SCRIPT)
        # STEPS at most the template's 3 in every run (bounded run time; never raised), or
        # the default of the argument bounding the training loop lowered to it.
        self.steps = steps_limit(submission, SCRIPT)
        self.steps_edits = steps_edits(submission, SCRIPT)
        self.written = assigned_constants(text, DEFAULTS, own_modules(submission, SCRIPT))
        # A top-level constant choosing the layout (`BREAK_MP = True` switching between the
        # two lines, `cuda:{local_rank + STAGE1_OFFSET}`, a flag's default) is set for each
        # run instead: the course's value, or Part 5's for its run (switch_change).
        self.switch = switch = layout_switch(text, own_modules(submission, SCRIPT))
        broken, restore = (None, None) if switch else (broken_layout_edit(text),
                                                       restored_layout_edit(text))
        # (edits of the course's layout, edits of Part 5's broken layout or None if unknown)
        self.layout = ((), ()) if switch else ((), [broken]) if broken else \
            ([restore], ()) if restore else ((), None)
        self.restore = None if broken else restore

    def part5_left_in(self) -> tuple[int, str, str] | None:
        """(line number, the line as handed in, the line as Parts 1 to 4 run it) where the
        script was handed in with Part 5's change in, which the other parts' runs set back."""
        if self.restore is None:
            return None
        old, new = self.restore
        at = self.text.find(old)
        # The line as run without the comment it was handed in with ("# Part 5: was + 2").
        return (self.text.count("\n", 0, at + 1) + 1, old.strip("\n").strip(),
                re.sub(r"\s+#.*$", "", new.strip("\n").strip()))

    def switch_left_in(self):
        """The layout's constant (second_stage_device.LayoutSwitch) where it was handed in at
        another value than the course's: Parts 1 to 4's runs set it."""
        switch = self.switch
        return switch if switch is not None and switch.written != switch.course else None

    def constants_left(self) -> dict:
        """{NAME: value as handed in} of the constants the file holds at another value than
        the handout's defaults (the last values Parts 2 and 3 tried): every run sets its own."""
        return {name: value for name, value in self.written.items() if value != DEFAULTS[name]}

    def switch_change(self, broken: bool) -> tuple[dict, tuple]:
        """(sets, edits) that give the layout's switch its value for a run of the course's
        layout or of Part 5's, where the file holds another value; ({}, ()) otherwise."""
        if self.switch is None:
            return {}, ()
        return self.switch.change(self.switch.broken if broken else self.switch.course)

    def spec(self, processes=2, broken=False, steady=False, **sets):
        """The run's keyword sets for `runs.script`; `steady`: the model's dropout and batch
        statistics held still (grader/vgpu/model_noise.py), for the invariance runs."""
        wanted = {**DEFAULTS, **sets}
        changed = {name: value for name, value in wanted.items()
                   if self.written.get(name, DEFAULTS[name]) != value}
        edits = self.layout[1] if broken else self.layout[0]
        switch_sets, switch_edits = self.switch_change(broken)
        return dict(script=SCRIPT, gpus=GPUS, nproc=processes, launcher="torchrun",
                    sets={**changed, **switch_sets, **self.steps} or None,
                    edits=tuple(edits) + switch_edits + self.steps_edits,
                    **({"steady": True} if steady else {}))

    def run(self, processes=2, steady=False, **sets):
        # Part 4's run (one process, the handout's constants) is the invariance check's run of
        # MICRO_BATCHES = 4, the same command: its noise held still changes no layout, pass or
        # step that Part 4's check reads, and it saves a run of its own.
        part4 = processes == 1 and not sets
        run = self.runs.script(**self.spec(processes, steady=steady or part4, **sets))
        if steady and not part4:
            return run
        if processes == 2 and not sets and "unmoved" not in run.derived:
            # The handout's run is the one whose stages are read: the GPUs whose layers carry
            # no value into its passes are read from a probe of it (value_probe.py).
            probe = self.runs.script(**self.spec(), probe=True)
            run.derived["unmoved"] = unmoved = unmoved_gpus(run, probe)
            # Where the probe cannot say (it completed less than the run, or only mixing the
            # rows left a GPU unchanged), a person reads the stages: held for review.
            probe.integrity += [f"{SCRIPT}: {why}" for why in probe_holds(run, probe, unmoved)
                                if f"{SCRIPT}: {why}" not in probe.integrity]
        elif processes == 1 and not sets and "unmoved" not in run.derived:
            # Part 4's process is rank 0 on rank 0's GPUs, the same code: what the probe of
            # the handout's run read of them holds (an honest stage there is never unmoved).
            run.derived["unmoved"] = {0: self.run().derived["unmoved"].get(0, {})}
        return run

    @property
    def can_break(self) -> bool:
        return self.layout[1] is not None

    def broken(self):
        return self.runs.script(**self.spec(broken=True))


@pytest.fixture(scope="module")
def handout(runs, submission):
    return HandoutRuns(runs, submission)


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs, handout):
    runs.prefetch(handout.spec(),
                  *(handout.spec(BATCH_SIZE=b, MICRO_BATCHES=m) for b, m in CONFIGS + [UNEVEN]
                    if (b, m) != (BATCH, MICRO)),
                  *(handout.spec(processes=1, MICRO_BATCHES=m, steady=True)
                    for m in [1, *INVARIANCE]),
                  *([handout.spec(broken=True)] if handout.can_break else []),
                  {**handout.spec(), "probe": True})


# A collective of the script's own is taken for its gradients' all-reduce where it comes after a
# backward pass of the step, before its optimizer step, on more than one number (a loss
# all-reduced to be printed is one).
OWN_REDUCES = ("all_reduce", "all_reduce_coalesced")
ONE_NUMBER_BYTES = 8


def own_gradient_reduce(event, backwards: int) -> bool:
    """A dist.all_reduce the script calls itself (DDP's carry a `source`) on what is likely
    its gradients: after the step's first backward, on more than one number."""
    return (event.get("event") == "collective" and event.get("op") in OWN_REDUCES
            and not event.get("source") and backwards > 0
            and (event.get("bytes") or 0) > ONE_NUMBER_BYTES)


def step_pattern(run, rank=0, inside=False):
    """Per optimizer step: (forward passes, their row counts, backward passes, synchronising
    backward passes, the index of the last one among the backwards, and `own`: the
    all-reduces of the script's own after a backward, where there are any; see
    own_gradient_reduce). A forward pass under torch.no_grad() (a loss logged after the step) is
    no micro-batch: it trains nothing; nor is a pass no backward reached, or a backward that
    reached no pass (training_events). `inside`: a pass whose own forward cut its batch into
    micro-batches (its layers ran on each in turn) counts as those micro-batches, as the answers
    about the micro-batches read the code; otherwise such a pass is one, and says what ran
    inside it (`inside`)."""
    pattern = []
    passes = {p["n"]: p for p in forward_passes(run, rank) if p["n"] is not None}
    for events in map(training_events, model_steps(run.by_step(rank))):
        forwards = [e for e in events if script_forward(e) and e.get("grad", True)]
        backwards = synced = own = 0
        last_synced_at = None
        synced_this_backward = False
        for event in events:
            if own_gradient_reduce(event, backwards):
                own += 1
            if event.get("event") == "backward":
                backwards += 1
                synced_this_backward = False
            elif (event.get("event") == "collective" and event.get("source") == "ddp_gradients"
                  and not synced_this_backward and backwards):
                synced += 1
                synced_this_backward = True
                last_synced_at = backwards
        closing = events[-1] if events and events[-1].get("event") == "step" else {}
        other = bool(synced) and not synced_step(closing)
        if other:
            # DDP all-reduced other parameters than those stepped (a dummy DDP head beside a
            # model never wrapped: adv52 F2's form): none of the step's gradients was synced.
            synced, last_synced_at = 0, None
        # The rows each pass ran on, where its output says other than its first argument.
        rows = [passes.get(f.get("n"), {}).get("rows", rows_of(f.get("batch"))) for f in forwards]
        cut = [passes.get(f.get("n"), {}).get("inside_calls") for f in forwards]
        if inside and any(cut):
            rows = [r for calls, row in zip(cut, rows) for r in (calls or [row])]
        pattern.append({"forwards": len(rows) if inside else len(forwards), "rows": rows,
                        "backwards": backwards, "synced": synced, "synced_at": last_synced_at,
                        **({"own": own} if own else {}),
                        **({"synced_other": True} if other else {}),
                        **({"outside": outside_of(closing)} if made_outside(closing) else {}),
                        **({"weights_written": True}
                           if closing.get("weights_written") is True else {}),
                        **({"weights_unvouched": closing["weights_unvouched"]}
                           if closing.get("weights_unvouched") else {}),
                        **({"inside": [c for c in cut if c]} if any(cut) and not inside else {})})
    return pattern


def describe_step(step) -> str:
    said = (f"{step['forwards']} forward pass(es) on {step['rows']} rows, {step['backwards']} "
            f"backward pass(es), {step['synced']} of them all-reducing the gradients")
    if step.get("synced_other"):
        said += (" (DDP all-reduced only a module of other parameters than the model the "
                 "optimizer steps: wrap the model itself)")
    if step.get("weights_unvouched"):
        said += f"; {unvouched_said(step['weights_unvouched'])}: no pass of it counts as a " \
            "micro-batch"
    elif step.get("weights_written"):
        said += f"; {WEIGHTS_WRITTEN_SAID}: no pass of it counts as a micro-batch"
    elif "outside" in step:
        said += (f"; {outside_share_said(step['outside'])} of the step's gradient was "
                 f"{OUTSIDE_SAID}, so no pass of it counts as a micro-batch")
    for calls in step.get("inside", []):
        said += (f"; inside the model's forward its layers ran on {len(calls)} parts of "
                 f"{calls} rows: micro-batches cut inside forward(), trained by one backward "
                 "for them all, where the practical wants a forward and a backward per "
                 "micro-batch in the training loop")
    return said


def without_micro_batches(steps, micro) -> list:
    """The steps that did not run MICRO_BATCHES forward and MICRO_BATCHES backward passes (what
    practical10.micro_batches counts). Synchronisation and invariance say something only about
    steps that have micro-batches: one forward and backward on the whole batch all-reduces once
    and gives the full-batch gradient at any MICRO_BATCHES (a TA's s10 earned 3.5 points
    without a micro-batch), and a loop left empty gives a zero gradient at every setting."""
    return [s for s in steps if s["forwards"] != micro or s["backwards"] != micro]


def passes_in(step) -> str:
    """describe_step, or that a step (of an empty loop) ran no pass at all."""
    if not step["forwards"] and not step["backwards"] and "outside" not in step:
        return "no forward and no backward pass before the optimizer step"
    return describe_step(step)


LOOK_MICRO_LOOP = ("the micro-batch loop: for each of the MICRO_BATCHES micro-batches a forward "
                   "pass, loss_fn(out, my) / MICRO_BATCHES and a backward pass (all but the last "
                   "under `with model.no_sync():`), then one optimizer.step()")


BY_THE_SCRIPT = ("the gradients were all-reduced by the script's own dist.all_reduce, not by "
                 "DDP: the practical asks for the model wrapped in DDP and no_sync() on all but "
                 "the last micro-batch")
LOOK_DDP_NOT_OWN = ("`model = DDP(model)` as sample.py gives it, and `with model.no_sync():` "
                    "around all but the last micro-batch's forward + backward, in place of the "
                    "dist.all_reduce of the gradients (DDP all-reduces them in the last "
                    "micro-batch's backward)")


def own_reduce_steps(run, rank=0) -> list:
    """The steps in which the gradients were all-reduced by the script's own collectives and
    not by DDP."""
    return [s for s in step_pattern(run, rank) if s.get("own") and not s["synced"]]


# -- layout: a DDP replica per process, two GPUs per replica ------------------------------------


@pytest.mark.check("practical10.one_process_per_replica")
def test_one_process_per_replica(handout, flag):
    """DDP replaced by the script's own all-reduce of the gradients is flagged: the points
    are the rubric's (its items are worded for DDP), whether to give them the course's call."""
    run = handout.run()
    look = "wrap each rank's two-stage model in DDP (without device_ids: it spans two GPUs)"
    expected = "2 processes, each one data-parallel replica wrapped in DDP over a group of 2, " \
               "each training"
    wrapped = {e.get("rank"): e.get("world_size") for e in run.of("ddp_wrap")}
    missing = "no model was wrapped in DDP"
    own = own_reduce_steps(run)
    if not wrapped and own:
        missing += (": the gradients are all-reduced by the script's own dist.all_reduce "
                    "after its backward passes, not by DDP")
        flag(f"{SCRIPT} replaced DDP: no model is wrapped in DDP, and the gradients are "
             "all-reduced by the script's own dist.all_reduce after the backward passes "
             f"({len(own)} of rank 0's {len(step_pattern(run))} optimizer steps). The rubric "
             "words practical10.one_process_per_replica and sync_once_per_step for DDP (the "
             "given `model = DDP(model)`, no_sync()), so its checks gave them no points: if "
             "the course accepts data parallelism by hand, set the items practical10.layout "
             "and practical10.sync by override")
    wraps = evidence(run, wrapped, expected, missing, look)
    trained = evidence(run, learning_ranks(run), expected, not_learning(run), look)
    assert sorted(wraps) == [0, 1] and set(wraps.values()) == {2} and trained == [0, 1], explain(
        expected, f"DDP replicas on ranks {sorted(wraps)} with group sizes "
        f"{sorted(set(wraps.values()))}; optimizer steps on gradients on ranks {trained}", look)


@pytest.mark.check("practical10.gpu_pair_per_rank")
def test_rank_uses_gpus_r_and_r_plus_2(handout):
    run = handout.run()
    look = "device0 = cuda:{local_rank}, device1 = cuda:{local_rank + 2}"
    expected = ("rank r puts stage 0 on cuda:r and stage 1 on cuda:r+2 (rank 0: cuda:0 + "
                "cuda:2, rank 1: cuda:1 + cuda:3) and trains there")
    placed = evidence(run, {r: devices_of_rank(run, r) for r in (0, 1) if devices_of_rank(run, r)},
                      expected, "no forward pass of the model on any rank", look)
    evidence(run, learning_ranks(run), expected, not_learning(run), look)
    wrong = {r: sorted(placed.get(r, [])) for r in (0, 1)
             if placed.get(r) != {f"cuda:{r}", f"cuda:{r + 2}"}}
    assert not wrong, explain(expected, "; ".join(
        f"rank {r} uses {', '.join(d) or 'no GPU'}" for r, d in wrong.items()), look)
    # Trains there: the layers run on both GPUs, not a layer left unused on one (adv40 F5).
    idle = {r: stage_gpus(run, r) for r in (0, 1) if set(stage_gpus(run, r)) != {r, r + 2}}
    assert not idle, explain(expected, "; ".join(
        f"rank {r}'s model has layers on cuda:{r} and cuda:{r + 2}, but its training passes "
        f"ran layers on {', '.join(f'cuda:{g}' for g in gpus) or 'no GPU'} only"
        for r, gpus in idle.items()) + faint_note(run, sorted(idle))
        + unmoved_note(run.derived.get("unmoved", {}), sorted(idle)), look)


# -- accumulation: MICRO_BATCHES passes per step, every row, one all-reduce -------------------------


@pytest.mark.check("practical10.micro_batches")
@pytest.mark.parametrize("batch, micro", CONFIGS, ids=[f"batch{b}-micro{m}" for b, m in CONFIGS])
def test_micro_batches_cover_the_batch(handout, batch, micro):
    micro_batches_cover(handout.run(BATCH_SIZE=batch, MICRO_BATCHES=micro), batch, micro)


@pytest.mark.check("practical10.uneven_micro_batches")
def test_uneven_micro_batches_cover_the_batch(handout):
    """No point (no handout part splits unevenly): a split of BATCH_SIZE // MICRO_BATCHES rows
    is right for every setting the handout tries; this tells the student it drops rows."""
    batch, micro = UNEVEN
    micro_batches_cover(handout.run(BATCH_SIZE=batch, MICRO_BATCHES=micro), batch, micro)


def step_per_micro_batch(run, batch, micro) -> bool:
    """optimizer.step() inside the micro-batch loop: the batch is cut into its MICRO_BATCHES
    micro-batches, but every optimizer step holds fewer of them."""
    steps = step_pattern(run)
    _, rows = micro_batch_pattern(run)
    return (micro > 1 and bool(steps) and bool(rows)
            and all(abs(r - batch / micro) < 1 for r in rows)
            and all(s["forwards"] < micro for s in steps))


STEP_PER_MICRO_BATCH = ("optimizer.step() runs after every micro-batch, so nothing accumulates "
                        "over the batch")
LOOK_ONE_STEP_PER_BATCH = ("call optimizer.step() (and zero_grad()) once per batch, after the "
                           "loop over its micro-batches")


def known_first_step_rows(run) -> list:
    """The distinct rows rank 0's first step trained on; none where some were not recorded
    (the run's passes before it used up the grader's records of rows: rows.py), which is not
    known, never fewer rows."""
    return [] if first_step_rows_dropped(run, 0) else distinct_rows(first_step_rows(run, 0))


def micro_batches_cover(run, batch, micro):
    even = batch % micro == 0
    # Not "chunks of ceil(BATCH_SIZE / MICRO_BATCHES) rows": 64 rows over 12 make 11 such
    # chunks, not 12 (a TA's audit).
    look = ("split the batch into MICRO_BATCHES micro-batches (x.tensor_split(MICRO_BATCHES) "
            "always makes MICRO_BATCHES of them) and run forward + backward for each before "
            "optimizer.step()")
    expected = (f"with BATCH_SIZE = {batch} and MICRO_BATCHES = {micro}: per step {micro} "
                f"forward and {micro} backward passes on micro-batches of "
                + (f"{batch // micro} rows" if even else f"about {batch / micro:.3g} rows")
                + f", together every one of the {batch} rows")
    steps = evidence(run, step_pattern(run), expected, "no optimizer step", look)
    wrong = [s for s in steps if s["forwards"] != micro or s["backwards"] != micro
             or sum(r or 0 for r in s["rows"]) != batch or (even and set(s["rows"]) != {batch // micro})]
    seen = known_first_step_rows(run)
    if wrong:
        # The rows a step holds, as distinct rows where they were recorded (micro-batches that
        # overlap hold fewer than their sizes add up to). Rows are never trained on only where
        # every step splits the batch alike; a step per micro-batch trains them all, each in a
        # step of its own.
        step = wrong[0]
        rows = len(seen) if seen and step is steps[0] else sum(r or 0 for r in step["rows"])
        held = "" if rows >= batch else \
            f"; {batch - rows} of the batch's {batch} rows never trained on" \
            if step["forwards"] == micro else \
            f"; the step's micro-batches hold {rows} of the batch's {batch} rows"
        if step_per_micro_batch(run, batch, micro):
            held, look = f"{held}: {STEP_PER_MICRO_BATCH}", LOOK_ONE_STEP_PER_BATCH
        raise AssertionError(explain(expected, describe_step(step) + held, look))
    assert len(seen) in (0, batch), explain(
        expected, f"the micro-batches of the first step hold {len(seen)} different rows, not "
        f"the batch's {batch}", look + " (each micro-batch a different part of x)")


@pytest.mark.check("practical10.sync_once_per_step")
@pytest.mark.parametrize("batch, micro", CONFIGS, ids=[f"batch{b}-micro{m}" for b, m in CONFIGS])
def test_gradients_synchronised_once_per_step(handout, batch, micro):
    run = handout.run(BATCH_SIZE=batch, MICRO_BATCHES=micro)
    # The forward too: DDP decides at the forward pass whether the backward all-reduces (a TA's
    # student had wrapped only loss.backward()).
    look = ("wrap all but the last micro-batch's forward + backward in `with model.no_sync():` "
            "(DDP decides at the forward pass: a backward under no_sync() after a forward "
            "outside it still all-reduces)")
    expected = ("gradients are all-reduced across replicas once per step, in the last "
                "micro-batch's backward (the others run under model.no_sync())")
    steps = evidence(run, step_pattern(run), expected, "no optimizer step", look)
    wrong = [s for s in steps if s["synced"] != 1 or s["synced_at"] != s["backwards"]]
    per_micro_batch = step_per_micro_batch(run, batch, micro)
    if wrong and per_micro_batch:
        raise AssertionError(explain(
            expected, f"{describe_step(wrong[0])}: {STEP_PER_MICRO_BATCH}, and the steps of the "
            "micro-batches run under no_sync() use gradients never all-reduced",
            LOOK_ONE_STEP_PER_BATCH))
    # One all-reduce per step shows no_sync() at work only where the step has micro-batches
    # whose all-reduce it saves: a step of one forward and one backward all-reduces once by
    # itself (a TA's s10 earned these points with no micro-batch at all).
    unaccumulated = without_micro_batches(steps, micro)
    if unaccumulated and per_micro_batch:
        raise AssertionError(explain(
            expected, f"{describe_step(unaccumulated[0])}: {STEP_PER_MICRO_BATCH}, so no "
            "all-reduce is left for no_sync() to save", LOOK_ONE_STEP_PER_BATCH))
    assert not unaccumulated, explain(
        f"{expected}, in steps of {micro} forward and {micro} backward passes (BATCH_SIZE = "
        f"{batch}, MICRO_BATCHES = {micro})",
        f"{passes_in(unaccumulated[0])}; only a step of {micro} forward and {micro} backward "
        "passes has all-reduces for no_sync() to save"
        + ("; one all-reduce per step without them shows nothing"
           if unaccumulated[0]["synced"] == 1 else "")
        + " (practical10.micro_batches says what a step should hold)", LOOK_MICRO_LOOP)
    # Never all-reduced: the last micro-batch too ran under no_sync(); how DDP decides (at the
    # forward) is another student's mistake (a TA's round: the hint named it to this one).
    never = ("leave the last micro-batch's forward and backward outside `with model.no_sync():` "
             "(under it no backward all-reduces: each rank keeps its own gradients)")
    # DDP replaced by the script's own all-reduce of the gradients (a TA's audit28 #10): they
    # were all-reduced, and there is no no_sync() to move; whether that earns the item is the
    # course's call (flagged by practical10.one_process_per_replica), the rubric words it for DDP.
    if wrong and not wrong[0]["synced"] and wrong[0].get("own"):
        raise AssertionError(explain(
            expected, f"{describe_step(wrong[0])} through DDP, and the script's own "
            f"dist.all_reduce after them: {BY_THE_SCRIPT}",
            LOOK_DDP_NOT_OWN))
    if wrong and wrong[0]["synced"] == 1:
        # One all-reduce, on another micro-batch than the last: named as the script's loop
        # numbers them, from 0 (a TA's audit: "came with backward 1" read as micro-batch 1 to
        # a student whose script printed "micro-batch 0/4 ... all-reduced").
        index, count = wrong[0]["synced_at"] - 1, wrong[0]["backwards"]
        raise AssertionError(explain(
            expected, f"{describe_step(wrong[0])} (the all-reduce came with "
            f"{micro_batch_named(index, count)}' backward (index {index}), not the last one's "
            f"(index {count - 1}))",
            f"your loop leaves micro-batch {index} (the {ordinal(index)}) outside `with "
            f"model.no_sync():`; only the last, index {count - 1} = MICRO_BATCHES - 1, must be "
            "left outside (look at the condition that picks it"
            + (", e.g. `i == 0` where `i == MICRO_BATCHES - 1` is meant" if index == 0 else "")
            + "; DDP decides at the forward pass, so the forward goes under no_sync() too)"))
    assert not wrong, explain(
        expected, describe_step(wrong[0]) + (
            "" if wrong[0]["synced"] else ": the gradients were never all-reduced"),
        look if wrong[0]["synced"] else never)


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def ordinal(index: int) -> str:
    """'first' for index 0: a loop's counter said in words."""
    return ORDINALS[index] if 0 <= index < len(ORDINALS) else f"number {index + 1}"


def micro_batch_named(index: int, count: int) -> str:
    """'the first of 4 micro-batches' for index 0 of 4."""
    return f"the {ordinal(index)} of {count} micro-batches"


# -- invariance: the accumulated gradient is the full-batch gradient --------------------------------


LOOK_LOSS_LINE = "loss = loss_fn(out, my) / MICRO_BATCHES, for every micro-batch"
LOOK_NOWHERE_ELSE = (", and nowhere else: no second division of the loss, nor of the gradients "
                     "(p.grad /= ...) before optimizer.step()")


def first_gradient(run):
    """Rank 0's gradient at the first optimizer step: (sum, norm)."""
    prints = run.fingerprints("grads").get(0, [])
    if not prints or "sumsq" not in prints[0]:
        return None
    return prints[0]["sum"], math.sqrt(max(prints[0]["sumsq"], 0.0))


@pytest.mark.check("practical10.gradient_equals_full_batch")
@pytest.mark.parametrize("micro", INVARIANCE)
def test_accumulated_gradient_equals_full_batch_gradient(handout, micro):
    # One process: where the all-reduce happens (practical10.sync's question) then changes no
    # gradient, so a no_sync() on the wrong micro-batch loses the sync item only, not this
    # one too (a TA's audit: the same bug charged twice, told to look at the loss line).
    # Runs of their own, whose dropout and batch statistics are held still (model_noise.py):
    # a Dropout(0.1) otherwise left only norms to compare, blind to wrong targets (adv54 F2).
    full_run = handout.run(processes=1, MICRO_BATCHES=1, steady=True)
    run = handout.run(processes=1, MICRO_BATCHES=micro, steady=True)
    look = LOOK_LOSS_LINE
    expected = (f"with MICRO_BATCHES = {micro}, the gradient accumulated over the micro-batches "
                "equals the full-batch gradient (MICRO_BATCHES = 1) at the first step "
                "(torchrun --nproc_per_node=1)")
    full = evidence(full_run, first_gradient(full_run), expected,
                    "the full-batch run (MICRO_BATCHES = 1) took no optimizer step", look)
    mine = evidence(run, first_gradient(run), expected, "no optimizer step", look)
    (full_sum, full_norm), (sum_, norm) = full, mine
    # Equal gradients show the loss scaling only where the step accumulated micro-batches
    # (a whole-batch step gives the full-batch gradient at any MICRO_BATCHES: a TA's s10),
    # and where there is a gradient at all (an empty loop's zero equals zero: s11).
    per_micro_batch = step_per_micro_batch(run, BATCH, micro)
    unaccumulated = without_micro_batches(step_pattern(run), micro)
    assert per_micro_batch or not unaccumulated, explain(
        f"{expected}, accumulated over {micro} forward and {micro} backward passes per step",
        f"with MICRO_BATCHES = {micro}: {passes_in(unaccumulated[0])}; a gradient made without "
        f"{micro} forward and {micro} backward passes per step accumulates nothing, whatever "
        "it equals (practical10.micro_batches says what a step should hold)", LOOK_MICRO_LOOP)
    assert full_norm > 0, explain(
        expected, "the full-batch run's (MICRO_BATCHES = 1) gradient at its first optimizer "
        "step is zero: no backward pass produced gradients, so there is no gradient for the "
        "accumulated one to equal", "loss.backward() for every micro-batch before "
        "optimizer.step() (MICRO_BATCHES = 1 is one micro-batch of the whole batch)")
    if not per_micro_batch and close(norm, full_norm, rel=1e-3) \
            and abs(sum_ - full_sum) <= 1e-3 * full_norm + 1e-9:
        return
    ratio = norm / full_norm if full_norm else float("inf")
    if close(ratio, micro, rel=0.02):
        cause = (f"the accumulated gradient is {ratio:.2f}x the full-batch gradient (its norm): "
                 f"the micro-batch losses are added up without dividing by MICRO_BATCHES = "
                 f"{micro}")
    elif norm == 0:
        cause = ("the accumulated gradient is zero, where the full-batch gradient's norm is "
                 f"{full_norm:.6g}: every micro-batch's loss reached backward multiplied by 0 (a "
                 "weight computed with integer division, `len(mx) // len(x)`?) or cut from the "
                 "model's output")
        look += ", with a weight that is not 0 (1 / MICRO_BATCHES, or len(mx) / len(x))"
    elif close(ratio, 1 / micro, rel=0.02):
        cause = (f"the accumulated gradient is 1/{micro} of the full-batch gradient: the loss "
                 "is divided by MICRO_BATCHES twice (or the gradients averaged once more)")
        look += LOOK_NOWHERE_ELSE
    else:
        differs = (f"the accumulated gradient differs from the full-batch gradient (norm "
                   f"{norm:.6g} against {full_norm:.6g}, {ratio:.3g}x)")
        cause = (f"{differs}: rows left out, counted twice, or other data than the full batch, "
                 "or gradients zeroed between micro-batches")
        look += ("; optimizer.zero_grad() once per step, before the first micro-batch (inside "
                 "the loop it throws away the micro-batches before the last)")
        held = len(known_first_step_rows(run))
        if step_per_micro_batch(run, BATCH, micro):
            cause = (f"{differs}: the first optimizer step holds {held} of the batch's {BATCH} "
                     f"rows; {STEP_PER_MICRO_BATCH}")
            look = LOOK_ONE_STEP_PER_BATCH
        elif 0 < held < BATCH:
            # The loss line may well be right: the data the micro-batches hold is not.
            cause += (f"; the first step's micro-batches hold {held} different rows of the "
                      f"batch's {BATCH}")
            look = ("the split of x and y into micro-batches: each a different part of the "
                    "batch, together every row (x.tensor_split(MICRO_BATCHES))")
        elif run.of("loss_class_weights"):
            # Seen in the run's autograd graph (grader/vgpu/loss_weights.py): the loss line is
            # as asked, the loss itself is no mean over equal rows.
            cause = f"{differs}: {class_weighted(run.of('loss_class_weights')[0])}"
            look = LOOK_UNWEIGHTED_LOSS
        elif noise_in(full_run, run):
            # Dropout or batch statistics: the two gradients differ also where the code is
            # right (adv49 S1: 0 of 2, told rows were left out); judged by what stays comparable.
            cause, look = noisy_gradient(run, full_run, micro, ratio, differs, look)
            if cause is None:
                return
    raise AssertionError(explain(expected, cause, look))


def noisy_gradient(run, full_run, micro: int, ratio: float, differs: str,
                   look: str) -> tuple[str | None, str]:
    """(the cause, where to look) for a model whose dropout or batch statistics keep the
    accumulated gradient from equalling the full-batch one (gradient_noise.py): gradients
    thrown away between micro-batches, or the loss weighting read from the passes' outputs,
    off by MICRO_BATCHES; (None, look) where the weighting is right, nothing was thrown away
    and the gradient is as near as the noise leaves it. Otherwise nothing comparable settles
    it: GradedByHand, the cause named, never a 0 for rows left out."""
    kinds = noise_in(full_run, run)
    said = f"your model has {noise_said(kinds)}"
    expected = ("the accumulated gradient equals the full-batch gradient (MICRO_BATCHES = 1) at "
                f"the first step, with MICRO_BATCHES = {micro}")
    weight = loss_weight(run, full_run)
    if zeroed_in_first_step(run):
        return (f"{differs}: a zero_grad between the micro-batches threw away the gradients of "
                "the micro-batches before it (" + said + ", which alone changes the gradient "
                "by a few percent, not this)"), look
    if weight is not None and close(weight, micro, rel=WEIGHT_REL):
        return (f"{differs}; {said}, so the gradients are compared through the gradient that "
                f"reached the micro-batches' outputs: {weight:.2f}x the full batch's, the "
                f"micro-batch losses added up without dividing by MICRO_BATCHES = {micro}"), \
            LOOK_LOSS_LINE
    if weight is not None and close(weight, 1 / micro, rel=WEIGHT_REL):
        return (f"{differs}; {said}, so the gradients are compared through the gradient that "
                f"reached the micro-batches' outputs: 1/{micro} of the full batch's, the loss "
                "divided by MICRO_BATCHES twice (or the gradients averaged once more)"), \
            LOOK_LOSS_LINE + LOOK_NOWHERE_ELSE
    if weight is not None and close(weight, 1.0, rel=WEIGHT_REL) and \
            close(ratio, 1.0, rel=NOISE_REL):
        # Norms cannot see a wrong direction (adv54 F2: each micro-batch on the next one's
        # targets, 1.002x). Runs that start from other weights have no direction in common,
        # and norms alone kept the item for those targets (adv57 F-G: a seed drawn from
        # os.urandom): the check's runs hold the script's seeds (steady_start.py), and a start
        # that still differs is held for a person, never passed on norms.
        if "start" in kinds:
            raise GradedByHand(explain(
                expected,
                f"{differs}; {said}: the two runs started from other weights although the "
                "grader held the seeds the script set to one (torch, numpy, Python), so the "
                "gradients share no direction to compare, and their norms cannot tell wrong "
                "targets from right ones: a person grades this item", look),
                "gradient_with_model_noise")
        cosine = direction(run, full_run)
        if cosine is None or cosine >= DIRECTION_MIN:
            return None, look
        return (f"{differs}; {said}, yet the two gradients point elsewhere: their cosine is "
                f"{cosine:.2f}, where the noise leaves it above {DIRECTION_MIN} (the norms "
                "agree, the directions do not): the micro-batches trained on other targets or "
                "other data than the full batch's rows"), LOOK_PAIRED_SPLIT
    raise GradedByHand(explain(
        expected,
        f"{differs}; {said}, so the two gradients differ also where the code is right, and "
        + ("the gradient that reached the micro-batches' outputs is not recorded"
           if weight is None else
           f"the gradient that reached the micro-batches' outputs is {weight:.3g}x the full "
           "batch's") + ": the grader cannot tell the noise from a bug here, a person grades "
        "this item", look), "gradient_with_model_noise")


LOOK_PAIRED_SPLIT = ("the split of x and y into micro-batches: micro-batch i's targets are the "
                     "targets of micro-batch i's rows (zip(x.tensor_split(MICRO_BATCHES), "
                     "y.tensor_split(MICRO_BATCHES)))")


def class_weighted(record: dict) -> str:
    """Why a class-weighted loss (the run's loss_class_weights) gives no full-batch gradient."""
    return ("the loss that reached backward is class-weighted (CrossEntropyLoss(weight=...) or "
            f"nll_loss with weight=, {record.get('classes', 'its')} classes): a weighted loss averages "
            "by the weights of its rows' classes, not over its rows, so the micro-batches' losses "
            "divided by MICRO_BATCHES do not add up to the whole batch's")


LOOK_UNWEIGHTED_LOSS = ("the loss: use an unweighted mean loss, as the handout's sample.py does "
                        "(nn.MSELoss(), a mean over the rows), divided by MICRO_BATCHES for every "
                        "micro-batch")


# -- the handout's Parts 4 and 5: one process, and the broken layout ---------------------------------


# Parts 4 and 5 ask to run the script another way and say what is seen: their code points
# count where the part was done, one of its questions answered. A TA's audit: a Part 1 loop
# that also runs there had earned them for parts the student skipped.
PART_QUESTIONS = {4: ("single.rank1", "single.sync"),
                  5: ("broken.gpus_in_use", "broken.output_changes")}


def part_done(answers, part: int, expected: str) -> None:
    questions = PART_QUESTIONS[part]
    if any(q in answers.values or q in answers.unread for q in questions):
        return
    raise AssertionError(explain(
        expected, f"no answer found to Part {part}'s questions ({', '.join(questions)}): the "
        f"part is not handed in, and the code alone does not show it was done",
        f"run Part {part} as the handout says and answer its questions in "
        f"{answers.where_to_answer(questions[0])}"))


@pytest.mark.check("practical10.single_process")
def test_single_process_runs(handout, answers):
    run = handout.run(processes=1)
    look = "the script must not assume 2 processes"
    expected = ("torchrun --nproc_per_node=1: one process, one replica on two GPUs (stage 0 "
                "on cuda:0, stage 1 on cuda:2 with the handout's line), training")
    evidence(run, learning_ranks(run), expected, not_learning(run), look)
    part_done(answers, 4, expected)
    # A layout of the script's own that spreads the replica over the GPUs it has (stage 1 at
    # `local_rank + world_size`: cuda:1 with one process, a red team's correct P10) is still one
    # model-parallel replica of one process: judged by what it does, not by the handout's 2.
    # The GPUs its layers ran on, not only those they sit on (a spare layer on cuda:2 beside a
    # one-stage model on cuda:0: adv40 F5).
    stages = stage_gpus(run, 0)
    assert (devices_of_rank(run, 0) == {"cuda:0", "cuda:2"} and set(stages) == {0, 2}) or (
        len(stages) == 2 and stages[0] == 0), explain(
        expected, f"the replica sits on {sorted(devices_of_rank(run, 0))} and its training "
        f"passes ran layers on {', '.join(f'cuda:{g}' for g in stages) or 'no GPU'}", look)


# Part 5's change is found wherever the code gives the second stage's device as the rank plus an
# offset (practical_measures.broken_layout_edit, second_stage_device); where no single place
# does, the student is told so, and not charged where the run of their own layout shows what
# the change would move (part5_unmade).
NOT_FOUND = (f"the grader found no single place in {SCRIPT}'s code where the second stage's "
             "device is the rank plus an offset (the handout's `device1 = torch.device(f\"cuda:"
             "{local_rank + 2}\")`, or that sum anywhere: an attribute, a dict, .to(...); two "
             "such places are no single change), so it could not make Part 5's change itself")
LOOK_PART5 = (f"keep the second stage's device as the handout's `{BROKEN_LINE}` (anywhere in "
              "the code, once), so that the grader can make Part 5's change")


def one_gpu_replicas(run) -> dict[int, list[int]]:
    """{rank: its model's GPUs} of the ranks whose model sits on fewer than two GPUs in the
    run of the script's own layout: no model parallelism there for Part 5 to break."""
    return {r: stage_gpus(run, r) for r in process_ranks(run)
            if devices_of_rank(run, r) and len(stage_gpus(run, r)) < 2}


def require_model_parallelism(handout, expected: str) -> None:
    """Part 5 breaks model parallelism: its run shows something only where the run of the
    script as written (Parts 1 to 4's) has two stages on two GPUs. A replica on one GPU already
    (one stage, or both stages given one device) has nothing for the change to move, and earns
    nothing by it (a one-stage model on cuda:{local_rank + 2} would, the change found there)."""
    run = handout.run()
    single = one_gpu_replicas(run)
    assert not single, explain(
        expected, "Part 5 breaks model parallelism, and in the run of your script as written "
        + "; ".join(f"rank {r}'s model sits on {', '.join(f'cuda:{g}' for g in gpus) or 'no GPU'}"
                    f" alone" for r, gpus in sorted(single.items()))
        + ": no second stage on a GPU of its own for Part 5's change to move",
        "device0 = cuda:{local_rank} for stage 0, device1 = cuda:{local_rank + 2} for stage 1")


def part5_unmade(handout) -> dict[int, list[int]] | None:
    """Where the grader could not make Part 5's change (NOT_FOUND) but the run of the script's
    own layout shows what it would move: {rank: its GPUs in stage order} where that layout is
    the course's (rank r: stage 0 on cuda:r, stage 1 on cuda:r+2) and both ranks train. None
    where the change was made, or where the layout shows nothing of the kind."""
    if handout.can_break:
        return None
    run = handout.run()
    stages = {r: stage_gpus(run, r) for r in (0, 1)}
    course = all(stages[r] == [r, r + 2] for r in (0, 1)) and learning_ranks(run) == [0, 1]
    return stages if course else None


@pytest.mark.check("practical10.broken_layout_one_gpu")
def test_broken_layout_puts_each_replica_on_one_gpu(handout, answers):
    look = f"keep the handout's line `{BROKEN_LINE}` (Part 5 changes it)"
    expected = ("with device1 = torch.device(f\"cuda:{local_rank}\") (the handout's Part 5) "
                "both stages of rank r sit on cuda:r, and the script still trains")
    if not handout.can_break:
        unmade = part5_unmade(handout)
        assert unmade is not None, explain(
            expected, f"{NOT_FOUND}; and the run with your own layout does not show the "
            "course's (rank r: stage 0 on cuda:r, stage 1 on cuda:r+2, training), which "
            "Part 5's change would move", LOOK_PART5)
        part_done(answers, 5, expected)
        # Not charged for a change the grader could not make: the layout it would change is
        # the course's, seen training, and Part 5 was answered (graded_as_handed_in says so,
        # to the student and to the instructor).
        return
    require_model_parallelism(handout, expected)
    run = handout.broken()
    placed = evidence(run, {r: devices_of_rank(run, r) for r in (0, 1) if devices_of_rank(run, r)},
                      expected, "no forward pass of the model on any rank", look)
    evidence(run, learning_ranks(run), expected, not_learning(run), look)
    part_done(answers, 5, expected)
    wrong = {r: sorted(placed.get(r, [])) for r in (0, 1) if placed.get(r) != {f"cuda:{r}"}}
    assert not wrong, explain(expected, "; ".join(
        f"rank {r} uses {', '.join(d) or 'no GPU'}" for r, d in wrong.items()), look)


def _also_read(switch) -> str:
    """Where the script reads the layout's switch besides choosing the layout (a print, an
    offset added elsewhere): the value set reached those reads too."""
    if not switch.also_read:
        return ""
    lines = ", ".join(str(n) for n in switch.also_read)
    return (f" (the value set reached every read of {switch.name}, also on line"
            f"{'s' if len(switch.also_read) > 1 else ''} {lines}, besides the layout's choice)")


@pytest.mark.check("practical10.graded_as_handed_in")
def test_graded_as_the_handout_runs_it(handout, flag):
    """No point: where sample.py is handed in as the handout leaves it (Part 5's line changed,
    the constants at the last values Parts 2 and 3 tried), it says what was graded and why, to
    the student and, as a flag, to the instructor (a student's audit: nothing had said it)."""
    part5, constants = handout.part5_left_in(), handout.constants_left()
    unmade = part5_unmade(handout)
    switch = handout.switch_left_in()
    if part5 is None and not constants and unmade is None and switch is None:
        return
    left, graded = [], []
    if switch is not None:
        name = switch.name
        left.append(f"Part 5's layout chosen by {name} = {switch.written!r} (line {switch.line}"
                    f"{switch.place})")
        graded.append(f"Parts 1 to 4, and {{whose}} answers about them, ran with {name} = "
                      f"{switch.course!r}, the course's layout (stage 1 on cuda:{{local_rank + "
                      f"2}}); Part 5's run, and {{whose}} answer about it (broken.gpus_in_use), "
                      f"with {name} = {switch.broken!r}" + _also_read(switch))
    if unmade is not None:
        left.append("no single place where the second stage's device is the rank plus an "
                    "offset (the handout's `device1 = ...local_rank + 2...`) for the grader "
                    "to change as Part 5 asks")
        graded.append("Part 5's run was not made: its code point counts, where Part 5's "
                      "questions are answered, on the run of {whose} own layout (rank r: "
                      "cuda:r + cuda:r+2), and broken.gpus_in_use was compared with the GPUs "
                      "of stage 0, where Part 5's change moves stage 1")
    if part5 is not None:
        line, as_handed_in, as_run = part5
        left.append(f"Part 5's change in (line {line}: `{as_handed_in}`)")
        graded.append("Parts 1 to 4, and {whose} answers about them, ran with the handout's "
                      f"line put back (`{as_run}`); Part 5's run, and {{whose}} answer about it "
                      "(broken.gpus_in_use), with {whose} line as written")
    if constants:
        shown = {name: "an expression" if value is UNKNOWN else value
                 for name, value in constants.items()}
        left.append(", ".join(f"{name} = {shown[name]}" for name in sorted(shown))
                    + " (the last values Parts 2 and 3 try)")
        graded.append("each run had the BATCH_SIZE and MICRO_BATCHES its part asks for ("
                      + ", ".join(f"{name} = {DEFAULTS[name]}" for name in sorted(DEFAULTS))
                      + " where the handout does not change them)")
    how = " and ".join(left) + ", so it was graded as the handout runs each part: "
    flag(f"{SCRIPT} was handed in with {how}"
         + "; ".join(graded).replace("{whose}", "the student's") + " (no point lost)")
    raise AssertionError(explain(
        "worth no point: this says how your script was graded. The course runs Parts 1 to 4 "
        f"with the handout's line `{BROKEN_LINE}` and BATCH_SIZE = {BATCH}, MICRO_BATCHES = "
        f"{MICRO}, and makes Part 5's change itself, for Part 5's run only",
        f"your {SCRIPT} was handed in with {how}"
        + "; ".join(graded).replace("{whose}", "your") + ". This costs nothing, and your "
        "file was not changed",
        LOOK_PART5 if unmade is not None else
        f"nothing to change in {SCRIPT}: handing it in as the handout leaves it is fine"))


# -- What the answer sheet says, against what the code does -----------------------------------
# practical10/answers.yaml is compared with the grader's runs of the same script: the default
# (torchrun with 2 processes on 4 GPUs, MICRO_BATCHES = 4, BATCH_SIZE = 64), and the handout's
# changes for the answers about them.


def process_ranks(run):
    """The ranks that joined the process group (else those that started)."""
    joined = sorted({e.get("rank", 0) for e in run.of("init_process_group")})
    return joined or run.ranks()


def stage_gpus(run, rank):
    """The GPUs of a rank's model in stage order (stage 0's first), each once: in the order
    its forward passes ran their layers there (`forward_out`'s layer_devices); only where no
    pass shows that (a forward of F.linear on the weights), in the order the layers are
    registered (`placement`). The order of registration alone is not the stages' (eng29b: a
    spare layer registered first, on stage 1's GPU, gave "rank 0: gpus [2, 0]" and cost a
    true answer of [0, 2] its 0.25). Only the passes that train give the order where one does
    (practical_measures.forward_passes' `trains`): a check of stage 1 alone under
    torch.no_grad() before training had been the first pass and flipped it (adv32 L1); without
    one, every pass's, as before. A GPU whose layers ran on fewer rows than the pass's
    micro-batch is no stage of it (stages_of_pass), nor one whose layers' results carried no
    gradient back (`grad_unused`: a spare fed the whole micro-batch, its result added times 0,
    had made a one-stage replica two stages, adv43 F2), nor, in the handout's run, one whose
    layers' perturbed outputs left a pass's output unchanged (`unmoved`, value_probe.py: a
    spare added as `x + (side - side.detach())` gets a full gradient and carries nothing,
    adv48 F1-F3). Those GPUs are dropped, not moved: the order is the passes' own, read before
    any is dropped (a first step that brings stage 0 no gradient leaves it first, adv49 F1)."""
    unmoved = run.derived.get("unmoved", {}).get(rank, {})
    passes = [(p, stages_of_pass(p["layer_devices"], p["layer_rows"], *_micro_batch_vectors(p)))
              for p in forward_passes(run, rank) if p["trains"] and p["layer_devices"]]
    trained = [[d for d in staged if d not in p["grad_unused"] and gpu_index(d) not in unmoved]
               for p, staged in passes]
    ran = trained or [stages_of_pass(e.get("layer_devices"), e.get("layer_rows"))
                      for e in run.of("forward_out", rank)]
    order = _first_seen(ran)
    if trained:
        # In the order the passes ran them, a GPU dropped from some pass or not: where the
        # first step brings stage 0 no gradient (a last layer initialised to zeros, adv49 F1),
        # its passes hold stage 1 alone, which had put cuda:r+2 first (0.25 of rank_gpus).
        ran_order = _first_seen(staged for _, staged in passes)
        order.sort(key=ran_order.index)
    if order:
        # Where the passes show where the layers ran, a GPU none of them ran a layer on is no
        # stage: an unused nn.Linear(1, 1) left on cuda:r+2 beside a one-stage model on cuda:r
        # had made the replica read "cuda:r then cuda:r+2", two GPUs (adv40 F5: 10 of 12, the
        # reference's score; 7.25 without the spare).
        return order
    for event in run.of("placement", rank):
        for layer in event.get("layers", []):
            device = layer.get("device")
            for d in (device if isinstance(device, list) else [device]):
                if gpu_index(d) is not None and gpu_index(d) not in order:
                    order.append(gpu_index(d))
    return order


def _first_seen(device_lists) -> list[int]:
    """The GPU indices of the lists, each once, in the order they first appear."""
    order = []
    for devices in device_lists:
        for d in devices or []:
            if gpu_index(d) is not None and gpu_index(d) not in order:
                order.append(gpu_index(d))
    return order


def faint_gpus(run, rank) -> dict[int, float]:
    """{GPU: share} of the rank's GPUs that are no stage though a gradient came back to their
    layers: their results carry only that share of the training passes (the largest of the
    passes'; `grad_faint`: `x + 1e-6 * spare(x)`, adv46 p10_spare_eps)."""
    stages, faint = set(stage_gpus(run, rank)), {}
    for p in forward_passes(run, rank):
        if p["trains"]:
            for device, share in p["grad_faint"].items():
                gpu = gpu_index(device)
                if gpu is not None and gpu not in stages and isinstance(share, (int, float)):
                    faint[gpu] = max(share, faint.get(gpu, 0.0))
    return faint


def faint_note(run, ranks) -> str:
    """What was seen on the GPUs of `ranks` read as no stage for carrying too little of the
    passes (faint_gpus), as words to add to a message; "" where none."""
    seen = [f"the layers on cuda:{gpu} change the pass's output by about "
            + (f"{10.0 ** round(math.log10(share)):.0e} of it" if share > 0 else "none of it")
            for rank in ranks for gpu, share in sorted(faint_gpus(run, rank).items())]
    return ("; " + "; ".join(seen) + ", too little to be a stage of it") if seen else ""


def _micro_batch_vectors(forward) -> tuple:
    """The row vectors of a pass's micro-batch and of its output, counted as its layers' are
    (`layer_rows`: row_vectors), where the pass ran on its input's rows; else the rows it ran on
    (`_rows_as_run`: handed more beside it)."""
    batch = forward["batch"]
    ran = forward["rows"] if forward["rows"] != rows_of(batch) else row_vectors(batch)
    return ran, row_vectors(forward["out_shape"])


def stages_of_pass(devices, rows_at, *rows) -> list:
    """The GPUs of a pass's `layer_devices` that hold a stage of it: those whose layers ran on
    the micro-batch, as many rows as the most any layer of the pass was handed, or as the pass
    ran on and gave back (`rows`: a stage that cuts rows into tokens runs on more, a pass that
    cuts its micro-batch into chunks on fewer). A spare nn.Linear on cuda:r+2 fed x[:2] beside
    a one-stage replica on cuda:r runs there, on a slice, and is no second stage (eng_p10s: it
    had earned the layout's points). All of them where the rows were not recorded
    (`layer_rows`, a trace from before it); none where the record says a GPU's rows are unknown
    (None): a spare own parameter used through einsum on x[:1], its rows unread, had been kept
    as a stage (adv43 F5)."""
    devices = list(devices or [])
    if not isinstance(rows_at, list) or len(rows_at) != len(devices):
        return devices
    known = [r for r in rows_at if isinstance(r, int)]
    if not known:
        return devices
    micro_batch = min([max(known), *(n for n in rows if isinstance(n, int) and n > 0)])
    return [d for d, r in zip(devices, rows_at) if isinstance(r, int) and r >= micro_batch]


def one_or_all(values):
    values = sorted(set(values))
    return (values[0] if len(values) == 1 else values) if values else None


@pytest.mark.check("practical10.num_processes_reported")
def test_reported_number_of_processes(handout, answers, agree):
    run = handout.run()
    ranks = process_ranks(run)
    # The processes are torchrun's, there before the student's own work (the template's
    # NotImplementedError is in its training loop): counted only where a rank trained, as P6's
    # world size (the untouched template with the reference's sheet had earned 0.25: adv42 F4).
    trained = learning_ranks(run)
    value, truth = answer_and_truth(answers, "hybrid.num_processes",
                                    len(ranks) if ranks and trained else None, run)
    agree("hybrid.num_processes", value, truth,
          f"runs {truth} process(es) (ranks {ranks}) under torchrun --nproc_per_node=2")


@pytest.mark.check("practical10.gpus_per_rank_reported")
def test_reported_gpus_per_rank(handout, answers, agree):
    run = handout.run()
    used = {r: stage_gpus(run, r) for r in process_ranks(run) if stage_gpus(run, r)}
    value, truth = answer_and_truth(answers, "hybrid.gpus_per_rank",
                                    one_or_all(len(g) for g in used.values()), run)
    agree("hybrid.gpus_per_rank", value, truth,
          "gives " + "; ".join(f"rank {r} {len(g)} GPU(s) ({', '.join(f'cuda:{i}' for i in g)})"
                               for r, g in used.items()) + faint_note(run, sorted(used)))


@pytest.mark.check("practical10.rank_gpus_reported")
def test_reported_gpus_of_each_rank(handout, answers, measured, reported_values, flag):
    run = handout.run()
    truth = {r: stage_gpus(run, r) for r in process_ranks(run) if stage_gpus(run, r)}
    value, truth = answer_and_truth(answers, "hybrid.rank_gpus", truth or None, run)
    rows = rows_by(value, "rank")
    measured["hybrid.rank_gpus"] = {str(r): g for r, g in truth.items()}
    reported_values["hybrid.rank_gpus"] = {str(r): row.get("gpus") for r, row in rows.items()}
    # Both sides as one line, "rank 0: gpus [0, 2]; rank 1: gpus [1, 3]": equal exactly when
    # every rank lists its GPUs in stage order and no other rank is listed.
    code = per_rank_line(truth, "gpus")
    sheet = per_rank_line({r: gpu_list(row.get("gpus")) or row.get("gpus")
                           for r, row in rows.items()}, "gpus")
    must_agree(answers, "hybrid.rank_gpus", sheet or "no rank", code,
               f"{code} (stage 0's GPU first)", "puts " + "; ".join(
                   f"rank {r}'s stages on {' and '.join(f'cuda:{i}' for i in g)}"
                   for r, g in truth.items()) + faint_note(run, sorted(truth)), flag)


def micro_batch_pattern(run, inside=False):
    """(forward passes per step, rows per forward pass) over every rank's steps (`inside`:
    micro-batches cut inside the model's forward count as passes, step_pattern)."""
    steps = [s for r in process_ranks(run) for s in step_pattern(run, r, inside)]
    return [s["forwards"] for s in steps], [rows for s in steps for rows in s["rows"] if rows]


# The answers about the micro-batches are about the code's micro-batches wherever they are cut:
# in the training loop, or inside the model's own forward (a TA's audit 28: GPipe written in
# forward() ran 4 micro-batches of 16 rows, and its true answers had lost 1 point); the code
# items, which ask for a backward per micro-batch, read step_pattern as it is.
def answer_pattern(run):
    return micro_batch_pattern(run, inside=True)


def passes_said(run) -> str:
    """The passes a step runs, as the feedback says them: "2 forward + backward passes" where
    each forward has its backward, else both counts ("2 forward and 1 backward passes": the
    losses summed before one backward)."""
    steps = [s for r in process_ranks(run) for s in step_pattern(run, r, inside=True)]
    forwards = ", ".join(map(str, sorted({s["forwards"] for s in steps})))
    backwards = ", ".join(map(str, sorted({s["backwards"] for s in steps})))
    if forwards == backwards:
        return f"{forwards} forward + backward pass(es)"
    return f"{forwards} forward and {backwards} backward pass(es)"


def batch_cut_into(run, batch=BATCH):
    """How many micro-batches each batch of `batch` rows is cut into, where every forward pass
    takes the same rows (None otherwise). Where it differs from the passes per optimizer step
    (optimizer.step() inside the micro-batch loop), it is what a reader of "per step" as the
    loop over one batch counts: the code items already take that bug's points."""
    _, rows = answer_pattern(run)
    sizes = set(rows)
    if len(sizes) != 1:
        return None
    (size,) = sizes
    return batch // size if size and batch % size == 0 else None


def micro_batches_ran(run, batch) -> bool:
    """Did the batch go through the model in micro-batches: a training forward pass on part of
    it? Loose on purpose: a step per micro-batch, or one loss and one backward over the
    micro-batches' outputs, still cut the batch (their answers are right about that code; the
    code items take those bugs' points)."""
    _, rows = answer_pattern(run)
    return any(r < batch for r in rows)


def micro_batch_answer(answers, qid, truth, *runs, flag=None):
    """answer_and_truth for an answer about the micro-batches, which counts only where they ran
    (an answer is checked wherever the part it is about ran: rubrics/README.md). `runs`:
    (run, BATCH_SIZE, MICRO_BATCHES) of each run the answer is compared with. A whole-batch
    step's or an empty loop's pattern (1 pass of 64 rows, none; the same at every batch size)
    is no micro-batch pattern, whatever the sheet says of it (a TA's s10 and s11). `flag`
    tells the instructor of an answer given about micro-batches that never ran."""
    whole = [(run, batch, micro) for run, batch, micro in runs
             if not micro_batches_ran(run, batch)]
    if whole and qid in answers.values and all(run.ok for run, _, _ in runs):
        run, batch, micro = whole[0]
        forwards, _ = answer_pattern(run)
        done = (f"each optimizer step runs {passes_said(run)} on the whole batch of {batch} "
                "rows") if any(forwards) else "its optimizer steps run no forward pass"
        if flag is not None:
            flag(f"{qid}: answered {answer_shown(answers.values[qid])}, but the code never ran "
                 f"micro-batches (with BATCH_SIZE = {batch} and MICRO_BATCHES = {micro} {done})")
        # One wording for every answer it costs (no answer id): one cause for the student.
        raise AssertionError(explain(
            "your answers about the micro-batches can be compared with the micro-batches your "
            "code runs",
            f"your code never ran micro-batches: with BATCH_SIZE = {batch} and MICRO_BATCHES "
            f"= {micro} {done}, so no answer about its micro-batches can be checked, and none "
            "earns a point", f"{LOOK_MICRO_LOOP}; the answers are then checked against what "
            "it does"))
    return answer_and_truth(answers, qid, None if whole else truth,
                            *(run for run, _, _ in runs))


def steps_said(run, cut) -> str:
    said = f"runs {passes_said(run)} per optimizer step"
    forwards, _ = answer_pattern(run)
    if cut is not None and {cut} != set(forwards):
        said += f" and cuts each batch into {cut} micro-batches"
    return said


@pytest.mark.check("practical10.micro_batches_reported")
def test_reported_micro_batches_per_step(handout, answers, agree, flag):
    run = handout.run()
    forwards, _ = answer_pattern(run)
    value, truth = micro_batch_answer(answers, "hybrid.micro_batches_per_step",
                                      one_or_all(forwards), (run, BATCH, MICRO), flag=flag)
    cut = batch_cut_into(run)
    agree("hybrid.micro_batches_per_step", value, cut if value == cut else truth,
          f"{steps_said(run, cut)} with MICRO_BATCHES = {MICRO}")


@pytest.mark.check("practical10.micro_batch_size_reported")
def test_reported_micro_batch_size(handout, answers, agree, flag):
    run = handout.run()
    _, rows = answer_pattern(run)
    value, truth = micro_batch_answer(answers, "hybrid.micro_batch_size", one_or_all(rows),
                                      (run, BATCH, MICRO), flag=flag)
    agree("hybrid.micro_batch_size", value, truth,
          f"runs micro-batches of {', '.join(map(str, sorted(set(rows))))} rows with "
          f"BATCH_SIZE = {BATCH} and MICRO_BATCHES = {MICRO}")


@pytest.mark.check("practical10.micro_table_reported")
@pytest.mark.parametrize("micro", [2, 8])
def test_reported_micro_batch_table(handout, answers, measured, reported_values, flag, micro):
    run = handout.run(MICRO_BATCHES=micro)
    forwards, rows = answer_pattern(run)
    truth = {"passes_per_step": one_or_all(forwards), "micro_batch_size": one_or_all(rows)}
    value, truth = micro_batch_answer(answers, "micro.table",
                                      truth if forwards and rows else None, (run, BATCH, micro),
                                      flag=flag)
    row = rows_by(value, "micro_batches").get(micro)
    measured["micro.table"] = {str(micro): truth}
    where = answers.where_to_answer("micro.table")
    assert row is not None, explain(
        f"a row - {{micro_batches: {micro}, passes_per_step: ..., micro_batch_size: ...}}",
        f"rows for MICRO_BATCHES = {sorted(k for k in rows_by(value, 'micro_batches'))}", where)
    # As written where it is not one number ("64/2"), so the feedback shows what was read.
    said = {c: row.get(c) if isinstance(row.get(c), int) else
            one_number(row.get(c)) if one_number(row.get(c)) is not None else row.get(c)
            for c in truth}
    # "2 forward + 1 backward" names both counts: right where both are the code's (a TA's P10
    # summing the losses before one backward; that bug is the code items' to charge).
    named = forward_and_backward_named(row.get("passes_per_step"))
    if named is not None and named == (truth["passes_per_step"], backwards_per_step(run)):
        said["passes_per_step"] = truth["passes_per_step"]
    reported_values["micro.table"] = {str(micro): said}
    cut = batch_cut_into(run)
    accepted = dict(truth, passes_per_step=cut) if said["passes_per_step"] == cut else truth
    line = lambda values: ", ".join(f"{c} {values[c]}" for c in truth)  # noqa: E731
    # Words read as no number ("two passes, see above"), where every cell read agrees: for a
    # person, never a wrong answer (adv51 F5: such a row had scored 0); a cell read wrong is.
    words = [c for c in truth if isinstance(said[c], str)]
    if words and all(said[c] == accepted[c] for c in truth if c not in words):
        raise AnswerNotRead(explain(
            f"MICRO_BATCHES = {micro}: {line(accepted)}",
            f"you reported MICRO_BATCHES = {micro}: {line(said)}; "
            f"{', '.join(words)} could not be read as one number (the instructor reads it)", where),
            "micro.table")
    must_agree(answers, "micro.table", f"MICRO_BATCHES = {micro}: {line(said)}",
               f"MICRO_BATCHES = {micro}: {line(accepted)}", line(truth),
               f"{steps_said(run, cut)}, forward on {truth['micro_batch_size']} rows "
               f"each, with MICRO_BATCHES = {micro}", flag)


_PASSES_NAMED = re.compile(r"^\D*?(\d+)\s*(?:x\s*)?(?:forwards?|fwd|fw|f)\b\W*(?:and\W+|plus\W+)?"
                           r"(\d+)\s*(?:x\s*)?(?:backwards?|bwd|bw|b)\b\W*(?:pass(?:es)?)?\W*$", re.I)


def forward_and_backward_named(cell):
    """(forward, backward) passes a cell names by word: "2 forward + 1 backward", "2 fwd / 2
    bwd"; None for any other cell."""
    found = _PASSES_NAMED.match(str(cell)) if isinstance(cell, str) else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def backwards_per_step(run):
    return one_or_all([s["backwards"] for r in process_ranks(run) for s in step_pattern(run, r)])


def one_number(cell):
    """A cell's one number ("2 / 2" for 2 forward and 2 backward); None for "64/2" (a formula)
    and anything else that is not one number."""
    numbers = whole_numbers(cell)
    return numbers[0] if numbers and len(set(numbers)) == 1 else None


def pattern_of(run):
    """What a step looks like apart from its sizes: passes and synchronisations."""
    return sorted({(s["forwards"], s["backwards"], s["synced"])
                   for s in step_pattern(run, inside=True)})


@pytest.mark.check("practical10.batch_pattern_reported")
def test_reported_pattern_change_with_batch_size(handout, answers, agree, flag):
    by_batch = {b: handout.run(BATCH_SIZE=b) for b in (32, 64, 128)}
    patterns = {b: pattern_of(run) for b, run in by_batch.items()}
    truth = (len({tuple(p) for p in patterns.values()}) > 1) if all(patterns.values()) else None
    value, truth = micro_batch_answer(answers, "batch.pattern_changes", truth,
                                      *((run, b, MICRO) for b, run in by_batch.items()),
                                      flag=flag)
    shown = "; ".join(f"BATCH_SIZE = {b}: " + ", ".join(
        f"{f} forward, {bw} backward, {s} all-reduce(s) per step" for f, bw, s in p)
        for b, p in patterns.items())
    agree("batch.pattern_changes", value, truth,
          f"{'changes' if truth else 'keeps'} its execution pattern with the batch size "
          f"({shown})", expected={True: "yes", False: "no"}[truth])


@pytest.mark.check("practical10.broken_gpus_reported")
def test_reported_gpus_after_the_broken_layout(handout, answers, agree):
    expected = "your answer to broken.gpus_in_use can be compared with your code after Part 5's change"
    if not handout.can_break:
        unmade = part5_unmade(handout)
        assert unmade is not None, explain(
            expected, f"{NOT_FOUND}; and the run with your own layout does not show the "
            "course's (rank r: stage 0 on cuda:r, stage 1 on cuda:r+2, training)", LOOK_PART5)
        # Part 5 moves stage 1 onto stage 0's GPU: what stays in use is each rank's stage 0.
        first = sorted(gpus[0] for gpus in unmade.values())
        value, truth = answer_and_truth(answers, "broken.gpus_in_use", first, handout.run())
        agree("broken.gpus_in_use", sorted(set(value)), truth,
              "puts stage 0 on " + ", ".join(f"cuda:{i}" for i in truth) + " with its own "
              "layout, where Part 5's change moves stage 1 (the grader could not make the "
              "change itself: no single place in the code gives the second stage's device as "
              "the rank plus an offset)",
              expected=f"{truth} (the GPUs of all ranks together)")
        return
    require_model_parallelism(handout, expected)
    run = handout.broken()
    used = sorted({gpu_index(d) for r in run.ranks() for d in devices_of_rank(run, r)
                   if gpu_index(d) is not None})
    value, truth = answer_and_truth(answers, "broken.gpus_in_use", used or None, run)
    agree("broken.gpus_in_use", sorted(set(value)), truth,
          "uses " + ", ".join(f"cuda:{i}" for i in truth) + " after device1 = "
          "torch.device(f\"cuda:{local_rank}\") with 2 processes",
          expected=f"{truth} (the GPUs of all ranks together)")
