"""Home Work 3: LargeLinearModelMP, naive model parallelism (hw3/model_parallel.py).

The student's module is imported once, in one sandboxed child (grader/harness/hw3_probe.py),
which measures every configuration below; each check reads its part of those measurements.

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import pytest

from grader.checks.hw3_layout import (contiguous_blocks, counts_per_gpu, describe_layout,
                                      device_changes, even_contiguous_layout, first_misplaced,
                                      gpu_index, spearman)
from grader.checks.practical_answers import rows_by
from grader.checks.support import disagrees, explain, must_agree, reported

NODE_SIZES = [1, 2, 3, 4, 5, 8]
DEPTHS = [1, 3, 5, 6, 12, 20, 24]
LAYOUT_DIM = 16
TRANSFER_DEPTH = 20  # as the answer sheet asks (the same DEPTH as Task 4)
TIMING_DEPTHS = [6, 12, 24]
TIMING_DIM = 256
TASK4_DEPTH = 20
PLAN = [
    {"part": "layouts", "gpus": NODE_SIZES, "depths": DEPTHS, "dim": LAYOUT_DIM, "batch": 4},
    {"part": "transfers", "gpus": [2, 5], "depth": TRANSFER_DEPTH, "dim": LAYOUT_DIM, "batch": 4},
    {"part": "timing", "label": "trend", "configs": [[2, d] for d in TIMING_DEPTHS],
     "dim": TIMING_DIM, "batch": 64, "warmup": 2, "rounds": 9},
    {"part": "timing", "label": "task4", "configs": [[2, TASK4_DEPTH], [5, TASK4_DEPTH]],
     "dim": TIMING_DIM, "batch": 64, "warmup": 2, "rounds": 9},
]
# On virtual GPUs the step times come from the simulated clock (grader/vgpu/clock.py): the same
# on every run, under any load; on real GPUs from the wall clock. Each record says which.
# 5 GPUs may not be more than this much faster than 2: on the wall clock a margin for noise;
# on the simulated clock naive model parallelism is never faster with more GPUs (it only adds
# transfers), so a small margin is enough and a real speed-up (e.g. a backward cut short by a
# detach) is caught.
NO_SPEEDUP_TOLERANCE = {"real": 1.5, "simulated": 1.05}
LOOK_TASK3 = "LargeLinearModelMP.__init__ in hw3/model_parallel.py (Task 3: the layout)"
LOOK_FORWARD = "LargeLinearModelMP.forward in hw3/model_parallel.py (the baton pass)"


def script_spec(gpus):
    return dict(script="hw3/model_parallel.py", gpus=gpus,
                sets={"DEPTH": TASK4_DEPTH, "DIM": TIMING_DIM, "STEPS": 3})


@pytest.fixture(scope="module")
def probe(runs):
    runs.prefetch(script_spec(2), script_spec(5))
    records, run = runs.hw3(PLAN, gpus=max(NODE_SIZES))
    return records, run


def record(probe, kind, **match):
    records, run = probe
    for failure in (r for r in records if r.get("kind") == "import_error"):
        error = failure["error"]
        raise AssertionError(f"hw3/model_parallel.py could not be imported: {error['type']}"
                             f"{' at ' + error['site'] if error.get('site') else ''}: "
                             f"{error['message']}")
    for found in records:
        if found.get("kind") == kind and all(found.get(k) == v for k, v in match.items()):
            if found.get("skipped"):
                pytest.skip(found["skipped"])
            return found
    problem = run.problem() or "the probe stopped before reaching it"
    raise AssertionError(f"This configuration ({kind}, {match}) was not measured: {problem}")


def clock_of(found) -> str:
    """Which clock a timing record's step times come from: "simulated" or "real"."""
    return found.get("clock", "real")


def built(found, what="the model") -> None:
    error = found.get("error")
    if error:
        todo = " (a TODO of the template is still to be written)" if error.get(
            "type") == "NotImplementedError" else ""
        where = (f"with {found['gpus']} GPU(s) and DEPTH={found['depth']}" if "gpus" in found
                 else "for (GPUs, DEPTH) " + ", ".join(f"({g}, {d})" for g, d in found["configs"]))
        raise AssertionError(
            f"Building or running {what} {where} failed{todo}: {error['type']}"
            f"{' at ' + error['site'] if error.get('site') else ''}: {error['message']}")


