"""The SLURM backend of `pdl-grade batch`: one job per submission.

`SlurmBackend.run_jobs` has the signature of `grader.batch.scheduler.run_jobs`, so the batch
pipeline prepares submissions, skips unchanged ones and records outcomes exactly as it does
for local gradings; only *where* the grading runs differs.

Each job runs a shell script the batch writes into the job's own folder (on the shared
filesystem): it prints the node and CUDA_VISIBLE_DEVICES, runs the configured set-up lines,
says which Python it found, then `python -m grader grade SUBMISSION --out FOLDER --assignment
...` with the Python of grader/cluster/config.py (`python3` of the environment the set-up
lines prepare, where there are some). `dry_run` writes the script and says the sbatch
command that would submit it, submitting nothing. The grade command
writes FOLDER/result.json; when SLURM says the job COMPLETED with exit 0, the batch reads
that file as JSON (`grader.scoring.read_result`). Nothing is pickled in either direction,
so nothing a submission's code produces is ever unpickled by the batch.

A job that sbatch rejects (e.g. more GPUs than any node has), that fails, is cancelled,
times out or is lost becomes an outcome with SLURM's state and reason as its message.

Crash safety: jobs are named after the batch's output folder (a hash, no student names in
the queue). A batch that is interrupted cancels its jobs; one that was SIGKILLed leaves
them, and the next batch on the same folder cancels them before submitting anew (their
folders under work/ were removed, and only the batch process writes the gradebook), so each
submission is still recorded exactly once.
"""
from __future__ import annotations

import hashlib
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from grader.batch.scheduler import GradeFn, GradeJob, JobOutcome
from grader.cluster import slurm
from grader.cluster.config import SlurmConfigError, SlurmSettings
from grader.common.text import file_tail, last_line_suffix

SCRIPT_NAME = "slurm-job.sh"
LOG_NAME = "slurm-job.log"
GRADER_PARENT = Path(__file__).resolve().parents[2]      # the folder holding grader/


@dataclass
class SlurmOutcome(JobOutcome):
    """A JobOutcome with SLURM's account of it; the runner records `reason` as the message."""
    slurm_job: str | None = None


@dataclass
class _Running:
    job: GradeJob
    job_id: str
    gpus: int
    submitted_at: float
    submitted_mono: float


