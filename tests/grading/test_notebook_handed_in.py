"""A notebook handed in instead of the script is named, with how to export it (adv45 F3).

Nora handed in hw3/model_parallel.ipynb (the reference code in one cell) and no
hw3/model_parallel.py: her report and instructor.md said only that the .py was missing, and
never named the notebook she did hand in (a renamed .py had been named: "ddp.py is there")."""
from __future__ import annotations

import json

from grader.harness.execute import scripts_instead
from grader.harness.observation import missing_script

SCRIPT = "hw3/model_parallel.py"


def _notebook(folder, name="model_parallel.ipynb"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["import torch\n"]}],
                                           "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))


def test_a_notebook_beside_the_missing_script_is_offered_as_it(tmp_path):
    _notebook(tmp_path / "hw3")
    (tmp_path / "hw3" / "answers.yaml").write_text("task1: {}\n")
    assert scripts_instead(tmp_path, SCRIPT) == ["hw3/model_parallel.ipynb"], (
        "expected the notebook offered as the missing script (grader/harness/execute.py "
        f"scripts_instead); observed {scripts_instead(tmp_path, SCRIPT)}")


def test_the_message_names_the_notebook_and_how_to_export_it():
    said = missing_script(SCRIPT, ["hw3/model_parallel.ipynb"])
    assert said.startswith(f"{SCRIPT} is missing from the submission: keep the template's file "
                           "layout."), said    # grader/reports/missing_scripts.py reads this
    for words in ("hw3/model_parallel.ipynb is a notebook", "File > Download as > Python",
                  "jupyter nbconvert --to script hw3/model_parallel.ipynb",
                  f"hand in {SCRIPT}"):
        assert words in said, f"expected {words!r} in the message; observed {said!r}"


def test_a_renamed_script_and_a_notebook_are_both_named():
    said = missing_script(SCRIPT, ["hw3/mp.py", "hw3/model_parallel.ipynb"])
    assert "hw3/mp.py is there" in said and "hw3/model_parallel.ipynb is a notebook" in said, said
    assert missing_script(SCRIPT, ["hw3/mp.py"]).endswith(
        "hw3/mp.py is there: the grader runs hw3/model_parallel.py; rename it.")
