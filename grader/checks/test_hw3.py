"""Home Work 3: LargeLinearModelMP, naive model parallelism (hw3/model_parallel.py).

The student's module is imported in one sandboxed child (grader/harness/hw3_probe.py), which
measures every configuration below; each check reads its part of those measurements. The same
child measures the course's base code (the template's script) first: Task 1 asks what the
provided code does, whatever the student changed since.

What each check scores is the rubric's (rubrics/hw3.yaml; the reasons in rubrics/README.md):
Task 1's facts against the base code, Task 3's code on node sizes where the base code is wrong,
every other fact against what the student's own code does; Tasks 4 and 5's parts about a run on
N GPUs only where Task 3's layout spreads the layers over all N (not_task3s_model). The timing checks
(hw3.task2.trend, hw3.task4.no_speedup) score nothing: they show the student what the
measurement that decides their yes/no answers says.

PYTEST_DONT_REWRITE: the assertion messages are the feedback; pytest's rewriting would bury them.
"""
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.checks.hw3_facts import accepted, change, direction, faster, said, yes_no
from grader.checks.hw3_layout import (contiguous_blocks, counts_per_gpu, describe_layout,
                                      device_changes, even_contiguous_layout, first_misplaced,
                                      gpu_index, layers_around_move,
                                      layers_not_run_once_in_order, layers_per_gpu, spearman)
from grader.checks.hw3_printed_counts import printed_counts, statements
from grader.checks.hw3_recorded_calls import recorded_part
from grader.checks.hw3_trained_class import UNDECIDED, built_beside, choose
from grader.checks.hw3_trained_layout import MODEL_CLASS, first_collapse
from grader.checks.practical_answers import command_line_options, constant_in_source, holds_a_number, rows_by
from grader.checks.practical_measures import script_text
from grader.checks.support import (HIDDEN, AnswerNotRead, GradedByHand, answers_hidden, disagrees,
                                   explain, reported)
from grader.common.locations import data_folder
from grader.common.text import answer_shown
from grader.harness.hw3_import import short_run
from grader.harness.hw3_script_call import SCRIPT
from grader.harness.course_environment import (device_mismatch_note, missing_module_note,
                                               read_only_note)

# Task 1 asks about the provided code as it is: DEPTH=6 on 2 GPUs.
# The template's copy: beside grader/ in the checkout, inside it in the installed student kit
# (an installed kit had looked beside it and errored Task 1 for every student: a student's day).
BASE_CODE = data_folder("student_template") / "hw3" / "model_parallel.py"
BASE_GPUS, BASE_DEPTH = 2, 6
# Task 3's code is scored on 1 to 8 GPUs, with at least as many layers as GPUs (fewer cannot be
# spread over all of them); it earns where the base code's fixed two-GPU split is wrong.
NODE_SIZES = [1, 2, 3, 4, 5, 8]
# Node sizes where any layout that runs passes Task 3's checks, or the base code's own split
# does: a case there counts only when it fails (a layout that breaks on 2 GPUs, the handout's
# Task 4 node, still costs).
PASS_PROVES_NOTHING = {1: "one GPU: any layout that runs passes this",
                       2: "two GPUs: the base code's own split passes this"}
DEPTHS = [3, 5, 6, 12, 20, 24]
LAYOUT_DIM = 16
TRANSFER_DEPTH = 20  # Task 5 counts with the DEPTH of Task 4, as the answer sheet asks
TASK4_GPUS = [2, 5]
TIMING_DEPTHS = [6, 12, 24]
TIMING_DIM = 256
TASK4_DEPTH = 20
# Where the counting code is tried a second time when the template's counters (self.to_calls,
# self.transfers) do not count: fewer layers than GPUs, so a count printed as a constant or
# worked out from DEPTH and the GPU count (20 calls, N - 1 transfers) is not what the forward
# pass makes there.
RECOUNT_GPUS, RECOUNT_DEPTH = 5, 3


def base_code_source() -> str:
    try:
        return BASE_CODE.read_text(encoding="utf-8")
    except OSError:
        return ""  # the base_code fixture reports it


PLAN = [
    {"part": "base_code", "source": base_code_source(), "gpus": BASE_GPUS, "depth": BASE_DEPTH,
     "dim": LAYOUT_DIM, "batch": 4},
    {"part": "layouts", "gpus": NODE_SIZES, "depths": DEPTHS, "dim": LAYOUT_DIM, "batch": 4},
    {"part": "transfers", "gpus": TASK4_GPUS, "depth": TRANSFER_DEPTH, "dim": LAYOUT_DIM,
     "batch": 4},
    {"part": "transfers", "gpus": [RECOUNT_GPUS], "depth": RECOUNT_DEPTH, "dim": LAYOUT_DIM, "batch": 4},
    {"part": "timing", "label": "trend", "configs": [[2, d] for d in TIMING_DEPTHS],
     "dim": TIMING_DIM, "batch": 64, "warmup": 2, "rounds": 9, "simulated": [1, 3]},
    {"part": "timing", "label": "task4", "configs": [[g, TASK4_DEPTH] for g in TASK4_GPUS],
     "dim": TIMING_DIM, "batch": 64, "warmup": 2, "rounds": 9, "simulated": [1, 3]},
]
# The settings each task's numbers were measured under, shown in the reports beside the values
# (a student's own numbers come from their runs, e.g. at the script's DIM=1024).
_TIMING = next(part for part in PLAN if part["part"] == "timing")
_STEPS = (f"median of {_TIMING['rounds']} steps after {_TIMING['warmup']} warm-up steps on real "
          f"GPUs ({_TIMING['simulated'][1]} after {_TIMING['simulated'][0]} on virtual GPUs' "
          "simulated clock, where every step takes the same)")
MEASURED_UNDER = {
    "task1": "DEPTH=6 on 2 GPUs",
    "task2": (f"DEPTH {', '.join(map(str, TIMING_DEPTHS))} on 2 GPUs, DIM={TIMING_DIM}, "
              f"batch {_TIMING['batch']}, {_STEPS}"),
    "task3": (f"{', '.join(map(str, NODE_SIZES))} GPUs x DEPTH {', '.join(map(str, DEPTHS))}, "
              f"DIM={LAYOUT_DIM}"),
    "task4": (f"DEPTH={TASK4_DEPTH} on 2 and 5 GPUs, DIM={TIMING_DIM}, batch {_TIMING['batch']}, "
              f"{_STEPS}, the grader's own training step (your model, MSE loss, SGD without "
              "momentum: no optimizer state, so less memory than a run with Adam); memory: the "
              "peak PyTorch allocated on each GPU for this configuration"),
    "task5": f"one forward pass, DEPTH={TRANSFER_DEPTH}, on 2 and 5 GPUs",
}
# On virtual GPUs the step times come from the simulated clock (grader/vgpu/clock.py): the same
# on every run, under any load; on real GPUs from the wall clock. Each record says which.
# 5 GPUs may not be more than this much faster than 2: on the wall clock a margin for noise;
# on the simulated clock naive model parallelism is never faster with more GPUs (it only adds
# transfers), so a small margin is enough and a real speed-up (e.g. a backward cut short by a
# detach) is caught.
NO_SPEEDUP_TOLERANCE = {"real": 1.5, "simulated": 1.05}
# What to look at, after the method of the model class the grader built (look_task3,
# look_forward): a renamed class is graded since 2bfff02, and its feedback had named the
# handout's LargeLinearModelMP, which the student's file does not have.
COUNTING_HOW = (" (Task 5: add 1 to self.to_calls at every x.to(layer_device), and 1 to "
                "self.transfers when x is not already on layer_device: test that before the "
                "move, since after it x is always there)")
MOVED_HOW = (": it moves layers off the GPUs __init__ gave them, and a layer computes where it "
             "is when forward() calls it: leave each layer on its GPU and move only the "
             "activation")
# Task 5's printed counts, one case per count: the .to() calls, then the transfers.
QUANTITIES = ("to_calls", "transfers")
# What a student reads where the probe could not build a model their own script builds and runs
# (the probe's message names the call, its line and why).
MODEL_NOT_BUILT = ("the grader could not build your model the way your script builds it ({why}); "
                   "your script itself runs to its end, so this is the grader's failure, not "
                   "yours: a person will grade these by hand")
QUANTITY_WORDS = {"to_calls": ".to() calls", "transfers": "GPU-to-GPU transfers"}


def model_of(found: dict | None) -> tuple[str, str]:
    """(the model's class, the file that defines it) as the probe built it: a record's
    `model_class` where the script's model has another name than the handout's, its
    `model_file` where the class is in another file than the script (hw3_build.py); the
    handout's LargeLinearModelMP in hw3/model_parallel.py where no class was found."""
    found = found or {}
    name, path = found.get("model_class"), found.get("model_file")
    return (name if isinstance(name, str) else MODEL_CLASS,
            path if isinstance(path, str) else SCRIPT)


def look_task3(found: dict | None) -> str:
    model, path = model_of(found)
    return f"{model}.__init__ in {path} (Task 3: the layout)"


def look_forward(found: dict | None) -> str:
    model, path = model_of(found)
    return f"{model}.forward in {path} (the baton pass)"


