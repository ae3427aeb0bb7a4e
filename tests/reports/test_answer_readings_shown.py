"""The "Your answers" table shows each answer as read, in words a student reads: "[32, 1000]
each" (one shape for every chunk, where the question does not say how many) had been shown as
the reader's own value, "{'each': [32, 1000]}" (a TA's audit 27, p4_replicate)."""
from __future__ import annotations

from grader.reports.student_view import readings


def _shown(value):
    answers = {"values": {"part2.chunk_shapes": value}, "origin": {"part2.chunk_shapes": "practical4/answers.yaml"}}
    return readings(answers)[0]["value"]


def test_one_shape_for_every_chunk_is_shown_as_the_student_said_it():
    assert _shown({"each": [32, 1000]}) == "32 × 1000 each"
    assert _shown({"each": 32}) == "32 each"


def test_the_other_answers_are_shown_as_before():
    assert _shown([[32, 1000], [32, 1000]]) == "32, 1000, 32, 1000"
    assert _shown({"value": "yes", "explanation": "..."}) == "yes"
    assert _shown([{"gpu": 0, "memory_mib": 1012}]) == "gpu=0 memory_mib=1012"
