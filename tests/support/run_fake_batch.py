"""Run a batch with the fake grader in this process (for the test that SIGKILLs a batch midway):
`python -m tests.support.run_fake_batch SUBMISSIONS OUT`, with the repository on PYTHONPATH."""
import sys
from pathlib import Path

from grader.batch.pipeline import BatchOptions, run_batch
from tests.support.fake_graders import fake_grade

run_batch(Path(sys.argv[1]), Path(sys.argv[2]), BatchOptions(assignments=("practical4",), workers=2),
          grade_fn=fake_grade, live=False)