def ran_forward(found) -> None:
    built(found)
    error = found.get("forward_error")
    if error:
        raise AssertionError(explain(
            "the forward pass runs: each layer receives its input on its own GPU",
            f"{error['type']}{' at ' + error['site'] if error.get('site') else ''}: "
            f"{error['message']}", LOOK_FORWARD))


# -- Task 1 ----------------------------------------------------------------------------------
@pytest.mark.check("hw3.task1.layout")
def test_task1_six_layers_on_two_gpus(probe, measured):
    found = record(probe, "layout", gpus=2, depth=6)
    built(found)
    devices = found["devices"]
    measured["task1.layers_per_gpu"] = counts_per_gpu(devices, 2)
    assert counts_per_gpu(devices, 2) == [3, 3] and contiguous_blocks(devices, 2), explain(
        "DEPTH=6 on 2 GPUs: layers 0-2 on cuda:0 and layers 3-5 on cuda:1",
        describe_layout(devices), "LargeLinearModelMP.__init__ (Task 1: split the layers in two)")


@pytest.mark.check("hw3.task1.transfer")
def test_task1_activation_moves_between_layers_2_and_3(probe):
    found = record(probe, "layout", gpus=2, depth=6)
    ran_forward(found)
    log = found.get("log", [])
    layers = [e for e in log if e["kind"] == "layer"]
    arrival = next((i for i, e in enumerate(log) if e["kind"] != "layer" and e.get("copied")
                    and e.get("src") == "cuda:0" and e.get("dst") == "cuda:1"), None)
    before = [e["index"] for e in log[:arrival] if e["kind"] == "layer"] if arrival is not None else []
    after = next((e["index"] for e in log[arrival:] if e["kind"] == "layer"), None) \
        if arrival is not None else None
    on_second = [e["input_device"] for e in layers if e["index"] >= 3]
    assert arrival is not None and before and before[-1] == 2 and after == 3 \
        and set(on_second) == {"cuda:1"}, explain(
            "the activation moves from cuda:0 to cuda:1 once, between layer 2 (the last on GPU 0) "
            "and layer 3 (the first on GPU 1)",
            "no move from cuda:0 to cuda:1 in the forward pass" if arrival is None else
            f"the first move to cuda:1 comes after layer {before[-1] if before else 'none'} and "
            f"before layer {after}", LOOK_FORWARD)


# -- Task 2 ----------------------------------------------------------------------------------
@pytest.mark.check("hw3.task2.trend")
def test_task2_step_time_grows_with_depth(probe, measured):
    found = record(probe, "trend")
    built(found, "and training the model")
    runs = [found["results"][f"2x{d}"] for d in TIMING_DEPTHS]
    medians = [run["median_ms"] for run in runs]
    measured["task2.step_time_ms"] = {str(d): round(m, 3) for d, m in zip(TIMING_DEPTHS, medians)}
    measured["task2.clock"] = clock_of(found)
    pairs = [(run["depth"], t) for run in runs for t in run["times_ms"]]
    rho = spearman([d for d, _ in pairs], [t for _, t in pairs])
    increasing = all(a < b for a, b in zip(medians, medians[1:]))
    # Doubling the layers should add clearly more than noise: at least 1.5x from 6 to 24.
    assert increasing and medians[-1] >= 1.5 * medians[0] and rho >= 0.6, explain(
        "the median step time rises with DEPTH (6 < 12 < 24), at least 1.5x from 6 to 24 "
        "layers, consistently over repeated steps (rank correlation >= 0.6)",
        "median step times " + ", ".join(f"DEPTH {d}: {m:.2f} ms" for d, m in zip(TIMING_DEPTHS, medians))
        + f" ({clock_of(found)} clock); rank correlation {rho:.2f}",
        "every layer must do its work in forward and backward: look for layers skipped or "
        "reused in LargeLinearModelMP.forward")


# -- Task 3 ----------------------------------------------------------------------------------
LAYOUT_CASES = [pytest.param(n, d, id=f"{n}gpus-depth{d}") for n in NODE_SIZES for d in DEPTHS]


