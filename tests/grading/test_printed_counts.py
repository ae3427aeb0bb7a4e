"""HW3 Task 5: the counts a script printed, read the way a TA reads the line (the handout sets
no format): by the words beside each number where the line says which is which, else in the
template's order, calls first."""
from __future__ import annotations

import pytest

from grader.checks.hw3_printed_counts import printed_counts

READ = [
    # the template's line
    ("to() calls: 20, real transfers: 1", [(20, 1)]),
    ("to() calls = 20 | real transfers = 4", [(20, 4)]),
    # own words, calls first
    ("x.to(layer_device) was triggered 20 times, moving data 1 time", [(20, 1)]),
    ("20 .to() calls, real transfers: 1", [(20, 1)]),
    ("Forward pass: .to() called 20 times, data copied 4 times", [(20, 4)]),
    ("calls=20 transfers=4", [(20, 4)]),
    # own words, transfers first: read by their labels (a TA's audit saw (1, 20) read)
    ("real transfers: 1 (out of 20 .to() calls)", [(20, 1)]),
    ("Transfers: 4 of 20 to() calls", [(20, 4)]),
    # settings beside the counts are not counts
    ("Calls: 20 Transfers: 1 (DEPTH=20, GPUs=2)", [(20, 1)]),
    ("With 5 GPUs: 20 to() calls, 4 real transfers", [(20, 4)]),
    ("GPUs: 5 | to() calls 20 | real transfers 4", [(20, 4)]),
    ("2 GPUs -> calls 20, transfers 1", [(20, 1)]),
    # one count labelled, one number left: the other count
    ("Transfers per forward pass (2 GPUs): 1, to() calls: 20", [(20, 1)]),
    # nothing tells them apart: each pair of numbers in turn, as before
    ("calls and transfers: 20 1", [(20, 1)]),
    ("step 3 loss 0.5", []),
    ("into(the) moved 3", []),
]


@pytest.mark.parametrize("line,pairs", READ, ids=[line for line, _ in READ])
def test_a_printed_line_is_read_by_its_labels(line, pairs):
    assert [found.pair for found in printed_counts(line)] == pairs, (
        f"{line!r}: expected the (calls, transfers) {pairs}, "
        f"observed {[found.pair for found in printed_counts(line)]}")


def test_the_template_line_wins_over_lines_in_other_words():
    output = "moved 3 tensors in 2 calls\nto() calls: 20, real transfers: 4\n"
    assert [found.pair for found in printed_counts(output)] == [(20, 4)]


def test_the_message_quotes_the_line_as_printed_and_says_how_it_was_read():
    (found,) = printed_counts("  real transfers: 1 (out of 20 .to() calls)  \n")
    assert found.quoted() == ("it printed 'real transfers: 1 (out of 20 .to() calls)' "
                              "(read as 20 .to() calls and 1 transfer)")


def test_a_long_line_is_cut_in_the_quote():
    (found,) = printed_counts("to() calls: 20, real transfers: 1 " + "x" * 500)
    assert len(found.line) == 200 and found.line.endswith("...")


# -- the check on a script's whole output (the HW3 matrix's prints_* variants, fast) -----------
class _Run:
    def __init__(self, stdout: str):
        self.stdout, self.stderr, self.ok, self.events = stdout, "", True, []

    def problem(self) -> str:
        return ""


class _Runs:
    """Every run of the script prints `stdout`."""

    def __init__(self, stdout: str):
        self.run = _Run(stdout)

    def script(self, **spec) -> _Run:
        return self.run


def _transfers(gpus: int) -> dict:
    """The probe's Task 5 record of the reference's forward: DEPTH layers in even contiguous
    blocks, one baton pass before each; its counters counted it."""
    from grader.checks.test_hw3 import TRANSFER_DEPTH
    per_gpu, extra = divmod(TRANSFER_DEPTH, gpus)
    devices = [f"cuda:{g}" for g in range(gpus) for _ in range(per_gpu + (g < extra))]
    log, here = [], devices[0]
    for index, device in enumerate(devices):
        log += [{"kind": "to", "src": here, "dst": device, "copied": here != device},
                {"kind": "layer", "index": index}]
        here = device
    return {"kind": "transfers", "gpus": gpus, "depth": TRANSFER_DEPTH, "devices": devices,
            "log": log, "counters": [TRANSFER_DEPTH, gpus - 1]}


def printed_check(stdout: str, gpus: int = 2, quantity: str = "to_calls") -> None:
    """hw3.task5.counts_printed for a script printing `stdout` in every run."""
    from grader.checks import test_hw3 as hw3
    probe = ([_transfers(g) for g in hw3.TASK4_GPUS], _Run(""))
    hw3.test_task5_printed_counts_are_the_forward_passes(
        probe, _Runs(stdout), {g: {} for g in hw3.TASK4_GPUS}, {}, gpus, quantity)


@pytest.mark.parametrize("quantity", ["to_calls", "transfers"])
def test_running_totals_are_read_as_their_first_count(quantity):
    """Counters never reset, printed after each of three forward passes (the matrix's
    prints_running_totals): one count, which a TA reads off the first line."""
    printed_check("".join(f"to() calls: {20 * k}, real transfers: {k}\n" for k in (1, 2, 3)),
                  quantity=quantity)


def test_every_possible_pair_printed_is_no_count():
    """A red team's guess that cannot miss (the matrix's prints_every_possible_count): beside
    the real count, every pair up to DEPTH. The printed counts are said unread."""
    guesses = "".join(f"to() calls: {calls}, real transfers: {moves}\n"
                      for calls in range(21) for moves in range(21))
    with pytest.raises(AssertionError) as failure:
        printed_check("to() calls: 20, real transfers: 1\n" + guesses)
    assert "different pairs of counts" in str(failure.value), str(failure.value)
    assert "more than the configurations it could run" in str(failure.value)


def test_counts_not_printed_are_said_for_no_point():
    """Task 5 counted by hand, no counts printed (the matrix's counted_by_hand): the numbers
    reported are what is graded; the check worth no point says the line is missing."""
    with pytest.raises(AssertionError) as failure:
        printed_check("step 0: 1.23 ms\nGPU 0: max memory allocated 200.4 MiB\n")
    assert "no line 'to() calls: ..., real transfers: ...' in its output (counted by hand" \
        in str(failure.value), str(failure.value)
