"""What the practicals' checks measure (grader/checks/practical_measures.py), on made-up runs:
evidence before a crash, rows, memory balance, which clock decides "faster?", and the
handout's Part 5 line change of Practical 10."""
from __future__ import annotations

import pytest
import torch

from grader.checks import practical_measures as pm
from grader.harness.observation import Observation


def run(events=(), returncode=0, stdout=""):
    return Observation(script="practical6/practical6_ddp.py", gpus=2, returncode=returncode,
                       events=list(events), stdout=stdout)


CRASH = {"event": "exception", "type": "RuntimeError", "site": "concepts.py:60",
         "message": "Expected all tensors to be on the same device"}


# -- evidence ---------------------------------------------------------------------------------------
def test_evidence_recorded_before_a_crash_counts():
    assert pm.evidence(run([CRASH], returncode=1), [1, 2], "x", "missing") == [1, 2]


def test_missing_evidence_names_the_crash_as_its_cause():
    with pytest.raises(AssertionError) as failure:
        pm.evidence(run([CRASH], returncode=1), [], "Part 3 ran", "no Part 3", "look here")
    text = str(failure.value)
    assert "Expected: Part 3 ran" in text and "stopped with RuntimeError at concepts.py:60" in text
    assert "no Part 3" not in text and "Where to look: look here" in text


def test_missing_evidence_of_a_run_that_ended_says_what_is_missing():
    with pytest.raises(AssertionError, match="Observed: no Part 3"):
        pm.evidence(run(), None, "Part 3 ran", "no Part 3")


# -- forward passes and rows ---------------------------------------------------------------------------
def forward(rows_in, rank=0, step=0, thread="MainThread", module="Sequential", nested=False):
    return {"event": "forward", "rank": rank, "step": step, "thread": thread, "module": module,
            "batch": [len(rows_in), 4], "rows": rows_in, "input_device": f"cuda:{rank}",
            **({"nested": True} if nested else {})}


def output(rows_out, rank=0, thread="MainThread"):
    return {"event": "forward_out", "rank": rank, "thread": thread, "shape": [len(rows_out), 4],
            "device": f"cuda:{rank}", "rows": rows_out}


def test_forward_passes_pair_inputs_with_outputs_of_their_own_thread_and_rank():
    # A DataParallel replica's pass (nested: started inside the wrapper's forward) is part of
    # the wrapper's pass, never a pass of its own.
    events = [forward([[1, 1]]), forward([[9, 9]], thread="Thread-1 (_worker)", nested=True),
              output([[2, 4]]), output([[7, 7]], thread="Thread-1 (_worker)"),
              forward([[3, 9]], rank=1), output([[0, 0]], rank=1)]
    passes = pm.forward_passes(run(events))
    assert [(p["rows_in"], p["rows_out"]) for p in passes] == [([[1, 1]], [[2, 4]])]
    assert pm.forward_passes(run(events), rank=1)[0]["rows_out"] == [[0, 0]]


def test_the_scripts_own_threads_passes_count_each_with_its_own_output():
    # Part 2's chunks run one thread each: the passes interleave, each output is its thread's.
    events = [forward([[1, 1]]), output([[2, 2]]),
              forward([[3, 3]], thread="Thread-1 (run_chunk)"),
              forward([[5, 5]], thread="Thread-2 (run_chunk)"),
              output([[6, 6]], thread="Thread-2 (run_chunk)"),
              output([[4, 4]], thread="Thread-1 (run_chunk)")]
    passes = pm.forward_passes(run(events))
    assert [(p["rows_in"], p["rows_out"]) for p in passes] == [
        ([[1, 1]], [[2, 2]]), ([[3, 3]], [[4, 4]]), ([[5, 5]], [[6, 6]])]


def test_rows_are_the_same_up_to_float_rounding_only():
    row = [12.345678, 100.0]
    assert pm.same_row(row, [12.345679, 100.00001])
    assert not pm.same_row(row, [11.9, 100.0])
    assert not pm.same_row(row, [12.345678, 103.0])
    assert not pm.same_row(row, None)
    assert pm.match_rows([[1.0, 1.0], [5.0, 9.0], [3.0, 3.0]], [[5.0, 9.0], [1.0, 1.0]]) == [1, 0, None]
    assert len(pm.distinct_rows([[1.0, 1.0], [1.0, 1.0], [2.0, 4.0]])) == 2


