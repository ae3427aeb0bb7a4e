"""Cutting long output down to what a message needs."""
from __future__ import annotations

import os
from pathlib import Path


def last_lines(text: str, count: int) -> str:
    """The last `count` non-blank lines of `text` (a traceback's last line names the error)."""
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return "\n".join(lines[-count:])


def last_line_suffix(text: str) -> str:
    """": <last non-blank line>", or "" for blank text: appended to a one-line message."""
    line = last_lines(text, 1).strip()
    return f": {line}" if line else ""


def file_tail(path: str | Path, chars: int = 4000) -> str:
    """The last `chars` characters of a file (a log that may be huge), "" if unreadable."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - chars))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
