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

Submission times (`submission_times.py`): a run is up to date when its content, its
configuration AND the submission time it was scored with are unchanged. A graded run whose
time alone changed is re-scored here from its raw reports (DIR/submissions/<key>/pytest-*.json),
without running any code; one that cannot be (a report is gone) is graded again. A batch given
no times at all (no --submission-times, no Gradescope submission_metadata.yml) keeps, for each
unchanged submission, the time its current run was scored with.

Overrides (`--overrides FILE`: `{student key: {item id: {points, comment}, <assignment>.integrity:
{cleared: true}}}`): the instructor's manual points and released holds. Each run's result.json
records the overrides it was scored with (`overrides`); a graded run whose overrides changed is
re-scored from its raw reports like a changed submission time, running no code.
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
from grader.batch import submission_times
from grader.batch.gradebook import FINAL_STATUSES, Gradebook, GradebookError, RunConfig, RunRecord, RunState
from grader.batch.inputs import Prepared, Submission, UnpackLimits, discover, prepare
from grader.batch.progress import Progress
from grader.batch.scheduler import GradeFn, GradeJob, JobOutcome, run_jobs
from grader.batch.submission_times import SubmissionTimes, SubmissionTimesError
from grader.grade_command import ASSIGNMENTS
from grader.scoring import RubricError, build_result, default_rubrics_dir, errored_assignment, load_rubrics
from grader.scoring import read_result, score_assignment, write_result

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
          check_timeout=job.check_timeout, submitted_at=job.submitted_at)


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
              backend: Any = None, submission_times: Path | str | None = None,
              timezone: str | None = None, overrides: Path | str | None = None) -> BatchReport:
    """`backend`: None grades in local child processes (`scheduler.run_jobs`); otherwise an
    object whose `run_jobs` has the same signature, e.g. `grader.cluster.SlurmBackend`.
    `submission_times`: a times file (`submission_times.load`); without one, SUBMISSIONS'
    own Gradescope submission_metadata.yml if it has one. `timezone`: for zoneless times.
    `overrides`: a YAML/JSON file of the instructor's overrides per student (see above)."""
    submissions_dir, out = Path(submissions_dir), Path(out)
    if not submissions_dir.is_dir():
        raise BatchError(f"{submissions_dir} is not a folder")
    times = _load_times(submissions_dir, submission_times, timezone)
    student_overrides = _load_overrides(overrides)
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
    try:
        book = Gradebook(out / "gradebook.sqlite")
    except GradebookError as problem:
        lock.release()
        raise BatchError(str(problem)) from None
    try:
        for stale in (out / "scratch", out / "work"):   # left by a killed batch
            shutil.rmtree(stale, ignore_errors=True)
        _republish(book, out, rubrics)
        found, notes = discover(submissions_dir)
        progress = Progress(total=len(found), workers=workers, live=live,
                            **({"stream": stream} if stream is not None else {}))
        for note in notes:
            progress.note(note)
        if times is not None:
            progress.note(f"submission times: {times.describe()}, {len(times.entries)} entries")
            for problem in times.problems:
                progress.warn(problem)
            _note_unmatched(times, [s.student for s in found], progress)
        for key in sorted(set(student_overrides) - {s.student.key for s in found}):
            progress.warn(f"overrides for '{key}' ignored: no such submission")
        batch = _Batch(book, out, config, rubrics, rubrics_dir, check_timeout, limits, regrade,
                       progress, times, student_overrides)
        schedule = run_jobs if backend is None else backend.run_jobs
        for outcome in schedule(batch.jobs(found), grade_fn, workers, timeout_s):
            batch.record_outcome(outcome, timeout_s)
        batch.warn_untimed()
        _republish(book, out, rubrics)
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


def _load_overrides(path: Path | str | None) -> dict[str, dict]:
    """{student key: {item id: override}} from a YAML or JSON file."""
    if path is None:
        return {}
    import yaml
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as problem:
        raise BatchError(f"overrides file {path} cannot be read: {problem}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise BatchError(f"overrides file {path} must map each student's key to "
                         "{item id: {points: x, comment: ...}}")
    return {str(key): value for key, value in data.items()}


