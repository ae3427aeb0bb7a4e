"""How many cores a grading may use, so a submission costs the same CPU on any machine.

A machine's cores are shared by the batch's workers; a worker's share by the runs its checks
start side by side; a run's share by its threads. Without this every process starts one
thread per core (torch, OpenMP, BLAS), and on a 16-core node eight workers fight over 128
threads. The batch writes each worker's share into PDL_CPU_SHARE for its gradings; a grading
without one (a student's `pdl-grade check`, `pytest grader/`) has the whole machine.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

CPU_SHARE_ENV = "PDL_CPU_SHARE"
# Cores one grading keeps busy when it has them: its checks run a few student runs side by
# side (grader/checks/conftest.py), most of them single-threaded. The batch's default
# --workers gives each worker this many.
CORES_PER_GRADING = 2
MOST_RUNS_AT_ONCE = 4          # runs of one grading side by side, at most
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cgroup_quota(root: Path = Path("/sys/fs/cgroup"),
                 own: Path = Path("/proc/self/cgroup")) -> float | None:
    """Cores this process's cgroup may use (v2 cpu.max, v1 cfs quota), or None if unlimited."""
    try:
        for line in own.read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":                              # v2
                fields = (root / path.lstrip("/") / "cpu.max").read_text().split()
                if fields and fields[0] != "max":
                    return int(fields[0]) / int(fields[1])
            elif "cpu" in controllers.split(","):              # v1
                folder = root / "cpu,cpuacct" if (root / "cpu,cpuacct").is_dir() else root / "cpu"
                folder = folder / path.lstrip("/")
                quota = int((folder / "cpu.cfs_quota_us").read_text())
                if quota > 0:
                    return quota / int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError, IndexError, ZeroDivisionError):
        pass
    return None


def machine_cpus() -> float:
    """Cores this process may run on: its affinity mask, lowered by a cgroup CPU quota (a
    container's or a SLURM job's)."""
    cores = float(len(os.sched_getaffinity(0)) or 1)
    quota = cgroup_quota()
    return max(1.0, min(cores, quota)) if quota else cores


def default_workers(cpus: float | None = None) -> int:
    """Gradings at once that keep this machine busy without fighting: one per
    CORES_PER_GRADING cores."""
    cpus = machine_cpus() if cpus is None else cpus
    return max(1, int(cpus // CORES_PER_GRADING))


def worker_share(workers: int, cpus: float | None = None) -> float:
    """Each of `workers` gradings' share of the machine's cores."""
    cpus = machine_cpus() if cpus is None else cpus
    return max(1.0, cpus / max(1, workers))


def grading_share(environ=os.environ) -> float:
    """This grading's cores: the batch's PDL_CPU_SHARE, else the whole machine."""
    try:
        share = float(environ.get(CPU_SHARE_ENV, ""))
        if math.isfinite(share) and share >= 1:
            return share
    except ValueError:
        pass
    return machine_cpus()


def runs_at_once(share: float) -> int:
    """How many of a grading's runs go side by side on `share` cores."""
    return max(1, min(MOST_RUNS_AT_ONCE, int(share)))


def threads_per_run(share: float) -> int:
    """Threads one run may start (torch's intra-op pool, OpenMP, BLAS) when runs_at_once(share)
    runs share `share` cores."""
    return max(1, int(share // runs_at_once(share)))


def thread_environment(threads: int) -> dict[str, str]:
    """The variables that set every library's thread count in a run."""
    return {name: str(threads) for name in THREAD_VARIABLES}