def test_row_fingerprints_of_a_tensor():
    from grader.vgpu.rows import row_prints
    prints = row_prints(torch.tensor([[1.0, 2.0], [3.0, -1.0]]))
    assert prints == [[3.0, 5.0], [2.0, 10.0]]
    assert row_prints(torch.tensor(2.0)) is None
    assert len(row_prints(torch.zeros(3, 2, 2))) == 3


def test_first_step_rows_are_the_rows_before_the_first_optimizer_step():
    events = [forward([[1, 1], [2, 4]]), output([[0, 0], [0, 0]]), forward([[5, 5]], step=1)]
    assert pm.first_step_rows(run(events), 0) == [[1, 1], [2, 4]]


# -- memory -------------------------------------------------------------------------------------------
def memory(**peaks):
    return {"event": "step", "rank": 0, "memory": [
        {"device": d.replace("_", ":"), "allocated": 0, "peak": p} for d, p in peaks.items()]}


def test_peak_memory_takes_each_gpu_from_the_process_that_used_it():
    events = [memory(cuda_0=100, cuda_1=0), {**memory(cuda_0=0, cuda_1=98), "rank": 1}]
    assert pm.peak_memory(run(events)) == {"cuda:0": 100, "cuda:1": 98}


@pytest.mark.parametrize("peaks, more_loaded, even", [
    ({"cuda:0": 100, "cuda:1": 98}, False, True),
    ({"cuda:0": 150, "cuda:1": 50, "cuda:2": 50}, True, False),
    ({"cuda:0": 100, "cuda:1": 0}, True, False),          # nothing on cuda:1 at all
    ({"cuda:0": 50, "cuda:1": 150}, False, False),
    ({"cuda:0": 100}, None, None),
    ({"cuda:0": 0, "cuda:1": 0}, None, None),
])
def test_gpu0_load_and_balance(peaks, more_loaded, even):
    assert pm.gpu0_more_loaded(peaks) is more_loaded
    assert pm.balanced(peaks) is even


# -- time: which clock decides ----------------------------------------------------------------------
def stepped(virtual, times, **extra):
    return run([{"event": "start", "rank": 0, "virtual": virtual}]
               + [{"event": "step", "rank": 0, "t": t, **{k: v[i] for k, v in extra.items()}}
                  for i, t in enumerate(times)])


def test_real_gpus_are_timed_by_their_step_gaps():
    timed = stepped(False, [0.0, 0.5, 0.6, 0.7])
    assert pm.step_clock(timed) == "real"
    assert pm.step_seconds(timed) == pytest.approx([0.5, 0.1, 0.1])
    assert pm.median_step_seconds(timed) == pytest.approx(0.1)


def test_virtual_gpus_are_timed_by_the_simulated_clock_only():
    wall_only = stepped(True, [0.0, 0.5, 0.6])
    assert pm.step_clock(wall_only) is None and pm.step_seconds(wall_only) == []
    assert "either answer is accepted" in pm.clock_words(pm.shared_clock(wall_only))
    simulated = stepped(True, [0.0, 0.5, 0.6], sim_t=[0.0001, 0.0003, 0.0005])
    assert pm.step_clock(simulated) == "simulated"
    assert pm.step_seconds(simulated) == pytest.approx([0.0002, 0.0002])


def _loop(virtual, copy_s, work_s, steps=4, forward_times=True):
    """A rank whose every step copies its batch (copy_s) and then trains (work_s)."""
    events, now = [{"event": "start", "rank": 0, "virtual": virtual}], 0.0
    for _ in range(steps):
        now += copy_s
        events.append({"event": "forward", "rank": 0, "thread": "MainThread", "t": now,
                       **({"sim_t": now} if virtual and forward_times else {})})
        now += work_s
        events.append({"event": "step", "rank": 0, "t": now, **({"sim_t": now} if virtual else {})})
    return run(events)


def test_a_steps_work_is_timed_from_its_forward_pass_on_the_simulated_clock():
    """A batch copied to the GPU inside the loop is data loading, not the method's work: the
    practicals' 'which is faster?' compares what the handouts' timers measure."""
    loader = _loop(True, copy_s=0.00008, work_s=0.0002)
    assert pm.step_seconds(loader) == pytest.approx([0.00028] * 3)
    assert pm.work_seconds(loader) == pytest.approx([0.0002] * 3)
    assert pm.compared_step_seconds(loader) == pytest.approx([0.0002])