def _load_times(submissions_dir: Path, path: Path | str | None,
                timezone: str | None) -> SubmissionTimes | None:
    """The batch's submission times: --submission-times FILE, else the Gradescope export's
    own submission_metadata.yml in SUBMISSIONS, else none."""
    if path is None:
        own = submissions_dir / submission_times.GRADESCOPE_METADATA
        if own.is_file() and not own.is_symlink():
            path = own
        elif timezone is not None:
            raise BatchError("--timezone applies to the times of --submission-times FILE, "
                             "and none was given")
    if path is None:
        return None
    try:
        return submission_times.load(path, timezone)
    except SubmissionTimesError as problem:
        raise BatchError(str(problem)) from None


def _note_unmatched(times: SubmissionTimes, students: list, progress: Progress) -> None:
    unmatched = times.unmatched(students)
    if not unmatched:
        return
    timed = sum(e.when is not None for e in times.entries)
    shown = ", ".join(f"{e.label} ({e.where})" for e in unmatched[:5])
    more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
    text = (f"{times.source.name}: {len(unmatched)} of its {timed} submission times match no "
            f"submission in this folder: {shown}{more}")
    # Nothing matching at all is almost certainly the wrong file; a few strays are normal
    # (students whose upload is not in this download).
    if len(unmatched) == timed:
        progress.warn(text)
    else:
        progress.note(text)


@dataclass
class _Context:
    submission: Submission
    prepared: Prepared
    scratch: Path
    submitted_at: str | None = None
    time_warning: str | None = None
    overrides: dict = field(default_factory=dict)


