"""Rubrics and scores: rubric files -> validated Rubric; the checks' results (pytest-json-report)
-> scores; scores -> result.json. Nothing here imports torch or student code."""
from grader.scoring.overrides import (NO_OVERRIDES, ItemOverride, Overrides, OverridesError, Release,
                                      check_overrides, class_entry, is_class_overrides,
                                      read_class_overrides_file, read_overrides_file)
from grader.scoring.result import (SCHEMA, Result, build_result, hardware_info, read_result,
                                   write_result)
from grader.scoring.rubric import (Rubric, RubricError, assignment_ids, default_rubrics_dir,
                                   load_rubric, load_rubrics, parse_rubric)
from grader.scoring.score import (AssignmentScore, checks_not_run, errored_assignment,
                                  grading_problems, score_assignment)

__all__ = [
    "NO_OVERRIDES", "SCHEMA", "AssignmentScore", "ItemOverride", "Overrides", "OverridesError",
    "Release", "Result", "Rubric", "RubricError", "assignment_ids", "build_result",
    "check_overrides", "checks_not_run", "class_entry", "default_rubrics_dir", "errored_assignment",
    "grading_problems", "hardware_info", "is_class_overrides",
    "load_rubric", "load_rubrics", "parse_rubric", "read_class_overrides_file",
    "read_overrides_file", "read_result", "score_assignment", "write_result",
]
