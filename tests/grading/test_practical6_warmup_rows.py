"""Practical 6: warm-up passes before training neither skip `different_data` nor hide the bug it
looks for (a red team's adv31 H3).

40 warm-up forward passes with autograd on (`model(torch.randn(...))`, as many tutorials write
a CUDA warm-up) spent a process's 64 records of rows before the training pass ran: its rows
went unrecorded, `different_data` was skipped, and a skipped check left the maximum (P6 8.75 of
11, while Moodle's maximum stays 12). The same skip hid a real bug, every rank training on the
same rows (6 of 11, the data item "1.0/1.0"). A pass whose rows could not be recorded as it
ran now has them recorded when a backward first reaches it, from a budget of their own
(grader/vgpu/rows.py `reached`): passes no backward reaches (warm-ups) cannot spend it. Where
rows are still not known, the ranks' training outputs decide (the same weights on the same rows
give the same output): never a skip.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import practical_measures as pm
from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from grader.vgpu import rows as vrows

IN, OUT, SHARE = 12, 5, 32
WARM_UPS = 40


def observed(events) -> Observation:
    return Observation(p6.SCRIPT, gpus=2, returncode=0, events=list(events), stdout="")


def warm_up_then_train(warm_ups=WARM_UPS, steps=2):
    """One rank's training, after `warm_ups` passes on random inputs with autograd on."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    for _ in range(warm_ups):
        model(torch.randn(SHARE, IN, device="cuda:0"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(SHARE, IN).to("cuda:0")
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()


def as_rank(events, rank, other_rows=False):
    """Rank 0's events as another rank's: the same rows (every rank given the same data), or,
    `other_rows`, every recorded row and output moved off rank 0's (a rank given its own)."""
    copied = []
    for event in events:
        event = {**event, "rank": rank}
        if other_rows and event.get("rows"):
            event["rows"] = [[3 * s + 7.0, 9 * q + 1.0] for s, q in event["rows"]]
        if other_rows and isinstance(event.get("sum"), float):
            event["sum"] += 1000.0
        copied.append(event)
    return copied


def test_warm_up_passes_leave_the_training_passs_rows_recorded(traced_vnode):
    events = traced_vnode(1)
    warm_up_then_train()
    run = observed(events)
    assert len(pm.first_step_rows(run, 0)) == SHARE
    assert not pm.first_step_rows_dropped(run, 0)


def test_passes_no_backward_reaches_spend_no_record_of_the_training_passes(traced_vnode):
    """Far more warm-up passes than records: the trace stays bounded, the training pass's rows
    are still there."""
    events = traced_vnode(1)
    warm_up_then_train(warm_ups=4 * vrows.MAX_RECORDS)
    run = observed(events)
    assert len(pm.first_step_rows(run, 0)) == SHARE
    with_rows = [e for e in events if e.get("rows")]
    assert len(with_rows) <= vrows.MAX_RECORDS + 2, len(with_rows)


def check_on(monkeypatch, events):
    run = observed(events)
    monkeypatch.setattr(p6, "ddp_run", lambda runs, processes: run)
    try:
        p6.test_ranks_train_on_different_rows_of_one_batch(None, 2)
    except pytest.skip.Exception as skipped:   # a skip had left the maximum: no verdict
        raise RuntimeError(f"the check was skipped: {skipped}") from None


def test_the_same_rows_on_every_rank_is_charged_after_warm_ups(traced_vnode, monkeypatch):
    events = traced_vnode(1)
    warm_up_then_train()
    rank0 = [e for e in events if e.get("rank", 0) == 0]
    with pytest.raises(AssertionError) as failure:
        check_on(monkeypatch, rank0 + as_rank(rank0, 1))
    assert "the same data on every rank" in str(failure.value), str(failure.value)


def test_different_rows_on_each_rank_pass_after_warm_ups(traced_vnode, monkeypatch):
    events = traced_vnode(1)
    warm_up_then_train()
    rank0 = [e for e in events if e.get("rank", 0) == 0]
    check_on(monkeypatch, rank0 + as_rank(rank0, 1, other_rows=True))


# -- rows still not known: the outputs decide, never a skip ----------------------------------------


def unrecorded(rank, out_sum, rows=None):
    """A rank's training pass whose rows were not recorded (or, `rows`, were), its output's sum
    recorded as every forward_out's is."""
    forward = {"event": "forward", "rank": rank, "n": 1, "step": 0, "batch": [SHARE, 10],
               "thread": "MainThread", "grad": True, "module": "Sequential"}
    forward.update({"rows": rows} if rows else {"rows_dropped": True})
    return [{"event": "start", "rank": rank}, forward,
            {"event": "forward_out", "rank": rank, "shape": [SHARE, 10], "sum": out_sum,
             "thread": "MainThread", "rows_dropped": True},
            {"event": "forward_used", "rank": rank, "n": 1, "step": 0},
            {"event": "backward", "rank": rank},
            {"event": "step", "rank": rank, "index": 1}]


def test_rows_not_recorded_on_any_rank_are_decided_by_the_outputs(monkeypatch):
    check_on(monkeypatch, unrecorded(0, 12.5) + unrecorded(1, -3.25))
    with pytest.raises(AssertionError) as failure:
        check_on(monkeypatch, unrecorded(0, 12.5) + unrecorded(1, 12.5))
    text = str(failure.value)
    assert "rank 1's training pass gives the same output as rank 0's" in text, text
    assert "the same data on every rank" in text, text


def test_a_rank_whose_rows_were_not_recorded_is_compared_by_its_output(monkeypatch):
    rows = [[float(i), float(i * i)] for i in range(SHARE)]
    check_on(monkeypatch, unrecorded(0, 12.5, rows=rows) + unrecorded(1, -3.25))
    with pytest.raises(AssertionError) as failure:
        check_on(monkeypatch, unrecorded(0, 12.5, rows=rows) + unrecorded(1, 12.5))
    assert "the same data on every rank" in str(failure.value), str(failure.value)
