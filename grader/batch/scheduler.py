"""Run gradings W at a time, each in its own child process and process group, with a timeout.

Why not a ProcessPoolExecutor: a running future cannot be stopped, and a hung grading must be
killed together with everything it started (pytest, the sandbox). Each child calls
`os.setsid()`, so the parent can SIGKILL its whole group on timeout; and each child watches
its parent, so when the batch itself is SIGKILLed its gradings die with it instead of running
on as orphans beside the next batch.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterable, Iterator

from grader.batch.inputs import Student
from grader.common.text import file_tail

# fork: the child starts at once and inherits the grade function (tests pass plain closures).
_CONTEXT = multiprocessing.get_context("fork")
PARENT_WATCH_S = 0.5
LOG_NAME = "batch-child.log"


@dataclass(frozen=True)
class GradeJob:
    """One grading to do. The grade function must write `out/result.json`."""
    student: Student
    submission: Path              # the submission root (holds practical4/, ...)
    out: Path                     # an empty folder of its own
    assignments: tuple[str, ...]
    rubrics_dir: str | None = None
    check_timeout: float = 180.0
    context: object = None        # the caller's bookkeeping, untouched here
    submitted_at: str | None = None   # ISO 8601 submission time, for the rubrics' late penalty


GradeFn = Callable[[GradeJob], None]


@dataclass
class JobOutcome:
    job: GradeJob
    status: str                   # "finished" (exit 0), "crashed" (non-zero exit) or "timed_out"
    exit_code: int | None
    started_at: float             # time.time()
    duration_s: float
    log_tail: str
    reason: str | None = None     # what stopped it, where no grading process can say


def _child(grade_fn: GradeFn, job: GradeJob, parent: int) -> None:
    os.setsid()
    log = os.open(job.out / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.fchmod(log, 0o644)      # like every file the staff open, whatever the umask
    os.dup2(log, 1)
    os.dup2(log, 2)
    # Python-level streams too: the parent's may be objects that are not fd 1/2 (pytest's).
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    threading.Thread(target=_die_with_parent, args=(parent,), daemon=True).start()
    code = 1
    try:
        grade_fn(job)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)   # no cleanup of the parent's inherited state (its sqlite connection)


def _die_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_WATCH_S)
    os.killpg(0, signal.SIGKILL)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_jobs(jobs: Iterable[GradeJob], grade_fn: GradeFn, workers: int,
             timeout_s: float) -> Iterator[JobOutcome]:
    """Yield an outcome per job as each finishes. `jobs` is read lazily, one when a worker
    is free, so the caller can prepare (unpack) a submission just before it is graded."""
    pending = iter(jobs)
    running: dict[int, tuple[multiprocessing.Process, GradeJob, float, float]] = {}
    exhausted = False
    try:
        while True:
            while not exhausted and len(running) < max(1, workers):
                job = next(pending, None)
                if job is None:
                    exhausted = True
                    break
                try:
                    job.out.mkdir(parents=True, exist_ok=True)
                except OSError as error:
                    # This upload's folder only (a name too long, a full disk): the others go on.
                    yield JobOutcome(job, "crashed", None, time.time(), 0.0, "",
                                     f"its grading folder could not be made: "
                                     f"{error.strerror or error}")
                    continue
                process = _CONTEXT.Process(target=_child, args=(grade_fn, job, os.getpid()), daemon=False)
                process.start()
                running[process.sentinel] = (process, job, time.time(), time.monotonic())
            if not running:
                return
            now = time.monotonic()
            next_deadline = min(start + timeout_s for _, _, _, start in running.values())
            ready = set(wait(list(running), timeout=max(0.0, next_deadline - now)))
            now = time.monotonic()
            for sentinel in list(running):
                process, job, wall_start, start = running[sentinel]
                timed_out = sentinel not in ready and now - start >= timeout_s
                if sentinel not in ready and not timed_out:
                    continue
                # Kill the group either way: after a normal exit this removes anything the
                # grading left behind. The child is a zombie until join(), so its pid (the
                # group id) cannot have been reused yet.
                _kill_group(process.pid)
                process.join()
                del running[sentinel]
                status = "timed_out" if timed_out else ("finished" if process.exitcode == 0 else "crashed")
                yield JobOutcome(job, status, process.exitcode, wall_start, now - start,
                                 file_tail(job.out / LOG_NAME))
    finally:
        # Interrupted (Ctrl-C, an exception in the caller): leave no grading running.
        for process, *_ in running.values():
            _kill_group(process.pid)
            process.join()
