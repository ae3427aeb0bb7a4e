"""`run_batch`: discover -> prepare (unpack, hash) -> skip, re-score or grade -> record -> publish.

Layout of DIR:
    gradebook.sqlite            the record (source of truth)
    grades.csv                  from the gradebook's current runs (the course's own record)
    moodle/<assignment>.csv     Moodle's grading worksheet per assignment (moodle_worksheet.py)
    index.html                  the class page (grader/batch/class_page.py)
    submissions/<key>/          the current run's folder: result.json, the reports, and what the
                                run stage left (run.json, checks-*.json) for re-scoring
    scratch/, work/             unpacked submissions and in-flight gradings (emptied each batch)

Crash safety: a run reaches the gradebook in one transaction after its result.json is
complete and read back; published files are rewritten from the gradebook at the start and
end of every batch (grader/batch/published.py), so a batch SIGKILLed anywhere and run again
ends with each submission graded exactly once.

Re-scoring without running code: a run is up to date when its content, its configuration,
the submission time it was scored with AND the instructor's overrides for it are unchanged.
A graded run whose time or overrides alone changed is scored again from what its grading left
(grader/grading: `RawRun.load` + `score_run`, the same path as `pdl-grade grade --rescore`);
one that cannot be (its files are gone, or they no longer give back the recorded scores) is
graded again. So is a graded run with a grading problem (an assignment whose checks did not all
run: grader/scoring/score.py `grading_problems`), which is no grade: its cells stay empty and
it is never skipped as unchanged nor re-scored (a re-score runs no check); a grading with a
grading problem never replaces a grade of the same files that had none.

Submission times are the LMS's (the student's upload), not the content's: a batch given no time
for an upload keeps the one its current run was scored with while the upload is unchanged, and
also where that run graded nothing (left for a person, or rejected) and the staff fixed the
upload in place, as the batch asks (said in a warning: a re-upload by the student would need
its own time). A changed upload whose last run was graded is a new upload: it keeps the earlier
upload's time as the earliest it can have been made (a re-upload is never earlier than the one
before it, so the late penalty charged is never more than its own and never none where the
earlier upload was late already), and a warning names the student (`_time_for`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

import grader
from grader.batch.errors import BatchError
from grader.batch.kept_settings import overrides_kept_or_replaced, worksheets_kept
from grader.batch.zipped_downloads import (moodle_downloads, refuse_a_file,
                                          with_download_problems)
from grader.batch.settled_downloads import settle_moodle_zips
from grader.batch.assignment_choice import (choose_assignments, left_alone,
                                           warn_moodle_downloads_of_several)
from grader.batch.assignment_keys import keys_per_assignment
from grader.batch.given_files import (check_overrides_file, load_times, note_unmatched,
                                      read_worksheets, worksheets_by_assignment)
from grader.batch.earlier_keys import overrides_under_current_keys
from grader.common.cpu_share import CPU_SHARE_ENV, worker_share
from grader.batch.gradebook import (FINAL_STATUSES, Gradebook, GradebookError, RunConfig, RunRecord,
                                    RunState, grading_problem_text, grading_problems_of,
                                    held_for_review, no_grade_until, unread_of)
from grader.batch.grades_csv import late_penalty, short_message, write_grades_csv
from grader.batch.gradescope_export import write_gradescope_csvs
from grader.reports.not_graded import NEEDS_PERSON, REJECTED, not_graded_mark
from grader.batch.inputs import Prepared, Submission, UnpackLimits, discover, prepare
from grader.batch.moodle_worksheet import worksheet_emails, write_moodle_worksheets
from grader.batch.people import people
from grader.batch.progress import STILL_FOR_PERSON, STILL_REJECTED, Progress
from grader.batch.similarity import code_fingerprints
from grader.batch.published import note_shared_answers, publish_run, republish
from grader.batch.scheduler import GradeFn, GradeJob, JobOutcome, run_jobs
from grader.batch.submission_times import TimesFiles
from grader.common.text import last_line_suffix
from grader.reports.formatting import format_points
from grader.grading import RESULT_FILE, RawRun, RawRunError, publish, same_scores, score_run
from grader.grading.run import DEFAULT_CHECK_TIMEOUT_S
from grader.scoring import (OverridesError, RubricError, assignment_ids, build_result,
                            default_rubrics_dir, errored_assignment, load_rubrics,
                            read_class_overrides_file, read_result)

DEFAULT_TIMEOUT_S = 1800.0
# A dry run's job scripts: DIR/slurm-dry-run/<key>/ (scratch/ and work/ are emptied).
DRY_RUN_FOLDER = "slurm-dry-run"


class BatchInterrupted(Exception):
    """Ctrl-C: what was recorded stays; the same command resumes. `kept`: what was written of
    the class's files for what is graded so far (or why not)."""
    def __init__(self, graded: int, done: int, total: int | None, kept: str = ""):
        self.graded, self.done, self.total = graded, done, total
        left = f"{total - done} left" if total is not None else "the rest left"
        super().__init__(f"interrupted: {graded} graded, {left}; run the same command again "
                         "to resume" + (f". {kept}" if kept else ""))


@dataclass(frozen=True)
class BatchOptions:
    """What to grade and how; everything `pdl-grade batch` takes besides its two folders."""
    assignments: tuple[str, ...] | None = None   # default: choose_assignments (what uploads hold)
    workers: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S          # one submission's whole grading
    regrade: bool = False                         # grade again even what is up to date
    rubrics_dir: str | None = None
    check_timeout: float = DEFAULT_CHECK_TIMEOUT_S
    limits: UnpackLimits = field(default_factory=UnpackLimits)
    # Times files (submission_times.load): a path, or (assignment or None, path) pairs.
    submission_times: Path | str | tuple | None = None
    timezone: str | None = None                   # for zoneless times
    overrides: Path | str | None = None           # {student key: {item id: {points, comment}}}
    # Worksheets downloaded from Moodle to fill: (assignment or None for the one graded, file).
    moodle_worksheets: tuple[tuple[str | None, Path | str], ...] = ()
    # Say what would be graded, re-scored, skipped or rejected (and, with a SLURM backend,
    # write each job's script and say its sbatch command); grade, submit and record nothing.
    dry_run: bool = False


