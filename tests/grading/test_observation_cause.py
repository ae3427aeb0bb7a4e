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


# -- which ranks raised it ------------------------------------------------------------------------
DEVICES = "Expected all tensors to be on the same device, but found at least two devices"


def _ranks_started(run: Observation, ranks) -> Observation:
    run.events = [{"event": "start", "rank": rank} for rank in ranks] + run.events
    return run


def test_the_ranks_that_raised_are_named_and_the_others_said_to_raise_nothing():
    """A student's DDP(model, device_ids=[0]) on every rank (finding 6b): rank 1's model is on
    cuda:1, its forward fails, rank 0 only loses its peer. The crash read as every rank's."""
    run = _ranks_started(_failed_run(
        {"rank": 1, "type": "RuntimeError", "site": "practical6_ddp.py:42", "t": 0.61,
         "message": DEVICES},
        {"rank": 0, "type": "RuntimeError", "site": "practical6_ddp.py:87", "t": 0.9,
         "message": PEER}), (0, 1))
    problem = run.problem()
    assert ("stopped with RuntimeError at practical6_ddp.py:42 on rank 1 only (rank 0 raised no "
            f"error of its own): {DEVICES}") in problem, problem


def test_ddp_device_ids_naming_another_gpu_than_the_models_is_pointed_at():
    """The forward pass's "two devices" error is far from the DDP line at fault: the run says
    which rank wrapped a model on cuda:1 with device_ids=[0], and what to write instead."""
    run = _ranks_started(_failed_run(
        {"rank": 1, "type": "RuntimeError", "site": "practical6_ddp.py:42", "t": 0.61,
         "message": DEVICES},
        {"rank": 0, "type": "RuntimeError", "site": "practical6_ddp.py:87", "t": 0.9,
         "message": PEER}), (0, 1))
    run.events += [{"event": "ddp_wrap", "rank": rank, "param_devices": [f"cuda:{rank}"],
                    "device_ids": ["0"], "site": "practical6_ddp.py:35"} for rank in (0, 1)]
    problem = run.problem()
    assert problem.splitlines()[1] == (
        "On rank 1 DDP(model, device_ids=[0]) (practical6_ddp.py:35) wraps a model on "
        "cuda:1: DDP moves every input to device_ids[0], so the forward pass meets two GPUs. "
        "Give each rank its own: DDP(model, device_ids=[local_rank])."), problem
    for event in run.events:   # device_ids=[local_rank]: no DDP line to point at, only the
        if event["event"] == "ddp_wrap":   # usual cause of two devices (an input not moved)
            event["device_ids"] = [str(event["rank"])]
    lines = run.problem().splitlines()
    assert len(lines) == 2 and "DDP(model" not in lines[1], lines
    assert lines[1].startswith("At practical6_ddp.py:42 one operation was handed tensors on two")


def test_several_ranks_that_raised_alike_are_named_together():
    run = _ranks_started(_failed_run(*[
        {"rank": rank, "type": "RuntimeError", "site": "practical6_ddp.py:42", "t": 0.6,
         "message": DEVICES} for rank in (1, 2, 3)]), range(4))
    run.nproc = 4
    assert "on ranks 1, 2 and 3 only (rank 0 raised no error of its own)" in run.problem()


def test_an_error_on_every_rank_says_so():
    run = _ranks_started(_failed_run(*[
        {"rank": rank, "type": "NotImplementedError", "site": "practical6_ddp.py:80",
         "t": 0.3, "message": "TODO (Practical 6): wrap the model in DDP"} for rank in (0, 1)]),
        (0, 1))
    assert ("NotImplementedError at practical6_ddp.py:80 on every rank (a TODO of the template "
            "is still to be written): TODO (Practical 6)") in run.problem()


def test_another_ranks_own_error_is_not_called_no_error():
    run = _ranks_started(_failed_run(
        {"rank": 1, "type": "ValueError", "site": "a.py:3", "t": 0.2, "message": "bad"},
        {"rank": 0, "type": "KeyError", "site": "a.py:9", "t": 0.9, "message": "'x'"}), (0, 1))
    assert "ValueError at a.py:3 on rank 1 (rank 0 raised another error): bad" in run.problem()


def test_one_process_names_no_rank():
    run = Observation(script="practical5/practical5_dp.py", gpus=2, returncode=1, events=[
        {"event": "start", "rank": 0},
        {"event": "exception", "rank": 0, "type": "KeyError", "site": "a.py:9", "message": "'x'"}])
    assert run.problem().endswith("stopped with KeyError at a.py:9: 'x'"), run.problem()


# -- the grader's own failure ------------------------------------------------------------------
def _exited(stderr: str) -> Observation:
    observation = Observation(script="hw3/model_parallel.py", gpus=8)
    observation.returncode, observation.stderr = 1, stderr
    return observation


def test_a_failure_of_the_graders_own_code_is_not_blamed_on_the_script():
    """A student's audit: a fault in the grader's records code (a PermissionError in its seal)
    read as 'hw3/model_parallel.py exited with status 1', and sent them debugging correct code."""
    import grader
    seal = grader.__file__.replace("__init__.py", "records/seal.py")
    run = _exited(f'Traceback (most recent call last):\n  File "/x/hw3/model_parallel.py", line 9, '
                  f'in forward\n  File "{seal}", line 155, in refuse\nPermissionError: only ...')
    assert "a failure of the grader's own code, not of yours" in run.problem(), run.problem()


def test_an_error_the_runtime_raises_for_a_gpu_is_the_scripts():
    import grader
    devices = grader.__file__.replace("__init__.py", "vgpu/devices.py")
    for stderr in (f'  File "/x/hw3/model_parallel.py", line 9\n  File "{devices}", line 3\n'
                   "RuntimeError: CUDA error: invalid device ordinal",
                   '  File "/x/hw3/model_parallel.py", line 9\nValueError: bad'):
        assert "exited with status 1" in _exited(stderr).problem()
