"""instructor.md shows a sheet's table answers as rows, never as a Python dict (a TA's audits 27
#2 and 28 M4: P10's micro.table was `\\[{'micro_batches': 2, ...}\\]` in a flag)."""
from __future__ import annotations

import copy

from tests.support.report_fixtures import ROUND_ROBIN, find_item
from grader.answers.collect import Answers
from grader.checks.support import must_agree
from grader.common.text import answer_shown
from grader.reports.instructor import render_instructor_markdown
from grader.scoring import load_rubrics

MICRO_TABLE = [{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32},
               {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}]


def test_a_table_answer_is_its_rows():
    assert answer_shown(MICRO_TABLE) == (
        "row 1: micro_batches 2, passes_per_step 2, micro_batch_size 32; "
        "row 2: micro_batches 8, passes_per_step 8, micro_batch_size 8")
    assert answer_shown(MICRO_TABLE, lines=True).splitlines() == [
        "micro_batches  passes_per_step  micro_batch_size",
        "2              2                32",
        "8              8                8"]
    assert answer_shown({"each": [32, 1000]}) == "each: [32, 1000]"
    # what is no table stays as written, a text quoted
    assert [answer_shown(v) for v in ("4", 4, False, [0, 2])] == ["'4'", "4", "False", "[0, 2]"]


def test_a_flag_quoting_a_table_answer_shows_its_rows():
    flags = []
    answers = Answers("practical10", "sheet", values={"micro.table": MICRO_TABLE},
                      origin={"micro.table": "practical10/answers.yaml"})
    try:
        must_agree(answers, "micro.table", MICRO_TABLE, [], "two rows", "ran no micro-batches",
                   flags.append)
    except AssertionError:
        pass
    assert flags and "{'" not in flags[0] and "row 1: micro_batches 2" in flags[0], flags


def test_a_written_answer_that_is_a_table_is_shown_as_rows(result):
    data = copy.deepcopy(result(ROUND_ROBIN))
    find_item(data, "hw3.task2.explanation")["answer"] = "task2.explanation"
    hw3 = data["assignments"][0]
    hw3["answers"]["values"]["task2.explanation"] = MICRO_TABLE
    hw3["answers"]["origin"]["task2.explanation"] = "hw3/answers.yaml"
    hw3["flags"] = [{"check": "practical10.micro_table_reported",
                     "text": f"micro.table: answered {answer_shown(MICRO_TABLE)}, but ..."}]
    md = render_instructor_markdown(data, load_rubrics())
    assert "{'" not in md and "'micro_batches'" not in md, md
    section = md[md.index("Student's answer (`task2.explanation`"):]
    assert "micro_batches  passes_per_step  micro_batch_size\n2              2" in section, section