def look_counting(found: dict | None) -> str:
    return look_forward(found) + COUNTING_HOW


def look_moved(found: dict | None) -> str:
    return look_forward(found) + MOVED_HOW


@pytest.fixture(scope="module")
def script_specs(submission) -> dict[int, dict]:
    return task5_script_specs(submission)


def task5_script_specs(submission) -> dict[int, dict]:
    """The student's script as the grader runs it for Task 5's printed counts, by GPU count:
    DEPTH=20 at the timing DIM, and STEPS=3 only to shorten the run where the script has that
    constant, more past a warm-up its loop skips (hw3_import.short_run; the handout names DIM
    and DEPTH only; a loop of the student's own keeps its steps)."""
    script = submission / "hw3" / "model_parallel.py"
    sets = {"DEPTH": TASK4_DEPTH, "DIM": TIMING_DIM}
    if constant_in_source(script, "STEPS") is not None:
        sets.update(short_run(script_text(submission, SCRIPT)))
    return {g: with_options(dict(script="hw3/model_parallel.py", gpus=g, sets=sets), script)
            for g in TASK4_GPUS}


def with_options(spec: dict, script: Path) -> dict:
    """`spec` with the constants it sets also given as the script's own argparse options where
    it has them (`--depth 20`), and set in the source only where the script assigns them at
    its top level (an argparse-only script has no DEPTH to rewrite)."""
    options = command_line_options(script, spec["sets"])
    if not options:
        return spec
    sets = {name: value for name, value in spec["sets"].items()
            if name not in options or constant_in_source(script, name) is not None}
    args = tuple(part for name, flag in options.items() for part in (flag, str(spec["sets"][name])))
    return dict(spec, sets=sets, args=args)


@pytest.fixture(scope="module")
def probe(runs, script_specs, pytestconfig):
    runs.prefetch(*script_specs.values())
    plan = PLAN
    records, run = runs.hw3(plan, gpus=max(NODE_SIZES))
    if built_beside(records):
        # main() builds the handout's class and another: the one its own runs trained is
        # graded (adv53 F0), and where they do not tell, Tasks 3-5 wait for a person.
        choice = choose(records, own_runs_events(runs, script_specs))
        if choice.undecided:
            pytestconfig.stash[UNDECIDED] = choice.undecided
        if choice.part:
            plan = [choice.part] + PLAN
            records, run = runs.hw3(plan, gpus=max(NODE_SIZES))
    not_built = [r["error"] for r in records if (r.get("error") or {}).get("type") == "CannotBuild"]
    if not_built and script_ran_to_its_end(runs, script_specs):
        # Built again with what the script's own runs passed its constructor (adv42 F1).
        recorded = recorded_part([(g, TIMING_DIM, TASK4_DEPTH, runs.script(**spec))
                                  for g, spec in script_specs.items()])
        again = runs.hw3([recorded] + plan, gpus=max(NODE_SIZES)) if recorded else ([], None)
        if again[0]:
            records, run = again
        for error in (r["error"] for r in records
                      if (r.get("error") or {}).get("type") == "CannotBuild"):
            error["script_ran_to_its_end"] = True
    return records, run


def own_runs_events(runs, script_specs) -> list[list[dict]]:
    """The traces of the script's own runs (Task 5's, DEPTH=20 on 2 and 5 GPUs)."""
    found = []
    for spec in script_specs.values():
        try:
            found.append(runs.script(**spec).events or [])
        except Exception:   # a run the grader could not make: Task 5's checks say so
            continue
    return found


def script_ran_to_its_end(runs, script_specs) -> bool:
    """Whether the student's script ran to its end in the runs hw3.script_runs judges (DEPTH=20
    on 2 and 5 GPUs): passed on every configuration it counts, and on one at least. A run
    stopped only by the grader's read-only folder is not counted there, nor here."""
    verdicts = []
    for spec in script_specs.values():
        run = runs.script(**spec)
        if run.ok:
            verdicts.append(True)
        elif not any(read_only_note(e.get("message", "")) for e in run.of("exception")):
            verdicts.append(False)
    return bool(verdicts) and all(verdicts)


def record(probe, kind, **match):
    records, run = probe
    # The probe imports the student's module per configuration (an import that fails is that
    # configuration's error); `import_error` is written only when the probe could not start.
    for failure in (r for r in records if r.get("kind") == "import_error"):
        error = failure["error"]
        missing = missing_module_note(error["message"])
        raise AssertionError(f"The HW3 probe could not start: {error['type']}"
                             f"{' at ' + error['site'] if error.get('site') else ''}: "
                             f"{error['message']}" + (f"\n{missing}" if missing else ""))
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


def run_settings(found) -> str:
    """How the grader's timing run differs from the student's own `pdl-grade run`, said with
    its times: a student comparing them saw other numbers and no reason why."""
    return (f"{clock_of(found)} clock, DIM={TIMING_DIM}, batch {_TIMING['batch']}: other times than "
            "your script's own settings give; the comparison is what counts")


def constructor_note(found) -> str:
    """How the grader called the constructor, where that call may not have passed the
    configuration: a parameter of a name the grader does not know keeps its default."""
    call = found.get("built_as")
    if not call or "left to its default" not in call:
        return ""
    return (f". The grader built the model as {call} (DIM and DEPTH set to the "
            "configuration in the module first): a constructor parameter it does not recognise keeps its "
            "default. Name them dim and depth (or default them to DIM and DEPTH, "
            "`def __init__(self, dim=DIM, depth=DEPTH)`), or read the module's constants")


def built(found, what="the model", answers=None, qids: tuple[str, ...] = ()) -> None:
    """Fails where the probe could not build or run the model. `answers`, `qids`: the answers
    the calling check grades, which must be there before its points can wait for a person
    (a missing answer is the student's own 0, whatever the grader could build)."""
    error = found.get("error")
    if error:
        where = (f"with {found['gpus']} GPU(s) and DEPTH={found['depth']}" if "gpus" in found
                 else "for (GPUs, DEPTH) " + ", ".join(f"({g}, {d})" for g, d in found["configs"]))
        at = f"{error['type']}{' at ' + error['site'] if error.get('site') else ''}: {error['message']}"
        if error["type"] == "CannotBuild":  # the same for every configuration: said once
            if error.get("script_ran_to_its_end"):
                # The script itself builds and runs its model: the grader failed, not the
                # student, so a person grades what the probe's model would have shown.
                for qid in qids:
                    reported(answers, qid)
                raise GradedByHand(MODEL_NOT_BUILT.format(why=error["message"]), "hw3.model_not_built")
            raise AssertionError(error["message"])
        if error.get("during") == "import":  # said once per node size, not per DEPTH
            node = (f" on a node of {found['gpus']} GPU(s)" if "gpus" in found else "")
            missing = missing_module_note(error["message"])
            raise AssertionError(f"Importing hw3/model_parallel.py{node} failed: {at}"
                                 + (f"\n{missing}" if missing else ""))
        gpus, depth = (found["gpus"], found["depth"]) if "gpus" in found else found["configs"][0]
        look = (f"\nWhere to look: run it as the grader did: pdl-grade run --gpus {gpus} --set "
                f"DEPTH={depth} hw3/model_parallel.py")
        look += constructor_note(found)
        moved = device_mismatch_note(error["message"], error.get("site"))
        if moved:
            look += f"\n{moved}"
        if "invalid device ordinal" in error["message"].lower():
            look += (f"; a node of {gpus} GPU(s) has cuda:0 .. cuda:{gpus - 1} only, and the layout "
                     "asked for a GPU past the last one: ")
            # Only a DEPTH that N does not divide sends i // (DEPTH // N) past the last GPU; on
            # one GPU, or where N divides DEPTH, the layout names a GPU of its own (the base
            # code's cuda:1 had been told to check a rule it does not have: a TA's audit).
            look += (f"check its rule where DEPTH is not a multiple of the GPU count (DEPTH={depth} "
                     f"on {gpus}: i // (DEPTH // N) goes past cuda:N-1), with N from "
                     "torch.cuda.device_count()" if depth % gpus else
                     "take the GPUs from N = torch.cuda.device_count() rather than naming one "
                     "(the base code's cuda:1 needs two GPUs)")
        raise AssertionError(f"Building or running {what} {where} failed: {at}{look}")


def ran_forward(found) -> None:
    built(found)
    error = found.get("forward_error")
    if error:
        moved = device_mismatch_note(error["message"], error.get("site"))
        raise AssertionError(explain(
            "the forward pass runs: each layer receives its input on its own GPU",
            f"{error['type']}{' at ' + error['site'] if error.get('site') else ''}: "
            f"{error['message']}", look_forward(found)) + (f"\n{moved}" if moved else ""))


def check_fact(answers, qid, verdict, observed_in_code, measured, reported_values,
               code_decides: bool = True) -> None:
    """A yes/no answer against the verdict the measurement of the student's code supports."""
    value = reported(answers, qid)
    answer = yes_no(value)
    measured[qid] = accepted(verdict)
    reported_values[qid] = said(answer) if answer is not None else value
    assert answer is not None, explain(f"yes or no: {answers.questions.get(qid, qid)}",
                                       f"{value!r}", answers.where_to_answer(qid))
    assert answer in verdict, disagrees(answers, qid, accepted(verdict), observed_in_code,
                                        said(answer), code_decides)


