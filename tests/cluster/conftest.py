"""A real single-node SLURM cluster for the whole session (see slurm_cluster.py); skipped,
with the reason, where slurm-wlm/munge are not installed or we are not root."""
import os

import pytest

from slurm_cluster import SlurmCluster, missing_tools


@pytest.fixture(scope="session")
def slurm_cluster():
    missing = missing_tools()
    if missing:
        pytest.skip(f"SLURM tests need Debian's slurm-wlm and munge "
                    f"(apt-get install slurm-wlm munge); missing: {', '.join(missing)}")
    if os.geteuid() != 0:
        pytest.skip("SLURM tests start slurmctld/slurmd as root and munged as the munge user: run as root")
    saved = os.environ.get("SLURM_CONF")
    with SlurmCluster(gpus=4, cpus=32, partition="gpu") as cluster:
        os.environ.update(cluster.env)       # sbatch/scontrol/scancel of the backend find it
        try:
            yield cluster
        finally:
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved
