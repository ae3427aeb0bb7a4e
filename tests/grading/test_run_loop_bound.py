"""The STEPS cap of the practicals' runs (P5 and P6 10, P10 3) reaches a script with no STEPS
constant whose training loop counts a command-line value: `parser.add_argument("--steps",
type=int, default=300)` read as `for step in range(args.steps)`, `--iters`, `--num-steps` in a
`while`, an `itertools.count()` loop or a data loader's `enumerate` that breaks at it (`if step
+ 1 == args.steps: break`), the value handed to a function (`train(args.steps)` for `def
train(steps)`), `int(sys.argv[1]) if len(sys.argv) > 1 else 300`, click's
`@click.option("--steps", default=300)`. Such a script had run its 300 steps
(P10 5.1 of 12, timed out). The graded run starts the script with no arguments, so the run's
edit lowers the default's text and nothing else (grader/common/loop_bound.py,
practical_measures.steps_edits); where the value is read any other way the script runs as
written. test_the_edit_never_raises_a_run runs every form, as written and edited."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical5 as p5
from grader.checks import test_practical6 as p6
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation
from grader.vgpu.script_edits import apply_edits

SCRIPTS = {"practical5/practical5_dp.py": 10, "practical5/practical5_single.py": 10,
           "practical6/practical6_ddp.py": 10, p10.SCRIPT: 3}

# A stand-in for torch's optimizer: the script prints the optimizer steps its run took.
HEAD = ("import argparse, itertools, sys\n"
        "class Optimizer:\n    taken = 0\n    def step(self):\n        Optimizer.taken += 1\n"
        "optimizer = Optimizer()\n")
TAIL = "print('TAKEN', Optimizer.taken)\n"
PARSER = "parser = argparse.ArgumentParser()\n"
STEPS_300 = "parser.add_argument('--steps', type=int, default=300)\n"


LOADER = "args = parser.parse_args()\nloader = itertools.cycle([(1, 2)])\n"


def in_main(*lines: str) -> str:
    return "def main():\n" + "".join(f"    {line}\n" for line in lines) + "main()\n"


# 300 steps in the student's own run, lowered in the grader's.
LOWERED = {
    "argparse in main": in_main("parser = argparse.ArgumentParser()",
                                "parser.add_argument('--steps', type=int, default=300)",
                                "args = parser.parse_args()",
                                "for step in range(args.steps):", "    optimizer.step()"),
    "argparse at the top, --iters": PARSER + "parser.add_argument('--iters', type=int, "
                                    "default=300, help='iterations')\nargs = parser.parse_args()\n"
                                    "for i in range(0, args.iters):\n    optimizer.step()\n",
    "--num-steps in a while": PARSER + "parser.add_argument('--num-steps', default=300)\n"
                              + in_main("args, _ = parser.parse_known_args()", "step = 0",
                                        "while step < args.num_steps:", "    optimizer.step()",
                                        "    step += 1"),
    "itertools.count breaks at it": PARSER + STEPS_300 + "args = parser.parse_args()\n"
                                    "for step in itertools.count():\n"
                                    "    if step == args.steps:\n        break\n"
                                    "    optimizer.step()\n",
    "while True breaks at it": PARSER + STEPS_300 + "args = parser.parse_args()\nstep = 0\n"
                               "while True:\n    if step >= args.steps:\n        break\n"
                               "    optimizer.step()\n    step += 1\n",
    "a name first": PARSER + STEPS_300 + in_main(
        "args = parser.parse_args()", "steps = args.steps", "print(f'{steps} steps')",
        "for step, _ in enumerate(range(steps)):", "    optimizer.step()",
        "    print(f'step {step} of {args.steps}')"),
    "a string default": PARSER + "parser.add_argument('--steps', type=int, default='300')\n"
                        "args = parser.parse_args()\nfor step in range(args.steps):\n"
                        "    optimizer.step()\n",
    "over lines, beside non-ASCII": "\x0c\n# Schritte: é\n" + PARSER + "parser.add_argument(\n"
                                    "    '--steps',  # Anzahl der Schritte ü\n    type=int,\n"
                                    "    default='300')\nargs = parser.parse_args()\n"
                                    "for step in range(args.steps):\n    optimizer.step()\n",
    "a function of the file trains": PARSER + STEPS_300 + "def train_step():\n"
                                     "    optimizer.step()\nargs = parser.parse_args()\n"
                                     "for step in range(args.steps):\n    train_step()\n",
    "sys.argv or a default": "for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else "
                             "300):\n    optimizer.step()\n",
    "sys.argv mirrored, named": in_main("steps = 300 if len(sys.argv) < 2 else int(sys.argv[1])",
                                        "for step in range(steps):", "    optimizer.step()"),
    "a parameter": PARSER + STEPS_300 + "def train(steps):\n    for step in range(steps):\n"
                   "        optimizer.step()\ntrain(parser.parse_args().steps)\n",
    "a parameter by keyword, from main": "def train(model, steps):\n"
                                         "    for step in range(steps):\n        model.step()\n"
                                         + in_main("parser = argparse.ArgumentParser()",
                                                   "parser.add_argument('--steps', type=int, "
                                                   "default=300)", "args = parser.parse_args()",
                                                   "print(f'{args.steps} steps')",
                                                   "train(optimizer, steps=args.steps)"),
    "a loader's enumerate breaks at it": PARSER + STEPS_300 + LOADER
                                         + "for step, (x, y) in enumerate(loader):\n"
                                         "    optimizer.step()\n"
                                         "    if step + 1 == args.steps:\n        break\n",
    "a loader's enumerate breaks first": PARSER + STEPS_300 + LOADER
                                         + "for step, batch in enumerate(loader, 0):\n"
                                         "    if step >= args.steps:\n        break\n"
                                         "    optimizer.step()\n",
    "click": "import click\n@click.command()\n@click.option('--steps', default=300, "
             "help='steps')\ndef main(steps):\n    for step in range(steps):\n"
             "        optimizer.step()\n    print('TAKEN', Optimizer.taken)\n"
             "main(standalone_mode=False)\n",
}
# Run as written: short already, or the value read some other way than counted by the loop.
AS_WRITTEN = {
    "a short default": PARSER + "parser.add_argument('--steps', type=int, default=2)\n"
                       "args = parser.parse_args()\nfor step in range(args.steps):\n"
                       "    optimizer.step()\n",
    "epochs times steps": PARSER + "parser.add_argument('--epochs', type=int, default=30)\n"
                          "args = parser.parse_args()\nfor step in range(args.epochs * 10):\n"
                          "    optimizer.step()\n",
    "arithmetic on it": PARSER + STEPS_300 + "args = parser.parse_args()\n"
                        "for step in range(1000 - args.steps):\n    optimizer.step()\n",
    "another loop of it": PARSER + STEPS_300 + "args = parser.parse_args()\n"
                          "layers = [i for i in range(args.steps)]\n"
                          "for step in range(args.steps):\n    optimizer.step()\n",
    "a loop that does not train": PARSER + STEPS_300 + "args = parser.parse_args()\n"
                                  "for step in range(args.steps):\n    pass\n"
                                  "for step in range(5):\n    optimizer.step()\n",
    "set_defaults": PARSER + STEPS_300 + "parser.set_defaults(steps=2)\n"
                    "args = parser.parse_args()\nfor step in range(args.steps):\n"
                    "    optimizer.step()\n",
    "set again": PARSER + STEPS_300 + "args = parser.parse_args()\nargs.steps = 2\n"
                 "for step in range(args.steps):\n    optimizer.step()\n",
    "vars": PARSER + STEPS_300 + "args = parser.parse_args()\nsteps = vars(args)['steps'] // 100\n"
            "for step in range(args.steps):\n    optimizer.step()\n",
    "own type": PARSER + "parser.add_argument('--steps', type=lambda s: int(s) // 100, "
                "default='300')\nargs = parser.parse_args()\nfor step in range(args.steps):\n"
                "    optimizer.step()\n",
    "a counter from elsewhere": PARSER + STEPS_300 + "args = parser.parse_args()\nstep = 295\n"
                                "while step < args.steps:\n    optimizer.step()\n    step += 1\n",
    "count from elsewhere": PARSER + STEPS_300 + "args = parser.parse_args()\n"
                            "for step in itertools.count(295):\n"
                            "    if step == args.steps:\n        break\n    optimizer.step()\n",
    "two values": PARSER + "parser.add_argument('--epochs', type=int, default=30)\n" + STEPS_300
                  + "args = parser.parse_args()\nfor epoch in range(args.epochs):\n"
                  "    for step in range(args.steps):\n        optimizer.step()\n",
    "sys.argv written": "sys.argv.append('2')\nfor step in range(int(sys.argv[1]) if "
                        "len(sys.argv) > 1 else 300):\n    optimizer.step()\n",
    "sys.argv given": "sys.argv = ['x', '2']\nfor step in range(int(sys.argv[1]) if "
                      "len(sys.argv) > 1 else 300):\n    optimizer.step()\n",
    "the same text in a comment": "# was: " + STEPS_300 + PARSER + STEPS_300
                                  + "args = parser.parse_args()\n"
                                  "for step in range(args.steps):\n    optimizer.step()\n",
    "two arguments of it": PARSER + STEPS_300 + "parser.add_argument('-s', dest='steps', "
                           "type=int, default=2)\nargs = parser.parse_args()\n"
                           "for step in range(args.steps):\n    optimizer.step()\n",
    "a STEPS constant": "STEPS = 2\nfor step in range(STEPS):\n    optimizer.step()\n",
    # Handed to a function, but the value also sizes the data: lowering it changes the run.
    "a parameter that sizes the data": PARSER + STEPS_300 + "def train(steps):\n"
                                       "    data = [0] * steps\n    for step in range(steps):\n"
                                       "        optimizer.step()\ntrain(parser.parse_args().steps)\n",
    "a function called twice": PARSER + STEPS_300 + "def train(steps):\n"
                               "    for step in range(steps):\n        optimizer.step()\n"
                               "args = parser.parse_args()\ntrain(args.steps)\ntrain(2)\n",
    "a function handed on": PARSER + STEPS_300 + "def train(steps):\n"
                            "    for step in range(steps):\n        optimizer.step()\n"
                            "runner = train\nrunner(parser.parse_args().steps)\n",
    "a parameter given a default": PARSER + STEPS_300 + "def train(steps=5):\n"
                                   "    for step in range(steps):\n        optimizer.step()\n"
                                   "args = parser.parse_args()\ntrain()\nprint(args.steps)\n",
    "enumerate from elsewhere": PARSER + STEPS_300 + LOADER
                                + "for step, (x, y) in enumerate(loader, 295):\n"
                                "    optimizer.step()\n    if step == args.steps:\n        break\n",
    "the loader's counter bound again": PARSER + STEPS_300 + LOADER
                                        + "for step, (x, y) in enumerate(loader):\n"
                                        "    step = step * 2\n    optimizer.step()\n"
                                        "    if step >= args.steps:\n        break\n",
    "a break further on": PARSER + STEPS_300 + LOADER
                          + "for step, (x, y) in enumerate(loader):\n    optimizer.step()\n"
                          "    if step + 5 == args.steps:\n        break\n",
}


def handed_in(tmp_path, script: str, text: str):
    path = tmp_path / script
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return tmp_path


def steps_taken(text: str, tmp_path) -> int | None:
    """The optimizer steps the script takes run as the graded run starts it: no arguments."""
    path = tmp_path / "run.py"
    path.write_text(text if "TAKEN" in text else text + TAIL, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, cwd=tmp_path, timeout=60)
    taken = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("TAKEN ")]
    return int(taken[-1]) if done.returncode == 0 and taken else None


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("form", LOWERED)
def test_a_loop_of_a_long_default_is_lowered_to_the_templates_steps(tmp_path, script, form):
    text = HEAD + LOWERED[form]
    submission = handed_in(tmp_path, script, text)
    edits = pm.steps_edits(submission, script)
    assert len(edits) == 1 and edits[0][1].count(str(SCRIPTS[script])), (
        f"expected one edit setting the default of {form} to {SCRIPTS[script]} in {script}; "
        f"observed {edits} (practical_measures.steps_edits, grader/common/loop_bound.py)")
    assert pm.steps_limit(submission, script) == {}, "expected no STEPS set: the file has none"
    assert (submission / script).read_text(encoding="utf-8") == text, "the file was changed"


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("form", AS_WRITTEN)
def test_a_short_default_or_one_read_otherwise_runs_as_written(tmp_path, script, form):
    submission = handed_in(tmp_path, script, HEAD + AS_WRITTEN[form])
    assert pm.steps_edits(submission, script) == (), (
        f"expected no edit of {form} in {script}; observed "
        f"{pm.steps_edits(submission, script)} (grader/common/loop_bound.py)")


@pytest.mark.parametrize("form", {**LOWERED, **AS_WRITTEN})
def test_the_edit_never_raises_a_run(tmp_path, form):
    """Every form, run as written and as the grader's edit leaves it: the edited run takes no
    more steps, and a lowered one the template's exactly."""
    text = HEAD + {**LOWERED, **AS_WRITTEN}[form]
    edits = pm.steps_edits(handed_in(tmp_path, p10.SCRIPT, text), p10.SCRIPT)
    written = steps_taken(text, tmp_path)
    edited = steps_taken(apply_edits(text, "run.py", list(edits)), tmp_path)
    assert edited is not None and written is not None and edited <= written, (
        f"expected the edited run of {form} to take at most its own {written} steps; observed "
        f"{edited} (edits {edits})")
    if form in LOWERED:
        assert (written, edited) == (300, 3), (
            f"expected {form} to take 300 steps as written and 3 edited; observed "
            f"{written} and {edited} (edits {edits})")


