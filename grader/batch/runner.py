"""`run_batch`: discover -> prepare (unpack, hash) -> skip or grade -> record -> publish.

Layout of DIR:
    gradebook.sqlite            the record (source of truth)
    grades.csv                  from the gradebook's current runs
    submissions/<key>/          result.json of the current run, and the grader's raw reports
    scratch/, work/             unpacked submissions and in-flight gradings (emptied each batch)

Crash safety: a run reaches the gradebook in one transaction after its result.json is
complete and read back; published files are rewritten from the gradebook at the start and
end of every batch, so a batch SIGKILLed anywhere and run again ends with each submission
graded exactly once.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, TextIO

import grader
from grader.batch.csv_export import write_grades_csv
from grader.batch.gradebook import FINAL_STATUSES, Gradebook, RunConfig, RunRecord
from grader.batch.inputs import Prepared, Submission, UnpackLimits, discover, prepare
from grader.batch.progress import Progress
from grader.batch.scheduler import GradeFn, GradeJob, JobOutcome, run_jobs
from grader.grade_command import ASSIGNMENTS
from grader.scoring import RubricError, build_result, default_rubrics_dir, errored_assignment, load_rubrics
from grader.scoring import read_result, write_result

DEFAULT_TIMEOUT_S = 1800.0


class BatchError(Exception):
    """The batch cannot start (bad arguments, another batch holds DIR); nothing was graded."""


def grade_with_grader(job: GradeJob) -> None:
    """The real grade function: `pdl-grade grade` in this (child) process."""
    import os
    from grader.grade_command import grade
    from grader.harness.execute import HIDE_ENV
    # This student's code must not see the other students' uploads, unpacked copies or results:
    # hide the batch folder (job.out is DIR/work/<key>-<id>) and the folders holding the uploads.
    hide = [job.out.parents[1]]
    if isinstance(job.context, _Context):
        hide += [source.parent for source in job.context.submission.sources]
    os.environ[HIDE_ENV] = os.pathsep.join(str(p) for p in hide)  # a child process of its own
    grade(job.submission, job.out, list(job.assignments), rubrics_dir=job.rubrics_dir,
          check_timeout=job.check_timeout)


@dataclass
class BatchReport:
    progress: Progress
    gradebook: Path
    grades_csv: Path
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return self.progress.failed


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_config(assignments: tuple[str, ...], rubrics_dir: str | None, check_timeout: float,
               rubrics: dict) -> RunConfig:
    folder = Path(rubrics_dir) if rubrics_dir else default_rubrics_dir()
    digest = hashlib.sha256()
    for assignment in sorted(assignments):      # only the rubrics this batch uses
        digest.update(assignment.encode() + b"\0" + (folder / f"{assignment}.yaml").read_bytes())
    rubric_hash = digest.hexdigest()
    versions = {a: str(rubrics[a].version) for a in assignments}
    key = json.dumps({"grader": grader.__version__, "rubrics": rubric_hash,
                      "assignments": sorted(assignments), "check_timeout": check_timeout}, sort_keys=True)
    return RunConfig(grader.__version__, rubric_hash, versions, tuple(assignments),
                     hashlib.sha256(key.encode()).hexdigest())


class _Lock:
    """One batch per DIR at a time. A POSIX record lock (lockf), not flock: the kernel drops
    it when the batch dies (no stale lock after SIGKILL), and, unlike flock, forked grading
    children do not inherit it, so a killed batch's last gradings cannot block the next one."""
    def __init__(self, path: Path):
        self.handle = open(path, "a")
        try:
            fcntl.lockf(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.handle.close()
            raise BatchError(f"another batch is writing to {path.parent}") from None

    def release(self) -> None:
        self.handle.close()


def run_batch(submissions_dir: Path, out: Path, assignments: list[str] | None = None, *,
              workers: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S, regrade: bool = False,
              grade_fn: GradeFn = grade_with_grader, rubrics_dir: str | None = None,
              check_timeout: float = 180.0, limits: UnpackLimits = UnpackLimits(),
              stream: TextIO | None = None, live: bool | None = None,
              backend: Any = None) -> BatchReport:
    """`backend`: None grades in local child processes (`scheduler.run_jobs`); otherwise an
    object whose `run_jobs` has the same signature, e.g. `grader.cluster.SlurmBackend`."""
    submissions_dir, out = Path(submissions_dir), Path(out)
    if not submissions_dir.is_dir():
        raise BatchError(f"{submissions_dir} is not a folder")
    wanted = tuple(assignments or ASSIGNMENTS)
    try:
        rubrics = load_rubrics(rubrics_dir)
    except RubricError as problem:
        raise BatchError(str(problem)) from None
    missing = [a for a in wanted if a not in rubrics]
    if missing:
        raise BatchError(f"no rubric for {', '.join(missing)}")
    config = run_config(wanted, rubrics_dir, check_timeout, rubrics)
    out.mkdir(parents=True, exist_ok=True)
    lock = _Lock(out / ".batch.lock")
    book = Gradebook(out / "gradebook.sqlite")
    try:
        for stale in (out / "scratch", out / "work"):   # left by a killed batch
            shutil.rmtree(stale, ignore_errors=True)
        _republish(book, out)
        found, notes = discover(submissions_dir)
        progress = Progress(total=len(found), workers=workers, live=live,
                            **({"stream": stream} if stream is not None else {}))
        for note in notes:
            progress.note(note)
        batch = _Batch(book, out, config, rubrics, rubrics_dir, check_timeout, limits, regrade, progress)
        schedule = run_jobs if backend is None else backend.run_jobs
        for outcome in schedule(batch.jobs(found), grade_fn, workers, timeout_s):
            batch.record_outcome(outcome, timeout_s)
        _republish(book, out)
        csv_path = write_grades_csv(out / "grades.csv", book.current_runs())
        try:   # DIR/index.html, the class summary: a failure here never touches the grades
            from grader.batch.class_report import write_class_report
            write_class_report(out, submissions_dir)
        except Exception as problem:
            progress.note(f"class summary (index.html) not written: {problem!r}")
        progress.close()
        return BatchReport(progress, out / "gradebook.sqlite", csv_path, notes)
    finally:
        book.close()
        shutil.rmtree(out / "scratch", ignore_errors=True)
        shutil.rmtree(out / "work", ignore_errors=True)
        lock.release()


@dataclass
class _Context:
    submission: Submission
    prepared: Prepared
    scratch: Path


class _Batch:
    def __init__(self, book: Gradebook, out: Path, config: RunConfig, rubrics: dict,
                 rubrics_dir: str | None, check_timeout: float, limits: UnpackLimits,
                 regrade: bool, progress: Progress):
        self.book, self.out, self.config, self.rubrics = book, out, config, rubrics
        self.rubrics_dir, self.check_timeout, self.limits = rubrics_dir, check_timeout, limits
        self.regrade, self.progress = regrade, progress

    def jobs(self, found: list[Submission]) -> Iterator[GradeJob]:
        """Prepared one at a time, when a worker is free; skips and rejections are settled
        here without a worker."""
        for submission in found:
            key = submission.student.key
            scratch = self.out / "scratch" / key
            prepared = prepare(submission, scratch, self.limits)
            current = self.book.current_run(key)
            if (not self.regrade and current is not None
                    and current[:2] == (prepared.content_hash, self.config.config_hash)
                    and current[2] in FINAL_STATUSES):
                shutil.rmtree(scratch, ignore_errors=True)
                self.progress.finished(key, "skipped")
                continue
            if prepared.problem:
                self._record_rejection(submission, prepared)
                shutil.rmtree(scratch, ignore_errors=True)
                continue
            work = self.out / "work" / f"{key}-{uuid.uuid4().hex[:8]}"
            yield GradeJob(submission.student, prepared.root, work, self.config.assignments,
                           self.rubrics_dir, self.check_timeout, _Context(submission, prepared, scratch))

    def _record_rejection(self, submission: Submission, prepared: Prepared) -> None:
        started = _now()
        message = f"submission rejected: {prepared.problem}"
        scored = [errored_assignment(self.rubrics[a], message) for a in self.config.assignments]
        result = build_result(submission.describe(), scored, duration_s=0.0, errors=[message])
        self._store(submission, prepared, RunRecord("rejected", started, _now(), prepared.problem, result),
                    work=None)
        self.progress.finished(submission.student.key, "rejected", prepared.problem)

    def record_outcome(self, outcome: JobOutcome, timeout_s: float) -> None:
        context: _Context = outcome.job.context
        started = dt.datetime.fromtimestamp(outcome.started_at, dt.timezone.utc).isoformat(timespec="seconds")
        result, message = None, None
        reason = getattr(outcome, "reason", None)   # a backend's own account (SLURM's state, reason)
        if outcome.status == "timed_out":
            status, message = "timed_out", reason or f"grading took longer than {timeout_s:g} s and was stopped"
        elif outcome.status == "crashed":
            status = "error"
            message = reason or (f"the grading process failed (exit {outcome.exit_code})"
                                 + _last_lines(outcome.log_tail))
        else:
            try:
                result = read_result(outcome.job.out / "result.json")
                status = "graded"
            except (OSError, ValueError) as exc:
                status, message = "error", f"no valid result.json: {exc}" + _last_lines(outcome.log_tail)
        if result is not None:
            result["submission"] = context.submission.describe()   # not the scratch copy
        run = RunRecord(status, started, _now(), message, result)
        self._store(context.submission, context.prepared, run, work=outcome.job.out,
                    output=outcome.log_tail)
        shutil.rmtree(context.scratch, ignore_errors=True)
        self.progress.finished(context.submission.student.key, status, message or "",
                               outcome.duration_s)

    def _store(self, submission: Submission, prepared: Prepared, run: RunRecord,
               work: Path | None, output: str = "") -> None:
        logs = [("info", note) for note in prepared.notes]
        if run.message:
            logs.append(("error", run.message))
        if output:
            logs.append(("output", output))
        # The one transaction: after this the run is recorded, before it nothing is.
        self.book.record_run(submission.student, prepared.content_hash, submission.describe(),
                             self.config, run, logs)
        _publish(self.out, submission.student.key, run.result, work, run.message)


def _last_lines(text: str) -> str:
    """The last line of the grading's output (a traceback's last line names the error); the
    whole tail is kept in the logs table."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f": {lines[-1]}" if lines else ""


def _publish(out: Path, key: str, result: dict[str, Any] | None, work: Path | None,
             message: str | None) -> None:
    """DIR/submissions/<key>/ mirrors the current run: its result.json (or, without one, the
    reason in grading-problem.txt) and the grader's raw reports."""
    folder = out / "submissions" / key
    if work is not None and work.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        work.replace(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if result is not None:
        write_result(folder / "result.json", result)
        (folder / "grading-problem.txt").unlink(missing_ok=True)
    else:
        (folder / "result.json").unlink(missing_ok=True)
        (folder / "grading-problem.txt").write_text((message or "") + "\n", encoding="utf-8")


def _republish(book: Gradebook, out: Path) -> None:
    """Rewrite each current run's result.json from the gradebook (repairs a batch killed
    between its commit and its file writes; cheap and idempotent)."""
    for run in book.current_runs():
        folder = out / "submissions" / run.student.key
        if run.result is not None:
            target = folder / "result.json"
            try:
                if target.exists() and read_result(target) == run.result:
                    continue
            except ValueError:
                pass
            write_result(target, run.result)
        else:
            _publish(out, run.student.key, None, None, run.message)
