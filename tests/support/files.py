"""Submissions written by a test: a folder of files from {relative path: text or bytes}."""
from __future__ import annotations

from pathlib import Path


def write(submission: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = submission / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return submission