def test_the_students_own_table_is_compared_with_the_defaults_steps(tmp_path):
    """The student timed the 300 steps of `--steps` left at its default, not the grader's 10."""
    script = p5.DP
    submission = handed_in(tmp_path, script, HEAD + LOWERED["argparse in main"])
    lowered = Observation(script=script, gpus=2, returncode=1,
                          edits=list(pm.steps_edits(submission, script)),
                          events=[{"event": "step", "rank": 0, "t": float(k)} for k in range(10)])
    assert pm.steps_as_written(lowered, submission, script) == 300, (
        "expected the default's 300 steps for the student's table; observed "
        f"{pm.steps_as_written(lowered, submission, script)} (practical_measures.steps_as_written)")
    assert p5.trained_to_the_end(lowered, submission, script), (
        "expected a run that took the 10 steps it was lowered to, then stopped with an error, to "
        "count as trained to the end (test_practical5.trained_to_the_end)")
    as_written = Observation(script=script, gpus=2, returncode=0, events=lowered.events)
    assert pm.steps_as_written(as_written, submission, script) == 10, (
        "expected a run without the edit to count the steps it took")


def test_every_practicals_run_carries_the_edit(tmp_path):
    """P5's two scripts, P6's DDP and DataParallel runs and every P10 run (beside the layout's
    edits) are lowered alike, so runs that must agree share one."""
    for script in SCRIPTS:
        handed_in(tmp_path, script, HEAD + LOWERED["argparse in main"])
    runs = SimpleNamespace(submission=tmp_path)
    specs = {"P5 dp": p5.HandoutRuns(runs, tmp_path).spec(p5.DP, 2),
             "P5 single": p5.HandoutRuns(runs, tmp_path).spec(p5.SINGLE, 1),
             "P6 ddp": p6.ddp_spec(runs, 2),
             "P10": p10.HandoutRuns(runs, tmp_path).spec(MICRO_BATCHES=8)}
    for name, spec in specs.items():
        assert pm.steps_edits(tmp_path, spec["script"])[0] in spec["edits"], (
            f"expected the {name} run to lower --steps' default; observed edits {spec['edits']}")


def test_the_reference_scripts_run_as_written():
    reference = Path(__file__).resolve().parents[2] / "reference"
    for script in SCRIPTS:
        assert pm.steps_edits(reference, script) == (), (
            f"expected no edit of the reference {script}; observed "
            f"{pm.steps_edits(reference, script)}")
