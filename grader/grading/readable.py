"""The submission as the runs of student code can read it. As root, every run drops to the
sandbox's unprivileged user, who reads only what others may read: a folder unzipped by a TA
whose umask is 077 (files 0600, folders 0700) had been graded 0 as "graded", each run stopped
by a PermissionError that the report blamed on the student's code. The batch never met it: it
copies every upload with readable modes (grader/batch/unpack.py); `grade` and `check` now
grade such a folder from a copy made the same way."""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from grader.batch.unpack import DIR_MODE, FILE_MODE
from grader.sandbox.bwrap import runs_as_root

# What is said of a closed submission, at most (the rest counted).
NAMED = 3


class UnreadableSubmission(Exception):
    """Parts of the submission neither the grader nor its runs can read: the instructor's to
    open (nothing graded), never a zero for the student."""


def closed_parts(submission: Path, *, by_others: bool) -> list[Path]:
    """Files and folders under `submission` that the runs cannot read (or enter): by others'
    permission bits where the runs are another user's (`by_others`), else by this process's
    access. Links are the sandbox's business (never followed here)."""
    closed: list[Path] = []
    stack = [submission]
    while stack:
        path = stack.pop()
        try:
            mode = path.lstat().st_mode
        except OSError:
            closed.append(path)
            continue
        if stat.S_ISLNK(mode):
            continue
        folder = stat.S_ISDIR(mode)
        if by_others:
            is_open = mode & (0o005 if folder else 0o004) == (0o005 if folder else 0o004)
        else:
            is_open = os.access(path, os.R_OK | os.X_OK if folder else os.R_OK)
        if not is_open:
            closed.append(path)
        if folder:
            try:
                stack += sorted(path.iterdir(), reverse=True)
            except OSError:
                pass   # closed to this process too: listed above
    return closed


def _said(submission: Path, closed: list[Path]) -> str:
    named = [p.relative_to(submission).as_posix() if p != submission else "." for p in
             closed[:NAMED]]
    more = f" and {len(closed) - NAMED} more" if len(closed) > NAMED else ""
    return ", ".join(named) + more


@contextlib.contextmanager
def readable_submission(submission: Path) -> Iterator[Path]:
    """`submission` itself where the runs can read all of it; else, as root, a private copy
    (files 0644, folders 0755, as the batch copies uploads), removed afterwards. Raises
    UnreadableSubmission where this process cannot read it either."""
    submission = Path(submission)
    as_root = runs_as_root()
    closed = closed_parts(submission, by_others=as_root)
    if not closed:
        yield submission
        return
    if not as_root:
        raise UnreadableSubmission(
            f"{submission}: not readable by the grader ({_said(submission, closed)}); nothing "
            f"was graded. Open it to the grader's user, e.g. chmod -R a+rX '{submission}', "
            "and grade it again")
    with tempfile.TemporaryDirectory(prefix="pdl-grade-readable-") as private:
        copy = Path(private) / submission.name
        copy_readable(submission, copy)
        yield copy


def copy_readable(source: Path, target: Path) -> None:
    """`source`'s tree into `target` with the batch's modes (an executable keeps its x for
    all); links copied as links, never followed; FIFOs, sockets and devices left out (never
    opened: reading a FIFO would block the grading)."""
    target.mkdir(mode=DIR_MODE)
    os.chmod(target, DIR_MODE)
    for folder, dirs, names in os.walk(source):
        here = target / Path(folder).relative_to(source)
        for name in sorted(dirs + names):
            path, copied = Path(folder, name), here / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                os.symlink(os.readlink(path), copied)
            elif stat.S_ISDIR(mode):
                copied.mkdir(mode=DIR_MODE)
                os.chmod(copied, DIR_MODE)
            elif stat.S_ISREG(mode):
                shutil.copyfile(path, copied, follow_symlinks=False)
                os.chmod(copied, FILE_MODE | (0o111 if mode & 0o100 else 0))
                os.utime(copied, ns=(path.lstat().st_atime_ns, path.lstat().st_mtime_ns))
