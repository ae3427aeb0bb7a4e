"""The STEPS cap of the practicals' runs (a1c6265: at most the template's STEPS, P5 and P6 10,
P10 3) reaches a STEPS written as an expression the grader can work out without running the
script: `10 * 30`, a product of earlier constants, `int(1e3)`, `int(os.environ.get("STEPS",
300))` (a graded run's environment holds no variable of the script's own, so the default is
what runs). Such a script had run its 300 steps as written. A value the grader cannot work out
(a call of the script's own, a STEPS changed again by `*=`) is still left alone: lowering it
could be raising it. The file itself is never changed.

adv40 H3: the graded runs start the script with no arguments (the handouts' `python SCRIPT`,
`torchrun --nproc_per_node=N SCRIPT`), so `int(sys.argv[1]) if len(sys.argv) > 1 else 300`,
`... if "STEPS" in os.environ else 300` and argparse's `default=300` are 300 there (P10 5.1 of 12
before, timed out). adv40 F6: a form the grader read as 300 that the run does not (an
environment variable the script sets first, a `def max` or `from numpy import int8 as int` of its
own) had its run RAISED to the template's steps: such forms are unknown, and
test_the_cap_never_raises_a_run runs every form here to check the cap against the run."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation
from grader.vgpu.run_on_node import rewrite_where_assigned

SCRIPTS = {"practical5/practical5_dp.py": 10, "practical5/practical5_single.py": 10,
           "practical6/practical6_ddp.py": 10, p10.SCRIPT: 3}

# Written the ways students write a longer run: every one is 300 steps in the grader's run.
LONG = {
    "product": "STEPS = 10 * 30\n",
    "earlier constants": "EPOCHS = 3\nSTEPS_PER_EPOCH = 100\nSTEPS = EPOCHS * STEPS_PER_EPOCH\n",
    "environment default": "import os\nSTEPS = int(os.environ.get('STEPS', 300))\n",
    "getenv string default": "import os\nSTEPS = int(os.getenv('NUM_STEPS', '300'))\n",
    "getenv or": "import os\nSTEPS = int(os.getenv('STEPS') or 300)\n",
    "float literal": "STEPS = int(3e2)\n",
    "annotated": "STEPS: int = 3 * 100\n",
    "tuple": "LR, STEPS = 0.01, 30 * 10\n",
    # adv40 H3: what the run gets with no arguments and no variable of the script's own.
    "command line or default": "import sys\nSTEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300\n",
    "command line slice": "import sys\nSTEPS = int(sys.argv[1]) if sys.argv[1:] else 300\n",
    "argv imported": "from sys import argv\nSTEPS = int(argv[1]) if len(argv) >= 2 else 300\n",
    "a flag not given": "import sys\nSTEPS = 2 if '--quick' in sys.argv else 300\n",
    "environment test": "import os\nSTEPS = int(os.environ['STEPS']) if 'STEPS' in os.environ "
                        "else 300\n",
    "environment not in": "import os\nSTEPS = 300 if 'STEPS' not in os.environ "
                          "else int(os.environ['STEPS'])\n",
    "environ imported": "from os import environ\nSTEPS = int(environ.get('MY_STEPS', 300))\n",
    "another variable set": "import os\nos.environ['MASTER_ADDR'] = 'localhost'\n"
                            "STEPS = int(os.environ.get('STEPS', 300))\n",
    "argparse known args": "import argparse\nparser = argparse.ArgumentParser()\n"
                           "parser.add_argument('--steps', type=int, default=300)\n"
                           "STEPS = parser.parse_known_args()[0].steps\n",
    "argparse namespace": "import argparse\nparser = argparse.ArgumentParser(description='P10')\n"
                          "parser.add_argument('--lr', type=float, default=0.1)\n"
                          "parser.add_argument('--num-steps', type=int, default='300', "
                          "help=f'steps ({300})')\n"
                          "args = parser.parse_args()\nprint(args.lr)\nSTEPS = args.num_steps\n",
    "argparse positional": "import argparse, sys\nparser = argparse.ArgumentParser()\n"
                           "parser.add_argument('steps', type=int, nargs='?', default=300)\n"
                           "STEPS = parser.parse_args(sys.argv[1:]).steps\n",
}
# Left as written: short already (never raised), or not worked out without running the script.
AS_WRITTEN = {
    "short product": "STEPS = 1 * 2\n",
    "short environment default": "import os\nSTEPS = int(os.environ.get('STEPS', 2))\n",
    "a variable the run sets": "import os\nSTEPS = int(os.environ.get('WORLD_SIZE', 300))\n",
    "command line required": "import sys\nSTEPS = int(sys.argv[1])\n",
    "environment required": "import os\nSTEPS = int(os.environ['STEPS'])\n",
    "own function": "def steps():\n    return 300\nSTEPS = steps()\n",
    "changed again": "STEPS = 1\nSTEPS *= 300\n",
    "changed in a block": "import sys\nEPOCHS = 3\nif '--quick' in sys.argv:\n    EPOCHS = 0\n"
                          "STEPS = EPOCHS * 100\n",
    "huge power": "STEPS = 2 ** 10 ** 10\n",
    "a variable the run may have": "import os\nSTEPS = 300 if 'RANK' not in os.environ else 2\n",
    # Names the grader cannot see: `max` may be the module's (numpy's, torch's).
    "star import": "from math import *\nSTEPS = max(10, 300)\n",
}
# adv40 F6: read as 300 before, while the run takes 1 or 2 steps (its cap raised it to the
# template's); and argparse forms whose default is not what the run gets.
NOT_AS_READ = {
    "environment set first": "import os\nos.environ['MY_STEPS'] = '1'\n"
                             "STEPS = int(os.environ.get('MY_STEPS', 300))\n",
    "environment updated": "import os\nos.environ.update({'MY_STEPS': '1'})\n"
                           "STEPS = int(os.environ.get('MY_STEPS', 300))\n",
    "environment setdefault": "import os\nos.environ.setdefault('MY_STEPS', '1')\n"
                              "STEPS = int(os.getenv('MY_STEPS', 300))\n",
    "environment set in a function": "import os\ndef setup():\n    os.environ['S'] = '1'\n"
                                     "setup()\nSTEPS = int(os.environ.get('S', 300))\n",
    "environment by another name": "import os\nenv = os.environ\nenv['S'] = '1'\n"
                                   "STEPS = int(os.environ.get('S', 300))\n",
    "environment tested after a write": "import os\nos.environ['STEPS'] = '1'\n"
                                        "STEPS = int(os.environ['STEPS']) if 'STEPS' in "
                                        "os.environ else 300\n",
    "own max": "def max(*a):\n    return 1\nSTEPS = max(10, 300)\n",
    "own int": "def int(x):\n    return 1\nSTEPS = int(300)\n",
    "int imported as": "from math import isqrt as int\nSTEPS = int(4)\n",
    "min assigned": "min = lambda *a: 1\nSTEPS = min(300, 400)\n",
    "os of its own": "import os\nclass Env:\n    environ = {'S': '1'}\nos = Env()\n"
                     "STEPS = int(os.environ.get('S', 300))\n",
    "builtins changed": "import builtins\nbuiltins.max = lambda *a: 1\nSTEPS = max(10, 300)\n",
    "set by a function": "EPOCHS = 3\ndef quick():\n    global EPOCHS\n    EPOCHS = 0\n"
                         "quick()\nSTEPS = max(EPOCHS * 100, 1)\n",
    "set through globals()": "EPOCHS = 3\nglobals()['EPOCHS'] = 0\nSTEPS = max(EPOCHS * 100, 1)\n",
    "arguments written": "import sys\nsys.argv += ['2']\n"
                         "STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300\n",
    "argparse set_defaults": "import argparse\nparser = argparse.ArgumentParser()\n"
                             "parser.add_argument('--steps', type=int, default=300)\n"
                             "parser.set_defaults(steps=2)\nSTEPS = parser.parse_args().steps\n",
    "argparse namespace changed": "import argparse\nparser = argparse.ArgumentParser()\n"
                                  "parser.add_argument('--steps', type=int, default=300)\n"
                                  "args = parser.parse_args()\nargs.steps = 2\n"
                                  "STEPS = args.steps\n",
    "argparse setattr": "import argparse\nparser = argparse.ArgumentParser()\n"
                        "parser.add_argument('--steps', type=int, default=300)\n"
                        "args = parser.parse_args()\nsetattr(args, 'steps', 2)\n"
                        "STEPS = args.steps\n",
    "argparse given arguments": "import argparse\nparser = argparse.ArgumentParser()\n"
                                "parser.add_argument('--steps', type=int, default=300)\n"
                                "STEPS = parser.parse_args(['--steps', '2']).steps\n",
    "argparse added in a block": "import argparse\nparser = argparse.ArgumentParser()\n"
                                 "if True:\n    parser.add_argument('--steps', type=int, "
                                 "default=2)\nSTEPS = parser.parse_args().steps\n",
    "argparse own type": "import argparse\nparser = argparse.ArgumentParser()\n"
                         "parser.add_argument('--steps', type=lambda s: 2, default='300')\n"
                         "STEPS = parser.parse_args().steps\n",
}


def handed_in(tmp_path, script: str, text: str):
    path = tmp_path / script
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("form", LONG)
def test_a_long_run_written_as_an_expression_is_capped_at_the_templates_steps(
        tmp_path, script, form):
    text = LONG[form]
    submission = handed_in(tmp_path, script, text)
    assert pm.steps_limit(submission, script) == {"STEPS": SCRIPTS[script]}, (
        f"expected the run of {script} handed in with {text!r} ({form}: 300 steps) to set "
        f"STEPS={SCRIPTS[script]}; observed {pm.steps_limit(submission, script)} "
        "(practical_measures.steps_limit, grader/common/constant_values.py)")
    assert (submission / script).read_text(encoding="utf-8") == text, "the file was changed"


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("form", {**AS_WRITTEN, **NOT_AS_READ})
def test_a_short_or_unknown_expression_runs_as_written(tmp_path, script, form):
    """NOT_AS_READ (adv40 F6): read as 300 before, the run took 1 or 2, and the cap raised it."""
    text = {**AS_WRITTEN, **NOT_AS_READ}[form]
    submission = handed_in(tmp_path, script, text)
    assert pm.steps_limit(submission, script) == {}, (
        f"expected the run of {script} handed in with {text!r} ({form}) to keep its STEPS; "
        f"observed {pm.steps_limit(submission, script)} (practical_measures.steps_limit; "
        "grader/common/constant_values.py, script_writes.py, parsed_arguments.py)")


def steps_of_the_run(text: str, tmp_path) -> int | None:
    """The STEPS the script holds run as the grader runs it: no arguments, and no environment
    variable of its own (None where the run stops)."""
    path = tmp_path / "sample.py"
    path.write_text(text + "\nprint('STEPS', STEPS)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, cwd=tmp_path, timeout=60)
    lines = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("STEPS ")]
    return int(float(lines[-1])) if done.returncode == 0 and lines else None


@pytest.mark.parametrize("form", {**LONG, **AS_WRITTEN, **NOT_AS_READ})
def test_the_cap_never_raises_a_run(tmp_path, form):
    """Every form above, run: where the grader caps it, the run itself takes more steps."""
    text = {**LONG, **AS_WRITTEN, **NOT_AS_READ}[form]
    if "10 ** 10" in text:
        pytest.skip("not run: it would work out a number of three billion digits")
    script = p10.SCRIPT
    cap = pm.steps_limit(handed_in(tmp_path, script, text), script).get("STEPS")
    run = steps_of_the_run(text, tmp_path)
    assert cap is None or (run is not None and run > cap), (
        f"expected no cap, or a cap below the run's own steps, for {text!r} ({form}); observed "
        f"cap {cap}, the run's STEPS {run} (practical_measures.steps_limit)")
    if form in LONG:
        assert run == 300, f"expected the run of {text!r} ({form}) to take 300; observed {run}"


@pytest.mark.parametrize("form", LONG)
def test_the_rewritten_run_takes_the_capped_steps(form, monkeypatch):
    """The grader's run sets the value the cap names in place of the expression."""
    monkeypatch.setattr(sys, "argv", ["sample.py"])   # the graded run's: no arguments
    tree, missing = rewrite_where_assigned(LONG[form], "sample.py", {"STEPS": 3})
    namespace: dict = {}
    exec(compile(tree, "sample.py", "exec"), namespace)
    assert not missing and namespace["STEPS"] == 3, (
        f"expected STEPS == 3 in the rewritten {LONG[form]!r}; observed "
        f"{namespace.get('STEPS')} ({ast.unparse(tree)!r})")


def test_the_students_own_table_is_compared_with_the_expressions_steps(tmp_path):
    """The student timed the 300 steps of `STEPS = 10 * 30`, not the grader's 10."""
    script = "practical5/practical5_dp.py"
    submission = handed_in(tmp_path, script, LONG["product"])
    lowered = Observation(script=script, gpus=2, returncode=0, sets={"STEPS": 10},
                          events=[{"event": "step", "rank": 0, "t": float(k)} for k in range(10)])
    assert pm.steps_as_written(lowered, submission, script) == 300, (
        "expected the file's 300 steps for the student's table; observed "
        f"{pm.steps_as_written(lowered, submission, script)} (practical_measures.steps_as_written)")
