"""`pdl-grade batch --backend slurm`: grade each submission as a SLURM job.

Modules: `config` (partition, GPUs, time limit... from options and a YAML file), `slurm` (the
sbatch/scontrol/scancel/sacct client and the job-state parsing), `backend` (submits one job
per submission and turns finished jobs into the outcomes `grader.batch.pipeline` records).
The dependency goes one way: the cluster uses the batch's job types; the batch never imports
the cluster (the CLI hands a backend to `run_batch`).

Results come back as the result.json the job's `python -m grader grade` writes in its
folder on the shared filesystem; the batch reads it as JSON. Nothing is pickled either way.
"""
from grader.cluster.backend import SlurmBackend
from grader.cluster.config import SlurmConfigError, SlurmSettings

__all__ = ["SlurmBackend", "SlurmConfigError", "SlurmSettings"]
