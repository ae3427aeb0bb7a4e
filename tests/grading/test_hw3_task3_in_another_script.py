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
import types
from pathlib import Path

import pytest

from grader.checks.hw3_extra_scripts import (SPREAD_DEPTH, SPREAD_GPUS, held_message, is_held,
                                             spread_models_elsewhere)

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


def layout_records(devices: list[str] | None, **more) -> list[dict]:
    """What the probe writes for the other script's model built on SPREAD_GPUS GPUs."""
    return [{"kind": "layout", "gpus": SPREAD_GPUS, "depth": SPREAD_DEPTH,
             **({"devices": devices} if devices is not None else {}), **more}]


SPREAD = layout_records([f"cuda:{i // 2}" for i in range(SPREAD_DEPTH)])
# adv54: a stub that asks torch.cuda.device_count() and keeps the base code's split.
STUB = layout_records(["cuda:0"] * 5 + ["cuda:1"] * 5)


class BuiltElsewhere:
    """The session's runs as the wrapper asks them to build another script's model."""

    def __init__(self, records: list[dict]):
        self.records, self.built = records, []

    def hw3(self, plan, gpus, script):
        self.built.append((script, gpus))
        return self.records, types.SimpleNamespace(ok=True, problem=lambda: None)


def failed_check(check: str, folder: Path, runs=None):
    """A failing HW3 check as the checks' pytest_runtest_call wrapper sees it."""
    marker = types.SimpleNamespace(args=(check,))
    return types.SimpleNamespace(
        funcargs={} if runs is None else {"runs": runs},
        get_closest_marker=lambda name: marker if name == "check" else None,
        config=types.SimpleNamespace(getoption=lambda name: str(folder)))


def wrapped_failure(tmp_path: Path, check: str, runs) -> AssertionError:
    from grader.checks import conftest
    folder = submission(tmp_path, TEMPLATE, model_parallel_task3=REFERENCE)
    wrapper = conftest.pytest_runtest_call(failed_check(check, folder, runs))
    next(wrapper)
    with pytest.raises(AssertionError) as raised:
        wrapper.throw(AssertionError("Observed: no layer on cuda:2"))
    return raised.value


@pytest.mark.parametrize("check, held", [("hw3.task3.all_gpus_used", True),
                                         ("hw3.task5.counts_reported", True),
                                         ("hw3.task1.layers_reported", False)])
def test_a_failed_task3_to_5_check_waits_for_a_person_and_says_why(tmp_path, check, held):
    from grader.checks.support import GradedByHand
    runs = BuiltElsewhere(SPREAD)
    failure = wrapped_failure(tmp_path, check, runs)
    assert isinstance(failure, GradedByHand) == held, (
        f"expected {check} {'held for a person' if held else 'failed as it was'}; observed "
        f"{type(failure).__name__}: {failure}; where to look: _task3_elsewhere in "
        "grader/checks/conftest.py")
    if held:
        said = str(failure)
        assert "hw3/model_parallel_task3.py" in said and "no layer on cuda:2" in said, said
        assert runs.built == [("hw3/model_parallel_task3.py", SPREAD_GPUS)], runs.built


@pytest.mark.parametrize("records, why", [
    (STUB, "put its layers on cuda:0, cuda:1 only"),
    (layout_records(None, error={"type": "TypeError", "message": "missing argument"}),
     "failed: TypeError: missing argument"),
    ([], "could not be built"),
], ids=["stub-keeps-two-gpus", "does-not-build", "no-record"])
def test_a_script_whose_model_does_not_spread_holds_nothing_and_the_failure_says_why(
        tmp_path, records, why):
    """adv54: the text alone (a class with Linear layers calling torch.cuda.device_count(),
    even a stub) had held Tasks 3-5's automatic zero for a person."""
    from grader.checks.support import GradedByHand
    failure = wrapped_failure(tmp_path, "hw3.task3.all_gpus_used", BuiltElsewhere(records))
    said = str(failure)
    assert not isinstance(failure, GradedByHand) and "no layer on cuda:2" in said and \
        "Not held for a person: hw3/model_parallel_task3.py" in said and why in said, (
            f"expected the failure to stand, saying why the other script is not Task 3's "
            f"({why!r}); observed {type(failure).__name__}: {said}; where to look: not_spread "
            "in grader/checks/hw3_extra_scripts.py")


def test_without_the_runs_to_build_it_nothing_is_held(tmp_path):
    from grader.checks.support import GradedByHand
    failure = wrapped_failure(tmp_path, "hw3.task3.all_gpus_used", None)
    assert not isinstance(failure, GradedByHand), str(failure)


@pytest.mark.slow
def test_the_other_scripts_model_is_built_in_the_sandbox_before_anything_is_held(tmp_path,
                                                                                 bwrap):
    """The probe builds the other script's model as it builds hw3/model_parallel.py's: the
    reference spreads over all GPUs (held), a stub asking for the GPU count and keeping the
    base code's split does not (its failures stand)."""
    from grader.checks.hw3_extra_scripts import SPREAD_PLAN, not_spread
    from grader.harness.execute import run_hw3_probe
    stub = TEMPLATE.read_text().replace(
        "        super().__init__()\n",
        "        super().__init__()\n        self.n_gpus = torch.cuda.device_count()\n", 1)
    (tmp_path / "submission").mkdir()
    (tmp_path / "scratch").mkdir()
    folder = submission(tmp_path / "submission", TEMPLATE, model_parallel_task3=REFERENCE,
                        model_parallel_stub=stub)
    assert set(spread_models_elsewhere(folder)) == {"hw3/model_parallel_task3.py",
                                                    "hw3/model_parallel_stub.py"}
    verdicts = {}
    for script in ("hw3/model_parallel_task3.py", "hw3/model_parallel_stub.py"):
        records, run = run_hw3_probe(folder, SPREAD_PLAN, gpus=SPREAD_GPUS, script=script,
                                     scratch_root=tmp_path / "scratch")
        verdicts[script] = not_spread(records, None if run.ok else run.problem())
    assert verdicts["hw3/model_parallel_task3.py"] is None and \
        "cuda:0, cuda:1 only" in (verdicts["hw3/model_parallel_stub.py"] or ""), (
            f"expected the reference spread and the stub not; observed {verdicts}; where to "
            "look: run_hw3_probe's `script` in grader/harness/execute.py and not_spread in "
            "grader/checks/hw3_extra_scripts.py")
