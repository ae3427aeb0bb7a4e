"""Step times and counts where one optimizer per layer is stepped after the same backward (red
team adv53 F4).

`optimizer.step(); optimizer2.step()` (one optimizer per layer of Practical 5's MLP, through
DataParallel) makes two step records per training step, the second joining the first (`joins`:
no pass or backward between, other parameters). The step timer read the second as a step with
no forward pass before it, fell back to the gaps between step records, and took the median of
gaps half of which are the microseconds between the two optimizers: Practical 5's "faster?"
answer was marked against 7e-06 s per step on one GPU and 6e-06 s with DataParallel. Practical
6 and 10 read their times from the same helpers (practical_measures.step_seconds, work_seconds,
compared_step_seconds).

Run here in-process on virtual GPUs, with the course's MLP made small.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import practical_measures as pm
from grader.checks import test_practical5 as p5
from grader.harness.observation import Observation

DIM, HIDDEN, BATCH, STEPS = 8, 16, 64, 4


def trained_per_layer(traced_vnode) -> tuple[Observation, float]:
    """The MLP through DataParallel, one optimizer per layer: the run, and the sum of the
    model's weights after it."""
    events = traced_vnode(3)
    events.append({"event": "start", "rank": 0, "virtual": True})
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM)).cuda()
    model = nn.DataParallel(net)
    x = torch.randn(BATCH, DIM, device="cuda:0")
    y = torch.randn(BATCH, DIM, device="cuda:0")
    optimizers = [torch.optim.SGD(net[i].parameters(), lr=0.01) for i in (0, 2)]
    for _ in range(STEPS):
        for optimizer in optimizers:
            optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        for optimizer in optimizers:
            optimizer.step()
    for event in events:
        event.setdefault("rank", 0)
    weights = sum(p.detach().double().sum().item() for p in net.parameters())
    return Observation(p5.DP, gpus=3, returncode=0, events=list(events), stdout=""), weights


def test_two_optimizers_after_one_backward_are_one_training_step(traced_vnode):
    run, weights = trained_per_layer(traced_vnode)
    records = run.of("step", 0)
    assert len(records) == 2 * STEPS and [bool(r.get("joins")) for r in records] == \
        [False, True] * STEPS, [r.get("joins") for r in records]
    ends = pm.step_ends(run)
    assert ends == records[1::2], (
        f"Expected: {STEPS} training steps, each ended by its second optimizer's step. "
        f"Observed: {[e.get('index') for e in ends]}. Where to look: practical_measures.step_ends")
    work = pm.work_seconds(run)
    gaps = pm.step_seconds(run)
    inner = min(b[pm.SIMULATED_STEP_FIELD] - a[pm.SIMULATED_STEP_FIELD]
                for a, b in zip(records[::2], records[1::2]))
    assert work is not None and len(work) == STEPS - 1 and len(gaps) == STEPS - 1 and \
        min(work) > 10 * inner and min(gaps) > 10 * inner, (
            "Expected: each training step timed from its forward pass to its last optimizer's "
            f"step, well over the {inner:.3g} s between the two optimizers' steps. Observed: "
            f"work {work}, gaps {gaps}. Where to look: practical_measures.work_seconds, "
            "step_seconds")
    median = pm.compared_step_seconds(run)[0]
    assert median == pytest.approx(sorted(work)[len(work) // 2], rel=0.5), (median, work)
    prints = pm.step_prints(run, "params")
    assert len(prints) == STEPS and prints[-1]["sum"] == pytest.approx(weights, rel=1e-9), (
        f"Expected: {STEPS} training steps' weights, the last summing to the model's {weights} "
        "(both layers' optimizers' parts added up, as practical5_single.py's one optimizer "
        f"gives them). Observed: {prints}. Where to look: practical_measures.step_prints")
