"""A run's time budget (the rubric's run_timeout_s): hangs of every kind cost the checks of the
run that hangs, with "did not finish in time (within N s)", and the submission is graded, with
a score, long before the batch's backstop. Real grading of practical4 (two runs), in a batch."""
from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from grader.batch.pipeline import grade_in_child
from grader.sandbox.clock import CONTENTION_CAP
from tests.support import run_test_batch

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 4
# practical10's test below runs nothing that may finish (its script hangs at import): the two
# hung runs spin this long, the other five are never started. Half the batch's budget shows
# the same, 2 x 2 CPU-s less spun.
HUNG_ONLY_BUDGET_S = 2
# Stopped as soon as it holds more processes than a run may, long before its budget (a fork
# flood left to its budget kept a CI machine's CPUs in the kernel: 82 s to grade practical4).
FORK_FLOOD = ("import os, time\nwhile True:\n    try:\n        os.fork()\n"
              "    except OSError:\n        time.sleep(0.01)\n")
HANGS = {
    "loop_at_import": "while True:\n    pass\n",
    "sleep": "import time\ntime.sleep(10**6)\n",
    "output_flood": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "search_of_root": ("import os\nwhile True:\n    for folder, dirs, files in os.walk('/'):\n"
                       "        for name in files:\n            try:\n"
                       "                open(os.path.join(folder, name), 'rb').read(1 << 16)\n"
                       "            except OSError:\n                pass\n"),
}


@pytest.fixture
def rubrics(tmp_path) -> Path:
    """The real rubrics, practical4's budget cut to BUDGET_S."""
    folder = tmp_path / "rubrics"
    shutil.copytree(ROOT / "rubrics", folder)
    data = yaml.safe_load((folder / "practical4.yaml").read_text())
    data["run_timeout_s"] = BUDGET_S
    (folder / "practical4.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


@pytest.mark.slow
def test_every_kind_of_hang_costs_its_checks_and_the_submission_is_graded(tmp_path, rubrics):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name, code in {"reference": None, "fork_flood": FORK_FLOOD, **HANGS}.items():
        folder = subs / name / "practical4"
        shutil.copytree(ROOT / "reference" / "practical4", folder)
        if code is not None:
            script = folder / "concepts.py"
            script.write_text(code + script.read_text())
    started = time.monotonic()
    summary = run_test_batch(subs, out, ["practical4"], grade_fn=grade_in_child,
                             rubrics_dir=str(rubrics), timeout_s=900, workers=2)
    took = time.monotonic() - started
    assert summary.progress.graded == 2 + len(HANGS) and summary.failed == 0
    rows = {row[0]: row for row in csv.reader((out / "grades.csv").open())}
    # Every automatic point of Practical 4 (9.5; its 2.5 for written answers wait for a person).
    assert rows["reference"][2] == "9.5"
    for name in HANGS:
        result = json.loads((out / "submissions" / name / "result.json").read_text())
        feedback = json.dumps(result)
        assert f"did not finish in time (within {BUDGET_S:g} s)" in feedback, (
            f"{name}: the hang is not named in its checks' feedback")
        assert rows[name][2] != "" and float(rows[name][2]) < 9.5, (name, rows[name])
        duration = result["duration_s"]
        # Two runs side by side, each stopped at its budget (stretched at most 2x while other
        # work keeps the CPUs busy), plus pytest's start: nowhere near the 900 s backstop.
        assert duration < CONTENTION_CAP * BUDGET_S * 2 + 60, f"{name} took {duration} s to grade"
    flood = json.loads((out / "submissions" / "fork_flood" / "result.json").read_text())
    # Its runs stop past 128 processes (2 cores): 8 s to grade on an idle 2-core machine, where
    # waiting for the budgets took 35-45 s. On a machine loaded far past its cores (load 37 in
    # a run of this test) a flood can grow slower than its budget runs out: stopped at that.
    assert "started more processes at once than a run may (" in json.dumps(flood) or \
        "did not finish in time" in json.dumps(flood), "the fork flood's runs were not stopped"
    assert rows["fork_flood"][2] != "" and float(rows["fork_flood"][2]) < 9.5
    # Its graded time is its processes' start and end, which a loaded machine stretches far
    # more than a budget (108 s beside four other pytest processes, load past 10): bounded
    # here by the backstop's quarter, the limit's stop itself by the sandbox's tests.
    assert flood["duration_s"] < 900 / 4, flood["duration_s"]
    assert took < 900 / 2, f"the batch took {took:.0f} s"


@pytest.mark.slow
def test_a_script_that_hung_twice_is_not_started_again(tmp_path, pdl_grade):
    """practical10 runs its script in 7 configurations: an endless loop at import would cost 4
    rounds of budgets; after 2 hangs the others are not started, and say why."""
    folder = tmp_path / "rubrics"
    shutil.copytree(ROOT / "rubrics", folder)
    data = yaml.safe_load((folder / "practical10.yaml").read_text())
    data["run_timeout_s"] = HUNG_ONLY_BUDGET_S
    (folder / "practical10.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    submission = tmp_path / "hangs"
    shutil.copytree(ROOT / "reference" / "practical10", submission / "practical10")
    script = submission / "practical10" / "sample.py"
    script.write_text(HANGS["loop_at_import"] + script.read_text())
    started = time.monotonic()
    run = pdl_grade("grade", submission, "--out", tmp_path / "out", "--assignment", "practical10",
                    "--rubrics", folder)
    took = time.monotonic() - started
    assert run.code == 0, run.err
    feedback = json.dumps(json.loads((tmp_path / "out" / "result.json").read_text()))
    assert f"did not finish in time (within {HUNG_ONLY_BUDGET_S:g} s)" in feedback
    assert ("was not run: 2 other runs of practical10/sample.py did not finish in time "
            f"(within {HUNG_ONLY_BUDGET_S:g} s), so this one was not started") in feedback
    # One round of two hung runs (each at most 2x its budget on a busy machine), not four.
    assert took < 2 * CONTENTION_CAP * HUNG_ONLY_BUDGET_S + 60, f"grading took {took:.0f} s"
