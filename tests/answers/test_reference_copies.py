"""Answers that are the course's reference solution's are said to the instructor (a TA's
audit: the reference's answer sheet, handed in beside untouched code, reached the person
grading its written answers with no note), and what honest students share never is."""
from __future__ import annotations

from pathlib import Path

import yaml

from grader.answers.reference_copies import reference_copies
from grader.common.locations import data_folder

REFERENCE = data_folder("reference")


def _reference_values(assignment: str) -> dict:
    sheet = yaml.safe_load((REFERENCE / assignment / "answers.yaml").read_text(encoding="utf-8"))
    values = {}
    for qid, answer in sheet["answers"].items():
        values[qid] = answer["rows"] if answer.get("type") == "table" else answer["value"]
    return values


def test_the_reference_sheet_handed_in_is_said_answer_by_answer():
    said = reference_copies("hw3", {"values": _reference_values("hw3")})
    named = sorted(line.split(":")[0] for line in said)
    assert named == ["task1.explanation", "task2.explanation", "task2.step_time_table",
                     "task3.explanation", "task4.explanation", "task4.table",
                     "task5.explanation"], said
    assert any("56.23, 125.61, 262.43" in line for line in said), said


def test_the_same_text_with_other_case_spacing_and_punctuation_is_the_same():
    text = _reference_values("hw3")["task3.explanation"]
    said = reference_copies("hw3", {"values": {"task3.explanation": "  " + text.upper().replace(",", " ;")}})
    assert said and said[0].startswith("task3.explanation: the same text"), said


def test_what_honest_students_share_is_never_said():
    values = _reference_values("hw3")
    honest = {
        # facts every right answer shares
        "task1.layers_per_gpu": values["task1.layers_per_gpu"],
        "task5.transfers_5gpus": values["task5.transfers_5gpus"],
        "task2.depth_improves_speed": values["task2.depth_improves_speed"],
        # a short answer a right answer may well share
        "task3.explanation": "divmod(DEPTH, n), the first DEPTH % n GPUs one more",
        # memory is deterministic: every run of the same code allocates the same
        "task4.table": [{"gpus": 2, "step_time_ms": 171.2, "memory_per_gpu_mib": [200.4, 200.7]},
                        {"gpus": 5, "step_time_ms": 190.8,
                         "memory_per_gpu_mib": [80.3, 80.1, 80.1, 80.1, 80.6]}],
        # one time equal by chance
        "task2.step_time_table": [{"depth": 6, "step_time_ms": 56.23},
                                  {"depth": 12, "step_time_ms": 118.0},
                                  {"depth": 24, "step_time_ms": 240.5}],
    }
    assert reference_copies("hw3", {"values": honest}) == []


def test_nothing_is_compared_where_the_reference_is_not_installed(tmp_path: Path):
    assert reference_copies("hw3", {"values": _reference_values("hw3")}, reference=tmp_path) == []


def test_the_reference_graded_as_itself_is_not_said_to_copy_itself():
    from grader.grading.score import _is_the_reference
    assert _is_the_reference(str(REFERENCE)) and not _is_the_reference("/tmp/some-student")
