"""Practical 10: a dummy DDP head beside a model never wrapped (adv52 F2's form in Practical 10).

`head = DDP(nn.Linear(1, 1).to(device1))` called on the micro-batch's output, added to the loss
times 0.0, `head.no_sync()` around all but the last micro-batch, the two-stage model itself never
wrapped: DDP all-reduces the head's two numbers once per step, in the last micro-batch's
backward, just where the reference's all-reduce is, and `sync_once_per_step` gave its 1.5
points (the whole form 10 of 12, the reference's score). The step records now say which of the
stepped parameters DDP's buckets held (`synced`, grader/vgpu/synced_grads.py); a step whose
buckets held none of them has no synchronising backward.

The checks run here on traces written by hand (test_practical10_non_solutions.traced).
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical10 as p10
from tests.grading.test_practical10_non_solutions import Handout, failure, said_all, traced


class HeldHandout(Handout):
    """The reference's loop, its DDP buckets holding `held` of the stepped parameters."""

    def __init__(self, held):
        super().__init__("micro")
        self.held = held

    def run(self, processes=2, **sets):
        wanted = {**p10.DEFAULTS, **sets}
        run = traced(self.style, wanted["BATCH_SIZE"], wanted["MICRO_BATCHES"], processes)
        for event in run.events:
            if event.get("event") == "step":
                event.update(synced=self.held, synced_elements=self.held)
        return run


def test_an_all_reduce_of_a_dummy_head_earns_no_sync_point():
    text = failure(p10.test_gradients_synchronised_once_per_step, HeldHandout(0.0), 64, 4)
    said_all(text, "0 of them all-reducing the gradients",
             "DDP all-reduced only a module of other parameters than the model the optimizer "
             "steps")


@pytest.mark.parametrize("batch, micro", p10.CONFIGS)
def test_the_wrapped_models_all_reduce_keeps_its_sync_point(batch, micro):
    p10.test_gradients_synchronised_once_per_step(HeldHandout(1.0), batch, micro)