class _Batch:
    def __init__(self, book: Gradebook, out: Path, config: RunConfig, rubrics: dict,
                 rubrics_dir: str | None, check_timeout: float, limits: UnpackLimits,
                 regrade: bool, progress: Progress, times: SubmissionTimes | None = None,
                 overrides: dict[str, dict] | None = None):
        self.book, self.out, self.config, self.rubrics = book, out, config, rubrics
        self.rubrics_dir, self.check_timeout, self.limits = rubrics_dir, check_timeout, limits
        self.regrade, self.progress, self.times = regrade, progress, times
        self.overrides = overrides or {}
        self.untimed = 0      # gradable submissions without a submission time

    def jobs(self, found: list[Submission]) -> Iterator[GradeJob]:
        """Prepared one at a time, when a worker is free; skips, rejections and re-scores for
        a changed submission time are settled here without a worker."""
        for submission in found:
            key = submission.student.key
            scratch = self.out / "scratch" / key
            prepared = prepare(submission, scratch, self.limits)
            current = self.book.current_run(key)
            context = _Context(submission, prepared, scratch,
                               *self._time_for(submission, prepared, current),
                               overrides=self.overrides.get(key, {}))
            if context.time_warning:
                self.progress.warn(f"{key}: no submission time ({context.time_warning}); "
                                   "graded without a late penalty")
            if context.submitted_at is None and not prepared.problem:
                self.untimed += 1
            same = (current is not None
                    and (current.content_hash, current.config_hash)
                    == (prepared.content_hash, self.config.config_hash))
            if (not self.regrade and same and current.status in FINAL_STATUSES
                    and current.submitted_at == context.submitted_at
                    # overrides matter to a graded run only (a rejection has no items)
                    and (current.status != "graded"
                         or self._overrides_of(key) == context.overrides)):
                shutil.rmtree(scratch, ignore_errors=True)
                self.progress.finished(key, "skipped")
                continue
            if prepared.problem:
                self._record_rejection(context)
                shutil.rmtree(scratch, ignore_errors=True)
                continue
            if not self.regrade and same and current.status == "graded" and self._rescore(context, current):
                continue
            work = self.out / "work" / f"{key}-{uuid.uuid4().hex[:8]}"
            yield GradeJob(submission.student, prepared.root, work, self.config.assignments,
                           self.rubrics_dir, self.check_timeout, context,
                           submitted_at=context.submitted_at)

    def _overrides_of(self, key: str) -> dict:
        """The overrides the student's current run was scored with."""
        result = self.book.current_result(key)
        return (result or {}).get("overrides") or {}

    def _time_for(self, submission: Submission, prepared: Prepared,
                  current: RunState | None) -> tuple[str | None, str | None]:
        """(ISO submission time or None, why a listed one is unusable or None)."""
        if self.times is None:
            # No times given to this batch: unchanged content keeps the time it was scored with.
            if current is not None and current.content_hash == prepared.content_hash:
                return current.submitted_at, None
            return None, None
        found = self.times.lookup(submission.student)
        return (found.when.isoformat() if found.when else None), found.warning

    def warn_untimed(self) -> None:
        """Once per assignment with a due date: how many submissions got no late penalty
        because their time is unknown."""
        if not self.untimed:
            return
        for assignment in self.config.assignments:
            if self.rubrics[assignment].due is None:
                continue
            count = (f"{self.untimed} submission has" if self.untimed == 1
                     else f"{self.untimed} submissions have")
            self.progress.warn(f"{assignment} has a due date but {count} no submission time: no "
                               "late penalty applied to them (give the times with "
                               "--submission-times FILE)")

    def _record_rejection(self, context: _Context) -> None:
        submission, prepared = context.submission, context.prepared
        started = _now()
        message = f"submission rejected: {prepared.problem}"
        scored = [errored_assignment(self.rubrics[a], message) for a in self.config.assignments]
        result = build_result(submission.describe(), scored, duration_s=0.0, errors=[message])
        self._store(context, RunRecord("rejected", started, _now(), prepared.problem, result,
                                       context.submitted_at), work=None)
        self.progress.finished(submission.student.key, "rejected", prepared.problem)

    def _rescore(self, context: _Context, current: RunState) -> bool:
        """Re-score a graded run for its new submission time or overrides from the raw reports
        it left, running no code; False (and nothing recorded) when that cannot be done."""
        key = context.submission.student.key
        previous = self.book.current_result(key)
        published = self.out / "submissions" / key
        work = self.out / "work" / f"{key}-{uuid.uuid4().hex[:8]}"
        started = _now()
        try:
            if previous is None:
                raise RescoreError("the current run has no result.json")
            shutil.copytree(published, work, symlinks=True)
            result = rescore_result(previous, work, self.rubrics, context.submitted_at,
                                    current.submitted_at, overrides=context.overrides,
                                    previous_overrides=previous.get("overrides") or {})
            write_result(work / "result.json", result)
            _write_reports(result, work, self.rubrics)
        except (RescoreError, OSError, ValueError, KeyError, TypeError) as problem:
            shutil.rmtree(work, ignore_errors=True)
            self.progress.note(f"{key}: its submission time or overrides changed but it cannot "
                               f"be re-scored without running it ({problem}); grading it again")
            return False
        changes = []
        if current.submitted_at != context.submitted_at:
            changes.append(f"the submission time changed from {current.submitted_at or 'unknown'} "
                           f"to {context.submitted_at or 'unknown'}")
        if (previous.get("overrides") or {}) != context.overrides:
            changes.append("the instructor's overrides changed")
        change = "re-scored without running code: " + "; ".join(changes)
        self._store(context, RunRecord("graded", started, _now(), None, result, context.submitted_at),
                    work=work, extra_logs=[("info", change)])
        shutil.rmtree(context.scratch, ignore_errors=True)
        # No duration: a re-score is no grading, and must not shrink the ETA's mean.
        self.progress.finished(key, "rescored", change)
        return True

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
        if result is not None and context.overrides:
            # Applied here, in the batch's own process, the way a later change would be.
            try:
                result = rescore_result(result, outcome.job.out, self.rubrics,
                                        context.submitted_at, context.submitted_at,
                                        overrides=context.overrides)
                write_result(outcome.job.out / "result.json", result)
                _write_reports(result, outcome.job.out, self.rubrics)
            except (RescoreError, OSError, ValueError, KeyError, TypeError) as problem:
                self.progress.warn(f"{context.submission.student.key}: overrides not applied "
                                   f"({problem})")
        run = RunRecord(status, started, _now(), message, result, context.submitted_at)
        self._store(context, run, work=outcome.job.out, output=outcome.log_tail)
        shutil.rmtree(context.scratch, ignore_errors=True)
        self.progress.finished(context.submission.student.key, status, message or "",
                               outcome.duration_s)

    def _store(self, context: _Context, run: RunRecord, work: Path | None, output: str = "",
               extra_logs: list[tuple[str, str]] = ()) -> None:
        submission, prepared = context.submission, context.prepared
        logs = [("info", note) for note in prepared.notes] + list(extra_logs)
        if context.time_warning:
            logs.append(("warning", f"no submission time: {context.time_warning}"))
        if run.message:
            logs.append(("error", run.message))
        if output:
            logs.append(("output", output))
        # The one transaction: after this the run is recorded, before it nothing is.
        self.book.record_run(submission.student, prepared.content_hash, submission.describe(),
                             self.config, run, logs)
        _publish(self.out, submission.student.key, run.result, work, run.message)


