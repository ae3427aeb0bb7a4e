"""Practical 6's different_data says why the ranks train on more rows than one batch from what
it saw (a TA's audit28 M3): `get_batch(BATCH_SIZE // 2, ...)` hard-coded trains 32 rows per rank
at 3 and 4 processes too, and the hint "(each rank takes a whole batch?)" was wrong for it."""
from __future__ import annotations

import pytest

from grader.checks import test_practical6 as p6
from grader.harness.observation import Observation


def traced(processes: int, per_rank: int) -> Observation:
    """Each rank's first step on `per_rank` rows of its own (no row on two ranks)."""
    events = []
    for rank in range(processes):
        rows = [[float(rank * 1000 + i), float(i * i + rank)] for i in range(per_rank)]
        events += [{"event": "start", "rank": rank},
                   {"event": "forward", "rank": rank, "n": 1, "step": 0,
                    "batch": [per_rank, 10], "thread": "MainThread", "grad": True, "rows": rows},
                   {"event": "forward_out", "rank": rank, "shape": [per_rank, 10],
                    "thread": "MainThread"},
                   {"event": "forward_used", "rank": rank, "n": 1, "step": 0},
                   {"event": "backward", "rank": rank},
                   {"event": "step", "rank": rank, "index": 1}]
    return Observation("practical6/practical6_ddp.py", gpus=processes, nproc=processes,
                       launcher="torchrun", returncode=0, events=events)


def failure(monkeypatch, per_rank_of, processes) -> str:
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: traced(n, per_rank_of(n)))
    with pytest.raises(AssertionError) as raised:
        p6.test_ranks_train_on_different_rows_of_one_batch(None, processes)
    return str(raised.value)


@pytest.mark.parametrize("processes", [3, 4])
def test_a_fixed_share_is_told_to_divide_by_the_world_size(monkeypatch, processes):
    text = failure(monkeypatch, lambda n: 32, processes)
    assert (f"together the ranks train on {32 * processes} different rows per step, more than "
            "the batch of 64") in text, text
    assert ("each rank trains on 32 rows with 2, 3 and 4 processes alike: the share does not "
            "change with the number of processes: divide by dist.get_world_size(), not a fixed "
            "number") in text, text
    assert "whole batch" not in text, text


def test_a_whole_batch_per_rank_is_still_told_so(monkeypatch):
    text = failure(monkeypatch, lambda n: 64, 2)
    assert "each rank takes a whole batch of 64 rows" in text, text


def test_a_share_that_changes_but_wrongly_gets_no_fixed_number_hint(monkeypatch):
    # BATCH_SIZE // (world_size - 1): 64, 32, 21 rows per rank
    text = failure(monkeypatch, lambda n: 64 // (n - 1), 3)
    assert "together the ranks train on 96 different rows" in text, text
    assert "not a fixed number" not in text and "whole batch" not in text, text
    assert "each rank trains on 32 rows" in text, text


def test_the_right_share_passes(monkeypatch):
    monkeypatch.setattr(p6, "ddp_run", lambda runs, n: traced(n, 64 // n))
    for processes in (2, 3, 4):
        p6.test_ranks_train_on_different_rows_of_one_batch(None, processes)
