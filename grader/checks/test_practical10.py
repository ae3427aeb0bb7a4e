"""Practical 10: hybrid data + model + pipeline parallelism (practical10/sample.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import pytest

from grader.checks.practical_answers import (answer_against, gpu_index, gpu_list, per_rank_line,
                                             rows_by)
from grader.checks.support import explain, must_agree, require_run

SCRIPT = "practical10/sample.py"
GPUS = 4
BATCH = 64
MICRO = 4


DEFAULTS = {"MICRO_BATCHES": MICRO, "BATCH_SIZE": BATCH, "BROKEN_MP": False}


def run_spec(processes=2, **sets):
    # A constant set to the template's own value is the default run: share it.
    changed = {k: v for k, v in sets.items() if DEFAULTS.get(k) != v}
    return dict(script=SCRIPT, gpus=GPUS, nproc=processes, sets=changed or None)


def hybrid(runs, processes=2, **sets):
    return runs.script(**run_spec(processes, **sets))


@pytest.fixture(scope="module", autouse=True)
def start_runs(runs):
    runs.prefetch(run_spec(), run_spec(MICRO_BATCHES=2), run_spec(MICRO_BATCHES=8),
                  run_spec(BATCH_SIZE=32), run_spec(BATCH_SIZE=128), run_spec(processes=1),
                  run_spec(BROKEN_MP=True))


def devices_of_rank(run, rank):
    found = set()
    for event in run.of("placement", rank):
        for layer in event.get("layers", []):
            device = layer.get("device")
            found.update(device if isinstance(device, list) else [device])
    return found


def step_pattern(run, rank=0):
    """Per optimizer step: (forward passes, their batch sizes, backward passes, synced backwards)."""
    pattern = []
    for events in run.by_step(rank):
        forwards = [e for e in events if e.get("event") == "forward"
                    and e.get("thread") == "MainThread"]
        backwards = synced = 0
        last_backward_synced = False
        for event in events:
            if event.get("event") == "backward":
                backwards += 1
                last_backward_synced = False
            elif (event.get("event") == "collective" and event.get("source") == "ddp_gradients"
                  and not last_backward_synced and backwards):
                synced += 1
                last_backward_synced = True
        pattern.append((len(forwards), sorted({f["batch"][0] for f in forwards if f.get("batch")}),
                        backwards, synced))
    return pattern


@pytest.mark.check("practical10.one_process_per_replica")
def test_one_process_per_replica(runs):
    run = hybrid(runs)
    require_run(run)
    wraps = {e.get("rank"): e.get("world_size") for e in run.of("ddp_wrap")}
    assert sorted(wraps) == [0, 1] and set(wraps.values()) == {2}, explain(
        "2 processes, each one data-parallel replica wrapped in DDP over a group of 2",
        f"DDP replicas on ranks {sorted(wraps) or 'none'} with group sizes "
        f"{sorted(set(wraps.values())) or 'none'}",
        "wrap each rank's two-stage model in DDP (without device_ids: it spans two GPUs)")


@pytest.mark.check("practical10.gpu_pair_per_rank")
def test_rank_uses_gpus_r_and_r_plus_2(runs):
    run = hybrid(runs)
    require_run(run)
    wrong = {r: sorted(devices_of_rank(run, r)) for r in (0, 1)
             if devices_of_rank(run, r) != {f"cuda:{r}", f"cuda:{r + 2}"}}
    assert not wrong, explain(
        "rank r puts stage 0 on cuda:r and stage 1 on cuda:r+2 (rank 0: cuda:0 + cuda:2, "
        "rank 1: cuda:1 + cuda:3)",
        "; ".join(f"rank {r} uses {d or 'no GPU'}" for r, d in wrong.items()),
        "device0 = cuda:{local_rank}, device1 = cuda:{local_rank + 2}")


@pytest.mark.check("practical10.micro_batches")
@pytest.mark.parametrize("micro", [2, 4, 8])
def test_micro_batches_per_step(runs, micro):
    run = hybrid(runs, MICRO_BATCHES=micro)
    require_run(run)
    pattern = step_pattern(run)
    expected_rows = BATCH // micro
    wrong = [p for p in pattern if p[0] != micro or p[1] != [expected_rows] or p[2] != micro]
    assert pattern and not wrong, explain(
        f"with MICRO_BATCHES = {micro}: per step {micro} forward and {micro} backward passes on "
        f"micro-batches of {BATCH} / {micro} = {expected_rows} rows",
        f"{wrong[0][0]} forward passes on {wrong[0][1]} rows and {wrong[0][2]} backward passes "
        "in a step" if wrong else "no optimizer step",
        "split the batch with MICRO_BATCHES (not a fixed number) and run forward + backward "
        "for each micro-batch before optimizer.step()")


@pytest.mark.check("practical10.sync_once_per_step")
def test_gradients_synchronised_once_per_step(runs):
    run = hybrid(runs)
    require_run(run)
    pattern = step_pattern(run)
    wrong = [p for p in pattern if p[3] != 1]
    assert pattern and not wrong, explain(
        "gradients are all-reduced across replicas once per step, after the last micro-batch's "
        "backward (the others run under model.no_sync())",
        f"{wrong[0][3]} synchronising backward pass(es) in a step of {wrong[0][2]} "
        "micro-batches" if wrong else "no optimizer step",
        "wrap all but the last micro-batch's forward + backward in `with model.no_sync():`")


@pytest.mark.check("practical10.batch_size_invariant")
@pytest.mark.parametrize("batch", [32, 64, 128])
def test_pattern_independent_of_batch_size(runs, batch):
    run = hybrid(runs, BATCH_SIZE=batch)
    require_run(run)
    pattern = step_pattern(run)
    expected = (MICRO, [batch // MICRO], MICRO, 1)
    wrong = [p for p in pattern if p != expected]
    assert pattern and not wrong, explain(
        f"with BATCH_SIZE = {batch}: {MICRO} micro-batches of {batch // MICRO} rows, "
        f"{MICRO} backward passes and one synchronisation per step",
        f"{wrong[0][0]} forwards on {wrong[0][1]} rows, {wrong[0][2]} backwards, "
        f"{wrong[0][3]} synchronisations" if wrong else "no optimizer step",
        "derive the micro-batch size from BATCH_SIZE and MICRO_BATCHES")


@pytest.mark.check("practical10.single_process")
def test_single_process_runs(runs):
    run = hybrid(runs, processes=1)
    require_run(run)
    assert run.of("step"), explain("one process (one replica on cuda:0 + cuda:2) trains",
                                   "no optimizer step", "the script must not assume 2 processes")
    assert devices_of_rank(run, 0) == {"cuda:0", "cuda:2"}, explain(
        "the single replica uses cuda:0 and cuda:2", f"it uses {sorted(devices_of_rank(run, 0))}")


@pytest.mark.check("practical10.broken_mp_one_gpu")
def test_broken_variant_uses_one_gpu_per_rank(runs):
    run = hybrid(runs, BROKEN_MP=True)
    require_run(run)
    wrong = {r: sorted(devices_of_rank(run, r)) for r in (0, 1)
             if devices_of_rank(run, r) != {f"cuda:{r}"}}
    assert not wrong, explain(
        "with BROKEN_MP = True both stages of rank r sit on cuda:r (the practical's mistake: "
        "no model parallelism at all)",
        "; ".join(f"rank {r} uses {d}" for r, d in wrong.items()),
        "the BROKEN_MP branch: device1 = device0")


# -- What the answer sheet says, against what the code does -----------------------------------
# practical10/answers.yaml is compared with the grader's default run of the same script: torchrun
# with 2 processes on 4 GPUs, MICRO_BATCHES = 4, BATCH_SIZE = 64 (the sheet's setting).


def process_ranks(run):
    """The ranks that joined the process group (else those that started)."""
    joined = sorted({e.get("rank", 0) for e in run.of("init_process_group")})
    return joined or run.ranks()


def stage_gpus(run, rank):
    """The GPUs of a rank's model in layer order (stage 0's first), each once."""
    order = []
    for event in run.of("placement", rank):
        for layer in event.get("layers", []):
            device = layer.get("device")
            for d in (device if isinstance(device, list) else [device]):
                if gpu_index(d) is not None and gpu_index(d) not in order:
                    order.append(gpu_index(d))
    return order


def one_or_all(values):
    values = sorted(set(values))
    return values[0] if len(values) == 1 else values


@pytest.mark.check("practical10.num_processes_reported")
def test_reported_number_of_processes(runs, answers, agree):
    run = hybrid(runs)
    value = answer_against(answers, "hybrid.num_processes", run)
    ranks = process_ranks(run)
    agree("hybrid.num_processes", value, len(ranks),
          f"runs {len(ranks)} process(es) (ranks {ranks}) under torchrun --nproc-per-node 2")


@pytest.mark.check("practical10.gpus_per_rank_reported")
def test_reported_gpus_per_rank(runs, answers, agree):
    run = hybrid(runs)
    value = answer_against(answers, "hybrid.gpus_per_rank", run)
    used = {r: stage_gpus(run, r) for r in process_ranks(run)}
    agree("hybrid.gpus_per_rank", value, one_or_all(len(g) for g in used.values()),
          "gives " + "; ".join(f"rank {r} {len(g)} GPU(s) ({', '.join(f'cuda:{i}' for i in g)})"
                               for r, g in used.items()))


@pytest.mark.check("practical10.rank_gpus_reported")
def test_reported_gpus_of_each_rank(runs, answers, measured, reported_values, flag):
    run = hybrid(runs)
    rows = rows_by(answer_against(answers, "hybrid.rank_gpus", run), "rank")
    truth = {r: stage_gpus(run, r) for r in process_ranks(run)}
    measured["hybrid.rank_gpus"] = {str(r): g for r, g in truth.items()}
    reported_values["hybrid.rank_gpus"] = {str(r): row.get("gpus") for r, row in rows.items()}
    # Both sides as one line, "rank 0: gpus [0, 2]; rank 1: gpus [1, 3]": equal exactly when
    # every rank lists its GPUs in stage order and no other rank is listed.
    code = per_rank_line(truth, "gpus")
    sheet = per_rank_line({r: gpu_list(row.get("gpus")) or row.get("gpus")
                           for r, row in rows.items()}, "gpus")
    must_agree(answers, "hybrid.rank_gpus", sheet or "no rank", code,
               f"{code} (stage 0's GPU first)", "puts " + "; ".join(
                   f"rank {r}'s stages on {' and '.join(f'cuda:{i}' for i in g) or 'no GPU'}"
                   for r, g in truth.items()), flag)


def micro_batch_pattern(run):
    """(forward passes per step, rows per forward pass) over every rank's steps."""
    patterns = [p for r in process_ranks(run) for p in step_pattern(run, r)]
    return [p[0] for p in patterns], [rows for p in patterns for rows in p[1]]


@pytest.mark.check("practical10.micro_batches_reported")
def test_reported_micro_batches_per_step(runs, answers, agree):
    run = hybrid(runs)
    value = answer_against(answers, "hybrid.micro_batches_per_step", run)
    forwards, _ = micro_batch_pattern(run)
    agree("hybrid.micro_batches_per_step", value, one_or_all(forwards),
          f"runs {', '.join(map(str, sorted(set(forwards)))) or 'no'} forward + backward "
          f"pass(es) per optimizer step with MICRO_BATCHES = {MICRO}")


@pytest.mark.check("practical10.micro_batch_size_reported")
def test_reported_micro_batch_size(runs, answers, agree):
    run = hybrid(runs)
    value = answer_against(answers, "hybrid.micro_batch_size", run)
    _, rows = micro_batch_pattern(run)
    agree("hybrid.micro_batch_size", value, one_or_all(rows),
          f"runs micro-batches of {', '.join(map(str, sorted(set(rows)))) or 'no'} rows "
          f"with BATCH_SIZE = {BATCH} and MICRO_BATCHES = {MICRO}")
