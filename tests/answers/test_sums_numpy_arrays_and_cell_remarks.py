"""Answers written the ways honest students write them that had lost points or been held
(red team adv51, /tmp/adv51/REPORT.md F4, F2b, F5), each beside the near-miss that must stay
wrong or held:

- F4: "32 + 32" where the question asks the samples of ONE rank / micro-batch lists the parts'
  sizes (the course's own P5 answers write a split so), as "32/32" and "32, 32" are read: 32,
  not the total 64. Unequal terms ("32 + 30") and other questions ("2 + 2" transfers) keep
  their sum.
- F2b: numpy prints an array without commas; pasted into answers.yaml, `[3 3]` is YAML's list
  of ONE string '3 3': the numbers it lists ([3, 3]), never the first alone ([3]).
- F5: table cells with a remark or a count's "x" ("32 (64/2)", "0.081 (10 steps)", "2x") are
  read as the same text is as a single answer.
"""
from __future__ import annotations

import pytest

from grader.answers.sheet import NotRead, coerce, template_questions

HW3 = template_questions("hw3")
P5 = template_questions("practical5")
P6 = template_questions("practical6")
P10 = template_questions("practical10")
WHERE = "see grader/answers/numbers.py size_of_equal_parts and sheet.py _numpy_printed, _cell"


def _read(raw, question):
    try:
        return coerce(raw, question, [])
    except (NotRead, ValueError) as error:
        return f"not read: {error}"


@pytest.mark.parametrize("question, raw, read", [
    (P6["ddp.per_rank_batch"], "32 + 32", 32),
    (P6["ddp.per_rank_batch"], "32+32", 32),
    (P6["ddp.per_rank_batch"], "64 = 32 + 32", 32),
    (P10["hybrid.micro_batch_size"], "16 + 16 + 16 + 16", 16),
    # Near-misses: unequal parts keep their sum (a wrong answer to "each rank", never 32) ...
    (P6["ddp.per_rank_batch"], "32 + 30", 62),
    # ... a total that is not the parts' sum is not read as a part ...
    (P6["ddp.per_rank_batch"], "60 = 32 + 32", "not read"),
    # ... and where the question asks no part's samples, a sum is its value.
    (HW3["task5.transfers_5gpus"], "2 + 2", 4),
    (P10["hybrid.gpus_per_rank"], "1 + 1", 2),
])
def test_a_sum_of_equal_parts_is_each_part_where_one_part_is_asked(question, raw, read):
    got = _read(raw, question)
    ok = got.startswith(read) if isinstance(read, str) else got == read
    assert ok, f"{question.id} {raw!r}: expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("qid, raw, read", [
    ("task1.layers_per_gpu", ["3 3"], [3, 3]),
    ("task1.transfer_between", ["2 3"], [2, 3]),
    # Near-miss: an uneven split printed by numpy stays uneven (the check calls it wrong).
    ("task1.layers_per_gpu", ["4 2"], [4, 2]),
    # One number in a list stays one number.
    ("task1.layers_per_gpu", ["3"], [3]),
])
def test_a_numpy_printed_list_is_the_numbers_it_lists(qid, raw, read):
    got = _read(raw, HW3[qid])
    assert got == read, f"{qid} {raw!r}: expected {read!r}, observed {got!r} ({WHERE})"


def test_a_numpy_printed_row_of_peaks_is_one_value_per_gpu():
    rows = [{"gpus": 5, "step_time_ms": 12.5, "memory_per_gpu_mib": ["80.3 80.1 80.1 80.1 80.6"]},
            {"gpus": 2, "step_time_ms": 11.0, "memory_per_gpu_mib": "200.5 201.0"}]
    got = _read(rows, HW3["task4.table"])
    assert [row["memory_per_gpu_mib"] for row in got] == [[80.3, 80.1, 80.1, 80.1, 80.6], [200.5, 201.0]], (
        f"expected five and two MiB values, observed {got!r} ({WHERE})")


@pytest.mark.parametrize("cells, read", [
    ({"micro_batches": 2, "passes_per_step": "2x", "micro_batch_size": "32 (64/2)"},
     {"micro_batches": 2, "passes_per_step": 2, "micro_batch_size": 32}),
    ({"micro_batches": 8, "passes_per_step": "8x fwd/bwd", "micro_batch_size": "8 (64/8)"},
     {"micro_batches": 8, "passes_per_step": 8, "micro_batch_size": 8}),
    # Near-misses: "3x" is 3 (a wrong count, for the check to say), a shape is no count, and a
    # remark offering another answer is not read past.
    ({"micro_batches": 2, "passes_per_step": "3x", "micro_batch_size": "32 (or 16)"},
     {"micro_batches": 2, "passes_per_step": 3, "micro_batch_size": "32 (or 16)"}),
    ({"micro_batches": 2, "passes_per_step": "4x13", "micro_batch_size": 32},
     {"micro_batches": 2, "passes_per_step": "4x13", "micro_batch_size": 32}),
])
def test_micro_batch_cells_with_a_remark_or_times(cells, read):
    got = _read([cells], P10["micro.table"])
    assert got == [read], f"expected {read!r}, observed {got!r} ({WHERE})"