@pytest.mark.check("hw3.task3.on_existing_gpu")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_layers_on_existing_gpus(probe, gpus, depth):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    wrong = [(i, d) for i, d in enumerate(found["devices"]) if gpu_index(d) is None
             or gpu_index(d) >= gpus]
    assert not wrong, explain(
        f"every layer on one of the node's GPUs cuda:0 .. cuda:{gpus - 1}",
        "; ".join(f"layer {i} is on {d}" for i, d in wrong[:5]), LOOK_TASK3
        + ": derive the GPUs from torch.cuda.device_count(), never a fixed number")


@pytest.mark.check("hw3.task3.balanced")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_even_split(probe, gpus, depth, measured):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    counts = counts_per_gpu(found["devices"], gpus)
    if (gpus, depth) == (5, 20):
        measured["task3.layers_per_gpu_20_5"] = counts
    assert max(counts) - min(counts) <= 1 or (depth < gpus and max(counts) <= 1), explain(
        f"{depth} layers over {gpus} GPUs: per-GPU counts that differ by at most one "
        f"(e.g. {counts_per_gpu(even_contiguous_layout(depth, gpus), gpus)})",
        f"layers per GPU {counts}", LOOK_TASK3)


@pytest.mark.check("hw3.task3.all_gpus_used")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_every_gpu_used(probe, gpus, depth):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    counts = counts_per_gpu(found["devices"], gpus)
    idle = [i for i, c in enumerate(counts) if c == 0]
    assert depth < gpus or not idle, explain(
        f"with DEPTH={depth} >= {gpus} GPUs, every GPU holds at least one layer",
        f"no layer on {', '.join(f'cuda:{i}' for i in idle)} (layers per GPU {counts})",
        LOOK_TASK3 + ": spread over torch.cuda.device_count() GPUs, not a fixed two")


@pytest.mark.check("hw3.task3.no_layer_lost")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_no_layer_lost_or_duplicated(probe, gpus, depth):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    split = [i for i, d in enumerate(found["devices"]) if isinstance(d, list)]
    assert found["n_layers"] == depth and found["distinct_layers"] == depth and not split, explain(
        f"exactly DEPTH={depth} distinct layers in self.layers, each wholly on one GPU",
        f"{found['n_layers']} layers ({found['distinct_layers']} distinct)"
        + (f"; layer {split[0]} is split over {found['devices'][split[0]]}" if split else ""),
        LOOK_TASK3)


@pytest.mark.check("hw3.task3.output_matches")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_output_equals_single_gpu(probe, gpus, depth):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    ran_forward(found)
    assert found.get("matches_single_gpu") is True, explain(
        f"the output on {gpus} GPUs equals the output of the same weights on one GPU",
        f"outputs differ by up to {found.get('max_difference')}",
        LOOK_FORWARD + ": every layer once, in order")


@pytest.mark.check("hw3.task3.contiguous")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_contiguous_blocks(probe, gpus, depth):
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    devices = found["devices"]
    if contiguous_blocks(devices, gpus):
        return
    expected = even_contiguous_layout(depth, gpus)
    index, observed_device, expected_device = first_misplaced(devices, expected)
    changes = device_changes(devices)
    raise AssertionError(explain(
        f"contiguous blocks of layers per GPU, in GPU order ({describe_layout(expected)})",
        f"layer {index} is on {observed_device}, but an even contiguous split of {depth} layers "
        f"over {gpus} GPUs puts it on {expected_device}. This layout makes {changes} "
        f"GPU-to-GPU transfers per forward pass instead of {device_changes(expected)}",
        LOOK_TASK3))


