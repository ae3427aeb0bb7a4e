"""A DataParallel replica's error is told by its own words and the script's line that raised it.

DataParallel re-raises a replica's error as "Caught RuntimeError in replica 0 on device 0." at
the line that called the wrapper, the original traceback below: a broken `forward` was told as
"stopped with RuntimeError at practical5_dp.py:73: Caught RuntimeError in replica 0 on device 0.",
the student's own error and line nowhere (found grading a broken submission by hand).
"""
from __future__ import annotations

from grader.harness.observation import Observation, replica_error

CAUGHT = ("Caught RuntimeError in replica 0 on device 0.\n"
          "Original Traceback (most recent call last):\n"
          '  File "/usr/lib/python3/site-packages/torch/nn/parallel/parallel_apply.py", line 97, in _worker\n'
          "    output = module(*input, **kwargs)\n"
          '  File "/sandbox/submission/practical5/practical5_dp.py", line 39, in forward\n'
          '    raise RuntimeError("forgot to finish forward")\n'
          "RuntimeError: forgot to finish forward")


def test_the_replicas_error_is_told_at_the_scripts_line_in_its_own_words():
    run = Observation("practical5/practical5_dp.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "RuntimeError", "message": CAUGHT,
         "site": "practical5_dp.py:73"}])
    said = run.problem()
    assert "stopped with RuntimeError at practical5_dp.py:39 (replica 0 on device 0): forgot to " \
           "finish forward" in said, f"expected the replica's own error and line; observed: {said}"


def test_other_errors_and_a_bare_caught_line_are_left_as_they_are():
    assert replica_error(["RuntimeError: shapes differ"], "x.py") is None
    assert replica_error(["Caught RuntimeError in replica 1 on device 1."], "x.py") is None
    assert replica_error(CAUGHT.splitlines(), "other.py") == (" (replica 0 on device 0)",
                                                              ["forgot to finish forward"])
