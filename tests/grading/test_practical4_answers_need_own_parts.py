"""Practical 4: an answer counts only where it is about the student's own work, done as the
handout asks (adv52 F5).

- Part 1 is the template's given code, run before its TODOs: the untouched template with a sheet
  had earned 0.4 for Part 1's output shape. It now counts beside a Part 2 or 3 of the student's
  own that works, as the one-GPU message does (test_practical4_one_gpu_message.py).
- Part 3's answers are about the handout's model parallelism (layer1 on cuda:0, layer2 on
  cuda:1, one move): a Part 3 with both layers on cuda:0 and a sheet agreeing with it ("layer2
  on cuda:0", "0 transfers") had kept 0.8. An answer about a layer counts where that layer is
  where the handout puts it; the transfers where both are.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import inspect

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical4 as p4
from grader.checks.support import must_agree
from tests.grading.test_practical4_one_gpu_message import two_gpus


def graded(check, run, aspect: dict | None = None, **values) -> str | None:
    """Run an answer check on the sheet `values` against `run` (the 2-GPU run and Part 3's),
    with the fixtures it takes as grader/checks/conftest.py makes them: its failure or None."""
    answers = Answers("practical4", "sheet", values=values,
                      origin={qid: "practical4/answers.yaml" for qid in values})

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, lambda _: None)
    kit = {"two_gpus": run, "part3_run": run, "answers": answers, "agree": agree,
           **(aspect or {})}
    try:
        check(**{name: kit[name] for name in inspect.signature(check).parameters})
    except AssertionError as failed:
        return str(failed)
    return None


SHAPE = {"part1.output_shape": [p4.BATCH, p4.OUT_DIM]}


def test_part1s_shape_beside_no_part_of_the_students_own_earns_nothing():
    failure = graded(p4.test_reported_output_shape, two_gpus(), **SHAPE)
    assert failure is not None and "Part 1 is the template's given code, which earns " \
        "nothing by itself" in failure, (
            "expected part1.output_shape not to count beside no working Part 2 or 3 "
            f"(test_practical4.test_reported_output_shape, own_parts_passing); observed: {failure}")


@pytest.mark.parametrize("part2, part3", [(True, False), (False, True)],
                         ids=["own-part2", "own-part3"])
def test_part1s_shape_beside_a_working_part_of_the_students_own_counts(part2, part3):
    assert graded(p4.test_reported_output_shape, two_gpus(part2=part2, part3=part3),
                  **SHAPE) is None


LAYER2 = {"layer": "layer2", "qid": "part3.layer2_device"}
LAYER1 = {"layer": "layer1", "qid": "part3.layer1_device"}


def test_part3_answers_agreeing_with_a_part3_on_one_gpu_earn_nothing():
    """adv52's p4_p3wrong: both layers on cuda:0, no move, the sheet agreeing with it."""
    run = two_gpus(part2=True)
    for check, aspect, sheet in [
            (p4.test_reported_layer_devices, LAYER2, {"part3.layer2_device": "cuda:0"}),
            (p4.test_reported_transfers_per_forward, None, {"part3.transfers_per_forward": 0})]:
        failure = graded(check, run, aspect, **sheet)
        for phrase in ("the answer agrees with your Part 3, but it puts layer2 on cuda:0 (the "
                       "handout: cuda:1)", "not the model parallelism the question is about"):
            assert failure is not None and phrase in failure, (
                f"expected {check.__name__} ({sheet}) to say {phrase!r} "
                f"(test_practical4.not_the_handouts_part3); observed: {failure}")


def test_layer1_where_the_handout_puts_it_keeps_its_answer_beside_a_wrong_layer2():
    """p4_second_layer_on_gpu0's layer1 is on cuda:0, as the handout has it: its answer counts."""
    assert graded(p4.test_reported_layer_devices, two_gpus(part2=True), LAYER1,
                  **{"part3.layer1_device": "cuda:0"}) is None


@pytest.mark.parametrize("aspect, sheet", [(LAYER1, {"part3.layer1_device": "cuda:0"}),
                                           (LAYER2, {"part3.layer2_device": "cuda:1"})],
                         ids=["layer1", "layer2"])
def test_the_handouts_part3_keeps_its_answers(aspect, sheet):
    assert graded(p4.test_reported_layer_devices, two_gpus(part2=True, part3=True), aspect,
                  **sheet) is None
