"""A table's cell written as a formula with its value is read as a single answer of that form is
(a TA's audit29 D3: P10's micro.table cells "64/2 = 32" and "64/8 = 8" were kept as words and
scored wrong, 0.25 lost, while the sheet's `hybrid.micro_batch_size: "64/4 = 16"` was read as
16). README, "How written answers are read": a formula with its value is that value where every
calculation of numbers in it agrees.
"""
from __future__ import annotations

import pytest

from grader.answers.sheet import _int, coerce, read_sheet, template_questions

P10 = template_questions("practical10")
TABLE = P10["micro.table"]


def test_the_audits_cells_are_their_values():
    rows = [{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": "64/2 = 32"},
            {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": "64/8 = 8"}]
    assert coerce(rows, TABLE, []) == [
        {"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32},
        {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}]


def test_the_audits_sheet_reads_its_table(tmp_path):
    sheet = tmp_path / "answers.yaml"
    sheet.write_text(
        "answers:\n"
        "  micro.table:\n    type: table\n"
        "    columns: [micro_batches, passes_per_step, micro_batch_size]\n    rows:\n"
        '      - {micro_batches: 2, passes_per_step: 2, micro_batch_size: "64/2 = 32"}\n'
        '      - {micro_batches: 8, passes_per_step: 8, micro_batch_size: "64/8 = 8"}\n',
        encoding="utf-8")
    result = read_sheet(sheet, P10, "practical10/answers.yaml")
    assert result.values["micro.table"][0]["micro_batch_size"] == 32, result.problems
    assert result.values["micro.table"][1]["micro_batch_size"] == 8


@pytest.mark.parametrize("text", ["64/2 = 32", "16 = 64/4", "N - 1 = 4", "N - 1 = 5 - 1 = 4",
                                  "BATCH_SIZE / MICRO_BATCHES = 16", "64 / 4 = 16 rows",
                                  "N-1 (=4)"])
def test_a_cell_reads_a_formula_as_a_single_answer_does(text):
    [row] = coerce([{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": text}],
                   TABLE, [])
    assert row["micro_batch_size"] == _int(text), text


@pytest.mark.parametrize("text", ["64/2 = 31", "32/32 = 64", "64/2 = 32 (or 16)"])
def test_a_formula_that_does_not_come_to_its_value_is_no_value(text):
    """Two values said (64/2 is not 31): the words as written, which the check says are not
    the answer, as a single answer of that form is refused."""
    [row] = coerce([{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": text}],
                   TABLE, [])
    assert row["micro_batch_size"] == text