def grade_in_child(job: GradeJob) -> None:
    """The real grade function, run in the scheduler's child process: grade the job's
    submission with grader/grading into job.out."""
    from grader.grading import grade_submission
    from grader.harness.execute import HIDE_ENV
    # This student's code must not see the other students' uploads, unpacked copies or results:
    # hide the batch folder (job.out is DIR/work/<key>-<id>) and the folders holding the uploads.
    hide = [job.out.parents[1]]
    if isinstance(job.context, _Context):
        hide += [source.parent for source in job.context.submission.sources]
    os.environ[HIDE_ENV] = os.pathsep.join(str(p) for p in hide)  # a child process of its own
    grade_submission(job.submission, job.out, list(job.assignments), rubrics_dir=job.rubrics_dir,
                     check_timeout=job.check_timeout, submitted_at=job.submitted_at,
                     student=student_of(job.student))


@contextlib.contextmanager
def _cpu_share(workers: int | None):
    """Each local grading's share of the cores, for the gradings the batch starts (they inherit
    it): their runs side by side and their threads follow from it (grader/common/cpu_share.py).
    A SLURM job has its own node's share (None)."""
    saved = os.environ.get(CPU_SHARE_ENV)
    if workers is not None:
        os.environ[CPU_SHARE_ENV] = f"{worker_share(workers):g}"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(CPU_SHARE_ENV, None)
        else:
            os.environ[CPU_SHARE_ENV] = saved


def student_of(student) -> dict[str, str]:
    """How result.json names the student: the LMS export's name, and the batch's key."""
    return {"key": student.key, "name": student.name}


@dataclass
class BatchSummary:
    progress: Progress
    gradebook: Path
    grades_csv: Path
    notes: list[str] = field(default_factory=list)
    assignment_choice: list[str] = field(default_factory=list)   # why these (no --assignment)
    plan: list[str] = field(default_factory=list)                # a dry run's account

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


