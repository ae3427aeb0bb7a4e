"""Table cells written around their number the ways honest students write them (adv55 G, E, F,
C, D, A, I): the script's printed line pasted as the cell, a spread after the mean, the unit in
brackets, a Markdown header naming the quantity without its unit, a flow of GPUs; each beside
its hostile twin (a hedge, a second value, a unit of another kind), which is never read."""
import pytest

from grader.answers.sheet import NotRead, coerce, template_questions

HW3 = template_questions("hw3")
P6 = template_questions("practical6")
P10 = template_questions("practical10")
WHERE = "see grader/answers/cell_forms.py and sheet.py _cell, _quantities, markdown_table"


def _row(question, cells):
    return coerce([cells], question)[0]


@pytest.mark.parametrize("cell, read", [
    # adv55 G: hw3/model_parallel.py's own printed lines.
    ("Median step time: 56.23 ms", 56.23),
    ("median 56.23 ms", 56.23),
    ("avg 56.23 ms", 56.23),
    ("mean = 56.23 ms", 56.23),
    # adv55 F: a mean and its spread.
    ("56.23 ± 1.2 ms", 56.23),
    ("199.17±2.0 ms", 199.17),
    ("182.59 ms ± 3.1", 182.59),
    ("56.23 +/- 1.2", 56.23),
    ("56.23 ms (±1.2)", 56.23),
    ("56.23 ms (std 1.2)", 56.23),
    # adv55 E: the unit in brackets, of the column's kind (seconds convert).
    ("56.23 (ms)", 56.23),
    ("0.05623 (s)", 56.23),
    # Hostile twins: a hedge or a second value, another quantity's label or unit: as written.
    ("56.23 ± 1.2 ms or 60 ms", "56.23 ± 1.2 ms or 60 ms"),
    ("56.23 ± 1.2 ms, 60 ms", "56.23 ± 1.2 ms, 60 ms"),
    ("Median step time: 56 ms or 60 ms", "Median step time: 56 ms or 60 ms"),
    ("Max memory allocated: 200 MiB", "Max memory allocated: 200 MiB"),
    ("56.23 (MiB)", "56.23 (MiB)"),
    ("56.23 ms (or 60)", "56.23 ms (or 60)"),
    ("maybe 56 ms", "maybe 56 ms"),
])
def test_a_step_time_cell(cell, read):
    got = _row(HW3["task2.step_time_table"], {"depth": 6, "step_time_ms": cell})["step_time_ms"]
    assert got == read, f"{cell!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("cell, read", [
    ("GPU 0: max memory allocated 200.4 MiB, GPU 1: max memory allocated 200.7 MiB", [200.4, 200.7]),   # adv55 G
    ("200.4, 200.7 (MiB)", [200.4, 200.7]),   # adv55 C
    ("200.4, 200.7 [MiB]", [200.4, 200.7]),
    ("0.2, 0.2 (GiB)", [204.8, 204.8]),
    # Hostile twins: a time's unit, a time's label, a hedge.
    ("200.4, 200.7 (ms)", "200.4, 200.7 (ms)"),
    ("GPU 0: step time 200.4 MiB, GPU 1: step time 200.7 MiB",
     "GPU 0: step time 200.4 MiB, GPU 1: step time 200.7 MiB"),
    ("200.4, 200.7 (MiB) or 300, 300", "200.4, 200.7 (MiB) or 300, 300"),
])
def test_a_per_gpu_memory_cell(cell, read):
    got = _row(HW3["task4.table"], {"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": cell})
    assert got["memory_per_gpu_mib"] == read, \
        f"{cell!r}: expected {read!r}, observed {got['memory_per_gpu_mib']!r} ({WHERE})"


@pytest.mark.parametrize("column, cell, read", [
    # adv55 E: Practical 6's rows with the unit in brackets.
    ("step_time_s", "0.0203 (s)", 0.0203),
    ("total_time_s", "0.2353 (s)", 0.2353),
    ("step_time_s", "20.3 (ms)", 0.0203),
    ("step_time_s", "step time 0.0203 s", 0.0203),
    ("total_time_s", "total time: 0.2353 s", 0.2353),
    # Hostile: another quantity's label, another kind's unit.
    ("step_time_s", "total time: 0.2353 s", "total time: 0.2353 s"),
    ("total_time_s", "step time 0.0203 s", "step time 0.0203 s"),
    ("step_time_s", "0.0203 (MiB)", "0.0203 (MiB)"),
])
def test_a_practical6_timing_cell(column, cell, read):
    got = _row(P6["timing.table"], {"method": "dp", column: cell})[column]
    assert got == read, f"{column} {cell!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("column, cell, read", [
    ("utilization_percent", "41 (%)", 41),
    ("memory_mib", "842 (MiB)", 842),
    ("memory_mib", "842 (ms)", "842 (ms)"),   # a unit of another kind is never read past
    ("utilization_percent", "41 (MiB)", "41 (MiB)"),
])
def test_a_practical6_usage_cell(column, cell, read):
    got = _row(P6["usage.table"], {"gpu": 0, column: cell})[column]
    assert got == read, f"{column} {cell!r}: expected {read!r}, observed {got!r} ({WHERE})"


