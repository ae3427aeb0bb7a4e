"""The STEPS cap keeps the steps a training loop takes past a warm-up it compares its counter
with (adv43 F6). An honest P6 script with `--steps` default 300 timed only `if step >= warmup:`
(warmup = 20) and printed `sum(times) / len(times)`: lowered to the template's 10 steps it
timed none, stopped with ZeroDivisionError, and was told its code crashed (9.5 of 12 for the
reference's 9.75). Now a threshold T of the counter (a number, a name bound once to one, an
expression of those) keeps T + the template's steps (30), never more than the student wrote;
a modulo (`step % 50 == 0`) is no threshold; a comparison the grader cannot read (`step >=
args.warmup`) leaves the script as written. The same holds for a STEPS constant
(steps_limit), which had set STEPS = 10 under any warm-up. grader/common/loop_thresholds.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical5 as p5
from grader.harness.observation import Observation
from grader.vgpu.script_edits import apply_edits

P6 = "practical6/practical6_ddp.py"
P10 = "practical10/sample.py"
# A stand-in for torch's optimizer; the script prints its optimizer steps and its mean time.
HEAD = ("import argparse\nclass Optimizer:\n    taken = 0\n    def step(self):\n"
        "        Optimizer.taken += 1\noptimizer = Optimizer()\n")
PARSER = ("parser = argparse.ArgumentParser()\n"
          "parser.add_argument('--steps', type=int, default=300)\nargs = parser.parse_args()\n")
MEAN = ("print('TAKEN', Optimizer.taken)", "print('MEAN', sum(times) / len(times))")


def in_main(*lines: str) -> str:
    return "def main():\n" + "".join(f"    {line}\n" for line in lines) + "main()\n"


def timed(*lines: str, bound: str = "args.steps") -> list[str]:
    """A training loop of `bound` steps that times the steps `lines` let through."""
    return ["times = []", f"for step in range({bound}):", "    optimizer.step()",
            *[f"    {line}" for line in lines]]


# (the script's text after HEAD, the default P6's run lowers it to: None, run as written).
COMMAND_LINE = {
    "a warm-up name in main": (PARSER + in_main(
        "warmup = 20", *timed("if step >= warmup:", "    times.append(1.0)"), *MEAN), 30),
    "skipped with continue": (PARSER + in_main(
        *timed("if step < 20:", "    continue", "times.append(1.0)"), *MEAN), 30),
    "a top-level constant, an expression": (PARSER + "WARMUP = 2 * 10\n" + in_main(
        *timed("if step + 1 > WARMUP:", "    times.append(1.0)"), *MEAN), 30),
    "strictly after": (PARSER + in_main(
        *timed("if step > 20:", "    times.append(1.0)"), *MEAN), 31),
    "in a function the counter is handed to": (
        PARSER + "def record(times, at, seconds):\n    if at >= 20:\n"
        "        times.append(seconds)\n" + in_main(*timed("record(times, step, 1.0)"), *MEAN),
        30),
    "a modulo that logs": (PARSER + in_main(
        *timed("times.append(1.0)", "if step % 50 == 0:", "    print(step)"), *MEAN), 10),
    "a power of literals that always holds": (PARSER + in_main(
        *timed("if step < 10 ** 7:", "    times.append(1.0)"), *MEAN), 10),
    "the first step": (PARSER + in_main(
        *timed("if step == 0:", "    print('first')", "times.append(1.0)"), *MEAN), 10),
    "a modulo late in the period": (PARSER + in_main(
        *timed("if step % 50 == 49:", "    times.append(1.0)"), *MEAN), 50),
    "its own counter in another function": (
        PARSER + "def layers():\n    for step in range(90):\n        if step == 80:\n"
        "            return step\n" + in_main(*timed("times.append(1.0)"), *MEAN), 10),
    "in a function the bound is handed to": (
        PARSER + "def train(steps):\n    times = []\n    for step in range(steps):\n"
        "        optimizer.step()\n        if step < 20:\n            continue\n"
        "        times.append(1.0)\n    print('MEAN', sum(times) / len(times))\n"
        "train(args.steps)\nprint('TAKEN', Optimizer.taken)\n", 30),
    "a loader's enumerate that breaks": (PARSER + in_main(
        "times = []", "for step, batch in enumerate(iter(int, 1)):", "    optimizer.step()",
        "    if step >= 20:", "        times.append(1.0)", "    if step + 1 == args.steps:",
        "        break", *MEAN), 30),
    # Run as written: the threshold is not read, or keeping it leaves nothing to lower.
    "a warm-up of the command line": (
        PARSER.replace("args =", "parser.add_argument('--warmup', type=int, default=20)\nargs =")
        + in_main(*timed("if step >= args.warmup:", "    times.append(1.0)"), *MEAN), None),
    "a warm-up bound twice": (PARSER + in_main(
        "warmup = 20", "if __name__ != '__main__':", "    warmup = 0",
        *timed("if step >= warmup:", "    times.append(1.0)"), *MEAN), None),
    "near the end": (PARSER + in_main(
        *timed("if step >= 295:", "    times.append(1.0)"), *MEAN), None),
}


def handed_in(tmp_path, script: str, text: str):
    path = tmp_path / script
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return tmp_path


def run_script(text: str, tmp_path) -> tuple[int | None, str]:
    """(the optimizer steps taken, stderr) of the script run as the graded run starts it."""
    path = tmp_path / "run.py"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, cwd=tmp_path, timeout=60)
    taken = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("TAKEN ")]
    return (int(taken[-1]) if done.returncode == 0 and taken else None), done.stderr


@pytest.mark.parametrize("form", COMMAND_LINE)
def test_a_default_is_lowered_no_further_than_past_its_warm_up(tmp_path, form):
    text, lowered = COMMAND_LINE[form]
    submission = handed_in(tmp_path, P6, HEAD + text)
    expected = () if lowered is None else (("parser.add_argument('--steps', type=int, "
                                            "default=300)", "parser.add_argument('--steps', "
                                            f"type=int, default={lowered})"),)
    assert pm.steps_edits(submission, P6) == expected, (
        f"expected the P6 run of {form} to lower --steps' default to {lowered} (None: run as "
        f"written); observed edits {pm.steps_edits(submission, P6)} "
        "(practical_measures.steps_edits, grader/common/loop_thresholds.py)")


@pytest.mark.parametrize("form", COMMAND_LINE)
def test_the_lowered_run_finishes_as_the_students_does(tmp_path, form):
    """Run as written and as the grader's edit leaves it: both end without an error (the
    warm-up's division by no timed step was the false crash), the edit never raises the run."""
    text = HEAD + COMMAND_LINE[form][0]
    edits = pm.steps_edits(handed_in(tmp_path, P6, text), P6)
    written, written_errors = run_script(text, tmp_path)
    edited, errors = run_script(apply_edits(text, "run.py", list(edits)), tmp_path)
    assert written == 300, f"expected 300 steps as written; observed {written}: {written_errors}"
    assert edited is not None and edited <= written, (
        f"expected the edited run of {form} to end after at most {written} steps; observed "
        f"{edited} steps, stderr {errors[-300:]!r} (edits {edits})")


