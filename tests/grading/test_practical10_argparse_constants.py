"""Practical 10's constants read from argparse (adv41 F5): `BATCH_SIZE = args.batch_size` and
`MICRO_BATCHES = args.micro_batches` with defaults 64 and 4, the handout's values. The graded
runs start the script with no arguments, so they hold the defaults; assigned_constants read
them as UNKNOWN, and practical10.graded_as_handed_in told the student and the instructor the
script was "handed in with BATCH_SIZE = an expression ... (the last values Parts 2 and 3 try)".
They are now read as the STEPS cap reads them (constant_values.py, parsed_arguments.py).

The checks read only the script's text: here, the reference's sample.py with argparse added.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks import test_practical10 as p10
from grader.checks.practical_measures import UNKNOWN, assigned_constants

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "practical10" / "sample.py"
CONSTANTS = "BATCH_SIZE = 64\nMICRO_BATCHES = 4\n"


def with_arguments(batch: str = "64", micro: str = "4") -> str:
    text = REFERENCE.read_text(encoding="utf-8")
    assert text.count(CONSTANTS) == 1 and "import argparse" not in text
    return text.replace(CONSTANTS, (
        "import argparse\n\nparser = argparse.ArgumentParser()\n"
        f'parser.add_argument("--batch-size", type=int, default={batch})\n'
        f'parser.add_argument("--micro-batches", type=int, default={micro})\n'
        "args = parser.parse_args()\n"
        "BATCH_SIZE = args.batch_size\nMICRO_BATCHES = args.micro_batches\n"))


def handed_in(tmp_path, text: str) -> p10.HandoutRuns:
    path = tmp_path / "submission" / "practical10" / "sample.py"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return p10.HandoutRuns(runs=None, submission=path.parents[1])


@pytest.mark.parametrize("batch, micro, expected", [
    ("64", "4", {"BATCH_SIZE": 64, "MICRO_BATCHES": 4}),
    ("128", "8", {"BATCH_SIZE": 128, "MICRO_BATCHES": 8}),
    # A default the grader does not work out (a call of the script's own) stays unknown.
    ("own_default()", "4", {"BATCH_SIZE": UNKNOWN, "MICRO_BATCHES": 4}),
])
def test_a_constant_from_an_argparse_default_is_that_default(batch, micro, expected):
    found = assigned_constants(with_arguments(batch, micro), set(p10.DEFAULTS),
                               modules=lambda name: None)
    assert found == expected, (
        f"expected the argparse defaults read as the graded run holds them, {expected}; "
        f"observed {found} (practical_measures.assigned_constants)")


def test_the_handouts_defaults_from_argparse_say_nothing(tmp_path):
    handout = handed_in(tmp_path, with_arguments())
    flags: list[str] = []
    p10.test_graded_as_the_handout_runs_it(handout, flags.append)
    assert flags == [], flags
    assert handout.spec()["sets"] is None
    assert handout.spec(BATCH_SIZE=32)["sets"] == {"BATCH_SIZE": 32}


def test_other_defaults_from_argparse_are_said_with_their_values(tmp_path):
    handout = handed_in(tmp_path, with_arguments("128", "8"))
    with pytest.raises(AssertionError) as raised:
        p10.test_graded_as_the_handout_runs_it(handout, [].append)
    assert "handed in with BATCH_SIZE = 128, MICRO_BATCHES = 8 (the last values" \
        in str(raised.value), str(raised.value)
    assert handout.spec()["sets"] == {"BATCH_SIZE": 64, "MICRO_BATCHES": 4}
