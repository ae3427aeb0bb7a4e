"""A check that failed on a run that stopped early says where it stopped (a TA's audit, audit29:
Practical 4's batch-63 run crashed filling its output after the first chunk; the check named
only "1 forward pass(es) on parts of the batch, of [32] rows" and the student could not see why
the second chunk never ran).

The checks' hook (grader/checks/conftest.py `pytest_runtest_call`) is driven here as pytest
drives a new-style wrapper, around Practical 4's uneven-batch check run on a trace written by
hand, shaped as the virtual GPUs write it.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader.checks import conftest as checks_conftest
from grader.checks import test_practical4 as p4
from grader.checks.support import AnswerNotRead
from grader.harness.observation import Observation

CHECK_MARKER = SimpleNamespace(args=("practical4.uneven_batch",))
CRASH = ("The expanded size of the tensor (31) must match the existing size (32) at "
         "non-singleton dimension 0")
ROWS = [[float(i + 1), float((i + 1) ** 2)] for i in range(p4.UNEVEN)]


def forward(rows):
    return [{"event": "forward", "rank": 0, "thread": "MainThread", "step": 0, "grad": True,
             "batch": [len(rows), p4.IN_DIM], "rows": rows, "module": "Sequential",
             "input_device": "cuda:0"},
            {"event": "forward_out", "rank": 0, "thread": "MainThread", "device": "cuda:0",
             "shape": [len(rows), p4.OUT_DIM], "rows": rows}]


def stopped_after_first_chunk() -> Observation:
    """Part 1 on the 63 rows, the first chunk's pass, then the fill of its 32 rows into a slice
    of 31 raised."""
    events = forward(ROWS) + forward(ROWS[:32])
    events.append({"event": "exception", "rank": 0, "type": "RuntimeError", "message": CRASH,
                   "site": "concepts.py:64"})
    return Observation(p4.SCRIPT, gpus=2, sets={"BATCH_SIZE": p4.UNEVEN}, returncode=1,
                       events=events, stderr=f"RuntimeError: {CRASH}\n")


class HandingRuns:
    """ScriptRuns' interface as the hook sees it: what `script` hands out is `handed`."""

    def __init__(self, observation: Observation):
        self.observation = observation
        self.handed = None

    def script(self, script, **_):
        if self.handed is not None:
            self.handed.append(self.observation)
        return self.observation


def run_check(check, **funcargs):
    """`check` run inside the hook, as pytest runs a check; the exception it ends with."""
    # A Practical 4 check's item: its marker names no HW3 check (the hook asks, conftest.py
    # `_task3_elsewhere`).
    item = SimpleNamespace(funcargs=funcargs, get_closest_marker=lambda name: CHECK_MARKER,
                           config=SimpleNamespace(stash={}, getoption=lambda name: None))
    hook = checks_conftest.pytest_runtest_call(item)
    next(hook)
    try:
        check()
    except BaseException as raised:   # noqa: BLE001 - handed to the hook as pytest would
        with pytest.raises(BaseException) as outcome:
            hook.throw(raised)
        return outcome.value
    with pytest.raises(StopIteration):
        hook.send(None)
    return None


def test_a_check_failed_on_a_run_that_stopped_says_where_it_stopped():
    runs = HandingRuns(stopped_after_first_chunk())
    failure = run_check(lambda: p4.test_uneven_batch_split_and_combined(runs), runs=runs)
    message = str(failure)
    assert isinstance(failure, AssertionError)
    assert "1 forward pass(es) on parts of the batch, of [32] rows" in message, message
    assert message.endswith(
        "Observed: practical4/concepts.py (2 GPU(s), BATCH_SIZE=63) stopped with RuntimeError "
        f"at concepts.py:64: {CRASH}"), message
    assert runs.handed is None, "the runs handed to a check are forgotten when it ends"


def test_the_stop_is_said_once_where_the_check_said_it():
    runs = HandingRuns(stopped_after_first_chunk())
    said = f"Expected: a run to its end\nObserved: {runs.observation.problem()}"

    def check():
        runs.script(p4.SCRIPT)
        raise AssertionError(said)
    assert str(run_check(check, runs=runs)) == said


def test_a_run_given_by_a_fixture_is_said_too():
    run = stopped_after_first_chunk()

    def check():
        raise AssertionError("Expected: two chunk passes\nObserved: one")
    assert str(run_check(check, two_gpus=run)).endswith(run.problem())


def test_nothing_is_added_to_a_run_that_ended_or_to_an_answer_waiting_for_a_person():
    ended = Observation(p4.SCRIPT, gpus=2, returncode=0, events=[])

    def failing():
        raise AssertionError("Expected: two chunk passes\nObserved: one")
    assert str(run_check(failing, run=ended)) == "Expected: two chunk passes\nObserved: one"

    unread = AnswerNotRead("your answer could not be read", "q1")

    def unread_answer():
        raise unread
    assert run_check(unread_answer, run=stopped_after_first_chunk()) is unread
    assert run_check(lambda: None, run=stopped_after_first_chunk()) is None
