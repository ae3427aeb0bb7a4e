"""Grading one submission, in three stages with typed values between them:

    run      submission -> RawRun     the checks' results and the integrity scan, on disk
                                      (grader/grading/run.py; raw.py reads them back)
    score    RawRun + rubrics + overrides + submission time -> Result
                                      (grader/grading/score.py; runs no code)
    publish  Result -> result.json, report.md, report.html, instructor.md
                                      (grader/grading/publish.py; one atomic writer)

`grade_submission` runs all three (`pdl-grade grade`, a batch's grading child, a SLURM job);
`rescore_submission` runs the last two on a folder a grading left (`pdl-grade grade --rescore`;
the batch re-scores through `score_run` directly). docs/architecture.md shows the whole flow.
"""
from grader.grading.grade import grade_submission, rescore_submission
from grader.grading.publish import GRADING_FORMATS, RESULT_FILE, publish, write_rendered
from grader.grading.raw import AssignmentRun, RawRun, RawRunError
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S, run_submission
from grader.grading.score import same_scores, score_run

__all__ = [
    "DEFAULT_CHECK_TIMEOUT_S", "GRADING_FORMATS", "RESULT_FILE", "AssignmentRun", "RawRun",
    "RawRunError", "grade_submission", "publish", "rescore_submission", "run_submission",
    "same_scores", "score_run", "write_rendered",
]
