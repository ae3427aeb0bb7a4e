"""HW3 Task 3's hint points at what to look at, never at the remedy's formula (a student's
audit: the feedback of a layout that left GPUs empty said "give each GPU DEPTH // N layers and
the first DEPTH % N one more (or put layer i on GPU i * N // DEPTH)", the rule Task 3 asks the
student to find and to explain in hw3.task3.explanation). The instructor still reads the usual
remedy, as a flag of the course's grading (instructor.md), never before the work is handed in
(PDL_HIDE_ANSWERS=1, where result.json is the student's own).

The checks run here on probe records written by hand, shaped as grader/harness/hw3_probe.py
writes them."""
from __future__ import annotations

import re

import pytest
import yaml

from grader.checks import test_hw3 as hw3
from grader.checks.hw3_layout import counts_per_gpu
from grader.checks.support import HIDE_ANSWERS_ENV
from grader.harness.observation import Observation
from grader.scoring import default_rubrics_dir
from grader.scoring.check_results import answer_data

# The remedy, however it is written: a count per GPU, the remainder's place, an index rule,
# the device expression.
FORMULA = re.compile(r"DEPTH\s*//\s*N|DEPTH\s*%\s*N|\*\s*N\s*//|//\s*DEPTH|cuda:\{")

RULES = {   # layer i's GPU with DEPTH d over n GPUs
    "cuda0": lambda i, n, d: 0,
    "base": lambda i, n, d: 0 if i < d // 2 else 1,
    "chunks": lambda i, n, d: i // -(-d // n),
    "chunks_too_big": lambda i, n, d: i // (d // n + 1),
}
NODES = [(2, 6), (3, 5), (4, 6), (5, 12)]


def layout_records(rule) -> list[dict]:
    return [{"kind": "layout", "gpus": n, "depth": d, "n_layers": d, "distinct_layers": d,
             "devices": [f"cuda:{rule(i, n, d)}" for i in range(d)]} for n, d in NODES]


def probe(rule):
    run = Observation("hw3/model_parallel.py", gpus=5, returncode=0)
    return layout_records(rule), run


def task3_failure(rule, gpus, depth, hidden: bool, monkeypatch) -> tuple[str, list[str]]:
    monkeypatch.setenv(HIDE_ANSWERS_ENV, "1" if hidden else "0")
    flags: list[str] = []
    with pytest.raises(AssertionError) as raised:
        hw3.test_task3_layers_on_every_gpu(probe(rule), gpus, depth, flags.append, None)
    return str(raised.value), flags


@pytest.mark.parametrize("name", list(RULES))
def test_the_students_hint_names_the_cause_not_the_formula(name):
    layouts = [(n, d, counts_per_gpu([f"cuda:{RULES[name](i, n, d)}" for i in range(d)], n))
               for n, d in NODES]
    for gpus, depth, counts in layouts:
        if 0 not in counts:
            continue
        says = hw3.why_gpus_idle(counts, depth, gpus, layouts)
        assert not FORMULA.search(says), (name, says)
        assert says.strip(), name


@pytest.mark.parametrize("name, cause", [("cuda0", "cuda0"), ("base", "base"),
                                         ("chunks", "chunks"), ("chunks_too_big", "chunks")])
def test_the_course_grading_flags_the_usual_remedy_for_the_instructor(name, cause, monkeypatch):
    text, flags = task3_failure(RULES[name], 4, 6, hidden=False, monkeypatch=monkeypatch)
    assert not FORMULA.search(text), text
    assert flags == [f"Task 3: GPUs left without layers ({hw3.STAFF_REMEDY[cause]}); the "
                     "student's feedback names the cause and what to look at, not the formula"]
    if cause != "cuda0":
        assert "DEPTH // N layers and the first DEPTH % N one more" in flags[0]
        assert "i * N // DEPTH" in flags[0]


def test_before_handing_in_nothing_holds_the_formula(monkeypatch):
    """pdl-grade check's result.json is the student's own: no flag there either."""
    text, flags = task3_failure(RULES["base"], 4, 6, hidden=True, monkeypatch=monkeypatch)
    assert flags == [] and not FORMULA.search(text)
    assert "the base code's split is still in place" in text
    assert "Task 3 asks for every GPU to hold layers, as evenly as DEPTH allows" in text


def test_a_flag_raised_by_every_case_is_one_flag():
    case = {"check": "hw3.task3.all_gpus_used", "flags": ["Task 3: the same"]}
    report = {"tests": [{"metadata": dict(case)}, {"metadata": dict(case)},
                        {"metadata": {"check": "hw3.task3.all_gpus_used", "flags": ["other"]}}]}
    assert answer_data(report)["flags"] == [
        {"check": "hw3.task3.all_gpus_used", "text": "Task 3: the same"},
        {"check": "hw3.task3.all_gpus_used", "text": "other"}]


def test_the_rubrics_task3_feedback_holds_no_formula():
    rubric = yaml.safe_load((default_rubrics_dir() / "hw3.yaml").read_text(encoding="utf-8"))
    for item in rubric["items"]:
        for text in (item.get("feedback") or {}).values():
            assert not FORMULA.search(text), (item["id"], text)