@pytest.mark.parametrize("total, read", [
    ("0.081 (10 steps)", 0.081),
    ("0.081 s (10 steps)", 0.081),
    # A unit in brackets is the value's, converted where it is of the column's kind (adv55 E).
    ("0.081 (ms)", 8.1e-05),
    # Near-misses: another kind's unit or a GPU count in the brackets, another answer: as written.
    ("0.081 (MiB)", "0.081 (MiB)"),
    ("0.081 (2 GPUs)", "0.081 (2 GPUs)"),
    ("0.081 (or 0.09)", "0.081 (or 0.09)"),
])
def test_a_time_with_a_remark_is_its_value(total, read):
    got = _read([{"method": "single", "gpus": 1, "step_time_s": 0.0081, "total_time_s": total}],
                P5["timing.table"])
    assert got[0]["total_time_s"] == read, f"{total!r}: expected {read!r}, observed {got!r} ({WHERE})"


# F6: the scripts' own printed lines pasted as the rank table.
@pytest.mark.parametrize("question, raw, read", [
    (P6["ddp.rank_to_gpu"], "Rank: 0 | Local Rank: 0\nRank: 1 | Local Rank: 1",
     [{"rank": 0, "gpu": 0}, {"rank": 1, "gpu": 1}]),
    # A double-quoted YAML string folds the lines into one (adv51's sheet).
    (P6["ddp.rank_to_gpu"], "Rank: 0 | Local Rank: 0 Rank: 1 | Local Rank: 1",
     [{"rank": 0, "gpu": 0}, {"rank": 1, "gpu": 1}]),
    (P10["hybrid.rank_gpus"], "[Rank 0] stage 0 on cuda:0, stage 1 on cuda:2 "
                              "[Rank 1] stage 0 on cuda:1, stage 1 on cuda:3",
     [{"rank": 0, "gpus": [0, 2]}, {"rank": 1, "gpus": [1, 3]}]),
    # Near-miss: swapped GPUs stay swapped (the check calls them wrong).
    (P6["ddp.rank_to_gpu"], "Rank: 0 | Local Rank: 1\nRank: 1 | Local Rank: 0",
     [{"rank": 0, "gpu": 1}, {"rank": 1, "gpu": 0}]),
    (P10["hybrid.rank_gpus"], "[Rank 0] stage 0 on cuda:0, stage 1 on cuda:2\n"
                              "[Rank 1] stage 0 on cuda:1, stage 1 on cuda:3",
     [{"rank": 0, "gpus": [0, 2]}, {"rank": 1, "gpus": [1, 3]}]),
    # Stages in another order are put in theirs (the question asks stage 0's GPU first).
    (P10["hybrid.rank_gpus"], "[Rank 0] stage 1 on cuda:2, stage 0 on cuda:0\n"
                              "[Rank 1] stage 0 on cuda:1, stage 1 on cuda:3",
     [{"rank": 0, "gpus": [0, 2]}, {"rank": 1, "gpus": [1, 3]}]),
    # Held for a person: one rank twice, a stage missing, another answer offered.
    (P6["ddp.rank_to_gpu"], "Rank: 0 | Local Rank: 0\nRank: 0 | Local Rank: 1", "not read"),
    (P10["hybrid.rank_gpus"], "[Rank 0] stage 1 on cuda:2\n[Rank 1] stage 0 on cuda:1, stage 1 on cuda:3",
     "not read"),
    (P10["hybrid.rank_gpus"], "[Rank 0] stage 0 on cuda:0, stage 1 on cuda:2 or cuda:3\n"
                              "[Rank 1] stage 0 on cuda:1, stage 1 on cuda:3", "not read"),
])
def test_the_scripts_printed_rank_lines_are_the_table(question, raw, read):
    got = _read(raw, question)
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{question.id} {raw!r}: expected {read!r}, observed {got!r} (see keyed_lines.printed_rank_lines)"


