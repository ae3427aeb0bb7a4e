"""Tables and cells as students write them in answers.yaml and the report (a TA's audit: p5_s03,
and what a previous pass left misread).

- The handout's Part 4 table ("#GPUs | Batch Size | Split per GPU") copied as plain pipe rows,
  without the `|---|` line under its header, is its rows; a pipe table that cannot be read
  says why (its first line is no header, a header naming no column, a row too long) instead of
  "write them as a list of mappings".
- P5's split: a bare "32" for 2 GPUs (the column says "per GPU") and "32 per GPU (64 total)"
  are [32, 32], the right answer; they had been [32], a wrong one. "22" for 3 GPUs stays one
  size, which the check says is not the split.
- A step time "12 and 14" or "12 34 ms" in a report's table is not one value (its first number
  had been read); "100 100" in a cell of one value (P5's memory) is no 100100 MiB.
"""
from __future__ import annotations

import pytest
import yaml

from grader.answers.collect import collect_answers
from grader.answers.numbers import parse_time_ms, quantity_in
from grader.answers.sheet import coerce, read_sheet, template_questions

P5 = template_questions("practical5")
SPLIT = P5["dp.split_per_gpu"]
RIGHT_SPLIT = [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
               {"gpus": 5, "split": [13, 13, 13, 13, 12]}]

# p5_s03's answers.yaml, as handed in: the handout's table as pipe rows, no rule line.
HANDOUT_ROWS = ("| #GPUs | Batch Size | Split per GPU |\n| 2 | 64 | 32/32 |\n| 3 | 64 | 22/22/20 |\n"
                "| 5 | 64 | 13/13/13/13/12 |\n")


def test_the_handouts_split_table_as_pipe_rows_is_its_rows():
    for text in (
        HANDOUT_ROWS,
        # Without the outer bars, as GitHub writes them too.
        "#GPUs | Batch Size | Split per GPU\n2 | 64 | 32/32\n3 | 64 | 22/22/20\n5 | 64 | 13/13/13/13/12",
        # The template's own column names as the header.
        "| gpus | split |\n| 2 | 32/32 |\n| 3 | 22/22/20 |\n| 5 | 13/13/13/13/12 |",
        # ... and with the rule line, as before.
        HANDOUT_ROWS.replace("Split per GPU |\n", "Split per GPU |\n|---|---|---|\n", 1),
    ):
        assert coerce(text, SPLIT, []) == RIGHT_SPLIT, text


def test_p5_s03s_sheet_reads_its_split_table(tmp_path):
    sheet = tmp_path / "answers.yaml"
    sheet.write_text("answers:\n  dp.split_per_gpu:\n    type: table\n    columns: [gpus, split]\n    rows: |\n"
                     + "".join(f"      {line}\n" for line in HANDOUT_ROWS.splitlines()), encoding="utf-8")
    result = read_sheet(sheet, P5, "practical5/answers.yaml")
    assert result.values == {"dp.split_per_gpu": RIGHT_SPLIT}, result.problems
    assert result.problems == [] and result.unread == []


@pytest.mark.parametrize("text, why", [
    # Rows without a header: nothing says which cell is which column.
    ("| 2 | 64 | 32/32 |\n| 3 | 64 | 22/22/20 |", "its first line '| 2 | 64 | 32/32 |' is not a header"),
    ("| GPUs | Chunks |\n|---|---|\n| 2 | 2 |", "its header names 'Chunks', which is not a column of this table"),
    ("| #GPUs | Split per GPU |\n| 2 | 32/32 | 64 |", "its row 1 ('2 | 32/32 | 64') has 3 cells where the header has 2"),
    ("| #GPUs | Split per GPU |\n|---|---|", "it has a header but no rows under it"),
])
def test_a_pipe_table_that_cannot_be_read_says_why(tmp_path, text, why):
    sheet = tmp_path / "answers.yaml"
    sheet.write_text(yaml.safe_dump({"answers": {"dp.split_per_gpu": {"rows": text}}}), encoding="utf-8")
    result = read_sheet(sheet, P5, "practical5/answers.yaml")
    assert result.unread == ["dp.split_per_gpu"]
    assert any(why in problem for problem in result.problems), result.problems
    assert why in result.unread_why["dp.split_per_gpu"]
    assert not any("list of mappings" in problem for problem in result.problems), result.problems


