"""HW3's forward without its baton pass (`x = x.to(layer_device)` removed) stops with PyTorch's
"Expected all tensors to be on the same device": a student's audit (users28) got only that
text, while other HW3 stops name their fix. Wherever a run or the probe stops with it, the
feedback names the line and says the input of the layer on cuda:k must be moved to cuda:k first
(grader/harness/course_environment.py `device_mismatch_note`)."""
from __future__ import annotations

import pytest

from grader.harness.course_environment import device_mismatch_note
from grader.harness.observation import Observation

TWO_DEVICES = ("Expected all tensors to be on the same device, but found at least two devices, "
               "cuda:0 and cuda:1!")
SITE = "model_parallel.py:50 (x = torch.relu(layer(x)))"


def test_the_note_names_the_line_and_the_move():
    note = device_mismatch_note(TWO_DEVICES, SITE)
    assert note.startswith(f"At {SITE} one operation was handed tensors on two different "
                           "devices (cuda:0 and cuda:1)")
    assert "the input of the layer on cuda:k must be moved to cuda:k first" in note
    assert "x = x.to(next(layer.parameters()).device)" in note
    assert device_mismatch_note("CUDA error: invalid device ordinal", SITE) is None


@pytest.mark.parametrize("failing", ["built", "ran_forward"])
def test_hw3s_build_and_forward_checks_carry_it(failing):
    from grader.checks import test_hw3
    error = {"type": "RuntimeError", "message": TWO_DEVICES, "site": SITE}
    found = ({"gpus": 2, "depth": 6, "error": error} if failing == "built"
             else {"gpus": 2, "depth": 6, "forward_error": error})
    with pytest.raises(AssertionError) as failure:
        getattr(test_hw3, failing)(found)
    message = str(failure.value)
    assert f"At {SITE} one operation" in message and "moved to cuda:k first" in message, message


def test_a_run_that_stopped_with_it_carries_it():
    run = Observation("hw3/model_parallel.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "RuntimeError", "site": "model_parallel.py:50",
         "message": TWO_DEVICES}])
    problem = run.problem()
    assert problem.splitlines()[1].startswith("At model_parallel.py:50 one operation was handed")
    assert "the input of the layer on cuda:k must be moved to cuda:k first" in problem


def test_a_ddp_wrap_on_another_gpu_keeps_its_own_note():
    """DDP(model, device_ids=[0]) on every rank raises the same error: its own cause is told."""
    run = Observation("practical6/practical6_ddp.py", gpus=2, nproc=2, launcher="torchrun",
                      returncode=1, events=[
                          {"event": "ddp_wrap", "rank": 1, "device_ids": [0],
                           "param_devices": ["cuda:1"], "site": "practical6_ddp.py:72"},
                          {"event": "exception", "rank": 1, "type": "RuntimeError",
                           "site": "practical6_ddp.py:88", "message": TWO_DEVICES}])
    problem = run.problem()
    assert "DDP(model, device_ids=[local_rank])" in problem
    assert "moved to cuda:k first" not in problem