# -- Task 1: what the provided code does ------------------------------------------------------
@pytest.fixture(scope="module")
def base_code(probe):
    """The provided code's layout and move with DEPTH=6 on 2 GPUs (as the template ships it)."""
    records, run = probe
    found = next((r for r in records if r.get("kind") == "base_code"), None)
    if not BASE_CODE.is_file():
        raise RuntimeError(f"the course's base code {BASE_CODE} is missing: a grading problem, "
                           "not your code")
    if found is None:
        raise RuntimeError("the course's base code was not measured (a grading problem, not "
                           "your code): " + (run.problem() or "the probe stopped before it"))
    if found.get("skipped"):
        pytest.skip(found["skipped"])
    if found.get("error"):
        raise RuntimeError(f"the course's base code could not be run (a grading problem, not "
                           f"your code): {found['error']}")
    devices = found["devices"]
    return {"task1.layers_per_gpu": counts_per_gpu(devices, BASE_GPUS),
            "task1.transfer_between": layers_around_move(found["log"], "cuda:0", "cuda:1"),
            "layout": describe_layout(devices)}


def provided_code_fact(answers, qid, truth, observed, measured, reported_values) -> None:
    value = reported(answers, qid)
    measured[qid], reported_values[qid] = truth, value
    source = answers.origin.get(qid, "your answers")
    if answers_hidden():
        truth_said, observed = "", f"does otherwise ({HIDDEN})"
    else:
        truth_said = f": {truth}"
    counted = " (layers counted from 0, as the question says)" if qid.endswith("between") else ""
    assert value == truth, explain(
        f"your answer to {qid} is what the provided code does{truth_said}",
        f"you reported {value!r} ({source}); the provided code (the course's base code as the "
        f"template ships it, DEPTH=6 on 2 GPUs) {observed}",
        f"{source}: run hw3/model_parallel.py as it was given (before your Task 3 changes) "
        f"and report what it does{counted}")


@pytest.mark.check("hw3.task1.layers_reported")
def test_task1_layers_per_gpu_of_the_provided_code(base_code, answers, measured,
                                                   reported_values):
    truth = base_code["task1.layers_per_gpu"]
    provided_code_fact(answers, "task1.layers_per_gpu", truth,
                       f"puts {truth[0]} layers on GPU 0 and {truth[1]} on GPU 1 "
                       f"({base_code['layout']})", measured, reported_values)


@pytest.mark.check("hw3.task1.transfer_reported")
def test_task1_where_the_provided_code_moves_the_data(base_code, answers, measured,
                                                      reported_values):
    truth = base_code["task1.transfer_between"]
    provided_code_fact(answers, "task1.transfer_between", truth,
                       f"moves the data from GPU 0 to GPU 1 between layers {truth[0]} and "
                       f"{truth[1]}" if truth else "never moves the data from GPU 0 to GPU 1",
                       measured, reported_values)


# -- Task 2: step time as DEPTH grows ----------------------------------------------------------
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
        f"reused in {look_forward(found)}")


def _task2_depths(answers) -> list[int]:
    """The depths of the Task 2 table: the handout's example (6, 12, 24), or, where the table
    has three or more depths of the student's own choosing ("e.g., from 6 to 12, then 24"),
    those, in order."""
    by_depth = rows_by(reported(answers, "task2.step_time_table"), "depth")
    timed = sorted(d for d, row in by_depth.items() if isinstance(d, int) and d > 0
                   and isinstance(row.get("step_time_ms"), (int, float)))
    if all(d in timed for d in TIMING_DEPTHS) or len(timed) < len(TIMING_DEPTHS):
        return TIMING_DEPTHS
    return timed


def own_depths_ratios(ours: dict, depths: list[int], times: dict) -> tuple[float, float] | None:
    """(the student's time ratio from their first depth to their last, what a line through the
    code's times at DEPTH 6 and 24 gives for the same depths), for the plausibility flag; None
    where the line gives no positive time or the first time is 0."""
    per_layer = (ours[24] - ours[6]) / 18
    base = ours[6] - 6 * per_layer
    predicted = [base + per_layer * d for d in (depths[0], depths[-1])]
    if min(predicted) <= 0 or not times[depths[0]]:
        return None
    return times[depths[-1]] / times[depths[0]], predicted[1] / predicted[0]


def _table_gaps(answers, qid, key, keys) -> tuple[dict, dict]:
    """The table's rows by `key`, and for each of `keys` without a step time, why: a cell of
    words is said as written, not as a missing time."""
    by_key = rows_by(reported(answers, qid), key)  # a key that is no number is no row, no crash
    gaps = {}
    for k in keys:
        time = by_key.get(k, {}).get("step_time_ms")
        if isinstance(time, (int, float)) and not isinstance(time, bool):
            continue
        gaps[k] = (f"for {k}, {time!r} is not read as a time in ms"
                   if isinstance(time, str) and time.strip() else None)
    return by_key, gaps


def _table(answers, qid, key, keys):
    by_key, gaps = _table_gaps(answers, qid, key, keys)
    missing = [str(k) for k, words in gaps.items() if words is None]
    observed = [words for words in gaps.values() if words is not None] + (
        ["no step time for " + ", ".join(missing)] if missing else [])
    expected = (f"the table {qid} has a step time for {key.upper() if key == 'depth' else key} "
                + ", ".join(map(str, keys)))
    if gaps and all(holds_a_number(by_key.get(k, {}).get("step_time_ms"), "ms") for k in gaps):
        raise AnswerNotRead(explain(expected, "; ".join(observed) + " (the instructor reads it)",
                                    answers.where_to_answer(qid)), qid)
    assert not gaps, explain(expected, "; ".join(observed), answers.where_to_answer(qid))
    return by_key


def wall_clock_hint(theirs: dict, ours: dict, clock: str) -> str:
    """Where reported step times are tens of times the simulated ones: what they likely are (a
    student copying the times their script printed on virtual GPUs saw 5 GPUs 'faster')."""
    far = [g for g in ours if ours[g] > 0 and theirs.get(g, 0) > 20 * ours[g]]
    if clock != "simulated" or not far:
        return ""
    return ("; your times are tens of times these: on virtual GPUs the times a script prints "
            "are this computer's wall clock, which says nothing about GPUs (5 virtual GPUs are "
            "no slower to emulate than 2): report the simulated clock's, the line `pdl-grade "
            "run` prints at the end, or real GPUs' times")


# The student measured on other hardware: times are compared by shape, never by value.
# Magnitudes far from ours are flagged for the instructor, never scored.
PLAUSIBLE_RATIO = 2.0  # a student's time or memory ratio within 2x of ours is plausible


def _ratio_flag(flag, what, theirs, ours):
    if theirs > 0 and ours > 0 and not 1 / PLAUSIBLE_RATIO <= theirs / ours <= PLAUSIBLE_RATIO:
        flag(f"{what}: the report's ratio {theirs:.2f} is far from the measured {ours:.2f} "
             f"(more than {PLAUSIBLE_RATIO:g}x apart); were these numbers measured on this code?")


def _medians(found, configs):
    return {key: found["results"][f"{g}x{d}"]["median_ms"] for key, (g, d) in configs.items()}


@pytest.mark.check("hw3.task2.table_reported")
def test_task2_reported_times_move_with_depth_as_the_code(probe, answers, reported_values,
                                                          flag):
    found = record(probe, "trend")
    built(found, "and training the model", answers, ("task2.step_time_table",))
    depths = _task2_depths(answers)
    rows = _table(answers, "task2.step_time_table", "depth", depths)
    times = {d: float(rows[d]["step_time_ms"]) for d in depths}
    reported_values["task2.step_time_ms"] = {str(d): t for d, t in times.items()}
    ours = _medians(found, {d: (2, d) for d in TIMING_DEPTHS})
    steps = list(zip(depths, depths[1:]))
    if depths == TIMING_DEPTHS:
        _ratio_flag(flag, "Task 2, step time DEPTH=24 over DEPTH=6",
                    times[24] / times[6] if times[6] else 0, ours[24] / ours[6])
        expected = {(a, b): change(ours[a], ours[b]) for a, b in steps}
    else:
        # Depths of the student's own: each step between them goes the way the code's time goes
        # from DEPTH 6 to 24 (step time is monotone in the depth), and the ratio from the first
        # to the last is flagged where far from what a line through the code's times gives.
        expected = {(a, b): change(ours[6], ours[24]) for a, b in steps}
        ratios = own_depths_ratios(ours, depths, times)
        if ratios is not None:
            _ratio_flag(flag, f"Task 2, step time DEPTH={depths[-1]} over DEPTH={depths[0]}",
                        *ratios)
    # Measured on other hardware, a step can come out about level (within 10%) where the
    # code's time clearly rises (kernel launches, a clock read without synchronize): that is a
    # flag for the instructor, not a lost point (a TA's audit). A step going clearly the other
    # way, or a table level from its first depth to its last, contradicts the code.
    first_to_last = (depths[0], depths[-1])   # never one step: a table has 3 depths or more
    expected[first_to_last] = change(ours[6], ours[24])
    checked = [*steps, first_to_last]
    opposite = {"up": "down", "down": "up"}
    wrong = [(a, b) for a, b in checked if expected[(a, b)] and (
        change(times[a], times[b]) == opposite[expected[(a, b)]]
        or ((a, b) == first_to_last and change(times[a], times[b]) is None))]
    level = [(a, b) for a, b in steps if expected[(a, b)] and (a, b) not in wrong
             and change(times[a], times[b]) is None]
    if level and not wrong:
        flag("Task 2: the reported step time is about level from " + ", ".join(
            f"DEPTH {a} to {b} ({times[a]:g} -> {times[b]:g} ms)" for a, b in level)
            + " where the code's clearly rises: measured with torch.cuda.synchronize()?")
    assert not wrong, disagrees(
        answers, "task2.step_time_table", "step times that " + ", ".join(
            f"{'rise' if expected[(a, b)] == 'up' else 'fall'} from DEPTH {a} to {b}"
            for a, b in checked if expected[(a, b)]) + " (a step about level, within 10%, is "
            "taken as measuring noise)",
        "takes " + ", ".join(f"{ours[d]:.2f} ms with DEPTH={d}" for d in TIMING_DEPTHS)
        + f" per step in the grader's run on 2 GPUs ({run_settings(found)})",
        ", ".join(f"DEPTH {d}: {t:g} ms" for d, t in times.items()), measured=True)


