"""Practical 6: DistributedDataParallel under torchrun (practical6/practical6_ddp.py).

The script is launched as the handout launches it, `torchrun --nproc_per_node=N` (one process
included), on N GPUs for N = 1, 2, 3 and 4. 64 rows over 3 processes do not divide evenly:
the handout's `BATCH_SIZE // dist.get_world_size()` gives each rank 21 rows (a
DistributedSampler 22, padding with repeats); either is accepted, as long as the ranks train
on different rows. The answer sheet's comparison with DataParallel uses the student's own
Practical 5 script on 2 GPUs.

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import re

import pytest

from grader.answers.aspect_words import CHOICES, METHOD_NAMES, words_for
from grader.checks.practical_answers import (COMPARISON_ASPECTS, TOTAL_LOWER, answer_against,
                                             answer_and_truth, checked_usage_table,
                                             comparison_names, comparison_rows,
                                             constant_in_source, device_name,
                                             incomplete_rows, median_or_none, method_rows,
                                             per_rank_line, rows_by, step_times,
                                             total_disagreements, unread_cells_wait)
from grader.checks.practical_measures import (BALANCED, balanced, clock_words,
                                              compared_step_seconds, describe_memory,
                                              devices_of_rank, evidence, faster,
                                              first_step_output_sums, first_step_rows,
                                              first_step_rows_dropped,
                                              forward_passes, gpu0_more_loaded,
                                              handout_sets, learning_ranks, not_learning,
                                              same_row, shared_clock, step_batches,
                                              steps_as_written, steps_edits,
                                              steps_made_outside, TEMPLATE_STEPS,
                                              replicas_untrained, training_peak_memory,
                                              synced_step, unscattered_training)
from grader.checks.step_rows import later_steps_shared, shared_rows
from grader.checks.support import AnswerNotRead, chunk_sizes, close, explain, must_agree

SCRIPT = "practical6/practical6_ddp.py"
DP_SCRIPT = "practical5/practical5_dp.py"
BATCH = 64
PROCESSES = [1, 2, 3, 4]
SHARED = [2, 3, 4]        # runs where the batch is shared out (3: 64 does not divide evenly)
SHEET_PROCESSES = 2


def ddp_spec(runs, processes):
    """The DDP script's run on `processes` ranks, the course's way: the handout's BATCH_SIZE
    (set back where the file was left with another; handout_sets) and STEPS at most the
    template's (steps_limit, or the default of the argument bounding its loop: steps_edits)."""
    return dict(script=SCRIPT, gpus=processes, nproc=processes, launcher="torchrun",
                sets=handout_sets(runs.submission, SCRIPT),
                edits=steps_edits(runs.submission, SCRIPT))


def ddp_run(runs, processes):
    return runs.script(**ddp_spec(runs, processes))


def dp_run(runs):
    # As Practical 5's own checks run it, so both share the one run.
    return runs.script(DP_SCRIPT, gpus=SHEET_PROCESSES,
                       sets=handout_sets(runs.submission, DP_SCRIPT),
                       edits=steps_edits(runs.submission, DP_SCRIPT))


class DataParallelSide:
    """DataParallel's side of Part 6's comparison. The handout says "run your Practical 5 code
    and compare", and never asks for that code again: where the student's practical5_dp.py
    trained through DataParallel in the grader's run (DataParallel scattered its batches), its
    measurements; where it was not handed in, did not train, or trained without DataParallel
    ever scattering a batch (a wrapper made and never called: one GPU, no DataParallel to
    measure; Practical 5's own checks cost all three), what DataParallel does whatever the
    script (one process; the batch scattered by DataParallel itself; GPU 0 holding the outputs
    and the loss: Practical 5's gpu0_most_memory), and no verdict on speed (either answer)."""

    def __init__(self, runs):
        self.run = dp_run(runs)
        self.without_dp = unscattered_training(self.run)
        # Scattered, but the model trained beside the wrapper (adv52 F1): no measurement either.
        self.beside_dp = None if self.without_dp else replicas_untrained(self.run)
        # Its run is DataParallel's measurement only where DataParallel did the training.
        self.measured = bool(self.run.of("step")) and self.without_dp is None \
            and self.beside_dp is None
        self.peaks = training_peak_memory(self.run) if self.measured else {}

    @property
    def runs_compared(self) -> tuple:
        """The runs an answer about DataParallel is checked against: none but its own."""
        return (self.run,) if self.measured else ()

    def even(self) -> bool | None:
        return balanced(self.peaks) if self.measured else False

    def aspects(self) -> dict:
        if not self.measured:
            return {"processes": "1", "data split": "automatic", "gpu usage": "imbalanced"}
        return run_aspects(self.run)

    def not_measured(self) -> str:
        """Why the Practical 5 run is not DataParallel's measurement, as the feedback says it."""
        if self.without_dp:
            return (f"your Practical 5's run on {self.run.gpus} GPUs is no measurement of "
                    f"DataParallel: DataParallel never scattered a batch in it ({self.without_dp})")
        if self.beside_dp:
            return (f"your Practical 5's run on {self.run.gpus} GPUs is no measurement of "
                    f"DataParallel: the model never trained through it ({self.beside_dp})")
        return (f"your Practical 5 did not train in the grader's run "
                f"({self.run.problem() or 'no optimizer step'})")

    def unmeasured_short(self) -> str:
        """The same, short enough for a cell of the report's table of measured values."""
        return ("your Practical 5 " + ("trained without DataParallel scattering a batch"
                                       if self.without_dp else "trained beside DataParallel"
                                       if self.beside_dp else "did not train in the grader's run"))

    def unmeasured_cell(self) -> str:
        return f"what DataParallel does; not measured: {self.unmeasured_short()}"

    def source(self) -> str:
        """Where DataParallel's side of an answer comes from, for the feedback."""
        if self.measured:
            return f"your practical5_dp.py on {self.run.gpus} GPUs"
        return f"what DataParallel does; {self.not_measured()}"

    def described(self) -> str:
        if self.measured:
            return f"DataParallel (your Practical 5) on 2 GPUs: {describe_memory(self.peaks)}"
        return ("DataParallel: GPU 0 holds the most, as DataParallel gathers the outputs and "
                f"computes the loss there ({self.not_measured()})")


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs):
    runs.prefetch(*(ddp_spec(runs, n) for n in (2, 4, 3, 1)))


