"""HW3: Task 3 written in a script of its own beside the base code (adv51 F2).

adv51's hw3_twofiles: hw3/model_parallel.py is the template's base code (Tasks 1-2) and
hw3/model_parallel_task3.py is the whole Task 3-5 solution. The grader grades the script the
course runs, hw3/model_parallel.py, and had taken 3.5 points silently, never naming the other
script. Its Task 3-5 failures now wait for a person, and the student is told why; nothing is
held where model_parallel.py is itself spread, where the other script is a helper it imports,
or where the other script builds no model over all GPUs.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.checks.hw3_extra_scripts import held_message, is_held, spread_models_elsewhere

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "student_template" / "hw3" / "model_parallel.py"
REFERENCE = ROOT / "reference" / "hw3" / "model_parallel.py"
PLOT = "import matplotlib.pyplot as plt\n\nplt.plot([1, 2], [3, 4])\n"


def submission(tmp_path: Path, script: Path, **beside: str | Path) -> Path:
    folder = tmp_path / "hw3"
    folder.mkdir()
    shutil.copy(script, folder / "model_parallel.py")
    for name, content in beside.items():
        target = folder / f"{name}.py"
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content)
    return tmp_path


def test_the_task3_script_beside_the_base_code_is_found_and_named(tmp_path):
    found = spread_models_elsewhere(submission(tmp_path, TEMPLATE,
                                               model_parallel_task3=REFERENCE, plots=PLOT))
    assert found == {"hw3/model_parallel_task3.py": ["LargeLinearModelMP"]}, (
        f"expected the extra script with the spread model found (and the plotting script "
        f"not); observed {found}; where to look: grader/checks/hw3_extra_scripts.py")
    said = held_message(found)
    assert "hw3/model_parallel_task3.py" in said and "a person will grade Tasks 3-5" in said, said


@pytest.mark.parametrize("script, beside", [
    (REFERENCE, {"model_parallel_task3": REFERENCE}),          # model_parallel.py is spread
    (TEMPLATE, {"plots": PLOT}),                                # no model elsewhere
    (TEMPLATE, {}),                                             # the template alone
], ids=["script-itself-spread", "no-model-elsewhere", "template-alone"])
def test_nothing_is_held_where_the_graded_script_or_nothing_else_is_task3(tmp_path, script,
                                                                           beside):
    assert spread_models_elsewhere(submission(tmp_path, script, **beside)) == {}


def test_a_helper_module_the_script_imports_is_not_another_script(tmp_path):
    """adv51's hw3_helperfile: the class in mp_utils.py, which model_parallel.py imports, is
    graded through the script (hw3_build.class_built_instead), not held."""
    script = tmp_path / "script.py"
    script.write_text(TEMPLATE.read_text().replace(
        "import torch.nn as nn\n", "import torch.nn as nn\n\nfrom mp_utils import build_model\n", 1))
    root = tmp_path / "submission"
    root.mkdir()
    assert spread_models_elsewhere(submission(root, script, mp_utils=REFERENCE)) == {}


def test_only_tasks_3_to_5_are_held():
    assert is_held("hw3.task3.all_gpus_used") and is_held("hw3.task4.table_reported") and \
        is_held("hw3.task5.counts_reported")
    assert not is_held("hw3.task1.layers_reported") and not is_held("hw3.task2.timing") and \
        not is_held(None)


def failed_check(check: str, folder: Path):
    """A failing HW3 check as the checks' pytest_runtest_call wrapper sees it."""
    import types
    marker = types.SimpleNamespace(args=(check,))
    return types.SimpleNamespace(
        funcargs={}, get_closest_marker=lambda name: marker if name == "check" else None,
        config=types.SimpleNamespace(getoption=lambda name: str(folder)))


@pytest.mark.parametrize("check, held", [("hw3.task3.all_gpus_used", True),
                                         ("hw3.task5.counts_reported", True),
                                         ("hw3.task1.layers_reported", False)])
def test_a_failed_task3_to_5_check_waits_for_a_person_and_says_why(tmp_path, check, held):
    from grader.checks import conftest
    from grader.checks.support import GradedByHand
    folder = submission(tmp_path, TEMPLATE, model_parallel_task3=REFERENCE)
    wrapper = conftest.pytest_runtest_call(failed_check(check, folder))
    next(wrapper)
    with pytest.raises(AssertionError) as raised:
        wrapper.throw(AssertionError("Observed: no layer on cuda:2"))
    assert isinstance(raised.value, GradedByHand) == held, (
        f"expected {check} {'held for a person' if held else 'failed as it was'}; observed "
        f"{type(raised.value).__name__}: {raised.value}; where to look: _task3_elsewhere in "
        "grader/checks/conftest.py")
    if held:
        said = str(raised.value)
        assert "hw3/model_parallel_task3.py" in said and "no layer on cuda:2" in said, said
