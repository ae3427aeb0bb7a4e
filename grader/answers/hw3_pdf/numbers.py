"""Numbers as students write them in a report: decimal commas, thousands separators, units, lists.

Kept apart from the PDF code so the rules can be tested on plain strings. Which of "." and
"," is the decimal mark is decided per table from the table's own numbers (decimal_mark):
"182,59" shows a decimal comma, "200.4" a decimal point. A number the table does not
decide ("56,230" in a table with no other comma or point) is ambiguous: it is reported,
never read one way silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# One number: digits with optional ".", "," groups and an exponent.
NUMBER = r"\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(NUMBER)

# Time units, longest first so "ms" is not read as "m" + "s".
_TIME_UNITS_TO_MS = {
    "milliseconds": 1.0, "millisecond": 1.0, "msec": 1.0, "ms": 1.0,
    "microseconds": 1e-3, "microsecond": 1e-3, "µs": 1e-3, "μs": 1e-3, "us": 1e-3,
    "seconds": 1000.0, "second": 1000.0, "secs": 1000.0, "sec": 1000.0, "s": 1000.0,
}
_TIME_UNIT_RE = re.compile(
    r"(?<![a-zµμ])(" + "|".join(re.escape(u) for u in sorted(_TIME_UNITS_TO_MS, key=len, reverse=True)) + r")(?![a-z])"
)

_MEMORY_UNITS_TO_MIB = {"kib": 1 / 1024, "kb": 1 / 1024, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0}
_MEMORY_UNIT_RE = re.compile(r"(?<![a-z])(kib|kb|mib|mb|gib|gb)(?![a-z])")
# "cuda:0: 200.4", "GPU 1 = 200.7", "gpu0: 81": the device names which value it is, and its
# number is not a value.
_DEVICE_PREFIX_RE = re.compile(r"(?:cuda|gpu|device)\s*:?\s*\d+\s*[:=]", re.IGNORECASE)


@dataclass
class ParsedNumber:
    value: float
    # Set when the text could honestly mean two numbers (e.g. "1,024"): the caller reports
    # it so a person looks at it.
    ambiguity: str | None = None


def shows_decimal_mark(token: str) -> str | None:
    """The decimal mark this one number proves, if any: "12,5" a comma, "1,234.5" a point,
    "1,234,567" a point (commas that group). "56,230" proves nothing."""
    mantissa = token.lower().partition("e")[0]
    if "," in mantissa and "." in mantissa:
        return "," if mantissa.rfind(",") > mantissa.rfind(".") else "."
    for mark, other in ((",", "."), (".", ",")):
        if mark in mantissa:
            groups = mantissa.split(mark)
            if len(groups) > 2:
                return other
            return mark if len(groups[1]) != 3 else None
    return None


def decimal_mark(texts) -> str | None:
    """The decimal mark a table's own numbers agree on; None when none shows it or they disagree."""
    marks = {shows_decimal_mark(token) for text in texts for token in _NUMBER_RE.findall(text)} - {None}
    return marks.pop() if len(marks) == 1 else None


def parse_decimal(text: str, mark: str | None = None) -> ParsedNumber | None:
    """The first number in `text`. `mark` is the table's decimal mark, if known; without it
    "12.5", "12,5", "1,234.5" and "1.234,5" are still clear, and "1,024" is ambiguous."""
    match = _NUMBER_RE.search(text)
    if not match:
        return None
    token = match.group(0)
    mantissa, _, exponent = token.replace("E", "e").partition("e")
    ambiguity = None
    shown = shows_decimal_mark(token)
    if shown is None and "," in mantissa:
        whole, frac = mantissa.split(",")
        if mark == ".":
            shown = "."
        elif mark == ",":
            shown = ","
        else:
            ambiguity = (f"'{token}' is ambiguous: {whole}{frac} or {whole}.{frac} (nothing else in the table "
                         "shows whether ',' marks decimals or thousands)")
            shown = ","
    elif shown is None and "." in mantissa:
        shown = "," if mark == "," else "."
    if shown == ",":
        mantissa = mantissa.replace(".", "").replace(",", ".")
    elif shown == ".":
        mantissa = mantissa.replace(",", "")
    try:
        value = float(mantissa + ("e" + exponent if exponent else ""))
    except ValueError:
        return None
    return ParsedNumber(value, ambiguity)


