"""The helpers of the practicals' answer cross-checks (grader/checks/practical_answers.py):
answers next to the runs they describe, GPUs as students write them, timing tables."""
from __future__ import annotations

import pytest

from grader.answers.collect import Answers
from grader.checks.practical_answers import (answer_against, checked_usage_table,
                                             constant_in_source, device_name,
                                             gpu_index, gpu_list, incomplete_rows,
                                             printed_numbers, rows_by, step_times,
                                             total_disagreements, unread_cells_wait, whole_numbers)
from grader.checks.support import AnswerNotRead
from grader.harness.observation import Observation


def sheet(values=None, problems=()):
    answers = Answers("practical5", "sheet", values=dict(values or {}),
                      origin={k: "practical5/answers.yaml" for k in values or {}},
                      problems=list(problems),
                      questions={"memory.most_memory_gpu": "Which GPU holds the most memory?"})
    return answers


def ran(**fields):
    return Observation(script="practical5/practical5_dp.py", gpus=2, returncode=0, **fields)


def crashed():
    return Observation(script="practical5/practical5_dp.py", gpus=2, returncode=1, events=[
        {"event": "exception", "type": "NotImplementedError", "site": "practical5_dp.py:52",
         "message": "TODO (Practical 5): wrap the model"}])


# -- answer_against ------------------------------------------------------------------------------
def test_an_answer_next_to_a_run_that_ran_is_returned():
    assert answer_against(sheet({"memory.most_memory_gpu": 0}), "memory.most_memory_gpu",
                          ran()) == 0


def test_a_missing_answer_says_what_and_where():
    with pytest.raises(AssertionError) as failure:
        answer_against(sheet(), "memory.most_memory_gpu", ran())
    text = str(failure.value)
    assert "Expected: an answer to: Which GPU holds the most memory?" in text
    assert "Observed: no answer found" in text and "could not be run" not in text
    assert "Where to look: practical5/answers.yaml (memory.most_memory_gpu)" in text


def test_a_missing_answer_and_a_todo_are_both_said():
    with pytest.raises(AssertionError) as failure:
        answer_against(sheet(), "memory.most_memory_gpu", ran(), crashed())
    text = str(failure.value)
    assert "no answer found" in text and "TODO" in text and "NotImplementedError" in text
    assert "practical5/answers.yaml (memory.most_memory_gpu)" in text


def test_an_unreadable_answer_says_why_it_was_not_read():
    problem = ("practical5/answers.yaml: memory.most_memory_gpu: expected a whole number, "
               "got 'cuda:0'")
    with pytest.raises(AssertionError, match="expected a whole number, got 'cuda:0'"):
        answer_against(sheet(problems=[problem]), "memory.most_memory_gpu", ran())


def test_an_answer_cannot_be_checked_against_code_that_did_not_run():
    with pytest.raises(AssertionError) as failure:
        answer_against(sheet({"memory.most_memory_gpu": 0}), "memory.most_memory_gpu", crashed())
    assert "your code did not run to the end" in str(failure.value)
    assert "TODO" in str(failure.value)


# -- the nvidia-smi table -----------------------------------------------------------------------
READINGS = [{"gpu": 0, "utilization_percent": 35, "memory_mib": 900},
            {"gpu": 1, "utilization_percent": 20, "memory_mib": 600}]


def trained():
    return ran(events=[{"event": "step", "index": 1}])


def test_a_complete_usage_table_beside_a_script_that_trained_is_read_by_gpu():
    reported = {}
    rows = checked_usage_table(sheet({"usage.table": READINGS}), reported, "usage.table",
                               "DataParallel", trained())
    assert rows[0]["memory_mib"] == 900 and rows[1]["utilization_percent"] == 20
    assert reported["usage.table"]["0"] == {"utilization_percent": 35, "memory_mib": 900}


def test_a_usage_table_beside_a_script_that_does_not_run_earns_nothing():
    # The template's TODO left in place: the readings cannot have been observed, and a filled
    # table is what a non-solution can have too.
    with pytest.raises(AssertionError) as failure:
        checked_usage_table(sheet({"usage.table": READINGS}), {}, "usage.table", "DataParallel",
                            crashed())
    text = str(failure.value)
    assert "your code did not get that far" in text and "TODO" in text, text


def test_a_usage_table_beside_a_script_that_never_trains_earns_nothing():
    with pytest.raises(AssertionError, match="your code never did what the question is about"):
        checked_usage_table(sheet({"usage.table": READINGS}), {}, "usage.table", "DataParallel",
                            ran())


