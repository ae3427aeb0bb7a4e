"""Practical 5, Part 6: "is the final loss equal?" is checked against what the runs trained to,
not only against the lines they print (a red team's adv34 F2).

Both scripts printed a made-up `final loss: 0.500000` while DataParallel's training really
diverged from the single GPU's (another learning rate): the printed lines made "equal: yes"
right (+0.25 over the control printing the real losses). Where the printed losses are equal but
the weights after the last steps (the trace's step records) are not, the weights decide and the
instructor is told; printed losses still decide where the weights agree or were not recorded.

The check runs on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import pytest

from grader.checks import test_practical5 as p5
from tests.grading.test_practical5_non_solutions import SHEET, Handout, run_check, trained


class Diverged(Handout):
    """DataParallel's run ends with other weights (`params_sum`) than the single GPU's; both
    print `printed`."""

    def __init__(self, params_sum=7.0, printed="final loss: 0.500000\n"):
        super().__init__(data_parallel=True)
        self.params_sum, self.printed = params_sum, printed

    def dp(self, gpus):
        run = trained(gpus, True)
        for event in run.events:
            if event["event"] == "step":
                event["params"] = {"sum": self.params_sum, "sumsq": 9.0}
        run.stdout = self.printed
        return run

    def single(self):
        run = super().single()
        run.stdout = self.printed
        return run


def test_equal_losses_printed_by_runs_that_end_apart_are_not_equal(tmp_path):
    flags = []
    with pytest.raises(AssertionError) as raised:
        run_check(p5.test_reported_final_loss_equality, Diverged(), tmp_path, flags=flags)
    text = str(raised.value)
    assert "the two runs end with different weights" in text, text
    assert any("printed lines are not the runs' losses" in f for f in flags), flags


def test_the_true_answer_no_is_right_there(tmp_path):
    run_check(p5.test_reported_final_loss_equality, Diverged(), tmp_path,
              values={**SHEET, "timing.final_loss_equal": False})


def test_equal_losses_of_runs_that_end_together_are_equal(tmp_path):
    """Weights within float rounding (0.1%): the printed losses stand."""
    run_check(p5.test_reported_final_loss_equality, Diverged(params_sum=5.0001), tmp_path)


def test_printed_losses_that_differ_still_decide(tmp_path):
    """The weights agree, the printed losses do not (a student's own reading of its output):
    as before, the printed lines."""
    class Printed(Diverged):
        def dp(self, gpus):
            run = super().dp(gpus)
            run.stdout = "final loss: 0.600000\n"
            return run
    with pytest.raises(AssertionError):
        run_check(p5.test_reported_final_loss_equality, Printed(params_sum=5.0), tmp_path)