class SlurmBackend:
    def __init__(self, settings: SlurmSettings, rubrics: dict | None = None):
        self.settings = settings
        self._rubrics = rubrics

    def check(self) -> None:
        """Before the batch: SLURM's client tools must be here (this is a submit host)."""
        missing = [tool for tool in ("sbatch", "squeue", "scontrol", "scancel") if shutil.which(tool) is None]
        if missing:
            raise SlurmConfigError(f"{', '.join(missing)} not found: --backend slurm needs a SLURM "
                                   f"submit host (the client commands on PATH)")

    # -- what to ask for --------------------------------------------------------------------
    def gpus_for(self, job: GradeJob) -> int:
        if self.settings.gpus_per_job is not None:
            return self.settings.gpus_per_job
        rubrics = self._rubrics
        if rubrics is None:
            from grader.scoring import load_rubrics
            rubrics = self._rubrics = load_rubrics(job.rubrics_dir)
        return max((rubrics[a].gpus for a in job.assignments), default=0)

    def grade_command(self, job: GradeJob) -> list[str]:
        argv = [*self.settings.grade_command(), str(Path(job.submission).resolve()),
                "--out", str(Path(job.out).resolve())]
        for assignment in job.assignments:
            argv += ["--assignment", assignment]
        argv += ["--check-timeout", f"{job.check_timeout:g}"]
        if job.rubrics_dir:
            argv += ["--rubrics", str(Path(job.rubrics_dir).resolve())]
        if job.submitted_at:
            argv += ["--submitted-at", job.submitted_at]
        return argv

    def sbatch_args(self, job: GradeJob, gpus: int, job_name: str) -> list[str]:
        s, out = self.settings, Path(job.out).resolve()
        args = [f"--job-name={job_name}", f"--output={out / LOG_NAME}", f"--chdir={out}",
                "--nodes=1", "--ntasks=1", "--no-requeue", "--export=ALL"]
        if s.partition:
            args.append(f"--partition={s.partition}")
        if s.time:
            args.append(f"--time={s.time}")
        if gpus > 0:
            args.append(f"--gres={s.gres_name}:{gpus}")
        if s.cpus_per_task:
            args.append(f"--cpus-per-task={s.cpus_per_task}")
        if s.mem:
            args.append(f"--mem={s.mem}")
        if s.account:
            args.append(f"--account={s.account}")
        if s.qos:
            args.append(f"--qos={s.qos}")
        return args + list(s.sbatch_args)

    def job_script(self, job: GradeJob) -> str:
        program = self.settings.grade_command()[0]
        lines = ["#!/bin/bash",
                 "# Written by pdl-grade batch; runs one grading on the node.",
                 'echo "pdl-grade: SLURM job ${SLURM_JOB_ID:-?} on $(hostname)'
                 ' CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"',
                 *self.settings.setup,
                 f"export PYTHONPATH={shlex.quote(str(GRADER_PARENT))}${{PYTHONPATH:+:$PYTHONPATH}}",
                 # Which interpreter the set-up lines left: the first thing to read in the log
                 # of a job whose environment was not the one meant.
                 f'echo "pdl-grade: grading with $(command -v {shlex.quote(program)} || '
                 f'echo {shlex.quote(program)} not found)"',
                 "exec " + shlex.join(self.grade_command(job)), ""]
        return "\n".join(lines)

    # -- the scheduler ----------------------------------------------------------------------
    def run_jobs(self, jobs: Iterable[GradeJob], grade_fn: GradeFn | None = None,
                 workers: int = 1, timeout_s: float | None = None) -> Iterator[SlurmOutcome]:
        """Submit every job (at most `max_jobs` queued at once), yield an outcome per job as
        SLURM finishes it. `grade_fn` and `workers` belong to the local backend: here the
        grading is the grade command and the cluster decides how many run at once."""
        if self.settings.time is None and timeout_s:
            self.settings = self.settings.with_time_from(timeout_s)
        pending = iter(jobs)
        running: dict[str, _Running] = {}
        exhausted = False
        limit = self.settings.max_jobs
        job_name = None
        try:
            while True:
                while not exhausted and (limit is None or len(running) < limit):
                    job = next(pending, None)
                    if job is None:
                        exhausted = True
                        break
                    if job_name is None:
                        job_name = batch_job_name(Path(job.out).resolve().parents[1])
                        slurm.scancel(name=job_name)   # left by a SIGKILLed batch on this folder
                    submitted = self._submit(job, job_name)
                    if isinstance(submitted, SlurmOutcome):
                        yield submitted
                    else:
                        running[submitted.job_id] = submitted
                if not running:
                    return
                time.sleep(self.settings.poll_interval_s)
                states = slurm.query(list(running))
                for job_id in list(running):
                    outcome = self._settle(running[job_id], states.get(job_id))
                    if outcome is not None:
                        del running[job_id]
                        yield outcome
        finally:
            # Interrupted (Ctrl-C, an exception in the caller): leave no grading queued.
            if running:
                slurm.scancel(list(running))

    def dry_run(self, job: GradeJob, timeout_s: float | None = None) -> str:
        """The job's script written into its folder as a submission writes it, and the sbatch
        command line that would submit it; nothing is submitted."""
        if self.settings.time is None and timeout_s:
            self.settings = self.settings.with_time_from(timeout_s)
        script = self._write_script(job)
        name = batch_job_name(Path(job.out).resolve().parents[1])
        return shlex.join(["sbatch", "--parsable",
                           *self.sbatch_args(job, self.gpus_for(job), name), str(script)])

    def _write_script(self, job: GradeJob) -> Path:
        out = Path(job.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        script = out / SCRIPT_NAME
        script.write_text(self.job_script(job), encoding="utf-8")
        script.chmod(0o755)
        return script

    def _submit(self, job: GradeJob, job_name: str) -> _Running | SlurmOutcome:
        script = self._write_script(job)
        now, mono = time.time(), time.monotonic()
        gpus = self.gpus_for(job)
        try:
            job_id = slurm.sbatch(script, self.sbatch_args(job, gpus, job_name))
        except slurm.SlurmError as problem:
            ask = f"{gpus} GPU(s)" + (f" on partition {self.settings.partition}" if self.settings.partition else "")
            return SlurmOutcome(job, "crashed", None, now, 0.0, "",
                                reason=f"SLURM rejected the job ({ask}): {problem}")
        return _Running(job, job_id, gpus, now, mono)

    def _settle(self, run: _Running, info: slurm.JobInfo | None) -> SlurmOutcome | None:
        """The outcome of a job that ended, or None while it is queued or running."""
        elapsed = time.monotonic() - run.submitted_mono
        if info is None:
            # Not known to scontrol, sacct or the jobcomp file. Right after sbatch the
            # controller may not list it yet; long after, it is lost.
            if elapsed < 10 * self.settings.poll_interval_s + 30:
                return None
            return self._outcome(run, "crashed", None, None,
                                 f"SLURM job {run.job_id} vanished: neither scontrol, sacct nor "
                                 f"the jobcomp file knows it")
        if info.state == "PENDING" and info.reason in slurm.HOPELESS_PENDING:
            slurm.scancel([run.job_id])
            return self._outcome(run, "crashed", None, info,
                                 f"SLURM job {run.job_id} cannot start ({info.reason}); cancelled")
        if not info.terminal:
            return None
        tail = file_tail(Path(run.job.out) / LOG_NAME)
        where = f"SLURM job {run.job_id}"
        if info.state == "COMPLETED" and info.exit_code == 0:
            self._wait_for_result(run)
            return self._outcome(run, "finished", 0, info, None, tail)
        if info.state == "TIMEOUT":
            return self._outcome(run, "timed_out", info.exit_code, info,
                                 f"{where} reached its time limit ({info.time_limit}) and was "
                                 f"stopped by SLURM (TIMEOUT)", tail)
        reason = f" ({info.reason})" if info.reason else ""
        if info.state == "CANCELLED":
            message = f"{where} was cancelled{reason}"
        elif info.state in ("FAILED", "COMPLETED"):
            code = f"signal {info.signal}" if info.signal else f"exit {info.exit_code}"
            message = f"{where} FAILED ({code}){reason}" + last_line_suffix(tail)
        else:                                   # NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ...
            message = f"{where} ended {info.state}{reason}" + last_line_suffix(tail)
        return self._outcome(run, "crashed", info.exit_code, info, message, tail)

    def _outcome(self, run: _Running, status: str, exit_code: int | None,
                 info: slurm.JobInfo | None, reason: str | None, tail: str = "") -> SlurmOutcome:
        started = info.start_time if info and info.start_time else run.submitted_at
        duration = info.run_time_s if info and info.run_time_s is not None else (
            time.monotonic() - run.submitted_mono)
        return SlurmOutcome(run.job, status, exit_code, started, duration, tail,
                            reason=reason, slurm_job=run.job_id)

    def _wait_for_result(self, run: _Running) -> None:
        """A shared filesystem may show the node's result.json on this host a little late."""
        deadline = time.monotonic() + self.settings.result_wait_s
        target = Path(run.job.out) / "result.json"
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.5)


# Each node's own disk on a cluster (what the submit host sees there is not what a node sees).
NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm")


def node_local(path: Path) -> str | None:
    """The node-local folder `path` is under, or None."""
    resolved = Path(path).resolve()
    for top in NODE_LOCAL:
        if resolved == Path(top) or Path(top) in resolved.parents:
            return top
    return None


def batch_job_name(out: Path) -> str:
    """The name of every job of batches writing to `out` (no student names in the queue)."""
    return "pdl-grade-" + hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:10]


