"""A measured value in a table cell, written around its number the ways honest students write
it (adv55): the script's printed line pasted as the cell ("Median step time: 56.23 ms", "GPU 0:
max memory allocated 200.4 MiB"), a spread after the value ("56.23 ± 1.2 ms", "199.17±2.0 ms",
"56.23 ms (std 1.2)"), the unit in brackets ("56.23 (ms)", "200.4, 200.7 (MiB)", "41 (%)"), a
Markdown header naming the quantity without its unit ("| Median step time |" over "56.23 ms").
Each is turned into the form the sheet's reader already takes ("56.23 ms"); anything else is
left as written. A label or a unit of another quantity is never read past (a memory in a time
column stays words, for a person), and only a whole cell of one of these forms is rewritten, so
a hedge ("56 ± 1 ms or 60 ms") or a second value stays unread."""
from __future__ import annotations

import re

from .numbers import APPROXIMATELY, column_unit, quantity_in

_STATISTIC = r"(?:median|mean|average|avg\.?)"
# What each measured column measures, as the script's printed label or a header says it: the
# column's stem (its name without the unit) -> the words. "time" alone names a step time only
# where the table has no total time (markdown's header; a cell's label is in its column).
QUANTITY_WORDS = {
    "step_time": rf"(?:{_STATISTIC}\s+)?(?:(?:training\s+)?step[\s_-]*time|time\s+per\s+(?:training\s+)?"
                 rf"(?:step|iteration)|iteration\s+time|time)(?:\s+per\s+step)?|{_STATISTIC}",
    "total_time": r"total(?:\s+(?:training\s+|run\s*)?time)?|(?:training|run)\s*time|time",
    "memory_per_gpu": r"(?:(?:max(?:imum)?|peak)[\s_]+)?(?:gpu[\s_]+)?(?:memory|mem)(?:[\s_]+(?:allocated|used|usage))?"
                      r"(?:\s+per\s+gpu)?|(?:max(?:imum)?|peak)[\s_]+allocated",
    "memory": r"(?:(?:max(?:imum)?|peak)[\s_]+)?(?:gpu[\s_]+)?(?:memory|mem)(?:[\s_-]+(?:allocated|used|usage))?",
    "utilization": r"(?:gpu[\s_-]*)?util(?:i[sz]ation)?",
}
_GPU_LABEL = r"(?:cuda|gpu|device)\s*[:#]?\s*\d+\s*[:=]\s*"
_VALUE_AHEAD = r"(?=(?:" + APPROXIMATELY + r"\s*)?\d)"
_NUMBER = r"\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?"
_UNIT = r"[a-zµμ]+|%"


def _stem(column: str) -> str:
    return column.rpartition("_")[0]


def _words(column: str) -> str | None:
    return QUANTITY_WORDS.get(_stem(column))


def without_quantity_label(text: str, column: str, gpu_label: bool = False) -> str:
    """The cell without a leading label naming the column's quantity ("Median step time:
    56.23 ms", "avg 56.23 ms", "mean = 56.23 ms"): "56.23 ms". `gpu_label`: a GPU may lead the
    label (one item of a per-GPU list, "GPU 0: max memory allocated 200.4 MiB")."""
    words = _words(column)
    if words is None:
        return text
    label = re.match(r"\s*" + (f"(?:{_GPU_LABEL})?" if gpu_label else "") + rf"(?:{words})\s*(?:[:=]\s*|\s)\s*"
                     + _VALUE_AHEAD, text, re.IGNORECASE)
    return text[label.end():] if label else text


# "56.23 ± 1.2 ms", "182.59 ms ± 3.1", "56.23 +/- 1.2": the value, then its spread.
_SPREAD = re.compile(r"\s*(?P<value>(?:" + APPROXIMATELY + r"\s*)?" + _NUMBER + r")\s*(?P<value_unit>" + _UNIT +
                     r")?\s*(?:±|\+\s*/\s*[-−]|\+[-−])\s*" + _NUMBER + r"\s*(?P<spread_unit>" + _UNIT +
                     r")?\s*\.?\s*", re.IGNORECASE)
# "56.23 ms (±1.2)", "56.23 (std 1.2 ms)", "56.23 ms (sd: 1.2)": the spread in brackets.
_SPREAD_REMARK = re.compile(r"\s*(?P<value>(?:" + APPROXIMATELY + r"\s*)?" + _NUMBER + r")\s*(?P<value_unit>" + _UNIT +
                            r")?\s*\(\s*(?:±|\+\s*/\s*[-−]|\+[-−]|std\.?|s\.?d\.?|stdev|std\s+dev\.?|σ)\s*[:=]?\s*"
                            + _NUMBER + r"\s*(?P<spread_unit>" + _UNIT + r")?\s*\)\s*\.?\s*", re.IGNORECASE)


def without_spread(text: str) -> str:
    """The value of a mean and its spread, with the unit written beside either ("56.23 ± 1.2
    ms": "56.23 ms"), as a TA reads the mean; the text as written where it is anything more."""
    found = _SPREAD.fullmatch(text) or _SPREAD_REMARK.fullmatch(text)
    if found is None:
        return text
    unit = found["value_unit"] or found["spread_unit"]
    return f"{found['value']} {unit}" if unit else found["value"]


# "56.23 (ms)", "200.4, 200.7 (MiB)", "0.0203 [s]", "842 (in MiB)": numbers, then one unit in
# brackets, every number's.
_BRACKETED_UNIT = re.compile(r"(?P<numbers>[^()\[\]a-zµμ%]*\d[^()\[\]a-zµμ%]*?)\s*[(\[]\s*(?:in\s+)?"
                             r"(?P<unit>" + _UNIT + r")\s*[)\]]\s*\.?\s*", re.IGNORECASE)


def with_unit_unbracketed(text: str, unit: str) -> str:
    """Numbers with their unit in brackets as the same numbers with the unit after them
    ("56.23 (ms)": "56.23 ms"), where the unit is of the column's kind (a seconds column's
    "7.5 (ms)" is 7.5 ms, as the student named it); a unit of another kind stays as written."""
    found = _BRACKETED_UNIT.fullmatch(text)
    if found is None or quantity_in("1 " + found["unit"], unit) is None:
        return text
    return f"{found['numbers'].strip()} {found['unit']}"


def plain_measured(text: str, column: str, unit: str) -> str:
    """The cell as the reader takes it: its quantity's label, a spread and brackets round its
    unit taken away (see the module's docstring)."""
    return with_unit_unbracketed(without_spread(without_quantity_label(text, column)), unit)


_A_VALUE_WITH_UNIT = re.compile(r"\d\s*(" + _UNIT + r")(?![a-z])", re.IGNORECASE)


def _carries_unit(cell: str, unit: str) -> bool:
    return any(quantity_in("1 " + written, unit) is not None for written in _A_VALUE_WITH_UNIT.findall(cell))


def column_named_by_quantity(header: str, columns, cells: list[str]) -> str | None:
    """The measured column a Markdown header names by its quantity alone ("Step time", "Median
    step time", "Max memory allocated"), where exactly one column of the table is that quantity
    and every cell under the header says its unit of that kind ("56.23 ms"); else None."""
    text = " ".join(header.replace("_", " ").split())
    named = [column for column in columns if column_unit(column) is not None and _words(column)
             and re.fullmatch(_words(column), text, re.IGNORECASE)]
    if len(named) != 1:
        return None
    unit = column_unit(named[0])
    filled = [cell for cell in cells if cell.strip()]
    return named[0] if filled and all(_carries_unit(cell, unit) for cell in filled) else None
