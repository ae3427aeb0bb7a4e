"""Practical 5: nn.DataParallel (practical5/practical5_dp.py against practical5_single.py).

Both scripts run as the handout runs them (`python SCRIPT`): the single-GPU one on 1 GPU, the
DataParallel one on 2, 3 and 5 GPUs (64 rows over 3 and 5 GPUs do not divide evenly: torch.chunk's
rule, 22 + 22 + 20 and 13 x 4 + 12). No point asks for a speed-up: the course says this small
model need not get faster; the student's "did it get faster?" is compared with their own run.

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import pytest

from grader.checks.practical_answers import (TOTAL_LOWER, answer_against, answer_and_truth,
                                             checked_usage_table, constant_in_source, gpu_index,
                                             incomplete_rows, median_or_none, method_rows,
                                             printed_numbers, rows_by, step_times,
                                             total_disagreements, unread_cells_wait, whole_numbers)
from grader.checks.practical_measures import (BALANCED, balanced, clock_words,
                                              compared_step_seconds, describe_memory, evidence,
                                              faster, forward_passes, gpu0_more_loaded,
                                              handout_sets, loop_steps_run, peak_memory,
                                              rows_of, same_row, shared_clock, step_ends,
                                              step_prints, steps_as_written, steps_edits,
                                              TEMPLATE_STEPS,
                                              replicas_untrained, training_peak_memory,
                                              unscattered_training)
from grader.checks.random_draws import CPU, GPU, generators
from grader.checks.split_print_site import split_print_site
from grader.checks.support import (AnswerNotRead, chunk_sizes, close, explain, must_agree,
                                   require_run)
from grader.common.text import answer_shown

DP = "practical5/practical5_dp.py"
SINGLE = "practical5/practical5_single.py"
BATCH = 64


class HandoutRuns:
    """The runs the handout makes of the two scripts: with its BATCH_SIZE = 64 (its table's
    splits), set back for the run where a student left another value from trying when the
    split is equal (the file itself is never changed; P10's runs do the same), and STEPS at
    most the template's 10 (steps_limit, or the default of the argument bounding its loop:
    steps_edits; bounded run time)."""

    def __init__(self, runs, submission):
        self.runs = runs
        self.sets = {script: handout_sets(submission, script) for script in (DP, SINGLE)}
        self.edits = {script: steps_edits(submission, script) for script in (DP, SINGLE)}
        # Where the DP script prints each replica's batch (Part 4), for the split's feedback.
        self.split_printed = split_print_site(submission / DP)

    def spec(self, script, gpus):
        return dict(script=script, gpus=gpus, sets=self.sets[script], edits=self.edits[script])

    def dp(self, gpus):
        return self.runs.script(**self.spec(DP, gpus))

    def single(self):
        """On one GPU, on the same kind of GPUs as the DP run on 2 it is compared with."""
        return self.runs.script(**self.spec(SINGLE, 1), like_gpus=2)


@pytest.fixture(scope="module")
def handout(runs, submission):
    return HandoutRuns(runs, submission)


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs, handout):
    runs.prefetch(handout.spec(DP, 3), handout.spec(DP, 2), handout.spec(SINGLE, 1),
                  handout.spec(DP, 5))


def trained_to_the_end(run, submission, script) -> bool:
    """The run took every optimizer step its script asks for (STEPS): a crash after that (a
    last print, a cleanup) leaves the training and what it showed intact, as a part that ran
    keeps its points when a later part crashes (rubrics/README.md). The steps asked for are
    the run's: the template's where the grader lowered STEPS for it (steps_limit) or the
    default bounding its loop (steps_edits)."""
    if run.ok:
        return True
    steps = (run.sets or {}).get("STEPS") or loop_steps_run(run, submission, script) \
        or constant_in_source(submission / script, "STEPS")
    return bool(steps) and len(step_ends(run)) >= steps


def not_trained(submission, *pairs):
    """The runs of (run, script) pairs that did not train to the end: what an answer about
    training cannot be compared with."""
    return [run for run, script in pairs if not trained_to_the_end(run, submission, script)]


def forward_scatters(observation):
    """DataParallel's scatters of a forward pass's input (backward scatters gradients too)."""
    return [e for e in observation.of("dp_scatter") if e.get("batch") == BATCH]


def replica_rows_by_call(run, step: int) -> list[list[int]]:
    """The rows of the replicas' forward passes in each call of a DataParallel wrapper in the
    step, call by call, most first: a call's scatter of the batch begins them (a backward's
    scatter of gradients runs no replica). Gradient accumulation over two whole batches
    (zero_grad, two calls of the wrapper on the batch, one step) splits each as the rule says
    (adv53 F5: its [32, 32, 32, 32] read against one call's [32, 32] had lost 2 of 12)."""
    calls, current = [], None
    for event in run.events:
        if event.get("rank", 0) != 0:
            continue
        if event.get("event") == "dp_scatter":
            current = None
        elif event.get("event") == "forward" and event.get("nested") and event.get("batch") \
                and event.get("step") == step:
            if current is None:
                current = []
                calls.append(current)
            current.append(event["batch"][0])
    return [sorted(rows, reverse=True) for rows in calls]


def used_data_parallel(run) -> None:
    """One failure, one message: a DP script whose model ran but never through DataParallel
    (`nn.DataParallel(model)` without `model =`, the inner model called) fails every
    DataParallel check for that one reason, and each says it alike (one cause in the student's
    list, not six with hints about things already done)."""
    if run.ok and run.of("forward") and not run.of("dp_scatter") and not any(
            e.get("module") == "DataParallel" for e in run.of("forward")):
        raise AssertionError(explain(
            "practical5_dp.py runs its model through nn.DataParallel",
            "the model ran, but never through a DataParallel wrapper: no batch was split and no "
            "replica ran (all on one GPU)",
            "keep the wrapper and call it: model = nn.DataParallel(model), then model(x) "
            "(nn.DataParallel(model) alone makes a wrapper nobody calls)"))
    beside = replicas_untrained(run)
    if beside:
        # A wrapper around a module that returns its input, the model run after it (adv52 F1):
        # its scatter, replicas and gather are no data parallelism of the model.
        raise AssertionError(explain(
            "practical5_dp.py trains its model through nn.DataParallel: the replicas' gradients "
            "are what the optimizer steps", beside,
            "wrap the model itself and call the wrapper on the batch: model = "
            "nn.DataParallel(model), then loss_fn(model(x), y)"))


def require_data_parallel(answers, qid: str, *runs, flag=None) -> None:
    """An answer about what DataParallel does counts only where the code had DataParallel
    scatter a batch, the guard of split_table_reported: the single-GPU training of a script
    whose wrapper is never called makes "GPU 0 holds the most", "not equally utilized" and
    "the same final loss" true of code without DataParallel (a TA's s14 earned 2 points with
    it). Said only where the answer is there and a run trained: a missing answer and code that
    never trained are said by the check itself. `flag` tells the instructor, whose view shows
    the written answers about DataParallel beside it."""
    never = [(run, how, "never had DataParallel scatter a batch") for run in runs
             if (how := unscattered_training(run))]
    never += [(run, how, "never trained its model through DataParallel") for run in runs
              if (how := replicas_untrained(run))]
    if qid not in answers.values or not never:
        return
    run, how, said = never[0]
    if flag is not None:
        flag(f"{qid}: answered {answer_shown(answers.values[qid])} about DataParallel, but "
             f"{DP} {said} ({how})")
    # One wording for every answer it costs (no answer id): one cause for the student.
    raise AssertionError(explain(
        "your answers about DataParallel can be compared with what DataParallel does in your "
        "practical5_dp.py",
        f"{DP} {said} in the run on {run.gpus} GPUs ({how}), "
        "so no answer about how DataParallel trains can be checked against it, and none earns "
        "a point", "keep the wrapper and call it: model = nn.DataParallel(model), then "
        "model(x); the answers are then checked against what it does"))


@pytest.mark.check("practical5.split_sizes")
@pytest.mark.parametrize("gpus", [2, 3, 5])
def test_batch_split_follows_chunk_rule(handout, gpus):
    run = handout.dp(gpus)
    expected = chunk_sizes(BATCH, gpus)
    used_data_parallel(run)
    scatters = evidence(
        run, forward_scatters(run), f"DataParallel scatters each batch of {BATCH} over the "
        f"{gpus} GPUs", "no scatter of a batch of 64 was observed", "wrap the model in "
        "nn.DataParallel and call the wrapper (not the inner model) on a batch on cuda:0")
    wrong = [s["sizes"] for s in scatters if s["sizes"] != expected]
    assert not wrong, explain(
        f"a batch of {BATCH} on {gpus} GPUs splits as {expected} (torch.chunk: ceil(64/{gpus}) "
        "rows per GPU, the last one smaller)", f"splits {wrong[0]}",
        "keep BATCH_SIZE = 64 and let nn.DataParallel split the batch itself")
    calls = replica_rows_by_call(run, step=0)
    wrong = [rows for rows in calls if rows != sorted(expected, reverse=True)]
    assert calls and not wrong, explain(
        f"{len(expected)} replicas, one per GPU, running chunks of {expected} rows in each "
        "call of the wrapper", f"replica forward passes on {(wrong or calls or ['no'])[0]} rows "
        "in a call of the wrapper in the first step",
        "call the DataParallel wrapper on the whole batch")


@pytest.fixture(scope="module")
def three_gpus(handout):
    return handout.dp(3)


@pytest.mark.check("practical5.replicated")
@pytest.mark.parametrize("gpus", [2, 3, 5])
def test_model_replicated_to_every_gpu(handout, gpus):
    # On the GPUs the handout runs it with, as the split is checked: device_ids=[0, 1] written
    # in loses the 3- and 5-GPU cases of both, not all of this item for one bug (a TA's audit).
    run = handout.dp(gpus)
    used_data_parallel(run)
    evidence(run, run.of("forward"), "DataParallel runs one replica per GPU",
             "no forward pass of the model")
    others = [f"cuda:{i}" for i in range(1, gpus)]
    targets = {e["dst"] for e in run.of("transfer") if e.get("kind") == "broadcast"}
    replicas = {e.get("input_device") for e in run.of("forward")
                if e.get("nested")}
    assert set(others) <= targets and {"cuda:0", *others} <= replicas, explain(
        f"DataParallel copies the model from cuda:0 to {', '.join(others)} and runs one replica "
        f"per GPU ({gpus} GPUs)", f"parameters broadcast to {sorted(targets) or 'no GPU'}; "
        f"replicas ran on {sorted(d for d in replicas if d) or 'no GPU'}",
        "move the model to cuda:0 before wrapping it in nn.DataParallel, and use all GPUs "
        "(device_ids left out)")


@pytest.mark.check("practical5.gathered_on_gpu0")
def test_outputs_gathered_on_gpu0(three_gpus):
    used_data_parallel(three_gpus)
    evidence(three_gpus, three_gpus.of("forward_out"), "the replicas' outputs are gathered on "
             "cuda:0", "no forward pass of the model returned")
    gathers = [e for e in three_gpus.of("transfer") if e.get("kind") == "gather"]
    wrapped = [e for e in three_gpus.of("forward_out") if e.get("module") == "DataParallel"]
    # The handout asks for no output device: DataParallel's default, cuda:0, or the GPU the
    # script names as output_device (adv51 F3: output_device=2 relieves GPU 0, and had lost
    # 0.75). A default moved off cuda:0 by device_ids ([1, 2]) is a GPU nobody asked for.
    asked = {"cuda:0"} | {e["output_device"] for e in wrapped if e.get("output_device")
                          and e["output_device"] != (e.get("device_ids") or [None])[0]}
    target = "cuda:0" if asked == {"cuda:0"} else " or ".join(sorted(asked))
    wrong = sorted({e["dst"] for e in gathers if e["dst"] not in asked})
    outs = {e.get("device") for e in wrapped}
    assert gathers and not wrong and len(outs) == 1 and outs <= asked, explain(
        f"the replicas' outputs are gathered on {target} (DataParallel's output_device)",
        f"gathers into {wrong or sorted({e['dst'] for e in gathers}) or 'nowhere'}, "
        f"DataParallel outputs on {sorted(d for d in outs if d) or 'no device'}",
        "leave output_device at its default (cuda:0), or name the GPU as output_device")


@pytest.mark.check("practical5.gpu0_most_memory")
def test_gpu0_holds_most_memory(three_gpus):
    expected = ("the replicas use every GPU, and cuda:0 holds the most memory: the master copy of "
                "the model, the optimizer state, the whole batch and the gathered outputs live "
                "there")
    look = "keep the model, optimizer and data on cuda:0 (DataParallel's source device)"
    used_data_parallel(three_gpus)
    evidence(three_gpus, three_gpus.of("step"), expected, "no optimizer step", look)
    peaks = peak_memory(three_gpus)
    used = sorted(d for d, v in peaks.items() if v > 0)
    assert len(used) > 1 and peaks.get("cuda:0", 0) >= max(peaks.values()), explain(
        expected, describe_memory(peaks)
        + ("" if len(used) > 1 else " (only one GPU held anything: no replicas ran)"), look)


@pytest.mark.check("practical5.dp_loss_equals_single")
def test_data_parallel_matches_single_gpu(handout, submission):
    single = handout.single()
    parallel = handout.dp(2)
    for run in not_trained(submission, (single, SINGLE), (parallel, DP)):
        require_run(run)
    used_data_parallel(parallel)
    assert forward_scatters(parallel), explain(
        "practical5_dp.py trains with DataParallel over the 2 GPUs, and reaches the weights of "
        "the single-GPU training", "no batch was scattered over the GPUs: the DP script trains "
        "on one GPU, so there is no DataParallel training to compare",
        "wrap the model in nn.DataParallel and call the wrapper")
    one = step_prints(single, "params")
    two = step_prints(parallel, "params")
    steps = min(len(one), len(two))
    assert steps, explain("both scripts take optimizer steps", f"{len(one)} and {len(two)} steps")
    diverged = [k for k in range(steps) if not close(one[k].get("sum", 0.0), two[k].get("sum", 1.0),
                                                    rel=1e-3, abs_=1e-4)]
    if not diverged:
        return
    expected = ("the same seed and data give the same weights after every step with and without "
                "DataParallel (it only splits the work)")
    # What differs, said as it is (a TA's audit 30: "from step 3 on ... use the same SEED" to a
    # student whose scripts drew other data from the first step, with the same SEED).
    batch = first_batch(parallel)
    other = rows_not_in(batch, first_batch(single))
    if other:
        raise AssertionError(explain(
            expected, "the two scripts train on different data from the first step: the first "
            f"batch's inputs differ ({other} of its {len(batch)} rows are not in "
            "practical5_single.py's first batch), so the weights differ from step 1 on",
            "draw x and y in practical5_dp.py as practical5_single.py does: "
            "torch.randn(...).cuda() draws from the CPU's random generator, torch.randn(..., "
            "device=...) from the GPU's: the same SEED gives other numbers"
            + generators_said(submission)))
    # The first step past float rounding: the 0.1% the verdict allows lags behind it.
    parted = next(k for k in range(diverged[0] + 1)
                  if not close(one[k].get("sum", 0.0), two[k].get("sum", 1.0), rel=1e-5,
                               abs_=1e-6))
    notes = (["the first batch is the same in both scripts"] if other == 0 else []) + (
        [f"they are more than 0.1% apart from step {diverged[0] + 1}"]
        if parted != diverged[0] else [])
    raise AssertionError(explain(
        expected, f"the weights differ from step {parted + 1} on"
        + (f" ({'; '.join(notes)})" if notes else ""), "use the same SEED, model, data, loss "
        "and optimizer in practical5_single.py and practical5_dp.py"))


def first_batch(run) -> list | None:
    """The rows of the run's first training forward pass (DataParallel's whole batch, not a
    replica's share); None where they were not recorded."""
    passes = [p for p in forward_passes(run) if p["trains"]]
    return passes[0]["rows_in"] if passes and passes[0]["rows_in"] else None


def rows_not_in(rows, reference) -> int | None:
    """How many of `rows` are not among `reference`'s rows (0: the same data); None where
    either batch is unknown."""
    if rows is None or reference is None:
        return None
    return sum(1 for row in rows if not any(same_row(row, other) for other in reference))


def generators_said(submission) -> str:
    """"; practical5_dp.py draws with .cuda() / .to() after torch.randn, practical5_single.py
    with device=", where the two scripts' sources draw their tensors from the two generators."""
    dp, single = (generators(submission / script) for script in (DP, SINGLE))
    if dp == {CPU} and single == {GPU}:
        return ("; practical5_dp.py draws with .cuda() / .to() after torch.randn, "
                "practical5_single.py with device=")
    if dp == {GPU} and single == {CPU}:
        return ("; practical5_dp.py draws with device=, practical5_single.py with .cuda() / "
                ".to() after torch.randn")
    return ""


# -- What the answer sheet says, against what the code does -----------------------------------
# practical5/answers.yaml is compared with the grader's runs of the same scripts: the splits
# DataParallel made on 2, 3 and 5 GPUs, the GPU left holding the most memory, the final losses.
# Times depend on the hardware: the timing table is only checked for being complete and
# consistent (a total covers every step); implausible numbers are flagged, never scored.
SPLIT_GPUS = [2, 3, 5]
# The rows of the split table the handout asks for: it fills in the 2-GPU row itself (64,
# 32/32) and leaves 3 and 5 as "?": copying its row earns nothing (a TA's audit).
TABLE_GPUS = [3, 5]


def observed_split(run):
    """How the run split a batch over the GPUs, cuda:0 first: DataParallel's scatter of the
    forward input (the most common one), else the first step's forward passes by device (a
    model that is not DataParallel runs the whole batch on one GPU); None if nothing ran."""
    sizes = [tuple(s["sizes"]) for s in forward_scatters(run) if s.get("sizes")]
    # A batch of another size (64 x the GPUs, say): its scatter, never the wrapper's own
    # forward of the whole batch on cuda:0 (a TA's P5 was told "[128, 64]" for [64, 64]).
    sizes = sizes or [tuple(s["sizes"]) for s in run.of("dp_scatter") if s.get("sizes")]
    if sizes:
        return list(max(set(sizes), key=sizes.count))
    by_device = {}
    for event in run.of("forward"):
        if event.get("step") == 0 and event.get("batch") and event.get("input_device"):
            by_device.setdefault(event["input_device"], event["batch"][0])
    order = sorted(by_device, key=lambda d: (gpu_index(d) is None, gpu_index(d) or 0))
    return [by_device[d] for d in order] or None


@pytest.mark.check("practical5.split_table_reported")
@pytest.mark.parametrize("gpus", TABLE_GPUS)
def test_reported_split_per_gpu(handout, answers, measured, reported_values, flag, gpus):
    run = handout.dp(gpus)
    # The question is how DataParallel divides the batch: its chunk rule, as a TA reads it
    # with the handout open, once the code has DataParallel scatter a batch at all (a script
    # without it cannot have shown the split; one with device_ids hard-coded shows another,
    # which Practical 5's split_sizes check already costs).
    rule = chunk_sizes(BATCH, gpus)
    seen = observed_split(run)
    truth = rule if run.of("dp_scatter") else None
    rows = rows_by(answer_and_truth(answers, "dp.split_per_gpu", truth, run)[0], "gpus")
    measured["dp.split_per_gpu"] = {str(gpus): truth}
    row = rows.get(gpus) or {}
    assert row.get("split") is not None, explain(
        f"a row for {gpus} GPUs in the table dp.split_per_gpu: - {{gpus: {gpus}, split: "
        f"[...]}} with one batch size per GPU, cuda:0 first",
        f"the row for {gpus} GPUs has no split" if gpus in rows else
        f"rows for {sorted(k for k in rows if isinstance(k, int)) or 'no'} GPUs",
        answers.where_to_answer("dp.split_per_gpu"))
    reported_values["dp.split_per_gpu"] = {str(gpus): row["split"]}
    value = whole_numbers(row["split"])
    # Words the sheet could not read as sizes ("4x13 + 12"): for a person, never a wrong answer
    # (adv51 F5: this had been a plain failure, 0 points, whose message said a person reads it).
    if value is None and isinstance(row["split"], str):
        raise AnswerNotRead(explain(
            f"the split for {gpus} GPUs as one batch size per GPU, cuda:0 first, e.g. 22/22/20",
            f"your answer {row['split']!r} for {gpus} GPUs could not be read as one batch size "
            "per GPU (the instructor reads it)", answers.where_to_answer("dp.split_per_gpu")),
            "dp.split_per_gpu")
    differs = "" if seen in (None, rule) else (
        f"; your code splits a batch of {sum(seen)} as {seen}: see Practical 5's split check")
    # Where the code splits otherwise (device_ids hard-coded), the text says both: a TA's
    # student read "your code has DataParallel split ... as [22, 22, 20]" of code that split
    # [32, 32].
    # Where the script prints the split, as it has it (adv41 F6: "printed inside MLP.forward"
    # of a script with no MLP, whose forward pre-hook prints it).
    printed = (f"the 'Inside model on device ...' lines printed {handout.split_printed}"
               if handout.split_printed else
               "the lines where your script prints the per-GPU batch size, inside the model")
    observed = (f"has DataParallel split a batch of {BATCH} over {gpus} GPUs as {truth} (its "
                f"chunk rule; {printed}, once per replica: the same print in the training loop "
                f"shows the whole batch of {BATCH})") if not differs else (
        f"splits a batch of {sum(seen)} as {seen} when {gpus} GPUs are visible, where "
        f"DataParallel over all {gpus} gives {truth} (its chunk rule, which the question "
        "asks for)")
    must_agree(answers, "dp.split_per_gpu", row["split"] if value is None else value, truth,
               f"{gpus} GPUs: {truth} (one batch size per GPU, cuda:0 first){differs}",
               observed, flag, truth_from="how DataParallel divides a batch"
               + (" over all the GPUs, its chunk rule" if differs else ""))


def memory_at_end(run):
    """{device: (allocated, peak)} after the run's last optimizer step (what the script prints
    then), else as the process exited; rank 0."""
    for event in [*run.of("step", 0)[-1:], *run.of("exit", 0)[-1:]]:
        if event.get("memory"):
            return {m["device"]: (int(m.get("allocated", 0)), int(m.get("peak", 0)))
                    for m in event["memory"] if str(m.get("device", "")).startswith("cuda")}
    return {}


def most_memory_gpus(run):
    """The GPU(s) holding the most memory at the end: by memory still allocated, and by peak."""
    memory = memory_at_end(run)
    found = set()
    for which in (0, 1):
        top = max((m[which] for m in memory.values()), default=0)
        if top > 0:
            found |= {gpu_index(d) for d, m in memory.items() if m[which] == top}
    return found


@pytest.mark.check("practical5.most_memory_gpu_reported")
def test_reported_gpu_with_most_memory(handout, submission, answers, measured, reported_values,
                                       flag):
    by_gpus = {g: handout.dp(g) for g in SPLIT_GPUS}
    # Compared with the runs that trained to the end (a run that crashed on 5 GPUs still
    # leaves 2 and 3; a crash after the last step leaves its run).
    completed = {g: run for g, run in by_gpus.items() if trained_to_the_end(run, submission, DP)}
    require_data_parallel(answers, "memory.most_memory_gpu", *completed.values(), flag=flag)
    value = answer_against(answers, "memory.most_memory_gpu",
                           *([] if completed else by_gpus.values()))
    found = {g: most_memory_gpus(run) for g, run in completed.items()}
    every = set.intersection(*found.values()) if found else set()
    measured["memory.most_memory_gpu"] = (sorted(every)[0] if len(every) == 1 else
                                          {str(g): sorted(f) for g, f in found.items()})
    reported_values["memory.most_memory_gpu"] = value
    agrees = value in every or (not every and any(value in f for f in found.values()))
    readings = "; ".join(
        f"{g} GPUs: " + ", ".join(f"cuda:{gpu_index(d)} {a / 2**20:.2f} MiB allocated / "
                                  f"{p / 2**20:.2f} MiB peak"
                                  for d, (a, p) in sorted(memory_at_end(completed[g]).items()))
        for g in completed)
    candidates = sorted(every or set().union(*found.values()))
    must_agree(
        answers, "memory.most_memory_gpu", value, value if agrees else candidates,
        " or ".join(map(str, candidates)) or "a GPU",
        f"leaves the most memory on GPU {', '.join(map(str, sorted(every))) or '?'} at the end "
        f"of the DataParallel runs ({readings})", flag)


def final_loss(run):
    """The loss the run ended with: its 'final loss:' line, else its last 'loss X' line."""
    printed = printed_numbers(run.stdout, r"final loss: {number}") or printed_numbers(
        run.stdout, r"step \d+:.*?loss {number}")
    return printed[-1] if printed else None


def final_weights_agree(single, parallel) -> bool | None:
    """Whether the two runs' weights after their last optimizer steps agree (to the 0.1%
    dp_loss_equals_single allows for float rounding); None where either took no step."""
    one = step_prints(single, "params")
    two = step_prints(parallel, "params")
    if not (one and two):
        return None
    return close(one[-1].get("sum", 0.0), two[-1].get("sum", 1.0), rel=1e-3, abs_=1e-4)


@pytest.mark.check("practical5.final_loss_equal_reported")
def test_reported_final_loss_equality(handout, submission, answers, measured, reported_values,
                                      flag):
    single = handout.single()
    parallel = handout.dp(2)
    require_data_parallel(answers, "timing.final_loss_equal", parallel, flag=flag)
    value = answer_against(answers, "timing.final_loss_equal",
                           *not_trained(submission, (single, SINGLE), (parallel, DP)))
    losses = {"single": final_loss(single), "dp": final_loss(parallel)}
    weights = final_weights_agree(single, parallel)
    if None not in losses.values():
        truth = close(losses["single"], losses["dp"], rel=1e-4, abs_=1e-6)
        shown = f"ends with loss {losses['single']:g} on one GPU and {losses['dp']:g} with " \
                "DataParallel on 2 GPUs"
        if truth and weights is False:
            # Equal losses printed by runs whose weights end apart are no losses of theirs (a
            # red team's adv34 F2 printed "final loss: 0.500000" from both): the weights decide.
            truth = False
            shown += (", but the two runs end with different weights (the grader's record of "
                      "each optimizer step), so the printed losses are not what they trained to")
            flag("practical5: both scripts print the same final loss, but the traced weights "
                 "after their last steps differ: the printed lines are not the runs' losses")
    else:  # no loss printed: the weights after the last step tell the same
        truth = bool(weights)
        shown = "ends with " + ("the same" if truth else "different") + " weights on one GPU " \
                "and with DataParallel on 2 GPUs (it prints no final loss)"
    measured["timing.final_loss_equal"] = truth
    measured["timing.final_loss"] = losses
    reported_values["timing.final_loss_equal"] = value
    word = {True: "yes", False: "no"}
    must_agree(answers, "timing.final_loss_equal", word[value], word[truth], word[truth], shown,
               flag)


TIMING_METHODS = ["single", "dp"]
# Shown in the reports beside the values (grader/pytest_plugin.py).
MEASURED_UNDER = {"timing": "your scripts as handed in (their own DIM; STEPS at most the "
                            f"template's {TEMPLATE_STEPS[DP]}, or as many past a warm-up it "
                            "does not time; BATCH_SIZE the handout's 64): "
                            "single on 1 GPU, dp on 2 GPUs",
                  "dp": f"your practical5_dp.py with batch {BATCH} on 2, 3 and 5 GPUs"}
TIMING_COLUMNS = ["gpus", "step_time_s", "total_time_s"]
# The handout's table has the times only ("Set up / Step Time (sec) / Total Time (sec)"); the
# sheet's gpus column is read where given, never required.
TIMES = ["step_time_s", "total_time_s"]


# A timing table's row as the answer sheet writes it, with the GPUs the grader runs it on, and
# how the student runs the script to measure it (the message of a row missing).
TIMING_ROW = {"single": "- {method: single, gpus: 1, step_time_s: ..., total_time_s: ...}",
              "dp": "- {method: dp, gpus: 2, step_time_s: ..., total_time_s: ...}"}
TIMING_SCRIPT = {"single": (SINGLE, 1), "dp": (DP, 2)}
TIMING_NAME = {"single": "single-GPU", "dp": "DataParallel"}


def missing_timing_rows(written: dict, untrained: list) -> dict[str, str]:
    """Why each method's row is missing from the rows checked, said so that a student can act
    (a TA's audit: "no row with method: dp" beside a DataParallel script that never ran had
    not said why): its script did not train to the end (there is no time to report yet, or
    the row written cannot be checked), or the row to add, in the sheet's format."""
    said = {}
    for method, (script, gpus) in TIMING_SCRIPT.items():
        broken = next((run for run in untrained if run.script == script), None)
        name = f"the {TIMING_NAME[method]} row (method: {method})"
        stopped = f" (what stopped it: {broken.problem() or 'unknown'})" if broken is not None else ""
        if broken is not None and method in written:
            said[method] = (f"{name} cannot be checked: {script} did not train to the end when "
                            f"the grader ran it; make it run, then report the times it prints{stopped}")
        elif broken is not None:
            said[method] = (f"{name} is missing because {script} did not train to the end when the "
                            f"grader ran it: finish it, run it (pdl-grade run --gpus {gpus} {script}), "
                            f"then add the row with the times it prints, e.g. {TIMING_ROW[method]}{stopped}")
        else:
            said[method] = (f"{name} is missing: {script} trains, so add its row to timing.table's "
                            f"rows with the times it prints, e.g. {TIMING_ROW[method]}")
    return said


def our_timing(run, gpus):
    times, total = step_times(run)
    return {"gpus": gpus, "step_time_s": round(median_or_none(times), 6) if times else None,
            "total_time_s": total}


@pytest.mark.check("practical5.timing_table_reported")
@pytest.mark.parametrize("aspect", ["complete", "consistent"])
def test_reported_timing_table(handout, submission, answers, measured, reported_values, flag,
                               aspect):
    single = handout.single()
    parallel = handout.dp(2)
    untrained = not_trained(submission, (single, SINGLE), (parallel, DP))
    rows = method_rows(answer_against(answers, "timing.table", *untrained))
    measured["timing.table"] = {"single": our_timing(single, 1), "dp": our_timing(parallel, 2)}
    reported_values["timing.table"] = {m: {c: rows[m].get(c) for c in TIMING_COLUMNS}
                                       for m in TIMING_METHODS if m in rows}
    where = answers.where_to_answer("timing.table")
    held = []
    if aspect == "complete":
        written = method_rows(answers.values.get("timing.table"))
        problems = incomplete_rows(rows, TIMING_METHODS, TIMES,
                                   missing=missing_timing_rows(written, untrained), held=held)
        problems += [f"{m}: gpus is {rows[m]['gpus']:g}, not a whole number" for m in rows
                     if m in TIMING_METHODS and isinstance(rows[m].get("gpus"), float)
                     and not rows[m]["gpus"].is_integer()]
        expected = ("a row per method (single, dp), each with the step time and the total time in "
                    "seconds, as positive numbers")
        assert not problems, explain(expected, "; ".join(problems), where)
        unread_cells_wait(problems, held, "timing.table", expected, where)
        return
    # The single-GPU script is the course's given code, byte for byte: the table (Part 3,
    # "Compare Performance") counts beside a DataParallel script of the student's that trains
    # (the untouched template with a sheet had earned 0.13 for the single row: adv52 F6);
    # without it the table is not complete either, said above.
    assert not any(run is parallel for run in untrained), explain(
        "the timing table beside a DataParallel script of your own that trains (the "
        f"single-GPU script {SINGLE} is the course's given code, which earns nothing by itself)",
        f"{DP} did not train to its end in the grader's run on 2 GPUs"
        + (f": {parallel.problem()}" if parallel.problem() else ""),
        f"{DP}: its own checks say what is missing")
    checkable = [m for m in TIMING_METHODS if not incomplete_rows(rows, [m], TIMES)]
    if not checkable:   # a cell with a number not read: compared by the person who reads it
        unread_cells_wait(incomplete_rows(rows, TIMING_METHODS, TIMES, held=held), held, "timing.table",
                          "step and total times to compare", where)
    assert checkable, explain("step and total times to compare", "no complete row", where)
    # The student's table times their own run: the file's STEPS, where the grader ran fewer.
    steps = {"single": steps_as_written(single, submission, SINGLE),
             "dp": steps_as_written(parallel, submission, DP)}
    problems, flags = total_disagreements({m: rows[m] for m in checkable},
                                          {m: steps[m] for m in checkable})
    said = rows["single"].get("gpus", 1) if "single" in checkable else 1
    if isinstance(said, (int, float)) and not isinstance(said, bool) and said != 1:
        problems.append(f"single: gpus is {rows['single']['gpus']:g}, but "
                        f"{SINGLE} trains on one GPU (cuda:0)")
    for text in flags:
        flag(f"timing.table {text}")
    if set(checkable) == set(TIMING_METHODS):
        speedup = rows["single"]["step_time_s"] / rows["dp"]["step_time_s"]
        gpus = rows["dp"].get("gpus")
        gpus = gpus if isinstance(gpus, (int, float)) and not isinstance(gpus, bool) else 2
        if speedup > max(1, gpus):
            flag(f"timing.table: DataParallel is {speedup:.3g}x faster than one GPU with "
                 f"{gpus:g} GPUs (more than linear): were both measured alike?")
    assert not problems, explain(
        "the timing table agrees with itself and with your scripts: a total covers every step "
        f"({steps['single']} steps in {SINGLE}, {steps['dp']} in {DP}), so it is at least "
        f"{TOTAL_LOWER:g} x steps x step time; the single-GPU script uses 1 GPU",
        "; ".join(problems), where + ": step and total times in seconds")


# -- Part 3: did it get faster? Part 4: split manually? Part 5: nvidia-smi --------------------
# Facts about speed come from the grader's runs of the student's scripts, read through
# practical_measures.step_seconds (the one place that knows which clock a run has); where the
# two times are within the clock's MARGIN of each other (25% on a wall clock, 5% on the
# simulated one) either answer is accepted.


def timed_fact(handout, answers, measured, reported_values, flag, qid, verdict, claim):
    """Compare a yes/no answer about speed with the grader's runs of the single-GPU script
    (1 GPU) and the DataParallel one (2 GPUs): `verdict(t_single, t_dp)` gives True, False, or
    None when the times are too close to call or there is no clock (then either answer)."""
    single = handout.single()
    parallel = handout.dp(2)
    require_data_parallel(answers, qid, parallel, flag=flag)
    trained = bool(single.of("step") and parallel.of("step")) or None
    value, _ = answer_and_truth(answers, qid, trained, single, parallel)
    t1, t2 = compared_step_seconds(single, parallel)
    clock = shared_clock(single, parallel)
    truth = verdict(t1, t2, clock)
    measured[qid] = {"single_step_s": t1, "dp_step_s": t2, "clock": clock_words(clock),
                     "answer": "either" if truth is None else truth}
    reported_values[qid] = value
    if truth is None:
        return
    word = {True: "yes", False: "no"}
    must_agree(answers, qid, word[value], word[truth], word[truth],
               f"{claim(truth, t1 / t2)}: {t1:.4g} s per step on 1 GPU and {t2:.4g} s with "
               f"DataParallel on 2 GPUs ({clock_words(clock)})", flag)


@pytest.mark.check("practical5.faster_reported")
def test_reported_faster(handout, answers, measured, reported_values, flag):
    timed_fact(handout, answers, measured, reported_values, flag, "timing.faster", faster,
               lambda truth, ratio: "trains faster with DataParallel" if truth else
               "does not train faster with DataParallel")


def proportional(t1, t2, clock):
    """Proportional to 2 GPUs: about 2x. On the exact simulated clock from 1.8x; on a wall
    clock clearly so from 1.6x, clearly not below 1.2x, and either answer in between."""
    if not t1 or not t2 or clock is None:
        return None
    if clock == "simulated":
        return t1 / t2 >= 1.8
    return None if 1.2 <= t1 / t2 < 1.6 else t1 / t2 >= 1.6


@pytest.mark.check("practical5.proportional_reported")
def test_reported_proportional(handout, answers, measured, reported_values, flag):
    timed_fact(handout, answers, measured, reported_values, flag, "timing.proportional",
               proportional, lambda truth, ratio: f"gets a speed-up of {ratio:.2f}x from 2 GPUs")


@pytest.mark.check("practical5.split_manually_reported")
def test_reported_split_manually(handout, answers, agree, flag):
    run = handout.dp(2)
    require_data_parallel(answers, "dp.split_manually", run, flag=flag)
    passes = forward_passes(run)
    # Split by the code: a forward pass of the script's own on part of the batch; split by
    # DataParallel: its scatter (the replicas' passes run in worker threads).
    truth = any((rows_of(p["batch"]) or BATCH) < BATCH for p in passes) if passes else None
    value, truth = answer_and_truth(answers, "dp.split_manually", truth, run)
    agree("dp.split_manually", value, truth,
          split_by_the_code(run, passes) if truth else
          ("calls the model on the whole batch of 64 and DataParallel scatters it"
           if forward_scatters(run) else "calls the model on the whole batch of 64 (no split)"),
          expected={True: "yes", False: "no"}[truth])


def split_by_the_code(run, passes) -> str:
    """What was seen of a batch split by the code, said as seen: the passes of the script's own
    on parts of the batch, and where torch.nn.parallel's scatter split it outside an
    nn.DataParallel wrapper (scatter, replicate and parallel_apply called by the script), that
    too. (A TA's audit29 D2: the functional data_parallel, then unrecognised, was told "your code
    splits the batch itself" with nothing of what was seen.)"""
    first = passes[0].get("step") if passes else None
    parts = [rows_of(p["batch"]) for p in passes if p.get("step") == first
             and (rows_of(p["batch"]) or BATCH) < BATCH]
    said = f"runs the model itself on parts of the batch ({'/'.join(map(str, parts))} rows"
    said += " in its first step)" if parts else ")"
    scatters = forward_scatters(run)
    if scatters:
        said += (f"; torch.nn.parallel's scatter split the batch at {scatters[0].get('site')}, "
                 "called by the code, not inside an nn.DataParallel wrapper's forward")
    return said


def dp_memory(handout):
    """Peak memory per GPU of each DataParallel run that trained: {gpus: peaks}."""
    found = {}
    for gpus in SPLIT_GPUS:
        peaks = training_peak_memory(handout.dp(gpus))
        if any(peaks.values()):
            found[gpus] = peaks
    return found


def memory_fact(handout, answers, measured, reported_values, flag, qid, fact, said):
    """A yes/no answer about the DataParallel runs' memory per GPU; where runs on different
    GPU counts disagree, either answer is right."""
    require_data_parallel(answers, qid, *(handout.dp(g) for g in SPLIT_GPUS), flag=flag)
    by_gpus = dp_memory(handout)
    truths = {g: fact(peaks) for g, peaks in by_gpus.items()}
    settled = {t for t in truths.values() if t is not None}
    known = bool(settled) or None
    value, _ = answer_and_truth(answers, qid, known, *[handout.dp(g)
                                                       for g in SPLIT_GPUS])
    truth = settled.pop() if len(settled) == 1 else None
    measured[qid] = "either" if truth is None else truth
    reported_values[qid] = value
    if truth is None:
        return
    shown = "; ".join(f"{g} GPUs: {describe_memory(peaks)}" for g, peaks in by_gpus.items())
    word = {True: "yes", False: "no"}
    must_agree(answers, qid, word[value], word[truth], word[truth],
               f"{said[truth]} (peak memory per GPU in the DataParallel runs, more than "
               f"{BALANCED - 1:.0%} apart counts as unequal: {shown})", flag)


@pytest.mark.check("practical5.gpu0_more_loaded_reported")
def test_reported_gpu0_more_loaded(handout, answers, measured, reported_values, flag):
    memory_fact(handout, answers, measured, reported_values, flag, "usage.gpu0_more_loaded",
                gpu0_more_loaded, {True: "loads GPU 0 more than the others",
                                   False: "does not load GPU 0 more than the others"})


@pytest.mark.check("practical5.equally_utilized_reported")
def test_reported_equally_utilized(handout, answers, measured, reported_values, flag):
    memory_fact(handout, answers, measured, reported_values, flag, "usage.equally_utilized",
                balanced, {True: "uses every GPU about equally",
                           False: "does not use the GPUs equally"})


@pytest.mark.check("practical5.usage_table_reported")
def test_reported_usage_table(handout, answers, reported_values, flag):
    require_data_parallel(answers, "usage.table", handout.dp(2), flag=flag)
    rows = checked_usage_table(answers, reported_values, "usage.table", "DataParallel",
                               handout.dp(2), flag=flag)
    memory = {k: row["memory_mib"] for k, row in rows.items() if isinstance(k, int)}
    if memory and 0 in memory and memory[0] < max(memory.values()):
        flag("usage.table: GPU 0 does not hold the most memory in the reported nvidia-smi "
             "readings, although DataParallel gathers everything there")
