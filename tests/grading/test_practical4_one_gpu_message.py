"""Practical 4: the one-GPU message is the template's given `else` (a TA's audit, finding 8).

On one GPU the handout's Part 3 prints "Model parallelism requires at least 2 GPUs." from the
`else` branch the template gives; any Part 2 that does not crash reaches it. The TA's s15 faked
Part 2 (`final_output = output`, the "Processing chunk" lines printed by hand) and put both of
Part 3's layers on cuda:0, and still earned the 0.5: given code earns nothing by itself, so
the message counts beside a Part 2 or Part 3 of the student's own that passes a check, and
never beside a Part 3 still the template's TODO (the message is Part 3's).

The check runs here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from grader.checks import test_practical4 as p4
from grader.harness.observation import Observation

ROWS = [[float(i + 1), float((i + 1) ** 2)] for i in range(p4.BATCH)]
OUT_ROWS = [[float(2 * i + 1), float((2 * i + 1) ** 2)] for i in range(p4.BATCH)]
MESSAGE = "Output shape: torch.Size([64, 1000])\nModel parallelism requires at least 2 GPUs.\n"


def forward(rows, out_rows, device="cuda:0", out_shape=None):
    return [{"event": "forward", "rank": 0, "thread": "MainThread", "step": 0, "grad": True,
             "batch": [len(rows), p4.IN_DIM], "rows": rows, "module": "Sequential",
             "input_device": device},
            {"event": "forward_out", "rank": 0, "thread": "MainThread", "device": device,
             "shape": out_shape or [len(rows), p4.OUT_DIM], "rows": out_rows}]


def two_gpus(part2=False, part3=False) -> Observation:
    """The run on 2 GPUs: Part 1 always; Part 2's chunks and their torch.cat; Part 3's layers
    on cuda:0 and cuda:1 (else both on cuda:0, as s15 has them)."""
    events = forward(ROWS, OUT_ROWS)
    if part2:
        events += forward(ROWS[:32], OUT_ROWS[:32]) + forward(ROWS[32:], OUT_ROWS[32:])
        events.append({"event": "concat", "rank": 0, "dim": 0, "site": "concepts.py:60",
                       "shape": [p4.BATCH, p4.OUT_DIM], "rows": OUT_ROWS})
    second = "cuda:1" if part3 else "cuda:0"
    events += [{"event": "placement", "rank": 0, "module": "Linear",
                "layers": [{"name": "(root)", "params": p4.LAYER1_PARAMS, "device": "cuda:0"}]},
               {"event": "placement", "rank": 0, "module": "Linear",
                "layers": [{"name": "(root)", "params": p4.LAYER2_PARAMS, "device": second}]}]
    return Observation(p4.SCRIPT, gpus=2, returncode=0, events=events, stdout=MESSAGE)


class Runs:
    """ScriptRuns' interface: the run on one GPU prints `stdout` (the message by default),
    writes `stderr` and ends with `returncode`, having recorded `events`."""

    def __init__(self, returncode=0, stderr="", stdout=MESSAGE, events=()):
        self.returncode, self.stderr, self.stdout = returncode, stderr, stdout
        self.events = list(events)

    def script(self, **spec):
        return Observation(p4.SCRIPT, gpus=1, returncode=self.returncode, stdout=self.stdout,
                           stderr=self.stderr, events=self.events)


def one_gpu_check(run_on_two_gpus, runs=None) -> None:
    """The check, given the fixtures it takes."""
    fixtures = {"runs": runs or Runs(), "two_gpus": run_on_two_gpus, "part3_run": run_on_two_gpus,
                "submission": Path("/nonexistent")}
    check = p4.test_one_gpu_says_two_are_needed
    check(**{name: fixtures[name] for name in inspect.signature(check).parameters})


def test_the_message_beside_a_faked_part2_and_a_one_gpu_part3_earns_nothing():
    """s15: the message is printed, but no part of the student's own passes a check."""
    with pytest.raises(AssertionError) as raised:
        one_gpu_check(two_gpus())
    text = str(raised.value)
    for phrase in ("Expected: on a machine with 1 GPU, Part 3 prints that model parallelism "
                   "requires at least 2 GPUs", "beside a Part 2 or Part 3 of your own that works",
                   "Observed: the message is printed, but neither your Part 2",
                   "the template's given code, which earns nothing by itself",
                   "Where to look: Parts 2 and 3 of practical4/concepts.py"):
        assert phrase in text, f"expected the feedback to say {phrase!r}; observed:\n{text}"


@pytest.mark.parametrize("part2, part3, passing", [
    (True, False, ["practical4.chunk_shapes", "practical4.chunks_equal_full"]),
    (False, True, ["practical4.mp_layer_devices"]),
], ids=["own-part2", "own-part3"])
def test_the_message_beside_a_working_part_of_the_students_own_earns_its_point(part2, part3,
                                                                               passing):
    """A Part 3 on one GPU beside a real Part 2 (the variant p4_second_layer_on_gpu0), or a
    real Part 3 beside a faked Part 2: the message keeps its 0.5."""
    run = two_gpus(part2=part2, part3=part3)
    assert p4.own_parts_passing(run) == passing
    one_gpu_check(run)


def test_the_message_beside_a_part3_left_as_the_templates_todo_earns_nothing():
    """A TA's audit (2026-12-06): Part 2 done, Part 3 never written (its TODO stops the run on
    2 GPUs), and the given `else` had earned the half point: the message is Part 3's."""
    run = two_gpus(part2=True)
    stop = {"event": "exception", "rank": 0, "type": "NotImplementedError",
            "site": "concepts.py:77", "message": "TODO (Practical 4 Part 3): put layer1 on cuda:0"}
    stopped = Observation(p4.SCRIPT, gpus=2, returncode=1, events=run.events + [stop],
                          stdout=run.stdout)
    assert p4.own_parts_passing(stopped)   # Part 2 of the student's own works
    with pytest.raises(AssertionError) as raised:
        one_gpu_check(stopped)
    text = str(raised.value)
    for phrase in ("beside a Part 3 of your own", "Part 3 is still the template's TODO",
                   "the template's given code, which earns nothing by itself"):
        assert phrase in text, f"expected the feedback to say {phrase!r}; observed:\n{text}"


