"""Practical 4: a Part 3 stopped by an error before its second layer ran (a TA's audit, p4_s07:
the input of layer1 left on the CPU). The layers were placed as the handout asks, layer1 on
cuda:0 and layer2 on cuda:1, before the crash: the placement earns its points, and the answer
"1 transfer" is not told to become 0 (the script never got to the move).

The checks run here on traces written by hand, shaped as the virtual GPUs write them
(tests/vgpu/test_run_on_node.py shows a real run writing `placement_at_error`).
"""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical4 as p4
from grader.checks.support import must_agree
from grader.harness.observation import Observation
from tests.grading.test_practical4_one_gpu_message import OUT_ROWS, ROWS, forward

CRASH = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def layer(params, device):
    return [{"name": "(root)", "type": "Linear", "params": params, "device": device}]


def stopped_in_part3(layer2_device="cuda:1") -> Observation:
    """Parts 1 and 2 ran; Part 3's layer1(x) failed, x on the CPU: layer1's forward began
    (its placement is recorded), layer2 never ran."""
    events = forward(ROWS, OUT_ROWS)
    events += forward(ROWS[:32], OUT_ROWS[:32]) + forward(ROWS[32:], OUT_ROWS[32:])
    events.append({"event": "concat", "rank": 0, "dim": 0, "site": "concepts.py:60",
                   "shape": [p4.BATCH, p4.OUT_DIM], "rows": OUT_ROWS})
    events.append({"event": "placement", "rank": 0, "module": "Linear",
                   "layers": layer(p4.LAYER1_PARAMS, "cuda:0")})
    events.append({"event": "exception", "rank": 0, "type": "RuntimeError", "message": CRASH,
                   "site": "concepts.py:74"})
    whole = [{"name": "0", "type": "Linear", "params": p4.LAYER1_PARAMS, "device": "cuda:0"},
             {"name": "2", "type": "Linear", "params": p4.LAYER2_PARAMS, "device": "cuda:0"}]
    events += [{"event": "placement_at_error", "rank": 0, "name": "model", "module": "Sequential",
                "layers": whole},
               {"event": "placement_at_error", "rank": 0, "name": "layer1", "module": "Linear",
                "layers": layer(p4.LAYER1_PARAMS, "cuda:0")},
               {"event": "placement_at_error", "rank": 0, "name": "layer2", "module": "Linear",
                "layers": layer(p4.LAYER2_PARAMS, layer2_device)}]
    return Observation(p4.SCRIPT, gpus=2, returncode=1, events=events,
                       stdout="Output shape: torch.Size([64, 1000])\n", stderr=f"RuntimeError: {CRASH}\n")


def agree_with(values):
    answers = Answers("practical4", "sheet", values=dict(values),
                      origin={qid: "practical4/answers.yaml" for qid in values})

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, lambda text: None)
    return answers, agree


def test_layers_placed_before_the_crash_earn_the_placement():
    p4.test_layers_on_two_gpus(stopped_in_part3())


def test_a_layer_placed_wrong_before_the_crash_is_said_where_it_was():
    with pytest.raises(AssertionError) as failure:
        p4.test_layers_on_two_gpus(stopped_in_part3(layer2_device="cuda:0"))
    assert "layer2 on ['cuda:0']" in str(failure.value), str(failure.value)


def test_the_answer_about_layer2s_device_is_checked_against_where_it_was_put():
    answers, agree = agree_with({"part3.layer2_device": "cuda:1"})
    p4.test_reported_layer_devices(stopped_in_part3(), answers, agree, "layer2",
                                   "part3.layer2_device")


def test_the_move_it_never_got_to_is_said_with_the_crash_not_as_zero_moves():
    run = stopped_in_part3()
    with pytest.raises(AssertionError) as failure:
        p4.test_one_activation_transfer(run)
    assert "same device" in str(failure.value) and "0 move(s)" not in str(failure.value), \
        str(failure.value)
    answers, agree = agree_with({"part3.transfers_per_forward": 1})
    with pytest.raises(AssertionError) as failure:
        p4.test_reported_transfers_per_forward(run, answers, agree)
    text = str(failure.value)
    assert "your code did not get that far" in text and "correct the answer" not in text, text
