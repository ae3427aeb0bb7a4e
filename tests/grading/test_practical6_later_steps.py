"""Practical 6: the ranks' rows are compared at every optimizer step, not the first only.

Rows were recorded before the first step only, and later steps were read by their rows'
count: a red team's forger gave each rank its share at the first step and, from the second on,
the whole batch's first BATCH_SIZE // world_size rows on every rank (the same data on all
ranks, as many rows) and kept different_data (p6_F_same_later 9.75 of 12, as the reference).
Now a pass's rows after the first step are recorded as a backward first reaches it
(`step_rows`, grader/vgpu/rows.py) and every step's rows are compared across the ranks
(grader/checks/step_rows.py). The runs below are one rank's training on a virtual GPU; the
other ranks are the same run, its rows moved to rows of their own (an honest run), or moved
at the first step only (the forger: the same rows on every rank after it).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.checks import test_practical6 as p6
from grader.checks.step_rows import rows_per_step
from grader.harness.observation import Observation
from grader.vgpu import rows as vrows
from tests.grading.test_practical6_accumulated_share import different_data_check, own_rows
from tests.grading.test_practical6_warmup_rows import as_rank

IN, OUT, SHARE, STEPS = 12, 5, 32, 3


def train(new_rows_each_step=True, halves=False, rows=SHARE):
    """One rank's steps on `rows` rows, new rows each step (a DataLoader's batches, a slice of
    each step's global batch) or one batch throughout (the handout's); `halves`: two halves
    accumulated into each step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(rows, IN).to("cuda:0")
    for _ in range(STEPS):
        if new_rows_each_step:
            x = torch.randn(rows, IN).to("cuda:0")
        optimizer.zero_grad()
        for part in (x.chunk(2) if halves else [x]):
            (model(part).pow(2).mean() / (2 if halves else 1)).backward()
        optimizer.step()


def ranks_run(traced_vnode, processes=2, same_after=None, **style) -> Observation:
    """`processes` ranks; `same_after`: every rank the same rows (and so the same outputs)
    after that many steps."""
    events = traced_vnode(1)
    train(rows=p6.BATCH // processes, **style)
    rank0 = [{"event": "start", "rank": 0}] + [e for e in events if e.get("rank", 0) == 0]
    everyone = list(rank0)
    for rank in range(1, processes):
        stepped = 0
        for event, moved in zip(rank0, as_rank(rank0, rank, True)):
            # From then on, rank 0's very records: its rows, its outputs.
            everyone.append({**event, "rank": rank} if same_after and stepped >= same_after
                            else own_rows(moved, rank))
            stepped += event.get("event") == "step"
    return Observation(p6.SCRIPT, gpus=processes, nproc=processes, launcher="torchrun",
                       returncode=0, events=everyone, stdout="")


STYLES = {
    "new rows each step": dict(new_rows_each_step=True),
    "new rows each step, 2 accumulated halves": dict(new_rows_each_step=True, halves=True),
    "one batch throughout (the handout's)": dict(new_rows_each_step=False),
}


@pytest.mark.parametrize("style", list(STYLES.values()), ids=list(STYLES))
def test_every_steps_rows_are_recorded(traced_vnode, style):
    run = ranks_run(traced_vnode, **style)
    steps = rows_per_step(run, 0)
    assert sorted(steps) == list(range(STEPS)) and all(
        rows is not None and len(rows) == SHARE for rows in steps.values()), (
        f"expected the {SHARE} rows of each of the {STEPS} steps known; observed "
        f"{ {s: None if r is None else len(r) for s, r in steps.items()} } "
        "(grader/vgpu/rows.py `step_rows`, grader/checks/step_rows.py)")


@pytest.mark.parametrize("processes", [2, 3])
@pytest.mark.parametrize("style", list(STYLES.values()), ids=list(STYLES))
def test_rows_of_their_own_at_every_step_pass(traced_vnode, monkeypatch, style, processes):
    run = ranks_run(traced_vnode, processes, **style)
    different_data_check(monkeypatch, run, processes)


@pytest.mark.parametrize("style", list(STYLES.values())[:2], ids=list(STYLES)[:2])
def test_the_same_rows_on_every_rank_after_the_first_step_fail(traced_vnode, monkeypatch,
                                                               style):
    run = ranks_run(traced_vnode, same_after=1, **style)
    with pytest.raises(AssertionError) as failure:
        different_data_check(monkeypatch, run, 2)
    said = "at step 2, rank 1 trains on 32 of its 32 rows that rank 0 also trains on"
    assert said in str(failure.value), (
        f"expected different_data to fail saying {said!r}; observed:\n{failure.value}")


@pytest.mark.parametrize("same_after", [None, 2], ids=["rows of their own", "the same rows"])
def test_a_later_step_whose_rows_were_not_recorded_is_compared_by_its_outputs(
        traced_vnode, monkeypatch, same_after):
    """One record of rows a budget (grader/vgpu/rows.py): the first step's and the second's
    rows are recorded, the third's not; the ranks' outputs at the third step decide, as the
    first step's do where its rows were not recorded (same_outputs)."""
    monkeypatch.setattr(vrows, "MAX_RECORDS", 1)
    run = ranks_run(traced_vnode, same_after=same_after)
    assert rows_per_step(run, 0)[STEPS - 1] is None, "expected the last step's rows unrecorded"
    if same_after is None:
        different_data_check(monkeypatch, run, 2)
        return
    with pytest.raises(AssertionError) as failure:
        different_data_check(monkeypatch, run, 2)
    said = "at step 3, rank 1's training pass gives the same output as rank 0's"
    assert said in str(failure.value), (
        f"expected different_data to fail saying {said!r}; observed:\n{failure.value}")