def test_an_incomplete_usage_table_says_what_it_lacks():
    with pytest.raises(AssertionError) as failure:
        checked_usage_table(sheet({"usage.table": READINGS[:1]}), {}, "usage.table",
                            "DataParallel", trained())
    assert "rows for 1 GPU(s)" in str(failure.value)


@pytest.mark.parametrize("utilization", ["n/a", "N/A", "-", "not available", "no GPU (virtual GPUs)"])
def test_utilization_said_not_to_be_available_is_complete_and_flagged(utilization):
    """Virtual GPUs have no nvidia-smi: a student writing n/a lost the point that a made-up 0 %
    earned. Said so, the table is complete, and the instructor is told."""
    flags = []
    readings = [dict(row, utilization_percent=utilization) for row in READINGS]
    checked_usage_table(sheet({"usage.table": readings}), {}, "usage.table", "DataParallel",
                        trained(), flag=flags.append)
    assert len(flags) == 1 and "utilization given as not available" in flags[0]


def test_utilization_that_is_neither_a_percentage_nor_not_available_is_said():
    readings = [dict(row, utilization_percent="busy") for row in READINGS]
    with pytest.raises(AssertionError, match="utilization_percent is 'busy': expected one reading from 0 to 100"):
        checked_usage_table(sheet({"usage.table": readings}), {}, "usage.table", "DataParallel",
                            trained())


# -- GPUs and devices ---------------------------------------------------------------------------
@pytest.mark.parametrize("written, index", [
    (0, 0), (3, 3), ("2", 2), ("cuda:1", 1), (" CUDA:1 ", 1), ("cuda 1", 1), ("GPU 3", 3),
    ("gpu0", 0), ("device(type='cuda', index=2)", 2), ("'cuda:0'", 0), (1.0, 1),
    ("cpu", None), ("cuda", None), (True, None), (-1, None), ("the first GPU", None), (None, None),
])
def test_gpu_index_reads_the_ways_students_write_a_gpu(written, index):
    assert gpu_index(written) == index


def test_device_name_is_what_pytorch_prints():
    assert device_name("GPU 1") == "cuda:1" and device_name(0) == "cuda:0"
    assert device_name("CPU") == "cpu" and device_name("cuda") is None


@pytest.mark.parametrize("written, indices", [
    ([0, 2], [0, 2]), (["cuda:1", "cuda:3"], [1, 3]), ("0, 2", [0, 2]),
    ("[cuda:0, cuda:2]", [0, 2]),
    ("cuda:0 + cuda:2", [0, 2]), ("cuda 1 and cuda 3", [1, 3]), ("GPU 0, GPU 2", [0, 2]),
    ([], None), ("cuda", None), ([0, "cpu"], None), (3, [3]), ("cuda:1", [1]), ("22/22", [22, 22]),
    # A TA's audit (p10_answers_alt): plural "GPUs" and "only" before the list.
    ("GPUs 0 and 2", [0, 2]), ("only GPUs 0 and 1", [0, 1]), ("gpus 0 & 2", [0, 2]), ("GPU0, GPU2", [0, 2]),
    ("4 GPUs: 0, 1, 2, 3", None), ("GPUs", None),
])
def test_gpu_list(written, indices):
    assert gpu_list(written) == indices


def test_rows_by_keys_numbers_and_words():
    rows = [{"method": "Single", "gpus": 1}, {"method": "dp", "gpus": 2.0}, {"gpus": "3"},
            {"method": "dp", "gpus": 9}, "not a row"]
    assert rows_by(rows, "method") == {"single": rows[0], "dp": rows[1]}
    assert set(rows_by(rows, "gpus")) == {1, 2, 3, 9}
    assert rows_by(None, "gpus") == {}


def test_rows_by_reads_a_key_with_a_remark_as_its_first_word_and_ranks_by_name():
    rows = [{"method": "dp (2 GPUs)"}, {"method": "single (1 GPU)"}, {"rank": "Rank 1"}]
    by_method = rows_by(rows[:2], "method")
    assert by_method["dp"] is rows[0] and by_method["single"] is rows[1] and 2 not in by_method
    assert rows_by(rows[2:], "rank") == {1: rows[2]}


