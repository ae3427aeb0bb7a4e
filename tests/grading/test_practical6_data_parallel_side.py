"""Practical 6, Part 6: DataParallel's side of the comparison needs DataParallel to have run.

The handout's "Run your Practical 5 code (DataParallel) and compare" took the student's
practical5_dp.py run wherever it trained, also where DataParallel never scattered a batch (a
wrapper made and never called, `nn.DataParallel(model)` alone: a TA's s14 for Practical 5).
That run trains on one GPU: its "data split" read as manual, its step time as DataParallel's,
and a sheet answering what DataParallel does was marked wrong against it (or one answering what
a single GPU does, right). Practical 5's own answers already need the scatter
(require_data_parallel); here the run is then no measurement of DataParallel: its side is what
DataParallel does, with no verdict on speed, as for a Practical 5 that did not train, and the
feedback says why.

The checks run here on traces written by hand, shaped as the virtual GPUs write them.
"""
from __future__ import annotations

import inspect

import pytest

from grader.answers.collect import Answers
from grader.checks import test_practical6 as p6
from grader.checks.support import must_agree
from grader.harness.observation import Observation

MIB = 2 ** 20
# The reference's comparison table, as the handout writes it.
TABLE = [{"aspect": "processes", "dp": 1, "ddp": "multiple"},
         {"aspect": "data split", "dp": "automatic", "ddp": "manual"},
         {"aspect": "gpu usage", "dp": "imbalanced", "ddp": "balanced"}]


def dp_trained(scattered: bool, step_s: float, steps=4) -> Observation:
    """practical5_dp.py on 2 virtual GPUs, `steps` steps of `step_s` s on the simulated clock:
    through DataParallel (a scatter, replicas on both GPUs, GPU 0 holding the most), or with
    the wrapper never called (the inner model on cuda:0 alone, cuda:1 idle)."""
    memory = [{"device": "cuda:0", "allocated": 9 * MIB, "peak": 12 * MIB},
              {"device": "cuda:1", "allocated": 3 * MIB if scattered else 0,
               "peak": 5 * MIB if scattered else 0}]
    events = [{"event": "start", "rank": 0, "virtual": True}]
    for step in range(steps):
        begun = step * step_s
        events.append({"event": "forward", "rank": 0, "thread": "MainThread", "grad": True,
                       "step": step, "batch": [64, 512], "input_device": "cuda:0",
                       "module": "DataParallel" if scattered else "MLP", "sim_t": begun})
        if scattered:
            events.append({"event": "dp_scatter", "rank": 0, "batch": 64, "sizes": [32, 32]})
        events += [{"event": "backward", "rank": 0},
                   {"event": "step", "rank": 0, "index": step + 1, "memory": memory,
                    "sim_t": begun + 0.8 * step_s, "grads": {"sum": 1.0, "sumsq": 2.0},
                    "params": {"sum": 5.0, "sumsq": 9.0}}]
    return Observation(p6.DP_SCRIPT, gpus=2, returncode=0, events=events)


def ddp_trained(step_s: float, steps=4) -> Observation:
    """practical6_ddp.py under torchrun --nproc_per_node=2: each rank 32 rows on its own GPU,
    DDP's all-reduce in every backward, the same memory on both GPUs."""
    events = []
    for rank in (0, 1):
        memory = [{"device": f"cuda:{rank}", "allocated": 4 * MIB, "peak": 6 * MIB}]
        events += [{"event": "start", "rank": rank, "virtual": True},
                   {"event": "init_process_group", "rank": rank, "world_size": 2}]
        for step in range(steps):
            begun = step * step_s
            events += [{"event": "forward", "rank": rank, "thread": "MainThread", "grad": True,
                        "step": step, "batch": [32, 512], "module": "DistributedDataParallel",
                        "sim_t": begun},
                       {"event": "placement", "rank": rank,
                        "layers": [{"name": "net.0", "device": f"cuda:{rank}"}]},
                       {"event": "backward", "rank": rank},
                       {"event": "collective", "rank": rank, "op": "all_reduce",
                        "source": "ddp_gradients"},
                       {"event": "step", "rank": rank, "index": step + 1, "memory": memory,
                        "sim_t": begun + 0.8 * step_s, "grads": {"sum": 1.0, "sumsq": 2.0},
                        "params": {"sum": 5.0, "sumsq": 9.0}}]
    return Observation(p6.SCRIPT, gpus=2, nproc=2, launcher="torchrun", returncode=0,
                       events=events)


class Runs:
    """ScriptRuns' interface: the DataParallel script's run and the DDP script's."""

    def __init__(self, dp, ddp, submission):
        self.dp, self.ddp, self.submission = dp, ddp, submission

    def script(self, script, **spec):
        return self.dp if script == p6.DP_SCRIPT else self.ddp