# -- Task 4 ----------------------------------------------------------------------------------
@pytest.mark.check("hw3.task4.all_gpus_hold_layers")
@pytest.mark.parametrize("gpus", [2, 5])
def test_task4_all_gpus_hold_layers_and_memory(probe, gpus, measured):
    found = record(probe, "task4")
    built(found, "and training the model")
    run = found["results"][f"{gpus}x{TASK4_DEPTH}"]
    layers, memory = run["layers_per_gpu"], run["peak_memory"]
    measured["task4"] = {str(gpus): {"step_time_ms": round(run["median_ms"], 3),
                                     "clock": clock_of(found),
                                     "memory_per_gpu_mib": [round(m / 2**20, 2) for m in memory]}}
    idle = [i for i in range(gpus) if layers[i] == 0 or memory[i] == 0]
    assert not idle, explain(
        f"DEPTH={TASK4_DEPTH} on {gpus} GPUs: every GPU holds layers and memory",
        f"layers per GPU {layers}, peak memory per GPU "
        f"{[round(m / 2**20, 1) for m in memory]} MiB", LOOK_TASK3)


@pytest.mark.check("hw3.task4.no_speedup")
def test_task4_more_gpus_no_faster(probe):
    found = record(probe, "task4")
    built(found, "and training the model")
    t2 = found["results"][f"2x{TASK4_DEPTH}"]["median_ms"]
    t5 = found["results"][f"5x{TASK4_DEPTH}"]["median_ms"]
    # Naive model parallelism runs one GPU at a time: 5 GPUs cannot be clearly faster than 2.
    assert t5 >= t2 / NO_SPEEDUP_TOLERANCE[clock_of(found)], explain(
        "no speed-up from 2 to 5 GPUs beyond noise (only one GPU works at any moment)",
        f"median step {t2:.2f} ms on 2 GPUs, {t5:.2f} ms on 5 ({clock_of(found)} clock)",
        "LargeLinearModelMP.forward must run the layers one after another, as the task describes")


@pytest.mark.check("hw3.task4.recorded")
@pytest.mark.parametrize("gpus", [2, 5])
def test_task4_script_runs_and_records(runs, gpus):
    run = runs.script(**script_spec(gpus))
    if not run.ok:
        raise AssertionError(run.problem())
    steps = run.of("step")
    peaks = run.final_memory()
    empty = [f"cuda:{i}" for i in range(gpus) if not peaks.get(f"cuda:{i}")]
    assert steps and not empty, explain(
        f"hw3/model_parallel.py with DEPTH={TASK4_DEPTH} on {gpus} GPUs trains, timing its steps, "
        "with memory on every GPU", f"{len(steps)} optimizer steps; no memory on {empty}"
        if empty else "no optimizer step", "main() in hw3/model_parallel.py")


# -- Task 5 ----------------------------------------------------------------------------------
def forward_moves(found):
    log = found["log"]
    calls = [e for e in log if e["kind"] == "to"]
    between = [e for e in log if e.get("copied") and str(e.get("src")).startswith("cuda")
               and str(e.get("dst")).startswith("cuda")]
    return log, calls, between


@pytest.mark.check("hw3.task5.to_calls")
@pytest.mark.parametrize("gpus", [2, 5])
def test_task5_every_to_targets_next_layer(probe, gpus):
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    built(found)
    log, calls, _ = forward_moves(found)
    stray = []
    for position, entry in enumerate(log):
        if entry["kind"] != "to":
            continue
        following = next((e for e in log[position + 1:] if e["kind"] == "layer"), None)
        target = found["devices"][following["index"]] if following else None
        if following is None or entry["dst"] != target:
            stray.append((entry, following, target))
    assert calls and not stray, explain(
        "every .to() in forward moves the activation to the GPU of the layer that runs next",
        "no .to() call in forward" if not calls else
        f"{len(stray)} of {len(calls)} .to() calls go elsewhere, e.g. to {stray[0][0]['dst']} at "
        f"{stray[0][0].get('site')} while the next layer "
        f"{'is on ' + str(stray[0][2]) if stray[0][1] else 'does not exist'}", LOOK_FORWARD)


@pytest.mark.check("hw3.task5.transfers")
@pytest.mark.parametrize("gpus", [2, 5])
def test_task5_real_transfers_equal_device_changes(probe, gpus, measured):
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    built(found)
    _, calls, between = forward_moves(found)
    measured["task5"] = {str(gpus): {"to_calls": len(calls), "transfers": len(between)}}
    expected = device_changes(found["devices"])
    assert len(between) == expected, explain(
        f"{expected} real GPU-to-GPU transfer(s) in one forward pass: one per change of device "
        f"along the layers ({describe_layout(found['devices'])}); the input's move onto the "
        "first GPU is counted apart",
        f"{len(between)} GPU-to-GPU transfers ({len(calls)} .to() calls)"
        + (f", e.g. {between[0]['src']} -> {between[0]['dst']} at {between[0].get('site')}"
           if between else ""), LOOK_FORWARD + ": move the activation only when the next "
        "layer is on another GPU, never back")



