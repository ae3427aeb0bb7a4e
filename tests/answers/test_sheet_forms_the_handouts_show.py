"""Answer-sheet forms honest students write, taken from the handouts and the sheet itself
(red team adv47, F1 F2 F5 F6). Each had been held for a person ("could not be read") though
its values were all there:

- F1: a table's rows as lists in the order of the sheet's own `columns:` line (`rows: [[single,
  1, "0,299 ms", "2,694 ms"], ...]`), each as long as the columns: it fits them one way only.
- F5: the handout's own "Rank 0 → GPU 0" written as text lines (P6 ddp.rank_to_gpu), P10's
  "Rank 0: cuda:0 + cuda:2" (hybrid.rank_gpus), P5's "2 GPUs: 32/32" (dp.split_per_gpu): read
  as the keyed mapping {"Rank 0": "GPU 0"} is.
- F6: a worked-out count with what it is counted over ("64 / 2 = 32 per rank", "64/4 = 16 per
  micro-batch"), and a count with its layout as a rate of one ("2 processes, one per GPU").
- F2: P5's usage table headed with the short forms of nvidia-smi's columns ("Util %", "Mem MiB").

Forms that could mean another value stay unread, for a person, as before.
"""
from __future__ import annotations

import pytest

from grader.answers.sheet import NotRead, coerce, template_questions

SHEETS = {assignment: template_questions(assignment)
          for assignment in ("practical5", "practical6", "practical10", "hw3")}


def _read(assignment: str, qid: str, raw):
    return coerce(raw, SHEETS[assignment][qid])


def _assert_read(assignment, qid, raw, expected):
    observed = _read(assignment, qid, raw)
    assert observed == expected, (f"{assignment} {qid}: expected {raw!r} read as {expected!r}, observed "
                                  f"{observed!r}; see grader/answers/sheet.py _table / numbers.py")


def _assert_unread(assignment, qid, raw):
    try:
        observed = _read(assignment, qid, raw)
    except ValueError as error:
        assert isinstance(error, NotRead), f"{qid}: {raw!r} refused without a message for the student"
        return
    pytest.fail(f"{assignment} {qid}: expected {raw!r} left for a person (NotRead), observed it read as "
                f"{observed!r}: it could mean another value")


TIMING_P5 = [{"method": "single", "gpus": 1, "step_time_s": 0.000299, "total_time_s": 0.002694},
             {"method": "dp", "gpus": 2, "step_time_s": 0.000349, "total_time_s": 0.003144}]
SPLIT = [{"gpus": 2, "split": [32, 32]}, {"gpus": 3, "split": [22, 22, 20]},
         {"gpus": 5, "split": [13, 13, 13, 13, 12]}]
RANKS = [{"rank": 0, "gpu": 0}, {"rank": 1, "gpu": 1}]
RANK_GPUS = [{"rank": 0, "gpus": [0, 2]}, {"rank": 1, "gpus": [1, 3]}]