def test_runs_compared_are_timed_by_one_measure():
    """Real GPUs run kernels after their launch (a forward's wall time is no start of its work),
    and a trace from before forwards were timed has none: there the gaps between steps, and for
    every run compared with it too (a review: one run by its work, the other by its gaps)."""
    real, untimed = _loop(False, 0.08, 0.2), _loop(True, 0.00008, 0.0002, forward_times=False)
    assert pm.work_seconds(real) is None and pm.work_seconds(untimed) is None
    loader = _loop(True, 0.00008, 0.0002)
    assert pm.compared_step_seconds(loader, untimed) == pytest.approx([0.00028, 0.00028])


def test_runs_on_different_clocks_are_not_compared():
    real, simulated = stepped(False, [0, 1]), stepped(True, [0, 1], sim_t=[0, 1])
    assert pm.shared_clock(real, real) == "real"
    assert pm.shared_clock(real, simulated) is None


@pytest.mark.parametrize("first, second, clock, verdict", [
    (1.0, 0.5, "real", True), (0.5, 1.0, "real", False), (1.0, 0.9, "real", None),
    (1.0, 1.2, "real", None), (None, 1.0, "real", None), (1.0, 0.5, None, None),
    (1.0, 0.9, "simulated", True), (0.231, 0.196, "simulated", True),
    (1.0, 0.97, "simulated", None),
])
def test_faster_needs_a_difference_beyond_the_clocks_margin(first, second, clock, verdict):
    assert pm.faster(first, second, clock) is verdict