# -- What the report says, against what the code does -----------------------------------------
# The student's answers (hw3/report.pdf, else hw3/answers.yaml) are compared with what the
# grader measured on the same code. Counts must be equal; times are compared by shape only
# (they rise with DEPTH; no speed-up with more GPUs), as the student measured them on other
# hardware. Magnitudes far from ours are flagged for the instructor, never scored.
PLAUSIBLE_RATIO = 2.0  # a student's time or memory ratio within 2x of ours is plausible


def _ratio_flag(flag, what, theirs, ours):
    if theirs > 0 and ours > 0 and not 1 / PLAUSIBLE_RATIO <= theirs / ours <= PLAUSIBLE_RATIO:
        flag(f"{what}: the report's ratio {theirs:.2f} is far from the measured {ours:.2f} "
             f"(more than {PLAUSIBLE_RATIO:g}x apart); were these numbers measured on this code?")


@pytest.mark.check("hw3.task1.reported")
@pytest.mark.parametrize("qid", ["task1.layers_per_gpu", "task1.transfer_between"])
def test_task1_report_matches_the_code(probe, answers, agree, qid):
    found = record(probe, "layout", gpus=2, depth=6)
    built(found)
    devices = found["devices"]
    value = reported(answers, qid)
    if qid == "task1.layers_per_gpu":
        truth, what = counts_per_gpu(devices, 2), f"puts {counts_per_gpu(devices, 2)} layers on the 2 GPUs"
    else:
        change = next((i for i in range(1, len(devices)) if devices[i] != devices[i - 1]), None)
        truth = [change - 1, change] if change is not None else []
        what = (f"moves the activation between layers {change - 1} and {change}" if truth
                else "never moves the activation")
    agree(qid, value, truth, what)


def _table(answers, qid, key, keys):
    by_key = rows_by(reported(answers, qid), key)  # a key written as "six" is no row, no crash
    absent = [k for k in keys if k not in by_key or not isinstance(
        by_key[k].get("step_time_ms"), (int, float))]
    assert not absent, explain(
        f"the table {qid} has a step time for {key.upper() if key == 'depth' else key} "
        + ", ".join(map(str, keys)), "no step time for " + ", ".join(map(str, absent)),
        answers.where_to_answer(qid))
    return by_key


@pytest.mark.check("hw3.task2.reported")
def test_task2_reported_times_rise_with_depth(probe, answers, reported_values, flag):
    found = record(probe, "trend")
    built(found, "and training the model")
    rows = _table(answers, "task2.step_time_table", "depth", TIMING_DEPTHS)
    times = [float(rows[d]["step_time_ms"]) for d in TIMING_DEPTHS]
    reported_values["task2.step_time_ms"] = {str(d): t for d, t in zip(TIMING_DEPTHS, times)}
    ours = [found["results"][f"2x{d}"]["median_ms"] for d in TIMING_DEPTHS]
    _ratio_flag(flag, "Task 2, step time DEPTH=24 over DEPTH=6", times[-1] / times[0] if times[0] else 0,
                ours[-1] / ours[0])
    assert all(a < b for a, b in zip(times, times[1:])), disagrees(
        answers, "task2.step_time_table", "step times that rise with DEPTH (6 < 12 < 24)",
        "gets slower with every layer added (measured here: " + ", ".join(
            f"DEPTH {d}: {t:.2f} ms" for d, t in zip(TIMING_DEPTHS, ours)) + ")",
        ", ".join(f"DEPTH {d}: {t:g} ms" for d, t in zip(TIMING_DEPTHS, times)))


