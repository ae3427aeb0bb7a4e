"""HW3's report checks on answer sheets a student could really write (pytest on the checks)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.hw3_logs import even_layout, forward_log

ROOT = Path(__file__).resolve().parents[2]


class _Run:
    def problem(self):
        return ""


def test_a_table_key_written_as_a_word_is_a_missing_row_not_a_crash(tmp_path, monkeypatch):
    """The reference's answer sheet, read as the grading reads it, with Task 2's first depth
    written as a word and Task 5's 5-GPU transfers one too many: Task 2's table check and that
    Task 5 count fail and say why, the other three counts pass, nothing raises but the checks'
    own failures. (The probe's records are the reference's, as the HW3 matrix's grading of the
    reference makes them end to end, full points with these counts.)"""
    from grader.answers.collect import collect_answers
    from grader.checks import test_hw3 as hw3
    from grader.harness.observation import Observation
    from grader.scoring import default_rubrics_dir, load_rubric
    monkeypatch.setenv("PDL_HIDE_ANSWERS", "0")   # as the course's grading runs the checks
    (tmp_path / "hw3").mkdir()
    sheet = tmp_path / "hw3" / "answers.yaml"       # no report.pdf: the sheet is read
    data = yaml.safe_load((ROOT / "reference" / "hw3" / "answers.yaml").read_text())
    # ("six" is read as 6, as a TA reads it; a word that is no number leaves the row out.)
    data["answers"]["task2.step_time_table"]["rows"][0]["depth"] = "shallow"
    data["answers"]["task5.transfers_5gpus"]["value"] = 5
    sheet.write_text(yaml.safe_dump(data))
    answers = collect_answers(tmp_path, "hw3",
                              load_rubric(default_rubrics_dir() / "hw3.yaml").answers_source)
    trend = {"kind": "trend", "clock": "simulated",
             "results": {f"2x{d}": {"median_ms": t} for d, t in {6: 0.444, 12: 0.805, 24: 1.528}.items()}}
    transfers = [{"kind": "transfers", "gpus": g, "depth": hw3.TRANSFER_DEPTH,
                  "log": forward_log(even_layout(g, hw3.TRANSFER_DEPTH))} for g in hw3.TASK4_GPUS]
    probe = ([trend, *transfers], _Run())
    on_gpu = Observation(script="hw3/model_parallel.py", gpus=2, returncode=0, events=[])

    class Runs:
        def script(self, **spec):
            return on_gpu

    failures = {}

    def outcome(name, check, *args):
        try:
            check(*args)
        except AssertionError as failure:   # anything else (a ValueError) fails this test
            failures[name] = str(failure)

    outcome("task2", hw3.test_task2_reported_times_move_with_depth_as_the_code, probe, answers,
            {}, lambda text: None)
    specs = {g: {} for g in hw3.TASK4_GPUS}
    for gpus in hw3.TASK4_GPUS:
        for quantity in ("to_calls", "transfers"):
            outcome(f"{quantity}_{gpus}", hw3.test_task5_reported_counts_match, probe, Runs(),
                    specs, answers, {}, lambda text: None, gpus, quantity)
    assert sorted(failures) == ["task2", "transfers_5"], failures
    assert "Observed: no step time for 6" in failures["task2"], failures["task2"]
    assert "you reported 5 (hw3/answers.yaml); your code makes 4 GPU-to-GPU transfers" in \
        failures["transfers_5"], failures["transfers_5"]


@pytest.mark.parametrize("counts, depth, gpus, says", [
    # The ceil split a student walking through the kit wrote: its cause, not "detect the GPUs".
    ([2, 2, 1, 0], 6, 4, "chunks of ceil(DEPTH / N) = 2 layers fill only 3 of the 4 GPUs"),
    ([2, 2, 2, 0, 0], 6, 5, "chunks of ceil(DEPTH / N) = 2 layers fill only 3 of the 5 GPUs"),
    # The provided code's two halves, and everything on one GPU: the GPUs were not detected.
    ([3, 3, 0, 0], 6, 4, "the base code's split is still in place"),
    # The provided code's halves are no ceil chunks, though the first fills one (a TA's audit).
    ([2, 3, 0], 5, 3, "the base code's split is still in place"),
    ([2, 3, 0, 0], 5, 4, "the base code's split is still in place"),
    ([6, 0], 6, 2, "every layer is on cuda:0 on every node"),
    ([2, 1, 0, 2], 5, 4, "detect the GPUs with torch.cuda.device_count()"),
])
def test_idle_gpus_are_told_their_cause(counts, depth, gpus, says):
    from grader.checks.test_hw3 import why_gpus_idle
    assert says in why_gpus_idle(counts, depth, gpus, [(gpus, depth, counts)])


def _layouts(rule, sizes=((2, 6), (3, 6), (4, 8), (5, 20))):
    from grader.checks.hw3_layout import counts_per_gpu
    return [(n, d, counts_per_gpu([f"cuda:{rule(i, n, d)}" for i in range(d)], n)) for n, d in sizes]


def test_a_layout_that_looks_like_the_base_codes_on_one_node_is_told_its_own_cause():
    """A TA's audit: `per_gpu = DEPTH // N + 1; gpu = i // per_gpu` gives [3, 3, 0] with DEPTH=6
    on 3 GPUs, the base code's halves, and was told the base code's split was still in place
    (the student had changed it); on the other nodes it is no such split."""
    from grader.checks.test_hw3 import why_gpus_idle
    layouts = _layouts(lambda i, n, d: i // (d // n + 1))
    says = why_gpus_idle([3, 3, 0], 6, 3, layouts)
    assert "base code" not in says and "3 layers per GPU, more than ceil(DEPTH / N) = 2" in says, says
    base = _layouts(lambda i, n, d: 0 if i < d // 2 else 1)
    assert "the base code's split is still in place" in why_gpus_idle([3, 3, 0], 6, 3, base)


def test_layers_never_moved_off_cuda0_are_told_so_not_to_detect_the_gpus():
    """A TA's audit: the device was computed, then every layer made with .cuda() (cuda:0); the
    hint said to detect the GPUs, which the code did."""
    from grader.checks.test_hw3 import why_gpus_idle
    says = why_gpus_idle([6, 0, 0], 6, 3, _layouts(lambda i, n, d: 0))
    assert "every layer is on cuda:0 on every node" in says and ".cuda()" in says, says


def test_a_script_whose_input_starts_on_the_host_is_told_apart():
    """Its forward's first x.to(layer_device) moves data from the host: the transfer a student
    counts (an audit's s8 reported 2 and 5 and explained why; 1.5 points were lost)."""
    from grader.checks.test_hw3 import observed_counts, starts_on_the_host
    from grader.harness.observation import Observation
    built_on_gpus = [{"event": "to", "src": "cpu", "dst": "cuda:0", "copied": True}]   # __init__'s .to()
    forward = [{"event": "forward", "thread": "MainThread"},
               {"event": "to", "src": "cpu", "dst": "cuda:0", "copied": True},
               {"event": "to", "src": "cuda:0", "dst": "cuda:1", "copied": True},
               {"event": "forward_out", "thread": "MainThread"}]
    host = Observation(script="hw3/model_parallel.py", gpus=2, returncode=0, events=built_on_gpus + forward)
    on_gpu = Observation(script="hw3/model_parallel.py", gpus=2, returncode=0,
                         events=built_on_gpus + [forward[0], *forward[2:]])
    assert starts_on_the_host(host) and not starts_on_the_host(on_gpu)
    moves = [{"kind": "to", "src": "cuda:0", "dst": "cuda:0", "copied": False},
             {"kind": "to", "src": "cuda:0", "dst": "cuda:1", "copied": True}]
    found = {"log": moves, "log_from_host": [dict(moves[0], src="cpu", copied=True), moves[1]]}
    assert observed_counts(found) == [(2, 1)]
    assert observed_counts(found, from_host=True) == [(2, 1), (2, 2)]


def _move(src: str, dst: str) -> dict:
    return {"kind": "to", "src": src, "dst": dst, "copied": src != dst}


def test_the_baton_pass_alone_is_counted_too():
    """The handout counts x.to(layer_device), the last move before each layer; a forward that
    also moves its input first, or its output back to cuda:0, counted 20 and was told 21 (a
    TA's HW3 audit, s05/s05b). Every .to() stays accepted, and comes first."""
    from grader.checks.test_hw3 import observed_counts
    layers = [{"kind": "layer", "index": i} for i in range(4)]
    baton = [_move("cuda:0", "cuda:0"), layers[0], _move("cuda:0", "cuda:0"), layers[1],
             _move("cuda:0", "cuda:1"), layers[2], _move("cuda:1", "cuda:1"), layers[3]]
    assert observed_counts({"log": baton}) == [(4, 1)]
    input_first = [_move("cuda:0", "cuda:0")] + baton
    assert observed_counts({"log": input_first}) == [(5, 1), (4, 1)]
    output_home = baton + [_move("cuda:1", "cuda:0")]
    assert observed_counts({"log": output_home}) == [(5, 2), (4, 1)]
    # The activation sent back to cuda:0 after every layer but the last (the HW3 matrix's
    # extra_transfers_to_gpu0): each layer off cuda:0 costs two copies, its baton pass one.
    home_after_each = [_move("cuda:0", "cuda:0"), layers[0], _move("cuda:0", "cuda:0"),
                       _move("cuda:0", "cuda:0"), layers[1], _move("cuda:0", "cuda:0"),
                       _move("cuda:0", "cuda:1"), layers[2], _move("cuda:1", "cuda:0"),
                       _move("cuda:0", "cuda:1"), layers[3]]
    assert observed_counts({"log": home_after_each}) == [(7, 3), (4, 2)]
    # No layer seen run (hooks never fired): no baton count, so never a (0, 0) to accept.
    assert observed_counts({"log": [_move("cuda:0", "cuda:1")]}) == [(1, 1)]


def test_times_tens_of_times_the_simulated_ones_are_told_what_they_likely_are():
    """A student copied the wall-clock times their script printed on virtual GPUs (797 and 145
    ms: 5 GPUs 'faster') and was told only that their code takes 1.29 and 1.37 ms."""
    from grader.checks.test_hw3 import wall_clock_hint
    assert "this computer's wall clock" in wall_clock_hint({2: 797.61, 5: 145.45}, {2: 1.29, 5: 1.37},
                                                           "simulated")
    assert wall_clock_hint({2: 1.3, 5: 1.2}, {2: 1.29, 5: 1.37}, "simulated") == ""
    assert wall_clock_hint({2: 797.61, 5: 145.45}, {2: 1.29, 5: 1.37}, "real") == ""


def test_made_up_depths_of_the_students_own_are_measured_for_the_flag():
    """Depths of the student's own passed on direction alone, never compared with the code's
    times (the handout's 6/12/24 table is): the line through the code's times says 1.8x from
    DEPTH 1 to 3, not 10x."""
    from grader.checks.test_hw3 import PLAUSIBLE_RATIO, own_depths_ratios
    ours = {6: 0.444, 12: 0.805, 24: 1.528}
    theirs, predicted = own_depths_ratios(ours, [1, 2, 3], {1: 1.0, 2: 5.0, 3: 10.0})
    assert theirs == 10.0 and theirs / predicted > PLAUSIBLE_RATIO
    honest, line = own_depths_ratios(ours, [8, 16, 32], {8: 0.55, 16: 1.0, 32: 1.95})
    assert 1 / PLAUSIBLE_RATIO <= honest / line <= PLAUSIBLE_RATIO


@pytest.mark.parametrize("devices, says, not_says", [
    # A student's audit: the leftover DEPTH % N layers appended without .to(device).
    (["cuda:0", "cuda:0", "cuda:1", "cuda:2", "cpu"], "needs its .to(device), the leftover", "never a fixed number"),
    # A fixed GPU number past the node's last GPU.
    (["cuda:0", "cuda:1", "cuda:2", "cuda:3", "cuda:3"], "never a fixed number", ".to(device)"),
])
def test_a_layer_off_the_nodes_gpus_is_told_its_cause(devices, says, not_says):
    from grader.checks.test_hw3 import spread_layout
    probe = ([{"kind": "layout", "gpus": 3, "depth": 5, "devices": devices}], _Run())
    with pytest.raises(AssertionError) as failure:
        spread_layout(probe, 3, 5)
    assert says in str(failure.value) and not_says not in str(failure.value), str(failure.value)


def test_a_gpu_index_past_the_last_gpu_is_told_to_check_the_rule_not_to_count_the_gpus():
    """A student's audit: `i // (depth // n)` with n from device_count() was told to take n
    from device_count()."""
    from grader.checks.test_hw3 import built
    found = {"gpus": 3, "depth": 5, "error": {"type": "RuntimeError", "message": "CUDA error: invalid device ordinal"}}
    with pytest.raises(AssertionError) as failure:
        built(found)
    message = str(failure.value)
    assert "pdl-grade run --gpus 3 --set DEPTH=5" in message and "i // (DEPTH // N) goes past cuda:N-1" in message, message


@pytest.mark.parametrize("gpus, depth", [(1, 6), (1, 3), (2, 6)])
def test_a_gpu_named_past_the_last_one_where_the_rule_cannot_go_past_is_told_so(gpus, depth):
    """A TA's audit: the base code's cuda:1 on one GPU (DEPTH=6) was told to check a rule
    `i // (DEPTH // N)` it does not have; where N divides DEPTH no such rule goes past."""
    from grader.checks.test_hw3 import built
    found = {"gpus": gpus, "depth": depth,
             "error": {"type": "RuntimeError", "message": "CUDA error: invalid device ordinal"}}
    with pytest.raises(AssertionError) as failure:
        built(found)
    message = str(failure.value)
    assert "i // (DEPTH // N)" not in message, message
    assert "rather than naming one (the base code's cuda:1 needs two GPUs)" in message, message


ARGPARSE_SCRIPT = '''import argparse
DIM = 512
STEPS = 5

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("-s", "--num-steps", dest="steps", type=int, default=STEPS)
    parser.add_argument("--dim", default=DIM)          # no type: a string from the command line
    parser.add_argument("--name", type=str, default="run")
    parser.add_argument("--gpus", type=int, default=None)   # falls back to device_count()
    parser.add_argument("--batch", type=int, default=DIM)   # the constant itself: rewritten
    args = parser.parse_args()
'''


def test_a_scripts_own_integer_options_for_the_constants_are_found(tmp_path):
    from grader.checks.practical_answers import command_line_options
    script = tmp_path / "model_parallel.py"
    script.write_text(ARGPARSE_SCRIPT)
    assert command_line_options(script, ["DEPTH", "DIM", "STEPS", "GPUS", "BATCH"]) == {
        "DEPTH": "--depth"}
    script.write_text("syntax error (")
    assert command_line_options(script, ["DEPTH"]) == {}


def test_an_argparse_script_is_run_with_the_graders_depth_on_its_command_line(tmp_path):
    """A TA's audit: `--depth` with a literal default 6 printed DEPTH=6's counts where the
    grader had set DEPTH=20 in the source, and lost Task 5's printed counts (1 point)."""
    from grader.checks.test_hw3 import TIMING_DIM, task5_script_specs as script_specs, with_options
    (tmp_path / "hw3").mkdir()
    script = tmp_path / "hw3" / "model_parallel.py"
    script.write_text(ARGPARSE_SCRIPT)
    specs = script_specs(tmp_path)
    # DEPTH is no top-level constant here: given on the command line only; STEPS both ways.
    assert specs[5]["sets"] == {"DIM": TIMING_DIM, "STEPS": 3}
    assert specs[5]["args"] == ("--depth", "20")
    recount = with_options(dict(specs[5], sets=dict(specs[5]["sets"], DEPTH=3), args=()), script)
    assert recount["args"][:2] == ("--depth", "3")
    script.write_text("DEPTH = 6\nDIM = 512\n")
    assert "args" not in script_specs(tmp_path)[2]


class _Answers:
    """The checks' view of a student's answers (grader/checks/conftest.py), for one table."""
    def __init__(self, values):
        self.values, self.questions = values, {}
        self.origin = {qid: "hw3/answers.yaml" for qid in values}

    def where_to_answer(self, qid):
        return f"hw3/answers.yaml ({qid})"


def _task2_table(times: dict[int, float]):
    """Task 2's table check on the grader's times of the reference (simulated clock) against
    a student's table: (the failure message or "", the instructor's flags)."""
    from grader.checks.test_hw3 import test_task2_reported_times_move_with_depth_as_the_code as check
    ours = {6: 0.444, 12: 0.805, 24: 1.528}
    probe = ([{"kind": "trend", "clock": "simulated",
               "results": {f"2x{d}": {"median_ms": t} for d, t in ours.items()}}], _Run())
    answers = _Answers({"task2.step_time_table": [{"depth": d, "step_time_ms": t}
                                                  for d, t in times.items()]})
    flags: list[str] = []
    try:
        check(probe, answers, {}, flags.append)
    except AssertionError as failure:
        return str(failure), flags
    return "", flags


def test_a_measured_step_about_level_is_flagged_not_a_lost_point():
    """A TA's audit: 1.95 / 1.91 / 3.62 ms, measured on a real GPU and explained, had lost the
    table's point; a step within 10% is noise to flag, the table still rises overall."""
    failure, flags = _task2_table({6: 1.95, 12: 1.91, 24: 3.62})
    assert failure == "", failure
    assert any("about level from DEPTH 6 to 12 (1.95 -> 1.91 ms)" in f for f in flags), flags


@pytest.mark.parametrize("times, says", [
    # a step clearly the other way
    ({6: 2.0, 12: 1.6, 24: 3.6}, "rise from DEPTH 6 to 12"),
    # level from the first depth to the last while the code's time triples
    ({6: 2.0, 12: 2.1, 24: 2.05}, "rise from DEPTH 6 to 24"),
    # falling all along
    ({6: 3.0, 12: 2.0, 24: 1.0}, "rise from DEPTH 12 to 24"),
])
def test_a_table_that_contradicts_the_code_loses_the_point_and_is_told_to_measure_again(times, says):
    failure, _ = _task2_table(times)
    assert says in failure and "measure again" in failure and "correct the answer" not in failure, failure


def test_a_table_rising_at_every_step_passes_without_a_flag():
    assert _task2_table({6: 56.2, 12: 125.6, 24: 262.4}) == ("", [])


class _ScriptRun:
    """What runs.script gives a check: a run that ended (ok) or stopped with `problem`."""
    def __init__(self, problem=None, exception=None):
        self.ok, self._problem, self._exceptions = problem is None, problem, exception

    def problem(self):
        return self._problem

    def of(self, kind):
        return [self._exceptions] if kind == "exception" and self._exceptions else []


class _Runs:
    def __init__(self, run):
        self.run = run

    def script(self, **spec):
        return self.run


def _runnable(run):
    from grader.checks.test_hw3 import test_the_script_runs_to_its_end as check
    flags: list[str] = []
    check(_Runs(run), {2: {}, 5: {}}, flags.append, 2)
    return flags


def test_a_script_that_never_ends_is_shown_and_flagged_for_the_course():
    """An instructor's audit: a main() waiting forever lost only Task 5's printed counts, said
    inside Task 5 alone; it is the handout's 'Must be runnable', shown for no points."""
    hang = ("hw3/model_parallel.py (2 GPU(s), DEPTH=20, DIM=256, STEPS=3) did not finish in time "
            "(within 30 s) and was stopped: look for an endless loop")
    with pytest.raises(AssertionError) as failure:
        _runnable(_ScriptRun(hang))
    assert "Must be runnable" in str(failure.value) and f"Observed: {hang}" in str(failure.value)
    assert _runnable(_ScriptRun()) == []


def test_a_script_stopped_only_by_the_graders_read_only_folder_is_not_counted():
    write = "[Errno 30] Read-only file system: '/submission/hw3/runs'"
    with pytest.raises(pytest.skip.Exception):
        _runnable(_ScriptRun("hw3/model_parallel.py (2 GPU(s)) stopped with OSError: " + write,
                             {"type": "OSError", "message": write}))