@pytest.mark.check("hw3.task2.speed_answer")
def test_task2_answer_does_depth_improve_speed(probe, answers, measured, reported_values):
    found = record(probe, "trend")
    built(found, "and training the model", answers, ("task2.depth_improves_speed",))
    ours = _medians(found, {d: (2, d) for d in TIMING_DEPTHS})
    check_fact(answers, "task2.depth_improves_speed", faster(ours[6], ours[24]),
               f"takes {ours[6]:.2f} ms per step with DEPTH=6 and {ours[24]:.2f} ms with "
               f"DEPTH=24 in the grader's run ({run_settings(found)})", measured,
               reported_values, code_decides=False)


# -- Task 3: the layers over all GPUs ----------------------------------------------------------
LAYOUT_CASES = [pytest.param(n, d, id=f"{n}gpus-depth{d}")
                for n in NODE_SIZES for d in DEPTHS if d >= n]


def probed_record(probe) -> dict | None:
    """A record of the probe's that names the model it built (model_of), None where none
    does (the handout's class, in the script)."""
    records, _ = probe
    return next((r for r in records if isinstance(r.get("model_class"), str)
                 or isinstance(r.get("model_file"), str)), None)


def probed_class(probe) -> str:
    """The model class the probe built: the handout's LargeLinearModelMP, or the class of
    another name the script builds (grader/harness/hw3_build.py), whose passes the own run's
    trace is read for (a renamed class had escaped the collapse check)."""
    return model_of(probed_record(probe))[0]


@dataclass(frozen=True)
class OwnRunCollapse:
    """What the script's own run showed (`said`, for the Observed line): a training pass that
    ran the layers on fewer GPUs than the run's `gpus`; `as_built`, where nothing moved them
    and __init__ had put them on fewer GPUs (the base code's cuda:0 and cuda:1 on 5), each
    layer's device as __init__ placed it: then __init__ is what to fix, not forward()."""
    said: str
    gpus: int = 0
    as_built: tuple[str, ...] = ()


@pytest.fixture(scope="module")
def own_run_collapse(probe, runs, script_specs) -> OwnRunCollapse | None:
    """Where the script's own runs (Task 5's, DEPTH=20 on 2 and 5 GPUs) show a training pass
    of the model that ran its layers on fewer GPUs than the run has (hw3_trained_layout.py):
    what to say, else None. The probe builds and calls the model itself; a model that moves
    its layers onto cuda:0 after some calls, or when run as the script, trains on one GPU."""
    for gpus in TASK4_GPUS:
        try:
            events = runs.script(**script_specs[gpus]).events
        except Exception:   # a run the grader could not make: Task 5's checks say so
            continue
        found = first_collapse(events or [], gpus, probed_class(probe))
        if found is not None:
            return own_run_said(probe, found, gpus)
    return None


def own_run_said(probe, found, gpus: int) -> OwnRunCollapse:
    """The fixture's verdict from `found` (hw3_trained_layout.Collapse) in the own run on
    `gpus` GPUs. Where its trace does not show the layers as __init__ placed them but nothing
    moved them, the probe's build of the model for that node does where it leaves GPUs
    without layers: __init__ is wrong there, whatever forward() does."""
    said, as_built = found.said(), found.as_built
    if not as_built and not found.moved:
        as_built = built_narrow(probe, gpus, TASK4_DEPTH)
        if as_built:
            said += (f"; the grader's build of your model with DEPTH={TASK4_DEPTH} on {gpus} "
                     f"GPUs has its layers {layers_per_gpu(list(as_built), gpus)}, where "
                     "__init__ placed them")
    return OwnRunCollapse(f"in your script's own run with DEPTH={TASK4_DEPTH} on {gpus} GPUs "
                          f"(pdl-grade run --gpus {gpus} --set DEPTH={TASK4_DEPTH} "
                          f"hw3/model_parallel.py), {said}", gpus, tuple(as_built))


def built_narrow(probe, gpus: int, depth: int) -> tuple[str, ...]:
    """Each layer's device as __init__ placed it in the probe's build for `gpus` GPUs and
    `depth` layers, where that leaves some of the GPUs without layers; else ()."""
    found = next((r for r in probe[0] if r.get("kind") == "layout" and r.get("gpus") == gpus
                  and r.get("depth") == depth and not r.get("error")), None)
    devices = (found or {}).get("devices_built") or (found or {}).get("devices") or []
    indices = {gpu_index(d) for d in devices}
    if not devices or None in indices or max(indices) >= gpus \
            or len(indices) >= min(gpus, depth):
        return ()
    return tuple(devices)


def spread_layout(probe, gpus, depth, own_run_collapse: OwnRunCollapse | None = None):
    """This configuration's layer devices; fails unless every GPU of the node holds layers
    (what Task 3 asks): each Task 3 check counts only where the layers are spread. Where the
    script's own run trained its layers on fewer GPUs (`own_run_collapse`, the fixture's), the
    layout the grader's calls saw is not the one it trains with: it fails on every node of two
    GPUs or more, pointing at forward() where something moved the layers, at __init__ where
    they stayed where it put them."""
    found = record(probe, "layout", gpus=gpus, depth=depth)
    built(found)
    devices = found["devices"]
    moved = moved_by_forward(found)
    wrong = [(i, d) for i, d in enumerate(devices) if gpu_index(d) is None or gpu_index(d) >= gpus]
    on_host = any(gpu_index(d) is None for _, d in wrong)
    assert not wrong, explain(
        f"every layer on one of the node's GPUs cuda:0 .. cuda:{gpus - 1}",
        "; ".join(f"layer {i} is on {d}" for i, d in wrong[:5]) + moved, look_moved(found)
        if moved else look_task3(found) + (
            ": every layer you create needs its .to(device), the leftover ones too (where "
            "DEPTH is not a multiple of the GPU count)" if on_host else
            ": derive the GPUs from torch.cuda.device_count(), never a fixed number"))
    counts = counts_per_gpu(devices, gpus)
    idle = [i for i, c in enumerate(counts) if c == 0]
    if idle:
        observed = (f"no layer on {', '.join(f'cuda:{i}' for i in idle)} (layers per GPU "
                    f"{counts}){moved}")
        layouts = layouts_seen(probe)
        raise GPUsLeftIdle(explain(
            f"the {depth} layers spread over all {gpus} GPUs: every GPU holds at least one",
            observed, look_moved(found) if moved
            else look_task3(found) + ": " + why_gpus_idle(counts, depth, gpus, layouts)),
            observed, "moved" if moved else idle_cause(counts, depth, gpus, layouts))
    if own_run_collapse and gpus >= 2:
        observed = (f"the grader's calls of forward() ran {describe_layout(devices)}, but "
                    f"{own_run_collapse.said}")
        if own_run_collapse.as_built:
            look, cause = look_init_of_own_run(probe, found, own_run_collapse)
            raise GPUsLeftIdle(explain(
                f"the {depth} layers spread over all {gpus} GPUs, and over every GPU of any "
                f"node: all {own_run_collapse.gpus} in your script's own run too", observed,
                look), observed, cause)
        raise GPUsLeftIdle(explain(
            f"the {depth} layers spread over all {gpus} GPUs in every forward pass, the "
            "training steps of your own script too", observed, look_moved(found)), observed,
            "moved")
    return found, devices, counts