def run_batch(submissions_dir: Path, out: Path, options: BatchOptions = BatchOptions(), *,
              grade_fn: GradeFn = grade_in_child, backend: Any = None,
              stream: TextIO | None = None, live: bool | None = None,
              before_grading: Callable[[], str | None] | None = None) -> BatchSummary:
    """Grade every submission of `submissions_dir` into `out`.

    `backend`: None grades in local child processes (`scheduler.run_jobs`); otherwise an
    object whose `run_jobs` has the same signature, e.g. `grader.cluster.SlurmBackend` (and,
    for `options.dry_run`, a `dry_run(job, timeout_s)` that writes what it would submit and
    returns its command line).
    `stream`/`live`: where progress goes, and whether as a live display.
    `before_grading`: called once, before the first grading that runs code (never in a dry
    run, nor in a batch that only skips and re-scores); a text it returns is warned (the
    command line's check of the machine's cores and memory)."""
    submissions_dir, out = Path(submissions_dir), Path(out)
    if not submissions_dir.is_dir():
        refuse_a_file(submissions_dir, options.limits)
    times = load_times(submissions_dir, options.submission_times, options.timezone)
    try:
        rubrics = load_rubrics(options.rubrics_dir)
        student_overrides = (read_class_overrides_file(options.overrides)
                             if options.overrides is not None else {})
    except (RubricError, OverridesError) as problem:
        raise BatchError(str(problem)) from None
    given = tuple(options.assignments or ())
    missing = [a for a in given if a not in rubrics]
    if missing:
        raise BatchError(f"no rubric for {', '.join(missing)}")
    sheets = read_worksheets(options.moodle_worksheets)
    if given:   # a worksheet naming no graded assignment stops the batch before anything else
        worksheets_by_assignment(sheets, given)
    _refuse_an_out_that_is_not_the_batchs(submissions_dir, out)
    out.mkdir(parents=True, exist_ok=True)
    lock = _Lock(out / ".batch.lock")
    # A dry run records nothing: it reads a copy of the gradebook (none made where there is none).
    copy = tempfile.TemporaryDirectory(prefix="pdl-dry-run-") if options.dry_run else None
    try:
        book = Gradebook(out / "gradebook.sqlite" if copy is None
                         else _copy_of_gradebook(out / "gradebook.sqlite", Path(copy.name)))
    except (GradebookError, sqlite3.Error) as problem:
        lock.release()
        if copy is not None:
            copy.cleanup()
        raise BatchError(str(problem)) from None
    progress: Progress | None = None
    grading: tuple[Gradebook, dict] | None = None
    try:
        for stale in (out / "scratch", out / "work"):   # left by a killed batch
            shutil.rmtree(stale, ignore_errors=True)
        if not options.dry_run:
            republish(book, out, rubrics)
        known = book.known_students()
        downloads = moodle_downloads(submissions_dir, out, options.limits)
        found, notes = discover(downloads.folder, known)
        with_download_problems(found, downloads)
        found, settled = settle_moodle_zips(book, downloads, found, known, out, options.dry_run)
        notes[:0] = downloads.notes
        notes += settled
        progress = Progress(total=len(found), workers=options.workers, live=live,
                            **({"stream": stream} if stream is not None else {}))
        for note in notes:
            progress.note(note)
        for warning in downloads.warnings:
            progress.warn(warning)
        student_overrides = overrides_kept_or_replaced(book, options.overrides, student_overrides,
                                                        progress)
        if given:
            found, alone = left_alone(found, given, out / "scratch", rubrics, options.limits)
            progress.total = len(found)
            graded_by, choice = {s.student.key: given for s in found}, []
            for line in alone:
                progress.note(line)
        else:
            graded_by, choice = choose_assignments(found, out / "scratch", rubrics, options.limits)
        keys = keys_per_assignment(found, graded_by, book.current_assignments(), known)
        found, graded_by = keys.found, keys.graded_by
        for line in [*choice, *keys.lines]:
            progress.note(line)
        warn_moodle_downloads_of_several(found, graded_by, progress)
        wanted = given or tuple(a for a in rubrics if any(a in t for t in graded_by.values()))
        worksheets = worksheets_kept(book, worksheets_by_assignment(sheets, wanted), wanted,
                                      out, progress, options.dry_run)
        configs = {t: run_config(t, options.rubrics_dir, options.check_timeout, rubrics)
                   for t in set(graded_by.values())}
        if times is not None:
            progress.note(f"submission times: {times.describe()}, {len(times.entries)} entries")
            for problem in times.problems:
                progress.warn(problem)
            note_unmatched(times, [s.student for s in found], progress)
            conflicts = times.conflicts([(s.student, graded_by[s.student.key]) for s in found])
            if conflicts:
                raise BatchError("--submission-times: the files give an upload different times: "
                                 + "; ".join(conflicts[:5])
                                 + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
                                 + ". Name the assignment each file is for (--submission-times "
                                 "hw3=FILE), or give one file per upload")
            unknown = sorted({a for a, _ in times.files if a is not None} - set(wanted))
            if unknown:
                raise BatchError(f"--submission-times {unknown[0]}=...: {unknown[0]} is not "
                                 f"graded by this batch ({', '.join(wanted) or 'nothing'})")
            undated = [a for a in wanted if a in rubrics and rubrics[a].due is None]
            if undated:
                progress.note(f"no due date in the rubric of {', '.join(undated)}: the submission "
                              "times give no late penalty there (a copy of the rubrics with `due` "
                              "and --rubrics DIR does)")
        # An overrides file of keys an earlier grader made (`J_ri_unapuu_1009`) still applies.
        student_overrides = overrides_under_current_keys(
            student_overrides, [*(s.student for s in found), *known], progress.note)
        unmatched = check_overrides_file(student_overrides, found, rubrics, graded_by, progress,
                                     known=[s.key for s in known])
        batch = _ClassBatch(book=book, out=out, configs=configs, graded_by=graded_by,
                            rubrics=rubrics, options=options, progress=progress, times=times,
                            overrides=student_overrides, replaces=keys.replaces,
                            before_grading=before_grading)
        if options.dry_run:
            plan = batch.dry_run(found, backend)
            return BatchSummary(progress, out / "gradebook.sqlite", out / "grades.csv", notes,
                                assignment_choice=choice, plan=plan)
        schedule = run_jobs if backend is None else backend.run_jobs
        grading = (book, rubrics)      # from here on a Ctrl-C leaves the class's files
        with _cpu_share(options.workers if backend is None else None):
            for outcome in schedule(batch.jobs(found), grade_fn, options.workers, options.timeout_s):
                try:
                    batch.record_outcome(outcome)
                except Exception as problem:   # one upload's record can only fail itself
                    batch.unrecorded(outcome.job.context.submission.student.key,
                                      "recording its grading", problem)
        batch.warn_untimed()
        book.record_emails({pid: email for sheet in worksheets.values()
                            for pid, email in worksheet_emails(sheet).items()})
        republish(book, out, rubrics)
        note_shared_answers(book, out, rubrics)
        for warning in people(book.current_runs(), list(rubrics))[1]:
            progress.warn(warning)
        csv_path = write_grades_csv(out / "grades.csv", book.current_runs(), list(rubrics))
        try:   # DIR/moodle/: Moodle's grading worksheets (grades.csv stays the record)
            for note in write_moodle_worksheets(out, list(book.current_runs()), rubrics, wanted,
                                                worksheets):
                progress.note(note)
        except (OSError, ValueError) as problem:
            progress.warn(f"Moodle worksheets (moodle/) not written: {problem}")
        try:   # DIR/gradescope/: the same grades for Gradescope's Import grades
            for line in write_gradescope_csvs(out, book.current_runs(), list(rubrics)):
                progress.note(line)
        except OSError as problem:
            progress.warn(f"Gradescope grade files (gradescope/) not written: {problem}")
        try:   # DIR/index.html, the class page: a failure here never touches the grades
            from grader.batch.class_page import write_class_page
            write_class_page(out, submissions_dir, list(rubrics), unmatched_overrides=unmatched,
                             unapplied_overrides=batch.unapplied)
        except Exception as problem:
            progress.note(f"class summary (index.html) not written: {problem!r}")
        progress.close()
        return BatchSummary(progress, out / "gradebook.sqlite", csv_path, notes,
                            assignment_choice=choice)
    except KeyboardInterrupt:
        # Nothing half-done is kept: a grading is recorded only once complete (its transaction
        # rolls back if interrupted), work/ and scratch/ are emptied below.
        if progress is not None:
            progress.stop()
        kept = _class_files_so_far(out, *grading, progress) if grading else ""
        raise BatchInterrupted(progress.graded if progress else 0,
                               progress.done if progress else 0,
                               progress.total if progress else None, kept) from None
    finally:
        if progress is not None:
            progress.stop()
        book.close()
        shutil.rmtree(out / "scratch", ignore_errors=True)
        shutil.rmtree(out / "work", ignore_errors=True)
        if copy is not None:
            copy.cleanup()
        lock.release()


