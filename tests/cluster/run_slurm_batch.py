"""Run a batch through the SLURM backend with the fake grade command, in its own process
(for the tests that SIGKILL a batch, or let one run beside the others):
`python run_slurm_batch.py SUBMISSIONS OUT [--time T] [--gpus N]`."""
import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from grader.batch.runner import run_batch  # noqa: E402
from grader.cluster import SlurmBackend, SlurmSettings  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("submissions")
parser.add_argument("out")
parser.add_argument("--time", default=None)
parser.add_argument("--gpus", type=int, default=None)
options = parser.parse_args()
settings = SlurmSettings.load(partition="gpu", time=options.time, gpus_per_job=options.gpus,
                              command=[sys.executable, str(HERE / "fake_grade_cmd.py")],
                              poll_interval_s=0.3, result_wait_s=5)
report = run_batch(Path(options.submissions), Path(options.out), ["practical4"],
                   backend=SlurmBackend(settings), live=False)
sys.exit(1 if report.failed else 0)
