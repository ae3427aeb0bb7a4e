"""Practical 4's uneven batch (worth no point) where the batch is written in place.

The handout writes Part 1's batch as `torch.randn(64, 1000)` and asks for no constant; the
grader's run on a batch of 63 sets a top-level BATCH_SIZE, and a script without one stops
before it runs ("the constant(s) BATCH_SIZE must be assigned at the top level"). A red team's
adv41 F7 (p4_kadri): that was a failed check, so `pytest grader/` ended "1 failed" beside
every automatic point. It is a skip that says what the grader could not try.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical4 as p4
from grader.harness.observation import Observation

NO_CONSTANT = {"event": "error", "rank": 0, "kind": "constant_not_found",
               "message": "concepts.py: the constant(s) BATCH_SIZE must be assigned at the top "
                          "level of the script (e.g. `BATCH_SIZE = ...`), as in the course "
                          "template; the grader sets them to other values to test your code"}


class Runs:
    """ScriptRuns' interface: the run on a batch of 63 ends with `events` recorded."""

    def __init__(self, returncode, events):
        self.returncode, self.events = returncode, events

    def script(self, **spec):
        assert spec.get("sets") == {"BATCH_SIZE": p4.UNEVEN}, spec
        return Observation(p4.SCRIPT, gpus=2, returncode=self.returncode, events=self.events,
                           sets=spec["sets"])


def test_a_batch_written_in_place_is_a_skip_that_says_what_was_not_tried():
    with pytest.raises(pytest.skip.Exception) as skipped:
        p4.test_uneven_batch_split_and_combined(Runs(3, [NO_CONSTANT]))
    reason = str(skipped.value)
    for phrase in ("the batch size is not a top-level constant BATCH_SIZE",
                   "the handout writes it as 64 in place", "uneven batch of 63 rows only where "
                   "it is one", "worth no point, nothing to fix"):
        assert phrase in reason, f"expected the skip to say {phrase!r}; observed: {reason}"
    assert "must be assigned" not in reason, reason


def test_a_run_that_stops_for_another_reason_still_fails():
    """A crash on the batch of 63 (a split that assumes an even batch) is what the check tells."""
    crash = {"event": "exception", "rank": 0, "type": "RuntimeError", "site": "concepts.py:50",
             "message": "shape '[2, 32, 1000]' is invalid for input of size 63000"}
    with pytest.raises(AssertionError) as raised:
        p4.test_uneven_batch_split_and_combined(Runs(1, [crash]))
    assert "is invalid for input of size 63000" in str(raised.value), raised.value
