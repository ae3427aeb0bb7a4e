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
written to fewer digits ("21 ms", 0.02 s) tells no copy apart and is not compared. A table whose
times are the reference's times scaled by one constant (adv42 F3: HW3's step times x1.13, none
equal to the reference's) is said too: SCALED_TIMES or more times of the student's, each written
to SIGNIFICANT digits or more and paired with the reference's of the same row (the same cells
besides the times, or else the same place in the table), whose ratios to the reference's are
one number to SIGNIFICANT digits (within SCALED_SPREAD of each other); an honest student's own
measurements do not keep the reference's proportions that closely. Facts every
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
SCALED_TIMES = 3       # fewest times of a table that are the reference's scaled before it is said
# How far apart the ratios to the reference's times may be and still be one scale: 0.5% of the
# ratio, about half a unit of its third significant digit (x1.13: within 0.0057); timing noise
# makes an honest student's ratios differ by several per cent.
SCALED_SPREAD = 0.005
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
            scale = _one_scale(value, ours)
            if len(same) >= MIN_TIMES:
                found.append(f"{qid}: {len(same)} of its times are the course's reference "
                             f"solution's ({', '.join(f'{t!r}' for t in same)}), to the digits "
                             "the student wrote: measured by the student?")
            elif scale is not None:
                ratio, pairs = scale
                found.append(f"{qid}: its times are the course's reference solution's times "
                             f"x{ratio:.{SIGNIFICANT}g} ("
                             + ", ".join(f"{student!r} = {given!r} x {student / given:.4g}"
                                         for student, given in pairs)
                             + "): measured by the student?")
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


def _timed_rows(rows: list) -> list[tuple[tuple, list[float]]]:
    """Per row of a table: its other cells (what names the row: depth 6, method DDP) and its
    non-whole times, in the row's order."""
    found = []
    for row in rows:
        if isinstance(row, Mapping):
            found.append((tuple(sorted((str(c), repr(v)) for c, v in row.items() if "time" not in str(c))),
                          _times([row])))
    return found


def _paired_times(mine: list, theirs: list) -> list[tuple[float, float]]:
    """(student's time, reference's time) pairs: rows paired by their other cells (depth 6),
    or by place where a table of as many rows names them otherwise (a sheet's own method
    names); times in a row by place."""
    rows, reference = _timed_rows(mine), _timed_rows(theirs)
    named = dict(reference) if len({key for key, _ in reference}) == len(reference) else {}
    if len(rows) == len(reference) and not all(key in named for key, _ in rows):
        paired = [(times, other) for (_, times), (_, other) in zip(rows, reference)]
    else:   # rows the reference has not (a depth of the student's own) are left out
        paired = [(times, named[key]) for key, times in rows if key in named]
    return [pair for times, other in paired for pair in zip(times, other)]


def _one_scale(mine: list, theirs: list) -> tuple[float, list[tuple[float, float]]] | None:
    """(ratio, pairs) where the student's table times (SCALED_TIMES or more, each written to
    SIGNIFICANT digits or more) are the reference's times all scaled by one ratio; else None."""
    pairs = [(m, t) for m, t in _paired_times(mine, theirs)
             if _digits(m) >= SIGNIFICANT and m > 0 and t > 0]
    if len(pairs) < SCALED_TIMES:
        return None
    ratios = [m / t for m, t in pairs]
    if max(ratios) - min(ratios) > SCALED_SPREAD * max(ratios):
        return None
    return sum(ratios) / len(ratios), pairs


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
