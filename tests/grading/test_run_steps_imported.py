"""The STEPS cap reaches a step count the script imports from the student's own module: `from
config import STEPS` (a config.py beside it holding `STEPS = 300`) read as `range(STEPS)` or
handed to `train(STEPS)`, and `import config` read as `range(config.STEPS)`. Such a script had
run its 300 steps (P10 timed out, as a script with `--steps` default 300 had: 5.1 of 12). The
run's edit changes the script's text only: `; STEPS = min(STEPS, 3)` after the import, or
`min(config.STEPS, 3)` for the one read that bounds the loop (grader/common/loop_bound.py
_imported_default), so the run can only get shorter and the module, with what anything else
reads of it, stays as written. Where the value also sizes something else, is set again, or
bounds two loops, the script runs as written."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.harness.observation import Observation
from grader.vgpu.script_edits import apply_edits

SCRIPT = p10.SCRIPT   # the template's steps: 3
# A stand-in for torch's optimizer: the script prints the optimizer steps its run took.
HEAD = ("class Optimizer:\n    taken = 0\n    def step(self):\n        Optimizer.taken += 1\n"
        "optimizer = Optimizer()\n")
TAIL = "print('TAKEN', Optimizer.taken)\n"
CONFIG = {"config.py": "STEPS = 300\nLR = 0.01\n"}

# (script, own modules): 300 steps in the student's run, the template's 3 in the grader's.
LOWERED = {
    "from config import STEPS": ("from config import STEPS\nfor step in range(STEPS):\n"
                                 "    optimizer.step()\nprint(f'trained {STEPS} steps')\n",
                                 CONFIG),
    "imported under another name, in a while": (
        "from config import LR, STEPS as N\ndef main():\n    step = 0\n    while step < N:\n"
        "        optimizer.step()\n        step += 1\nmain()\n", CONFIG),
    "handed to a function": ("from config import STEPS\ndef train(steps):\n"
                             "    for step in range(steps):\n        optimizer.step()\n"
                             "train(steps=STEPS)\n", CONFIG),
    "import config": ("import config\nfor step in range(config.STEPS):\n    optimizer.step()\n"
                      "    print(f'step {step} of {config.STEPS}')\n", CONFIG),
    "import config as cfg, a loader's break": (
        "import itertools\nimport config as cfg\n"
        "for step, batch in enumerate(itertools.repeat(1)):\n    optimizer.step()\n"
        "    if step + 1 == cfg.STEPS:\n        break\n", CONFIG),
    "an expression in a package's module": (
        "from settings.run import STEPS\nfor step in range(STEPS):\n    optimizer.step()\n",
        {"settings/__init__.py": "", "settings/run.py": "EPOCHS = 3\nSTEPS = EPOCHS * 100\n"}),
}
# Run as written: lowering would change what else the script does, or the value is not read.
AS_WRITTEN = {
    "it sizes the data too": ("from config import STEPS\ndata = [0.5] * STEPS\n"
                              "for step in range(STEPS):\n    optimizer.step()\n", CONFIG),
    "config.STEPS sizes the model too": ("import config\nwidth = config.STEPS // 10\n"
                                         "for step in range(config.STEPS):\n"
                                         "    optimizer.step()\n", CONFIG),
    "it is set again": ("import config\nconfig.STEPS = 2\nfor step in range(config.STEPS):\n"
                        "    optimizer.step()\n", CONFIG),
    "the name is set again in a function": (
        "from config import STEPS\ndef main():\n    STEPS = 2\n    for step in range(STEPS):\n"
        "        optimizer.step()\nmain()\n", CONFIG),
    "two loops of config.STEPS": ("import config\nfor step in range(config.STEPS):\n"
                                  "    optimizer.step()\nfor step in range(config.STEPS):\n"
                                  "    optimizer.step()\n", CONFIG),
    "a value the grader cannot work out": ("from config import STEPS\n"
                                           "for step in range(STEPS):\n    optimizer.step()\n",
                                           {"config.py": "def steps():\n    return 2\n"
                                                         "STEPS = steps()\n"}),
    "a short value": ("from config import STEPS\nfor step in range(STEPS):\n"
                      "    optimizer.step()\n", {"config.py": "STEPS = 2\n"}),
    "the import written twice": ("from config import STEPS\n# from config import STEPS\n"
                                 "for step in range(STEPS):\n    optimizer.step()\n", CONFIG),
    "a function's own config": ("import config\ndef main(config):\n"
                                "    for step in range(config.STEPS):\n        optimizer.step()\n"
                                "main(config)\n", CONFIG),
}


def handed_in(tmp_path, text: str, modules: dict):
    folder = (tmp_path / SCRIPT).parent
    for name, module in modules.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(module, encoding="utf-8")
    (tmp_path / SCRIPT).write_text(HEAD + text, encoding="utf-8")
    return tmp_path


def steps_taken(submission, edits=()) -> int | None:
    """The optimizer steps the script takes run as the graded run starts it (no arguments,
    beside its own modules), with the run's edits."""
    path = submission / SCRIPT
    ran = path.with_name("ran.py")
    ran.write_text(apply_edits(path.read_text(encoding="utf-8"), SCRIPT, list(edits)) + TAIL,
                   encoding="utf-8")
    done = subprocess.run([sys.executable, str(ran)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, cwd=ran.parent, timeout=60)
    taken = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("TAKEN ")]
    return int(taken[-1]) if done.returncode == 0 and taken else None