# F8: a count, a dash, then words on it.
@pytest.mark.parametrize("question, raw, read", [
    (P6["ddp.world_size"], "2 - ranks 0 and 1", 2),
    (P10["hybrid.num_processes"], "2 - one per data-parallel replica", 2),
    # Near-misses: a calculation keeps its value, another answer or a formula is not read.
    (P6["ddp.world_size"], "5 - 1", 4),
    (P6["ddp.world_size"], "2 - or maybe 4", "not read"),
    (P6["ddp.world_size"], "N - 1", "not read"),
])
def test_a_count_with_a_dashed_remark_is_the_count(question, raw, read):
    got = _read(raw, question)
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{question.id} {raw!r}: expected {read!r}, observed {got!r} (see sheet._DASHED_REMARK)"


# F8: a count times one bracketed shape; a list keyed by GPU.
@pytest.mark.parametrize("raw, read", [
    ("2 x torch.Size([32, 1000])", [[32, 1000], [32, 1000]]),
    ("2 × [32, 1000]", [[32, 1000], [32, 1000]]),
    # Near-misses: three chunks stay three (the check calls it wrong), a chunk's rows are no
    # shape, another answer is not read.
    ("3 x torch.Size([32, 1000])", [[32, 1000]] * 3),
    ("2 x [32]", "not read"),
    ("2 x [32, 1000] (or [64, 1000])", "not read"),
])
def test_a_count_times_a_shape_is_that_many_chunks(raw, read):
    got = _read(raw, template_questions("practical4")["part2.chunk_shapes"])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{raw!r}: expected {read!r}, observed {got!r} (see numbers.times_shape_said)"


@pytest.mark.parametrize("raw, read", [
    ({0: 3, 1: 3}, [3, 3]),
    ({"GPU 0": 3, "GPU 1": 3}, [3, 3]),
    ({"cuda:1": 2, "cuda:0": 4}, [4, 2]),   # near-miss: uneven, in the GPUs' order
    ({1: 3, 2: 3}, "not read"),              # no GPU 0: which GPUs these are is not clear
    ({"first": 3, "second": 3}, "not read"),
])
def test_layers_per_gpu_as_a_mapping_keyed_by_gpu(raw, read):
    got = _read(raw, HW3["task1.layers_per_gpu"])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{raw!r}: expected {read!r}, observed {got!r} (see sheet._by_gpu)"


# F8: a list with a remark on the GPUs left idle; "4 micro-batches of 16" answering either count.
@pytest.mark.parametrize("qid, raw, read", [
    ("broken.gpus_in_use", "[0, 1] (2 and 3 idle)", [0, 1]),
    ("broken.gpus_in_use", "[0, 1] (2 and 3 unused)", [0, 1]),
    ("broken.gpus_in_use", "[0, 1, 2] (3 idle)", [0, 1, 2]),     # near-miss: read, and wrong
    ("broken.gpus_in_use", "[0, 1] (1 idle)", "not read"),        # the remark takes one back
    ("broken.gpus_in_use", "[0, 1] (or 2 and 3 idle)", "not read"),
    ("hybrid.micro_batches_per_step", "4 micro-batches of 16", 4),
    ("hybrid.micro_batch_size", "4 micro-batches of 16 samples", 16),
    ("hybrid.num_processes", "4 micro-batches of 16", "not read"),  # answers another question
])
def test_p10_lists_with_an_idle_remark_and_micro_batches_of(qid, raw, read):
    got = _read(raw, P10[qid])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{qid} {raw!r}: expected {read!r}, observed {got!r} (see sheet._IDLE_REMARK, numbers.micro_batches_said)"


# F8: HW3 Task 5's counts with their rate of one ("20, one per layer").
@pytest.mark.parametrize("qid, raw, read", [
    ("task5.to_calls_5gpus", "20, one per layer", 20),
    ("task5.transfers_5gpus", "4 transfers, one per boundary", 4),
    ("task5.transfers_5gpus", "4, one per boundary between GPUs", 4),
    ("task5.transfers_5gpus", "20 (one per layer)", 20),   # near-miss: read, and wrong for 5 GPUs
    ("task5.transfers_5gpus", "4, two per boundary", "not read"),
    ("task5.transfers_5gpus", "one per boundary", "not read"),   # a rate, no count
])
def test_a_task5_count_with_its_rate_of_one(qid, raw, read):
    got = _read(raw, HW3[qid])
    ok = got.startswith(read) if isinstance(read, str) and isinstance(got, str) else got == read
    assert ok, f"{qid} {raw!r}: expected {read!r}, observed {got!r} (see numbers._RATE_REMARK_RE)"
