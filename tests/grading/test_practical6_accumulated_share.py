"""Practical 6: a rank's share is the rows it trains on per optimizer step (adv37 F6).

A student who takes the handout's `BATCH_SIZE // dist.get_world_size()` rows and runs them as
micro-batches whose gradients accumulate into one optimizer step (no_sync() on all but the
last, the loss divided by their number: Practical 10's pattern carried back) trains each rank
on its share per step. The share was read from the first training pass alone, so 2 halves of
32 rows were told "rank 0 trains on 16 rows" (per_rank_batch 0/1, the answer 32 0/0.25: 8.25
of 12 against the reference's 9.75). The loops below run one rank's first steps on a virtual
GPU as each style writes them; the other ranks are the same run on rows of their own.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from grader.answers.collect import Answers
from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation
from tests.grading.test_practical6_warmup_rows import as_rank

IN, OUT = 12, 5


def train(rows: int, chunks: list[int] | int, steps: int = 2, repeat_first=False,
          flipped=False, ones=False, warm_up=False, later_rows=None, spare_zero_grad=False,
          zero_after_forward=False):
    """One rank's training on `rows` rows of its own: each step one optimizer step after a
    forward and backward per micro-batch (`chunks`: their number, torch.chunk's split, or
    their row counts); `repeat_first`: every micro-batch runs on the first one's rows;
    `flipped`: each micro-batch is followed by one on its rows with the columns reversed
    (adv40 F3); `ones`: constant rows (adv40 H5); `warm_up`: an untimed forward and backward
    first, its gradients zeroed without a step (adv40 H4); `later_rows`: the steps after the
    first train on that many rows (adv40 F4); `spare_zero_grad`: a spare optimizer's
    zero_grad between the micro-batches (it throws none of the model's gradients away);
    `zero_after_forward`: one pass, optimizer.zero_grad() between its forward and backward."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, 16), nn.ReLU(), nn.Linear(16, OUT)).to("cuda:0")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    spare = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1)
    if warm_up:
        model(torch.randn(rows, IN, device="cuda:0")).pow(2).mean().backward()
        optimizer.zero_grad()
    for step in range(steps):
        n = later_rows if later_rows and step else rows
        x = (torch.ones(n, IN) if ones else torch.randn(n, IN)).to("cuda:0")
        parts = x.chunk(chunks) if isinstance(chunks, int) else x.split(chunks)
        runs = [p for part in parts for p in ([part, part.flip(1)] if flipped else [part])]
        if zero_after_forward:
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            continue
        optimizer.zero_grad()
        for part in runs:
            (model(parts[0] if repeat_first else part).pow(2).mean() / len(runs)).backward()
            if spare_zero_grad:
                spare.zero_grad()
        optimizer.step()


def ranks_run(traced_vnode, processes: int, **style) -> Observation:
    """The run of `processes` ranks, each training as `style` says on rows of its own."""
    events = traced_vnode(1)
    train(**style)
    return ranks_of(events, processes)


def ranks_of(events: list[dict], processes: int) -> Observation:
    """One rank's traced training as the run of `processes` ranks, each on rows of its own."""
    # The trace of a process torchrun starts opens with its `start` record.
    rank0 = [{"event": "start", "rank": 0}] + [e for e in events if e.get("rank", 0) == 0]
    everyone = rank0 + [own_rows(e, rank) for rank in range(1, processes)
                        for e in as_rank(rank0, rank, True)]
    return Observation(p6.SCRIPT, gpus=processes, nproc=processes, launcher="torchrun",
                       returncode=0, events=everyone, stdout="")


def own_rows(event: dict, rank: int) -> dict:
    """as_rank's rows of rank 1 moved again for rank 2 and on: every rank rows of its own."""
    if event.get("rows") and rank > 1:
        event["rows"] = [[s + 100.0 * rank, q + 1e4 * rank] for s, q in event["rows"]]
    if isinstance(event.get("sum"), float):
        event["sum"] += 100.0 * rank
    return event


def share_check(monkeypatch, run, processes):
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: run)
    p6.test_each_rank_trains_on_its_share(None, processes)


# (processes, rows per rank, micro-batches): the handout's share, whole or accumulated.
SHARE_STYLES = {
    "one pass on the share (the handout's)": (2, 32, 1),
    "2 halves under no_sync, one step (adv37 F6)": (2, 32, 2),
    "4 micro-batches of 8": (2, 32, 4),
    "torch.split into 20 + 12 rows": (2, 32, [20, 12]),
    "3 processes: 21 rows as 11 + 10": (3, 21, 2),
    "4 processes: 16 rows as 8 + 8": (4, 16, 2),
    "constant rows (torch.ones) as 2 halves (adv40 H5)": (2, 32, 2, dict(ones=True)),
    "an untimed warm-up, gradients zeroed, no step (adv40 H4)": (2, 32, 1, dict(warm_up=True)),
    "warm-up, then 2 halves": (2, 32, 2, dict(warm_up=True)),
    "zero_grad between the forward and its backward": (2, 32, 1,
                                                       dict(zero_after_forward=True)),
}