def _class_files_so_far(out: Path, book: Gradebook, rubrics: dict, progress: Progress) -> str:
    """grades.csv and index.html of what is graded so far, on Ctrl-C (adv45 F4: a batch stopped
    after 5 gradings had left neither, though the README promises "keeping everything graded
    so far"); the page says it is partial, the returned words say what was written. Moodle's
    and Gradescope's files wait for the whole class."""
    recorded = len(list(book.current_runs()))
    left = progress.total - progress.done
    why = (f"the batch was stopped with {left} upload(s) left to look at; run the same command "
           "again to finish the class")
    try:
        republish(book, out, rubrics)
        write_grades_csv(out / "grades.csv", book.current_runs(), list(rubrics))
        from grader.batch.class_page import write_class_page
        write_class_page(out, order=list(rubrics), partial=why)
    except (KeyboardInterrupt, Exception) as problem:   # a second Ctrl-C, a full disk
        return (f"grades.csv and index.html were not written ({type(problem).__name__}); "
                "the same command writes them when it ends")
    return (f"grades.csv and index.html hold only the {recorded} upload(s) recorded so far "
            f"(partial: {left} left); the same command completes them")


def _copy_of_gradebook(path: Path, folder: Path) -> Path:
    """`path`'s content (what its write-ahead log holds included) in `folder`; an empty
    gradebook there where `path` is none."""
    copy = folder / path.name
    if path.exists():
        source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
    return copy


def _refuse_an_out_that_is_not_the_batchs(submissions_dir: Path, out: Path) -> None:
    """The batch empties DIR/scratch and DIR/work at each start and end: never a folder of
    someone else's (an instructor's `--out ~/course` lost ~/course/work), and never inside the
    submissions (a student's upload named `work` was deleted, and DIR read as a student)."""
    subs, target = submissions_dir.resolve(), out.resolve()
    if target == subs or subs in target.parents:
        raise BatchError(f"--out {out} is inside the submissions folder {submissions_dir}: its "
                         "files would be read as uploads and an upload could be removed; "
                         "choose a folder outside it")
    if (out / "gradebook.sqlite").exists():
        return   # a batch's own folder: what it holds there is its own
    for name in ("scratch", "work"):
        if os.path.lexists(out / name):
            raise BatchError(f"{out / name} exists and is not a batch's (no gradebook.sqlite "
                             f"beside it); the batch empties that folder: move it, or choose "
                             "another --out")


@dataclass
class _Context:
    """The batch's bookkeeping of one submission, carried through its job."""
    submission: Submission
    prepared: Prepared
    scratch: Path
    submitted_at: str | None = None
    time_warning: str | None = None                    # why it has no time (a listed one unusable)
    time_kept: str | None = None                       # an earlier upload's time kept: why (warned)
    overrides: dict = field(default_factory=dict)
    fingerprints: dict = field(default_factory=dict)   # of its code files (class page)
    config: RunConfig | None = None                    # what it is graded with
    replaces: list[str] = field(default_factory=list)  # keys whose record a final run takes over
    why: str | None = None                             # why graded again (said with its score)


class RescoreError(Exception):
    """A run cannot be re-scored from what it left (the message says what is missing)."""