def first_batches(run):
    """{rank: rows it trains on per optimizer step} for the ranks that ran a training forward
    pass: the most rows of any of its steps (step_batches: the passes a backward reached, after
    the last zero_grad that threw gradients away, a pass on the very memory of an earlier one
    of the step counted once). A share run as micro-batches whose gradients accumulate into
    one step (no_sync() on all but the last) is the share: adv37 F6, the handout's 32 rows in
    2 halves of 16, had been told "rank 0 trains on 16 rows" by its first pass alone. Every
    step counts: a first step on the share and the whole batch after it had passed (adv40 F4)."""
    return {rank: rows for rank, (_, rows) in largest_steps(run).items()}


def largest_steps(run) -> dict[int, tuple[int, int]]:
    """{rank: (the step, its rows)} of each rank's step with the most training rows (the
    first of them where several have as many)."""
    found = {}
    for rank in run.ranks():
        batches = step_batches(run, rank)
        if not batches or not batches[min(batches)][0]["rows"]:
            continue
        rows = {step: sum(p["rows"] or 0 for p in passes) for step, passes in batches.items()}
        step = max(sorted(rows), key=lambda s: rows[s])
        found[rank] = (step, rows[step])
    return found


def shares(processes):
    """Rows a rank may train on out of the batch: BATCH // N (the handout's line), or
    ceil(BATCH / N) (a DistributedSampler pads the last share with repeated samples)."""
    return sorted({BATCH // processes, -(-BATCH // processes)})


# -- setup: processes, ranks, GPUs --------------------------------------------------------------


@pytest.mark.check("practical6.world_size")
@pytest.mark.parametrize("processes", PROCESSES)
def test_world_size_is_number_of_processes(runs, processes):
    run = ddp_run(runs, processes)
    look = "dist.init_process_group() with torchrun's environment (no hard-coded world_size)"
    expected = (f"torchrun --nproc_per_node={processes}: {processes} process(es), each joining "
                f"a process group of world size {processes} and training")
    sizes = {e.get("rank"): e.get("world_size") for e in run.of("init_process_group")}
    evidence(run, sizes, expected, "no process joined a process group", look)
    assert len(sizes) == processes and set(sizes.values()) == {processes}, explain(
        expected, f"process groups joined by rank(s) {sorted(sizes)} with world sizes "
        f"{sorted(set(sizes.values()))}", look)
    # Training is an optimizer step on gradients a backward made: a step with none to apply
    # (no backward, or no loss to differentiate) changes nothing (learning_ranks, as P10's).
    trained = evidence(run, learning_ranks(run), expected, not_learning(run), look)
    assert trained == list(range(processes)), explain(
        expected, f"only rank(s) {trained} took an optimizer step on gradients a backward "
        "pass produced" + (f"; {run.problem()}" if not run.ok else ""), look)
    given_code_only(runs, expected)


@pytest.mark.check("practical6.rank_device")
def test_rank_k_uses_gpu_k(runs):
    run = ddp_run(runs, 2)
    look = "torch.cuda.set_device(local_rank) and model.to(f'cuda:{local_rank}')"
    expected = "rank k keeps its model on cuda:k (its LOCAL_RANK)"
    placed = evidence(run, {r: devices_of_rank(run, r) for r in (0, 1)
                            if devices_of_rank(run, r)}, expected,
                      "no forward pass of a model on any rank", look)
    wrong = {r: sorted(d) for r, d in placed.items() if d != {f"cuda:{r}"}}
    assert sorted(placed) == [0, 1] and not wrong, explain(
        expected, "; ".join(f"rank {r} has its model on {', '.join(d)}"
                            for r, d in sorted(wrong.items()))
        or f"models seen on rank(s) {sorted(placed)}", look)
    given_code_only(runs, expected)


def ddp_trained(run) -> bool:
    """Whether DDP trained the model: every rank that trained all-reduced its gradients through
    DDP in the backward pass of one of its steps at least (steps_without_all_reduce), and
    trained no model by hand beside its steps (`trained_by_hand`, grader/vgpu/hand_steps.py:
    an optimizer over a dummy DDP head, the model updated by `p -= LR * p.grad`, whose first
    step reads synchronised because its hand update is seen at the next: adv56 F6), where
    that left the step unsynchronised (a small probe trained by hand beside a model in DDP
    leaves it synchronised)."""
    trained = learning_ranks(run)
    missing = steps_without_all_reduce(run, trained)
    by_hand = {e.get("rank", 0) for e in run.of("step")
               if e.get("trained_by_hand") and not synced_step(e)}
    return bool(trained) and all(len(missing.get(rank, ())) < len(run.by_step(rank))
                                 and rank not in by_hand for rank in trained)


def share_taken(run) -> bool:
    """Whether each rank trained on a share of the batch, fewer rows than BATCH_SIZE."""
    rows = first_batches(run)
    return bool(rows) and all(n < BATCH for n in rows.values())


def given_code_only(runs, expected: str) -> None:
    """Fails where the 2-process run trained on the template's given code alone: no DDP wrap
    and no share of the batch, the student's two parts (the template's raises deleted and
    nothing written: adv52 F4 had earned the setup item's 2 points, the template's own LOCAL_RANK,
    set_device and init_process_group). Given code earns nothing by itself (rubrics/README.md)."""
    run = ddp_run(runs, SHEET_PROCESSES)
    if not learning_ranks(run) or own_work_ran(run):
        return
    raise AssertionError(explain(
        expected + ", with your part of the script running: the DDP wrap or each rank's share "
        "of the batch", f"with {SHEET_PROCESSES} processes no rank's gradients were all-reduced "
        f"by DDP and every rank trained on the whole batch ({first_batches(run)} rows by rank): "
        "only the template's given setup ran, which earns nothing by itself",
        "wrap the model with DDP(model, device_ids=[local_rank]) and give each rank "
        "BATCH_SIZE // world_size rows"))


def require_ddp(answers, qid: str, run) -> None:
    """Fails an answer about DDP where the run trained without DDP ever all-reducing a
    gradient: that run shows no DDP to answer about (a script with no DDP had its answers
    'DDP is more balanced, faster' accepted: adv52 F4), as Practical 5's
    require_data_parallel guards the answers about DataParallel. A run that did not train is
    left to the check itself (answer_and_truth says it did not get that far)."""
    if not learning_ranks(run) or ddp_trained(run):
        return
    raise AssertionError(explain(
        f"your answer to {qid} can be compared with what DDP does in your script",
        f"with {SHEET_PROCESSES} processes your script trained without DDP: no gradient "
        "all-reduce by DDP in any backward pass, so its run shows nothing about DDP",
        "wrap the model with DDP(model, device_ids=[local_rank]) and call the wrapper; the "
        "answer is then checked against its run"))


# The handout's Part 2 asks each process to print its rank ("Add this point: print(f"Rank:
# {dist.get_rank()} | Local Rank: {local_rank}")") and to observe "Rank 0 -> GPU 0, Rank 1 ->
# GPU 1". The handout gives it no points (nor any other part: the rubric's split is the
# course's), so it is told for no point, as an observation (practical6.rank_printed).
# A number is a rank where a word for one names it, any wording: "Rank: 1", "[rank1]",
# "local_rank=1", "process 1 of 2", "worker #1"; "cuda:1" or "GPU 1" alone is the device, and
# "processes: 2" or "process group" no rank.
# The ranks' prints reach one stream, a print's text and its newline in two writes where
# output is unbuffered, so two ranks' lines can run together ("Local Rank: 0Rank: 1"): a
# number is read to its last digit, not to a word boundary, and a digit may come before the
# word (the matrix's 4-process run had lost rank 0 so, one run in many).
_RANK_SAID = re.compile(r"(?<![a-z])(?:[a-z]+[_ ])?(?:rank|proc(?:ess)?|worker)(?![a-z])"
                        r"[ \t]*(?:id|no\.?|number)?[ \t]*[:=#]?[ \t]*\[?[ \t]*(\d+)(?!\d)", re.I)
RANK_PRINT = 'print(f"Rank: {dist.get_rank()} | Local Rank: {local_rank}")'


def ranks_printed(output: str) -> set[int]:
    """The ranks a run's output names, each line read for a number a word for rank names.
    The ranks' output is one stream: a line says which rank it names, not which process
    printed it (a rank 0 that printed every rank's number would pass; no script of the course
    does)."""
    return {int(found.group(1)) for line in (output or "").splitlines()
            for found in _RANK_SAID.finditer(line)}


@pytest.mark.check("practical6.rank_printed")
@pytest.mark.parametrize("processes", SHARED)
def test_each_process_prints_its_rank(runs, processes):
    """No point (the handout gives Part 2 none): each of the N processes torchrun starts
    names its own rank in the run's output, which is what Part 2 asks the student to see.

    It reports what the run printed; it does not test the student's Part 2 print. The
    template itself prints `rank {rank}: batch shape ...` on every rank once its two TODOs
    (the DDP wrap, the per-rank batch) are written, so a script whose Part 2 print is left
    out, or put under `if rank == 0:`, passes as well (a student's audit): it fails only where
    no line names some rank, e.g. a script that stops before the template's line."""
    run = ddp_run(runs, processes)
    look = (f"Part 2 of {SCRIPT} (the template's TODO (Part 2)): after "
            f"dist.init_process_group(), every process prints its rank, {RANK_PRINT}, outside "
            "any `if rank == 0:`")
    expected = (f"Part 2, worth no point: each of the {processes} processes torchrun "
                f"--nproc_per_node={processes} starts prints its own rank (any wording, e.g. "
                "'Rank: 1 | Local Rank: 1'), so that you see one process per GPU. This only "
                "reports what the run printed: once the template's TODOs are written, its own "
                "line 'rank 1: batch shape ...' names every rank, so it cannot tell whether "
                "your Part 2 print is there")
    said = ranks_printed(run.stdout)
    # Where the run failed, torchrun stops the other processes, and what one of them printed
    # may never be flushed (a pipe is block-buffered; an exit record comes before the last
    # flush): a missing rank there is no sign of a missing print, and had made the check pass
    # or fail by timing alone (two matrix variants, one run in three). Such a run is told
    # silent only where no line names any rank.
    silent = [rank for rank in range(processes) if rank not in said and (run.ok or not said)]
    if not said and not run.of("init_process_group"):
        # Nothing printed because nothing got that far: the run's own problem is the cause.
        evidence(run, None, expected, "no process joined a process group, and no line of the "
                 "output names a rank", look)
    assert not silent, explain(
        expected, (f"the output names rank(s) {', '.join(map(str, sorted(said)))} only: no line "
                   f"names rank(s) {', '.join(map(str, silent))}") if said else
        "no line of the output names a rank (a number after the word rank or process)"
        if run.stdout.strip() else "the script printed nothing", look)


# -- data: each rank its own share of the batch --------------------------------------------------


@pytest.mark.check("practical6.per_rank_batch")
@pytest.mark.parametrize("processes", SHARED)
def test_each_rank_trains_on_its_share(runs, processes):
    run = ddp_run(runs, processes)
    allowed = shares(processes)
    look = "x, y = get_batch(BATCH_SIZE // dist.get_world_size(), DIM, device)"
    expected = (f"with {processes} processes each rank trains on BATCH_SIZE // world_size = "
                f"{BATCH} // {processes} = {BATCH // processes} rows"
                + (f" (or {allowed[-1]}, a DistributedSampler's padded share)"
                   if len(allowed) > 1 else "") + f", so the global batch stays {BATCH}")
    steps = {r: step for r, (step, _) in largest_steps(run).items()}
    seen = evidence(run, first_batches(run), expected, "no training forward pass on any rank"
                    + steps_made_outside(run), look)
    # torch.chunk of one global batch by rank (22, 22, 20 over 3 ranks) is one batch too.
    chunked = [seen.get(r) for r in range(processes)] == chunk_sizes(BATCH, processes)
    wrong = {} if chunked else {r: b for r, b in seen.items() if b not in allowed}
    assert len(seen) == processes and not wrong, explain(
        expected, "; ".join(f"rank {r} trains on {b} rows per optimizer step"
                            + (f" (at its step {steps[r] + 1})" if steps.get(r) else "")
                            for r, b in sorted(wrong.items()))
        or f"forward passes on rank(s) {sorted(seen)} only", look)


@pytest.mark.check("practical6.different_data")
@pytest.mark.parametrize("processes", SHARED)
def test_ranks_train_on_different_rows_of_one_batch(runs, processes):
    run = ddp_run(runs, processes)
    look = ("get_batch seeds its generator with SEED + dist.get_rank() (or a DistributedSampler "
            "gives each rank its own indices), and asks for BATCH_SIZE // world_size rows")
    expected = (f"the {processes} ranks train on different rows: no row on two ranks, and "
                f"together about one batch of {BATCH} rows per step")
    # Rows the run did not record (rows.py's budgets spent) are not known, never other rows:
    # what was recorded decides, and a rank whose rows were not is compared by its outputs
    # (`same_outputs`). Never a skip: a skipped check left the maximum, so a student lost its
    # point to the grader's budget while Moodle's maximum stayed 12 (a red team's adv31 H3).
    unrecorded = [r for r in range(processes) if first_step_rows_dropped(run, r)]
    found = {r: rows for r in range(processes) if (rows := first_step_rows(run, r))}
    if not found and not (unrecorded and run.ok):
        evidence(run, found, expected, "no rank recorded the rows it trained on", look)
    rows = found
    shared = shared_rows(rows)
    # Each rank's rows are its passes' (a pass on the very memory of an earlier one counted
    # once: step_batches); a row one rank has that an earlier rank has too is one row. Alike
    # values within a rank are not merged: a row with its columns reversed is another row
    # (adv40 F3), as are the alike rows of constant data (adv40 H5).
    together = together_rows(rows)
    # A DistributedSampler pads the batch to a multiple of N with repeats: that many may recur.
    padding = -(-BATCH // processes) * processes - BATCH
    repeated = sum(common for *_, common, _ in shared)
    problems = []
    if repeated > padding:
        a, b, common, size = shared[0]
        problems.append(f"rank {b} trains on {common} of its {size} rows that rank {a} also "
                        "trains on" + (" (the same data on every rank)" if common == size else ""))
    same = same_outputs(run, processes, unrecorded)
    if same:
        a, b = same[0]
        problems.append(f"rank {b}'s training pass gives the same output as rank {a}'s: the "
                        "same weights on the same rows, the same data on every rank (the rows "
                        f"of rank(s) {unrecorded} were not recorded, so their outputs were "
                        "compared)")
    # A share of ceil(BATCH / N) rows (22 on 3 processes, as a DistributedSampler gives) is
    # accepted by per_rank_batch; here too: its ranks' rows are the batch padded to a multiple
    # of N (66), its own rows in place of repeats (adv40 H6 had passed the one and failed this).
    padded = shares(processes)[-1] * processes
    if len(together) > padded:
        problems.append(f"together the ranks train on {len(together)} different rows per step, "
                        f"more than the batch of {BATCH}"
                        + (f" (padded to {padded} for {processes} processes)"
                           if padded != BATCH else "")
                        + too_many_rows_why(runs, processes, rows))
    elif step_total(run) > padded:
        # Every later step by its rows' count: the share at the first step and the whole
        # batch after it (adv40 F4); by the rows themselves below.
        problems.append(f"together the ranks train on {step_total(run)} rows per optimizer "
                        f"step at a later step, more than the batch of {BATCH}: "
                        + "; ".join(f"rank {r} trains on {rows} rows at its step {step + 1}"
                                    for r, (step, rows) in sorted(largest_steps(run).items())))
    elif len(together) < processes * (BATCH // processes) and not unrecorded:
        problems.append(f"together the ranks train on {len(together)} different rows per step, "
                        f"fewer than {processes} x {BATCH // processes}")
    # Every later step's rows too, where each rank's were recorded (grader/checks/step_rows.py):
    # the share at the first step and the same rows on every rank after it had passed by its
    # rows' count (p6_F_same_later 9.75).
    later = None if problems else later_steps_shared(run, processes, padding)
    if later and later.common is None:
        problems.append(f"at step {later.step + 1}, rank {later.b}'s training pass gives the "
                        f"same output as rank {later.a}'s: the same weights on the same rows, "
                        "the same data on every rank (the rows of that step were not all "
                        "recorded, so their outputs were compared)")
    elif later:
        problems.append(f"at step {later.step + 1}, rank {later.b} trains on {later.common} of "
                        f"its {later.size} rows that rank {later.a} also trains on"
                        + (" (the same data on every rank)" if later.common == later.size
                           else ""))
    assert not problems and len(set(rows) | set(unrecorded)) == processes, explain(
        expected, "; ".join(problems) or f"rows seen on rank(s) {sorted(rows)} only", look)


def step_total(run) -> int:
    """The ranks' training rows per optimizer step together, each rank's largest step
    (first_batches)."""
    return sum(first_batches(run).values())


def together_rows(rows: dict) -> list:
    """The ranks' rows, a row that an earlier rank also trains on counted once."""
    together = []
    for rank in sorted(rows):
        earlier = list(together)
        together += [row for row in rows[rank]
                     if not any(same_row(row, other) for other in earlier)]
    return together


def same_outputs(run, processes, unrecorded) -> list[tuple[int, int]]:
    """The pairs of ranks (a < b), one of them in `unrecorded` (its rows not recorded), whose
    training passes before the first step gave the same outputs (their sums, recorded
    whatever the budget of rows): DDP starts every replica with rank 0's weights, so equal
    outputs are the same rows. Different outputs say the rows differ, not that none is shared:
    where rows are not known, a partial overlap goes unseen."""
    sums = {r: first_step_output_sums(run, r) for r in range(processes)}
    return [(a, b) for a in range(processes) for b in range(a + 1, processes)
            if (a in unrecorded or b in unrecorded) and sums[a] and len(sums[a]) == len(sums[b])
            and all(close(x, y) for x, y in zip(sums[a], sums[b]))]


def too_many_rows_why(runs, processes, rows) -> str:
    """Why the ranks' rows add up to more than one batch, from what the runs show (a TA's
    audit28: `get_batch(BATCH_SIZE // 2, ...)` hard-coded was told "each rank takes a whole
    batch?" at 3 and 4 processes, where each rank took 32 rows): a whole batch per rank; the
    same rows per rank on every number of processes the grader ran (a fixed share); else the
    rows each rank took."""
    sizes = sorted({len(r) for r in rows.values()})
    if len(sizes) != 1:
        return " (" + ", ".join(f"rank {r} trains on {len(rows[r])} rows"
                                for r in sorted(rows)) + ")"
    size = sizes[0]
    if size >= BATCH:
        return f": each rank takes a whole batch of {size} rows"
    seen = {processes: size}
    for other in SHARED:
        if other != processes:
            batches = set(first_batches(ddp_run(runs, other)).values())
            if len(batches) == 1:
                seen[other] = batches.pop()
    said = f": each rank trains on {size} rows"
    if len(seen) > 1 and set(seen.values()) == {size}:
        counts = sorted(seen)
        return (f"{said} with {', '.join(map(str, counts[:-1]))} and {counts[-1]} processes "
                "alike: the share does not change with the number of processes: divide by "
                "dist.get_world_size(), not a fixed number")
    return f"{said}, not {BATCH} // {processes} = {BATCH // processes}"


# -- gradients: all-reduced by DDP ----------------------------------------------------------------


def per_rank_prints(run, kind):
    prints = run.fingerprints(kind)
    return prints, min((len(v) for v in prints.values()), default=0)


def steps_without_all_reduce(run, ranks=(0, 1)) -> dict[int, list[int]]:
    """{rank: its optimizer steps (from 1) with no DDP gradient all-reduce in a backward pass
    before them}: the handout's Part 4, "during backward pass, gradients are synchronized
    across all GPUs using All-Reduce". Equal gradients and parameters prove nothing without
    it: ranks given the same rows compute them alike with no communication (a TA's s12 earned
    3 points with no DDP at all)."""
    missing = {}
    for rank in ranks:
        joined_synced = False
        for number, events in enumerate(run.by_step(rank), start=1):
            backward = synced = False
            for event in events:
                if event.get("event") == "backward":
                    backward = True
                elif backward and event.get("event") == "collective" \
                        and event.get("source") == "ddp_gradients":
                    synced = True
            if not backward and events[-1].get("joins"):
                # One optimizer per layer: its step joins the one before, after the same
                # backward and its all-reduce (adv53 F2: 9.75 -> 6.75 of 12 had been read).
                synced = joined_synced
            joined_synced = synced
            # An all-reduce of other parameters than those stepped (a dummy DDP beside a model
            # never wrapped: adv52 F2) synchronised nothing of the step.
            if not synced or not synced_step(events[-1]):
                missing.setdefault(rank, []).append(number)
    return missing


def no_all_reduce_said(run, missing: dict[int, list[int]], equal: bool, what: str) -> str:
    rank, numbers = min(missing.items())
    steps = f"any of its {len(numbers)} steps" if len(numbers) == len(run.by_step(rank)) \
        else f"step {numbers[0]}"
    said = (f"no gradient all-reduce was observed in rank {rank}'s backward pass before "
            f"{steps}")
    first = run.by_step(rank)[numbers[0] - 1] if numbers[0] <= len(run.by_step(rank)) else []
    if first and not synced_step(first[-1]):
        said = (f"DDP's all-reduce in rank {rank}'s backward pass before {steps} held "
                f"{first[-1].get('synced_elements', 0):.0%} of the parameters the optimizer "
                "steps: the model's own gradients were never synchronised")
    if equal:
        said = (f"the ranks' {what} are equal, but {said}: equal {what} without DDP's "
                "all-reduce come from the same rows on every rank, not from synchronisation")
    return said + " (is the model wrapped in DDP, and is the wrapper what you call?)"


@pytest.mark.check("practical6.grads_synchronised")
def test_gradients_all_reduced(runs):
    run = ddp_run(runs, 2)
    look = "wrap the model with DDP(model, device_ids=[local_rank]) and call the wrapper"
    expected = ("after backward every rank holds the same (averaged) gradients: DDP all-reduces "
                "them during the backward pass of every step")
    prints, steps = per_rank_prints(run, "grads")
    evidence(run, len(prints) == 2 and steps, expected,
             f"optimizer steps on rank(s) {sorted(prints)} only", look)
    missing = steps_without_all_reduce(run)
    unequal = [k for k in range(steps) if not close(prints[0][k]["sum"], prints[1][k]["sum"])
               or not close(prints[0][k]["sumsq"], prints[1][k]["sumsq"])]
    assert not unequal and not missing, explain(
        expected, "; ".join(
            ([f"the ranks' gradients differ at step {unequal[0] + 1}"] if unequal else [])
            + ([no_all_reduce_said(run, missing, not unequal, "gradients")] if missing else [])),
        look)


@pytest.mark.check("practical6.params_equal_after_step")
def test_parameters_equal_after_step(runs):
    run = ddp_run(runs, 2)
    look = "DDP broadcasts rank 0's weights when wrapping and averages gradients in backward"
    expected = ("the replicas stay identical: the same parameters on every rank after each "
                "step, DDP's gradient all-reduce in every step's backward")
    prints, steps = per_rank_prints(run, "params")
    evidence(run, len(prints) == 2 and steps, expected,
             f"optimizer steps on rank(s) {sorted(prints)} only", look)
    missing = steps_without_all_reduce(run)
    unequal = [k for k in range(steps) if not close(prints[0][k]["sum"], prints[1][k]["sum"])]
    assert not unequal and not missing, explain(
        expected, "; ".join(
            ([f"the ranks' parameters differ after step {unequal[0] + 1}"] if unequal else [])
            + ([no_all_reduce_said(run, missing, not unequal, "parameters")] if missing else [])),
        look + ": wrap the model with DDP(model, device_ids=[local_rank]) and call the wrapper")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical6/answers.yaml is compared with the grader's run of the same script under torchrun
# with 2 processes on 2 GPUs (the handout's --nproc_per_node=2), and with the student's
# Practical 5 DataParallel script on 2 GPUs for the comparison with DataParallel. Times depend
# on the hardware: the timing table is only checked for being complete and consistent.


def gpus_by_rank(run):
    """{rank: sorted devices its model's layers are on}."""
    return {rank: sorted(devices_of_rank(run, rank)) for rank in run.ranks()
            if devices_of_rank(run, rank)}


def own_work_ran(run) -> bool:
    """Whether the student's own work ran: a training step (learning_ranks) with DDP's
    gradient all-reduce or each rank's share of the batch, the template's two TODOs. The
    number of processes and the world size are torchrun's, there before any of it (the
    template's init_process_group runs before its NotImplementedError): the untouched template
    with the reference's sheet had earned 0.42 with them (adv42 F4), and with the raises
    deleted and nothing written 2 points of setup (adv52 F4), as P5's require_data_parallel
    guards its answers about DataParallel. A share without DDP keeps them: a missing wrap
    costs the synchronisation item and the answers about DDP (require_ddp)."""
    return bool(learning_ranks(run)) and (ddp_trained(run) or share_taken(run))


@pytest.mark.check("practical6.world_size_reported")
def test_reported_world_size(runs, answers, agree):
    run = ddp_run(runs, SHEET_PROCESSES)
    sizes = sorted({e.get("world_size") for e in run.of("init_process_group")} - {None})
    truth = (sizes[0] if len(sizes) == 1 else sizes) if sizes and own_work_ran(run) else None
    value, truth = answer_and_truth(answers, "ddp.world_size", truth, run)
    agree("ddp.world_size", value, truth, f"joins a process group of world size "
          f"{', '.join(map(str, sizes))} in each of the {SHEET_PROCESSES} processes "
          f"torchrun --nproc_per_node={SHEET_PROCESSES} starts")


@pytest.mark.check("practical6.rank_gpu_table_reported")
def test_reported_rank_to_gpu(runs, answers, measured, reported_values, flag):
    processes = table_processes(answers.values.get("ddp.rank_to_gpu"))
    run = ddp_run(runs, processes)
    # Where it trained, only with the student's part (own_work_ran: adv52 F4).
    truth = (gpus_by_rank(run) or None) if own_work_ran(run) or not learning_ranks(run) \
        else None
    value, truth = answer_and_truth(answers, "ddp.rank_to_gpu", truth, run)
    rows = rows_by(value, "rank")
    measured["ddp.rank_to_gpu"] = {str(r): d[0] if len(d) == 1 else d for r, d in truth.items()}
    reported_values["ddp.rank_to_gpu"] = {str(r): row.get("gpu") for r, row in rows.items()}
    # Both sides as one line, "rank 0: gpu cuda:0; rank 1: gpu cuda:1", GPUs as PyTorch names
    # them: equal exactly when every rank has its GPU and no other rank is listed.
    code = per_rank_line({r: d[0] if len(d) == 1 else d for r, d in truth.items()}, "gpu")
    sheet = per_rank_line({r: device_name(row.get("gpu")) or row.get("gpu")
                           for r, row in rows.items()}, "gpu")
    must_agree(answers, "ddp.rank_to_gpu", sheet or "no rank", code,
               f"{code} (gpu: 0 or cuda:0)", "puts " + "; ".join(
                   f"rank {r}'s model on {', '.join(d)}" for r, d in truth.items())
               + f" with {processes} processes", flag)


def table_processes(rows) -> int:
    """How many processes a rank -> GPU table was read from: the handout's Part 1 says to
    replace torchrun's 2 "with number of GPUs available" and the sheet's question does not
    pin 2 there, so a table of ranks 0..n-1 (n one of the grader's own runs) is checked
    against the run of n processes (adv33 F3: a 4-GPU table was marked wrong against the
    2-process run); any other table against the sheet's 2."""
    ranks = set(rows_by(rows, "rank"))
    count = len(ranks)
    return count if count in PROCESSES and ranks == set(range(count)) else SHEET_PROCESSES


@pytest.mark.check("practical6.split_automatically_reported")
def test_reported_split_automatically(runs, answers, agree):
    run = ddp_run(runs, SHEET_PROCESSES)
    require_ddp(answers, "data.split_automatically", run)
    # Automatic: something split a batch the script handed over whole (DataParallel's
    # scatter). DDP splits nothing: each rank loads its own share.
    truth = bool(run.of("dp_scatter")) if first_batches(run) else None
    value, truth = answer_and_truth(answers, "data.split_automatically", truth, run)
    agree("data.split_automatically", value, truth,
          "lets DataParallel scatter the batch" if truth else
          f"gives each rank its own share of the batch ({first_batches(run)} rows by rank), "
          "loaded by the script itself; nothing splits it automatically",
          expected={True: "yes", False: "no"}[truth])


@pytest.mark.check("practical6.per_rank_batch_reported")
def test_reported_per_rank_batch(runs, answers, agree):
    run = ddp_run(runs, SHEET_PROCESSES)
    seen = sorted(set(first_batches(run).values()))
    truth = (seen[0] if len(seen) == 1 else seen) if seen and own_work_ran(run) else None
    value, truth = answer_and_truth(answers, "ddp.per_rank_batch", truth, run)
    agree("ddp.per_rank_batch", value, truth,
          f"trains each rank on {', '.join(map(str, seen))} rows per optimizer step with "
          f"BATCH_SIZE={BATCH} and {SHEET_PROCESSES} processes")


def memory_truth(runs, answers, qid, fact, *, dp_needed):
    ddp = ddp_run(runs, SHEET_PROCESSES)
    require_ddp(answers, qid, ddp)
    ddp_peaks = training_peak_memory(ddp)
    dp = DataParallelSide(runs) if dp_needed else None
    truth = fact(ddp_peaks, dp)
    involved = (ddp, *dp.runs_compared) if dp_needed else (ddp,)
    value, truth = answer_and_truth(answers, qid, truth, *involved)
    shown = f"DDP with {SHEET_PROCESSES} processes: {describe_memory(ddp_peaks)}"
    if dp_needed:
        shown += f"; {dp.described()}"
    return value, truth, shown


def more_balanced(ddp_peaks, dp):
    ddp_even, dp_even = balanced(ddp_peaks), dp.even()
    if ddp_even is None or dp_even is None:
        return None
    return ddp_even and not dp_even


@pytest.mark.check("practical6.usage_table_reported")
def test_reported_usage_table(runs, answers, reported_values, flag):
    require_ddp(answers, "usage.table", ddp_run(runs, SHEET_PROCESSES))
    rows = checked_usage_table(answers, reported_values, "usage.table", "DDP",
                               ddp_run(runs, SHEET_PROCESSES), flag=flag)
    memory = [row["memory_mib"] for k, row in rows.items() if isinstance(k, int)]
    if memory and max(memory) > 1.5 * min(memory):
        flag("usage.table: the reported nvidia-smi memory differs by more than 1.5x between "
             "GPUs, although every DDP rank holds the same replica")


@pytest.mark.check("practical6.more_balanced_reported")
def test_reported_more_balanced(runs, answers, agree):
    value, truth, shown = memory_truth(runs, answers, "usage.more_balanced", more_balanced,
                                       dp_needed=True)
    agree("usage.more_balanced", value, truth,
          f"{'balances' if truth else 'does not balance'} the GPUs better than DataParallel "
          f"(peak memory per GPU, more than {BALANCED - 1:.0%} apart counts as unbalanced: "
          f"{shown})", expected={True: "yes", False: "no"}[truth])


@pytest.mark.check("practical6.gpu0_bottleneck_reported")
def test_reported_gpu0_bottleneck(runs, answers, agree):
    value, truth, shown = memory_truth(runs, answers, "usage.gpu0_bottleneck",
                                       lambda ddp, _: gpu0_more_loaded(ddp), dp_needed=False)
    agree("usage.gpu0_bottleneck", value, truth,
          f"{'loads' if truth else 'does not load'} GPU 0 more than the others (peak memory "
          f"per GPU, more than {BALANCED - 1:.0%} apart: {shown})",
          expected={True: "yes", False: "no"}[truth])


# The comparison's aspects and the row names each is read under (practical_answers).
ASPECTS = COMPARISON_ASPECTS


def said_as(aspect: str, cell, word: str | None) -> str:
    """A cell as the comparison read it, or as written where it read none of its words."""
    if word is not None:
        return word
    return f"{cell!r} (not read as {CHOICES[aspect]})" if cell not in (None, "") else "nothing"


def run_aspects(run, trained: bool = True) -> dict:
    """What a run shows for each aspect (None where it did not get that far; its processes
    only where it `trained` as the practical asks: own_work_ran for DDP's run)."""
    split = None if not forward_passes(run) else "automatic" if run.of("dp_scatter") else "manual"
    even = balanced(training_peak_memory(run))
    return {"processes": None if not run.ranks() or not trained else
            "1" if len(run.ranks()) == 1 else "multiple",
            "data split": split,
            "gpu usage": None if even is None else "balanced" if even else "imbalanced"}


def observed_aspects(dp, ddp):
    """Each aspect as (DataParallel's, DDP's): a DataParallelSide and the DDP run."""
    theirs, ours = dp.aspects(), run_aspects(ddp, own_work_ran(ddp))
    return {aspect: (theirs[aspect], ours[aspect]) for aspect in ours}


@pytest.mark.check("practical6.compare_table_reported")
@pytest.mark.parametrize("aspect", list(ASPECTS))
def test_reported_comparison_table(runs, answers, measured, reported_values, flag, aspect):
    dp, ddp = DataParallelSide(runs), ddp_run(runs, SHEET_PROCESSES)
    require_ddp(answers, "compare.table", ddp)
    observed = observed_aspects(dp, ddp)[aspect]
    truth = observed if None not in observed else None
    value, truth = answer_and_truth(answers, "compare.table", truth, *dp.runs_compared, ddp)
    row = comparison_rows(value).get(aspect)
    # DataParallel's side as what it does, not as a measurement, where nothing measured it.
    measured[f"compare.table.{aspect}"] = {"dp": truth[0] if dp.measured else
                                           f"{truth[0]} ({dp.unmeasured_cell()})",
                                           "ddp": truth[1]}
    where = answers.where_to_answer("compare.table")
    assert row is not None, explain(
        f"a row - {{aspect: {aspect}, dp: ..., ddp: ...}} in the comparison table",
        # The aspects as the student wrote them, not rows_by's aliases ("data" for "data split"),
        # and which row is missing and the names it is read under.
        f"no row for {aspect} among your rows for "
        f"{[r.get('aspect') for r in value if isinstance(r, dict)] if isinstance(value, list) else []}",
        f"{where}: name the {aspect} row {comparison_names(aspect)}")
    reported_values[f"compare.table.{aspect}"] = {"dp": row.get("dp"), "ddp": row.get("ddp")}
    # A cell not read is said as written, never as Python's None. Each cell is read for its
    # column's method: "automatic for DP, manual for DDP" in the ddp column says manual.
    cells = tuple(row.get(m) for m in ("dp", "ddp"))
    words = tuple(words_for(aspect, cell, method) for method, cell in zip(("dp", "ddp"), cells))
    said = tuple(said_as(aspect, cell, word) for cell, word in zip(cells, words))
    _unread_cells_wait(aspect, cells, words, truth, said, where)
    must_agree(answers, "compare.table", f"{aspect}: dp {said[0]}, ddp {said[1]}",
               f"{aspect}: dp {truth[0]}, ddp {truth[1]}",
               f"{aspect}: dp {truth[0]}, ddp {truth[1]}",
               # DDP's side first: where Practical 5 was not measured, DataParallel's side is
               # what it does, said short (a TA's audit: a wrong DDP cell's feedback had been
               # mostly about an unfinished Practical 5, which Practical 6 never asks for).
               f"shows {aspect} {truth[1]} with DDP (torchrun --nproc_per_node="
               f"{SHEET_PROCESSES}) and {truth[0]} with DataParallel ("
               + (dp.source() if dp.measured else dp.unmeasured_cell()) + ")", flag)


def _unread_cells_wait(aspect, cells, words, truth, said, where) -> None:
    """A cell written but read as none of the aspect's words ("GPU 0 first, then the others")
    waits for a person, as an unreadable yes/no does, unless the other cell says the wrong word
    (then the row is wrong whatever the unread cell means) or is empty."""
    unread = [side for side, cell, word in zip(("dp", "ddp"), cells, words)
              if word is None and cell not in (None, "")]
    wrong = any(word is not None and word != expected for word, expected in zip(words, truth))
    if not unread or wrong or any(cell in (None, "") for cell in cells):
        return
    raise AnswerNotRead(explain(
        f"{aspect}: dp {truth[0]}, ddp {truth[1]}",
        f"you reported {aspect}: dp {said[0]}, ddp {said[1]}: a person reads the "
        f"{' and '.join(unread)} cell",
        f"{where}: write {CHOICES[aspect]} first, then your remark, e.g. '{truth[1].capitalize()} "
        f"(...)'"), "compare.table")


_DDP, _DP = METHOD_NAMES["ddp"], METHOD_NAMES["dp"]
_METHOD = rf"(?:{_DDP}|{_DP})"
_HEDGE = re.compile(r"\b(?:it\s+depends|depends\s+on\s+the|either\s+(?:one|way|is|could|can)|both\s+(?:are|equally|the\s+same)|"
                    r"not\s+sure|maybe|perhaps|probably|likely|about\s+the\s+same|roughly\s+(?:the\s+)?same|equally\s+fast|"
                    r"no\s+(?:real\s+)?difference|equal|should|expected|in\s+theory)\b|\?|≈|~=|"
                    r"\bor\b\s*(?=(?:nn\.)?(?:ddp|dp|data\s*parallel|distributed)\b)|"
                    r"^\W*(?:ddp|dp)\s*/\s*(?:ddp|dp)\W*$", re.I)
# A clause's word for "this one is faster" (+) or "slower" (-); a "not" before it turns it.
_QUICK = (r"faster|quicker|shorter|less\s+time|lower\s+(?:step\s+)?time|outperforms|wins")
_SLOW = (r"slower|longer|more\s+time|higher\s+(?:step\s+)?time|outperformed\s+by|half\s+as\s+fast|"
         r"twice\s+as\s+slow|aeglasem")
_COMPARED = re.compile(rf"(?P<not>\b(?:not|never)\s+(?:\w+\s+)?|n't\s+(?:\w+\s+)?)?(?P<how>{_QUICK}|{_SLOW})\b")


def _method(text: str) -> str:
    return "dp" if re.fullmatch(_DP, text) else "ddp"


def _other(method: str) -> str:
    return "dp" if method == "ddp" else "ddp"


def _timed(text: str) -> str | None:
    """ "DP: 1.2 s, DDP: 0.8 s": the method with the shorter time."""
    times = {}
    for found in re.finditer(rf"(?P<m>{_METHOD})\s*[:=]?\s*(?P<t>\d+(?:\.\d+)?)", text):
        times.setdefault(_method(found.group("m")), float(found.group("t")))
    if len(times) == 2 and times["dp"] != times["ddp"]:
        return min(times, key=times.get)
    return None


def method_said_faster(value) -> str | None:
    """"dp" or "ddp", as the answer to "which is faster?" names it: alone ("DDP",
    "nn.DataParallel", "DistributedDataParallel, because ..."), said faster or slower in a
    clause of its own ("DataParallel is about 40% slower", "DP took longer than DDP", "the
    faster one is DDP", "Slower: DP", "DDP is not faster"), or with both times ("DP: 1.2 s,
    DDP: 0.8 s"); first with the reason after it naming the other. None for an answer that
    names neither, offers both ("dp or ddp, it depends"), hedges ("Probably DDP", "DDP?") or
    says opposite things (a TA's, a student's and a probe's audits found each read as the
    first method named)."""
    text = str(value or "").strip().lower()
    mentions = [(m.start(), _method(m.group(0))) for m in re.finditer(_METHOD, text)]
    if not mentions or _HEDGE.search(text):
        return None
    timed = _timed(text)
    if timed:
        return timed
    winners = set()
    for clause in re.split(r"\s*(?:[,;.]|\bbut\b|\bwhile\b|\bwhereas\b)\s*", text):
        named = [_method(m.group(0)) for m in re.finditer(_METHOD, clause)]
        compared = _COMPARED.search(clause)
        if not named or compared is None:
            continue
        quick = re.fullmatch(_QUICK, compared.group("how")) is not None
        if compared.group("not"):
            quick = not quick
        # The subject: the method named first, or the one after "the faster (one) is".
        subject = named[0]
        winners.add(subject if quick else _other(subject))
    if winners:
        return winners.pop() if len(winners) == 1 else None
    if len({method for _, method in mentions}) == 1:
        return mentions[0][1]
    opens_with = mentions[0][0] <= len(text) - len(text.lstrip(" *_`\"'(-:"))
    return mentions[0][1] if opens_with else None


@pytest.mark.check("practical6.faster_reported")
def test_reported_faster(runs, answers, measured, reported_values, flag):
    side, ddp = DataParallelSide(runs), ddp_run(runs, SHEET_PROCESSES)
    require_ddp(answers, "compare.faster", ddp)
    dp = side.run
    value, _ = answer_and_truth(answers, "compare.faster", bool(ddp.of("step")) or None,
                                *side.runs_compared, ddp)
    t_dp, t_ddp = compared_step_seconds(dp, ddp)
    if not side.measured:
        t_dp = None   # a Practical 5 that trained without DataParallel timed no DataParallel
    clock = shared_clock(dp, ddp)
    verdict = faster(t_dp, t_ddp, clock)
    truth = None if verdict is None else "ddp" if verdict else "dp"
    # Where the DataParallel script did not train through DataParallel, that is why nothing
    # decides, not the clock.
    decided_by = clock_words(clock) if side.measured else (
        f"no DataParallel time to compare with ({side.unmeasured_short()}): either answer is "
        "accepted")
    measured["compare.faster"] = {"dp_step_s": t_dp, "ddp_step_s": t_ddp,
                                  "clock": decided_by, "answer": truth or "either"}
    reported_values["compare.faster"] = value
    said = method_said_faster(value)
    assert said is not None, explain(
        "one method named as the faster: dp or ddp", f"{value!r} (not one method: a person "
        "reads it; name the faster one first, the reason after it)",
        answers.where_to_answer("compare.faster"))
    if truth is None:
        return   # too close to call, or no clock: either answer is right
    must_agree(answers, "compare.faster", said, truth, truth,
               f"trains {t_dp:.4g} s per step with DataParallel on 2 GPUs and {t_ddp:.4g} s with "
               f"DDP on {SHEET_PROCESSES}, from the forward pass to the optimizer step "
               f"({clock_words(clock)})", flag)


TIMING_METHODS = ["dp", "ddp"]
# Shown in the reports beside the values (grader/pytest_plugin.py).
MEASURED_UNDER = {"timing": f"your script as handed in (its own DIM; STEPS at most the "
                            f"template's {TEMPLATE_STEPS[SCRIPT]}, or as many past a warm-up it "
                            "does not time; BATCH_SIZE the handout's 64), "
                            f"{SHEET_PROCESSES} processes on {SHEET_PROCESSES} GPUs"}
TIMING_COLUMNS = ["step_time_s", "total_time_s"]


@pytest.mark.check("practical6.timing_table_reported")
@pytest.mark.parametrize("aspect", ["complete", "consistent"])
def test_reported_timing_table(runs, submission, answers, measured, reported_values, flag,
                               aspect):
    run = ddp_run(runs, SHEET_PROCESSES)
    require_ddp(answers, "timing.table", run)
    rows = method_rows(answer_against(answers, "timing.table", run))
    times, total = step_times(run)
    measured["timing.table"] = {"ddp": {"step_time_s": round(median_or_none(times), 6)
                                        if times else None, "total_time_s": total}}
    reported_values["timing.table"] = {m: {c: rows[m].get(c) for c in TIMING_COLUMNS}
                                       for m in TIMING_METHODS if m in rows}
    where = answers.where_to_answer("timing.table")
    expected = ("a row per method (dp: Practical 5's DataParallel, ddp: this script), each with the "
                "step time and the total time in seconds, as positive numbers")
    held = []
    problems = incomplete_rows(rows, TIMING_METHODS, TIMING_COLUMNS, held=held)
    if aspect == "complete":
        assert not problems, explain(expected, "; ".join(problems), where)
        unread_cells_wait(problems, held, "timing.table", expected, where)
        return
    checkable = [m for m in TIMING_METHODS if not incomplete_rows(rows, [m], TIMING_COLUMNS)]
    if not checkable:   # a cell with a number not read: compared by the person who reads it
        unread_cells_wait(problems, held, "timing.table", "step and total times to compare", where)
    assert checkable, explain("step and total times to compare", "no complete row", where)
    # The steps each script takes as the student runs it: the file's STEPS where the grader's
    # run took fewer (steps_as_written); Practical 5's from its STEPS (not run here).
    steps = {"ddp": steps_as_written(run, submission, SCRIPT),
             "dp": constant_in_source(submission / DP_SCRIPT, "STEPS")}
    problems, flags = total_disagreements({m: rows[m] for m in checkable},
                                          {m: steps[m] for m in checkable})
    for text in flags:
        flag(f"timing.table {text}")
    counted = ", ".join(f"{steps[m]} steps for {m}" for m in checkable if steps[m])
    assert not problems, explain(
        f"a total covers every step ({counted or 'steps unknown'}), so it is at least "
        f"{TOTAL_LOWER:g} x steps x step time", "; ".join(problems),
        where + ": step and total times in seconds")