def graded(check, runs, aspect=None, **values):
    """Run an answer check (its `aspect` case, where parametrized) on the sheet `values`, with
    the fixtures it takes as grader/checks/conftest.py makes them: (what it measured, its
    failure or None)."""
    answers = Answers("practical6", "sheet", values=values,
                      origin={qid: "practical6/answers.yaml" for qid in values})
    measured, flags = {}, []

    def agree(qid, value, truth, observed_in_code, expected=None, compare_as=None):
        measured[qid] = truth
        must_agree(answers, qid, value if compare_as is None else compare_as, truth,
                   expected or str(truth), observed_in_code, flags.append)
    kit = {"runs": runs, "answers": answers, "measured": measured, "reported_values": {},
           "flag": flags.append, "agree": agree, "aspect": aspect}
    try:
        check(**{name: kit[name] for name in inspect.signature(check).parameters})
    except AssertionError as failed:
        return measured, str(failed)
    return measured, None


def unscattered(tmp_path) -> Runs:
    """A Practical 5 whose wrapper is never called: one GPU, and faster than DDP on it."""
    return Runs(dp_trained(scattered=False, step_s=0.001), ddp_trained(step_s=0.004), tmp_path)


@pytest.mark.parametrize("aspect", list(p6.ASPECTS))
def test_the_handouts_table_is_checked_against_what_data_parallel_does(tmp_path, aspect):
    """DataParallel's data split is automatic, whatever a Practical 5 that never scattered
    did on its one GPU (its run read as 'manual' before)."""
    measured, failure = graded(p6.test_reported_comparison_table, unscattered(tmp_path),
                               aspect, **{"compare.table": TABLE})
    assert failure is None, failure
    cell = measured[f"compare.table.{aspect}"]["dp"]
    assert "not measured: your Practical 5 trained without DataParallel scattering a batch" \
        in cell, f"the report's measured column should say the DataParallel side is no " \
                 f"measurement; observed: {cell!r}"


def test_a_wrong_cell_is_told_where_data_parallels_side_comes_from(tmp_path):
    table = [dict(row) for row in TABLE]
    table[1]["dp"] = "manual"
    _, failure = graded(p6.test_reported_comparison_table, unscattered(tmp_path), "data split",
                        **{"compare.table": table})
    # DDP's side first, DataParallel's said short (a TA's audit: the feedback on a wrong cell
    # had been mostly about an unfinished Practical 5).
    for phrase in ("data split: dp automatic, ddp manual",
                   "shows data split manual with DDP (torchrun --nproc_per_node=2) and automatic "
                   "with DataParallel (what DataParallel does; not measured: your Practical 5 "
                   "trained without DataParallel scattering a batch)"):
        assert failure and phrase in failure, \
            f"expected the feedback to say {phrase!r}; observed:\n{failure}"


def test_a_single_gpu_run_is_no_data_parallel_time(tmp_path):
    """DDP is the faster here, and the unscattered Practical 5's one GPU is faster still: no
    verdict, and the reason is said plainly, not the clock's."""
    measured, failure = graded(p6.test_reported_faster, unscattered(tmp_path),
                               **{"compare.faster": "ddp"})
    assert failure is None, failure
    said = measured["compare.faster"]
    assert said["dp_step_s"] is None and said["answer"] == "either", said
    for phrase in ("no DataParallel time to compare with (your Practical 5 trained without "
                   "DataParallel scattering a batch): either answer is accepted",):
        assert phrase in said["clock"], f"expected {phrase!r}; observed: {said['clock']!r}"


def test_memory_balance_is_compared_with_what_data_parallel_does(tmp_path):
    """The unscattered run's idle cuda:1 is not DataParallel's imbalance: what DataParallel
    does is, and the feedback names where it came from."""
    _, failure = graded(p6.test_reported_more_balanced, unscattered(tmp_path),
                        **{"usage.more_balanced": False})
    assert failure and "DataParallel never scattered a batch" in failure, failure


def test_a_practical5_that_scattered_is_still_measured(tmp_path):
    """DataParallel that ran is compared as before: its time decides, and says so."""
    runs = Runs(dp_trained(scattered=True, step_s=0.001), ddp_trained(step_s=0.004), tmp_path)
    measured, failure = graded(p6.test_reported_faster, runs, **{"compare.faster": "ddp"})
    assert measured["compare.faster"]["answer"] == "dp", measured
    assert failure and "with DataParallel on 2 GPUs" in failure, failure
    measured, failure = graded(p6.test_reported_comparison_table, runs, "data split",
                               **{"compare.table": TABLE})
    assert failure is None and measured["compare.table.data split"]["dp"] == "automatic", \
        (failure, measured)