@dataclass
class _ClassBatch:
    book: Gradebook
    out: Path
    configs: dict[tuple[str, ...], RunConfig]     # by the assignments graded
    graded_by: dict[str, tuple[str, ...]]         # {student key: the assignments it is graded for}
    rubrics: dict
    options: BatchOptions
    progress: Progress
    times: TimesFiles | None = None
    overrides: dict[str, dict] = field(default_factory=dict)
    # Gradable submissions without a submission time, per assignment they are graded for.
    untimed: Counter = field(default_factory=Counter)
    # {student key: why their overrides were not applied} (an upload with nothing to grade)
    unapplied: dict[str, str] = field(default_factory=dict)
    plan: list[str] = field(default_factory=list)   # a dry run's account
    # {key: other keys of the student's name whose record its grading takes over}
    replaces: dict[str, list[str]] = field(default_factory=dict)
    before_grading: Any = None        # run_batch's: called once, before the first grading

    @property
    def layout(self) -> list[str]:
        """The folders that mark a submission's root: every assignment the grader knows, so an
        upload holding only practical4/ is found (and graded 0 for a missing hw3/), not refused."""
        return list(dict.fromkeys([*assignment_ids(), *self.rubrics]))

    def jobs(self, found: list[Submission]) -> Iterator[GradeJob]:
        """Prepared one at a time, when a worker is free; skips, rejections and re-scores are
        settled here without a worker."""
        for submission in found:
            try:
                job = self._settle(submission)
            except Exception as problem:   # one upload can only fail itself
                self.unrecorded(submission.student.key, "preparing it", problem)
                continue
            if job is not None:
                if self.before_grading is not None and not self.options.dry_run:
                    warning, self.before_grading = self.before_grading(), None
                    if warning:
                        self.progress.warn(warning)
                yield job

    def unrecorded(self, key: str, doing: str, problem: Exception) -> None:
        """What went wrong that no record of this upload could hold: said, and the batch goes
        on; the upload has no current run, so the next batch grades it again."""
        self.progress.warn(f"{key}: not recorded, {doing} failed ({type(problem).__name__}: "
                           f"{str(problem)[:300]}); the next batch grades it again")
        self.progress.finished(key, "error", f"not recorded: {type(problem).__name__}")
        shutil.rmtree(self.out / "scratch" / key, ignore_errors=True)

    def dry_run(self, found: list[Submission], backend: Any = None) -> list[str]:
        """What the batch would do with each upload, said and returned; a job's script is
        written where the backend can (DIR/slurm-dry-run/<key>/), nothing else is."""
        self.plan.append("dry run: nothing is graded, submitted or recorded")
        scripts = backend is not None and hasattr(backend, "dry_run")
        shutil.rmtree(self.out / DRY_RUN_FOLDER, ignore_errors=True)   # an earlier dry run's
        for job in self.jobs(found):
            line = f"{job.student.key}: would be graded ({', '.join(job.assignments)})"
            if scripts:
                job = dataclasses.replace(job, out=self.out / DRY_RUN_FOLDER / job.student.key)
                line += f", submitted as: {backend.dry_run(job, self.options.timeout_s)}"
            self.plan.append(line)
        return self.plan

    def _finished(self, key: str, status: str, detail: str = "", **more) -> None:
        """The progress of a settled upload; in a dry run, what would have happened."""
        if self.options.dry_run:
            word = {"skipped": "skipped (unchanged)", "needs_person": "for a person",
                    STILL_FOR_PERSON: "still for a person (unchanged)",
                    STILL_REJECTED: "still rejected (unchanged)",
                    "rescored": "re-scored without running code"}.get(status, status)
            self.plan.append(f"{key}: would be {word}" + (f": {detail}" if detail else ""))
        else:
            self.progress.finished(key, status, detail, **more)

    def _settle(self, submission: Submission) -> GradeJob | None:
        """A job for a worker, or None where the upload was settled here (skipped, rejected,
        re-scored)."""
        key = submission.student.key
        assignments = self.graded_by[key]
        scratch = self.out / "scratch" / key
        prepared = prepare(submission, scratch, self.options.limits, self.layout,
                           graded=assignments)
        current = self.book.current_run(key)
        context = _Context(submission, prepared, scratch,
                           *self._time_for(submission, prepared, current),
                           overrides=self.overrides.get(key, {}),
                           fingerprints=self._fingerprints(prepared),
                           config=self.configs[assignments], replaces=self.replaces.get(key, []))
        if context.time_warning:
            self.progress.warn(f"{key}: no submission time ({context.time_warning}); "
                               "graded without a late penalty")
        if context.time_kept:
            self.progress.warn(f"{key}: {context.time_kept}")
        if context.submitted_at is None and not prepared.problem:
            self.untimed.update(assignments)
        same = (current is not None
                and (current.content_hash, current.config_hash)
                == (prepared.content_hash, context.config.config_hash))
        # An assignment the grader itself failed to grade has no grade: the upload is graded
        # again (a re-score runs no check, so it cannot mend one), never skipped as unchanged.
        problems = (grading_problems_of(self.book.current_result(key))
                    if current is not None and current.status == "graded" else {})
        if prepared.problem:
            self._overrides_not_applied(context)
        if (not self.options.regrade and same and current.status in FINAL_STATUSES
                and not problems and current.submitted_at == context.submitted_at
                # overrides matter to a graded run only (a rejection has no items)
                and (current.status != "graded"
                     or (self._overrides_of(key) == context.overrides
                         and not self._copies_unsaid(key, context)))):
            shutil.rmtree(scratch, ignore_errors=True)
            if not self.options.dry_run:
                if context.fingerprints:
                    self.book.update_fingerprints(key, prepared.content_hash, context.fingerprints)
                self.book.update_name(submission.student)
            if current.status == "rejected" and prepared.needs_person:
                self._finished(key, STILL_FOR_PERSON, prepared.problem)   # not done with
            elif current.status == "rejected":
                self._finished(key, STILL_REJECTED, prepared.problem)     # a 0, said again
            else:
                self._finished(key, "skipped")
            return None
        if prepared.problem:
            if self.options.dry_run:
                self._finished(key, "needs_person" if prepared.needs_person else "rejected",
                               prepared.problem)
            else:
                self._record_rejection(context)
            shutil.rmtree(scratch, ignore_errors=True)
            return None
        if not self.options.regrade and same and current.status == "graded" and not problems:
            if self.options.dry_run:
                why = [what for what, changed in (
                    ("its submission time changed", current.submitted_at != context.submitted_at),
                    ("its overrides changed", self._overrides_of(key) != context.overrides),
                    ("its reports do not say which folders were not graded as handed in",
                     self._copies_unsaid(key, context)))
                    if changed]
                self._finished(key, "rescored", "; ".join(why) or "its scores are out of date")
                shutil.rmtree(scratch, ignore_errors=True)
                return None
            if self._rescore(context, current):
                return None
        context.why = self._why_again(key, current, context, problems)
        if self.options.dry_run and context.why:
            self.plan.append(f"{key}: would be {context.why}")
            shutil.rmtree(scratch, ignore_errors=True)
            return None
        work = self.out / "work" / f"{key}-{uuid.uuid4().hex[:8]}"
        if not self.options.dry_run:
            self.progress.started(key)
        return GradeJob(submission.student, prepared.root, work, assignments,
                        self.options.rubrics_dir, self.options.check_timeout, context,
                        submitted_at=context.submitted_at)

    def _why_again(self, key: str, current: RunState | None, context: _Context,
                   problems: dict[str, str] | None = None) -> str | None:
        """Why the same upload is graded again ("re-graded: hw3 rubric 2026.5 -> 2026.6"); None
        for a first grading or a new upload. `problems`: the current run's grading problems."""
        if current is None or current.content_hash != context.prepared.content_hash:
            return None
        if self.options.regrade:
            return "re-graded: --regrade"
        if current.status not in FINAL_STATUSES:
            return f"re-graded: its last grading {current.status.replace('_', ' ')}"
        if problems:
            return ("re-graded: its last grading had a grading problem in "
                    + "; ".join(f"{a} ({short_message(p, 160)})" for a, p in problems.items()))
        before = self.book.current_config(key)
        if before is None or current.config_hash == context.config.config_hash:
            return None
        grader_before, versions, assignments = before
        new = context.config
        changes = [f"grader {grader_before} -> {new.grader_version}"] \
            if grader_before != new.grader_version else []
        changes += [f"{a} rubric {versions.get(a, 'none')} -> {new.rubric_versions.get(a)}"
                    for a in new.assignments if versions.get(a) != new.rubric_versions.get(a)]
        if not changes and set(assignments) != set(new.assignments):
            changes.append(f"graded for {', '.join(new.assignments)} (was "
                           f"{', '.join(assignments) or 'none'})")
        return "re-graded: " + (", ".join(changes) or "the rubric files or the check timeout "
                                "changed (same versions)")

    def _copies_unsaid(self, key: str, context: _Context) -> bool:
        """Whether the current result does not say which of the upload's folders were not
        graded as handed in, as the upload now shows them (template_copies: a result graded
        before c257331 had none, and got them only from --regrade): re-scored, running no
        code, so that its reports say so."""
        result = self.book.current_result(key) or {}
        said = (list(result.get("template_copies") or []), result.get("template_copies_why") or {})
        return said != (list(context.prepared.template_copies),
                        dict(context.prepared.template_copies_why)
                        if context.prepared.template_copies else {})

    def _overrides_not_applied(self, context: _Context) -> None:
        """Overrides for an upload with nothing to grade: said, never dropped in silence (an
        instructor's 0 for an empty upload had vanished). They apply once an upload of the
        student is graded; until then the cells stay empty."""
        key = context.submission.student.key
        if not context.overrides:
            return
        what = ("it has nothing to grade" if context.prepared.needs_person
                else "it was rejected, and scored 0")
        text = (f"overrides not applied: {what} ({short_message(context.prepared.problem, 160)}); "
                "they apply once an upload of this student is graded (fix the upload and run "
                "the batch again); a grade for it now goes into Moodle by hand")
        self.unapplied[key] = text
        self.progress.warn(f"{key}: {text}")

    def _fingerprints(self, prepared: Prepared) -> dict[str, str]:
        if prepared.root is None:
            return {}
        try:
            return code_fingerprints(prepared.root, self.layout)
        except Exception as problem:   # a flag for the class page: never worth a grade
            self.progress.note(f"code fingerprints not taken ({problem!r})")
            return {}

    def _overrides_of(self, key: str) -> dict:
        """The overrides the student's current run was scored with."""
        result = self.book.current_result(key)
        return (result or {}).get("overrides") or {}

    def _time_for(self, submission: Submission, prepared: Prepared,
                  current: RunState | None) -> tuple[str | None, str | None, str | None]:
        """(ISO submission time or None, why it has none where one was expected, why an earlier
        upload's time is kept): the fields `submitted_at`, `time_warning`, `time_kept`.

        A time given to this batch for the upload wins. Without one (no times given, or none
        for this upload) the gradebook's time is the LMS's time of the student's upload: kept
        while the content is unchanged, and where the current run graded nothing (left for a
        person, or rejected) and the content changed, since the batch asks the staff to fix
        such an upload in place; said, because a re-upload by the student would keep it too.
        A changed upload after a grading is a new upload, made no earlier than the one before
        it: the earlier time is kept as its earliest (a penalty never above its own, and never
        none where the earlier upload was late already), said, naming the student."""
        found = (self.times.lookup(submission.student, self.graded_by[submission.student.key])
                 if self.times is not None else None)
        if found is not None and found.listed:
            return (found.when.isoformat() if found.when else None), found.warning, None
        if current is None or current.submitted_at is None:
            return None, None, None
        if current.content_hash == prepared.content_hash:
            return current.submitted_at, None, None
        given = ("this batch was given no submission times" if self.times is None
                 else f"{self.times.describe()} does not list it")
        if current.status == "rejected":
            return current.submitted_at, None, (
                f"its upload changed since it was left ungraded (for a person, or rejected) and "
                f"{given}: it keeps the time the gradebook has, {current.submitted_at}, as an "
                "upload the staff fixed in place; if the student uploaded again, give the new "
                "upload's time with --submission-times")
        return current.submitted_at, None, (
            f"its upload changed since it was graded with the time the gradebook has, "
            f"{current.submitted_at}, and {given}: the new upload keeps that earlier upload's "
            "time, the earliest it can have been made (its late penalty is at least that "
            "one's); give the new upload's time with --submission-times")

    def warn_untimed(self) -> None:
        """Once per assignment with a due date: how many submissions got no late penalty
        because their time is unknown."""
        for assignment, untimed in self.untimed.items():
            if self.rubrics[assignment].due is None or self.rubrics[assignment].late_policy is None:
                continue   # no penalty could be applied anyway: nothing to warn about
            count = (f"{untimed} submission has" if untimed == 1
                     else f"{untimed} submissions have")
            self.progress.warn(f"{assignment} has a due date but {count} no submission time: no "
                               "late penalty applied to them (give the times with "
                               "--submission-times FILE)")

    def _record_rejection(self, context: _Context) -> None:
        """A rejected upload: a zero with the reason, or, when nothing in it is what the
        assignments expect, no grade until a person has looked (needs_person)."""
        submission, prepared = context.submission, context.prepared
        started = _now()
        message = (f"needs a person: {prepared.problem}" if prepared.needs_person
                   else f"submission rejected: {prepared.problem}")
        scored = [errored_assignment(self.rubrics[a], message, grading_problem=False)
                  for a in context.config.assignments]
        result = build_result(submission.describe(), scored, duration_s=0.0, errors=[message])
        result["student"] = student_of(submission.student)
        # Said so by every report made from it, with no total (grader/reports/not_graded.py).
        result["not_graded"] = not_graded_mark(
            NEEDS_PERSON if prepared.needs_person else REJECTED, prepared.problem)
        self._store(context, RunRecord("rejected", started, _now(), prepared.problem, result,
                                       context.submitted_at, needs_person=prepared.needs_person),
                    work=None)
        self.progress.finished(submission.student.key,
                               "needs_person" if prepared.needs_person else "rejected",
                               prepared.problem)

    def _rescore(self, context: _Context, current: RunState) -> bool:
        """Score a graded run again for its new submission time or overrides from what its
        grading left, running no code; False (and nothing recorded) when that cannot be done."""
        key = context.submission.student.key
        previous = self.book.current_result(key)
        work = self.out / "work" / f"{key}-{uuid.uuid4().hex[:8]}"
        started = _now()
        try:
            if previous is None:
                raise RescoreError("the current run has no result.json")
            shutil.copytree(self.out / "submissions" / key, work, symlinks=True)
            result = _with_left_out(rescore_from(work, previous, self.rubrics, current.submitted_at,
                                                 context.submitted_at, context.overrides,
                                                 student_of(context.submission.student)), context)
            publish(result, work, rubrics=self.rubrics)
        except (RescoreError, RawRunError, OSError, ValueError, KeyError, TypeError) as problem:
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
        if (previous.get("template_copies") or []) != list(context.prepared.template_copies):
            changes.append("its reports now name the folders not graded as handed in ("
                           + ", ".join(context.prepared.template_copies or ["none"]) + ")")
        elif not changes:
            changes.append("its reports now say why its folders were not graded as handed in")
        change = "re-scored without running code: " + "; ".join(changes)
        self._store(context, RunRecord("graded", started, _now(), None, result, context.submitted_at),
                    work=work, extra_logs=[("info", change)])
        shutil.rmtree(context.scratch, ignore_errors=True)
        # No duration: a re-score is no grading, and must not shrink the ETA's mean.
        self.progress.finished(key, "rescored", change, score=_score_of(result))
        return True

    def record_outcome(self, outcome: JobOutcome) -> None:
        context: _Context = outcome.job.context
        started = dt.datetime.fromtimestamp(outcome.started_at, dt.timezone.utc).isoformat(timespec="seconds")
        result, message = None, None
        reason = outcome.reason   # an account of its own (SLURM's state and reason, a folder not made)
        if outcome.status == "timed_out":
            status, message = "timed_out", reason or (f"grading took longer than "
                                                      f"{self.options.timeout_s:g} s and was stopped")
        elif outcome.status == "crashed":
            status = "error"
            message = reason or (f"the grading process failed (exit {outcome.exit_code})"
                                 + last_line_suffix(outcome.log_tail))
        else:
            try:
                result = read_result(outcome.job.out / RESULT_FILE)
                status = "graded"
            except (OSError, ValueError) as exc:
                status, message = "error", (f"no valid result.json: {exc}"
                                            + last_line_suffix(outcome.log_tail))
        if result is not None:
            result = self._finish(result, outcome.job.out, context)
        run = RunRecord(status, started, _now(), message, result, context.submitted_at)
        key = context.submission.student.key
        problems = grading_problems_of(result)
        earlier = self._earlier_grade(context) if result is None or problems else None
        if earlier is not None and earlier[1] and result is not None and not earlier[2]:
            # A grading problem is no grade, and takes none: the same files' grade, which had
            # none, stays current; the next batch skips the upload as unchanged.
            self._store(context, run, work=None, output=outcome.log_tail, current=False)
            shutil.rmtree(context.scratch, ignore_errors=True)
            self.progress.finished(key, "error", f"its grade of the same files ({earlier[0]}) "
                                   "stays current; this grading had a " + "; a ".join(
                                       grading_problem_text(a, p) for a, p in problems.items()),
                                   outcome.duration_s)
            return
        if result is not None:
            earlier = None   # a grade with a grading problem of its own is replaced
        if earlier is not None and earlier[1]:
            # The same files' grade stays current and published; the failed attempt is history.
            self._store(context, run, work=None, output=outcome.log_tail, current=False)
            shutil.rmtree(context.scratch, ignore_errors=True)
            # Said first: the summary cuts a long message (a traceback's last line).
            self.progress.finished(key, status, f"its grade of the same files ({earlier[0]}) "
                                   f"stays current; {message}", outcome.duration_s)
            return
        if earlier is not None:
            self.progress.warn(f"{key}: its earlier grade ({earlier[0]}) was of another upload: "
                               "not current now; the new upload is graded by the next batch")
        self._store(context, run, work=outcome.job.out, output=outcome.log_tail)
        shutil.rmtree(context.scratch, ignore_errors=True)
        regraded = status == "graded" and context.why
        self.progress.finished(key, "regraded" if regraded else status,
                               (context.why if regraded else message) or "", outcome.duration_s,
                               score=_score_of(run.result))
        for assignment, problem in problems.items():   # no grade: said, and in the summary
            self.progress.warn(f"{key}: {grading_problem_text(assignment, problem)}")

    def _earlier_grade(self, context: _Context) -> tuple[str, bool, bool] | None:
        """(its score, whether of the same files, whether it has grading problems) where the
        student's current run is graded; None where it is not. A grading that fails (timed
        out, crashed: the machine's, often), or that has a grading problem, never takes a
        grade already given to the same files: `--regrade --timeout 2` on a busy machine had
        wiped a class's grades and reports. An earlier upload's grade is no grade of the new
        one: the failed run becomes current (its cells empty, as for any failed grading), the
        earlier one stays in the gradebook's history."""
        key = context.submission.student.key
        current = self.book.current_run(key)
        if current is None or current.status != "graded":
            return None
        result = self.book.current_result(key)
        return (_score_of(result) or "graded", current.content_hash == context.prepared.content_hash,
                bool(grading_problems_of(result)))

    def _finish(self, result: dict, folder: Path, context: _Context) -> dict:
        """The grading child's result, named after the upload (not its scratch copy) and with
        the student's overrides, scored here in the batch's own process from the run's files
        (a grading on a cluster node never sees the overrides file)."""
        label = context.submission.describe()
        student = student_of(context.submission.student)
        if context.overrides:
            try:
                scored = score_run(RawRun.load(folder), self.rubrics, overrides=context.overrides,
                                   submitted_at=context.submitted_at, submission=label,
                                   student=student)
                return publish(_with_left_out(scored.to_dict(), context), folder,
                               rubrics=self.rubrics)
            except (RawRunError, OSError, ValueError, KeyError, TypeError) as problem:
                self.progress.warn(f"{context.submission.student.key}: overrides not applied "
                                   f"({problem})")
        result["submission"], result["student"] = label, student
        return publish(_with_left_out(result, context), folder, rubrics=self.rubrics)

    def _store(self, context: _Context, run: RunRecord, work: Path | None, output: str = "",
               extra_logs: list[tuple[str, str]] = (), current: bool = True) -> None:
        """Record the run (`current=False`: into the gradebook's history only, nothing
        published) and publish its files."""
        submission, prepared = context.submission, context.prepared
        logs = [("info", note) for note in prepared.notes] + list(extra_logs)
        if context.time_warning:
            logs.append(("warning", f"no submission time: {context.time_warning}"))
        if context.time_kept:
            logs.append(("warning", context.time_kept))
        if run.message:
            logs.append(("error", run.message))
        if output:
            logs.append(("output", output))
        # The one transaction: after this the run is recorded, before it nothing is.
        replaced = context.replaces if run.status in FINAL_STATUSES and current else []
        self.book.record_run(submission.student, prepared.content_hash, submission.describe(),
                             context.config, run, logs, fingerprints=context.fingerprints,
                             replaces=replaced, current=current)
        if not current:
            return
        for key in replaced:
            self.progress.note(f"{submission.student.key}: its grading replaces the record of "
                               f"{key}, an earlier upload of the same assignments")
            shutil.rmtree(self.out / "submissions" / key, ignore_errors=True)
        try:
            publish_run(self.out, submission.student.key, run.result, work, run.message,
                        self.rubrics)
        except Exception as problem:   # the grade is recorded; only its files are missing
            self.progress.warn(f"{submission.student.key}: graded and recorded, but its report "
                               f"files were not written ({type(problem).__name__}: "
                               f"{str(problem)[:200]}); --regrade writes them")


