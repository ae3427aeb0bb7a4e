"""practical_measures.step_batches is worked out once per run and rank, however many of the
first-step helpers and checks ask for it (it walks the run's events), with the same result."""
from __future__ import annotations

import dataclasses

from grader.checks import practical_measures as pm
from grader.harness.observation import Observation


def trained(steps: int, rows: int = 8) -> list[dict]:
    """A made-up trace of one rank: a training pass, a backward and a step, `steps` times."""
    events = []
    for step in range(steps):
        events += [{"event": "forward", "rank": 0, "thread": "MainThread", "step": step,
                    "batch": [rows, 4]},
                   {"event": "backward", "rank": 0}, {"event": "step", "rank": 0}]
    return events


def test_the_first_step_helpers_walk_the_run_once_per_rank(monkeypatch):
    run = Observation("practical6/practical6_ddp.py", gpus=2, returncode=0, events=trained(3))
    expected = pm._step_batches(run, 0)
    walks = []
    walk = pm._step_batches
    monkeypatch.setattr(pm, "_step_batches",
                        lambda run, rank: walks.append(rank) or walk(run, rank))
    pm.first_step_rows(run, 0)
    pm.first_step_output_sums(run, 0)
    pm.first_step_rows_dropped(run, 0)
    assert pm.step_batches(run, 0) == expected
    pm.step_batches(run, 1)
    assert walks == [0, 1], (
        f"expected the run's events walked once per rank (ranks [0, 1]); observed walks for "
        f"ranks {walks} (look: practical_measures.step_batches, Observation.derived)")


def test_a_copy_of_the_run_with_other_events_is_worked_out_afresh():
    run = Observation("practical6/practical6_ddp.py", gpus=2, returncode=0, events=trained(3))
    assert sorted(pm.step_batches(run, 0)) == [0, 1, 2]
    shorter = dataclasses.replace(run, events=trained(1))
    assert sorted(pm.step_batches(shorter, 0)) == [0], (
        f"expected one step's passes in the copy with one step; observed steps "
        f"{sorted(pm.step_batches(shorter, 0))} (look: Observation.derived, init=False)")