def test_a_pipe_table_headed_by_the_quantity_without_its_unit():
    """adv55 D: the script's print labels as headers, every cell with its unit."""
    table = ("| GPUs | Median step time | Max memory allocated |\n|---|---|---|\n"
             "| 2 | 182.59 ms | GPU 0: 200.4 MiB, GPU 1: 200.7 MiB |\n"
             "| 5 | 199.17 ms | GPU 0: 80.3 MiB, GPU 1: 80.1 MiB, GPU 2: 80.1 MiB, GPU 3: 80.1 MiB, GPU 4: 80.6 MiB |")
    got = coerce(table, HW3["task4.table"])
    assert got == [{"gpus": 2, "step_time_ms": 182.59, "memory_per_gpu_mib": [200.4, 200.7]},
                   {"gpus": 5, "step_time_ms": 199.17, "memory_per_gpu_mib": [80.3, 80.1, 80.1, 80.1, 80.6]}], \
        f"observed {got!r} ({WHERE})"


@pytest.mark.parametrize("table", [
    "| DEPTH | Step time |\n|---|---|\n| 6 | 56.23 |\n| 12 | 125 ms |",   # a cell without its unit
    "| DEPTH | Step time |\n|---|---|\n| 6 | 56.23 MiB |",               # another kind's unit
    "| DEPTH | Memory |\n|---|---|\n| 6 | 56.23 ms |",                   # another quantity named
])
def test_a_quantity_header_is_not_taken_without_its_unit_in_every_cell(table):
    with pytest.raises(NotRead):
        coerce(table, HW3["task2.step_time_table"])


def test_time_alone_names_no_column_where_the_table_has_two_times():
    with pytest.raises(NotRead):
        coerce("| Method | Time | Total time |\n|---|---|---|\n| dp | 0.02 s | 0.2 s |", P6["timing.table"])


@pytest.mark.parametrize("cell, read", [
    ("cuda:0 -> cuda:2", [0, 2]),   # adv55 A: the way the data flows, stage 0's GPU first
    ("cuda:0 → cuda:2", [0, 2]),
    ("GPU 0 -> GPU 2", [0, 2]),
    ("cuda:0 (stage 0) -> cuda:2 (stage 1)", [0, 2]),
    ("cuda:0 -> cuda:2 or cuda:1", "cuda:0 -> cuda:2 or cuda:1"),
])
def test_a_flow_of_gpus_lists_both(cell, read):
    got = _row(P10["hybrid.rank_gpus"], {"rank": 0, "gpus": cell})["gpus"]
    assert got == read, f"{cell!r}: expected {read!r}, observed {got!r} (see numbers.py _LABEL_RE)"


@pytest.mark.parametrize("qid, answer, read", [
    # adv55 I: a count, then what it is.
    ("hybrid.num_processes", "2, one for each data-parallel replica", 2),
    ("hybrid.gpus_per_rank", "2 GPUs, 1 per stage", 2),
    ("hybrid.micro_batches_per_step", "4, of 16 rows each", 4),
    ("hybrid.micro_batches_per_step", "4 (16 samples each)", 4),
    # Hostile twins: a hedge, a second count.
    ("hybrid.num_processes", "2, or 4", None),
    ("hybrid.num_processes", "2, maybe four", None),
    ("hybrid.num_processes", "2, not 4", None),
    ("hybrid.num_processes", "2, 4", None),
    ("hybrid.micro_batches_per_step", "4, of 16 rows each, or 8", None),
    ("hybrid.micro_batches_per_step", "4, of 16 rows each?", None),
    ("hybrid.micro_batches_per_step", "4, 16 rows", None),
])
def test_a_count_with_a_remark_after_a_comma(qid, answer, read):
    try:
        got = coerce(answer, P10[qid])
    except NotRead:
        got = None
    assert got == read, (f"{answer!r}: expected {read!r}, observed {got!r} (see sheet.py _DASHED_REMARK, "
                         "numbers.py remark_on_count, _RATE_REMARK_RE)")


@pytest.mark.parametrize("answer", ["thirty-two", "sixty four"])
def test_a_compound_number_word_is_said_to_be_one(answer):
    with pytest.raises(NotRead) as refused:
        coerce(answer, P10["hybrid.micro_batch_size"])
    assert "number in words" in refused.value.said and "formula" not in refused.value.said, \
        f"{answer!r}: observed {refused.value.said!r} (see sheet.py _int)"