def _with_left_out(result: dict, context: _Context) -> dict:
    """The result with what its upload was graded without (grader/batch/unpack.py), its
    assignments left out as the template unchanged (template_copies: instructor.md had not
    said which, only the console), and the symbolic links it held, skipped (each answer file
    that is one says so: it had read "not handed in" alone, adv39 F3): the grading child sees
    only the unpacked root, so the batch adds them."""
    if context.prepared.left_out:
        result["left_out"] = list(context.prepared.left_out)
    if context.prepared.template_copies:
        result["template_copies"] = list(context.prepared.template_copies)
        result["template_copies_why"] = dict(context.prepared.template_copies_why)
    links = context.prepared.links
    if links:
        result["links"] = [dict(link) for link in links]
        for assignment in result.get("assignments") or []:
            for file in (assignment.get("answers") or {}).get("files") or []:
                name = str(file.get("file") or "")
                link = next((link for link in links if name and (
                    link["path"] == name or link["path"].endswith("/" + name))), None)
                if link is not None and file.get("status") == "missing":
                    file["link"] = link["target"] or "a path the zip does not say"
    return result


def _score_of(result: dict | None) -> str | None:
    """"17/20" (and the late penalty, if any) for the progress display; a result held for
    review has no total, as grades.csv has none: "—/15, 10.5 points withheld for review: hw3";
    nor has one with a grading problem: "—/27, grading problem in hw3: ...; run the batch
    again"; nor has one whose answers wait for a person to read them: "—/15, no grade until a
    person reads answers: hw3 (8.5 points wait)"."""
    if not result:
        return None
    held = held_for_review(result)
    problems = grading_problems_of(result)
    unread = unread_of(result)
    total = "\u2014" if held or problems or unread else format_points(result.get('score', 0))
    text = f"{total}/{format_points(result.get('max_score', 0))}"
    penalty = late_penalty(result)
    if penalty:
        text += f" (late {format_points(penalty)})"
    text += "".join(f", {grading_problem_text(a, short_message(p, 160))}"
                    for a, p in problems.items())
    text += "".join(f", {no_grade_until(result, a, p)}" for a, p in unread.items())
    if not held:
        return text
    withheld = sum(float((a.get("integrity") or {}).get("withheld_points") or 0)
                   for a in result.get("assignments") or [] if a.get("id") in held)
    points = format_points(withheld)
    return (f"{text}, {points} point{'' if points == '1' else 's'} withheld for review: "
            f"{', '.join(held)}")


