"""Practical 5: nn.DataParallel (practical5/practical5_dp.py against practical5_single.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import statistics

import pytest

from grader.checks.practical_answers import (TOTAL_LOWER, answer_against, gpu_index,
                                             incomplete_rows, printed_numbers, rows_by,
                                             steps_of, total_disagreements, whole_numbers)
from grader.checks.step_timing import faster, step_timing
from grader.checks.support import chunk_sizes, close, explain, must_agree, require_run

DP = "practical5/practical5_dp.py"
SINGLE = "practical5/practical5_single.py"
BATCH = 64


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs):
    runs.prefetch(dict(script=DP, gpus=3), dict(script=DP, gpus=2), dict(script=SINGLE, gpus=1),
                  dict(script=DP, gpus=5))


def forward_scatters(observation):
    """DataParallel's scatters of a forward pass's input (backward scatters gradients too)."""
    return [e for e in observation.of("dp_scatter") if e.get("batch") == BATCH]


@pytest.mark.check("practical5.split_sizes")
@pytest.mark.parametrize("gpus", [2, 3, 5])
def test_batch_split_follows_chunk_rule(runs, gpus):
    run = runs.script(DP, gpus=gpus)
    require_run(run)
    expected = chunk_sizes(BATCH, gpus)
    scatters = forward_scatters(run)
    assert scatters, explain(
        f"DataParallel scatters each batch of {BATCH} over the {gpus} GPUs",
        "no scatter of a batch of 64 was observed", "wrap the model in nn.DataParallel and "
        "call the wrapper (not the inner model) on a batch on cuda:0")
    wrong = [s["sizes"] for s in scatters if s["sizes"] != expected]
    assert not wrong, explain(
        f"a batch of {BATCH} on {gpus} GPUs splits as {expected} (torch.chunk: ceil(64/{gpus}) "
        "rows per GPU, the last one smaller)", f"splits {wrong[0]}",
        "keep BATCH_SIZE = 64 and let nn.DataParallel split the batch itself")
    first_step = sorted((e["batch"][0] for e in run.of("forward")
                         if e.get("thread") != "MainThread" and e.get("batch")
                         and e.get("step") == 0), reverse=True)
    assert first_step == sorted(expected, reverse=True), explain(
        f"{len(expected)} replicas, one per GPU, running chunks of {expected} rows in a step",
        f"replica forward passes on {first_step or 'no'} rows in the first step",
        "call the DataParallel wrapper once per step, on the whole batch")


@pytest.fixture(scope="module")
def three_gpus(runs):
    return runs.script(DP, gpus=3)


@pytest.mark.check("practical5.replicated")
def test_model_replicated_to_every_gpu(three_gpus):
    require_run(three_gpus)
    targets = {e["dst"] for e in three_gpus.of("transfer") if e.get("kind") == "broadcast"}
    replicas = {e.get("input_device") for e in three_gpus.of("forward")
                if e.get("thread") != "MainThread"}
    assert {"cuda:1", "cuda:2"} <= targets and {"cuda:0", "cuda:1", "cuda:2"} <= replicas, explain(
        "DataParallel copies the model from cuda:0 to cuda:1 and cuda:2 and runs one replica "
        "per GPU", f"parameters broadcast to {sorted(targets) or 'no GPU'}; replicas ran on "
        f"{sorted(d for d in replicas if d) or 'no GPU'}",
        "move the model to cuda:0 before wrapping it in nn.DataParallel, and use all GPUs "
        "(device_ids left out)")


@pytest.mark.check("practical5.gathered_on_gpu0")
def test_outputs_gathered_on_gpu0(three_gpus):
    require_run(three_gpus)
    gathers = [e for e in three_gpus.of("transfer") if e.get("kind") == "gather"]
    wrong = sorted({e["dst"] for e in gathers if e["dst"] != "cuda:0"})
    outs = {e.get("device") for e in three_gpus.of("forward_out") if e.get("module") == "DataParallel"}
    assert gathers and not wrong and outs == {"cuda:0"}, explain(
        "the replicas' outputs are gathered on cuda:0 (DataParallel's output_device)",
        f"gathers into {wrong or sorted({e['dst'] for e in gathers}) or 'nowhere'}, "
        f"DataParallel outputs on {sorted(d for d in outs if d) or 'no device'}",
        "leave output_device at its default (cuda:0)")


@pytest.mark.check("practical5.gpu0_most_memory")
def test_gpu0_holds_most_memory(three_gpus):
    require_run(three_gpus)
    peaks = three_gpus.final_memory()
    assert peaks and peaks.get("cuda:0", 0) >= max(peaks.values()), explain(
        "cuda:0 holds the most memory: the master copy of the model, the optimizer state, the "
        "whole batch and the gathered outputs live there",
        ", ".join(f"{d}: {v / 2**20:.1f} MiB" for d, v in peaks.items()) or "no memory readings",
        "keep the model, optimizer and data on cuda:0 (DataParallel's source device)")


@pytest.mark.check("practical5.dp_loss_equals_single")
def test_data_parallel_matches_single_gpu(runs):
    single = runs.script(SINGLE, gpus=1, like_gpus=2)
    parallel = runs.script(DP, gpus=2)
    require_run(single)
    require_run(parallel)
    one = single.fingerprints("params").get(0, [])
    two = parallel.fingerprints("params").get(0, [])
    steps = min(len(one), len(two))
    assert steps, explain("both scripts take optimizer steps", f"{len(one)} and {len(two)} steps")
    diverged = [k for k in range(steps) if not close(one[k].get("sum", 0.0), two[k].get("sum", 1.0),
                                                    rel=1e-3, abs_=1e-4)]
    assert not diverged, explain(
        "the same seed and data give the same weights after every step with and without "
        "DataParallel (it only splits the work)",
        f"the weights differ from step {diverged[0] + 1} on", "use the same SEED, model, data, "
        "loss and optimizer in practical5_single.py and practical5_dp.py")


@pytest.mark.gpus(2)
@pytest.mark.check("practical5.real_speedup")
def test_real_speedup_with_two_gpus(runs):
    single = runs.script(SINGLE, gpus=1)
    parallel = runs.script(DP, gpus=2)
    require_run(single)
    require_run(parallel)

    def median_step(run):
        times = [e["t"] for e in run.of("step")]
        gaps = [b - a for a, b in zip(times, times[1:])][1:]  # the first step warms up
        return statistics.median(gaps) if gaps else float("nan")

    t1, t2 = median_step(single), median_step(parallel)
    assert t2 < t1, explain("DataParallel on 2 real GPUs takes less time per step than 1 GPU",
                            f"{t1 * 1000:.1f} ms per step on 1 GPU, {t2 * 1000:.1f} ms on 2")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical5/answers.yaml is compared with the grader's runs of the same scripts: the splits
# DataParallel made on 2, 3 and 5 GPUs, the GPU left holding the most memory, the final losses.
# Times depend on the hardware: the timing table is only checked for being complete and
# consistent (a total covers every step); implausible numbers are flagged, never scored.
SPLIT_GPUS = [2, 3, 5]


def observed_split(run):
    """How the run split a batch over the GPUs, cuda:0 first: DataParallel's scatter of the
    forward input (the most common one), else the first step's forward passes by device (a
    model that is not DataParallel runs the whole batch on one GPU); None if nothing ran."""
    sizes = [tuple(s["sizes"]) for s in forward_scatters(run) if s.get("sizes")]
    if sizes:
        return list(max(set(sizes), key=sizes.count))
    by_device = {}
    for event in run.of("forward"):
        if event.get("step") == 0 and event.get("batch") and event.get("input_device"):
            by_device.setdefault(event["input_device"], event["batch"][0])
    order = sorted(by_device, key=lambda d: (gpu_index(d) is None, gpu_index(d) or 0))
    return [by_device[d] for d in order] or None


@pytest.mark.check("practical5.split_table_reported")
@pytest.mark.parametrize("gpus", SPLIT_GPUS)
def test_reported_split_per_gpu(runs, answers, measured, reported_values, flag, gpus):
    run = runs.script(DP, gpus=gpus)
    rows = rows_by(answer_against(answers, "dp.split_per_gpu", run), "gpus")
    rule = chunk_sizes(BATCH, gpus)
    seen = observed_split(run)
    truth = seen or rule
    measured["dp.split_per_gpu"] = {str(gpus): truth}
    row = rows.get(gpus) or {}
    assert row.get("split") is not None, explain(
        f"a row for {gpus} GPUs in the table dp.split_per_gpu: - {{gpus: {gpus}, split: "
        f"[...]}} with one batch size per GPU, cuda:0 first",
        f"rows for {sorted(k for k in rows if isinstance(k, int)) or 'no'} GPUs",
        answers.where_to_answer("dp.split_per_gpu"))
    reported_values["dp.split_per_gpu"] = {str(gpus): row["split"]}
    value = whole_numbers(row["split"])
    differs = "" if truth == rule else (
        f"; DataParallel's chunk rule gives {rule}, but your code splits the batch as {truth}")
    must_agree(
        answers, "dp.split_per_gpu", row["split"] if value is None else value, truth,
        f"{gpus} GPUs: {truth} (one batch size per GPU, cuda:0 first){differs}",
        f"splits a batch of {BATCH} over {gpus} GPUs as {truth} (the 'Inside model on device "
        "...' lines)", flag)


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
def test_reported_gpu_with_most_memory(runs, answers, measured, reported_values, flag):
    by_gpus = {g: runs.script(DP, gpus=g) for g in SPLIT_GPUS}
    # Compared with the runs that completed (a run that crashed on 5 GPUs still leaves 2 and 3).
    value = answer_against(answers, "memory.most_memory_gpu",
                           *([r for r in by_gpus.values() if r.ok] or by_gpus.values()))
    completed = {g: run for g, run in by_gpus.items() if run.ok}
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


@pytest.mark.check("practical5.final_loss_equal_reported")
def test_reported_final_loss_equality(runs, answers, measured, reported_values, flag):
    single = runs.script(SINGLE, gpus=1, like_gpus=2)
    parallel = runs.script(DP, gpus=2)
    value = answer_against(answers, "timing.final_loss_equal", single, parallel)
    losses = {"single": final_loss(single), "dp": final_loss(parallel)}
    if None not in losses.values():
        truth = close(losses["single"], losses["dp"], rel=1e-4, abs_=1e-6)
        shown = f"ends with loss {losses['single']:g} on one GPU and {losses['dp']:g} with " \
                "DataParallel on 2 GPUs"
    else:  # no loss printed: the weights after the last step tell the same
        one = single.fingerprints("params").get(0, [])
        two = parallel.fingerprints("params").get(0, [])
        truth = bool(one and two) and close(one[-1].get("sum", 0.0), two[-1].get("sum", 1.0),
                                            rel=1e-3, abs_=1e-4)
        shown = "ends with " + ("the same" if truth else "different") + " weights on one GPU " \
                "and with DataParallel on 2 GPUs (it prints no final loss)"
    measured["timing.final_loss_equal"] = truth
    measured["timing.final_loss"] = losses
    reported_values["timing.final_loss_equal"] = value
    word = {True: "yes", False: "no"}
    must_agree(answers, "timing.final_loss_equal", word[value], word[truth], word[truth], shown,
               flag)


TIMING_METHODS = ["single", "dp"]
TIMING_COLUMNS = ["gpus", "step_time_ms", "total_time_s"]


def our_timing(run, gpus):
    """The run's step time as the grader measured it (grader/checks/step_timing.py): the
    simulated clock on virtual GPUs, the wall clock on real ones; `clock` says which."""
    return {"gpus": gpus, **(step_timing(run) or {"step_time_ms": None, "total_time_s": None})}


@pytest.mark.check("practical5.timing_table_reported")
@pytest.mark.parametrize("aspect", ["complete", "consistent"])
def test_reported_timing_table(runs, answers, measured, reported_values, flag, aspect):
    single = runs.script(SINGLE, gpus=1, like_gpus=2)
    parallel = runs.script(DP, gpus=2)
    rows = rows_by(answer_against(answers, "timing.table", single, parallel), "method")
    measured["timing.table"] = {"single": our_timing(single, 1), "dp": our_timing(parallel, 2)}
    # "Did training become faster?": the method with the shorter step, on one clock.
    comparison = faster(measured["timing.table"])
    if comparison is not None:
        measured["timing.faster"] = comparison
    reported_values["timing.table"] = {m: {c: rows[m].get(c) for c in TIMING_COLUMNS}
                                       for m in TIMING_METHODS if m in rows}
    where = answers.where_to_answer("timing.table")
    if aspect == "complete":
        problems = incomplete_rows(rows, TIMING_METHODS, TIMING_COLUMNS)
        problems += [f"{m}: gpus is {rows[m]['gpus']:g}, not a whole number" for m in rows
                     if m in TIMING_METHODS and isinstance(rows[m].get("gpus"), float)
                     and not rows[m]["gpus"].is_integer()]
        assert not problems, explain(
            "a row per method (single, dp), each with the GPUs used, the step time in ms and "
            "the total time in s, as positive numbers", "; ".join(problems), where)
        return
    checkable = [m for m in TIMING_METHODS if not incomplete_rows(rows, [m], TIMING_COLUMNS)]
    assert checkable, explain("step and total times to compare", "no complete row", where)
    steps = {"single": steps_of(single), "dp": steps_of(parallel)}
    problems, flags = total_disagreements({m: rows[m] for m in checkable},
                                          {m: steps[m] for m in checkable})
    if "single" in checkable and rows["single"]["gpus"] != 1:
        problems.append(f"single: gpus is {rows['single']['gpus']:g}, but "
                        f"{SINGLE} trains on one GPU (cuda:0)")
    for text in flags:
        flag(f"timing.table {text}")
    if set(checkable) == set(TIMING_METHODS):
        speedup = rows["single"]["step_time_ms"] / rows["dp"]["step_time_ms"]
        if speedup > max(1, rows["dp"]["gpus"]):
            flag(f"timing.table: DataParallel is {speedup:.3g}x faster than one GPU with "
                 f"{rows['dp']['gpus']:g} GPUs (more than linear): were both measured alike?")
    assert not problems, explain(
        "the timing table agrees with itself and with your scripts: a total covers every step "
        f"({steps['single']} steps in {SINGLE}, {steps['dp']} in {DP}), so it is at least "
        f"{TOTAL_LOWER:g} x steps x step time; the single-GPU script uses 1 GPU",
        "; ".join(problems), where + ": step times in ms, total times in s")