@pytest.mark.parametrize("check", [p4.test_layers_on_two_gpus, p4.test_one_activation_transfer,
                                   p4.test_output_comes_out_of_second_gpu])
def test_part3_never_run_on_two_gpus_is_told_with_the_scripts_last_line(check):
    """A TA's audit: a guard `device_count() > 2` skipped Part 3 on the handout's 2 GPUs, and
    the feedback said only that Part 3's layers never ran, not what the script said instead."""
    run = Observation(p4.SCRIPT, gpus=2, returncode=0, events=forward(ROWS, OUT_ROWS),
                      stdout=MESSAGE)
    with pytest.raises(AssertionError) as raised:
        check(run)
    assert "its last line of output: 'Model parallelism requires at least 2 GPUs.'" in \
        str(raised.value), raised.value


ORDINAL = ("Traceback (most recent call last):\n  File \"concepts.py\", line 80, in <module>\n"
           "    layer2 = nn.Linear(512, 1000).to(\"cuda:1\")\n"
           "grader.vgpu.node.InvalidDeviceOrdinal: CUDA error: invalid device ordinal\n")


def test_the_message_as_a_banner_before_an_unguarded_part3_earns_nothing():
    """adv34 F1: "requires at least 2 GPUs" printed before a Part 3 without its guard, which
    then stops on cuda:1 on a 1-GPU machine: the handout's point is not failing there."""
    with pytest.raises(AssertionError) as raised:
        one_gpu_check(two_gpus(part2=True, part3=True), Runs(returncode=1, stderr=ORDINAL))
    text = str(raised.value)
    assert "then stopped using a GPU it does not have" in text, text


def test_the_message_beside_a_run_that_stops_for_another_reason_keeps_its_point():
    """A 1-GPU run that printed the message and then stopped on something else (a later
    part's own bug) is judged by that part's checks, not here."""
    one_gpu_check(two_gpus(part2=True, part3=True),
                  Runs(returncode=1, stderr="Traceback ...\nValueError: bad value\n"))


# -- the message in the student's own words (a red team's adv41 F2) ------------------------------
# The handout asks for "a clear message, not crash": any line that says there are too few GPUs.
PARTS_1_2 = "Output shape: torch.Size([64, 1000])\nFinal output shape: torch.Size([64, 1000])\n"


@pytest.mark.parametrize("line", [
    "Model parallelism requires at least 2 GPUs.",
    "Skipping Part 3: found 1 GPU(s), need >= 2 for model parallelism",
    "Not enough GPUs for model parallelism (found 1, need 2)",
    "Model parallelism needs at least 2 CUDA devices",
    "Part 3 skipped: fewer than 2 GPUs",
    "Only one GPU available: skipping model parallelism",
])
def test_a_clear_message_in_the_students_own_words_earns_its_point(line):
    one_gpu_check(two_gpus(part2=True, part3=True), Runs(stdout=PARTS_1_2 + line + "\n"))


@pytest.mark.parametrize("stdout", [
    PARTS_1_2, PARTS_1_2 + "Done.\n", "", PARTS_1_2 + "Part 1 runs only on GPU 0\n",
    PARTS_1_2 + "concepts.py:3: UserWarning: CUDA initialization: no second GPU found\n",
], ids=["no-message", "unrelated-line", "empty", "gpu-without-lack", "a-librarys-warning"])
def test_no_line_that_says_too_few_gpus_earns_nothing(stdout):
    with pytest.raises(AssertionError) as raised:
        one_gpu_check(two_gpus(part2=True, part3=True), Runs(stdout=stdout))
    text = str(raised.value)
    assert "no line that says there are too few GPUs for Part 3" in text, text


HANDOUT_WORDS = "Model parallelism requires at least 2 GPUs.\n"


def test_the_message_as_sys_exit_after_parts_1_and_2_earns_its_point():
    """adv41 p4_exit: `sys.exit("Model parallelism requires at least 2 GPUs.")` after Parts
    1-2, as the course's P5/P6 templates say they lack GPUs (status 1, the message on stderr,
    no traceback), had scored 0/0.5 as a script that did not run to its end."""
    one_gpu_check(two_gpus(part2=True, part3=True),
                  Runs(returncode=1, stdout=PARTS_1_2, stderr=HANDOUT_WORDS,
                       events=forward(ROWS, OUT_ROWS)))


@pytest.mark.parametrize("stderr, events", [
    # Raised, not exited: a crash, whatever its words.
    ("Traceback (most recent call last):\n  File \"concepts.py\", line 60, in <module>\n"
     "RuntimeError: Model parallelism requires at least 2 GPUs.\n",
     [{"event": "exception", "rank": 0, "type": "RuntimeError", "site": "concepts.py:60",
       "message": "Model parallelism requires at least 2 GPUs."}] + forward(ROWS, OUT_ROWS)),
    # sys.exit at the top, before Part 1: Parts 1-2 never ran on one GPU.
    (HANDOUT_WORDS, []),
], ids=["raised", "exit-before-part1"])
def test_the_message_raised_or_exited_before_part1_earns_nothing(stderr, events):
    with pytest.raises(AssertionError):
        one_gpu_check(two_gpus(part2=True, part3=True),
                      Runs(returncode=1, stdout="", stderr=stderr, events=events))