# -- what a run printed, and a script's constants ----------------------------------------------
def test_printed_numbers_and_step_times_in_seconds():
    out = ("step 0: loss 1.056931, step time 0.0470 s\nstep 1: loss 1.05, step time 0.0205 s\n"
           "total time: 0.2353 s\nfinal loss: 1.053200\n")
    assert printed_numbers(out, r"final loss: {number}") == [1.0532]
    assert step_times(ran(stdout=out)) == ([0.047, 0.0205], 0.2353)


def test_step_times_printed_in_ms_become_seconds():
    out = "step 0: loss 1.05, time 47.0 ms\nstep 1: loss 1.05, time 20.5 ms\n"
    assert step_times(ran(stdout=out)) == ([0.047, 0.0205], None)


def test_step_times_fall_back_to_the_trace():
    run = ran(events=[{"event": "step", "rank": 0, "t": t} for t in (1.0, 1.5, 1.75)]
              + [{"event": "step", "rank": 1, "t": 9.0}])
    assert step_times(run) == ([0.5, 0.25], None)


def test_step_times_on_virtual_gpus_are_the_simulated_clocks():
    """Shown beside a student's timing table: on virtual GPUs the script's prints are this
    machine's wall clock (a student saw 0.036 s 'measured' beside their simulated 0.000172)."""
    out = "step 0: loss 1.05, step time 0.0470 s\nstep 1: loss 1.05, step time 0.0358 s\ntotal time: 0.1 s\n"
    run = ran(stdout=out, events=[
        {"event": "start", "rank": 0, "virtual": True},
        {"event": "forward", "rank": 0, "thread": "MainThread", "sim_t": 0.0001},
        *({"event": "step", "rank": 0, "t": 1.0 + i, "sim_t": 0.0003 + 0.0002 * i} for i in range(3))])
    seconds, total = step_times(run)
    # The total of the steps after the first: what `pdl-grade run` tells a student to report.
    assert seconds == pytest.approx([0.0002, 0.0002]) and total == pytest.approx(0.0004)


def test_constant_in_source(tmp_path):
    script = tmp_path / "p.py"
    script.write_text("STEPS = 10\nLR = 0.1\nFLAG = True\ndef f():\n    STEPS = 3\n")
    assert constant_in_source(script, "STEPS") == 10
    assert constant_in_source(script, "LR") is None and constant_in_source(script, "FLAG") is None
    assert constant_in_source(script, "MISSING") is None
    assert constant_in_source(tmp_path / "absent.py", "STEPS") is None
    (tmp_path / "broken.py").write_text("STEPS = (\n")
    assert constant_in_source(tmp_path / "broken.py", "STEPS") is None


# -- timing tables -------------------------------------------------------------------------------
def test_incomplete_rows_name_what_is_missing():
    rows = rows_by([{"method": "single", "step_time_s": 0.02, "total_time_s": 0.2},
                    {"method": "dp", "step_time_s": 0, "total_time_s": "fast"}], "method")
    assert incomplete_rows(rows, ["single", "dp"], ["step_time_s", "total_time_s"]) == [
        "dp: step_time_s is 0, not a positive number", "dp: total_time_s is 'fast', not a number"]
    assert incomplete_rows({}, ["ddp"], ["step_time_s"]) == ["no row with method: ddp"]


def test_total_against_steps_times_step_time():
    rows = rows_by([
        {"method": "mean", "step_time_s": 0.0235, "total_time_s": 0.235},     # exactly 10 x
        {"method": "median", "step_time_s": 0.02, "total_time_s": 0.689},     # a slow first step
        {"method": "units", "step_time_s": 0.0235, "total_time_s": 0.0235},   # one step's worth
        {"method": "warmup", "step_time_s": 0.001, "total_time_s": 0.3},      # 30x: flagged only
        {"method": "ms", "step_time_s": 23.5, "total_time_s": 0.235},         # ms in the s column
        {"method": "unknown", "step_time_s": 0.001, "total_time_s": 0.0001},
    ], "method")
    problems, flags = total_disagreements(rows, {"mean": 10, "median": 10, "units": 10,
                                                 "warmup": 10, "ms": 10, "unknown": None})
    assert len(problems) == 2 and problems[0].startswith("units: a total of 0.0235 s for 10 steps")
    assert problems[1].startswith("ms: a total of 0.235 s for 10 steps of 23.5 s")
    assert len(flags) == 1 and flags[0].startswith("warmup: total 0.3 s is 30x")


