"""Run a batch through the SLURM backend with the fake grade command, in its own process (for the
tests that SIGKILL a batch, or let one run beside the others):
`python -m tests.support.run_slurm_batch SUBMISSIONS OUT [--time T] [--gpus N]`, with the
repository on PYTHONPATH."""
import argparse
import sys
from pathlib import Path

from grader.batch.pipeline import BatchOptions, run_batch
from grader.cluster import SlurmBackend, SlurmSettings
from tests.support import fake_grade_command

parser = argparse.ArgumentParser()
parser.add_argument("submissions")
parser.add_argument("out")
parser.add_argument("--time", default=None)
parser.add_argument("--gpus", type=int, default=None)
options = parser.parse_args()
settings = SlurmSettings.load(partition="gpu", time=options.time, gpus_per_job=options.gpus,
                              command=fake_grade_command(), poll_interval_s=0.3, result_wait_s=5)
summary = run_batch(Path(options.submissions), Path(options.out),
                    BatchOptions(assignments=("practical4",)), backend=SlurmBackend(settings),
                    live=False)
sys.exit(1 if summary.failed else 0)
