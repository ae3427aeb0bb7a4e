"""Practical 5: gradient accumulation through DataParallel (red team adv53 F5).

`optimizer.zero_grad()`, then two `loss_fn(model(x), y) / 2; loss.backward()` on the whole
batch, then `optimizer.step()`: every call of the wrapper scatters the batch of 64 as the
chunk rule says, but the split check read all the first step's replica passes as one call's
([32, 32, 32, 32] against [32, 32]): 7.25 of 12 where a TA gives 9.25. The replica passes
are now read call by call. Accumulating over two halves of the batch (two calls on 32 rows)
changes the batch the handout asks to observe and still fails.

The check runs here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical5 as p5
from grader.harness.observation import Observation

STEPS = 2


def wrapper_call(step: int, rows: int, gpus: int) -> list[dict]:
    """One call of the DataParallel wrapper on `rows` rows: its pass, its scatter by the chunk
    rule, a replica pass per GPU."""
    chunk = -(-rows // gpus)
    sizes = [min(chunk, rows - chunk * i) for i in range(gpus) if rows - chunk * i > 0]
    return [{"event": "forward", "rank": 0, "thread": "MainThread", "grad": True,
             "step": step, "batch": [rows, 512], "input_device": "cuda:0",
             "module": "DataParallel"},
            {"event": "dp_scatter", "rank": 0, "batch": rows, "sizes": sizes},
            *({"event": "forward", "rank": 0, "thread": f"Thread-{i} (_worker)", "nested": True,
               "grad": True, "step": step, "batch": [size, 512], "input_device": f"cuda:{i}",
               "module": "MLP"} for i, size in enumerate(sizes)),
            {"event": "backward", "rank": 0},
            # backward scatters the gathered output's gradient: no replica pass of its own
            {"event": "dp_scatter", "rank": 0, "batch": rows, "sizes": sizes}]


def accumulated(gpus: int, calls_rows: list[int]) -> Observation:
    """A run whose every step calls the wrapper once per entry of `calls_rows`, then steps."""
    events = [{"event": "start", "rank": 0, "virtual": True}]
    for step in range(STEPS):
        for rows in calls_rows:
            events += wrapper_call(step, rows, gpus)
        events.append({"event": "step", "rank": 0, "index": step + 1,
                       "grads": {"sum": 1.0, "sumsq": 2.0}, "params": {"sum": 5.0, "sumsq": 9.0}})
    return Observation(p5.DP, gpus=gpus, returncode=0, events=events, stdout="")


class Handout:
    """HandoutRuns' `dp(gpus)`: the DataParallel script's run on N GPUs."""

    def __init__(self, calls_rows):
        self.calls_rows = calls_rows

    def dp(self, gpus):
        return accumulated(gpus, self.calls_rows)


@pytest.mark.parametrize("gpus", [2, 3, 5])
@pytest.mark.parametrize("calls_rows", [[64], [64, 64], [64, 64, 64]],
                         ids=["one-call", "two-whole-batches", "three-whole-batches"])
def test_each_call_on_the_whole_batch_splits_by_the_rule(gpus, calls_rows):
    try:
        p5.test_batch_split_follows_chunk_rule(Handout(calls_rows), gpus)
    except AssertionError as failed:
        pytest.fail(f"Expected: {len(calls_rows)} call(s) of the wrapper per step on the whole "
                    f"batch, each split as the chunk rule says, pass on {gpus} GPUs. Observed: "
                    f"{failed}. Where to look: test_practical5.replica_rows_by_call")


@pytest.mark.parametrize("gpus", [2, 3])
def test_accumulating_over_half_batches_still_fails(gpus):
    with pytest.raises(AssertionError, match="no scatter of a batch of 64"):
        p5.test_batch_split_follows_chunk_rule(Handout([32, 32]), gpus)


@pytest.mark.parametrize("gpus", [2, 3])
def test_a_half_batch_call_beside_the_whole_one_fails(gpus):
    """The whole batch through the wrapper, then half of it again in the same step: the second
    call's replicas run other chunks than the rule's for the batch of 64."""
    expected = p5.chunk_sizes(64, gpus)
    half = p5.chunk_sizes(32, gpus)
    with pytest.raises(AssertionError) as failed:
        p5.test_batch_split_follows_chunk_rule(Handout([64, 32]), gpus)
    said = str(failed.value)
    assert f"replica forward passes on {sorted(half, reverse=True)} rows" in said and \
        str(expected) in said, said
