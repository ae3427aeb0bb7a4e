"""Practical 5: nn.DataParallel (practical5/practical5_dp.py against practical5_single.py).

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import statistics

import pytest

from grader.checks.support import chunk_sizes, close, explain, require_run

DP = "practical5/practical5_dp.py"
SINGLE = "practical5/practical5_single.py"
BATCH = 64


@pytest.fixture(scope="module", autouse=True)
def start_runs(node):
    node.prefetch(dict(script=DP, gpus=3), dict(script=DP, gpus=2), dict(script=SINGLE, gpus=1),
                  dict(script=DP, gpus=5))


def forward_scatters(observation):
    """DataParallel's scatters of a forward pass's input (backward scatters gradients too)."""
    return [e for e in observation.of("dp_scatter") if e.get("batch") == BATCH]


@pytest.mark.check("practical5.split_sizes")
@pytest.mark.parametrize("gpus", [2, 3, 5])
def test_batch_split_follows_chunk_rule(node, gpus):
    run = node.script(DP, gpus=gpus)
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
def three_gpus(node):
    return node.script(DP, gpus=3)


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
def test_data_parallel_matches_single_gpu(node):
    single = node.script(SINGLE, gpus=1, like_gpus=2)
    parallel = node.script(DP, gpus=2)
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
def test_real_speedup_with_two_gpus(node):
    single = node.script(SINGLE, gpus=1)
    parallel = node.script(DP, gpus=2)
    require_run(single)
    require_run(parallel)

    def median_step(run):
        times = [e["t"] for e in run.of("step")]
        gaps = [b - a for a, b in zip(times, times[1:])][1:]  # the first step warms up
        return statistics.median(gaps) if gaps else float("nan")

    t1, t2 = median_step(single), median_step(parallel)
    assert t2 < t1, explain("DataParallel on 2 real GPUs takes less time per step than 1 GPU",
                            f"{t1 * 1000:.1f} ms per step on 1 GPU, {t2 * 1000:.1f} ms on 2")
