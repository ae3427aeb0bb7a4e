"""A grading uses its share of the cores, on any machine (issue 15, point 3): the batch's
default --workers, each worker's share, the runs side by side and the threads of each."""
import pytest

from grader.common import cpu_share
from grader.common.cpu_share import (CPU_SHARE_ENV, cgroup_quota, default_workers,
                                     grading_share, runs_at_once, threads_per_run, worker_share)


@pytest.mark.parametrize("cpus, workers", [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8), (64, 32)])
def test_the_default_workers_keep_two_cores_each(cpus, workers):
    assert default_workers(cpus) == workers


@pytest.mark.parametrize("share, runs, threads", [
    (1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 4, 1), (8, 4, 2), (16, 4, 4)])
def test_a_share_is_split_into_runs_then_threads(share, runs, threads):
    assert (runs_at_once(share), threads_per_run(share)) == (runs, threads)
    assert runs * threads <= max(share, 1), "more threads than the share's cores"


def test_each_worker_gets_its_part_and_never_less_than_a_core():
    assert worker_share(8, cpus=16) == 2 and worker_share(1, cpus=16) == 16
    assert worker_share(4, cpus=2) == 1


@pytest.mark.parametrize("value", ["", "0", "-3", "nan", "inf", "lots"])
def test_a_grading_without_a_usable_share_has_the_machine(value, monkeypatch):
    monkeypatch.setattr(cpu_share, "machine_cpus", lambda: 6.0)
    assert grading_share({CPU_SHARE_ENV: value}) == 6.0
    assert grading_share({CPU_SHARE_ENV: "2.5"}) == 2.5


def test_a_cgroup_quota_lowers_the_cores(tmp_path):
    """A container's or SLURM job's CPU quota counts, v2 and v1."""
    (tmp_path / "self_v2").write_text("0::/job\n")
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "cpu.max").write_text("300000 100000\n")
    assert cgroup_quota(tmp_path, tmp_path / "self_v2") == 3.0
    (tmp_path / "job" / "cpu.max").write_text("max 100000\n")
    assert cgroup_quota(tmp_path, tmp_path / "self_v2") is None

    (tmp_path / "self_v1").write_text("4:memory:/x\n2:cpu,cpuacct:/slurm/job1\n")
    folder = tmp_path / "cpu,cpuacct" / "slurm" / "job1"
    folder.mkdir(parents=True)
    (folder / "cpu.cfs_quota_us").write_text("150000\n")
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota(tmp_path, tmp_path / "self_v1") == 1.5
    (folder / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_quota(tmp_path, tmp_path / "self_v1") is None


def test_a_run_gets_its_threads_from_the_gradings_share(tmp_path, monkeypatch):
    """What the sandboxed run itself sees: the thread variables torch, OpenMP and BLAS read."""
    from grader.harness.execute import run_script
    submission, scratch = tmp_path / "submission", tmp_path / "scratch"
    (submission / "p").mkdir(parents=True)
    scratch.mkdir()
    (submission / "p" / "s.py").write_text(
        "import os\nprint([os.environ.get(n) for n in "
        "('OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS')])\n")
    for share, threads in (("1", "1"), ("16", "4")):
        monkeypatch.setenv(CPU_SHARE_ENV, share)
        observation = run_script(submission, "p/s.py", gpus=1, scratch_root=scratch,
                                 force_virtual=True, timeout_s=120)
        assert observation.ok, observation.problem()
        assert observation.stdout.strip() == str([threads] * 3), (share, observation.stdout)


def test_the_batch_gives_its_gradings_their_share_and_takes_it_back(monkeypatch):
    from grader.batch.pipeline import _cpu_share
    import os
    monkeypatch.setattr(cpu_share, "machine_cpus", lambda: 16.0)
    monkeypatch.delenv(CPU_SHARE_ENV, raising=False)
    with _cpu_share(4):
        assert os.environ[CPU_SHARE_ENV] == "4"
    assert CPU_SHARE_ENV not in os.environ
    with _cpu_share(None):          # SLURM: the job's node decides
        assert CPU_SHARE_ENV not in os.environ


def test_batch_workers_default_to_what_the_machine_keeps_busy(monkeypatch, tmp_path):
    from grader.cli import batch
    monkeypatch.setattr(cpu_share, "machine_cpus", lambda: 16.0)
    seen = {}

    def fake_run_batch(submissions, out, options, **kwargs):
        seen["workers"] = options.workers
        raise SystemExit(0)
    monkeypatch.setattr("grader.batch.pipeline.run_batch", fake_run_batch)
    import argparse
    parser = argparse.ArgumentParser()
    batch.add_parsers(parser.add_subparsers())
    options = parser.parse_args(["batch", str(tmp_path), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit):
        batch.run(options)
    assert seen["workers"] == 8
