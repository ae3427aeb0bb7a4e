"""A failed run is explained by the error that ended it, not by another rank's report of it."""
from grader.harness.observation import Observation

PEER = ("Got the following error when running the callback: RuntimeError: [gloo/transport/tcp/"
        "pair.cc:553] Connection closed by peer [127.0.0.1]:62643. This is typically caused by "
        "a remote worker crashing.")


def _failed_run(*exceptions) -> Observation:
    observation = Observation(script="practical6/practical6_ddp.py", gpus=2, nproc=2,
                              launcher="torchrun")
    observation.returncode = 1
    observation.events = [dict(event="exception", **e) for e in exceptions]
    return observation


def test_the_rank_that_crashed_is_named_not_the_one_it_left_waiting():
    run = _failed_run(
        {"rank": 0, "type": "RuntimeError", "site": "practical6_ddp.py:87", "t": 0.52,
         "message": PEER},
        {"rank": 1, "type": "ValueError", "site": "practical6_ddp.py:80", "t": 0.15,
         "message": "module is on cuda:0, device_ids is [1]"})
    problem = run.problem()
    assert "ValueError at practical6_ddp.py:80" in problem and "Connection closed" not in problem, (
        f"expected the crashing rank's ValueError; observed: {problem}")


def test_without_a_peer_report_the_earliest_error_comes_first():
    run = _failed_run(
        {"rank": 0, "type": "KeyError", "site": "a.py:9", "t": 0.9, "message": "'x'"},
        {"rank": 1, "type": "IndexError", "site": "a.py:3", "t": 0.2, "message": "out of range"})
    assert "IndexError at a.py:3" in run.problem()