@pytest.mark.parametrize("processes, rows, chunks, more",
                         [(*style, {})[:4] for style in SHARE_STYLES.values()],
                         ids=list(SHARE_STYLES))
def test_the_share_trained_per_step_passes_however_it_is_cut(traced_vnode, monkeypatch,
                                                             processes, rows, chunks, more):
    run = ranks_run(traced_vnode, processes, rows=rows, chunks=chunks, **more)
    assert p6.first_batches(run) == {r: rows for r in range(processes)}, (
        f"expected every rank to train on its {rows} rows per optimizer step ({chunks} "
        f"micro-batch(es)); observed {p6.first_batches(run)} (test_practical6.first_batches)")
    share_check(monkeypatch, run, processes)


# (processes, rows per rank, micro-batches, repeat_first, what the feedback says)
NOT_THE_SHARE = {
    "the whole batch on every rank": (2, 64, 1, False, "rank 0 trains on 64 rows"),
    "the whole batch in 2 accumulated halves": (2, 64, 2, False, "rank 0 trains on 64 rows"),
    "half the share, no accumulation": (2, 16, 1, False, "rank 0 trains on 16 rows"),
    "the first half run twice, the second never": (2, 32, 2, True, "rank 0 trains on 16 rows"),
    "the share and its columns reversed, accumulated (adv40 F3)":
        (2, 32, 1, dict(flipped=True), "rank 0 trains on 64 rows"),
    "the share in halves, each also reversed (adv40 F3)":
        (2, 32, 2, dict(flipped=True), "rank 0 trains on 64 rows"),
    "the share at the first step, the whole batch after it (adv40 F4)":
        (2, 32, 1, dict(later_rows=64), "rank 0 trains on 64 rows per optimizer step (at its "
                                        "step 2)"),
    "the whole batch in halves, a spare optimizer's zero_grad between":
        (2, 64, 2, dict(spare_zero_grad=True), "rank 0 trains on 64 rows"),
}


@pytest.mark.parametrize("processes, rows, chunks, style, said", NOT_THE_SHARE.values(),
                         ids=list(NOT_THE_SHARE))
def test_another_share_per_step_still_fails(traced_vnode, monkeypatch, processes, rows, chunks,
                                            style, said):
    style = style if isinstance(style, dict) else dict(repeat_first=style)
    run = ranks_run(traced_vnode, processes, rows=rows, chunks=chunks, **style)
    with pytest.raises(AssertionError) as failure:
        share_check(monkeypatch, run, processes)
    text = str(failure.value)
    assert said in text and "per optimizer step" in text, (
        f"expected the share check to fail saying {said!r} per optimizer step; observed:\n{text}")


def test_the_answer_about_the_share_is_compared_with_the_rows_per_step(traced_vnode,
                                                                        monkeypatch):
    """The student's 32 for 2 halves of 16 is their code's share per step (it had been 0/0.25)."""
    run = ranks_run(traced_vnode, 2, rows=32, chunks=2)
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: run)
    answers = Answers("practical6", "sheet", values={"ddp.per_rank_batch": 32},
                      origin={"ddp.per_rank_batch": "practical6/answers.yaml"})
    told = []

    def agree(qid, value, truth, said, **kwargs):
        told.append((qid, value, truth, said))

    p6.test_reported_per_rank_batch(None, answers, agree)
    assert [(q, v, t) for q, v, t, _ in told] == [("ddp.per_rank_batch", 32, 32)], (
        f"expected the answer 32 compared with the code's 32 rows per step; observed {told}")
    assert "32 rows per optimizer step" in told[0][3], told[0][3]


def different_data_check(monkeypatch, run, processes):
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: run)
    p6.test_ranks_train_on_different_rows_of_one_batch(None, processes)


@pytest.mark.parametrize("processes, rows, more", [
    (2, 32, dict(warm_up=True)),     # adv40 H4: the warm-up's rows are none of the step's
    (3, 22, {}),                     # adv40 H6: ceil(64 / 3), as per_rank_batch accepts
    (2, 32, dict(ones=True)),        # adv40 H5: each rank its own constant rows
], ids=["warm-up zeroed", "ceil share on 3", "constant rows per rank"])
def test_different_rows_per_rank_pass(traced_vnode, monkeypatch, processes, rows, more):
    run = ranks_run(traced_vnode, processes, rows=rows, chunks=2, **more)
    different_data_check(monkeypatch, run, processes)


@pytest.mark.parametrize("processes, rows, more, said", [
    (2, 32, dict(flipped=True), "128 different rows"),   # adv40 F3
    (3, 23, {}, "69 different rows"),                    # more than the padded 66
    (2, 32, dict(later_rows=64), "128 rows per optimizer step at a later step"),   # adv40 F4
], ids=["share and its reversal", "23 rows on 3", "the whole batch after the first step"])
def test_too_many_rows_per_step_still_fail_different_data(traced_vnode, monkeypatch, processes,
                                                          rows, more, said):
    run = ranks_run(traced_vnode, processes, rows=rows, chunks=2, **more)
    with pytest.raises(AssertionError) as failure:
        different_data_check(monkeypatch, run, processes)
    assert said in str(failure.value), (
        f"expected different_data to fail saying {said!r}; observed:\n{failure.value}")
