"""Numbers as students write them in a report: decimal commas, units, lists.

Kept apart from the PDF code so the rules can be tested on plain strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# One number: digits with optional ".", "," groups and an exponent. Which of
# "." and "," is the decimal mark is decided in parse_decimal, not here.
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


@dataclass
class ParsedNumber:
    value: float
    # Set when the text could honestly mean two numbers (e.g. "1,024"): the
    # caller turns it into a problem so a person looks at it.
    ambiguity: str | None = None


def parse_decimal(text: str) -> ParsedNumber | None:
    """The first number in `text`, accepting "12.5", "12,5", "1,234.5", "1.234,5"."""
    match = _NUMBER_RE.search(text)
    if not match:
        return None
    token = match.group(0)
    mantissa, _, exponent = token.replace("E", "e").partition("e")
    ambiguity = None
    if "," in mantissa and "." in mantissa:
        # Whichever mark comes last is the decimal one; the other groups thousands.
        decimal_mark = "," if mantissa.rfind(",") > mantissa.rfind(".") else "."
        thousands_mark = "." if decimal_mark == "," else ","
        mantissa = mantissa.replace(thousands_mark, "").replace(decimal_mark, ".")
    elif mantissa.count(",") > 1 or mantissa.count(".") > 1:
        mantissa = mantissa.replace(",", "").replace(".", "")  # 1,234,567 or 1.234.567
    elif "," in mantissa:
        whole, frac = mantissa.split(",")
        if len(frac) == 3 and len(whole) <= 3:
            ambiguity = f"'{token}' could be {whole}{frac} or {whole}.{frac}; read it as {whole}.{frac} (decimal comma)"
        mantissa = f"{whole}.{frac}"
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
    value: float
    notes: list[str] = field(default_factory=list)


def parse_time_ms(cell: str, header_factor_ms: float | None) -> ParsedQuantity | None:
    """A step time cell in ms. A unit in the cell wins over the header's unit
    ("0.0125 s" under a "(ms)" header is still seconds); with neither, ms, as
    the template asks."""
    number = parse_decimal(cell)
    if number is None:
        return None
    # Look for the unit only after the number, so "~" or labels before it don't count.
    after = cell[_NUMBER_RE.search(cell).end():]
    factor = time_unit_factor_ms(after) or header_factor_ms or 1.0
    notes = [number.ambiguity] if number.ambiguity else []
    return ParsedQuantity(number.value * factor, notes)


_LIST_SPLIT_RE = re.compile(r"\s*(?:/|;|\||,\s+|\s+and\s+|\s+)\s*")


def parse_memory_list_mib(cell: str, header_factor_mib: float | None, gpus: int | None) -> tuple[list[float], list[str]]:
    """Memory per GPU: "80", "80, 80", "80 / 80", "80 MiB, 80 MiB", "1,5 GiB".

    A comma followed by a space separates GPUs; a comma between digits is a
    decimal comma, except when splitting on it gives exactly one value per GPU
    ("80,80" with 2 GPUs), which is noted for a person to confirm.
    """
    notes: list[str] = []
    factor = memory_unit_factor_mib(cell) or header_factor_mib or 1.0
    text = _MEMORY_UNIT_RE.sub(" ", cell.lower()).strip(" []()")
    pieces = [p for p in _LIST_SPLIT_RE.split(text) if _NUMBER_RE.search(p)]
    if gpus and gpus > 1 and len(pieces) == 1 and pieces[0].count(",") == gpus - 1 and "." not in pieces[0]:
        pieces = pieces[0].split(",")
        notes.append(f"memory '{cell.strip()}' read as one value per GPU ({', '.join(pieces)}), not as a decimal comma")
    values = []
    for piece in pieces:
        number = parse_decimal(piece)
        if number is None:
            continue
        if number.ambiguity:
            notes.append(number.ambiguity)
        values.append(number.value * factor)
    return values, notes


_INT_LIST_RE = re.compile(r"^[\s\[\(\{]*(\d+(?:\s*(?:,|;|/|&|\band\b|-|–)\s*\d+|[ \t]+\d+)*)")


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
