"""A mistyped answer id in a student's answers.yaml is named with the question it likely meant
(a student's audit, users28: `task2.depth_improve_speed` was "not a question of this sheet" in
one place and `task2.depth_improves_speed` "not found" in another), as the instructor's
overrides already were; one helper for both (grader/common/text.py `did_you_mean`)."""
from __future__ import annotations

import yaml

from grader.answers.sheet import read_sheet, template_questions
from grader.common.text import did_you_mean


def sheet(tmp_path, answers: dict):
    path = tmp_path / "answers.yaml"
    path.write_text(yaml.safe_dump({"answers": answers}))
    return path


def test_a_typo_is_told_the_question_it_likely_meant(tmp_path):
    read = read_sheet(sheet(tmp_path, {"task2.depth_improve_speed": {"value": False},
                                       "task2.step_time_table": {"rows": []}}),
                      template_questions("hw3"), "hw3/answers.yaml")
    assert ("hw3/answers.yaml: 'task2.depth_improve_speed' is not a question of this sheet "
            "(did you mean 'task2.depth_improves_speed'?); ignored (it says: False)"
            ) in read.problems, read.problems


def test_practical6s_too(tmp_path):
    read = read_sheet(sheet(tmp_path, {"data.split_automaticaly": {"value": False}}),
                      template_questions("practical6"), "practical6/answers.yaml")
    assert any("'data.split_automaticaly' is not a question of this sheet (did you mean "
               "'data.split_automatically'?)" in p for p in read.problems), read.problems


def test_a_key_of_the_students_own_far_from_any_question_gets_no_guess(tmp_path):
    read = read_sheet(sheet(tmp_path, {"my.notes": {"value": "ran on the cluster"}}),
                      template_questions("hw3"), "hw3/answers.yaml")
    assert any("'my.notes' is not a question of this sheet; ignored (it says: ran on the "
               "cluster)" in p for p in read.problems), read.problems


def test_a_question_the_sheet_answers_is_no_guess(tmp_path):
    """`task5.comment_2gpus` beside an answered `task5.to_calls_2gpus` is a remark, not a typo."""
    read = read_sheet(sheet(tmp_path, {"task5.to_calls_2gpus": {"value": 20},
                                       "task5.transfers_2gpus": {"value": 1},
                                       "task5.to_calls_5gpus": {"value": 20},
                                       "task5.transfers_5gpus": {"value": 4},
                                       "task5.comment_2gpus": {"value": "counted by hand"}}),
                      template_questions("hw3"), "hw3/answers.yaml")
    assert any("'task5.comment_2gpus' is not a question of this sheet; ignored" in p
               for p in read.problems), read.problems


def test_the_overrides_and_the_sheet_share_one_suggestion():
    from grader.scoring import overrides
    assert overrides.did_you_mean is did_you_mean
    assert did_you_mean("p.q9", ["p.q1", "p.q2"]) == " (did you mean 'p.q2' or 'p.q1'?)"
    assert did_you_mean("zzz", ["p.q1"]) == ""
