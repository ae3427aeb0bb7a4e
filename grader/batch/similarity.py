"""Fingerprints of the code a student added to the template, for the class page's
identical-code flags.

Taken from the unpacked copy while the batch prepares each upload (so code inside zips is
compared like code in folders) and kept in the gradebook with the submission. What is compared
is a file's Python tokens that are not the template's: a token-level diff of the file against
student_template/<assignment>/<file>, comments, docstrings and layout left out. Comparing whole
files had listed a whole class as "Identical code" (adv42 F2): Practical 5's solution is the
handout's one line `model = nn.DataParallel(model)`, so every correct script was the reference's
file. A file's added part is fingerprinted only where it is MIN_ADDED_TOKENS long or more:
shorter, honest students write it alike by chance (and a file left as the template gave it has
none).
"""
from __future__ import annotations

import difflib
import hashlib
import io
import re
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from grader.batch.layout import TEMPLATE_DIR, expected_files

MAX_SOURCE_BYTES = 2_000_000      # a larger code file is not read for the comparison
# Tokens the reference solutions add to their templates: Practical 5 6 (the one line), its
# single-GPU script 0, Practical 6 30 (all three lines spelled out by the template's hints),
# HW3 58, Practical 10 83, Practical 4 109. Under 40, the handout and the hints leave a right
# answer no room to differ; a copy of a real solution is longer.
MIN_ADDED_TOKENS = 40
# A file this many tokens long is not diffed (the diff's time grows with it): all of it counts
# as added.
MAX_DIFF_TOKENS = 20_000
# Marks the fingerprints of added code: a gradebook's older whole-file fingerprints are not
# compared (they held the template's and the handout's code).
ADDED = "added:"
_LEFT_OUT = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER)
_LINE_START = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL)
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)     # Python 3.12 and later
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def normalized_python(source: str) -> str:
    """The code's tokens without comments, blank lines or layout (docstrings stay: code)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return " ".join(t.string for t in tokens if t.type not in _LEFT_OUT)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return " ".join(re.sub(r"#[^\n]*", "", source).split())


def code_tokens(source: str) -> list[str] | None:
    """The code's tokens without comments, layout or docstrings (a string that is a statement
    of its own: prose, like a comment); None where the source does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    kept, fstring, depth = [], [], 0
    for i, token in enumerate(tokens):
        if token.type in _LEFT_OUT:
            continue
        if token.type == _FSTRING_START or depth:
            # Python 3.12 splits an f-string into parts: one token, as 3.11 reads it, or
            # the handout's print lines would count as many added tokens
            depth += (token.type == _FSTRING_START) - (token.type == _FSTRING_END)
            fstring.append(token.string)
            if not depth:
                kept.append("".join(fstring))
                fstring = []
            continue
        if token.type == tokenize.STRING and (i == 0 or tokens[i - 1].type in _LINE_START) \
                and i + 1 < len(tokens) and tokens[i + 1].type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            continue
        kept.append(token.string)
    return kept


def _rough_tokens(source: str) -> list[str]:
    """Words and single symbols of code that does not tokenize (comments dropped)."""
    return re.findall(r"\w+|[^\w\s]", re.sub(r"#[^\n]*", "", source))


def added_tokens(source: str, template: str) -> list[str]:
    """The tokens of `source` that are not the template's: inserted, or in place of the
    template's (what the template had and the source left out is not counted)."""
    mine, given = code_tokens(source), code_tokens(template)
    if mine is None or given is None:
        mine, given = _rough_tokens(source), _rough_tokens(template)
    if len(mine) > MAX_DIFF_TOKENS:
        return mine
    # autojunk off: it would treat "(" and "." (frequent in any code) as noise and match less
    diff = difflib.SequenceMatcher(None, mine, given, autojunk=False)
    return [token for op, start, end, _, _ in diff.get_opcodes() if op in ("replace", "delete")
            for token in mine[start:end]]


def _read(path: Path) -> str | None:
    """The text of a readable regular file of at most MAX_SOURCE_BYTES."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def fingerprint(path: Path, template: str = "") -> str | None:
    """ADDED + the sha256 of what the file adds to `template` (the template's source), or None
    for a file that is not a readable regular file or adds fewer than MIN_ADDED_TOKENS."""
    source = _read(path)
    if source is None:
        return None
    added = added_tokens(source, template)
    if len(added) < MIN_ADDED_TOKENS:
        return None
    return ADDED + hashlib.sha256(" ".join(added).encode()).hexdigest()


@lru_cache(maxsize=None)
def _template_source(rel: str, template_dir: Path = TEMPLATE_DIR) -> str:
    return _read(template_dir / rel) or ""


def code_fingerprints(root: Path, assignments: Sequence[str]) -> dict[str, str]:
    """{"hw3/model_parallel.py": fingerprint, ...} for the assignments' code files in `root`
    that add MIN_ADDED_TOKENS or more to the template's."""
    found = {}
    for assignment in assignments:
        for rel in sorted(expected_files(assignment)):
            if not rel.endswith(".py"):
                continue
            name = f"{assignment}/{rel}"
            value = fingerprint(root / name, _template_source(name))
            if value is not None:
                found[name] = value
    return found
