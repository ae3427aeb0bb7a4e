"""The SLURM backend of `pdl-grade batch`: one job per submission.

`SlurmBackend.run_jobs` has the signature of `grader.batch.scheduler.run_jobs`, so the batch
pipeline prepares submissions, skips unchanged ones and records outcomes exactly as it does
for local gradings; only *where* the grading runs differs.

Each job runs a shell script the batch writes into the job's own folder (on the shared
filesystem). The script holds its sbatch options as `#SBATCH` lines too, so `sbatch SCRIPT`
alone submits the same job (how a dry run's script is tried on one student). It prints the
node and CUDA_VISIBLE_DEVICES, hands the grading the batch's run memory and the job's cores,
runs the configured set-up lines, takes the grader those lines provide (else this checkout,
on PYTHONPATH), says which Python and which grader it found, then runs `python -m grader
grade SUBMISSION --out FOLDER --assignment ...` under the batch's --timeout (`timeout`), with
the Python of grader/cluster/config.py (`python3` of the environment the set-up lines
prepare, where there are some). What a job asks for (cores, memory, time) is derived in
config.py and explained in the script's comments. `dry_run` writes the script, with a copy
of the unpacked submission beside it, and says the sbatch command that would submit it,
submitting nothing. The grade command
writes FOLDER/result.json; when SLURM says the job COMPLETED with exit 0, the batch reads
that file as JSON (`grader.scoring.read_result`). Nothing is pickled in either direction,
so nothing a submission's code produces is ever unpickled by the batch.

A job that sbatch rejects (e.g. more GPUs than any node has), that fails, is cancelled,
times out or is lost becomes an outcome with SLURM's state and reason as its message. A
grading stopped by its own --timeout in the script is recorded as timed out, as a local one.

Jobs are named after their submission key (`job_name`), so squeue and sacct tell the
students apart; every job of batches writing to one output folder carries that folder's tag
(`batch_tag`, a hash) as its `--comment`. Crash safety: a batch that is interrupted cancels
its jobs; one that was SIGKILLed leaves them, and the next batch on the same folder cancels
the jobs with its tag before submitting anew (their folders under work/ were removed, and
only the batch process writes the gradebook), so each submission is still recorded exactly
once.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from grader.batch.scheduler import GradeFn, GradeJob, JobOutcome
from grader.cluster import slurm
from grader.cluster.config import (GRADER_MEMORY_MIB, JOB_MARGIN_S, TIMEOUT_KILL_AFTER_S,
                                   SlurmConfigError, SlurmSettings, mib_to_slurm,
                                   seconds_to_time, slurm_size_mib, time_to_seconds)
from grader.common.cpu_share import CPU_SHARE_ENV
from grader.common.exit_codes import GRADING_PROBLEM
from grader.common.run_memory import RUN_MEMORY_ENV, run_memory_bytes
from grader.common.text import file_tail, last_line_suffix

SCRIPT_NAME = "slurm-job.sh"
LOG_NAME = "slurm-job.log"
GRADER_PARENT = Path(__file__).resolve().parents[2]      # the folder holding grader/
# A dry run's copy of the unpacked submission, beside its script: the batch's scratch copy
# is removed when the dry run ends.
DRY_RUN_SUBMISSION = "submission"
# The exit status and last log line of a job whose grading its own --timeout stopped.
TIMED_OUT_EXIT = 124
TIMED_OUT_MARK = "pdl-grade: the grading took longer than"
# SLURM takes job names up to 1024 bytes; sacct's database keeps 255; squeue shows 8
# characters by default, sacct 10: the key's start is what people see.
JOB_NAME_CHARS = 64


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
        self._timeout_s: float | None = None     # the batch's --timeout, once it is known
        self._time_from_timeout = False          # `time` was derived from it
        self._warned = False

    def prepare(self, timeout_s: float | None) -> None:
        """The batch's per-submission timeout: the script stops the grading at it, and the
        job's time limit (without a `time`) leaves JOB_MARGIN_S over it."""
        if timeout_s:
            self._timeout_s = float(timeout_s)
            if self.settings.time is None:
                self.settings = self.settings.with_time_from(timeout_s)
                self._time_from_timeout = True

    def warnings(self) -> list[str]:
        """What in the settings works against the grading: a `time` with no margin over the
        batch's --timeout, a `mem` below what the grading's runs may use."""
        s, said = self.settings, []
        if s.time is not None and self._timeout_s:
            limit = time_to_seconds(s.time)
            if limit < self._timeout_s + JOB_MARGIN_S:
                said.append(
                    f"SLURM time {s.time} leaves less than {JOB_MARGIN_S // 60} min over the "
                    f"batch's --timeout ({self._timeout_s:g} s) to start and write results: a "
                    "slow grading is stopped by SLURM (TIMEOUT, the student's report says "
                    "SLURM's limit) rather than by the grader; leave `time` out (it then "
                    f"follows --timeout) or give at least "
                    f"{seconds_to_time(self._timeout_s + JOB_MARGIN_S)}")
        if s.mem is not None and str(s.mem).strip() != "0":
            needed = s.needed_memory_mib(run_memory_bytes())
            if slurm_size_mib(s.mem) < needed:
                said.append(
                    f"SLURM mem {s.mem} is less than a grading may use "
                    f"({s.runs_side_by_side()} runs side by side x "
                    f"{mib_to_slurm(run_memory_bytes() // 2**20)} (--memory) + "
                    f"{mib_to_slurm(GRADER_MEMORY_MIB)} for the grader = "
                    f"{mib_to_slurm(needed)}): SLURM stops the whole grading (OUT_OF_MEMORY) "
                    "where the grader would stop one run and say so; lower --memory, "
                    "cpus_per_task, or raise mem")
        return said

    def _warn_once(self) -> None:
        if not self._warned:
            self._warned = True
            for line in self.warnings():
                print(f"pdl-grade batch: warning: {line}", file=sys.stderr)

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

    def sbatch_args(self, job: GradeJob, gpus: int, tag: str | None = None) -> list[str]:
        """The job's sbatch options; `tag` (the batch's, as --comment) marks the jobs a
        SIGKILLed batch leaves for the next one to cancel."""
        s, out = self.settings, Path(job.out).resolve()
        args = [f"--job-name={job_name(job.student.key, self.settings.job_names)}",
                f"--output={out / LOG_NAME}",
                f"--chdir={out}", "--nodes=1", "--ntasks=1", "--no-requeue", "--export=ALL"]
        if tag:
            args.append(f"--comment={tag}")
        if s.partition:
            args.append(f"--partition={s.partition}")
        if s.time:
            args.append(f"--time={s.time}")
        if gpus > 0:
            args.append(f"--gres={s.gres_name}:{gpus}")
        args.append(f"--cpus-per-task={s.cpus()}")
        args.append(f"--mem={s.memory(run_memory_bytes())}")
        if s.account:
            args.append(f"--account={s.account}")
        if s.qos:
            args.append(f"--qos={s.qos}")
        return args + list(s.sbatch_args)

    def job_script(self, job: GradeJob, gpus: int | None = None, tag: str | None = None) -> str:
        """The script a node runs: its sbatch options as #SBATCH lines (so `sbatch SCRIPT`
        alone submits the same job), why it asks for what it asks, then the grading."""
        s = self.settings
        gpus = self.gpus_for(job) if gpus is None else gpus
        program = s.grade_command()[0]
        python = shlex.quote(s.interpreter())
        checkout = shlex.quote(str(GRADER_PARENT))
        run_memory = run_memory_bytes()
        lines = ["#!/bin/bash",
                 *(f"#SBATCH {_directive(arg)}" for arg in self.sbatch_args(job, gpus, tag)),
                 f"# Written by pdl-grade batch: the grading of {_comment(job.student.key)} as "
                 "one SLURM job.",
                 "# `sbatch` of this file alone submits it as the batch does (the #SBATCH lines",
                 "# above are the options the batch passes); results go to --chdir's folder.",
                 "# What the job asks for (slurm.yaml: cpus_per_task, mem, time override it):",
                 f"#   --cpus-per-task={s.cpus()}: "
                 + (f"cpus_per_task of the SLURM settings; {s.runs_side_by_side()} run(s) of "
                    "student code side by side" if s.cpus_per_task else
                    f"one core for each run of student code side by side ({s.cpus()} at most)"),
                 f"#   --mem={s.memory(run_memory)}: "
                 + ("mem of the SLURM settings" if s.mem is not None else
                    f"{s.runs_side_by_side()} run(s) side by side x "
                    f"{mib_to_slurm(-(-run_memory // 2**20))} (each run's limit, --memory) + "
                    f"{mib_to_slurm(GRADER_MEMORY_MIB)} for the grader itself")]
        if s.time:
            lines.append(f"#   --time={s.time}: " + (
                f"the batch's --timeout ({self._timeout_s:g} s) + {JOB_MARGIN_S // 60} min to "
                "start and write results, so the grader's own timeout stops a slow grading"
                if self._time_from_timeout else "time of the SLURM settings (or --time)"))
        lines += [
            'echo "pdl-grade: SLURM job ${SLURM_JOB_ID:-?} on $(hostname)'
            ' CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"',
            "# Each run's memory limit (the batch's --memory), and the grading's cores: as many",
            "# runs side by side as the job has cores (grader/common/cpu_share.py).",
            f"export {RUN_MEMORY_ENV}={run_memory}",
            f"export {CPU_SHARE_ENV}=${{SLURM_CPUS_PER_TASK:-{s.cpus()}}}",
            *s.setup,
            "# The grader: the one the environment above provides (a venv or module with the",
            "# grader installed) wins, so the setup decides which grader grades; only where its",
            "# Python cannot import one is the submit host's checkout (on the filesystem the",
            "# nodes share) put on PYTHONPATH. The log's next line says which one ran.",
            f"if ! {python} -c 'import grader' >/dev/null 2>&1; then",
            f"    if [ ! -d {shlex.quote(str(GRADER_PARENT / 'grader'))} ]; then",
            f"        echo \"pdl-grade: {s.interpreter()} cannot import the grader and the "
            f"submit host's checkout {GRADER_PARENT} is not on this node: install the grader "
            "in the setup's environment or keep the checkout on the filesystem the nodes "
            "share\" >&2",
            "        exit 1",
            "    fi",
            f"    export PYTHONPATH={checkout}${{PYTHONPATH:+:$PYTHONPATH}}",
            "fi",
            # Which interpreter and grader the set-up lines left: the first thing to read in
            # the log of a job whose environment was not the one meant.
            f'echo "pdl-grade: grading with $(command -v {shlex.quote(program)} || '
            f'echo {shlex.quote(program)} not found)"',
            f'echo "pdl-grade: grader from $({python} -c {shlex.quote(_WHERE_GRADER)} '
            '2>/dev/null || echo nowhere)"']
        command = shlex.join(self.grade_command(job))
        if not self._timeout_s:
            lines += ["exec " + command, ""]
            return "\n".join(lines)
        limit = f"{self._timeout_s:g}"
        lines += [
            f"# The batch's --timeout ({limit} s): the grader stops the grading itself, and its",
            "# record says so, as a local batch's does; SLURM's --time is the backstop.",
            f"timeout --kill-after={TIMEOUT_KILL_AFTER_S} {limit} {command}",
            "status=$?",
            f'if [ "$status" -eq 124 ] || {{ [ "$status" -eq 137 ] && [ "$SECONDS" -ge '
            f'{int(self._timeout_s)} ]; }}; then',
            f'    echo "{TIMED_OUT_MARK} {limit} s (the batch\'s --timeout) and was stopped"',
            f"    exit {TIMED_OUT_EXIT}",
            "fi",
            'exit "$status"', ""]
        return "\n".join(lines)

    # -- the scheduler ----------------------------------------------------------------------
    def run_jobs(self, jobs: Iterable[GradeJob], grade_fn: GradeFn | None = None,
                 workers: int = 1, timeout_s: float | None = None) -> Iterator[SlurmOutcome]:
        """Submit every job (at most `max_jobs` queued at once), yield an outcome per job as
        SLURM finishes it. `grade_fn` and `workers` belong to the local backend: here the
        grading is the grade command and the cluster decides how many run at once."""
        self.prepare(timeout_s)
        self._warn_once()
        pending = iter(jobs)
        running: dict[str, _Running] = {}
        exhausted = False
        limit = self.settings.max_jobs
        tag = None
        try:
            while True:
                while not exhausted and (limit is None or len(running) < limit):
                    job = next(pending, None)
                    if job is None:
                        exhausted = True
                        break
                    if tag is None:
                        tag = batch_tag(Path(job.out).resolve().parents[1])
                        cancel_left_jobs(tag)   # left by a SIGKILLed batch on this folder
                    submitted = self._submit(job, tag)
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
        """The job's script written into its folder (DIR/slurm-dry-run/<key>/) with a copy of
        the unpacked submission beside it (DRY_RUN_SUBMISSION: the batch's own copy is gone
        when the dry run ends), so `sbatch` of the script alone grades that student there;
        and the sbatch command line the batch would run. Nothing is submitted. The job
        carries no batch tag: a later batch leaves a hand-submitted dry-run job alone (it
        writes only its own folder)."""
        self.prepare(timeout_s)
        self._warn_once()
        out = Path(job.out).resolve()
        if job.submission is not None and Path(job.submission).is_dir():
            copy = out / DRY_RUN_SUBMISSION
            shutil.rmtree(copy, ignore_errors=True)
            out.mkdir(parents=True, exist_ok=True)
            shutil.copytree(job.submission, copy, symlinks=True, copy_function=_link_or_copy)
            job = _replace_submission(job, copy)
        gpus = self.gpus_for(job)
        script = self._write_script(job, gpus, None)
        return shlex.join(["sbatch", "--parsable", *self.sbatch_args(job, gpus, None),
                           str(script)])

    def _write_script(self, job: GradeJob, gpus: int, tag: str | None) -> Path:
        out = Path(job.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        script = out / SCRIPT_NAME
        script.write_text(self.job_script(job, gpus, tag), encoding="utf-8")
        script.chmod(0o755)
        return script

    def _submit(self, job: GradeJob, tag: str) -> _Running | SlurmOutcome:
        gpus = self.gpus_for(job)
        script = self._write_script(job, gpus, tag)
        now, mono = time.time(), time.monotonic()
        try:
            job_id = slurm.sbatch(script, self.sbatch_args(job, gpus, tag))
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
        if (info.state == "COMPLETED" and info.exit_code == 0) or (
                info.state == "FAILED" and info.exit_code == GRADING_PROBLEM and not info.signal):
            # The grade command's 3: graded, an assignment with a grading problem that its
            # result.json names (no grade; the batch grades it again), as a local batch reads it.
            self._wait_for_result(run)
            return self._outcome(run, "finished", info.exit_code, info, None, tail)
        if info.state == "TIMEOUT":
            return self._outcome(run, "timed_out", info.exit_code, info,
                                 f"{where} reached its time limit ({info.time_limit}) and was "
                                 f"stopped by SLURM (TIMEOUT)", tail)
        if (info.state == "FAILED" and info.exit_code == TIMED_OUT_EXIT
                and TIMED_OUT_MARK in tail):
            # The script's own --timeout: recorded as a local batch records it (the
            # pipeline's message names the timeout).
            return self._outcome(run, "timed_out", info.exit_code, info, None, tail)
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


def batch_tag(out: Path) -> str:
    """The --comment of every job of batches writing to `out` (jobs had been named so, which
    told no student from another in squeue or sacct)."""
    return "pdl-grade-" + hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:10]


