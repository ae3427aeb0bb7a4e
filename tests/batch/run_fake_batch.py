"""Run a batch with the fake grader in this process: `python run_fake_batch.py SUBMISSIONS OUT`
(for the test that SIGKILLs a batch midway)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fake_graders import fake_grade  # noqa: E402
from grader.batch.runner import run_batch  # noqa: E402

run_batch(Path(sys.argv[1]), Path(sys.argv[2]), ["practical4"], workers=2, grade_fn=fake_grade,
          live=False)
