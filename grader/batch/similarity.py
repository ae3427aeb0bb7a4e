"""Fingerprints of a submission's code files, for the class page's identical-code flags.

Taken from the unpacked copy while the batch prepares each upload (so code inside zips is
compared like code in folders) and kept in the gradebook with the submission. A fingerprint
is a hash of the file's Python tokens without comments, blank lines or layout (docstrings stay:
they are code); a file left as the template gave it is not fingerprinted, or every student who
has not started would be "identical".
"""
from __future__ import annotations

import hashlib
import io
import re
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from grader.batch.layout import TEMPLATE_DIR, expected_files

MAX_SOURCE_BYTES = 2_000_000      # a larger code file is not read for the comparison


def normalized_python(source: str) -> str:
    """The code's tokens without comments, blank lines or layout (docstrings stay: code)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        kept = [t.string for t in tokens if t.type not in (
            tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)]
        return " ".join(kept)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = re.sub(r"#[^\n]*", "", source)
        return " ".join(text.split())


def fingerprint(path: Path) -> str | None:
    """The normalised code's sha256, or None for a file that is not a readable regular file."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        normalized = normalized_python(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return hashlib.sha256(normalized.encode()).hexdigest() if normalized else None


@lru_cache(maxsize=None)
def _template_fingerprint(rel: str, template_dir: Path = TEMPLATE_DIR) -> str | None:
    return fingerprint(template_dir / rel)


def code_fingerprints(root: Path, assignments: Sequence[str]) -> dict[str, str]:
    """{"hw3/model_parallel.py": fingerprint, ...} for the assignments' code files in `root`
    that differ from the template's."""
    found = {}
    for assignment in assignments:
        for rel in sorted(expected_files(assignment)):
            if not rel.endswith(".py"):
                continue
            name = f"{assignment}/{rel}"
            value = fingerprint(root / name)
            if value is not None and value != _template_fingerprint(name):
                found[name] = value
    return found