class RescoreError(Exception):
    """A run cannot be re-scored from what it left (the message says what is missing)."""


def rescore_result(previous: dict[str, Any], folder: Path, rubrics: dict,
                   submitted_at: str | None, previous_submitted_at: str | None, *,
                   overrides: dict | None = None,
                   previous_overrides: dict | None = None) -> dict[str, Any]:
    """`previous` (a result.json, scored with `previous_submitted_at`) scored again with
    another submission time, from the raw pytest reports in `folder`: what `pdl-grade grade
    --rescore --submitted-at` does, except that everything the grading itself recorded
    (hardware, duration, measurements, answers) is kept as it was. An assignment whose
    checks never ran (status error) stays as it is: it has no report, and no late penalty.
    `overrides` replace `previous_overrides` (the instructor's, for this student).

    The reports must first give back exactly the scores of `previous`: reports that belong
    to another run (a batch killed between recording a run and publishing its files) raise
    RescoreError instead of scoring the wrong grading."""
    entries = []
    for entry in previous.get("assignments", []):
        assignment = entry["id"]
        if entry.get("status") == "error":
            entries.append(entry)
            continue
        if assignment not in rubrics:
            raise RescoreError(f"no rubric for {assignment}")
        path = folder / f"pytest-{assignment}.json"
        if not path.is_file():
            raise RescoreError(f"its report {path.name} is missing")
        report = json.loads(path.read_text(encoding="utf-8"))
        integrity = (entry.get("integrity") or {}).get("problems")  # the same, recorded at grading
        notes = (entry.get("integrity") or {}).get("notes")
        again = _plain(score_assignment(rubrics[assignment], report, integrity=integrity,
                                        integrity_notes=notes, overrides=previous_overrides,
                                        submitted_at=previous_submitted_at).to_dict())
        if any(entry.get(name) != value for name, value in again.items()):
            raise RescoreError(f"its report {path.name} does not give back the recorded scores")
        scored = score_assignment(rubrics[assignment], report, submitted_at=submitted_at,
                                  integrity=integrity, integrity_notes=notes,
                                  overrides=overrides).to_dict()
        for name, value in entry.items():     # what grade() added beside the scores
            scored.setdefault(name, value)
        entries.append(scored)
    result = build_result(previous.get("submission", ""), entries,
                          hardware=previous.get("hardware"), started_at=previous.get("started_at"),
                          duration_s=previous.get("duration_s"), errors=previous.get("errors", []))
    if overrides:
        result["overrides"] = overrides
    return result


def _plain(value: Any) -> Any:
    """As it reads back from result.json."""
    return json.loads(json.dumps(value))


def _write_reports(result: dict[str, Any], folder: Path, rubrics: dict) -> None:
    """What grade() writes beside result.json (report.md, report.html, instructor.md), by
    grade()'s own writers, which never raise. The old files go first: none is better than
    one that shows the old scores."""
    from grader import grade_command
    from grader.reports.command import FORMATS
    for fmt, name in FORMATS.items():
        if fmt != "gradescope":
            (folder / name).unlink(missing_ok=True)
    grade_command._write_student_reports(result, folder)
    grade_command._write_instructor_report(result, folder, rubrics)


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


def _republish(book: Gradebook, out: Path, rubrics: dict) -> None:
    """Rewrite each current run's result.json, and the student reports made from it, from
    the gradebook (repairs a batch killed between its commit and its file writes; cheap and
    idempotent)."""
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
            _write_reports(run.result, folder, rubrics)
        else:
            _publish(out, run.student.key, None, None, run.message)