def look_init_of_own_run(probe, found: dict, own: OwnRunCollapse) -> tuple[str, str]:
    """(where to look, idle_cause's cause) where the own run trained its layers where
    __init__ put them, on fewer GPUs than it has: __init__ and how it reads the GPU count,
    as where the grader's own build leaves GPUs idle (why_gpus_idle's base-code hint where
    every node shows the base code's split)."""
    counts = counts_per_gpu(list(own.as_built), own.gpus)
    depth, layouts = len(own.as_built), layouts_seen(probe)
    cause = idle_cause(counts, depth, own.gpus, layouts)
    used = sum(1 for c in counts if c)
    hint = (why_gpus_idle(counts, depth, own.gpus, layouts) if cause == "base" else
            "look at how it reads the GPU count (torch.cuda.device_count(), never a number of "
            f"its own or GPUs named in the code) and gives every GPU layers. {_EVEN}")
    return (f"{look_task3(found)}: in your script's own run, __init__ put the layers on {used} "
            f"of the {own.gpus} GPUs and nothing moved them (forward() runs each layer where "
            f"it is): {hint}", "base" if cause == "base" else "other")


def moved_by_forward(found: dict) -> str:
    """What to add to an observation where forward() moved layers: the layout read is where
    each layer was when it ran (the probe's `devices`, of the second of its two calls), and
    __init__ had left them elsewhere (`devices_built`) or the first call ran them elsewhere
    (`devices_first_call`), so the student looks at forward() too."""
    built_as, first_call = found.get("devices_built"), found.get("devices_first_call")
    if not built_as and not first_call:
        return ""
    if not first_call:
        return f" while forward() ran them (__init__ had placed {describe_layout(built_as)})"
    said = (" while forward() ran them on its second call, with gradients on as in training "
            "(the grader calls it twice and judges the later call; ")
    if built_as == first_call:
        return said + ("__init__ had placed them, and the first call ran them, as "
                       f"{describe_layout(first_call)})")
    return said + f"the first call ran {describe_layout(first_call)})" + (
        f" (__init__ had placed {describe_layout(built_as)})" if built_as else "")


class GPUsLeftIdle(AssertionError):
    """spread_layout's failure where the layout runs but leaves GPUs without layers, with what
    was observed: the checks that count only spread layouts say so (`spread_for`, the blocks
    item) instead of reading it back out of the message."""
    def __init__(self, message: str, observed: str, cause: str = "other"):
        super().__init__(message)
        self.observed = observed
        self.cause = cause   # idle_cause's


def layouts_seen(probe) -> list[tuple[int, int, list[int]]]:
    """(GPUs, DEPTH, layers per GPU) of every layout the probe built on the node's GPUs: a
    cause is told from the pattern over all of them, never from one layout that happens to
    look like another rule's (a TA's audit: `DEPTH // N + 1` layers per GPU gives [3, 3, 0]
    on 3 GPUs, and was told the base code's split was still in place)."""
    seen = []
    for found in probe[0]:
        devices = found.get("devices")
        if found.get("kind") != "layout" or found.get("error") or not devices:
            continue
        gpus = found["gpus"]
        if all(gpu_index(d) is not None and gpu_index(d) < gpus for d in devices):
            seen.append((gpus, found["depth"], counts_per_gpu(devices, gpus)))
    return seen


