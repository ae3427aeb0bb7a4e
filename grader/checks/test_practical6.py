"""Practical 6: DistributedDataParallel under torchrun (practical6/practical6_ddp.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import pytest

from grader.checks.practical_answers import (TOTAL_LOWER, answer_against, constant_in_source,
                                             device_name, incomplete_rows, per_rank_line,
                                             rows_by, steps_of, total_disagreements)
from grader.checks.step_timing import faster, step_timing
from grader.checks.support import close, explain, must_agree, require_run

SCRIPT = "practical6/practical6_ddp.py"
BATCH = 64


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs, submission):
    runs.prefetch(*(dict(script=SCRIPT, gpus=n, nproc=n) for n in (2, 4, 1)))
    if (submission / DP_SCRIPT).is_file():  # "Which is faster?" compares it with DDP
        runs.prefetch(dict(script=DP_SCRIPT, gpus=SHEET_PROCESSES))


def ddp_run(runs, processes):
    return runs.script(SCRIPT, gpus=processes, nproc=processes)


@pytest.mark.check("practical6.world_size")
@pytest.mark.parametrize("processes", [1, 2, 4])
def test_world_size_is_number_of_processes(runs, processes):
    run = ddp_run(runs, processes)
    require_run(run)
    sizes = {e.get("rank"): e.get("world_size") for e in run.of("init_process_group")}
    assert len(sizes) == processes and set(sizes.values()) == {processes}, explain(
        f"{processes} process(es), each joining a process group of world size {processes}",
        f"process groups joined by rank(s) {sorted(sizes)} with world sizes "
        f"{sorted(set(sizes.values())) or 'none'}",
        "dist.init_process_group() with torchrun's environment (no hard-coded world_size)")


@pytest.mark.check("practical6.rank_device")
def test_rank_k_uses_gpu_k(runs):
    run = ddp_run(runs, 2)
    require_run(run)
    placed = {}
    for event in run.of("placement"):
        for layer in event.get("layers", []):
            device = layer.get("device")
            placed.setdefault(event.get("rank"), set()).update(
                device if isinstance(device, list) else [device])
    wrong = {r: sorted(d) for r, d in placed.items() if d != {f"cuda:{r}"}}
    assert sorted(placed) == [0, 1] and not wrong, explain(
        "rank k keeps its model on cuda:k (its LOCAL_RANK)",
        "; ".join(f"rank {r} has its model on {d}" for r, d in sorted(wrong.items()))
        or f"models seen on rank(s) {sorted(placed)}",
        "torch.cuda.set_device(local_rank) and model.to(f'cuda:{local_rank}')")


@pytest.mark.check("practical6.per_rank_batch")
@pytest.mark.parametrize("processes", [2, 4])
def test_batch_divided_by_world_size(runs, processes):
    run = ddp_run(runs, processes)
    require_run(run)
    expected = BATCH // processes
    seen = {}
    for event in run.of("forward"):
        if event.get("thread") == "MainThread" and event.get("batch"):
            seen.setdefault(event.get("rank"), set()).add(event["batch"][0])
    wrong = {r: sorted(b) for r, b in seen.items() if b != {expected}}
    assert len(seen) == processes and not wrong, explain(
        f"with {processes} processes each rank trains on BATCH_SIZE // world_size = "
        f"{BATCH} // {processes} = {expected} rows, so the global batch stays {BATCH}",
        "; ".join(f"rank {r} ran batches of {b}" for r, b in sorted(wrong.items()))
        or f"forward passes on {len(seen)} rank(s)",
        "x, y = get_batch(BATCH_SIZE // dist.get_world_size(), DIM, device)")


def per_rank_prints(run, kind):
    prints = run.fingerprints(kind)
    return prints, min((len(v) for v in prints.values()), default=0)


@pytest.mark.check("practical6.grads_synchronised")
def test_gradients_all_reduced(runs):
    run = ddp_run(runs, 2)
    require_run(run)
    prints, steps = per_rank_prints(run, "grads")
    assert len(prints) == 2 and steps, explain("both ranks take optimizer steps",
                                               f"steps on ranks {sorted(prints)}")
    synced = [e for e in run.of("collective") if e.get("source") == "ddp_gradients"]
    unequal = [k for k in range(steps) if not close(prints[0][k]["sum"], prints[1][k]["sum"])
               or not close(prints[0][k]["sumsq"], prints[1][k]["sumsq"])]
    assert not unequal, explain(
        "after backward every rank holds the same (averaged) gradients: DDP all-reduces them",
        f"the ranks' gradients differ at step {unequal[0] + 1}"
        + ("" if synced else "; no gradient all-reduce was observed (is the model wrapped in DDP, "
           "and is the wrapper what you call?)"),
        "wrap the model with DDP(model, device_ids=[local_rank]) and run forward through the wrapper")


@pytest.mark.check("practical6.params_equal_after_step")
def test_parameters_equal_after_step(runs):
    run = ddp_run(runs, 2)
    require_run(run)
    prints, steps = per_rank_prints(run, "params")
    assert len(prints) == 2 and steps, explain("both ranks take optimizer steps",
                                               f"steps on ranks {sorted(prints)}")
    unequal = [k for k in range(steps) if not close(prints[0][k]["sum"], prints[1][k]["sum"])]
    assert not unequal, explain(
        "the replicas stay identical: the same parameters on every rank after each step",
        f"the ranks' parameters differ after step {unequal[0] + 1}",
        "DDP broadcasts rank 0's weights when wrapping and averages gradients in backward")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical6/answers.yaml is compared with the grader's run of the same script under torchrun
# with 2 processes on 2 GPUs (the sheet's "--nproc-per-node 2"). Times depend on the hardware:
# the timing table is only checked for being complete and consistent; implausible numbers are
# flagged, never scored.
SHEET_PROCESSES = 2
DP_SCRIPT = "practical5/practical5_dp.py"


def gpus_by_rank(run):
    """{rank: sorted devices its model's layers are on}."""
    placed = {}
    for event in run.of("placement"):
        for layer in event.get("layers", []):
            device = layer.get("device")
            placed.setdefault(event.get("rank", 0), set()).update(
                map(str, device) if isinstance(device, list) else [str(device)])
    return {rank: sorted(devices) for rank, devices in sorted(placed.items())}


@pytest.mark.check("practical6.world_size_reported")
def test_reported_world_size(runs, answers, measured, reported_values, flag):
    run = ddp_run(runs, SHEET_PROCESSES)
    value = answer_against(answers, "ddp.world_size", run)
    sizes = sorted({e.get("world_size") for e in run.of("init_process_group")} - {None})
    truth = sizes[0] if len(sizes) == 1 else sizes
    measured["ddp.world_size"] = truth
    reported_values["ddp.world_size"] = value
    must_agree(
        answers, "ddp.world_size", value, truth, str(truth), f"joins a process group of world "
        f"size {', '.join(map(str, sizes)) or 'none'} in each of the {SHEET_PROCESSES} "
        f"processes torchrun --nproc-per-node {SHEET_PROCESSES} starts", flag)


@pytest.mark.check("practical6.rank_gpu_table_reported")
def test_reported_rank_to_gpu(runs, answers, measured, reported_values, flag):
    run = ddp_run(runs, SHEET_PROCESSES)
    rows = rows_by(answer_against(answers, "ddp.rank_to_gpu", run), "rank")
    truth = gpus_by_rank(run)
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
               + f" with {SHEET_PROCESSES} processes", flag)