def test_a_row_left_out_is_told_with_the_rows_written(tmp_path):
    """A TA's s10 (the matrix's p6_no_ddp_wrap, now in PDL_EXTENDED_MATRIX): the feedback of a
    table without its 'gpu usage' row listed a row the student never wrote."""
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    _, failure = graded(p6.test_reported_comparison_table, runs, "gpu usage",
                        **{"compare.table": TABLE[:2]})
    assert failure and "rows for ['processes', 'data split']" in failure, failure


OWN_WORDS_TABLE = [{"aspect": "Number of processes", "dp": "1 (one process, one thread per GPU)", "ddp": "2 (one per GPU)"},
                   {"aspect": "How the data is split", "dp": "automatic (scatter along dim 0)",
                    "ddp": "manual (BATCH_SIZE // world_size per rank)"},
                   {"aspect": "GPU utilization", "dp": "unbalanced, GPU 0 heavier", "ddp": "balanced"},
                   {"aspect": "Scaling", "dp": "poor", "ddp": "good"}]


@pytest.mark.parametrize("aspect", list(p6.ASPECTS))
def test_a_comparison_in_own_words_is_checked_row_by_row(tmp_path, aspect):
    """A TA's audit (p6_compare_table_own_words): "Number of processes" and "How the data is
    split" were not taken for the handout's rows, and cost 0.33 of a correct table."""
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    _, failure = graded(p6.test_reported_comparison_table, runs, aspect,
                        **{"compare.table": OWN_WORDS_TABLE})
    assert failure is None, failure


# Each cell written as the comparison itself (eng_words2): the DDP column's "automatic for DP,
# manual for DDP" was read by its head, automatic, and the row marked wrong; "DP: imbalanced /
# DDP: balanced" waited for a person. Each cell is read for its column's method.
BOTH_METHODS_TABLE = [
    {"aspect": "processes", "dp": "1 (DDP: one per GPU)", "ddp": "1 for DP, multiple for DDP"},
    {"aspect": "data split", "dp": "automatic (DDP needs a sampler)",
     "ddp": "automatic for DP, manual for DDP"},
    {"aspect": "gpu usage", "dp": "imbalanced in DP, balanced in DDP",
     "ddp": "DP: imbalanced / DDP: balanced"}]


@pytest.mark.parametrize("aspect", list(p6.ASPECTS))
def test_a_cell_naming_both_methods_is_checked_for_its_column(tmp_path, aspect):
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    _, failure = graded(p6.test_reported_comparison_table, runs, aspect,
                        **{"compare.table": BOTH_METHODS_TABLE})
    assert failure is None, failure


# The usage row written as a comparison (eng_words3): "less even than DDP" in DP's column was
# read by its adjective, balanced, and a right row marked wrong; "worse than DDP" waited for a
# person. The less even method is the imbalanced one, as a TA reads it.
@pytest.mark.parametrize("dp_cell, ddp_cell", [
    ("less even than DDP", "more even than DP"),
    ("worse than DDP", "uses the GPUs more evenly than DataParallel"),
    ("not as balanced as DDP", "DP is less balanced than DDP"),
    ("less even than DDP (GPU 0 gathers the outputs)", "less imbalanced than DP"),
])
def test_a_usage_row_written_as_a_comparison_is_checked_as_its_words(tmp_path, dp_cell, ddp_cell):
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    table = TABLE[:2] + [{"aspect": "gpu usage", "dp": dp_cell, "ddp": ddp_cell}]
    _, failure = graded(p6.test_reported_comparison_table, runs, "gpu usage", **{"compare.table": table})
    assert failure is None, f"dp {dp_cell!r}, ddp {ddp_cell!r} should pass as imbalanced/balanced:\n{failure}"


def test_a_usage_row_comparing_the_wrong_way_is_wrong(tmp_path):
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    table = TABLE[:2] + [{"aspect": "gpu usage", "dp": "more even than DDP", "ddp": "less even than DP"}]
    _, failure = graded(p6.test_reported_comparison_table, runs, "gpu usage", **{"compare.table": table})
    assert failure and "dp balanced, ddp imbalanced" in failure, (
        f"expected the row marked wrong, read as dp balanced, ddp imbalanced; observed:\n{failure}")


def test_a_row_not_recognised_is_named_with_the_names_accepted(tmp_path):
    """The feedback said only the rows written: it now says which row is missing and the names
    it is read under."""
    runs = Runs(dp_trained(scattered=True, step_s=0.004), ddp_trained(step_s=0.001), tmp_path)
    table = [dict(row) for row in OWN_WORDS_TABLE]
    table[1]["aspect"] = "Who feeds the model"
    _, failure = graded(p6.test_reported_comparison_table, runs, "data split",
                        **{"compare.table": table})
    assert failure, "a table without a data split row should fail its data split case"
    for phrase in ("no row for data split", "'Who feeds the model'", "'data split'", "'how the data is split'"):
        assert phrase in failure.lower() or phrase in failure, f"expected {phrase!r} in:\n{failure}"
