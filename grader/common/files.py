"""The one way the grader writes a file that someone else may read at any moment.

A reader (Gradescope picking up results.json as the script ends, a batch re-reading
result.json, an instructor opening grades.csv) sees the old file or the new one, never half
of one: the text goes to a temporary file in the same folder, is flushed to disk, and is
renamed over the target (rename is atomic within one filesystem). The temporary name is
unique per call, so two writers of the same file never clobber each other's half-written copy.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Files the staff open (grades.csv, index.html, instructor.md) and the student's own report are
# read by people other than the grader's user: the same mode everywhere, whatever the umask
# of the process that wrote them (mkstemp alone gives 0600).
DEFAULT_MODE = 0o644


def write_atomically(path: str | Path, content: str | bytes, *, mode: int = DEFAULT_MODE,
                     newline: str | None = None) -> Path:
    """Write `content` (text as UTF-8, or bytes) to `path` atomically; return the path.

    `newline`: as for open(): "" keeps the text's line endings exactly (CSV writers)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if isinstance(content, bytes):
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        with handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return target
