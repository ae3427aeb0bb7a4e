"""The integrity scan run in a forked child process with a memory limit of its own.

The scan reads whatever a student uploaded (its Python parsed, its archives and pickles
opened), in the grading's process: a file built to blow the scan's memory took the whole
grading with it (a MemoryError told as "the integrity scan failed", or the kernel's OOM killer
stopping the grading of every assignment, and in a batch, the upload graded again at every
batch). Here the scan runs in a child forked from the grading (no new interpreter: nothing is
imported again), its address space limited (RLIMIT_AS) to what it had at the fork plus
SCAN_MEMORY_BYTES. Past that, the child stops, and the submission gets one finding that says
so: "could not be checked" (tampering, so its automatic points are held for a person,
grader/scoring/score.py), the other gradings of the batch going on as before.
"""
from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import traceback
from pathlib import Path

from grader.integrity.findings import Finding
from grader.integrity.scan import scan_and_group
from grader.integrity.source import TOO_LARGE_TO_READ

# What the scan may use beyond what the grading's process had when it forked: the scan of the
# reference solutions peaks near 25 MiB, and the scan's own limits (4 MiB of Python, 256 MiB
# decompressed of one file) stay well within it.
SCAN_MEMORY_BYTES = 1024 * 2**20
# And the CPU time it may take: the reference solutions' scan takes about a second, a large
# honest submission a few; a file built to make the scan's work grow faster than its size
# (within the memory limit) is stopped here instead of stalling the batch's worker for minutes.
SCAN_CPU_SECONDS = 120
_PAGE = os.sysconf("SC_PAGE_SIZE")


# The finding of a scan that did not finish is of no one file: it reads "(all files) could not
# be checked: ..." and, in no assignment's folder, holds every assignment graded.
ALL_FILES = "(all files)"


def over_the_limit(why: str) -> Finding:
    """The one finding of a submission whose scan did not finish."""
    return Finding(ALL_FILES, 0, "unreadable",
                   f"{why}; the automatic points are held until a person has read the code", "")


def scan_contained(submission: Path, limit_bytes: int | None = None,
                   cpu_seconds: int | None = None) -> list[Finding]:
    """`scan_submission(submission)` run in a forked child whose memory is limited to
    `limit_bytes` (SCAN_MEMORY_BYTES) beyond the grading's own; where it goes past that (or
    dies), the one finding that says so; a file whose reading alone went past it is held on its
    own (source.TOO_LARGE_TO_READ), the limit said. An error of the scan's own is raised here,
    as it was in-process."""
    return scan_and_group_contained(submission, limit_bytes, cpu_seconds)[0]


def scan_and_group_contained(submission: Path, limit_bytes: int | None = None,
                             cpu_seconds: int | None = None
                             ) -> tuple[list[Finding], list[frozenset[str]] | None]:
    """(scan_contained's findings, the assignments whose files run together: scan_and_group's),
    the groups None where the scan did not finish."""
    limit_bytes = SCAN_MEMORY_BYTES if limit_bytes is None else limit_bytes
    cpu_seconds = SCAN_CPU_SECONDS if cpu_seconds is None else cpu_seconds
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: scan, write the findings (or what stopped it), exit
        os.close(read)
        _child(submission, limit_bytes, cpu_seconds, write)
    os.close(write)
    status, spent = None, 0.0
    try:
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status, usage = os.wait4(pid, 0)
        spent = usage.ru_utime + usage.ru_stime
    finally:
        if status is None:   # interrupted (Ctrl-C, the grading's timeout): no scan left behind
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    try:
        told = json.loads(data.decode("utf-8")) if data else None
    except ValueError:
        told = None
    if isinstance(told, dict) and isinstance(told.get("findings"), list):
        return _findings(told, limit_bytes), [frozenset(g) for g in told.get("groups", [])]
    return _what_stopped(told, status, spent, limit_bytes, cpu_seconds), None


def _findings(told: dict, limit_bytes: int) -> list[Finding]:
    limit = f"{limit_bytes // 2**20} MiB"
    return [dataclasses.replace(found, what=f"{found.what} ({limit})")
            if found.category == "unreadable" and found.what == TOO_LARGE_TO_READ else found
            for found in map(Finding.from_dict, told["findings"])]


def _what_stopped(told, status: int, spent: float, limit_bytes: int,
                  cpu_seconds: int) -> list[Finding]:
    """The one finding of a scan that did not finish; the scan's own error raised."""
    limit = f"{limit_bytes // 2**20} MiB"
    if not isinstance(told, dict):
        signalled = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if signalled == signal.SIGXCPU or (signalled == signal.SIGKILL and spent >= cpu_seconds):
            return [over_the_limit(f"the integrity scan took more than its {cpu_seconds} s of "
                                   "CPU time reading them and was stopped")]
        how = (f"stopped by signal {signal.Signals(os.WTERMSIG(status)).name}"
               if os.WIFSIGNALED(status) else f"exited with status {os.WEXITSTATUS(status)}")
        return [over_the_limit(f"the integrity scan stopped before it had read them ({how}; "
                               f"its memory limit is {limit})")]
    if "memory" in told:
        return [over_the_limit(f"the integrity scan went past its memory limit of {limit} "
                               f"reading them ({told['memory']}) and was stopped")]
    raise ScanFailed(told.get("error", "the scan told nothing of what it found"))


class ScanFailed(Exception):
    """The scan raised an error of its own in the child (its traceback's last line)."""


def _child(submission: Path, limit_bytes: int, cpu_seconds: int, write: int) -> None:
    code = 1
    try:
        _limit_memory(limit_bytes)
        # A fork starts with no CPU time spent: SIGXCPU past the soft limit, SIGKILL past the
        # hard one should SIGXCPU be caught.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        try:
            findings, groups = scan_and_group(submission)
            told = {"findings": [f.to_dict() for f in findings],
                    "groups": [sorted(group) for group in groups]}
        except MemoryError as problem:
            told = {"memory": f"MemoryError{': ' + str(problem) if str(problem) else ''}"}
        except Exception as problem:   # the scan's own bug: the parent raises it
            told = {"error": traceback.format_exception_only(problem)[-1].strip()}
        data = json.dumps(told).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(write, view):]
        code = 0
    except BaseException:   # nothing more to say: the parent tells what it got
        pass
    finally:
        os._exit(code)


def _limit_memory(limit_bytes: int) -> None:
    """The child's address space: what it has now (shared with the grading until written)
    plus `limit_bytes`, never above a limit already set."""
    with open("/proc/self/statm") as statm:
        now = int(statm.read().split()[0]) * _PAGE
    wanted = now + limit_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