def cancel_left_jobs(tag: str) -> None:
    """Cancel the jobs a SIGKILLed batch on the same folder left: those with its tag, and
    those named after it (batches before jobs were named after their students)."""
    left = slurm.jobs_commented(tag)
    if left:
        slurm.scancel(left)
    slurm.scancel(name=tag)


def job_name(key: str, kind: str = "tags") -> str:
    """The SLURM job name of a submission. "tags": `pdl-` and 8 hex digits of its key's hash,
    the same in every batch (squeue tells the students apart; the job's script, its log and
    the dry run's folder name the key), since squeue shows job names to every user of a
    cluster that does not hide them and a key holds the student's name. "keys": the key, in
    characters that squeue, sacct and their comma-separated --name lists take (letters and
    digits of any script, `_.-`), at most JOB_NAME_CHARS; a key cut short keeps a hash of the
    whole, so names stay apart."""
    if kind == "tags":
        return "pdl-" + hashlib.sha256(str(key).encode()).hexdigest()[:8]
    name = re.sub(r"[^\w.-]", "_", str(key), flags=re.UNICODE).strip("_") or "pdl-grade"
    if len(name) > JOB_NAME_CHARS:
        digest = hashlib.sha256(str(key).encode()).hexdigest()[:8]
        name = name[:JOB_NAME_CHARS - 9] + "_" + digest
    return name


_WHERE_GRADER = ("import grader, os; "
                 "print(os.path.dirname(os.path.dirname(os.path.abspath(grader.__file__))))")


def _directive(arg: str) -> str:
    """An sbatch option as an #SBATCH line takes it (sbatch splits those lines at blanks
    outside double quotes)."""
    return f'"{arg}"' if re.search(r"\s", arg) else arg


def _comment(text: str) -> str:
    return re.sub(r"[\r\n]", " ", str(text))


def _link_or_copy(source: str, target: str) -> None:
    """Hard links where the filesystem allows (the dry run's copy costs no space), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _replace_submission(job: GradeJob, submission: Path) -> GradeJob:
    from dataclasses import replace
    return replace(job, submission=submission)


