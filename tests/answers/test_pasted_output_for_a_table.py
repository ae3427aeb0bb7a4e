"""A program's output pasted where a table's rows belong (a TA's audit 27, p5_devids_smi: the whole
nvidia-smi box as a YAML block under usage.table). It is found, for a person to read, as before;
what the student and the problems list are told now says the table needs its rows, one per line,
and that pasted output is not read: "write the value alone" had not said what to write.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.answers.sheet import coerce, read_sheet, template_questions

P5 = template_questions("practical5")
NVIDIA_SMI = "\n".join([
    "+---------------------------------------------------------------------------------------+",
    "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |",
    "|-----------------------------------------+----------------------+----------------------+",
    "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
    "|=========================================+======================+======================|",
] + [f"|   {i}  Tesla V100-SXM2-32GB           On  | 00000000:1A:00.0 Off |                    0 |\n"
     f"| N/A   41C    P0              68W / 300W |   {mib}MiB / 32768MiB |     {util}%      Default |\n"
     "+-----------------------------------------+----------------------+----------------------+"
     for i, mib, util in ((0, 1012, 38), (1, 618, 21))]) + "\n"
# A row with numbers in it: "gpu: ..." had not said which numbers go where (a TA's audit 27).
ROW = "- {gpu: 0, utilization_percent: 38, memory_mib: 1012}"


def test_pasted_output_under_a_table_is_found_and_asks_for_its_rows(tmp_path: Path):
    assert len(NVIDIA_SMI) > 1000
    sheet = tmp_path / "answers.yaml"
    block = "\n".join("      " + line for line in NVIDIA_SMI.splitlines())
    sheet.write_text("assignment: practical5\nanswers:\n  usage.table:\n    type: table\n"
                     "    columns: [gpu, utilization_percent, memory_mib]\n    rows: |\n" + block + "\n",
                     encoding="utf-8")
    read = read_sheet(sheet, P5, "practical5/answers.yaml")
    assert "usage.table" in read.unread and "usage.table" not in read.values
    said = read.unread_why["usage.table"]
    for phrase in ("the grader does not read pasted output", "kept for the course staff to read",
                   "nvidia-smi's output", "rows, one per line", ROW):
        assert phrase in said, f"expected {phrase!r} in: {said}"
    assert "write the value alone" not in said and "write the value alone" not in " ".join(read.problems)
    assert any("the table's rows are expected" in p and ROW in p for p in read.problems), read.problems


def test_a_long_text_for_one_value_still_asks_for_the_value_alone():
    with pytest.raises(ValueError, match="write the value alone"):
        coerce("4 " + "x" * 1200, P5["memory.most_memory_gpu"])


def test_a_few_lines_of_nvidia_smi_are_told_as_pasted_output_too():
    """Two of its lines (under 1000 characters) had been told their first line is no Markdown
    header; a Markdown table whose cells are written as nvidia-smi prints them is still read."""
    lines = "\n".join(line for line in NVIDIA_SMI.splitlines() if "MiB /" in line)
    with pytest.raises(ValueError) as raised:
        coerce(lines, P5["usage.table"])
    assert "kept for the course staff to read" in raised.value.said and ROW in raised.value.said
    table = ("| gpu | utilization_percent | memory_mib |\n|---|---|---|\n"
             "| 0 | 38 % | 1012MiB / 32768MiB |\n| 1 | 21 % | 618MiB / 32768MiB |")
    assert coerce(table, P5["usage.table"]) == [{"gpu": 0, "utilization_percent": 38, "memory_mib": 1012},
                                                {"gpu": 1, "utilization_percent": 21, "memory_mib": 618}]


def test_other_tables_show_their_columns_without_invented_numbers():
    with pytest.raises(ValueError) as raised:
        coerce("fast", P5["timing.table"])
    assert "- {method: ..., gpus: ..., step_time_s: ..., total_time_s: ...}" in str(raised.value)
