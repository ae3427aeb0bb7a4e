"""Practical 6: DistributedDataParallel under torchrun (practical6/practical6_ddp.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import pytest

from grader.checks.support import close, explain, require_run

SCRIPT = "practical6/practical6_ddp.py"
BATCH = 64


@pytest.fixture(scope="module", autouse=True)
def start_runs(node):
    node.prefetch(*(dict(script=SCRIPT, gpus=n, nproc=n) for n in (2, 4, 1)))


def ddp_run(node, processes):
    return node.script(SCRIPT, gpus=processes, nproc=processes)


@pytest.mark.check("practical6.world_size")
@pytest.mark.parametrize("processes", [1, 2, 4])
def test_world_size_is_number_of_processes(node, processes):
    run = ddp_run(node, processes)
    require_run(run)
    sizes = {e.get("rank"): e.get("world_size") for e in run.of("init_process_group")}
    assert len(sizes) == processes and set(sizes.values()) == {processes}, explain(
        f"{processes} process(es), each joining a process group of world size {processes}",
        f"process groups joined by rank(s) {sorted(sizes)} with world sizes "
        f"{sorted(set(sizes.values())) or 'none'}",
        "dist.init_process_group() with torchrun's environment (no hard-coded world_size)")


@pytest.mark.check("practical6.rank_device")
def test_rank_k_uses_gpu_k(node):
    run = ddp_run(node, 2)
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
def test_batch_divided_by_world_size(node, processes):
    run = ddp_run(node, processes)
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
def test_gradients_all_reduced(node):
    run = ddp_run(node, 2)
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
def test_parameters_equal_after_step(node):
    run = ddp_run(node, 2)
    require_run(run)
    prints, steps = per_rank_prints(run, "params")
    assert len(prints) == 2 and steps, explain("both ranks take optimizer steps",
                                               f"steps on ranks {sorted(prints)}")
    unequal = [k for k in range(steps) if not close(prints[0][k]["sum"], prints[1][k]["sum"])]
    assert not unequal, explain(
        "the replicas stay identical: the same parameters on every rank after each step",
        f"the ranks' parameters differ after step {unequal[0] + 1}",
        "DDP broadcasts rank 0's weights when wrapping and averages gradients in backward")
