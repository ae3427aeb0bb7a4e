"""Task 4's table laid out per GPU, as students lay it out (a TA's audit, 19): a row per GPU
("GPUs | GPU | Step time | Memory"), a column per GPU ("GPU 0 (MiB)" ... "GPU 4 (MiB)"), and
the same turned. The handout asks for "Step Time and GPU Memory Usage for each
configuration"; the answer is each configuration's step time and its list of per-GPU memory.

Before: only the first row of each configuration was kept ("appears twice; kept the first
row", then "1 value(s) for 2 GPUs"), and a table with a column per GPU was not found at all
(or, with "cuda:0 memory (MiB)" headers, its first GPU's column was read as the whole list).
The fixtures lo_docx_memory_row_per_gpu, lo_docx_memory_column_per_gpu and
chromium_memory_column_per_gpu are the same layouts from real tools.
"""

from __future__ import annotations

import pytest

from bad_pdfs import REPORT_LINES
from grader.answers.hw3_pdf.extract_worker import extract
from grader.answers.hw3_pdf.reader import reading_from_worker_output
from grader.answers.hw3_pdf.tables import per_gpu_index
from tiny_pdf import write_text_pdf

TABLE = ["GPUs\tStep time (ms)\tMemory per GPU (MiB)", "2\t31.2\t812.5, 790", "5\t18.1\t402 / 398 / 398 / 398 / 410"]
EXPECTED = [{"gpus": 2, "step_time_ms": 31.2, "memory_per_gpu_mib": [812.5, 790]},
            {"gpus": 5, "step_time_ms": 18.1, "memory_per_gpu_mib": [402, 398, 398, 398, 410]}]


def _read(tmp_path, task4_table):
    """The plain report with Task 4's table written otherwise (tiny_pdf: a tab is a cell 100 pt on;
    160 pt, its default, leaves a river down a long table that reads as two text columns)."""
    at = REPORT_LINES.index(TABLE[0])
    lines = REPORT_LINES[:at] + task4_table + [""] + REPORT_LINES[at + len(TABLE):]   # a gap under it
    return reading_from_worker_output(extract(str(write_text_pdf(tmp_path / "report.pdf", [lines], column_pt=100)), 50))


@pytest.mark.parametrize("rows", [
    # The key on every row, the step time on the first row of each configuration only.
    ["2\tcuda:0\t31.2\t812.5", "2\tcuda:1\t\t790", "5\tcuda:0\t18.1\t402", "5\tcuda:1\t\t398",
     "5\tcuda:2\t\t398", "5\tcuda:3\t\t398", "5\tcuda:4\t\t410"],
    # The same step time on every row, the GPUs in another order: read in GPU order.
    ["2\tGPU 1\t31.2\t790", "2\tGPU 0\t31.2\t812.5", "5\tGPU 0\t18.1\t402", "5\tGPU 1\t18.1\t398",
     "5\tGPU 2\t18.1\t398", "5\tGPU 4\t18.1\t410", "5\tGPU 3\t18.1\t398"],
])
def test_a_row_per_gpu_is_gathered_into_its_configurations_list(tmp_path, rows):
    result = _read(tmp_path, ["GPUs\tGPU\tStep time (ms)\tMemory (MiB)"] + rows)
    assert result.answers["task4.table"] == EXPECTED
    assert result.status == "ok", result.problems
    # Where it was read names every row of the configuration.
    assert result.where["task4.table"]["rows"]["2"]["text"].count("812.5") == 1
    assert "790" in result.where["task4.table"]["rows"]["2"]["text"]


@pytest.mark.parametrize("rows, said", [
    # Two runs of one configuration (each a whole list): which one counts is for a person.
    (["2\t31.2\t812.5, 790", "2\t33.0\t815, 792", "5\t18.1\t402 / 398 / 398 / 398 / 410"], "appears twice"),
    # One value per row, but step times that differ: not the rows of one run.
    (["2\t31.2\t812.5", "2\t33.0\t790", "5\t18.1\t402 / 398 / 398 / 398 / 410"], "appears twice"),
    # More rows than the configuration has GPUs.
    (["2\t31.2\t812.5", "2\t31.2\t790", "2\t31.2\t795", "5\t18.1\t402 / 398 / 398 / 398 / 410"], "appears 3 times"),
])
def test_rows_of_one_configuration_that_are_not_one_run_per_gpu_are_not_gathered(tmp_path, rows, said):
    result = _read(tmp_path, [TABLE[0]] + rows)
    assert result.answers["task4.table"][0]["gpus"] == 2
    assert result.answers["task4.table"][0]["step_time_ms"] == 31.2  # the first row, as before
    assert any(f"task4.table[gpus=2] {said}; kept the first row" in p for p in result.problems), result.problems
    assert result.needs_manual_review


def test_a_turned_table_with_a_row_per_gpu(tmp_path):
    """Configurations as columns, a memory row per GPU; "-" where 2 GPUs have no GPU 2-4, and a
    0 there (nothing on an unused GPU) is no GPU of theirs either."""
    result = _read(tmp_path, ["GPUs\t2\t5", "Step time (ms)\t31.2\t18.1", "GPU 0 (MiB)\t812.5\t402",
                              "GPU 1 (MiB)\t790\t398", "GPU 2 (MiB)\t-\t398", "GPU 3 (MiB)\t0\t398",
                              "GPU 4 (MiB)\t\t410"])
    assert result.answers["task4.table"] == EXPECTED
    assert result.status == "ok", result.problems


def test_a_value_past_a_configurations_gpu_count_is_kept_and_said(tmp_path):
    result = _read(tmp_path, ["GPUs\t2\t5", "Step time (ms)\t31.2\t18.1", "GPU 0 (MiB)\t812.5\t402",
                              "GPU 1 (MiB)\t790\t398", "GPU 2 (MiB)\t12\t398", "GPU 3 (MiB)\t-\t398",
                              "GPU 4 (MiB)\t-\t410"])
    assert result.answers["task4.table"][0]["memory_per_gpu_mib"] == [812.5, 790, 12]
    assert "task4.table[gpus=2]: 3 memory values for 2 GPUs" in result.problems


@pytest.mark.parametrize("header, index", [
    ("gpu 0 (mib)", 0), ("cuda:1 memory", 1), ("mem gpu 2 [mib]", 2), ("gpu3 peak memory (mib)", 3),
    ("memory on gpu 4 (mib)", 4),
    # A GPU's column that names no memory may hold anything (its layers, its utilisation).
    ("gpu 0", None), ("cuda:0", None), ("gpus", None), ("gpu 0 layers", None), ("memory per gpu (mib)", None),
])
def test_which_headers_name_one_gpus_memory(header, index):
    assert per_gpu_index(header) == index


def test_one_gpus_memory_column_alone_is_the_memory_column(tmp_path):
    """"Memory on GPU 0 (MiB)" as the only memory column: a list in one cell, as before."""
    result = _read(tmp_path, ["GPUs\tStep time (ms)\tMemory on GPU 0 (MiB)"] + TABLE[1:])
    assert result.answers["task4.table"] == EXPECTED
