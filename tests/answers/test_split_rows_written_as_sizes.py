"""Practical 5's split table (dp.split_per_gpu, columns [gpus, split]) with its rows written as
lists: the per-GPU sizes themselves, or the columns in the sheet's order.

16edddf reads a list row as long as the sheet's `columns:` line as those columns, so a student
who wrote the split itself, `rows: [[32, 32]]` (32 rows on each of 2 GPUs, cuda:0 first), was
read as {gpus: 32, split: 32}: a 32-GPU row, and the 2-GPU answer gone. A row whose numbers add
up to the question's batch (64) and cannot be the columns (no node has 32 GPUs; three numbers
are not two columns) is the sizes it lists; one that could be either is for a person, never a
wrong answer; one that fits the columns ([2, 32]: 2 GPUs of 32 each) stays theirs.
"""
from __future__ import annotations

import pytest

from grader.answers.sheet import NotRead, coerce, template_questions
from grader.checks.practical_answers import rows_by

SPLIT = template_questions("practical5")["dp.split_per_gpu"]
WHERE = "see grader/answers/sheet.py _split_rows_listed_as_sizes"

AS_SIZES = {
    "one row of two, the 2-GPU split": ([[32, 32]], [{"gpus": 2, "split": [32, 32]}]),
    "sizes quoted": ([["32", "32"]], [{"gpus": 2, "split": [32, 32]}]),
    "every row its sizes": ([[32, 32], [22, 22, 20], [13, 13, 13, 13, 12]],
                            [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
                             {"gpus": 5, "split": [13, 13, 13, 13, 12]}]),
    "three sizes alone": ([[22, 22, 20]], [{"gpus": 3, "split": [22, 22, 20]}]),
    "columns beside sizes": ([[2, 32], [22, 22, 20], [5, "13/13/13/13/12"]],
                             [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
                              {"gpus": 5, "split": [13, 13, 13, 13, 12]}]),
    "an uneven pair no node's GPU count": ([[16, 48]], [{"gpus": 2, "split": [16, 48]}]),
}

AS_COLUMNS = {
    "2 GPUs of 32 each": ([[2, 32]], [{"gpus": 2, "split": [32, 32]}]),
    "the split as text": ([[2, "32/32"], [3, "22/22/20"]],
                          [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]}]),
    "the split as a list": ([[3, [22, 22, 20]]], [{"gpus": 3, "split": [22, 22, 20]}]),
    # One size for 3 GPUs: the check says it is not the split (22, 22, 20), as before.
    "one size for 3 GPUs": ([[3, 22]], [{"gpus": 3, "split": 22}]),
}

# Rows a TA reads with the student: either reading could be meant, or neither fits.
HELD = {
    "2 GPUs of 62, or 2 and 62": [[2, 62]],
    "4 GPUs of 60, or 4 and 60": [[4, 60]],
    "32 GPUs, not adding up": [[32, 30]],
    "a held row among read ones": [[2, 32], [2, 62]],
}


@pytest.mark.parametrize("raw, expected", AS_SIZES.values(), ids=AS_SIZES.keys())
def test_a_row_of_per_gpu_sizes_is_read_as_the_split(raw, expected):
    observed = coerce(raw, SPLIT)
    assert observed == expected, (f"expected rows: {raw!r} read as {expected!r} (the per-GPU sizes "
                                  f"of the batch of 64), observed {observed!r}; {WHERE}")


@pytest.mark.parametrize("raw, expected", AS_COLUMNS.values(), ids=AS_COLUMNS.keys())
def test_a_row_that_fits_the_columns_stays_theirs(raw, expected):
    observed = coerce(raw, SPLIT)
    assert observed == expected, (f"expected rows: {raw!r} read in the order of columns [gpus, "
                                  f"split] as {expected!r}, observed {observed!r}; {WHERE}")


@pytest.mark.parametrize("raw", HELD.values(), ids=HELD.keys())
def test_a_row_that_could_mean_either_is_for_a_person(raw):
    with pytest.raises(NotRead) as refused:
        observed = coerce(raw, SPLIT)
        pytest.fail(f"expected rows: {raw!r} kept for a person (NotRead), observed it read as "
                    f"{observed!r}: a wrong answer for what may be a right one; {WHERE}")
    assert "kept for a person" in str(refused.value) and refused.value.said.startswith("your table"), (
        f"expected the student told why the table was not read, observed {refused.value.said!r}")


def test_the_check_finds_the_2_gpu_row_of_a_split_written_as_sizes():
    """Practical 5's check looks rows up by their GPU count (rows_by): [32, 32] is the row for
    2 GPUs, and no row claims 32 GPUs (its message had said "rows for [32] GPUs")."""
    rows = rows_by(coerce([[32, 32], [22, 22, 20], [13, 13, 13, 13, 12]], SPLIT), "gpus")
    assert sorted(rows) == [2, 3, 5], (f"expected rows for 2, 3 and 5 GPUs, observed rows for "
                                       f"{sorted(rows)}; {WHERE}")
    assert rows[5]["split"] == [13, 13, 13, 13, 12], rows[5]