def test_a_warm_up_is_kept_whichever_loop_of_the_value_is_read_first(tmp_path):
    """A timed loop of `args.steps`, then `train(args.steps)`: the timed loop, read before the
    call hands the value on, had been left out of the warm-ups kept (lowered to 10)."""
    text = (HEAD + PARSER + "\n".join(timed("if step >= 20:", "    times.append(1.0)")) + "\n"
            "def train(steps):\n    for step in range(steps):\n        optimizer.step()\n"
            "train(args.steps)\n" + "\n".join(MEAN) + "\n")
    edits = pm.steps_edits(handed_in(tmp_path, P6, text), P6)
    assert edits and edits[0][1].endswith("default=30)"), (
        f"expected --steps' default lowered to 20 + 10 = 30; observed {edits} "
        "(loop_bound._Script.loop_default reads every loop once the handed values are known)")
    assert run_script(apply_edits(text, "run.py", list(edits)), tmp_path)[0] == 60


def test_practical10_keeps_its_three_steps_past_a_warm_up(tmp_path):
    text = HEAD + COMMAND_LINE["a warm-up name in main"][0].replace("warmup = 20", "warmup = 5")
    edits = pm.steps_edits(handed_in(tmp_path, P10, text), P10)
    assert edits and edits[0][1].endswith("default=8)"), (
        f"expected P10's default lowered to 5 + 3 = 8; observed {edits}")


