"""Reading and replacing files in a folder that student code could write to (a run's scratch).

The grader reads them back outside the sandbox, with its own rights, so a name there may be a
symlink to any file of the grading machine, a FIFO that blocks forever, /dev/zero, or just
huge. Only regular files are read (never through a symlink, never blocking, up to a limit), and
a file is replaced by unlinking whatever has its name and creating a new one exclusively.
"""
from __future__ import annotations

import errno
import os
import stat

# A run's trace of a few hundred thousand records is some tens of MB; far beyond is not ours.
MAX_BYTES = 256 * 2**20


class NotARegularFile(Exception):
    """The name is a symlink, FIFO, device or folder: not something a run's writer makes."""


def read_text(path: str | os.PathLike, limit: int = MAX_BYTES) -> tuple[str, bool]:
    """(text, cut): the file's text, at most `limit` bytes of it (cut says whether more was
    there); raises NotARegularFile or FileNotFoundError."""
    data, cut = _read(path, limit)
    return data.decode("utf-8", errors="replace"), cut


def read_bytes(path: str | os.PathLike, limit: int = MAX_BYTES) -> bytes | None:
    """The file's bytes; None when it holds more than `limit` (not a file the grader's code
    wrote); raises NotARegularFile or FileNotFoundError."""
    data, cut = _read(path, limit)
    return None if cut else data


def _read(path: str | os.PathLike, limit: int) -> tuple[bytes, bool]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotARegularFile(f"{path} is a symbolic link") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)[:limit], size > limit
    finally:
        os.close(fd)


def read_lines(path: str | os.PathLike, limit: int = MAX_BYTES) -> list[str] | None:
    """The file's lines, or None when it is missing or not a regular file; beyond `limit`
    the rest is dropped (the last line kept is then torn, as after a killed writer)."""
    try:
        text, _cut = read_text(path, limit)
    except (NotARegularFile, FileNotFoundError):
        return None
    return text.splitlines()


def replace(path: str | os.PathLike, text: str) -> None:
    """Write `text` as a new regular file at `path`, whatever had that name before."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise NotARegularFile(f"{path} is a folder") from None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