def rescore_from(folder: Path, previous: dict[str, Any], rubrics: dict,
                 previous_submitted_at: str | None, submitted_at: str | None,
                 overrides: dict, student: dict[str, str] | None = None) -> dict[str, Any]:
    """`previous` (a result.json, scored with `previous_submitted_at` and its own `overrides`)
    scored again from the run in `folder` with another time and overrides. The run's files must
    first give back exactly the scores of `previous`: files that belong to another run (a batch
    killed between recording a run and publishing its files) raise RescoreError instead of
    scoring the wrong grading."""
    run = RawRun.load(folder, [a["id"] for a in previous.get("assignments") or []])
    if run.hardware is None:    # a folder from before run.json: keep what the grading recorded
        run.hardware = previous.get("hardware")
        run.started_at, run.duration_s = previous.get("started_at"), previous.get("duration_s")
    label = str(previous.get("submission") or "")
    again = score_run(run, rubrics, overrides=previous.get("overrides") or {},
                      submitted_at=previous_submitted_at, submission=label)
    if not same_scores(previous, again.to_dict()):
        raise RescoreError("its files do not give back the recorded scores")
    return score_run(run, rubrics, overrides=overrides, submitted_at=submitted_at,
                     submission=label, student=student or previous.get("student")).to_dict()