def time_unit_factor_ms(text: str) -> float | None:
    """Factor to milliseconds for the first time unit named in `text`, if any."""
    match = _TIME_UNIT_RE.search(text.lower())
    return _TIME_UNITS_TO_MS[match.group(1)] if match else None


def memory_unit_factor_mib(text: str) -> float | None:
    match = _MEMORY_UNIT_RE.search(text.lower())
    return _MEMORY_UNITS_TO_MIB[match.group(1)] if match else None


@dataclass
class ParsedQuantity:
    value: float | None  # None when ambiguous
    notes: list[str] = field(default_factory=list)
    ambiguous: bool = False


def parse_time_ms(cell: str, header_factor_ms: float | None, mark: str | None = None) -> ParsedQuantity | None:
    """A step time cell in ms. A unit in the cell wins over the header's unit ("0.0125 s"
    under a "(ms)" header is still seconds); with neither, ms, as the template asks."""
    number = parse_decimal(cell, mark)
    if number is None:
        return None
    # Look for the unit only after the number, so "~" or labels before it don't count.
    after = cell[_NUMBER_RE.search(cell).end():]
    factor = time_unit_factor_ms(after) or header_factor_ms or 1.0
    if number.ambiguity:
        return ParsedQuantity(None, [number.ambiguity], ambiguous=True)
    return ParsedQuantity(round(number.value * factor, 9))


_LIST_SPLIT_RE = re.compile(r"\s*(?:/|;|\||,\s+|\s+and\s+|\s+)\s*")


def parse_memory_list_mib(cell: str, header_factor_mib: float | None, gpus: int | None,
                          mark: str | None = None) -> tuple[list[float], list[str]]:
    """Memory per GPU: "80", "80, 80", "80 / 80", "80 MiB, 80 MiB", "1,5 GiB", "cuda:0: 80".

    A comma followed by a space separates GPUs; a comma between digits is a decimal comma
    or groups thousands (as the table shows), except when splitting on it gives exactly one
    value per GPU ("80,80" with 2 GPUs), which is noted for a person to confirm.
    """
    notes: list[str] = []
    factor = memory_unit_factor_mib(cell) or header_factor_mib or 1.0
    text = _DEVICE_PREFIX_RE.sub(" ", cell)
    text = _MEMORY_UNIT_RE.sub(" ", text.lower()).strip(" []()")
    pieces = [p for p in _LIST_SPLIT_RE.split(text) if _NUMBER_RE.search(p)]
    if (gpus and gpus > 1 and len(pieces) == 1 and pieces[0].count(",") == gpus - 1 and "." not in pieces[0]
            and shows_decimal_mark(pieces[0]) != "."):
        pieces = pieces[0].split(",")
        notes.append(f"memory '{cell.strip()}' read as one value per GPU ({', '.join(pieces)}), not as a decimal comma")
    values = []
    for piece in pieces:
        number = parse_decimal(piece, mark)
        if number is None:
            continue
        if number.ambiguity:
            notes.append(number.ambiguity)
        values.append(round(number.value * factor, 9))
    return values, notes


_INT_LIST_RE = re.compile(r"^[\s\[\(\{]*(\d+(?:\s*(?:,|;|/|&|\band\b|-|–)\s*\d+|[ \t]+\d+)*)(?![.,]\d)")


def parse_int_list(text: str) -> list[int] | None:
    """Leading list of integers: "3, 3", "[3, 3]", "2 and 3", "4 4 4 4 4".

    Only the leading run counts, so a remark after the answer ("3, 3 (cuda:0
    gets layers 0-2)") does not add numbers. Newlines inside the run are
    allowed only after an explicit separator (a wrapped "4, 4,\n4"), so a
    following table row is never swallowed.
    """
    match = _INT_LIST_RE.match(text)
    if not match:
        return None
    return [int(d) for d in re.findall(r"\d+", match.group(1))]
