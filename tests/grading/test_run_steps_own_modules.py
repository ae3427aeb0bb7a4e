"""The STEPS cap reads what the student's own modules write at import: a `config.py` beside the
script whose `os.environ.setdefault("STEPS", "1")` runs at `import config` makes `STEPS =
int(os.environ.get("STEPS", 300))` 1 in the run, not the 300 the grader had read, and the cap
had RAISED that run to the template's steps (adv40 F6's kind, through an import); with
`setdefault("STEPS", "300")` and a default of 3 the run took 300 steps, uncapped (P10 5.1 of
12). A value set by a top-level statement of literals, the module's only write of it, at a
top-level import, is read; any other write an own module may make is unknown, and the script
runs as written; a module that writes nothing, or one that is not the student's, changes
nothing."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from grader.checks import practical_measures as pm
from grader.checks import test_practical10 as p10
from grader.vgpu.run_on_node import rewrite_where_assigned

SCRIPT = p10.SCRIPT   # template's steps: 3
READS_ENVIRONMENT = "import os\n{imports}STEPS = int(os.environ.get('STEPS', 300))\n"
ARGPARSE_LOOP = ("import argparse\n{imports}class Optimizer:\n    def step(self):\n"
                 "        print('STEP')\nparser = argparse.ArgumentParser()\n"
                 "parser.add_argument('--steps', type=int, default=300)\n"
                 "args = parser.parse_args()\nfor step in range(args.steps):\n"
                 "    Optimizer().step()\n")

# (script's imports, {module file: text}): each module sets what the script then reads.
WRITTEN_AT_IMPORT = {
    "setdefault": ("import config\n", {"config.py": "import os\n"
                                                    "os.environ.setdefault('STEPS', '1')\n"}),
    "assigned": ("from config import LR\n", {"config.py": "import os\nLR = 0.1\n"
                                                          "os.environ['STEPS'] = '1'\n"}),
    "update": ("import config as c\n", {"config.py": "import os\n"
                                                     "os.environ.update({'STEPS': '1'})\n"}),
    "a module it imports": ("import settings\n", {"settings.py": "import config\n",
                                                  "config.py": "import os\n"
                                                               "os.environ['STEPS'] = '1'\n"}),
    "a package": ("import conf.steps\n", {"conf/__init__.py": "",
                                          "conf/steps.py": "import os\n"
                                                           "os.environ['STEPS'] = '1'\n"}),
    "a star import": ("from config import *\n", {"config.py": "from os import *\n"
                                                              "environ['STEPS'] = '1'\n"}),
    "imported in a function": ("def setup():\n    import config\nsetup()\n",
                               {"config.py": "import os\nos.environ['STEPS'] = '1'\n"}),
}
# Modules that set STEPS to 300 as the run reads it: lowered to the template's 3.
SET_TO_300 = {
    "setdefault": ("import config\n", {"config.py": "import os\n"
                                                    "os.environ.setdefault('STEPS', '300')\n"}),
    "assigned, through another module": ("import settings\n", {
        "settings.py": "import config\nLR = 0.1\n",
        "config.py": "from os import environ\nenviron['STEPS'] = '300'\n"}),
}
DEFAULT_3 = "import os\n{imports}STEPS = int(os.environ.get('STEPS', 3))\n"
# Written some other way: unknown, run as written (here 300 steps, or 1).
SET_UNKNOWN = {
    "set twice": ("import config\n", {"config.py": "import os\nos.environ['STEPS'] = '1'\n"
                                                   "os.environ.setdefault('STEPS', '300')\n"}),
    "set in a block": ("import config\n", {"config.py": "import os, sys\n"
                                                        "if len(sys.argv) < 5:\n"
                                                        "    os.environ['STEPS'] = '300'\n"}),
    "imported in a block": ("if True:\n    import config\n",
                            {"config.py": "import os\nos.environ['STEPS'] = '300'\n"}),
    "imported in a function first": ("def setup():\n    import config\nsetup()\nimport config\n",
                                     {"config.py": "import os\nos.environ['STEPS'] = '300'\n"}),
    "a number, not a string": ("import config\n", {"config.py": "import os\nN = '300'\n"
                                                                 "os.environ['STEPS'] = N\n"}),
}
# Modules that write nothing the script reads: the 300 steps are still lowered.
WRITES_NOTHING = {
    "settings only": ("import config\n", {"config.py": "LR = 0.1\nprint('config loaded')\n"}),
    "not the student's": ("import json\n", {}),
    "each imports the other": ("import a\n", {"a.py": "import b\nX = 1\n",
                                              "b.py": "import a\nY = 2\n"}),
}


def handed_in(tmp_path, imports: str, modules: dict, template: str = READS_ENVIRONMENT):
    folder = tmp_path / "practical10"
    for name, text in modules.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    (tmp_path / SCRIPT).write_text(template.format(imports=imports), encoding="utf-8")
    return tmp_path


def run(submission, edits=(), tail="print('STEPS', STEPS)\n") -> list[str]:
    path = submission / SCRIPT
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        text = text.replace(old, new)
    ran = path.with_name("ran.py")
    ran.write_text(text + tail, encoding="utf-8")
    done = subprocess.run([sys.executable, str(ran)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "")}, cwd=submission, timeout=60)
    return done.stdout.split()


@pytest.mark.parametrize("form", WRITTEN_AT_IMPORT)
def test_a_value_an_own_module_sets_at_import_is_not_capped(tmp_path, form):
    submission = handed_in(tmp_path, *WRITTEN_AT_IMPORT[form])
    assert run(submission)[-1] == "1", "expected the run itself to take the module's 1 step"
    assert pm.steps_limit(submission, SCRIPT) == {}, (
        f"expected no STEPS set where an own module sets the environment ({form}): the run "
        f"takes 1 step; observed {pm.steps_limit(submission, SCRIPT)} (script_writes.py "
        "_imported_writes, practical_measures.own_modules)")


@pytest.mark.parametrize("form", WRITES_NOTHING)
def test_a_module_that_writes_nothing_read_leaves_the_cap(tmp_path, form):
    submission = handed_in(tmp_path, *WRITES_NOTHING[form])
    assert run(submission)[-1] == "300"
    assert pm.steps_limit(submission, SCRIPT) == {"STEPS": 3}, (
        f"expected STEPS=3 for 300 steps ({form}); observed {pm.steps_limit(submission, SCRIPT)}")


@pytest.mark.parametrize("form", SET_TO_300)
def test_a_value_an_own_module_sets_is_read_and_lowered(tmp_path, form):
    submission = handed_in(tmp_path, *SET_TO_300[form], template=DEFAULT_3)
    assert run(submission)[-1] == "300", "expected the run itself to take the module's 300"
    assert pm.steps_limit(submission, SCRIPT) == {"STEPS": 3}, (
        f"expected STEPS=3 for the 300 steps an own module sets ({form}); observed "
        f"{pm.steps_limit(submission, SCRIPT)} (script_writes.py _known_values)")
    tree, missing = rewrite_where_assigned((submission / SCRIPT).read_text(encoding="utf-8"),
                                           "sample.py", {"STEPS": 3})
    assert not missing and "STEPS = 3" in ast.unparse(tree), "expected the run's STEPS set to 3"


@pytest.mark.parametrize("form", SET_UNKNOWN)
def test_a_value_an_own_module_may_set_otherwise_runs_as_written(tmp_path, form):
    submission = handed_in(tmp_path, *SET_UNKNOWN[form], template=DEFAULT_3)
    assert pm.steps_limit(submission, SCRIPT) == {}, (
        f"expected no STEPS set ({form}): the value is not read; observed "
        f"{pm.steps_limit(submission, SCRIPT)}")


def test_an_own_module_that_gives_arguments_keeps_the_loops_default(tmp_path):
    """`sys.argv += ['--steps', '1']` in config.py: the run takes 1 step, whatever the default."""
    modules = {"config.py": "import sys\nsys.argv += ['--steps', '1']\n"}
    submission = handed_in(tmp_path, "import config\n", modules, ARGPARSE_LOOP)
    assert run(submission, tail="").count("STEP") == 1
    assert pm.steps_edits(submission, SCRIPT) == (), (
        f"expected no edit of the default; observed {pm.steps_edits(submission, SCRIPT)}")
    plain = handed_in(tmp_path / "plain", "import config\n", {"config.py": "LR = 0.1\n"},
                      ARGPARSE_LOOP)
    edits = pm.steps_edits(plain, SCRIPT)
    assert edits and run(plain, edits, tail="").count("STEP") == 3, (
        f"expected the default lowered to 3 where config.py gives no argument; observed {edits}")