@pytest.mark.parametrize("written, numbers", [
    ([22, 22, 20], [22, 22, 20]), (64, [64]), ("22, 22, 20", [22, 22, 20]), ("[13,13]", [13, 13]),
    ([1.0, 2], [1, 2]), ("1 2 3", [1, 2, 3]), ("3.0", [3]),
    ("x", None), ([], None), (True, None), ([True], None), (2.5, None), ([1, "two"], None),
])
def test_whole_numbers(written, numbers):
    assert whole_numbers(written) == numbers


def test_per_rank_line_orders_ranks_and_keeps_unknown_ones_last():
    from grader.checks.practical_answers import per_rank_line
    assert per_rank_line({1: "cuda:1", 0: "cuda:0"}, "gpu") == "rank 0: gpu cuda:0; rank 1: gpu cuda:1"
    assert per_rank_line({"x": [3], 0: [0, 2]}, "gpus") == "rank 0: gpus [0, 2]; rank x: gpus [3]"
    assert per_rank_line({}, "gpu") == ""


# -- practical10: the passes a step runs, as the feedback says them -------------------------------
def _steps(forwards, backwards, ranks=(0, 1)):
    events = [{"event": "init_process_group", "rank": r} for r in ranks]
    for rank in ranks:
        for _ in range(2):
            events += [{"event": "forward", "thread": "MainThread", "rank": rank, "batch": [32, 8]}] * forwards
            events += [{"event": "backward", "rank": rank}] * backwards
            events.append({"event": "step", "rank": rank})
    return Observation(script="practical10/sample.py", gpus=4, returncode=0, events=events)


@pytest.mark.parametrize("forwards, backwards, said", [
    (2, 2, "2 forward + backward pass(es)"),
    # The micro-batches' losses summed before one backward: the feedback must not claim 2 backwards.
    (2, 1, "2 forward and 1 backward pass(es)"),
])
def test_practical10_says_the_backward_passes_a_step_really_runs(forwards, backwards, said):
    from grader.checks.test_practical10 import passes_said
    assert passes_said(_steps(forwards, backwards)) == said


def test_practical10_a_loss_logged_under_no_grad_is_no_micro_batch():
    """A TA's P10: a full-batch loss printed under torch.no_grad() after each optimizer step
    counted as a fifth micro-batch of 64 rows, costing a correct solution 2.75 points."""
    from grader.checks.test_practical10 import micro_batch_pattern, step_pattern
    run = _steps(4, 4)
    logged = []
    for event in run.events:
        logged.append(event)
        if event.get("event") == "step":
            logged.append({"event": "forward", "thread": "MainThread", "rank": event["rank"],
                           "batch": [64, 8], "grad": False})
    run = Observation(script="practical10/sample.py", gpus=4, returncode=0, events=logged)
    assert [s["forwards"] for s in step_pattern(run)] == [4, 4]
    forwards, rows = micro_batch_pattern(run)
    assert set(forwards) == {4} and set(rows) == {32}


@pytest.mark.parametrize("label, method", [
    ("DataParallel", "dp"), ("nn.DataParallel (2 GPUs)", "dp"), ("Single GPU", "single"),
    ("single", "single"), ("DistributedDataParallel", "ddp"), ("DDP", "ddp"), ("dp", "dp")])
def test_a_timing_rows_label_as_the_handout_writes_it_is_its_method(label, method):
    """A TA's P5 sheet labelled its timing rows as the handout's table does ("DataParallel")."""
    from grader.checks.practical_answers import method_rows
    row = {"method": label, "step_time_s": 0.1}
    assert method_rows([row])[method] is row
    assert "dp" not in method_rows([{"method": "Data-parallel-ish", "step_time_s": 1}])


def test_a_batch_of_another_size_is_said_as_its_own_scatter():
    """A TA's P5 with a batch of 64 x the GPUs (128 on 2) was told its code splits "[128, 64]":
    the wrapper's own forward of the whole batch on cuda:0 was taken for a share."""
    from grader.checks.test_practical5 import observed_split
    events = [{"event": "forward", "step": 0, "batch": [128, 1000], "input_device": "cuda:0",
               "module": "DataParallel"},
              {"event": "dp_scatter", "batch": 128, "sizes": [64, 64]},
              {"event": "forward", "step": 0, "batch": [64, 1000], "input_device": "cuda:1"}]
    run = Observation(script="practical5/practical5_dp.py", gpus=2, returncode=0, events=events)
    assert observed_split(run) == [64, 64]