@pytest.mark.check("hw3.task3.reported")
def test_task3_report_matches_the_layout(probe, answers, agree):
    found = record(probe, "layout", gpus=5, depth=20)
    built(found)
    truth = counts_per_gpu(found["devices"], 5)
    agree("task3.layers_per_gpu_20_5", reported(answers, "task3.layers_per_gpu_20_5"), truth,
          f"puts {truth} layers on the 5 GPUs")


@pytest.mark.check("hw3.task4.reported")
@pytest.mark.parametrize("aspect", ["complete", "no_speedup", "memory_shrinks"])
def test_task4_report_agrees_with_the_runs(probe, answers, reported_values, flag, aspect):
    found = record(probe, "task4")
    built(found, "and training the model")
    rows = _table(answers, "task4.table", "gpus", [2, 5])
    memory = {g: rows[g].get("memory_per_gpu_mib") for g in (2, 5)}
    memory = {g: (m if isinstance(m, list) else [m] if isinstance(m, (int, float)) else [])
              for g, m in memory.items()}
    times = {g: float(rows[g]["step_time_ms"]) for g in (2, 5)}
    ours = {g: found["results"][f"{g}x{TASK4_DEPTH}"] for g in (2, 5)}
    reported_values["task4"] = {str(g): {"step_time_ms": times[g], "memory_per_gpu_mib": memory[g]}
                                for g in (2, 5)}
    if aspect == "complete":
        wrong = [g for g in (2, 5) if len(memory[g]) != g]
        assert not wrong, explain(
            "one peak-memory value per GPU: 2 values for 2 GPUs, 5 for 5",
            "; ".join(f"{len(memory[g])} value(s) for {g} GPUs" for g in wrong),
            answers.where_to_answer("task4.table"))
    elif aspect == "no_speedup":
        ours_ratio = ours[5]["median_ms"] / ours[2]["median_ms"] if ours[2]["median_ms"] else 0.0
        _ratio_flag(flag, "Task 4, step time 5 GPUs over 2 GPUs", times[5] / times[2] if times[2] else 0,
                    ours_ratio)
        assert times[5] >= times[2] / NO_SPEEDUP_TOLERANCE["real"], disagrees(
            answers, "task4.table", "no speed-up from 2 to 5 GPUs (naive model parallelism runs "
            "one GPU at a time)", f"takes {ours[2]['median_ms']:.2f} ms per step on 2 GPUs and "
            f"{ours[5]['median_ms']:.2f} ms on 5 here", f"{times[2]:g} ms and {times[5]:g} ms")
    else:
        assert memory[2] and memory[5], explain(
            "peak memory per GPU for 2 and for 5 GPUs", "a memory column left empty",
            answers.where_to_answer("task4.table"))
        theirs = max(memory[5]) / max(memory[2]) if max(memory[2]) else 0
        peak2 = max(ours[2]["peak_memory"], default=0)
        mine = max(ours[5]["peak_memory"], default=0) / peak2 if peak2 else 0.0
        _ratio_flag(flag, "Task 4, largest per-GPU memory on 5 GPUs over 2 GPUs", theirs, mine)
        assert max(memory[5]) < max(memory[2]), disagrees(
            answers, "task4.table", "less memory on the busiest GPU with 5 GPUs than with 2 "
            "(each holds fewer layers)", "needs {:.0%} of the 2-GPU peak per GPU with 5 GPUs here"
            .format(mine), f"{max(memory[2]):g} MiB vs {max(memory[5]):g} MiB")


@pytest.mark.check("hw3.task5.reported")
@pytest.mark.parametrize("gpus,quantity", [(2, "to_calls"), (2, "transfers"), (5, "to_calls"),
                                           (5, "transfers")])
def test_task5_reported_counts_match(probe, answers, reported_values, flag, gpus, quantity):
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    built(found)
    _, calls, between = forward_moves(found)
    truth = len(calls) if quantity == "to_calls" else len(between)
    qid = f"task5.{quantity}_{gpus}gpus"
    value = reported(answers, qid)
    reported_values["task5"] = {str(gpus): {quantity: value}}
    what = ".to() calls" if quantity == "to_calls" else "GPU-to-GPU transfers"
    must_agree(answers, qid, value, truth, str(truth), f"makes {truth} {what} in one forward "
               f"pass with DEPTH={TRANSFER_DEPTH} on {gpus} GPUs", flag)
