"""Rubrics and scores: rubric files -> validated Rubric; pytest-json-report -> scores;
scores -> result.json. Nothing here imports torch or student code."""
from grader.scoring.result import SCHEMA, build_result, hardware_info, read_result, write_result
from grader.scoring.rubric import Rubric, RubricError, default_rubrics_dir, load_rubric, load_rubrics, parse_rubric
from grader.scoring.score import AssignmentScore, errored_assignment, score_assignment

__all__ = [
    "SCHEMA", "AssignmentScore", "Rubric", "RubricError", "build_result", "default_rubrics_dir",
    "errored_assignment", "hardware_info", "load_rubric", "load_rubrics", "parse_rubric",
    "read_result", "score_assignment", "write_result",
]