# -- Practical 10, Part 5: the handout's line change ----------------------------------------------
@pytest.mark.parametrize("line, changed", [
    ('    device1 = torch.device(f"cuda:{local_rank + 2}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
    ("    device1 = torch.device(f'cuda:{local_rank+2}')  # stage 1",
     "    device1 = torch.device(f'cuda:{local_rank}')  # stage 1"),
    ('    device1 = torch.device("cuda", local_rank + 2)',
     '    device1 = torch.device("cuda", local_rank)'),
    # The rank under a name of the student's own (a TA's P10: `gpu = int(os.environ[...])`).
    ('    device1 = torch.device("cuda", gpu + 2)', '    device1 = torch.device("cuda", gpu)'),
    ("    device1 = torch.device(f'cuda:{rank+2}')", "    device1 = torch.device(f'cuda:{rank}')"),
    # Correct styles a TA's audit found taken for Part 5's line (0.25 of 10) or not found (-0.75).
    ('    device1 = torch.device(f"cuda:{2 + local_rank}")',
     '    device1 = torch.device(f"cuda:{local_rank}")'),
    ('    device1 = torch.device("cuda", 2 + local_rank)', '    device1 = torch.device("cuda", local_rank)'),
    ('    device0, device1 = torch.device(f"cuda:{local_rank}"), torch.device(f"cuda:{local_rank + 2}")',
     '    device0, device1 = torch.device(f"cuda:{local_rank}"), torch.device(f"cuda:{local_rank}")'),
    ('    device1: torch.device = torch.device(f"cuda:{local_rank + 2}")',
     '    device1: torch.device = torch.device(f"cuda:{local_rank}")'),
    # The handout's line under another name (it had been no edit: the line looked for by its
    # `device1 =`); the sum is the device's, wherever it sits (second_stage_device).
    ("    stage1 = torch.device(f'cuda:{local_rank + 2}')",
     "    stage1 = torch.device(f'cuda:{local_rank}')"),
])
def test_the_broken_layout_is_the_handouts_line_change(line, changed):
    source = f"import torch\n\ndef main():\n    device0 = 0\n{line}\n    return device1\n"
    assert pm.broken_layout_edit(source) == (line, changed)


@pytest.mark.parametrize("source", [
    "device1 = torch.device('cuda:3')\n",
    "device1 = torch.device(f'cuda:{local_rank + 2}')\ndevice1 = torch.device(f'cuda:{local_rank + 2}')\n",
    "device1 = torch.device(f'cuda:{local_rank}')  # was local_rank + 2\n",   # only the comment
    # The sum only in a message, never a device.
    "print(f'stage 1 on cuda:{local_rank + 2}')\n",
])
def test_no_edit_where_the_handouts_line_is_not_there_once(source):
    assert pm.broken_layout_edit(source) is None


@pytest.mark.parametrize("text, sets", [
    ("BATCH_SIZE = 64\nDIM = 512\n", None),
    ("BATCH_SIZE = 60  # tried equal splits\n", {"BATCH_SIZE": 64}),
    # Not a literal: the value the run holds, worked out as the STEPS cap reads it (adv41 F5).
    ("BATCH_SIZE = 32 * 2\n", None),
    ("BATCH_SIZE = 30 * 2\n", {"BATCH_SIZE": 64}),
    ("BATCH_SIZE = own_size()\n", {"BATCH_SIZE": 64}),     # not worked out: set to be sure
    ("def main():\n    BATCH_SIZE = 60\n", None),           # not top-level: nothing to set
    ("BATCH_SIZE = (\n", None),                             # does not parse: run as it is
])
def test_a_batch_size_left_from_trying_is_set_back_to_the_handouts(tmp_path, text, sets):
    """A TA's P5: BATCH_SIZE = 60 left after trying when the split is equal lost 3.75 points;
    P5's and P6's runs are made with the handout's 64 (the file is never changed)."""
    script = tmp_path / "practical5" / "practical5_dp.py"
    script.parent.mkdir()
    script.write_text(text)
    assert pm.handout_sets(tmp_path, "practical5/practical5_dp.py") == sets
    assert script.read_text() == text


@pytest.mark.parametrize("source, restored", [
    ('    device1 = torch.device(f"cuda:{local_rank}")\n',
     '    device1 = torch.device(f"cuda:{local_rank + 2}")'),
    # Part 5's change left in, the rank named by the student (a reviewer's find: the line
    # was changed for any name but set back only for local_rank).
    ('    gpu = int(os.environ["LOCAL_RANK"])\n    device1 = torch.device(f"cuda:{gpu}")\n',
     '    device1 = torch.device(f"cuda:{gpu + 2}")'),
    ('    gpu: int = dist.get_rank()\n    device1 = torch.device(f"cuda:{gpu}")\n',
     '    device1 = torch.device(f"cuda:{gpu + 2}")'),
    # Not the rank itself: nothing is set back (cuda:{second + 2} would be another GPU).
    ('    second = local_rank + 2\n    device1 = torch.device(f"cuda:{second}")\n', None),
    ('    device1 = torch.device(f"cuda:{idx}")\n', None),
    # The old value noted in a comment on the changed line (a TA's P10 lost 2 points: the
    # comment's "+ 2" was taken for the course's layout, so nothing was set back).
    ('    device1 = torch.device(f"cuda:{local_rank}")   # Part 5: was local_rank + 2\n',
     '    device1 = torch.device(f"cuda:{local_rank + 2}")   # Part 5: was local_rank + 2'),
    ('    device1 = torch.device(f"cuda:{local_rank}")  # was {local_rank + 2}\n',
     '    device1 = torch.device(f"cuda:{local_rank + 2}")  # was {local_rank + 2}'),
    # The device spelled without an f-string (a TA's P10 lost 2.75 points to the first: only
    # the f-string's closing brace was looked for).
    ('    device1 = torch.device("cuda", local_rank)      # Part 5 (was local_rank + 2)\n',
     '    device1 = torch.device("cuda", local_rank + 2)      # Part 5 (was local_rank + 2)'),
    ('    device1 = torch.device("cuda:" + str(local_rank))\n',
     '    device1 = torch.device("cuda:" + str(local_rank + 2))'),
    ('    device1 = torch.device("cuda:{}".format(local_rank))\n',
     '    device1 = torch.device("cuda:{}".format(local_rank + 2))'),
    # Part 5 as the first stage's own device: the first stage's, one GPU further.
    ('    device0 = torch.device("cuda", local_rank)\n    device1 = device0\n',
     '    device1 = torch.device("cuda", local_rank + 2)'),
    ('    device0 = torch.device(f"cuda:{idx}")\n    device1 = device0\n', None),
    # The course's layout written the other way round is no Part 5 change: nothing to set back.
    ('    device1 = torch.device(f"cuda:{2 + local_rank}")\n', None),
    ('    device1 = torch.device("cuda", 2 + local_rank)\n', None),
])
def test_part5s_change_left_in_is_set_back_for_the_other_parts(source, restored):
    edit = pm.restored_layout_edit(source)
    assert (edit[1].strip("\n") if edit else None) == restored
