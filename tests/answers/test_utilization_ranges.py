"""nvidia-smi's utilization as students read it off `watch -n 1 nvidia-smi`: a value that moves
every second, so written as a range ("35-40%") or an approximate value ("~35%"). The usage
table's rule (practical_answers.usage_table_problems) accepts any reading from 0 to 100 %, so a
range within 0-100 is a reading a TA accepts: read as its middle. A red team's (adv44 F2):
"35-40%" was refused with "utilization_percent is '35-40%', not 0-100", false on its face."""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.answers.sheet import coerce, template_questions
from grader.checks.practical_answers import checked_usage_table
from grader.harness.observation import Observation


def readings(utilization) -> list[dict]:
    return [{"gpu": 0, "utilization_percent": utilization, "memory_mib": "1236MiB"},
            {"gpu": 1, "utilization_percent": utilization, "memory_mib": "1236MiB"}]


def read_table(assignment: str, rows: list[dict]) -> list[dict]:
    return coerce(rows, template_questions(assignment)["usage.table"])


def checked(assignment: str, rows: list[dict]) -> dict:
    answers = Answers(assignment, "sheet", values={"usage.table": rows},
                      origin={"usage.table": f"{assignment}/answers.yaml"})
    trained = Observation(script=f"{assignment}/x.py", gpus=2, returncode=0,
                          events=[{"event": "step", "index": 1}])
    return checked_usage_table(answers, {}, "usage.table", "DDP", trained)


@pytest.mark.parametrize("assignment", ["practical5", "practical6"])
@pytest.mark.parametrize("written, value", [
    ("35-40%", 37.5), ("35 - 40 %", 37.5), ("35 to 40%", 37.5), ("35–40 %", 37.5),
    ("between 35 and 40 %", 37.5), ("35-40", 37.5), ("35% - 40%", 37.5), ("0-100%", 50),
    ("~35%", 35), ("about 35 %", 35), ("35,5 %", 35.5), ("37%", 37),
])
def test_a_reading_written_as_a_range_or_approximately_is_accepted(assignment, written, value):
    rows = read_table(assignment, readings(written))
    assert [row["utilization_percent"] for row in rows] == [value, value], (
        f"expected '{written}' read as {value} (a range: its middle); observed {rows}; "
        "where: grader/answers/sheet.py _cell, numbers.measured_range_in")
    checked(assignment, rows)   # no AssertionError: the table is complete


@pytest.mark.parametrize("written, said", [
    ("40-35%", "from high to low"),
    ("90-120%", "outside 0-100"),
    ("-5 to 10 %", "expected one reading from 0 to 100"),
    ("busy", "expected one reading from 0 to 100"),
    ("35-40 ms", "expected one reading from 0 to 100"),
])
def test_a_reversed_or_out_of_range_reading_is_refused_saying_what_was_expected(written, said):
    rows = read_table("practical6", readings(written))
    with pytest.raises(AssertionError) as failure:
        checked("practical6", rows)
    text = str(failure.value)
    assert said in text and "0-100" in text, (
        f"expected a refusal of '{written}' saying '{said}'; observed: {text}; where: "
        "grader/checks/practical_answers.py usage_table_problems")


def test_a_number_outside_0_to_100_is_refused():
    with pytest.raises(AssertionError, match="utilization_percent is 140, outside 0-100"):
        checked("practical6", read_table("practical6", readings(140)))