@pytest.mark.check("practical6.per_rank_batch_reported")
def test_reported_per_rank_batch(runs, answers, measured, reported_values, flag):
    run = ddp_run(runs, SHEET_PROCESSES)
    value = answer_against(answers, "ddp.per_rank_batch", run)
    seen = sorted({e["batch"][0] for e in run.of("forward")
                   if e.get("thread") == "MainThread" and e.get("batch")})
    truth = seen[0] if len(seen) == 1 else seen
    measured["ddp.per_rank_batch"] = truth
    reported_values["ddp.per_rank_batch"] = value
    must_agree(
        answers, "ddp.per_rank_batch", value, truth, str(truth),
        f"runs each rank's forward pass on {', '.join(map(str, seen)) or 'no'} rows with "
        f"BATCH_SIZE={BATCH} and {SHEET_PROCESSES} processes", flag)


TIMING_METHODS = ["dp", "ddp"]
TIMING_COLUMNS = ["step_time_ms", "total_time_s"]


@pytest.mark.check("practical6.timing_table_reported")
@pytest.mark.parametrize("aspect", ["complete", "consistent"])
def test_reported_timing_table(runs, submission, answers, measured, reported_values, flag,
                               aspect):
    run = ddp_run(runs, SHEET_PROCESSES)
    rows = rows_by(answer_against(answers, "timing.table", run), "method")
    # The grader's own times (grader/checks/step_timing.py: the simulated clock on virtual
    # GPUs, `clock` says which): DDP here, DataParallel from Practical 5's script on as many
    # GPUs; "Which is faster?" is the method with the shorter step.
    timings = {"ddp": step_timing(run)}
    if (submission / DP_SCRIPT).is_file():
        timings["dp"] = step_timing(runs.script(DP_SCRIPT, gpus=SHEET_PROCESSES))
    measured["timing.table"] = {m: t for m, t in timings.items() if t is not None}
    comparison = faster(timings)
    if comparison is not None:
        measured["timing.faster"] = comparison
    reported_values["timing.table"] = {m: {c: rows[m].get(c) for c in TIMING_COLUMNS}
                                       for m in TIMING_METHODS if m in rows}
    where = answers.where_to_answer("timing.table")
    if aspect == "complete":
        problems = incomplete_rows(rows, TIMING_METHODS, TIMING_COLUMNS)
        assert not problems, explain(
            "a row per method (dp: Practical 5's DataParallel, ddp: this script), each with the "
            "step time in ms and the total time in s, as positive numbers", "; ".join(problems),
            where)
        return
    checkable = [m for m in TIMING_METHODS if not incomplete_rows(rows, [m], TIMING_COLUMNS)]
    assert checkable, explain("step and total times to compare", "no complete row", where)
    # The steps each script takes: this run's; Practical 5's from its STEPS (not run here).
    steps = {"ddp": steps_of(run),
             "dp": constant_in_source(submission / DP_SCRIPT, "STEPS")}
    problems, flags = total_disagreements({m: rows[m] for m in checkable},
                                          {m: steps[m] for m in checkable})
    for text in flags:
        flag(f"timing.table {text}")
    counted = ", ".join(f"{steps[m]} steps for {m}" for m in checkable if steps[m])
    assert not problems, explain(
        f"a total covers every step ({counted or 'steps unknown'}), so it is at least "
        f"{TOTAL_LOWER:g} x steps x step time", "; ".join(problems),
        where + ": step times in ms, total times in s")
