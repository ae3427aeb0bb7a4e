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


# Audit 28's Practical 6 sheets: honest step times in seconds (0.005-0.03 s) all rounded to
# 0.01 or 0.02 at the hundredth, the reference's own (0.0104, 0.0203), and were all said.
_P6_HONEST = {
    "p6_tcp_chunk": [{"method": "dp", "step_time_s": 0.0187, "total_time_s": 0.1952},
                     {"method": "ddp", "step_time_s": 0.0098, "total_time_s": 0.1061}],
    # "21 ms", "0,219 s", "11 ms", "0,114 s" as the sheet reads them
    "p6_broadcast_shard": [{"method": "DP (practical 5)", "step_time_s": 0.021, "total_time_s": 0.219},
                           {"method": "DDP", "step_time_s": 0.011, "total_time_s": 0.114}],
}


def test_honest_practical6_times_in_seconds_are_not_the_references():
    for name, rows in _P6_HONEST.items():
        assert reference_copies("practical6", {"values": {"timing.table": rows}}) == [], name


def test_practical6_times_copied_from_the_reference_are_said():
    # p6_envargs_allgather: copied on purpose, the method names changed
    rows = [{"method": "DataParallel", "step_time_s": 0.0203, "total_time_s": 0.2353},
            {"method": "DDP", "step_time_s": 0.0104, "total_time_s": 0.1233}]
    said = reference_copies("practical6", {"values": {"timing.table": rows}})
    assert len(said) == 1 and said[0].startswith("timing.table: 4 of its times"), said
    assert "0.0104, 0.0203, 0.1233, 0.2353" in said[0], said


def test_reference_times_rounded_by_the_student_are_still_said():
    # the copy written to fewer digits, but not so few that honest times round alike
    rows = [{"method": "dp", "step_time_s": 0.0203, "total_time_s": 0.235},
            {"method": "ddp", "step_time_s": 0.0104, "total_time_s": 0.123}]
    said = reference_copies("practical6", {"values": {"timing.table": rows}})
    assert said and said[0].startswith("timing.table: 4 of its times"), said
    hw3 = [{"depth": 6, "step_time_ms": 56.2}, {"depth": 12, "step_time_ms": 125.6},
           {"depth": 24, "step_time_ms": 300.1}]
    said = reference_copies("hw3", {"values": {"task2.step_time_table": hw3}})
    assert said and said[0].startswith("task2.step_time_table: 2 of its times"), said


# adv42 F3: HW3's step-time table copied from the reference and scaled by 1.13, so that no
# time is the reference's (56.23, 125.61, 262.43 ms), had no flag.
def test_reference_times_scaled_by_one_constant_are_said():
    for rows in ([{"depth": 6, "step_time_ms": 63.54}, {"depth": 12, "step_time_ms": 141.94},
                  {"depth": 24, "step_time_ms": 296.55}],
                 # rounded to a decimal and listed deepest first
                 [{"depth": 24, "step_time_ms": 296.5}, {"depth": 6, "step_time_ms": 63.5},
                  {"depth": 12, "step_time_ms": 141.9}],
                 # with a depth of the student's own added
                 [{"depth": 6, "step_time_ms": 63.54}, {"depth": 12, "step_time_ms": 141.94},
                  {"depth": 24, "step_time_ms": 296.55}, {"depth": 48, "step_time_ms": 610.2}]):
        said = reference_copies("hw3", {"values": {"task2.step_time_table": rows}})
        assert len(said) == 1 and said[0].startswith(
            "task2.step_time_table: its times are the course's reference solution's times x1.13"), (
            f"expected: the x1.13 copy said; observed: {said}; where to look: "
            "grader/answers/reference_copies.py _one_scale")


def test_an_honest_students_own_measurements_are_not_a_scaled_copy():
    honest = [  # own runs: the ratios to the reference's vary by several per cent
        [{"depth": 6, "step_time_ms": 60.12}, {"depth": 12, "step_time_ms": 131.7},
         {"depth": 24, "step_time_ms": 270.3}],
        [{"depth": 6, "step_time_ms": 41.87}, {"depth": 12, "step_time_ms": 88.02},
         {"depth": 24, "step_time_ms": 190.4}],
    ]
    for rows in honest:
        assert reference_copies("hw3", {"values": {"task2.step_time_table": rows}}) == [], rows
    # two times scaled alike are too few to tell a copy from chance (Task 4 has two)
    scaled = [{"gpus": 2, "step_time_ms": 206.33, "memory_per_gpu_mib": [200.4, 200.7]},
              {"gpus": 5, "step_time_ms": 225.06, "memory_per_gpu_mib": [80.3, 80.1, 80.1, 80.1, 80.6]}]
    assert reference_copies("hw3", {"values": {"task4.table": scaled}}) == []