@pytest.mark.parametrize("rows, split, look_alike, kept", [
    # One size for every GPU, where that many of it make the batch of 64; one size that is not
    # every GPU's share is kept as one size, which the check says is not the split.
    ({"gpus": 2, "split": "32"}, [32, 32], {"gpus": 3, "split": "22"}, 22),
    ({"gpus": 2, "split": 32}, [32, 32], {"gpus": 3, "split": 22}, 22),
    ({"gpus": 4, "split": "16"}, [16, 16, 16, 16], {"gpus": 5, "split": "13"}, 13),
    # ... with the total said beside it; a total the sizes do not add up to is for a person.
    ({"gpus": 2, "split": "32 per GPU (64 total)"}, [32, 32],
     {"gpus": 2, "split": "32 per GPU (128 total)"}, "32 per GPU (128 total)"),
    ({"gpus": 2, "split": "32 (64 in total)"}, [32, 32],
     {"gpus": 2, "split": "3 chunks of 32 (64 total)"}, "3 chunks of 32 (64 total)"),
    ({"gpus": 2, "split": "32 each (= 64)"}, [32, 32], {"gpus": 2, "split": "32 (= 96)"}, "32 (= 96)"),
    # The row's own batch, where the table has the handout's "Batch Size" column.
    ({"gpus": 2, "batch_size": 128, "split": "64"}, [64, 64], {"gpus": 2, "batch_size": 128, "split": "32"}, 32),
])
def test_one_size_for_every_gpu_of_the_split_is_every_gpus(rows, split, look_alike, kept):
    [row] = coerce([rows], SPLIT, [])
    assert row["split"] == split
    [row] = coerce([look_alike], SPLIT, [])
    assert row["split"] == kept


@pytest.mark.parametrize("cell, look_alike, ms", [
    ("12 and 14", "between 12 and 14", 13), ("12 34 ms", "1 234 ms", 1234), ("12, 14 ms", "12,5 ms", 12.5),
    ("12 ms / 14 ms", "12.5 ± 0.3 ms", 12.5), ("100 100 ms", "81 920", 81920),
    ("18 or 19", "12 ms (2 runs: 12 and 14)", 12), ("12 and 14 ms", "12 ms, 20 steps", 12),
])
def test_two_step_times_in_a_reports_cell_are_not_its_first(cell, look_alike, ms):
    parsed = parse_time_ms(cell, None)
    assert parsed.ambiguous and parsed.value is None, parsed
    assert "not one value" in parsed.notes[0]
    # One time with words or a remark, or grouped, is still read.
    parsed = parse_time_ms(look_alike, None)
    assert parsed.value == pytest.approx(ms) and not parsed.ambiguous


def test_a_reports_table_with_two_step_times_in_a_cell_leaves_the_row_to_a_person(tmp_path):
    from bad_pdfs import REPORT_LINES
    from tiny_pdf import write_text_pdf
    folder = tmp_path / "sub" / "hw3"
    folder.mkdir(parents=True)
    write_text_pdf(folder / "report.pdf", [[line.replace("| 12 | 23.75 |", "| 12 | 23 and 25 |")
                                            for line in REPORT_LINES]])
    answers = collect_answers(tmp_path / "sub", "hw3", "pdf_then_sheet")
    depths = [row["depth"] for row in answers.values["task2.step_time_table"]]
    assert depths == [6, 24], answers.values["task2.step_time_table"]   # 12 had been 23 ms
    assert {"id": "task2.step_time_table", "row": "12", "column": "step_time_ms", "text": "23 and 25"} \
        in answers.unread_cells
    assert any("'23 and 25' is not one value" in p for p in answers.problems), answers.problems


@pytest.mark.parametrize("cell, look_alike, mib", [
    ("100 100", "1 012", 1012), ("100 100 MiB", "81 920 MiB", 81920), ("512 512", "1 234 567", 1234567),
    ("980 980", "100\u2009100 MiB", 100100),   # a thin space is typeset grouping
])
def test_two_values_in_a_cell_of_one_are_not_one_grouped_number(cell, look_alike, mib):
    assert quantity_in(cell, "mib") is None
    [row] = coerce([{"gpu": 0, "utilization_percent": 30, "memory_mib": cell}], P5["usage.table"], [])
    assert row["memory_mib"] == cell   # words, for a person: an unread cell
    assert quantity_in(look_alike, "mib") == mib
