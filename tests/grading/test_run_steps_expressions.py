"""The STEPS cap of the practicals' runs (a1c6265: at most the template's STEPS, P5 and P6 10,
P10 3) reaches a STEPS written as an expression the grader can work out without running the
script: `10 * 30`, a product of earlier constants, `int(1e3)`, `int(os.environ.get("STEPS",
300))` (a graded run's environment holds no variable of the script's own, so the default is
what runs). Such a script had run its 300 steps as written. A value the grader cannot work out
(sys.argv, a call of the script's own, a STEPS changed again by `*=`) is still left alone:
lowering it could be raising it. The file itself is never changed."""
from __future__ import annotations

import ast

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
}
# Left as written: short already (never raised), or not worked out without running the script.
AS_WRITTEN = {
    "short product": "STEPS = 1 * 2\n",
    "short environment default": "import os\nSTEPS = int(os.environ.get('STEPS', 2))\n",
    "a variable the run sets": "import os\nSTEPS = int(os.environ.get('WORLD_SIZE', 300))\n",
    "command line": "import sys\nSTEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300\n",
    "own function": "def steps():\n    return 300\nSTEPS = steps()\n",
    "changed again": "STEPS = 1\nSTEPS *= 300\n",
    "changed in a block": "import sys\nEPOCHS = 3\nif '--quick' in sys.argv:\n    EPOCHS = 0\n"
                          "STEPS = EPOCHS * 100\n",
    "huge power": "STEPS = 2 ** 10 ** 10\n",
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
@pytest.mark.parametrize("form", AS_WRITTEN)
def test_a_short_or_unknown_expression_runs_as_written(tmp_path, script, form):
    submission = handed_in(tmp_path, script, AS_WRITTEN[form])
    assert pm.steps_limit(submission, script) == {}, (
        f"expected the run of {script} handed in with {AS_WRITTEN[form]!r} ({form}) to keep its "
        f"STEPS; observed {pm.steps_limit(submission, script)} (practical_measures.steps_limit)")


@pytest.mark.parametrize("form", LONG)
def test_the_rewritten_run_takes_the_capped_steps(form):
    """The grader's run sets the value the cap names in place of the expression."""
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