@pytest.mark.parametrize("form", LOWERED)
def test_a_step_count_of_an_own_module_is_lowered(tmp_path, form):
    submission = handed_in(tmp_path, *LOWERED[form])
    edits = pm.steps_edits(submission, SCRIPT)
    assert len(edits) == 1 and "min(" in edits[0][1], (
        f"expected one edit taking min(..., 3) of the imported steps ({form}); observed {edits} "
        "(grader/common/loop_bound.py _imported, practical_measures.steps_edits)")
    assert (steps_taken(submission), steps_taken(submission, edits)) == (300, 3), (
        f"expected {form} to take 300 steps as written and 3 edited; observed "
        f"{steps_taken(submission)} and {steps_taken(submission, edits)} (edits {edits})")
    run = Observation(script=SCRIPT, gpus=4, returncode=0, edits=list(edits))
    assert pm.steps_as_written(run, submission, SCRIPT) == 300, (
        "expected the student's own table compared with the module's 300 steps; observed "
        f"{pm.steps_as_written(run, submission, SCRIPT)} (practical_measures.steps_as_written)")


@pytest.mark.parametrize("form", AS_WRITTEN)
def test_a_step_count_read_otherwise_runs_as_written(tmp_path, form):
    submission = handed_in(tmp_path, *AS_WRITTEN[form])
    assert steps_taken(submission) is not None, f"expected {form} to run as written"
    assert pm.steps_edits(submission, SCRIPT) == (), (
        f"expected no edit of {form}; observed {pm.steps_edits(submission, SCRIPT)} "
        "(grader/common/loop_bound.py _imported)")
    assert pm.steps_limit(submission, SCRIPT) == {}, "expected no STEPS set: the file has none"


def test_the_module_and_what_else_reads_it_stay_as_written(tmp_path):
    """config.py sizes its data by its STEPS; the script reads both: the edit lowers the loop
    only, never the data."""
    modules = {"config.py": "STEPS = 300\nDATA = [1.0] * STEPS\n"}
    text = ("import config\nfrom config import STEPS\nfor step in range(STEPS):\n"
            "    optimizer.step()\nprint('DATA', len(config.DATA), config.STEPS)\n")
    submission = handed_in(tmp_path, text, modules)
    edits = pm.steps_edits(submission, SCRIPT)
    ran = subprocess.run([sys.executable, "-c", apply_edits(HEAD + text, SCRIPT, list(edits))],
                         capture_output=True, text=True, cwd=(submission / SCRIPT).parent,
                         env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert edits and "DATA 300 300" in ran.stdout, (
        f"expected the loop lowered ({edits}) and config's DATA and STEPS as written (DATA 300 "
        f"300); observed {ran.stdout!r} {ran.stderr[-300:]!r}")