# -- F1: rows as lists in the columns' order -------------------------------------------------------
@pytest.mark.parametrize("assignment, qid, rows, expected", [
    ("practical5", "timing.table", [["single", 1, "0,299 ms", "2,694 ms"], ["dp", 2, "0,349 ms", "3,144 ms"]],
     TIMING_P5),
    ("practical5", "timing.table", [["single", 1, 0.0075, 0.081]],
     [{"method": "single", "gpus": 1, "step_time_s": 0.0075, "total_time_s": 0.081}]),
    ("practical5", "dp.split_per_gpu", [[2, "32/32"], [3, "22/22/20"], [5, "13/13/13/13/12"]], SPLIT),
    ("practical5", "dp.split_per_gpu", [[2, [32, 32]], [3, [22, 22, 20]], [5, [13, 13, 13, 13, 12]]], SPLIT),
    ("practical5", "usage.table", [[0, 38, 1012], [1, "21%", "618MiB"]],
     [{"gpu": 0, "utilization_percent": 38, "memory_mib": 1012},
      {"gpu": 1, "utilization_percent": 21, "memory_mib": 618}]),
    ("practical6", "ddp.rank_to_gpu", [[0, "GPU 0"], [1, "GPU 1"]], RANKS),
    ("practical6", "ddp.rank_to_gpu", [[0, "cuda:0"], [1, "cuda:1"]], RANKS),
    ("practical6", "usage.table", [[0, "n/a", "8,20"], [1, "n/a", "8,20"]],
     [{"gpu": 0, "utilization_percent": "n/a", "memory_mib": 8.2},
      {"gpu": 1, "utilization_percent": "n/a", "memory_mib": 8.2}]),
    ("practical6", "compare.table", [["processes", "1", "multiple"], ["data split", "automatic", "manual"]],
     [{"aspect": "processes", "dp": "1", "ddp": "multiple"},
      {"aspect": "data split", "dp": "automatic", "ddp": "manual"}]),
    ("practical6", "timing.table", [["dp", "0,211 ms", "2,11 ms"], ["ddp", "0,149 ms", "1,49 ms"]],
     [{"method": "dp", "step_time_s": 0.000211, "total_time_s": 0.00211},
      {"method": "ddp", "step_time_s": 0.000149, "total_time_s": 0.00149}]),
    ("practical10", "hybrid.rank_gpus", [[0, [0, 2]], [1, [1, 3]]], RANK_GPUS),
    ("practical10", "micro.table", [[2, 2, 32], [8, 8, 8]],
     [{"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32},
      {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}]),
    ("hw3", "task2.step_time_table", [[6, 56.23], [12, "125.61 ms"]],
     [{"depth": 6, "step_time_ms": 56.23}, {"depth": 12, "step_time_ms": 125.61}]),
    ("hw3", "task4.table", [[2, 56.2, [80, 80]], [5, "61.0 ms", "40, 40, 40, 40, 40"]],
     [{"gpus": 2, "step_time_ms": 56.2, "memory_per_gpu_mib": [80, 80]},
      {"gpus": 5, "step_time_ms": 61.0, "memory_per_gpu_mib": [40, 40, 40, 40, 40]}]),
    # A mapping and a list row side by side: each the row it is.
    ("practical5", "timing.table", [{"method": "single", "gpus": 1, "step_time_s": "0,299 ms",
                                     "total_time_s": "2,694 ms"}, ["dp", 2, "0,349 ms", "3,144 ms"]], TIMING_P5),
])
def test_rows_listed_in_the_sheets_column_order_are_read(assignment, qid, rows, expected):
    _assert_read(assignment, qid, rows, expected)


@pytest.mark.parametrize("assignment, qid, rows", [
    ("practical5", "timing.table", [["single", "0,299 ms", "2,694 ms"]]),      # a column left out: which?
    ("practical5", "dp.split_per_gpu", [[2, 32, 32]]),                          # the split's sizes spread out
    ("practical5", "dp.split_per_gpu", [[2, "32/32"], [3, 22, 22, 20]]),        # one row of another length
    ("practical5", "dp.split_per_gpu", [2, "32/32"]),                           # one row, not a list of rows
    ("practical6", "ddp.rank_to_gpu", [[0]]),
    ("practical10", "micro.table", [[2, 32], [8, 8]]),
])
def test_list_rows_of_another_length_than_the_columns_keep_todays_message(assignment, qid, rows):
    with pytest.raises(NotRead) as refused:
        _read(assignment, qid, rows)
    assert "write them as a list of mappings" in refused.value.said, (
        f"{qid}: expected today's message for {rows!r}, observed {refused.value.said!r}")


# -- F5: "Rank 0 → GPU 0" lines ---------------------------------------------------------------------
@pytest.mark.parametrize("assignment, qid, text, expected", [
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0\nRank 1 -> GPU 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "Rank 0 → GPU 0\nRank 1 → GPU 1", RANKS),     # the handout's own
    ("practical6", "ddp.rank_to_gpu", "Rank 0 => GPU 0\nRank 1 => GPU 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "Rank 0: GPU 0\nRank 1: GPU 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> cuda:0; Rank 1 -> cuda:1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0, Rank 1 -> GPU 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "- Rank 0 → GPU 0\n- Rank 1 → GPU 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "rank 0: cuda:0\nrank 1: cuda:1\n", RANKS),
    ("practical6", "ddp.rank_to_gpu", "0 -> 0\n1 -> 1", RANKS),
    ("practical6", "ddp.rank_to_gpu", "Local rank 0 → cuda:0\nLocal rank 1 → cuda:1", RANKS),
    ("practical10", "hybrid.rank_gpus", "Rank 0: cuda:0 + cuda:2\nRank 1: cuda:1 + cuda:3", RANK_GPUS),
    ("practical10", "hybrid.rank_gpus", "Rank 0 -> cuda:0, cuda:2\nRank 1 -> cuda:1, cuda:3", RANK_GPUS),
    ("practical10", "hybrid.rank_gpus", "Rank 0: GPUs 0 and 2; Rank 1: GPUs 1 and 3", RANK_GPUS),
    ("practical5", "dp.split_per_gpu", "2 GPUs: 32/32\n3 GPUs: 22/22/20\n5 GPUs: 13/13/13/13/12", SPLIT),
    ("practical5", "dp.split_per_gpu", "2: 32/32\n3: 22/22/20\n5: 13/13/13/13/12", SPLIT),
    ("practical5", "dp.split_per_gpu", "2 GPUs -> [32, 32]; 3 GPUs -> [22, 22, 20]; 5 GPUs -> 13/13/13/13/12",
     SPLIT),
    ("practical5", "dp.split_per_gpu", "With 2 GPUs: 32 each\nWith 3 GPUs: 22/22/20\nWith 5 GPUs: 13/13/13/13/12",
     SPLIT),
])
def test_a_two_column_table_written_as_the_handouts_key_value_lines_is_read(assignment, qid, text, expected):
    _assert_read(assignment, qid, text, expected)


@pytest.mark.parametrize("assignment, qid, text", [
    ("practical6", "ddp.rank_to_gpu", "Rank 0 and 1 -> GPU 0"),                  # a key of two ranks
    ("practical6", "ddp.rank_to_gpu", "Rank 0, 1 -> GPU 0, 1"),
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0\nRank 0 -> GPU 1"),       # one rank twice
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0 -> GPU 1"),               # a chain
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0\nRank 1 uses GPU 1"),     # a line of another form
    ("practical6", "ddp.rank_to_gpu", "each rank -> its own GPU"),               # no rank named
    ("practical6", "ddp.rank_to_gpu", "Rank 0 -> GPU 0 / Rank 1 -> GPU 1"),
    ("practical6", "ddp.rank_to_gpu", "rank: 0\ngpu: 0"),                        # one row's columns
    ("practical10", "hybrid.rank_gpus", "Rank 0: cuda:0 -> cuda:2\nRank 1: cuda:1 -> cuda:3"),
    ("practical5", "dp.split_per_gpu", "2 GPUs: 32, 32, 3 GPUs: 22, 22, 20"),   # where does 2's end?
    # A table of three columns: one value per key does not say which column it is, as a mapping.
    ("practical10", "micro.table", "MICRO_BATCHES=2: 2 passes of 32\nMICRO_BATCHES=8: 8 passes of 8"),
    ("practical5", "usage.table", "GPU 0: 38%, 1012 MiB\nGPU 1: 21%, 618 MiB"),
])
def test_key_value_lines_that_could_mean_another_table_are_left_for_a_person(assignment, qid, text):
    _assert_unread(assignment, qid, text)


# -- F6: worked-out counts with what they count -----------------------------------------------------
@pytest.mark.parametrize("assignment, qid, answer, value", [
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 per rank", 32),
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 per rank", 32),
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 per GPU", 32),
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 samples per rank", 32),
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 per process.", 32),
    ("practical6", "ddp.per_rank_batch", "BATCH_SIZE / world_size = 32 per rank", 32),
    ("practical6", "ddp.per_rank_batch", "BATCH_SIZE / WORLD_SIZE = 64 / 2 = 32 per rank", 32),
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 per rank (each GPU)", 32),
    ("practical10", "hybrid.micro_batch_size", "64/4 = 16 per micro-batch", 16),
    ("practical10", "hybrid.micro_batch_size", "64 / 4 = 16 samples per micro-batch", 16),
    ("practical10", "hybrid.micro_batch_size", "64/4 = 16 per microbatch", 16),
    ("practical6", "ddp.world_size", "2 processes, one per GPU", 2),
    ("practical6", "ddp.world_size", "2, one per GPU", 2),
    ("practical6", "ddp.world_size", "two processes, one per GPU", 2),
    ("practical6", "ddp.world_size", "2 processes; one process per GPU", 2),
    ("practical10", "hybrid.num_processes", "2 processes, one per rank", 2),
    ("practical10", "hybrid.gpus_per_rank", "2, one per stage", 2),
    # Read before, and still: the result with one word, a remark in brackets after the number.
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 samples", 32),
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 each", 32),
    ("practical6", "ddp.world_size", "2 (one per GPU)", 2),
])
def test_a_worked_out_count_with_what_it_counts_is_read(assignment, qid, answer, value):
    _assert_read(assignment, qid, answer, value)


@pytest.mark.parametrize("assignment, qid, answer", [
    ("practical6", "ddp.world_size", "2 processes, 4 GPUs"),          # two counts: which one?
    ("practical6", "ddp.world_size", "2 processes, one per GPU, 4 GPUs"),
    ("practical6", "ddp.world_size", "one per GPU"),                  # a rate alone
    ("practical6", "ddp.per_rank_batch", "64/2 = 31 per rank"),       # the sum says 32
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 per 2 ranks"),
    ("practical6", "ddp.per_rank_batch", "64 / 2 = 32 per rank, 16 per GPU"),
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 per rank (2 ranks)"),
    ("practical6", "ddp.per_rank_batch", "64/2 = 32 (maybe 16) per rank"),
    ("practical10", "hybrid.micro_batch_size", "64/4 = 16 per micro-batch, 4 micro-batches"),
    ("practical10", "hybrid.gpus_per_rank", "4 GPUs, two per rank"),
])
def test_a_count_beside_another_number_stays_for_a_person(assignment, qid, answer):
    _assert_unread(assignment, qid, answer)


@pytest.mark.parametrize("cell", ["64/2 = 32 per GPU", "64 / 2 = 32 each", "64/2 = 32", "64/2 = 32 samples per GPU",
                                  "64/2 = 32 per GPU (64 total)"])
def test_a_worked_out_size_in_a_split_cell_is_every_gpus(cell):
    """The same form in P5's split table: one size for each GPU of the row, never the split [32]."""
    _assert_read("practical5", "dp.split_per_gpu", [{"gpus": 2, "split": cell}], [{"gpus": 2, "split": [32, 32]}])


@pytest.mark.parametrize("gpus, cell", [(3, "64/3 = 22 per GPU"), (2, "64/2 = 32 per GPU (128 total)"),
                                        (2, "64/2 = 32 per GPU, 16 per rank")])
def test_a_worked_out_split_that_does_not_add_up_is_kept_as_written(gpus, cell):
    observed = _read("practical5", "dp.split_per_gpu", [{"gpus": gpus, "split": cell}])
    assert observed == [{"gpus": gpus, "split": cell}], (
        f"expected {cell!r} kept as written for a person, observed {observed!r}; see sheet.py _split")


# -- F2: short headers of nvidia-smi's numbers ------------------------------------------------------
USAGE = [{"gpu": 0, "utilization_percent": 40, "memory_mib": 1012},
         {"gpu": 1, "utilization_percent": 15, "memory_mib": 432}]


@pytest.mark.parametrize("assignment", ["practical5", "practical6"])
@pytest.mark.parametrize("util, memory", [
    ("Util %", "Mem MiB"), ("Util", "Mem"), ("GPU util", "Memory"), ("Utilization", "Memory (MiB)"),
    ("Utilization (%)", "Used MiB"), ("Util (%)", "Mem (MiB)"), ("GPU Utilization (%)", "Memory used (MiB)"),
    ("GPU-Util", "Mem MiB"), ("Util%", "GPU Memory (MiB)"), ("Utilisation", "Mem used"),
    ("**Util %**", "**Mem MiB**"),
])
def test_a_usage_table_headed_with_short_forms_of_nvidia_smis_columns_is_read(assignment, util, memory):
    text = f"| GPU | {util} | {memory} |\n|---|---|---|\n| 0 | 40 | 1012 |\n| 1 | 15% | 432 MiB |"
    _assert_read(assignment, "usage.table", text, USAGE)
    _assert_read(assignment, "usage.table", [{"GPU": 0, util: 40, memory: 1012}, {"GPU": 1, util: "15%", memory: 432}],
                 USAGE)


def test_the_red_teams_usage_table_with_decimal_commas_is_read():
    _assert_read("practical5", "usage.table", "| GPU | Util % | Mem MiB |\n|---|---|---|\n| 0 | 40 | 12,52 |\n"
                                              "| 1 | 15 | 4,32 |",
                 [{"gpu": 0, "utilization_percent": 40, "memory_mib": 12.52},
                  {"gpu": 1, "utilization_percent": 15, "memory_mib": 4.32}])


@pytest.mark.parametrize("header", [
    "| GPU | Load | Mem MiB |", "| GPU | Util % | Temp |", "| GPU | Util % | Mem MiB | Power |",
    "| GPU | Util % | Memory total |",
])
def test_a_usage_header_naming_something_else_is_still_refused(header):
    with pytest.raises(NotRead, match="not a column of this table"):
        _read("practical5", "usage.table", f"{header}\n|---|---|---|\n| 0 | 40 | 1012 |")


def test_short_usage_headers_are_no_column_of_a_table_without_that_column():
    with pytest.raises(NotRead):
        _read("hw3", "task4.table", "| GPUs | Step time (ms) | Mem |\n|---|---|---|\n| 2 | 56.2 | 80, 80 |")