@pytest.mark.parametrize("label, aspect", [
    # The handout's names, and a TA's audit (p6_compare_table_own_words): rows in a student's
    # own words.
    ("processes", "processes"), ("Processes", "processes"), ("Number of processes", "processes"),
    ("# of processes", "processes"), ("Process count", "processes"), ("Processes vs threads", "processes"),
    ("data split", "data split"), ("How the data is split", "data split"), ("Data splitting", "data split"),
    ("Data distribution", "data split"), ("Batch splitting", "data split"), ("Splitting of the batch", "data split"),
    ("Data split across GPUs", "data split"),
    ("gpu usage", "gpu usage"), ("GPU utilization", "gpu usage"), ("GPU Usage", "gpu usage"),
    ("Load balance", "gpu usage"), ("GPU load", "gpu usage"), ("Memory usage per GPU", "gpu usage"),
    ("Balance across GPUs", "gpu usage"), ("GPU memory", "gpu usage"), ("GPU", "gpu usage"),
])
def test_a_comparison_row_named_in_own_words_is_its_aspect(label, aspect):
    from grader.checks.practical_answers import comparison_rows
    row = {"aspect": label, "dp": "x", "ddp": "y"}
    assert comparison_rows([row]) == {aspect: row}


@pytest.mark.parametrize("label", [
    # No aspect of the comparison, or more than one: never taken for one.
    "Scalability", "Scaling", "Speed", "Memory and batch split", "Which processes split the data", "",
])
def test_a_comparison_row_of_no_one_aspect_is_none(label):
    from grader.checks.practical_answers import comparison_rows
    assert comparison_rows([{"aspect": label, "dp": "x", "ddp": "y"}]) == {}


def test_a_comparison_rows_own_name_wins_over_words_that_say_it():
    """A row named as the handout names it is that aspect's, whatever row before it says the
    aspect's words."""
    from grader.checks.practical_answers import comparison_rows
    rows = [{"aspect": "How the data is distributed", "dp": "a"}, {"aspect": "data split", "dp": "b"},
            {"aspect": "Load per GPU", "dp": "c"}, {"aspect": "GPU usage", "dp": "d"}]
    found = comparison_rows(rows)
    assert found["data split"] is rows[1] and found["gpu usage"] is rows[3]


def test_the_names_a_comparison_row_may_have_are_said():
    from grader.checks.practical_answers import comparison_names
    said = comparison_names("data split")
    for phrase in ("'data split' (or 'data', 'split', 'data splitting')", "with data, batch, split",
                   "'How the data is split'"):
        assert phrase in said, f"expected {phrase!r} in {said!r}"


# -- cells with a number the reader could not take: for a person (adv55) -------------------------
def test_a_timing_cell_with_an_unread_number_is_held_not_missing():
    rows = rows_by([{"method": "single", "step_time_s": "0.0203 s or so", "total_time_s": 0.2},
                    {"method": "dp", "step_time_s": 0.02, "total_time_s": "n/a"}], "method")
    held = []
    problems = incomplete_rows(rows, ["single", "dp"], ["step_time_s", "total_time_s"], held=held)
    # "n/a" holds no number: no answer, as before; the unread number waits for a person.
    assert problems == ["dp: total_time_s is 'n/a', not a number"], f"observed {problems!r}"
    assert held == ["single: step_time_s is '0.0203 s or so', not read as a number"], f"observed {held!r}"
    # A missing cell beside it: no wait, the caller's assertion fails the table.
    assert unread_cells_wait(problems, held, "timing.table", "a complete table", "answers.yaml") is None
    with pytest.raises(AnswerNotRead) as waiting:
        unread_cells_wait([], held, "timing.table", "a complete table", "answers.yaml")
    assert waiting.value.unread_answer == "timing.table" and "0.0203 s or so" in str(waiting.value)


def test_a_usage_cell_with_an_unread_number_waits_for_a_person():
    readings = [dict(READINGS[0], memory_mib="842 MiB, give or take"), READINGS[1]]
    with pytest.raises(AnswerNotRead, match="memory_mib is '842 MiB, give or take', not read as MiB"):
        checked_usage_table(sheet({"usage.table": readings}), {}, "usage.table", "DataParallel", trained())
    # No number (no answer), a unit of another kind, a negative reading: wrong whatever they mean.
    for cell in ("TODO", "842 (ms)", "-842 MiB or so"):
        readings = [dict(READINGS[0], memory_mib=cell), READINGS[1]]
        with pytest.raises(AssertionError) as failure:
            checked_usage_table(sheet({"usage.table": readings}), {}, "usage.table", "DataParallel", trained())
        assert not isinstance(failure.value, AnswerNotRead), f"{cell!r}: {failure.value}"