def idle_cause(counts: list[int], depth: int, gpus: int,
               layouts: list[tuple[int, int, list[int]]]) -> str:
    """Why GPUs hold no layer, told from `layouts` (every layout built: GPUs, DEPTH, layers
    per GPU) where the cause is a pattern: "cuda0", every layer on cuda:0 on every node (the
    device the rule picks never used); "base", the base code's two halves on every node; else
    from this layout: "chunks", chunks of a fixed size per GPU, ceil(DEPTH / N) or more (a
    common split), fill too few GPUs; "other", the GPUs were not all detected or used."""
    several = [(n, d, c) for n, d, c in layouts if n >= 2] or [(gpus, depth, counts)]
    if all(c[0] == d for _, d, c in several):
        return "cuda0"
    if all(c[:2] == [d // 2, d - d // 2] and not any(c[2:]) for _, d, c in several):
        return "base"
    chunk = -(-depth // gpus)
    filled = [c for c in counts if c]
    size = filled[0] if filled else 0
    if len(filled) > 1 and size >= chunk and filled[:-1] == [size] * (len(filled) - 1) \
            and filled[-1] <= size and counts[:len(filled)] == filled:
        return "chunks"
    return "other"


# What the student is told points at what to look at, never at the remedy's formula: the
# layout rule is what Task 3 asks the student to find and to explain (hw3.task3.explanation).
# The instructor's flag names the usual remedy (STAFF_REMEDY), in the course's grading only.
_EVEN = ("Task 3 asks for every GPU to hold layers, as evenly as DEPTH allows (counts that "
         "differ by at most one)")


def why_gpus_idle(counts: list[int], depth: int, gpus: int,
                  layouts: list[tuple[int, int, list[int]]]) -> str:
    """What to look at where GPUs hold no layer, by its cause (idle_cause)."""
    cause = idle_cause(counts, depth, gpus, layouts)
    if cause == "cuda0":
        return ("every layer is on cuda:0 on every node: the GPU your rule picks is never given "
                "to the layer (.cuda() and .to('cuda') without an index mean cuda:0): look at "
                "where each layer is created or moved, and whether it gets the GPU your rule "
                "chose for it")
    if cause == "base":
        return ("the base code's split is still in place (the first DEPTH // 2 layers on cuda:0, "
                "the rest on cuda:1): detect the GPUs with torch.cuda.device_count() and look at "
                f"how your __init__ decides each layer's GPU. {_EVEN}")
    if cause == "chunks":
        chunk = -(-depth // gpus)
        size = next(c for c in counts if c)
        what = (f"ceil(DEPTH / N) = {chunk} layers" if size == chunk else
                f"{size} layers per GPU, more than ceil(DEPTH / N) = {chunk},")
        filled = sum(1 for c in counts if c)
        return (f"chunks of {what} fill only {filled} of the {gpus} GPUs: the layers run out "
                "before the last GPU. Look at which layers land on which GPU where DEPTH is not "
                f"a multiple of N (here {depth} layers over {gpus}). {_EVEN}")
    return "detect the GPUs with torch.cuda.device_count() and use every one"


# For the instructor (a flag, never the student's feedback): the cause and the usual remedy.
_USUAL = ("the usual remedy gives each of the N GPUs DEPTH // N layers and the first DEPTH % N "
          "one more (or layer i on GPU i * N // DEPTH)")
STAFF_REMEDY = {
    "cuda0": ("every layer on cuda:0 on every node: the GPU the rule computes is never given to "
              "the layer (.cuda() or .to('cuda') without an index); the remedy is "
              ".to(torch.device(f'cuda:{gpu}')) per layer"),
    "base": f"the base code's two-GPU split left in place on every node; {_USUAL}",
    "moved": ("__init__ spreads the layers but forward() moves them onto fewer GPUs before "
              "they run (the layout read is where each layer was when it ran)"),
    "chunks": ("chunks of a fixed size per GPU (ceil(DEPTH / N) or more) leave the last GPUs "
               f"without layers where N does not divide DEPTH; {_USUAL}"),
}


def on_gpus(gpus: int) -> str:
    return f"{gpus} GPU{'s' if gpus != 1 else ''}"


def only_a_failure_counts_on_a_small_node(gpus):
    """Called once a case has passed: on one GPU every layout that builds and runs passes
    (all layers on cuda:0 is spread over "all" GPUs), and on two the untouched base code
    does, so a pass there proves nothing and earns nothing, while a failure (a layout that
    breaks on a one- or two-GPU machine) still costs."""
    if gpus in PASS_PROVES_NOTHING:
        pytest.skip(f"{PASS_PROVES_NOTHING[gpus]}, so it counts only when it fails")


@pytest.mark.check("hw3.task3.all_gpus_used")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_layers_on_every_gpu(probe, gpus, depth, flag, own_run_collapse):
    named = probed_record(probe) or {}
    if named.get("handout_class_kept") is True:
        # A TA reading the failures of the handout's class would grade the wrong code.
        kept = ("which main() builds too, but the script's own runs did not train on every "
                "GPU with the whole batch" if
                named.get("built_beside") else "which main() does not build")
        flag(f"Tasks 3-5: graded {named['model_class']}, which main() builds and runs; the "
             f"script also keeps {MODEL_CLASS} (Task 1's code), {kept}")
    try:
        spread_layout(probe, gpus, depth, own_run_collapse)
    except GPUsLeftIdle as failure:
        # The remedy the student's hint leaves out, for the instructor: once per cause (the
        # same text from every case is one flag in result.json), never before grading.
        remedy = STAFF_REMEDY.get(failure.cause)
        if remedy and not answers_hidden():
            flag(f"Task 3: GPUs left without layers ({remedy}); the student's feedback names "
                 "the cause and what to look at, not the formula")
        raise
    only_a_failure_counts_on_a_small_node(gpus)


def spread_for(probe, gpus, depth, what: str,
               own_run_collapse: OwnRunCollapse | None = None):
    """spread_layout for a check about something else (`what`): where the layers are not on
    every GPU, its failure says that this check counts only where they are, so a student does
    not read a lost share of "the output matches" as a numerical bug (a TA's audit)."""
    try:
        return spread_layout(probe, gpus, depth, own_run_collapse)
    except GPUsLeftIdle as failure:
        raise AssertionError(f"Not counted here ({what} counts only where every GPU holds "
                             f"layers, as Task 3 asks first):\n{failure}") from None


@pytest.mark.check("hw3.task3.balanced")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_even_split(probe, gpus, depth, own_run_collapse):
    found, _, counts = spread_for(probe, gpus, depth, "the balance", own_run_collapse)
    assert max(counts) - min(counts) <= 1, explain(
        f"{depth} layers over {gpus} GPUs: per-GPU counts that differ by at most one "
        f"(e.g. {counts_per_gpu(even_contiguous_layout(depth, gpus), gpus)})",
        f"layers per GPU {counts}", look_task3(found))
    only_a_failure_counts_on_a_small_node(gpus)


@pytest.mark.check("hw3.task3.output_matches")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_every_layer_once_and_output_equals_one_device(probe, gpus, depth,
                                                             own_run_collapse):
    found, devices, _ = spread_for(probe, gpus, depth, "the output", own_run_collapse)
    assert found["n_layers"] == depth and found["distinct_layers"] == depth, explain(
        f"exactly DEPTH={depth} distinct layers with weights in the model",
        f"{found['n_layers']} layers ({found['distinct_layers']} distinct)",
        look_task3(found) + constructor_note(found))
    ran_forward(found)
    assert found.get("matches_single_gpu") is True, explain(
        f"the output on {on_gpus(gpus)} equals the output of the same layers on one device",
        f"outputs differ by up to {found.get('max_difference')}",
        look_forward(found) + ": every layer once, in order")
    # The output equals the model's own on one GPU, not the layers' composition: a forward with
    # work of its own (no ReLU after the last layer), or one that skips or repeats a layer on
    # every device count alike. The layers the forward ran tell them apart.
    if found.get("matches_layers_in_order") is False:
        wrong = layers_not_run_once_in_order(found.get("log") or [], depth)
        assert wrong is None, explain(
            f"the output on {on_gpus(gpus)} is what the {depth} layers give, each once, in order",
            wrong + (" (on one GPU too: your model's output there is the same)"
                     if gpus > 1 else ""),
            look_forward(found) + ": loop over every layer of the model once")
    only_a_failure_counts_on_a_small_node(gpus)


@pytest.mark.check("hw3.task3.contiguous")
@pytest.mark.parametrize("gpus,depth", LAYOUT_CASES)
def test_task3_contiguous_blocks(probe, gpus, depth, own_run_collapse):
    if gpus == 1 or depth == gpus:
        # Every layout that uses all GPUs is then one block per GPU: nothing to tell apart.
        pytest.skip("one GPU, or one layer per GPU: any layout is blocks (not counted)")
    try:
        found, devices, _ = spread_layout(probe, gpus, depth, own_run_collapse)
    except AssertionError as failure:
        # A layout that leaves a GPU empty may well be in blocks: Task 3's own checks say what
        # is wrong; this item is no judgement of it (a TA's audit: "not in blocks" was false).
        observed = getattr(failure, "observed", None) or next(
            (line[len("Observed: "):] for line in str(failure).splitlines()
             if line.startswith("Observed: ")), str(failure).splitlines()[0])
        pytest.skip(f"not counted: {observed}; Task 3's checks above say what to change")
    if contiguous_blocks(devices, gpus):
        only_a_failure_counts_on_a_small_node(gpus)
        return
    expected = even_contiguous_layout(depth, gpus)
    index, observed_device, expected_device = first_misplaced(devices, expected)
    raise AssertionError(explain(
        f"contiguous blocks of layers per GPU, in GPU order ({describe_layout(expected)})",
        f"layer {index} is on {observed_device}, but an even contiguous split of {depth} layers "
        f"over {gpus} GPUs puts it on {expected_device}. This layout makes "
        f"{device_changes(devices)} GPU-to-GPU transfers per forward pass instead of {gpus - 1}",
        look_task3(found)))


# -- Tasks 4 and 5 run Task 3's model ----------------------------------------------------------
def not_task3s_model(layers_per_gpu: list[int], gpus: int) -> str | None:
    """Why a run on `gpus` GPUs is not the one Tasks 4 and 5 ask about, or None. The handout:
    "Use your modified code from Task 3", the layers spread over all the GPUs. A layout that
    leaves GPUs without layers (Task 3 not done: the base code's two-GPU split, every layer on
    cuda:0) does not run the task's model there, and an answer that agrees with that run earns
    nothing: no points for what a non-solution also has (rubrics/README.md; a red team's
    untouched base code had kept all 4.5 points of Tasks 4 and 5)."""
    idle = [i for i, n in enumerate(layers_per_gpu) if n == 0]
    if not idle:
        return None
    return explain(
        f"Tasks 4 and 5 run Task 3's model with DEPTH={TASK4_DEPTH} on {gpus} GPUs, its layers "
        "spread over all of them (the handout: 'Use your modified code from Task 3')",
        f"your layout leaves {', '.join(f'cuda:{i}' for i in idle)} without layers on {gpus} "
        f"GPUs (layers per GPU {layers_per_gpu}): that run is not the task's, so what it shows "
        "earns no point here, whatever you reported",
        "Task 3's checks above: spread the layers over every GPU, then measure again")


def layers_in_forward(probe, gpus: int) -> list[int]:
    """Layers per GPU in the probe's forward pass with DEPTH=TRANSFER_DEPTH on `gpus` GPUs
    (none counted where the record names no layer's device: nothing to judge)."""
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    devices = found.get("devices") or []
    return counts_per_gpu(devices, gpus) if devices else []


# -- Task 4: more GPUs -------------------------------------------------------------------------
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
        f"{look_forward(found)}: it must run the layers one after another, as the task describes")


# The table is graded per configuration, as a TA grades "a table ... for each configuration":
# each row on its own (a step time, one memory value per GPU, no memory where the code puts no
# layer), then the two comparisons between the rows. A comparison needs both rows: where one is
# missing it is left out (skipped), so a table with the 2-GPU row only earns its half, the
# missing row counted once, in its own case (two TAs' audits gave about half by hand).
TASK4_ASPECTS = [*(f"{g}gpus" for g in TASK4_GPUS), "speed", "memory"]


@pytest.mark.check("hw3.task4.table_reported")
@pytest.mark.parametrize("aspect", TASK4_ASPECTS)
def test_task4_reported_table_agrees_with_the_runs(probe, answers, measured, reported_values,
                                                   flag, aspect):
    found = record(probe, "task4")
    built(found, "and training the model", answers, ("task4.table",))
    ours = {g: found["results"][f"{g}x{TASK4_DEPTH}"] for g in TASK4_GPUS}
    measured["task4"] = {str(g): {"step_time_ms": round(run["median_ms"], 3),
                                  "clock": clock_of(found),
                                  "memory_per_gpu_mib": [round(m / 2**20, 2)
                                                         for m in run["peak_memory"]]}
                         for g, run in ours.items()}
    rows, gaps = _table_gaps(answers, "task4.table", "gpus", TASK4_GPUS)
    written = {g: rows.get(g, {}).get("memory_per_gpu_mib") for g in TASK4_GPUS}
    memory = {g: (m if isinstance(m, list) else [m] if isinstance(m, (int, float)) else [])
              for g, m in written.items()}
    # A cell of words is said as written, not as an empty column.
    unread = {g: f"for {g} GPUs {m!r}, not read as MiB values" for g, m in written.items()
              if isinstance(m, str) and m.strip()}
    times = {g: float(rows[g]["step_time_ms"]) for g in TASK4_GPUS if g not in gaps}
    reported_values["task4"] = {str(g): {"step_time_ms": times.get(g),
                                         "memory_per_gpu_mib": memory[g] or None}
                                for g in TASK4_GPUS}
    where = answers.where_to_answer("task4.table")
    not_the_task = {g: not_task3s_model(ours[g]["layers_per_gpu"], g) for g in TASK4_GPUS}
    if aspect.endswith("gpus"):
        gpus = int(aspect[:-len("gpus")])
        assert not_the_task[gpus] is None, not_the_task[gpus]
        _task4_row(gpus, gaps, memory, unread, where, rows.get(gpus, {}))
        return
    if any(not_the_task.values()):
        pytest.skip("comparing the rows needs both of them from Task 3's model; the one that "
                    "is not is counted in its own case")
    if aspect == "speed":
        if gaps:
            pytest.skip("comparing the step times needs both rows; the missing one is counted "
                        "in its own case")
        t2, t5 = ours[2]["median_ms"], ours[5]["median_ms"]
        _ratio_flag(flag, "Task 4, step time 5 GPUs over 2 GPUs",
                    times[5] / times[2] if times[2] else 0, t5 / t2 if t2 else 0)
        verdict, theirs = faster(t2, t5), faster(times[2], times[5])
        assert verdict & theirs, disagrees(
            answers, "task4.table", "5 GPUs " + ("clearly faster than 2" if verdict == {True}
                                                 else "not clearly faster than 2"),
            f"takes {t2:.2f} ms per step on 2 GPUs and {t5:.2f} ms on 5 in the grader's run "
            f"({run_settings(found)})" + wall_clock_hint(times, {2: t2, 5: t5}, clock_of(found)),
            f"{times[2]:g} ms and {times[5]:g} ms", measured=True)
        return
    if not (memory[2] and memory[5]):
        pytest.skip("comparing the memory needs a memory value in both rows; the missing one "
                    "is counted in its own case")
    if any(len(memory[g]) != g for g in TASK4_GPUS):
        # A total (or any count of values but one per GPU) is the row's own case; compared here
        # too it cost a second point for one mistake (a student's audit).
        pytest.skip("comparing the memory needs one value per GPU in both rows; a row without "
                    "them is counted in its own case")
    peak = {g: max(ours[g]["peak_memory"], default=0) / 2**20 for g in TASK4_GPUS}
    _ratio_flag(flag, "Task 4, largest per-GPU memory on 5 GPUs over 2 GPUs",
                max(memory[5]) / max(memory[2]) if max(memory[2]) else 0,
                peak[5] / peak[2] if peak[2] else 0)
    # Whether the busiest GPU needs less memory with 5 GPUs is decided by the layers it holds
    # (its weights, gradients and activations go with them), not by the peaks, which also
    # count what the grader's earlier runs left on the node.
    busiest = {g: max(ours[g]["layers_per_gpu"]) for g in TASK4_GPUS}
    expected = change(busiest[2], busiest[5])
    assert expected is None or direction(max(memory[2]), max(memory[5])) == expected, disagrees(
        answers, "task4.table",
        f"the busiest GPU's memory {'falls' if expected == 'down' else 'rises'} from 2 to 5 GPUs",
        f"puts at most {busiest[2]} layers on one of 2 GPUs and {busiest[5]} on one of 5",
        f"{max(memory[2]):g} MiB vs {max(memory[5]):g} MiB", measured="memory")
    # The same layers on the busiest GPU with 2 and with 5 GPUs (Task 3 not done): its memory
    # cannot clearly fall or rise (a non-solution reported the reference's 200 -> 80).
    assert busiest[2] != busiest[5] or change(max(memory[2]), max(memory[5])) is None, disagrees(
        answers, "task4.table", "the busiest GPU's memory about the same with 2 and 5 GPUs",
        f"puts {busiest[2]} layers on its busiest GPU with 2 GPUs and with 5",
        f"{max(memory[2]):g} MiB vs {max(memory[5]):g} MiB", measured="memory")


def _task4_row(gpus, gaps, memory, unread, where, row):
    """One configuration's row: its step time and one peak-memory value per GPU. A cell with a
    number not read waits for a person, unless the row's other cell is missing or wrong."""
    time_held = gpus in gaps and holds_a_number(row.get("step_time_ms"), "ms")
    memory_held = len(memory[gpus]) != gpus and holds_a_number(row.get("memory_per_gpu_mib"), "mib")
    assert gpus not in gaps or time_held, explain(f"a step time for {gpus} GPUs in the table task4.table",
                                                  gaps.get(gpus) or f"no step time for {gpus}", where)
    assert len(memory[gpus]) == gpus or memory_held, explain(
        f"one peak-memory value per GPU: {gpus} values for {gpus} GPUs",
        unread.get(gpus) or f"{len(memory[gpus])} value(s) for {gpus} GPUs", where)
    if time_held or memory_held:
        raise AnswerNotRead(explain(
            f"a step time and one peak-memory value per GPU for {gpus} GPUs in the table task4.table",
            "; ".join(filter(None, (gaps.get(gpus) if time_held else None,
                                    unread.get(gpus) if memory_held else None)))
            + " (the instructor reads it)", where), "task4.table")


@pytest.mark.check("hw3.task4.utilised_answer")
def test_task4_answer_are_all_gpus_utilised(probe, answers, measured, reported_values):
    found = record(probe, "task4")
    built(found, "and training the model", answers, ("task4.all_gpus_utilised",))
    run = found["results"][f"5x{TASK4_DEPTH}"]
    # A GPU without memory holds no layer either: counted as one without layers.
    layers = [n if m else 0 for n, m in zip(run["layers_per_gpu"], run["peak_memory"])]
    not_the_task = not_task3s_model(layers, 5)
    assert not_the_task is None, not_the_task
    # With layers and memory on every GPU, "yes" (each GPU holds layers) and "no" (only one
    # GPU computes at a time, the others wait) are both right readings of the handout's
    # question.
    check_fact(answers, "task4.all_gpus_utilised", frozenset({True, False}),
               "puts layers and memory on every one of the 5 GPUs (yes: each holds layers; "
               "no: one computes at a time: both read the question right)",
               measured, reported_values)


@pytest.mark.check("hw3.task4.faster_answer")
def test_task4_answer_do_more_gpus_make_it_faster(probe, answers, measured, reported_values):
    found = record(probe, "task4")
    built(found, "and training the model", answers, ("task4.more_gpus_faster",))
    ours = _medians(found, {g: (g, TASK4_DEPTH) for g in TASK4_GPUS})
    check_fact(answers, "task4.more_gpus_faster", faster(ours[2], ours[5]),
               f"takes {ours[2]:.2f} ms per step on 2 GPUs and {ours[5]:.2f} ms on 5 in the "
               f"grader's run ({run_settings(found)})",
               measured, reported_values, code_decides=False)


# -- Task 5: counting the baton passes ---------------------------------------------------------
def observed_counts(found, from_host: bool = False) -> list[tuple[int, int]]:
    """(.to() calls, transfers) in one forward pass: first with the input on the first layer's
    GPU (as the base code's main() gives it), GPU-to-GPU copies; then, where the forward takes
    it, from the host, where a script whose own main() starts there (`from_host`) counts the
    first move, host to GPU, as the transfer it is (the handout counts what x.to(layer_device)
    moves). Each counted two ways, both the handout's: every `.to()` of the forward, and the
    baton pass alone, `x.to(layer_device)` (the last move before each layer; a forward that
    also moves its input first, or its output back to cuda:0, counted 20 baton passes and was
    told 21). The first pair is every call, input on the first GPU."""
    every, baton = [], []
    for key in ("log", "log_from_host"):
        log = found.get(key)
        if log is None:
            continue
        host_counts = from_host and key == "log_from_host"
        every.append((sum(1 for e in log if e["kind"] == "to"), _copies(log, host_counts)))
        passes, last_move = [], None
        for event in log:
            if event["kind"] == "to":
                last_move = event
            elif event["kind"] == "layer" and last_move is not None:
                passes.append(last_move)
                last_move = None
        if any(event["kind"] == "layer" for event in log):   # else no layer was seen run
            baton.append((len(passes), _copies(passes, host_counts)))
    return list(dict.fromkeys(every + baton))


def _copies(events, host_counts: bool) -> int:
    """The events that copied data onto a GPU from another GPU (or from the host, where that
    move `host_counts`)."""
    return sum(1 for e in events if e.get("copied") and e.get("src") != e.get("dst")
               and str(e.get("dst")).startswith("cuda")
               and (str(e.get("src")).startswith("cuda") or host_counts))


def counts_said(counts: list[tuple[int, int]], gpus: int | None,
                depth: int = TRANSFER_DEPTH) -> str:
    """The counts the grader accepts, as the script would print them; `gpus` None where the
    sentence has named the configuration already."""
    if answers_hidden():   # the counts are Task 5's answers: not before grading
        return ("as the grader counts them: every .to() of the forward, or the baton pass "
                f"x.to(layer_device) alone ({HIDDEN})")
    said = [f"'to() calls: {calls}, real transfers: {copies}'" for calls, copies in counts]
    where = f"DEPTH={depth} on {gpus} GPUs, " if gpus is not None else ""
    return " or ".join(said) + (f" ({where}as the grader counted them: every .to() of the "
                                "forward, or the baton pass x.to(layer_device) alone, from the "
                                "input your main() gives it)")


def forward_counts(probe, gpus, from_host: bool = False, answers=None, qids: tuple[str, ...] = ()):
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    built(found, answers=answers, qids=qids)
    return observed_counts(found, from_host)


def counters_count(probe, gpus: int, position: int) -> bool:
    """Whether the model's own counter (the template's self.to_calls at position 0,
    self.transfers at 1), reset before the grader's forward pass, holds that pass's count
    after it."""
    found = record(probe, "transfers", gpus=gpus, depth=TRANSFER_DEPTH)
    counters = found.get("counters")
    return bool(counters) and counters[position] in {c[position] for c in observed_counts(found)}


def counts_printed_without_counting(probe, runs, script_specs, quantity: str) -> str | None:
    """Why the printed count of `quantity` does not come from counting, or None. Where the
    model's counter does not count (absent, renamed, or the count kept elsewhere), the script
    is run once more with fewer layers than GPUs: a count that follows the code prints what its
    forward pass makes there too; a constant or a formula of DEPTH and the GPU count does not.
    The .to() calls are DEPTH in any run of this model, so a printed DEPTH (or
    `len(model.layers)`) would follow it: the calls count there only with the transfers, as a
    pair that follows the code."""
    position = QUANTITIES.index(quantity)
    try:
        if all(counters_count(probe, g, position) for g in TASK4_GPUS):
            return None
        recount = record(probe, "transfers", gpus=RECOUNT_GPUS, depth=RECOUNT_DEPTH)
    except pytest.skip.Exception:
        return None   # a node too small for the second run: the printed counts decide alone
    if recount.get("error"):
        return None   # the layout fails there: Task 3's checks say so, not this one
    base = script_specs[RECOUNT_GPUS]
    spec = with_options(dict(base, sets=dict(base["sets"], DEPTH=RECOUNT_DEPTH), args=()),
                        runs.submission / "hw3" / "model_parallel.py")
    run = runs.script(**spec)
    counts = observed_counts(recount, starts_on_the_host(run))
    printed = printed_counts(run.stdout) or printed_counts(run.stderr)
    follows = (lambda p: p.pair in counts) if quantity == "to_calls" else (
        lambda p: p.transfers in {c[1] for c in counts})
    # Every pair it states there: one of them right among others (a pair for each transfer
    # count the node allows) is a guess that cannot miss, not a count.
    stated = statements(printed, set(counts))
    wrong = [p for p in stated if not follows(p)]
    if stated and not wrong:
        return None
    said = (wrong[0].quoted() if wrong
            else "it printed no counts" + (f" ({run.problem()})" if run.problem() else ""))
    counter = "self.to_calls" if quantity == "to_calls" else "self.transfers"
    return explain(
        f"the printed {QUANTITY_WORDS[quantity]} come from counting the forward pass: run again "
        f"with DEPTH={RECOUNT_DEPTH} on {RECOUNT_GPUS} GPUs (fewer layers than GPUs), the script "
        f"prints {counts_said(counts, None)}",
        f"{said}, and the model's counter {counter} (the template's) did not count the grader's "
        "forward pass either", look_counting(recount))


def starts_on_the_host(run) -> bool:
    """Whether the student's script hands its model's forward an input on the CPU: a copy
    from the CPU to a GPU inside a forward pass of its own run."""
    open_passes = 0   # a pass inside a module that wraps the model is inside it too
    for event in run.events:
        kind = event.get("event")
        if kind in ("forward", "forward_out") and event.get("thread", "MainThread") == "MainThread":
            open_passes = open_passes + 1 if kind == "forward" else max(0, open_passes - 1)
        elif open_passes and kind == "to" and event.get("copied") \
                and str(event.get("src")) == "cpu" and str(event.get("dst", "")).startswith("cuda"):
            return True
    return False


@pytest.mark.check("hw3.script_runs")
@pytest.mark.parametrize("gpus", TASK4_GPUS)
def test_the_script_runs_to_its_end(runs, script_specs, flag, gpus):
    """The handout's "Must be runnable", shown for no points (the course decides a penalty):
    Tasks 1-4 measure the model's class, so a script whose main() never ends lost only Task
    5's printed counts, and the hang was said inside Task 5 alone (an instructor's audit)."""
    run = runs.script(**script_specs[gpus])
    if run.ok:
        return
    if any(read_only_note(e.get("message", "")) for e in run.of("exception")):
        # The grader's own read-only folder stopped it: on the student's machine it runs.
        pytest.skip("not counted: it stopped writing beside the script, which only the grader "
                    "makes read-only; write to a path relative to the working folder instead")
    flag(f"hw3/model_parallel.py did not run to its end with {gpus} GPUs (the handout: 'Must be "
         "runnable'); any penalty is the course's: " + (run.problem() or "").splitlines()[0])
    raise AssertionError(explain(
        "hw3/model_parallel.py runs to its end (the handout: 'Must be runnable'), here with "
        f"DEPTH={TASK4_DEPTH} on {gpus} GPUs as Tasks 4 and 5 run it", run.problem(),
        "the stop named here; run it as the grader did: pdl-grade run --gpus "
        f"{gpus} --set DEPTH={TASK4_DEPTH} hw3/model_parallel.py"))


# A script that counts the forward's ops with torch.profiler (key_averages(), "aten::to").
_PROFILER_COUNTED = re.compile(r"\btorch\.profiler\b|\bfrom\s+torch\s+import\s+profiler\b|\bkey_averages\s*\(")


@pytest.mark.check("hw3.task5.counts_printed")
@pytest.mark.parametrize("gpus,quantity", [(g, q) for g in TASK4_GPUS for q in QUANTITIES])
def test_task5_printed_counts_are_the_forward_passes(probe, runs, script_specs, measured, gpus,
                                                     quantity):
    # Each printed count on its own, as the reported ones: a counter that counts every call as
    # a transfer still prints the .to() calls the handout asks to count (a TA's audit).
    run = runs.script(**script_specs[gpus])
    counts = forward_counts(probe, gpus, starts_on_the_host(run))
    look = look_counting(probed_record(probe))
    calls, copies = counts[0]
    measured["task5"] = {str(gpus): {"to_calls": calls, "transfers": copies}}
    # stdout, or stderr where `logging` writes by default (a logged line is printed too).
    printed = printed_counts(run.stdout) or printed_counts(run.stderr)
    if not run.ok and not printed:
        # Counts printed before a later stop (saving results beside the script, which is
        # read-only while graded) are printed all the same: only a stop before them costs.
        raise AssertionError(explain(f"hw3/model_parallel.py prints the counts of one forward "
                                     f"pass, {counts_said(counts, gpus)}", run.problem(),
                                     look))
    assert printed, explain(
        f"hw3/model_parallel.py prints the counts of one forward pass, {counts_said(counts, gpus)}"
        " (in other words too, on one line)",
        "no line 'to() calls: ..., real transfers: ...' in its output (counted by hand, the "
        "four numbers you report are what is graded)", look)
    stated = statements(printed, set(counts))
    assert len(stated) <= gpus, explain(
        f"hw3/model_parallel.py prints the counts of one forward pass, {counts_said(counts, gpus)}"
        f": one pair for each configuration it runs (at most {gpus} on {gpus} GPUs)",
        f"it printed {len(stated)} different pairs of counts (from '{stated[0].line}' to "
        f"'{stated[-1].line}'), more than the configurations it could run: which is the count?",
        look)
    position = QUANTITIES.index(quantity)
    allowed = {c[position] for c in counts}
    said = next((p for p in printed if p.pair in counts), None) or next(
        (p for p in printed if p.pair[position] in allowed), printed[0])
    if said.pair[position] not in allowed and _PROFILER_COUNTED.search(script_text(runs.submission, SCRIPT)):
        pytest.skip(f"{said.quoted()}, counted with torch.profiler: on the grader's virtual GPUs the "
                    "profiler records the emulation's own copies, not one aten::to per .to() call as on "
                    "CUDA, so these counts are not compared (adv55 H); the four counts you report are "
                    "graded against the grader's own count")
    assert said.pair[position] in allowed, explain(
        f"the {QUANTITY_WORDS[quantity]} your script prints are the ones its forward pass makes: "
        f"{counts_said(counts, gpus)}", said.quoted(), look)
    not_counted = counts_printed_without_counting(probe, runs, script_specs, quantity)
    assert not_counted is None, not_counted


@pytest.mark.check("hw3.task5.counts_reported")
@pytest.mark.parametrize("gpus,quantity", [(g, q) for g in TASK4_GPUS
                                           for q in ("to_calls", "transfers")])
def test_task5_reported_counts_match(probe, runs, script_specs, answers, reported_values, flag,
                                    gpus, quantity):
    qid = f"task5.{quantity}_{gpus}gpus"
    counts = forward_counts(probe, gpus, starts_on_the_host(runs.script(**script_specs[gpus])),
                            answers, (qid,))
    position = 0 if quantity == "to_calls" else 1
    allowed = {c[position] for c in counts}
    truth = counts[0][position]
    value = reported(answers, qid)
    reported_values["task5"] = {str(gpus): {quantity: value}}
    what = ".to() calls" if quantity == "to_calls" else "GPU-to-GPU transfers"
    # The .to() calls are DEPTH in any layout; the transfers are the layout's own.
    if quantity == "transfers":
        not_the_task = not_task3s_model(layers_in_forward(probe, gpus), gpus)
        assert not_the_task is None, not_the_task
    if value not in allowed:
        others = sorted(allowed - {truth})
        observed = (f"makes {truth} {what} in one forward pass with DEPTH={TRANSFER_DEPTH} on "
                    f"{gpus} GPUs" + (f" (or {' or '.join(map(str, others))}: the baton pass "
                                      "x.to(layer_device) alone, or from the input your main() "
                                      "gives it)" if others else ""))
        flag(f"{qid}: reported {answer_shown(value)}, but the code {observed}")
        raise AssertionError(disagrees(answers, qid, str(truth), observed, value))


@pytest.mark.check("hw3.task5.growth_answer")
def test_task5_answer_does_communication_grow_with_gpus(probe, answers, measured,
                                                        reported_values):
    copies = {g: forward_counts(probe, g, answers=answers,
                                qids=("task5.transfers_grow_with_gpus",))[0][1] for g in TASK4_GPUS}
    for gpus in TASK4_GPUS:
        not_the_task = not_task3s_model(layers_in_forward(probe, gpus), gpus)
        assert not_the_task is None, not_the_task
    check_fact(answers, "task5.transfers_grow_with_gpus", frozenset({copies[5] > copies[2]}),
               f"makes {copies[2]} GPU-to-GPU transfer(s) per forward pass on 2 GPUs and "
               f"{copies[5]} on 5", measured, reported_values)