def test_a_run_lowered_past_the_warm_up_trained_to_the_end(tmp_path):
    """P5's trained_to_the_end counts the steps the run was lowered to: 30, not the template's
    10, so a run stopped after 10 of its 30 steps did not train to the end."""
    script = p5.DP
    submission = handed_in(tmp_path, script, HEAD + COMMAND_LINE["a warm-up name in main"][0])
    edits = list(pm.steps_edits(submission, script))

    def stopped_after(steps):
        return Observation(script=script, gpus=2, returncode=1, edits=edits,
                           events=[{"event": "step", "rank": 0, "t": float(k)}
                                   for k in range(steps)])
    assert pm.loop_steps_run(stopped_after(30), submission, script) == 30
    assert p5.trained_to_the_end(stopped_after(30), submission, script), (
        "expected a run that took its 30 lowered steps, then stopped, to have trained to the end")
    assert not p5.trained_to_the_end(stopped_after(10), submission, script), (
        "expected a run stopped after 10 of its 30 steps not to have trained to the end "
        "(test_practical5.trained_to_the_end)")
    assert pm.steps_as_written(stopped_after(30), submission, script) == 300


# The STEPS constant cap (steps_limit): before, STEPS = 10 under any warm-up.
@pytest.mark.parametrize("text, sets", [
    ("STEPS = 300\nfor step in range(STEPS):\n    optimizer.step()\n    if step >= 20:\n"
     "        pass\n", {"STEPS": 30}),
    ("STEPS = 300\nWARMUP = 20\nstep = 0\nwhile step < STEPS:\n    optimizer.step()\n"
     "    if step < WARMUP:\n        step += 1\n        continue\n    step += 1\n", {"STEPS": 30}),
    ("STEPS = 300\nfor step in range(STEPS):\n    optimizer.step()\n    if step % 50 == 0:\n"
     "        print(step)\n", {"STEPS": 10}),
    ("STEPS = 300\nfor step in range(STEPS):\n    optimizer.step()\n    if step == STEPS - 1:\n"
     "        print('last')\n", {"STEPS": 10}),                    # the bound moves with STEPS
    ("STEPS = 300\nWARMUP = 20\nfor step in range(WARMUP + STEPS):\n    optimizer.step()\n"
     "    if step >= WARMUP:\n        pass\n", {"STEPS": 10}),    # the warm-up on top of STEPS
    ("STEPS = 25\nfor step in range(STEPS):\n    optimizer.step()\n    if step >= 20:\n"
     "        pass\n", {}),                                       # 30 would be more than written
    ("import os\nSTEPS = 300\nWARMUP = int(os.environ.get('W', 20))\n"
     "for step in range(STEPS):\n    optimizer.step()\n    if step >= WARMUP:\n        pass\n",
     {}),                                                         # the warm-up is not read
    ("STEPS = 300\nfor step in range(STEPS // WORLD):\n    optimizer.step()\n", {"STEPS": 10}),
    ("STEPS = 300\nfor step, (x, y) in enumerate(loader):\n    optimizer.step()\n"
     "    if step >= 20:\n        pass\n    if step + 1 == STEPS:\n        break\n",
     {"STEPS": 30}),                                  # a loader's loop, which had been set 10
])
def test_a_steps_constant_is_lowered_no_further_than_past_its_warm_up(tmp_path, text, sets):
    submission = handed_in(tmp_path, P6, HEAD + text)
    assert pm.steps_limit(submission, P6) == sets, (
        f"expected the P6 run of {text!r} to set {sets}; observed "
        f"{pm.steps_limit(submission, P6)} (practical_measures.steps_limit, "
        "loop_bound.constant_fewest)")
