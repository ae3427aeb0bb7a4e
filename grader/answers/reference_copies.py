"""Answers that are the course's reference solution's, word for word or a table's times: for
the instructor, never a point.

A TA's audit handed in the reference's answer sheet beside untouched code: its written answers
(the reference's text) reached the person grading them with no note, and a student's own
round-robin code came with the reference's timing tables. What is compared is what two honest
students do not write alike: a written answer of some length, the same after case, spacing and
punctuation; a table's times (a column named for a time), where two or more of the reference's
are the student's to the digits the less precise of the two was written with, at least
SIGNIFICANT of them (a copy rounded to 0.235 s is the reference's 0.2353 s). Never to a fixed
number of decimals: at the hundredth every honest Practical 6 step time in seconds (0.005 to
0.03) was 0.01 or 0.02, the reference's own (a TA's audit: four honest sheets said); a time
written to fewer digits ("21 ms", 0.02 s) tells no copy apart and is not compared. Facts every
right answer shares (counts, yes/no, layers per GPU) and memory (deterministic: every run of the
same code allocates the same) are never compared. Where the reference is not installed (the
student kit), nothing is.
"""
from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from grader.common.locations import data_folder

MIN_WORDS = 8          # a shorter answer ("No: it grows linearly.") is shared by right answers
MIN_TIMES = 2          # times of a table equal to the reference's before it is said
SIGNIFICANT = 3        # fewest significant digits a time is compared at
_WORD = re.compile(r"[^\W_]+")


def reference_copies(assignment: str, answers: Mapping[str, Any] | None,
                     reference: Path | None = None) -> list[str]:
    """One line per answer of `answers` (result.json's `answers`: {"values": ...}) that is the
    reference solution's, saying which and how; [] where the reference is not installed."""
    values = (answers or {}).get("values") or {}
    theirs = _reference_values(assignment, str(reference or data_folder("reference")))
    found = []
    for qid, value in values.items():
        ours = theirs.get(qid)
        if ours is None:
            continue
        if isinstance(value, str) and isinstance(ours, str):
            words = _words(value)
            if len(words) >= MIN_WORDS and words == _words(ours):
                found.append(f"{qid}: the same text as the course's reference solution's "
                             f"answer ({len(words)} words; case, spacing and punctuation "
                             "ignored): written by the student?")
        elif isinstance(value, list) and isinstance(ours, list):
            mine = _times(value)
            same = sorted({t for t in _times(ours) if any(_alike(t, m) for m in mine)})
            if len(same) >= MIN_TIMES:
                found.append(f"{qid}: {len(same)} of its times are the course's reference "
                             f"solution's ({', '.join(f'{t!r}' for t in same)}), to the digits "
                             "the student wrote: measured by the student?")
    return found


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _times(rows: list) -> list[float]:
    """The non-whole numbers of a table's time columns ("step_time_ms", "total_time_s"), as
    written."""
    found = []
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        for column, cell in row.items():
            if "time" in str(column) and isinstance(cell, (int, float)) \
                    and not isinstance(cell, bool) and float(cell) != int(cell):
                found.append(float(cell))
    return found


def _digits(number: float) -> int:
    """The significant digits `number` was written with (0.0187: 3; 0.021: 2; 125.61: 5)."""
    return len(Decimal(repr(number)).normalize().as_tuple().digits)


def _alike(theirs: float, mine: float) -> bool:
    """Whether two times are one number to the digits the less precise was written with, that
    being SIGNIFICANT or more."""
    digits = min(_digits(theirs), _digits(mine))
    return digits >= SIGNIFICANT and float(f"{theirs:.{digits}g}") == float(f"{mine:.{digits}g}")


@lru_cache(maxsize=16)
def _reference_values(assignment: str, reference: str) -> dict[str, Any]:
    """The reference's answer sheet as the grader reads a student's (read once per process)."""
    folder = Path(reference)
    if not (folder / assignment / "answers.yaml").is_file():
        return {}
    from grader.answers.collect import collect_answers
    try:
        return dict(collect_answers(folder, assignment, "sheet").values)
    except Exception:   # the reference unreadable: nothing to compare, never a grading error
        return {}
