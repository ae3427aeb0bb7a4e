"""Numbers as students write them, in a report or an answer sheet: decimal commas, thousands
separators, units, lists, devices and words.

Kept apart from the PDF code so the rules can be tested on plain strings; the PDF reader
(hw3_pdf/) and the answer sheets (sheet.py) share them. Which of "." and
"," is the decimal mark is decided per table from the table's own numbers (decimal_mark):
"182,59" shows a decimal comma, "200.4" a decimal point. A number the table does not
decide ("56,230" in a table with no other comma or point) is ambiguous: it is reported,
never read one way silently.
"""

from __future__ import annotations

import ast
import operator
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

_MEMORY_UNITS_TO_MIB = {"bytes": 2**-20, "byte": 2**-20, "b": 2**-20, "kib": 1 / 1024,
                        "kb": 1 / 1024, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0}
_MEMORY_UNIT_RE = re.compile(r"(?<![a-z])(bytes|byte|b|kib|kb|mib|mb|gib|gb)(?![a-z])")
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
    "1,234,567" a point (commas that group), "0,612" and "1826,500" a comma (no thousands
    group follows a 0 or four digits). "56,230" proves nothing."""
    mantissa = token.lower().partition("e")[0]
    if "," in mantissa and "." in mantissa:
        return "," if mantissa.rfind(",") > mantissa.rfind(".") else "."
    for mark, other in ((",", "."), (".", ",")):
        if mark in mantissa:
            groups = mantissa.split(mark)
            if len(groups) > 2:
                return other
            grouping_possible = len(groups[1]) == 3 and 0 < len(groups[0]) <= 3 and groups[0] != "0"
            return None if grouping_possible else mark
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
    under a "(ms)" header is still seconds); with neither, ms, as the template asks. Thousands
    grouped by spaces are one number ("1 234 ms"); a range is its middle where it is narrow,
    said in a note, else ambiguous (time_range_in: "10-20 ms" had been read as 10 ms)."""
    cell = joined_groups(cell)
    span = time_range_in(cell, "ms", mark, whole=False)
    if span is not None:
        factor = 1.0 if span.unit_written else (header_factor_ms or 1.0)
        low, high = span.low * factor, span.high * factor
        if span.narrow:
            middle = round(span.middle * factor, 9)
            return ParsedQuantity(middle, [f"step time '{cell.strip()}' read as {middle:g} ms, the middle of its "
                                           f"range"])
        return ParsedQuantity(None, [f"step time '{cell.strip()}' is a range ({low:g} to {high:g} ms) wider than "
                                     f"{RANGE_TOLERANCE:.0%} each side of its middle: no one measured value"],
                              ambiguous=True)
    if _TWO_TIMES_RE.fullmatch(re.sub(r"\([^()]*\)", " ", cell)):
        # "12 and 14", "12 34 ms", "12 / 14 ms": two values, of which the first had been read.
        return ParsedQuantity(None, [f"step time '{cell.strip()}' is not one value (two numbers, and no "
                                     "'between' or '-' to make them a range)"], ambiguous=True)
    number = parse_decimal(cell, mark)
    if number is None:
        return None
    # Look for the unit only after the number, so "~" or labels before it don't count.
    after = cell[_NUMBER_RE.search(cell).end():]
    factor = time_unit_factor_ms(after) or header_factor_ms or 1.0
    if number.ambiguity:
        return ParsedQuantity(None, [number.ambiguity], ambiguous=True)
    return ParsedQuantity(round(number.value * factor, 9))


# Two or more times in one cell and nothing else, each perhaps with its unit: "12 and 14",
# "12 34 ms", "12, 14 ms", "12 ms / 14 ms", "18 or 19" (a remark in brackets set aside; "12,5"
# is one).
_A_TIME = r"(?:[~≈∼]\s*)?\d+(?:[.,]\d+)?\s*(?:ms|s|sec|secs|seconds?|µs|μs|us|msec|milliseconds?)?"
_TWO_TIMES_RE = re.compile(r"\s*" + _A_TIME + r"(?:\s*(?:,\s+|;|/|&|\band\b|\bor\b|\s)\s*" + _A_TIME + r")+\s*\.?\s*",
                           re.IGNORECASE)

_LIST_SPLIT_RE = re.compile(r"\s*(?:/|;|\||,\s+|\s+and\s+|\s+)\s*")

# nvidia-smi's memory reading, "1012MiB / 81920MiB" (used / total), as students copy it: a
# number, perhaps its unit, "/", a number and its unit (or the column's), nothing grouped.
_MEMORY_PAIR_RE = re.compile(r"(?<![\d.,])(?P<used>\d+(?:\.\d+)?)\s*(?P<used_unit>mib|mb|gib|gb)?\s*/\s*"
                             r"(?P<total>\d+(?:\.\d+)?)\s*(?P<unit>mib|mb|gib|gb)?(?![\d\w]|[.,]\d)", re.IGNORECASE)
# The least a GPU's whole memory is: the HW3 model's peak on one GPU is a few hundred MiB.
_LEAST_TOTAL_MIB = 4096


def without_memory_totals(text: str, factor_mib: float = 1.0) -> str:
    """`text` with each of nvidia-smi's "used / total" pairs as its used memory: "1012MiB /
    81920MiB" -> "1012MiB", "1012MiB / 81920MiB, 980MiB / 81920MiB" -> "1012MiB, 980MiB". A pair
    is one only where the second is a whole GPU's memory (at least 4 GiB) and the first at most
    half of it: "80 MiB / 80 MiB" or "20480 MiB / 20600 MiB" may be two GPUs' memory and are
    left as they are, as is a "/" list of more than two values ("402 / 398 / 410").
    `factor_mib`: MiB per unit for a number written without one (the column's unit)."""
    def in_mib(number: str, unit: str | None) -> float:
        return float(number) * (_MEMORY_UNITS_TO_MIB[unit.lower()] if unit else factor_mib)

    def used(pair: re.Match) -> str:
        total = in_mib(pair["total"], pair["unit"])
        used_mib = in_mib(pair["used"], pair["used_unit"] or pair["unit"])
        listed = text[:pair.start()].rstrip().endswith("/") or text[pair.end():].lstrip().startswith("/")
        if total < _LEAST_TOTAL_MIB or used_mib > total / 2 or listed:
            return pair.group(0)
        return f"{pair['used']} {pair['used_unit'] or pair['unit'] or ''}".strip()

    return _MEMORY_PAIR_RE.sub(used, text)


def parse_memory_list_mib(cell: str, header_factor_mib: float | None, gpus: int | None,
                          mark: str | None = None) -> tuple[list[float], list[str]]:
    """Memory per GPU: "80", "80, 80", "80 / 80", "80 MiB, 80 MiB", "1,5 GiB", "cuda:0: 80".

    A comma followed by a space separates GPUs; a comma between digits is a decimal comma
    or groups thousands (as the table shows), except when splitting on it gives exactly one
    value per GPU ("80,80" with 2 GPUs), which is noted for a person to confirm.
    """
    notes: list[str] = []
    cell = joined_groups(cell, spaces=False)   # "1\u2009012": one value (a plain space lists values)
    cell = without_memory_totals(cell, header_factor_mib or 1.0)   # "1012MiB / 81920MiB": one GPU's
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
        if re.fullmatch(r"\d+(?:[.,]\d+)?[-–]\d+(?:[.,]\d+)?", piece):
            notes.append(f"memory '{piece}' is ambiguous: a range, no one value")   # had been its first number
            continue
        number = parse_decimal(piece, mark)
        if number is None:
            continue
        if number.ambiguity:
            notes.append(number.ambiguity)
        values.append(round(number.value * factor, 9))
    return values, notes


# -- answers written in a sheet's field: a count, a list, a quantity with its unit --------------
# Lenient only where a TA would read the same number at a glance: anything that could mean
# another value ("1 or 2", "GPUs - 1", "thirty-two", "0-2, 3-5") is not read, so the check says
# the answer is unreadable and a person sees it, instead of a guess.
# A GPU or rank named with its number ("cuda:0", "GPU 1", "gpu0", "Rank 0"): the number counts.
_NAMED_INDEX_RE = re.compile(r"\b(?:cuda|gpu|device|rank)\s*[:#]?\s*(\d+)\b", re.IGNORECASE)
# Counts written as words ("one transfer", "twice"); "none" is a count too ("none move").
_NUMBER_WORDS = {
    "zero": 0, "none": 0, "one": 1, "once": 1, "two": 2, "twice": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "sixteen": 16, "twenty": 20,
}
_NUMBER_WORD_RE = re.compile(r"(?<![\w-])(" + "|".join(_NUMBER_WORDS) + r")(?![\w-])", re.IGNORECASE)
# Tens and compounds ("thirty-two", "twenty one"): not read as words.
_COMPOUND_WORD_RE = re.compile(r"\b(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                               r"hundred)\b\W*\w|\b(?:thirty|forty|fifty|sixty|seventy|eighty|"
                               r"ninety|hundred)\b", re.IGNORECASE)


def compound_number_word(text: str) -> bool:
    """Whether `text` says a number in words past twenty ("thirty-two", "twenty one")."""
    return _COMPOUND_WORD_RE.search(str(text)) is not None


# A number standing alone (not "1st", "4GPUs", "64x2000", "1e3").
_PLAIN_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)(?![A-Za-z])")
# A measured value with its unit, a remark beside a GPU ("cuda:0 with 1012 MiB").
_QUANTITY_REMARK_RE = re.compile(r"\d+(?:[.,]\d+)?\s*(?:[kmg]i?b|%|ms|s)\b", re.IGNORECASE)
# What a list of whole numbers may be wrapped in: "torch.Size([64, 1000])", "[32, 32]", "(2, 3)".
_LIST_WRAPPER_RE = re.compile(r"^\s*(?:torch\.size\s*)?[\[(]*\s*|\s*[\])]*\s*$", re.IGNORECASE)
# A remark in parentheses after a number ("22 (cuda:0), 21, 21", "0 (stage 0), 2 (stage 1)").
_REMARK_RE = re.compile(r"(?<=\d)\s*\([^()]*[A-Za-z][^()]*\)")
# Another value offered beside the answer ("4 (or 1, or 19)", "3, 3 (or 2, 4)", "20 (maybe 21)"),
# or the value doubted ("4?", "probably 4", "at least 4", "4 or so"): the text gives no one value.
_ALTERNATIVE_RE = re.compile(r"\(\s*(?:or|maybe|perhaps|possibly|either|alternatively)\b|\bor\s+(?:maybe\s+)?\d|"
                             r"\d\s*\?|\b(?:maybe|perhaps|probably|possibly|at\s+least|at\s+most)\s+\d|"
                             r"\d\s+or\s+(?:so|more|less|fewer)\b",
                             re.IGNORECASE)
# Between the items of a list: ", ", ",", "/", "+", ";", "&", "and", "->", "→", or spaces.
_ITEM_SPLIT_RE = re.compile(r"\s*(?:[,/+;&|]|->|→|\band\b)\s*|\s+", re.IGNORECASE)
# One range and nothing else ("0-3", "2–3", "from 2 to 3"): every number in it.
_RANGE_RE = re.compile(r"^\s*(?:from\s+)?(\d+)\s*(?:-|–|\bto\b)\s*(\d+)\s*$", re.IGNORECASE)
# A GPU by name and number: "cuda:0", "GPU 1", "gpu0", "device #2".
_GPU = r"(?:cuda|gpu|device)\s*[:#]?\s*\d+"
# A GPU naming the value after it ("GPU 0: 3", "GPU 0 - 22") or before it ("3 on GPU 0").
# "GPU 0 has 3 layers" too (a TA's HW3 sheet), where a number follows the verb: "GPU 0 has
# layers 0-2" names layers, not a count. An arrow to another GPU ("cuda:0 -> cuda:2", the
# way the data flows) lists both, never labels the second (adv55 A: read as [2]).
_LABEL_RE = re.compile(rf"\b{_GPU}\s*(?:[:=]|(?:->|→)(?!\s*{_GPU})|[-–](?=\s*\d))|\bon\s+{_GPU}\b|"
                       rf"\b{_GPU}\s+(?:has|holds|gets)\s+(?=\d)", re.IGNORECASE)
# Every GPU named and followed by its value with a space only ("cuda:0 22, cuda:1 21").
_SPACED_LABEL_RE = re.compile(rf"\b{_GPU}\s+(?=\d)", re.IGNORECASE)
# One value led by its GPU ("cuda:0: 80", "GPU 0 - 22", "GPU 1 = 80"), a list's item.
_ITEM_LABEL_RE = re.compile(rf"^\s*{_GPU}\s*[:=\-–]\s*(?=\d)", re.IGNORECASE)
# Words around the numbers of a list that say what they are ("layers 2 and 3", "between layer
# 2 and layer 3", "after layer 2, before layer 3", "only GPUs 0 and 1").
_LIST_WORDS_RE = re.compile(r"\b(?:layers?|between|after|before|indices|index|only)\b", re.IGNORECASE)
# "GPUs 0 and 2", "gpus: 0, 2": the plural names the GPUs listed after it (a TA's P10 sheet);
# after a number ("4 GPUs: 0, 1, 2, 3") it is a count, and the list is not read.
_GPUS_BEFORE_LIST_RE = re.compile(r"(?<!\d)(?<!\d\s)\b(?:gpus|devices)\s*:?\s*(?=\d)", re.IGNORECASE)


# Markdown emphasis or code around a value ("**1**", "`20`", "_3, 3_"), as a sheet written like
# a README has it: marks that open and close at the value's edges, never a "*" between digits
# ("2*3*4" is a product, not "234").
_MARKED_RE = re.compile(r"(?<![\w*`])(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1(?![\w*`])")


# A value (a count, a list, a time) is short: the readers' patterns, whose time can grow with
# the square of crafted text, are not given longer text to search.
MAX_VALUE_CHARS = 1000


def without_markdown(text: str) -> str:
    """`text` without the Markdown emphasis and code marks around its values (text longer than
    a value is left as it is, never searched)."""
    return _MARKED_RE.sub(r"\2", text) if len(text) <= MAX_VALUE_CHARS else text


# What a count's result may have after it: its unit ("16 rows"), what it is counted over ("32
# per rank", "16 per micro-batch", "32 samples per GPU", "32 each"), and a remark in brackets
# with no number in it ("32 per rank (each GPU)"); never another number.
_RESULT_WORDS = (r"(?:\s+[A-Za-z]+)?"
                 r"(?:\s+(?:per|for\s+each|on\s+each|in\s+each)\s+(?:rank|gpu|process|device|node|"
                 r"micro[-\s]?batch|replica|worker|stage|step)|\s+each)?"
                 r"(?:\s*\((?![^()]*\d)[^()]{1,40}\))?")
# A calculation with its result last: an expression with an operator, "=", one whole number,
# perhaps its unit ("64/4 = 16", "64 / 4 = 16 rows", "64 / 2 = 32 per rank"); a bare "64/2"
# says no result.
_EXPRESSION = r"[\w .()#]*?[\w)]\s*[-+*/×−][\w .()*/×+−-]*"
_WORKED_OUT_RE = re.compile(r"\s*(?P<expression>" + _EXPRESSION + r")=\s*(?P<result>\d+)(?:\.0+)?"
                            + _RESULT_WORDS + r"\s*\.?\s*", re.IGNORECASE)
# The result first, then how it was worked out ("4 = 5 - 1", "4 = N - 1").
_RESULT_FIRST_RE = re.compile(r"\s*(?P<result>\d+)(?:\.0+)?\s*=\s*(?P<expression>" + _EXPRESSION + r"?)\s*\.?\s*")
# A GPU count written beside a count of something else ("With 5 GPUs: 4", "4 transfers between
# 5 GPUs", "5 GPUs -> 4"): the question's setting, with what joins it to the answer.
_GPU_COUNT_RE = re.compile(r"(?<![\w.])(\d+)\s*-?\s*gpu(?:s|['’]s)?\b\s*(?:[:=]|->|→)?", re.IGNORECASE)
# What a calculation of numbers alone may hold; "**" (a power) is no part of one.
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv}


def _value_of(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _value_of(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value_of(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_value_of(node.left), _value_of(node.right))
    raise ValueError("not arithmetic")


def _arithmetic(expression: str) -> float | None:
    """The value of a calculation of numbers alone ("64/4", "13 × 4 + 12"); None for anything
    else. Never eval: the parsed tree is walked for numbers and + - * / // only."""
    text = re.sub(r"\s[xX]\s", " * ", expression).replace("×", "*").replace("−", "-").strip()
    try:
        return _value_of(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, ArithmeticError, RecursionError, MemoryError):
        return None


def _worked_out(text: str) -> int | None:
    """The result of a calculation written with it ("64/4 = 16", "4 = 5 - 1"), where one of
    numbers alone comes to it: "4 = 5 + 1" says two values. A calculation with names ("N - 1")
    is taken as written. A chain ("N - 1 = 5 - 1 = 4") is read where every calculation of
    numbers alone in it comes to its result; a result in brackets ("N - 1 (= 4)") too."""
    bracketed = _RESULT_IN_BRACKETS_RE.fullmatch(text)
    if bracketed:
        text = f"{bracketed['expression']} = {bracketed['result']}"
    if text.count("=") >= 2 and "==" not in text:
        return _chain(text.split("="))
    found = _WORKED_OUT_RE.fullmatch(text) or _RESULT_FIRST_RE.fullmatch(text)
    if not found:
        return None
    result, expression = int(found["result"]), found["expression"]
    if re.search(r"[A-Za-z_#]", expression):
        return result
    return result if _arithmetic(expression) == result else None


def worked_out_value(text: str) -> int | None:
    """A formula written with its value ("64/2 = 32", "N - 1 = 4", "16 = 64/4"), read the way
    a single answer is (whole_number_in): the value, where every calculation of numbers alone
    in it comes to it; None for any other text. A table's cells are read with it too."""
    text = str(text)
    if len(text) > MAX_VALUE_CHARS or _ALTERNATIVE_RE.search(text):
        return None
    return _worked_out(text)


# "N - 1 (= 4)", "N-1 (=4)": a formula with the value it comes to in brackets after it.
_RESULT_IN_BRACKETS_RE = re.compile(r"\s*(?P<expression>[^()=]*?[^\s(])\s*\(\s*=\s*(?P<result>\d+)\s*\)\s*\.?\s*")
_CHAIN_RESULT_RE = re.compile(r"\s*(\d+)(?:\.0+)?" + _RESULT_WORDS + r"\s*\.?\s*", re.IGNORECASE)
_CHAIN_PART_RE = re.compile(r"\s*(?:" + _EXPRESSION + r"|\d+(?:\.0+)?)\s*")


def _chain(parts: list[str]) -> int | None:
    """"N - 1 = 5 - 1 = 4": the last part is the result; every other part a formula with names
    (taken as written) or a calculation of numbers alone that comes to it ("16 = 64/4 = 15"
    says two values)."""
    result = _CHAIN_RESULT_RE.fullmatch(parts[-1])
    if result is None or not all(_CHAIN_PART_RE.fullmatch(part) for part in parts[:-1]):
        return None
    value = int(result.group(1))
    for part in parts[:-1]:
        if not re.search(r"[A-Za-z_#]", part) and _arithmetic(part) != value:
            return None
    return value


# A calculation of numbers alone, standing for its value in a field meant for one count ("5 -
# 1", "13 x 4 + 12", "(5 - 1) * 5"): numbers (a point for decimals) joined by +, -, x, × and
# *, in brackets or not, with at least one + or -. Only where nothing else is written ("3 x 3
# matrix" is a shape); a product alone ("32 x 1000", "3 * 4") may be a shape too (the rank's
# batch written as its tensor) and is read only with its result ("4 x 5 = 20", _worked_out).
# "-" only with a space each side or as "−" ("5-1", "3-4" and "2026-12-06" are a range, a
# date, a code), "x" only between spaces ("4x5" spells a shape), and never "/": the handouts
# write a split "32/32", and a bare "64/2" says no result.
_CALCULATION_NUMBER = r"\(*\s*\d+(?:\.\d+)?\s*\)*"
_CALCULATION_RE = re.compile(r"\s*" + _CALCULATION_NUMBER + r"(?:(?:\s*[+*×−]\s*|\s+[-xX]\s+)"
                             + _CALCULATION_NUMBER + r")+\s*\.?\s*")
# Two numbers joined by an operator inside other words ("3 x 3 matrix", "5 - 1 transfers"): a
# calculation or a shape that is not the count alone.
_JOINED_NUMBERS_RE = re.compile(r"\d\s*(?:[+*×−]|\s[-xX]\s)\s*\(*\s*\d")


def calculation_value(text: str) -> int | None:
    """The whole number a calculation of numbers alone comes to (_CALCULATION_RE's forms);
    None for any other text, and for a value that is not a whole number at least 0."""
    if len(text) > MAX_VALUE_CHARS or not _CALCULATION_RE.fullmatch(text) or "**" in text \
            or not re.search(r"[+−]|\s-\s", text):
        return None
    value = _arithmetic(text.strip().rstrip("."))
    if value is None or value < 0 or not float(value).is_integer():
        return None
    return int(value)


# A formula of names without its value ("N - 1", "GPUs - 1", "DEPTH / 2"): the reader cannot
# know which number N is (the GPUs, or the layers of a round-robin layout's DEPTH - 1), so a
# person reads it, and the student is told to write the number it comes to.
_FORMULA_ALONE_RE = re.compile(r"\s*[#\w .()]*[A-Za-z_][#\w .()]*?\s*[-+*/×−]\s*[\w .()*/×+−-]+\s*\.?\s*")


def formula_alone(text: str) -> bool:
    return len(text) <= MAX_VALUE_CHARS and "=" not in text and bool(_FORMULA_ALONE_RE.fullmatch(text))


def gpu_count_given(question: str) -> int | None:
    """The GPU count a question about another count gives as its setting ("DEPTH=20 on 5 GPUs:
    how many of those calls ...", "Number of transfers with 5 GPUs"): 5. None where it names
    none, or asks for a GPU count itself ("how many GPUs does each rank use?")."""
    if re.search(r"\bhow\s+many\s+gpus\b", question, re.IGNORECASE):
        return None
    found = re.search(r"\b(?:on|with)\s+(\d+)\s+gpus?\b", question, re.IGNORECASE)
    return int(found.group(1)) if found else None


# A question for the samples of one of several equal parts of a batch ("how many samples does
# each rank process per step?", "how many samples are in one micro-batch?").
_ONE_PART_SIZE_RE = re.compile(r"\bsamples\b.*\b(?:each|one|per)\s+(?:rank|gpu|micro-?batch|replica|"
                               r"process|device)\b", re.IGNORECASE | re.DOTALL)
# Equal sizes joined by "+" ("32 + 32", "16+16+16+16"), the total before them or not ("64 = 32 + 32").
_EQUAL_TERMS_RE = re.compile(r"\s*(?:(?P<total>\d+)\s*=\s*)?(?P<terms>\d+(?:\s*\+\s*\d+)+)\s*\.?\s*")


def size_of_equal_parts(text: str, question: str) -> int | None:
    """"32 + 32" where the question asks the samples of one part: the parts' sizes listed, as
    the course's own P5 answers write a split ("32 + 32"), so each part's 32, not the total 64
    (adv51 F4: as "32/32" and "32, 32" are read). None for unequal terms ("32 + 30": its sum, as
    before), a total that is not their sum, and other questions ("2 + 2" transfers are 4)."""
    found = _EQUAL_TERMS_RE.fullmatch(str(text)) if _ONE_PART_SIZE_RE.search(question) else None
    if found is None:
        return None
    terms = {int(term) for term in found["terms"].split("+")}
    count = found["terms"].count("+") + 1
    if len(terms) != 1 or (found["total"] and int(found["total"]) != count * min(terms)):
        return None
    return terms.pop()


# "4 micro-batches of 16 (samples, rows) (each)": both Part 1 Q3 counts in one answer.
_MICRO_BATCHES_OF_RE = re.compile(r"\s*(?P<count>\d+)\s+micro-?batch(?:es)?\s+of\s+(?P<size>\d+)"
                                  r"(?:\s+(?:samples|rows))?(?:\s+each)?\s*\.?\s*", re.IGNORECASE)


def micro_batches_said(text: str, question: str) -> int | None:
    """"4 micro-batches of 16" (adv51 F8): 4 where the question asks how many micro-batches, 16
    where it asks the samples in one; None for any other text or question."""
    found = _MICRO_BATCHES_OF_RE.fullmatch(str(text))
    if found is None:
        return None
    if re.search(r"\bhow\s+many\s+micro-?batches\b", question, re.IGNORECASE):
        return int(found["count"])
    if re.search(r"\bsamples\b.*\b(?:one|each)\s+micro-?batch\b", question, re.IGNORECASE):
        return int(found["size"])
    return None


def _without_gpu_count(text: str, gpus: int) -> str | None:
    """`text` without the question's own GPU count written beside the answer ("With 5 GPUs:
    4" -> "With 4"); None where it names another GPU count ("With 2 GPUs: 1" answers another
    setup)."""
    if any(int(found.group(1)) != gpus for found in _GPU_COUNT_RE.finditer(text)):
        return None
    return _GPU_COUNT_RE.sub(" ", text)


# A rate of one said after a count, as how it is laid out ("2 processes, one per GPU", "2, one
# per GPU"): no second count. Alone ("one per layer") it is a rate, and no count is read.
# HW3 Task 5's counts say theirs too ("20, one per layer", "4 transfers, one per boundary": adv51 F8).
_RATE_REMARK_RE = re.compile(r"(?<=\S)\s*[,;(]\s*(?:one|a|an|1)\s+(?:\w+\s+)?per\s+(?:gpu|rank|process|device|"
                             r"node|stage|replica|worker|layer|boundary)(?:\s+between\s+(?:two\s+)?gpus)?"
                             r"\s*\)?\s*\.?\s*$", re.IGNORECASE)


# Words that offer another answer or doubt the one given ("2 - could be 4", "1.2 (maybe
# 1.5)", "2.4 (unsure)"): a remark holding one is a hedge, never read past (adv54 F3).
HEDGE_WORDS = (r"\b(?:could|might|possibly|probably|otherwise|else|or|maybe|perhaps|either|unsure|"
               r"unless|alternatively|alt|guess(?:ed)?)\b|"
               r"\?|~|≈")
# GPUs, ranks or layers named by their numbers in a remark ("ranks 0 and 1", "cuda:0 and
# cuda:2"): which ones, never how many.
_NAMED_BY_NUMBER_RE = re.compile(r"\b(?:ranks?|gpus?|cuda|devices?|stages?|layers?)\s*:?\s*#?\d+(?:\s*(?:,|"
                                 r"\band\b|&|\bto\b|-|–|->|→)\s*(?:(?:cuda|gpu)\s*:?\s*)?\d+)*",
                                 re.IGNORECASE)
# How a count comes, as a calculation ("64/2", "N-1", "= 64 / 4").
_HOW_IT_COMES_RE = re.compile(r"\s*=?\s*[\w.]+(?:\s*(?:[-+*/×]|//|\s[xX]\s)\s*[\w.]+)+\s*")


# Number words of the languages students here also write in (German, French, Spanish, Italian,
# Dutch), read only to find a second count in a remark ("2 (vier)"); words that are English too
# with another sense ("once", "due") are left out.
_FOREIGN_NUMBER_WORDS = {
    **dict.fromkeys(("null", "zéro", "cero", "nul"), 0),
    **dict.fromkeys(("eins", "eine", "un", "une", "uno", "una", "een"), 1),
    **dict.fromkeys(("zwei", "deux", "dos", "twee"), 2),
    **dict.fromkeys(("drei", "trois", "tres", "tre", "drie"), 3),
    **dict.fromkeys(("vier", "quatre", "cuatro", "quattro"), 4),
    **dict.fromkeys(("fünf", "funf", "cinq", "cinco", "cinque", "vijf"), 5),
    **dict.fromkeys(("sechs", "seis", "sei", "zes"), 6),
    **dict.fromkeys(("sieben", "sept", "siete", "sette", "zeven"), 7),
    **dict.fromkeys(("acht", "huit", "ocho", "otto"), 8),
    **dict.fromkeys(("neun", "neuf", "nueve", "nove", "negen"), 9),
    **dict.fromkeys(("zehn", "dix", "diez", "dieci", "tien"), 10),
    **dict.fromkeys(("zwölf", "douze", "doce", "dodici", "twaalf"), 12),
    **dict.fromkeys(("sechzehn", "seize", "dieciséis", "sedici", "zestien"), 16),
    **dict.fromkeys(("zwanzig", "vingt", "veinte", "venti", "twintig"), 20),
    **dict.fromkeys(("zweiunddreißig", "zweiunddreissig", "trente-deux", "treinta y dos",
                     "trentadue", "tweeëndertig"), 32),
    **dict.fromkeys(("vierundsechzig", "soixante-quatre", "sesenta y cuatro", "sessantaquattro",
                     "vierenzestig"), 64),
}
_FOREIGN_NUMBER_WORD_RE = re.compile(r"(?<![\w-])(" + "|".join(sorted(_FOREIGN_NUMBER_WORDS, key=len, reverse=True))
                                     + r")(?![\w-])", re.IGNORECASE)
# The whole a count is a part of ("64 total", "of 64", "out of 64 rows", "total: 64").
_TOTAL_REMARK_RE = re.compile(r"\s*(?:(?:out\s+)?of\s+\d+(?:\s+[A-Za-z-]+)?|\d+\s+(?:[A-Za-z-]+\s+)?(?:in\s+)?total|"
                              r"(?:in\s+)?total\s*:?\s*\d+(?:\s+[A-Za-z-]+)?)\s*\.?\s*", re.IGNORECASE)
# The size of each of the counted parts ("4, of 16 rows each", "4 (16 samples each)"): what each
# is, not a second count of them (adv55 I).
_PART_SIZE_REMARK_RE = re.compile(r"\s*(?:of|with)?\s*\d+\s+(?:rows?|samples?|examples?)\s+(?:each|apiece)\s*\.?\s*",
                                  re.IGNORECASE)
# A term of a worded calculation: a number and what it counts ("2 forward").
_COUNTED_TERM_RE = re.compile(r"(\d+)\s+[A-Za-z][\w-]*")


def remark_on_count(remark: str, count: int) -> bool:
    """Whether a remark said after `count` ("2 - ranks 0 and 1", "32 (64/2)", "20 (one per
    layer)") only says what the count is or how it comes, so that the count is the answer: no
    hedging word, and no number in it but GPUs or ranks named by theirs, or a calculation that
    comes to the count ("N-1" is taken as written). "2 - but 19 calls", "32 (16)" and "32
    (64/4)" offer a second count: the answer is for a person (adv54 F3)."""
    if re.search(HEDGE_WORDS, remark, re.IGNORECASE):
        return False
    if _COMPOUND_WORD_RE.search(remark) or any(
            _NUMBER_WORDS[word.lower()] not in (count, 1) for word in _NUMBER_WORD_RE.findall(remark)) \
            or any(_FOREIGN_NUMBER_WORDS[word.lower()] not in (count, 1)
                   for word in _FOREIGN_NUMBER_WORD_RE.findall(remark)):
        return False   # "2 (two, four)", "32 (sixty-four)", "2 (vier)": a second count in words (adv56 F5, adv57 F-A)
    if _TOTAL_REMARK_RE.fullmatch(remark):
        # "32 samples per GPU (64 total)": the whole the count is a part of; "32 (16 total)"
        # says a total smaller than its part, another answer (adv57 F-A).
        return int(re.search(r"\d+", remark).group()) > count
    if _PART_SIZE_REMARK_RE.fullmatch(remark):
        return True   # "4, of 16 rows each": the size of each part
    rest = _NAMED_BY_NUMBER_RE.sub(" ", remark)
    if not re.search(r"\d", rest):
        return True
    terms = _COUNTED_TERM_RE.sub(r"\1", rest)   # "2 forward + 2 backward" -> "2 + 2"
    if terms != rest and _HOW_IT_COMES_RE.fullmatch(terms) and _arithmetic(terms.strip().lstrip("=")) == count:
        return True
    if not _HOW_IT_COMES_RE.fullmatch(rest):
        return False
    value = _arithmetic(rest.strip().lstrip("="))
    return (value is None and re.search(r"[A-Za-z]", rest) is not None) or value == count


# A remark giving another setup's count, as a past result ("with 2 GPUs it was 1").
_OTHER_SETUP_RE = re.compile(r"\s*(?:with|for|on)\s+(\d+)\s*gpus?\b\s*,?\s*(?:it|there)\s+(?:was|were)\s+"
                             r"(?:only\s+)?\d+(?:\s+\w+)?\s*", re.IGNORECASE)


def _another_setups_count(remark: str, gpus: int | None) -> bool:
    """Whether a bracketed remark only tells the count of a GPU count other than the question's."""
    other = _OTHER_SETUP_RE.fullmatch(remark)
    return bool(other) and gpus is not None and int(other.group(1)) != gpus


def whole_number_in(text: str, gpu: bool = False, gpus: int | None = None,
                    arithmetic: bool = False) -> int | None:
    """A count (or, with `gpu`, a GPU's index) as students write it in a field meant for one
    whole number: "3", "3.0", "one", "twice", "32 per GPU", "8 samples", "2 forward + 2
    backward", "4 (N-1)", "64/4 = 16", "4 = 5 - 1", "one transfer, from cuda:0 to cuda:1"; a GPU:
    "cuda:0", "GPU 0 (cuda:0)", "cuda:0 with 1012 MiB". Every number the text gives must be the
    same one (a count's GPUs are a remark; a GPU's number words are not read: "the first one");
    None otherwise ("1 or 2", "4 (or 1)", "GPUs - 1", "one per layer", "thirty-two", "1st GPU"),
    for fractions and for text without a number. `gpus`: the GPU count the question gives as its
    setting (gpu_count_given): written beside the answer ("With 5 GPUs: 4", "4 transfers between
    5 GPUs") it is no answer; another GPU count there ("With 2 GPUs: 1") answers another setup.
    `arithmetic`: a calculation of numbers alone is its value ("5 - 1", "13 x 4 + 12"), where
    the field asks for one count (a sheet's int, a report's count label); in a table's cell it
    may describe a list ("32 x 2" for a split) and is not read. Two numbers joined by an
    operator among other words ("3 x 3 matrix") are never a count."""
    text = str(text)
    if _ALTERNATIVE_RE.search(text):
        return None
    worked = _worked_out(text)
    if worked is not None:   # "64/4 = 16", "BATCH_SIZE / MICRO_BATCHES = 16 rows", "4 = 5 - 1"
        return worked
    calculated = calculation_value(text) if arithmetic else None
    if calculated is not None:
        return calculated
    lead = re.fullmatch(r"\s*(\d+)[A-Za-z \t]*\(([^()]*)\)\s*\.?\s*", text)
    if lead and re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", lead.group(2)):
        return None   # "32 (64)": a second answer in brackets, not a remark on the first (adv54 F3)
    if lead and not (gpus is not None and _GPU_COUNT_RE.match(text.lstrip())):
        if not (remark_on_count(lead.group(2), int(lead.group(1)))
                or _another_setups_count(lead.group(2), gpus)):
            return None   # "2 (4 perhaps)", "4 (else eight)": the brackets offer another answer (adv56 F5)
        return int(lead.group(1))   # "4 (N-1)", "16 samples (64/4)": the number, then a remark on it
    if gpus is not None and _GPU_COUNT_RE.search(text):
        text = _without_gpu_count(text, gpus)
        if text is None:
            return None
        worked = _worked_out(text)   # "With 5 GPUs: 5 - 1 = 4"
        if worked is not None:
            return worked
        said = re.sub(r"^\s*(?:with|for|on)?\s*[:=]?", "", text, flags=re.IGNORECASE)
        calculated = calculation_value(said) if arithmetic else None   # "With 5 GPUs: 5 - 1"
        if calculated is not None:
            return calculated
    if _COMPOUND_WORD_RE.search(text):
        return None
    if not gpu:
        text = _RATE_REMARK_RE.sub("", text)   # "2 processes, one per GPU": how the 2 are laid out
    named = []
    rest = _QUANTITY_REMARK_RE.sub(" ", text) if gpu else text
    rest = _NAMED_INDEX_RE.sub(lambda m: (named.append(int(m.group(1))), " ")[1], rest)
    words = []
    if not gpu:
        rest = _NUMBER_WORD_RE.sub(
            lambda m: (words.append(_NUMBER_WORDS[m.group(1).lower()]), " ")[1], rest)
    digits = []
    for token in _PLAIN_NUMBER_RE.findall(rest):
        number = float(token)
        if not number.is_integer():
            return None
        digits.append(int(number))
    if re.search(r"\d", _PLAIN_NUMBER_RE.sub(" ", rest)):
        return None   # digits inside a word or an expression ("64x2000", "1st"): not a count
    if _JOINED_NUMBERS_RE.search(rest):
        return None   # "3 x 3 matrix", "5 - 1 transfers": a shape, or a calculation among words
    said = digits + words
    formula = re.search(r"\s[-+*/×]\s|\d\s*[-+*/×]|[-+*/×]\s*\d|\b[A-Za-z]\s*[-+*/×]\s*\b[A-Za-z]\b",
                        rest)
    if len(said) == 1 and (formula or (words and re.search(r"\bper\b", rest))):
        return None   # a formula ("GPUs - 1") or a rate ("one per layer"), not the count
    deciding = named + said if gpu else said or named
    return deciding[0] if deciding and len(set(deciding)) == 1 else None


def without_gpu_label(text: str) -> str:
    """An item's value without the GPU that leads it: "cuda:0: 80" -> "80"."""
    return _ITEM_LABEL_RE.sub("", text)


def int_list_in(text: str) -> list[int] | None:
    """Whole numbers listed the ways students list them: "22, 22, 20", "22,22,20", "32/32" (the
    handouts' tables), "[32, 1000]", "torch.Size([64, 1000])", "13 13 13 13 12", "0 + 2",
    "cuda:0 and cuda:2", "[GPU 0, GPU 1]", "GPU 0: 3, GPU 1: 3", "GPU 0 - 22, GPU 1 - 21",
    "3 on GPU 0, 3 on GPU 1", "layers 2 and 3", "2 -> 3", "22 (cuda:0), 21, 21"; one range
    alone is every number in it ("0-3", "from 2 to 3"). None when any item is not a whole number
    or a GPU ("0-2, 3-5", "6 layers, 3 each"), and where another answer is offered ("3, 3 (or
    2, 4)")."""
    if re.search(r"\(\s*[x×*]\s*\d+\s*\)", str(text)):
        return None   # "13 (x4) and 12": a count of items, which a list of them is not
    if _ALTERNATIVE_RE.search(str(text)):
        return None
    for remark in _REMARK_RE.finditer(str(text)):
        said = int(re.search(r"(\d+)$", str(text)[:remark.start()].rstrip()).group(1))
        if not remark_on_count(remark.group().strip()[1:-1], said):
            return None   # "3, 3 (2, 4 alternatively)", "4 (3 forward + 2 backward)": another answer (adv56 F5)
    body = _REMARK_RE.sub(" ", str(text))
    body = _LIST_WRAPPER_RE.sub("", body)
    if _LABEL_RE.search(body):
        body = _LABEL_RE.sub(" ", body)
    elif len(_SPACED_LABEL_RE.findall(body)) >= 2 and \
            len(_SPACED_LABEL_RE.findall(body)) == len(_NAMED_INDEX_RE.findall(body)):
        body = _SPACED_LABEL_RE.sub(" ", body)   # "cuda:0 22, cuda:1 22, cuda:2 20"
    body = _LIST_WORDS_RE.sub(" ", body)
    body = _GPUS_BEFORE_LIST_RE.sub(" ", body)
    body = _NAMED_INDEX_RE.sub(lambda m: m.group(1), body)
    span = _RANGE_RE.match(body)
    if span:
        first, last = int(span.group(1)), int(span.group(2))
        return list(range(first, last + 1)) if first < last else None
    items = [item for item in _ITEM_SPLIT_RE.split(body.strip()) if item]
    if not items or not all(re.fullmatch(r"\d+(?:\.0*)?", item) for item in items):
        return None
    return [int(item.partition(".")[0]) for item in items]   # exact, however many digits


# -- lists that answer one question: its words decide what a few more forms mean --------------
# One count for every GPU the question asks about ("3 each", "3 per GPU", "3 layers on each
# GPU"): nothing else beside it ("6 layers, 3 each" gives a total too, and is not read).
_EACH_RE = re.compile(r"\s*(\d+)\s*(?:layers?\s+)?(?:each(?:\s+gpu)?|apiece|per\s+gpu|"
                      r"(?:on|for|to)\s+(?:each|both|every)(?:\s+gpus?)?)\s*\.?\s*", re.IGNORECASE)
# HW3 Task 1 Q2 asks between which two layers (0-based) the data moves; students say the point
# in forward() by the layer on one side of it ("before layer 3", "after layers[2]").
_BETWEEN_LAYERS_RE = re.compile(r"\bbetween\s+(?:which\s+(?:two\s+)?)?layers\b", re.IGNORECASE)
_INDEXED_LAYER_RE = re.compile(r"\b(?:self\.)?layers\s*\[\s*(\d+)\s*\]", re.IGNORECASE)   # "layers[2]"
_SIDE_RE = re.compile(r"\b(before|after)\s+(?:the\s+)?(?:(?:layer|index)\s*)?#?\s*(\d+)(?!\w|\.\d)",
                      re.IGNORECASE)
_NOT_RE = re.compile(r"\b(?:not|never)\b|n't", re.IGNORECASE)


def gpus_asked_about(question: str) -> int | None:
    """How many GPUs a question asks a value of each of: the GPUs it names ("how many layers
    are assigned to GPU 0 and GPU 1?": 2), or its one GPU count where it asks per GPU ("Layers
    per GPU (DEPTH=6, 2 GPUs)": 2); None otherwise."""
    named = {int(n) for n in re.findall(r"\bgpu\s*(\d+)\b", question, re.IGNORECASE)}
    if len(named) >= 2:
        return len(named)
    counts = {int(n) for n in re.findall(r"(?<![\w.])(\d+)\s*gpus?\b", question, re.IGNORECASE)}
    if re.search(r"\bper\s+gpu\b", question, re.IGNORECASE) and len(counts) == 1:
        return counts.pop()
    return None


# How a student says which way they count the layers: from 1 ("1-based", "counting from 1", an
# ordinal: "the 3rd and 4th layer") or from 0 ("0-based", "indices", Python's "layers[2]"). The
# handout's Q2 asks only "at what exact point"; the sheet's question asks for 0-based indices.
_ONE_BASED_RE = re.compile(r"\b(?:1|one)[-\s]?(?:based|indexed)\b|\bcount(?:ing|ed)?\s+(?:from|starting\s+(?:at|from))\s+"
                           r"(?:1|one)\b|\bstarting\s+(?:at|from)\s+(?:1|one)\b", re.IGNORECASE)
_ZERO_BASED_RE = re.compile(r"\b(?:0|zero)[-\s]?(?:based|indexed)\b|\bcount(?:ing|ed)?\s+(?:from|starting\s+(?:at|from))\s+"
                            r"(?:0|zero)\b|\bstarting\s+(?:at|from)\s+(?:0|zero)\b|\bind(?:ex|ices|exes)\b",
                            re.IGNORECASE)
_ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
                  "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12}
_ORDINAL_RE = re.compile(r"(?<![\w.])(?:(\d+)\s*(?:st|nd|rd|th)|(" + "|".join(_ORDINAL_WORDS) + r"))\b",
                         re.IGNORECASE)


@dataclass(frozen=True)
class LayerPair:
    """The two layers a move is said to happen between, as written (`said`), and the layer the
    answer counts from where it says so (`counted_from`: 1 for ordinals or "1-based", 0 for
    "0-based", "indices" or "layers[2]"; None where it does not say)."""
    said: tuple[int, ...]
    counted_from: int | None

    @property
    def zero_based(self) -> list[int]:
        """The pair as the 0-based indices the check compares, where the answer says how it
        counts; as written where it does not (the caller decides what that means)."""
        return [n - 1 for n in self.said] if self.counted_from == 1 else list(self.said)


def layer_pair_said(text: str) -> LayerPair | None:
    """The two layers a move happens between, with the way the answer counts them: every
    int_list_in form ("2 and 3", "between layer 2 and layer 3"), "layers[2] and layers[3]",
    the point said by its sides ("before layer 3", "after layer 2, before layer 3"), ordinals
    ("3rd and 4th", "third and fourth", "after the 3rd layer": counted from 1) and a stated
    convention ("3 and 4 (1-based)", "2 and 3 (0-based)"). None where the sides disagree
    ("before layer 3 (after layer 1)"), a side is named twice, a number beside them says
    another pair, a "not" turns them, ordinals are mixed with plain numbers, or the answer
    says both conventions. A pair said more than once, each time in its own way ("3rd and 4th
    layer (index 2 -> 3)", "layers 2 and 3 (0-based), i.e. the 3rd and 4th"), is that pair
    where every saying gives the same layers counted from 0 (_said_alike)."""
    text = str(text)
    if len(text) > MAX_VALUE_CHARS:
        return None
    return _one_pair_said(text) or _said_alike(text)


# Where one saying of a pair ends and the next begins, outside brackets: "i.e.", "that is",
# "aka", ";", "=".
_RESTATED_RE = re.compile(r"\s*(?:[;=]|,?\s*\b(?:i\.\s?e\.|that\s+is\b|aka\b),?)\s*", re.IGNORECASE)
_BRACKETED_RE = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")


def _sayings(text: str) -> list[str]:
    """`text` cut where it says its pair again: at _RESTATED_RE outside brackets, then each
    piece that is no pair by itself into its words outside brackets and each bracket's content
    ("3rd and 4th layer (index 2 -> 3)": two sayings). None of it where a bracket is not closed."""
    pieces, depth, start = [], 0, 0
    for at, char in enumerate(text):
        depth += 1 if char in "([" else -1 if char in ")]" else 0
        if depth < 0:
            return []
        found = _RESTATED_RE.match(text, at) if depth == 0 and at >= start else None
        if found:
            pieces.append(text[start:at])
            start = found.end()
    if depth:
        return []
    pieces.append(text[start:])
    sayings = []
    for piece in pieces:
        if _one_pair_said(piece) is not None:
            sayings.append(piece)
        else:
            sayings += [_BRACKETED_RE.sub(" ", piece)] + [a or b for a, b in _BRACKETED_RE.findall(piece)]
    return sayings


def _said_alike(text: str) -> LayerPair | None:
    """The pair of a text that says it more than once, each saying with its own way of
    counting, where all agree once each is counted from 0: an ordinal or "1-based" pair less
    one, an "index" or "0-based" pair as written; a pair that does not say how it counts
    agrees where it is the same layers counted from 0, or the same numbers as a pair counted
    from 1. None where one saying is no pair (a layer alone, words that are not read), where
    two disagree, or where no saying says how it counts and two differ. Words with no layer
    number (the GPUs: "cuda:0 -> cuda:1") are no saying."""
    every = _sayings(text)
    sayings = [s for s in every if re.search(r"\d|" + _ORDINAL_RE.pattern, _NAMED_INDEX_RE.sub(" ", s), re.IGNORECASE)]
    if len(sayings) < 2:
        # One saying beside the GPUs alone ("3rd and 4th layer (GPU 0 -> GPU 1)"): that one.
        return _one_pair_said(sayings[0]) if sayings and len(every) > 1 else None
    said = [_one_pair_said(s) for s in sayings]
    if any(pair is None or len(pair.said) != 2 for pair in said):
        return None
    counted = [pair for pair in said if pair.counted_from is not None]
    if not counted:
        return said[0] if len({pair.said for pair in said}) == 1 else None
    zero = {tuple(pair.zero_based) for pair in counted}
    if len(zero) != 1:
        return None
    indices = zero.pop()
    from_one = {pair.said for pair in counted if pair.counted_from == 1}
    if any(pair.counted_from is None and pair.said != indices and pair.said not in from_one for pair in said):
        return None
    if all(pair.counted_from == 1 or pair.counted_from is None and pair.said != indices for pair in said):
        return LayerPair(tuple(n + 1 for n in indices), 1)   # said only as counted from 1
    return LayerPair(indices, 0)


def _one_pair_said(text: str) -> LayerPair | None:
    one, zero = _ONE_BASED_RE.search(text), _ZERO_BASED_RE.search(text) or _INDEXED_LAYER_RE.search(text)
    if one and zero:
        return None
    counted_from = 1 if one else 0 if zero else None
    if counted_from is not None:   # the convention said is no part of the pair: "3 and 4 (1-based)"
        text = _ZERO_BASED_RE.sub(" ", _ONE_BASED_RE.sub(" ", text))
        text = re.sub(r"\(\s*\)|\[\s*\]|^[\s:;,.]+|[\s:;,.]+$", " ", text)
    ordinals = [int(found.group(1)) if found.group(1) else _ORDINAL_WORDS[found.group(2).lower()]
                for found in _ORDINAL_RE.finditer(text)]
    if ordinals:
        plain = _ORDINAL_RE.sub(" ", _NAMED_INDEX_RE.sub(" ", text))
        if re.search(r"\d", _REMARK_RE.sub(" ", plain)) or counted_from == 0 and min(ordinals) > 0 \
                or counted_from == 1 and min(ordinals) == 0:
            return None   # "layer 3 and the 4th", "the 3rd (0-based)": not one way of counting
        # "the 0th layer" counts from 0; any other ordinal from 1.
        counted_from = 0 if min(ordinals) == 0 else 1
        text = _ORDINAL_RE.sub(lambda found: found.group(1) or str(_ORDINAL_WORDS[found.group(2).lower()]), text)
        text = re.sub(r"\bthe\b", " ", text, flags=re.IGNORECASE)
    pair = _pair_in(text)
    if not pair or (counted_from == 1 and min(pair) < 1):
        return None   # "the 0th and 1st (1-based)": no layer 0 when counting from 1
    return LayerPair(tuple(pair), counted_from)


def _pair_in(text: str) -> list[int] | None:
    text = _INDEXED_LAYER_RE.sub(r"layer \1", str(text))
    sides = _SIDE_RE.findall(text)
    if not sides:
        return int_list_in(text)
    if _ALTERNATIVE_RE.search(text) or _NOT_RE.search(text):
        return None
    after = {int(n) for side, n in sides if side.lower() == "after"}
    before = {int(n) for side, n in sides if side.lower() == "before"}
    if len(after) > 1 or len(before) > 1:
        return None
    # Each side names one layer at most here; one side alone gives its neighbour, as the
    # layers run in order, one after another.
    first = min(after) if after else min(before) - 1
    second = min(before) if before else first + 1
    if first < 0 or second != first + 1:
        return None   # the data moves at one point, between two neighbouring layers
    pair = [first, second]
    # What else the text says must be the same pair ("layers 2 and 3, before layer 3"); the
    # GPUs named beside it ("on cuda:1") are a remark.
    rest = _NAMED_INDEX_RE.sub(" ", _SIDE_RE.sub(" ", text))
    rest = re.sub(r"\(\s*\)|\[\s*\]", " ", rest)
    if re.search(r"\d", rest) and int_list_in(rest) != pair:
        return None
    return pair


def layer_pair_in(text: str) -> list[int] | None:
    """The two layers (0-based) a move happens between (layer_pair_said's forms): counted from
    1 where the answer says so ("3rd and 4th" is [2, 3]), else read as written, the 0-based
    indices the sheet's question asks for ("before layer 4" is [3, 4])."""
    said = layer_pair_said(text)
    return said.zero_based if said is not None else None


def between_layers(question: str) -> bool:
    """Whether a question asks between which two layers something happens (HW3 Task 1 Q2)."""
    return bool(_BETWEEN_LAYERS_RE.search(question))


def int_list_answering(text: str, question: str = "") -> list[int] | None:
    """A list answering `question` (the template's words, or a report's label): a move between
    two layers by layer_pair_in; where the question asks about each of its GPUs, "3 each" is 3
    for each; else int_list_in's forms."""
    if _BETWEEN_LAYERS_RE.search(question):
        return layer_pair_in(text)
    gpus = gpus_asked_about(question)
    each = _EACH_RE.fullmatch(str(text)) if gpus else None
    if each:
        return [int(each.group(1))] * gpus
    return int_list_in(text)


def int_lists_in(text: str) -> list[list[int]] | None:
    """Lists of whole numbers written as one text: "[32, 1000], [32, 1000]",
    "[[32, 1000], [32, 1000]]", "torch.Size([32, 1000]) and torch.Size([32, 1000])", and in
    parentheses where no bracket is written: "(32, 1000) and (32, 1000)"."""
    group = r"\[([^\[\]]*)\]" if "[" in str(text) else r"\(([^()]*)\)"
    groups = re.findall(group, str(text))
    # Nothing but the lists: "[32, 1000] twice" or a remark holding another shape is not read.
    around = re.sub(group + r"|torch\.size|\band\b|[\s,;()\[\]]", "", str(text), flags=re.I)
    lists = [int_list_in(group) for group in groups]
    return lists if lists and all(lists) and not around else None


# A shape with its sizes joined by "x", "×", "*" or "by" ("64x1000", "64 × 1000", "32 by 1000"),
# optionally wrapped ("(64 x 1000)", "[64x1000]", "torch.Size(64x1000)"). Read only for a
# question about a shape: elsewhere "2x32" may be two of 32.
_SHAPE_RE = re.compile(r"(?:torch\.size\s*)?[\[(]*\s*(\d+(?:\s*(?:[x×*]|\bby\b)\s*\d+)+)\s*[\])]*",
                       re.IGNORECASE)
_SHAPE_SIZES_RE = re.compile(r"\s*(?:[x×*]|\bby\b)\s*", re.IGNORECASE)
# What may stand between the shapes of a list: ", ", "; ", "and", "then".
_BETWEEN_SHAPES_RE = re.compile(r"^(?:\s*(?:[,;]|\band\b|\bthen\b)\s*|\s+)$", re.IGNORECASE)


def shape_in(text: str) -> list[int] | None:
    """One shape written with "x" between its sizes: "64x1000", "(64 × 1000)", "64 by 1000";
    None for anything else (the list forms are int_list_in's)."""
    shapes = shapes_in(text)
    return shapes[0] if shapes is not None and len(shapes) == 1 else None


def shapes_in(text: str) -> list[list[int]] | None:
    """Shapes written with "x" between their sizes, one after another: "32x1000, 32x1000",
    "32 x 1000 and 32 x 1000"; None unless the text holds nothing else."""
    text = str(text).strip()
    shapes, position = [], 0
    for found in _SHAPE_RE.finditer(text):
        if not _BETWEEN_SHAPES_RE.match(text[position:found.start()]) and \
                (shapes or text[position:found.start()].strip()):
            return None
        shapes.append([int(size) for size in _SHAPE_SIZES_RE.split(found.group(1))])
        position = found.end()
    return shapes if shapes and not text[position:].strip(" .") else None


# A shape with words around it, as the handout's code prints it or a student says it ("Output
# shape: torch.Size([64, 1000])", "64 x 1000 (batch x features)", "The output shape is (64,
# 1000)."): a remark in brackets without a number is a remark; any other number, a second shape,
# a "not" or another option beside it, and it is not one shape.
_WORDS_REMARK_RE = re.compile(r"\s*\((?![^()]*\d)[^()]*\)")
# Sizes only inside the brackets: "(cuda:0)" or "(GPU 0 -> GPU 1)" is no shape.
_SIZES = r"\s*\d+(?:\s*,\s*\d+)*\s*,?\s*"
_ANY_SHAPE_RE = re.compile(r"torch\.size\s*\(\s*\[" + _SIZES + r"\]\s*\)|\[" + _SIZES + r"\]|\(" + _SIZES + r"\)|"
                           r"\d+(?:\s*(?:[x×*]|\bby\b)\s*\d+)+", re.IGNORECASE)
_OTHERWISE_RE = re.compile(r"\b(?:not|no|never|none|or|but|maybe|perhaps|probably|possibly|unless|except|"
                           r"instead|without|than)\b|n['’]t\b|\?", re.IGNORECASE)
# The label Part 2's loop prints before each chunk's shape ("Processing chunk 0 with shape"), or a
# student's "chunk 0:": numbered in order from 0 or 1, one per shape, the numbers no sizes.
_CHUNK_LABEL_RE = re.compile(r"\b(?:processing\s+)?chunk\s*#?\s*(\d+)\s*(?:(?:with|has|of)\s+shape\b|"
                             r"shape\b)?\s*[:=]?\s*", re.IGNORECASE)
# Words that may stand around one shape said for every chunk ("32x1000 each", "each chunk:
# (32, 1000)", "both (32, 1000)"): one word saying which chunks, the rest only naming them.
_EACH_WORDS = {"each": None, "every": None, "apiece": None, "per": None, "both": 2}
# "each GPU gets [32, 1000]": the handout's Part 2 says each chunk runs on its own GPU in real
# data parallelism, so a student may name the GPU for its chunk.
_CHUNK_WORDS = {"chunk", "chunks", "one", "is", "are", "has", "have", "shape", "shapes", "of", "the",
                "with", "for", "in", "torch", "size", "gpu", "gpus", "gets", "get", "receives", "receive",
                "processes", "process"}
# How many chunks, said with them ("2 chunks", "two chunks", "2 GPUs", "2 micro-batches"):
# cardinal numbers only ("twice" and "none" are no count of chunks).
_CARDINALS = {word: n for word, n in _NUMBER_WORDS.items() if word not in ("none", "once", "twice")}
_COUNTED_RE = re.compile(r"(?<![\w.])(\d+|" + "|".join(_CARDINALS) + r")\s+(?:chunks|pieces|parts|splits|gpus)\b",
                         re.IGNORECASE)
# What ties a count of chunks to the one shape each has ("2 chunks of ...", "... with shape
# ...", "... each"); without one ("2 chunks: 64x1000") the shape may be the batch's before it
# was cut.
_EACH_LINKS = {"each", "every", "apiece", "per", "of", "with", "gets", "get", "receives", "receive"}


def _shape_token(token: str) -> list[int] | None:
    return shape_in(token) if re.match(r"\d", token) else int_list_in(token)


def _one_shape_and_words(text: str) -> tuple[list[int], str, str] | None:
    """(the one shape `text` holds, the words before it, the words after it), the remarks
    without numbers left out; None where it holds another number, none or two shapes, or a
    "not" or another option."""
    text = _WORDS_REMARK_RE.sub(" ", str(text))
    if _OTHERWISE_RE.search(text) or _ALTERNATIVE_RE.search(text):
        return None
    found = list(_ANY_SHAPE_RE.finditer(text))
    if len(found) != 1:
        return None
    shape = _shape_token(found[0].group(0))
    before, after = text[:found[0].start()], text[found[0].end():]
    return (shape, before, after) if shape and not re.search(r"\d", before + after) else None


def shape_said(text: str) -> list[int] | None:
    """One shape said with a label before it ("Output shape: torch.Size([64, 1000])", "The
    output shape is (64, 1000).") or a remark without numbers after it ("64 x 1000 (batch x
    features)"); None for anything else (see _one_shape_and_words; words after the shape are a
    remark only in brackets)."""
    found = _one_shape_and_words(text)
    if found is None:
        return None
    shape, before, after = found
    if set(re.findall(r"[a-z]+", (before + " " + after).lower())) & set(_EACH_WORDS):
        return None   # "both (32, 1000)": the shape of more than one thing
    return shape if re.fullmatch(r"[\s.;]*", after) else None


def chunk_shapes_said(text: str) -> list[list[int]] | None:
    """The chunks' shapes as Part 2's loop prints them, one line (or "; ") each: "Processing
    chunk 0 with shape torch.Size([32, 1000])", or labelled "chunk 0: [32, 1000], chunk 1: [32,
    1000]"; None unless every shape has its label, numbered in order from 0 or 1, and nothing
    else is said."""
    text = _WORDS_REMARK_RE.sub(" ", str(text))
    labels = [int(found.group(1)) for found in _CHUNK_LABEL_RE.finditer(text)]
    if not labels or _OTHERWISE_RE.search(text) or labels not in (list(range(len(labels))),
                                                                  list(range(1, len(labels) + 1))):
        return None
    body = _CHUNK_LABEL_RE.sub(" ", text).replace("\n", "; ")
    shapes = int_lists_in(body) or shapes_in(body)
    return shapes if shapes and len(shapes) == len(labels) else None


def each_shape_said(text: str) -> tuple[list[int], int | None] | None:
    """(the shape, how many chunks) for one shape said of every chunk: "32x1000 each",
    "torch.Size([32, 1000]) each", "each chunk: (32, 1000)" (how many: None, the question's), "both
    (32, 1000)" (2); None where another number, word or shape is beside it ("32x1000 twice",
    "2 chunks: 32x1000")."""
    found = _one_shape_and_words(text)
    if found is None:
        return None
    shape, before, after = found
    said = re.findall(r"[a-z]+", (before + " " + after).lower())
    which = [word for word in said if word in _EACH_WORDS]
    if len(which) != 1 or any(word not in _EACH_WORDS and word not in _CHUNK_WORDS for word in said):
        return None
    return shape, _EACH_WORDS[which[0]]


def _count_of(word: str) -> int:
    return int(word) if word.isdigit() else _CARDINALS[word.lower()]


# A count of chunks times one bracketed shape ("2 x torch.Size([32, 1000])", "2 × [32, 1000]"):
# the shape in brackets, so "2x 32x1000" (a shape of three sizes, or two of two) is not read so.
_TIMES_SHAPE_RE = re.compile(r"\s*(?P<count>\d+)\s*[x×*]\s*(?P<shape>torch\.Size\s*\(\s*\[[^()\[\]]*\]\s*\)"
                             r"|\[[^()\[\]]*\]|\([^()\[\]]*\))\s*\.?\s*")


def times_shape_said(text: str) -> tuple[list[int], int] | None:
    """(the shape, how many chunks) for "2 x torch.Size([32, 1000])" (adv51 F8); None for any
    other text and for a shape of one size ("2 x [32]": a chunk's rows)."""
    found = _TIMES_SHAPE_RE.fullmatch(str(text)) if len(str(text)) <= MAX_VALUE_CHARS else None
    shape = int_list_in(found["shape"]) if found else None
    if shape is None or len(shape) < 2 or int(found["count"]) < 1:
        return None
    return shape, int(found["count"])


def counted_shape_said(text: str) -> tuple[list[int], int] | None:
    """(the shape, how many chunks) for one shape said of a count of chunks: "2 chunks of
    32x1000 each", "two chunks of shape (32, 1000)", "2 chunks, each torch.Size([32, 1000])",
    "each of the 2 chunks: (32, 1000)", "2 GPUs get [32, 1000] each"; None for no count, two
    counts, no word tying the count to the shape ("2 chunks: 32x1000"), a shape of one size
    ("2 chunks of 32 each": a chunk's rows, not its shape), or anything each_shape_said
    refuses (another number or shape, a "not", a doubt)."""
    text = str(text)
    if len(text) > MAX_VALUE_CHARS:
        return None
    counts = _COUNTED_RE.findall(text)
    if len(counts) != 1:
        return None
    found = _one_shape_and_words(_COUNTED_RE.sub(" chunks ", text))
    if found is None or len(found[0]) < 2:
        return None
    shape, before, after = found
    said = re.findall(r"[a-z]+", (before + " " + after).lower())
    if "both" in said or not set(said) & _EACH_LINKS \
            or any(word not in _EACH_WORDS and word not in _CHUNK_WORDS for word in said):
        return None
    return shape, _count_of(counts[0])


def rows_of_counted_chunks(text: str) -> bool:
    """Whether `text` gives a count of chunks and one size, not a shape ("4 chunks of 8 each"),
    so the student is told to write each chunk's whole shape."""
    text = str(text)
    return len(text) <= MAX_VALUE_CHARS and _COUNTED_RE.search(text) is not None \
        and _ANY_SHAPE_RE.search(text) is None and len(re.findall(r"\d+", _COUNTED_RE.sub(" ", text))) == 1


# One size said of every GPU of a row (Practical 5's split: "32 each", "32 per GPU", "each GPU
# gets 32", "2 chunks of 32 each", the handout's own "2 chunks of 32"), with the count said
# where it is.
_SIZE_EACH_RE = re.compile(
    r"\s*(?:(?P<count>\d+|" + "|".join(_CARDINALS) + r")\s+(?:chunks|gpus|pieces|parts)\s*,?\s*(?:of|with)\s+)?"
    r"(?P<size>\d+)\s*(?:samples?|rows?)?\s*(?P<each>each(?:\s+gpu)?|apiece|per\s+gpu|"
    r"(?:on|for|to)\s+(?:each|every)(?:\s+gpu)?)?\s*\.?\s*|"
    r"\s*(?:each|every)\s+gpu\s+(?:gets|receives|processes)\s+(?P<size_after>\d+)\s*(?:samples?|rows?)?\s*\.?\s*",
    re.IGNORECASE)


# "both 32", "32 on both GPUs": one size for each of two.
_SIZE_BOTH_RE = re.compile(r"\s*(?:both(?:\s+gpus)?(?:\s+get)?\s+(?P<first>\d+)|(?P<last>\d+)\s*(?:samples?|rows?)?"
                           r"\s+(?:on|for|to)\s+both(?:\s+gpus)?)\s*\.?\s*", re.IGNORECASE)


def size_each_said(text: str) -> tuple[int, int | None] | None:
    """(the size, how many) for one size said of each GPU or chunk (_SIZE_EACH_RE, "both
    32"); how many None where it is not said. None for anything else, a bare number included."""
    if len(str(text)) > MAX_VALUE_CHARS:
        return None
    both = _SIZE_BOTH_RE.fullmatch(str(text))
    if both is not None:
        return int(both["first"] or both["last"]), 2
    found = _SIZE_EACH_RE.fullmatch(str(text))
    if found is None or not (found["each"] or found["count"] or found["size_after"]):
        return None
    size = int(found["size"] or found["size_after"])
    return size, _count_of(found["count"]) if found["count"] else None


def chunks_asked_about(question: str) -> int | None:
    """How many chunks a question gives ("What shape do the 2 chunks have?": 2), else None."""
    counts = {int(n) for n in re.findall(r"(?<![\w.])(\d+)\s+chunks\b", question, re.IGNORECASE)}
    counts |= {_NUMBER_WORDS[w.lower()] for w in re.findall(r"\b(" + "|".join(_NUMBER_WORDS) + r")\s+chunks\b",
                                                         question, re.IGNORECASE)}
    return counts.pop() if len(counts) == 1 else None


# What a student who could not measure a value honestly writes in its cell (virtual GPUs have no
# nvidia-smi): an answer, never a number the reader failed to read.
NOT_AVAILABLE_RE = re.compile(r"^\s*(?:n/?a|-+|–|none|not available|unavailable|not measured|"
                              r"no (?:gpu|nvidia-smi)\b.*|virtual.*)\s*$", re.IGNORECASE)


def not_available(value) -> bool:
    return isinstance(value, str) and bool(NOT_AVAILABLE_RE.match(value))


# A table column's unit, by the suffix the templates give its name (step_time_s, memory_mib).
COLUMN_UNITS = {"_s": "s", "_ms": "ms", "_percent": "percent", "_mib": "mib"}
# The units a student may rename such a column to (step_time_ms written step_time_s,
# memory_per_gpu_mib written memory_per_gpu_gb): each kind's, as its cells may name them.
_TIME_NAMES = set(_TIME_UNITS_TO_MS) - {"µs", "μs"}   # a column's name is ASCII
RENAMED_UNITS = {"s": _TIME_NAMES, "ms": _TIME_NAMES, "mib": set(_MEMORY_UNITS_TO_MIB)}
# A value said to be approximate, as "~" says it ("about 56 ms", "≈ 126 ms", "approx. 7.5 ms",
# "around 7.5"): the value. A bound ("at least 56") is no one value; a range of times is read by
# time_range_in (below), never here.
APPROXIMATELY = (r"(?:[~≈∼]|(?:about|around|approximately|approx\.?|roughly|circa|ca\.)"
                 r"(?=\s|\d))")
# Thousands grouped as students group them: "1,234.5" and "1,234,567" (commas, a decimal point),
# "1.234,5" (points, a decimal comma), "1 234", "1 234,5" (a space, a thin space U+2009, a
# narrow or plain no-break space: ISO 80000's grouping, after which "," or "." is the decimal
# mark). Each is one number only where every group after the first has three digits.
# A plain space groups only after a first group of one or two digits ("1 234", "81 920"): after
# three ("100 100") it may as well part two values, which no one value's cell should hold (a
# TA's audit: P5's memory "100 100" had been read as 100100 MiB). A thin or no-break space is
# typeset grouping whatever the first group.
_GROUP_SPACES = " \u00a0\u2009\u202f"
_THIN_SPACES = "\u00a0\u2009\u202f"
_SPACE_GROUPED = r"(?:\d{1,3}(?:[" + _THIN_SPACES + r"]\d{3})+|\d{1,2}(?: \d{3})+)"
_GROUPED = (r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d{1,3}(?:\.\d{3})+(?:,\d+)?(?![\d.])|"
            + _SPACE_GROUPED + r"(?:[.,]\d+)?(?![\d.,])")
_QUANTITY_RE = re.compile(r"^\s*(?:" + APPROXIMATELY + r"\s*)?(" + _GROUPED + r"|\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)"
                          r"\s*([a-zµμ%]*)\s*\.?\s*$", re.IGNORECASE)
_SPACE_GROUPS_RE = re.compile(r"(?<![\d.,])" + _SPACE_GROUPED + r"(?![\d]| \d)")
_THIN_GROUPS_RE = re.compile(r"(?<![\d.,])\d{1,3}(?:[\u00a0\u2009\u202f]\d{3})+(?!\d)")


def joined_groups(text: str, spaces: bool = True) -> str:
    """`text` with its numbers grouped by spaces written whole: "1 234 ms" -> "1234 ms". With
    `spaces` False only thin and no-break spaces group (a plain space may list values: "80 80"
    is two GPUs' memory)."""
    pattern = _SPACE_GROUPS_RE if spaces else _THIN_GROUPS_RE
    return pattern.sub(lambda found: re.sub(f"[{_GROUP_SPACES}]", "", found.group(0)), text)


def _grouped_number(token: str) -> str | None:
    """A token of _GROUPED as a number with "." its one decimal mark: "1,234.5" -> "1234.5",
    "1.234,5" -> "1234.5", "1 234,5" -> "1234.5"; None for a token with one mark and no space
    ("1,234", "1.234"), which the table's own numbers decide (decimal_mark)."""
    plain = re.sub(f"[{_GROUP_SPACES}]", "", token)
    if plain != token:
        return plain.replace(",", ".")   # after grouping spaces, a mark is the decimal one
    if len(re.findall(r"[.,]", token)) < 2:
        return None
    shown = shows_decimal_mark(token)
    if shown == ",":
        return token.replace(".", "").replace(",", ".")
    return token.replace(",", "") if shown == "." else None


def column_unit(column: str) -> str | None:
    return next((unit for suffix, unit in COLUMN_UNITS.items() if column.endswith(suffix)), None)


def column_in_another_unit(name: str, columns) -> tuple[str, str] | None:
    """(the table's column, the unit the name gives) for a column named like one of `columns`
    in another unit of the same kind ("step_time_s" for step_time_ms, "memory_per_gpu_gb" for
    memory_per_gpu_mib); None for any other name."""
    stem, _, unit = name.rpartition("_")
    for column in columns:
        kind = column_unit(column)
        if kind in RENAMED_UNITS and unit in RENAMED_UNITS[kind] \
                and column.rpartition("_")[0] == stem and column != name:
            return column, unit
    return None


def quantity_in(text: str, unit: str, mark: str | None = None,
                spaces_group: bool = True) -> float | int | None:
    """One measured value in the column's unit ("s", "ms", "percent", "mib") as students copy
    it: "0.0075", "0,0075", "7.5 ms" (in seconds: 0.0075), "0.0075 s", "38%", "1012MiB",
    "1,012 MiB", "1.2 GiB", thousands grouped ("1,234.5 ms", "1.234,5 ms", "1 234 ms"). None
    when it is not one number, or names a unit of another kind. `mark` is the decimal mark the
    rest of its table shows (decimal_mark): with ".", "1,826 ms" is 1826 ms; with ",", "1.826
    ms" is 1826 ms too. `spaces_group` False where a plain space may separate values (a cell
    of one value per GPU: "100 100"); a percentage is never grouped (it is at most 100)."""
    match = _QUANTITY_RE.match(str(text))
    if match is None:
        return None
    token, written = match.group(1), match.group(2).lower()
    if re.search(f"[{_GROUP_SPACES}]", token) and (unit == "percent" or (" " in token and not spaces_group)):
        return None
    grouped = _grouped_number(token)
    if grouped is not None:
        token = grouped
    elif mark == "," and "." in token and shows_decimal_mark(token) is None:
        token = token.replace(".", "")   # "1.826" in a table of decimal commas groups thousands
    if "," in token:
        whole, _, frac = token.partition(",")
        # MiB are whole and often grouped ("1,012 MiB"); a time, a percentage or GiB ("0,512
        # GiB") has decimals, unless the table's own numbers show a decimal point.
        if shows_decimal_mark(token) is None and mark in (".", ","):
            grouped = mark == "."
        else:
            grouped = unit == "mib" and len(frac) == 3 and written in ("", "mib", "mb")
        token = whole + frac if grouped else f"{whole}.{frac}"
    value = float(token)
    if unit in ("s", "ms"):
        if written:
            factor = time_unit_factor_ms(written)
            if factor is None or _TIME_UNIT_RE.fullmatch(written) is None:
                return None
            value = value * factor / (1000.0 if unit == "s" else 1.0)
    elif unit == "percent":
        if written not in ("", "%"):
            return None
    elif unit == "mib":
        if written:
            factor = memory_unit_factor_mib(written)
            if factor is None or _MEMORY_UNIT_RE.fullmatch(written) is None:
                return None
            value *= factor
    value = round(value, 12)
    return int(value) if value.is_integer() and "." not in token and unit != "s" else value


# -- a measured time said as a range ------------------------------------------------------------
# "about 12-14 ms", "12–14 ms", "between 12 and 14", "from 12 ms to 14 ms": a student's step time
# that varied from run to run. The checks compare step times by how they move (a rise or a fall
# beyond hw3_facts.CLEAR_CHANGE, 10%) and by plausibility, never one value against a tolerance,
# so a range must become one value or none. A TA grading by hand takes the middle of a range as
# the measurement where the range is narrow, every value in it within that 10% of its middle:
# there the checks could not tell one value of it from another, so the middle is the student's
# answer, said to the instructor. A wider range ("10-20 ms") is no one measurement: a person
# reads it. A range is never a count: whole_number_in does not read one.
RANGE_TOLERANCE = 0.10
_RANGE_NUMBER = r"\d+(?:[.,]\d+)?"
# A percentage said as a range ("35-40%", "35 to 40 %"): nvidia-smi's utilization, which moves
# every second under `watch -n 1 nvidia-smi`. The one check of it accepts any reading from 0 to
# 100 % (practical_answers.usage_table_problems), so every value of a range within 0-100 is an
# answer it accepts, however wide: the middle stands for it (adv44 F2: "35-40%" was refused).
_MEASURED_RANGE_RE = re.compile(
    r"(?P<lead>(?:" + APPROXIMATELY + r"\s*)?(?:(?P<between>between)\s+|from\s+)?)"
    r"(?P<low>" + _RANGE_NUMBER + r")\s*(?P<low_unit>[a-zµμ]+|%)?\s*(?P<to>[-–—]|\bto\b|\band\b)\s*"
    r"(?P<high>" + _RANGE_NUMBER + r")(?![\d.,])\s*(?P<high_unit>[a-zµμ]+\b|%)?(?!\s*(?:[-–—]|to\b)\s*\d)",
    re.IGNORECASE)
_RANGE_UNITS = {"s": _TIME_UNIT_RE, "ms": _TIME_UNIT_RE, "percent": re.compile("%")}


@dataclass(frozen=True)
class MeasuredRange:
    low: float
    high: float
    text: str   # the range as written
    unit_written: bool = False   # a unit beside it (else the column's, or the header's)

    @property
    def middle(self) -> float:
        return round((self.low + self.high) / 2, 12)

    @property
    def narrow(self) -> bool:
        """Every value of it within RANGE_TOLERANCE of its middle."""
        return 0 < self.low < self.high and self.high - self.low <= RANGE_TOLERANCE * (self.high + self.low)

    def within(self, lowest: float, highest: float) -> bool:
        """Written low to high, both ends from `lowest` to `highest`."""
        return lowest <= self.low <= self.high <= highest


def time_range_in(text: str, unit: str, mark: str | None = None, whole: bool = True) -> MeasuredRange | None:
    """The range of times `text` says, in `unit` ("s" or "ms"): see measured_range_in."""
    return measured_range_in(text, unit, mark, whole) if unit in ("s", "ms") else None


def measured_range_in(text: str, unit: str, mark: str | None = None,
                      whole: bool = True) -> MeasuredRange | None:
    """The range `text` says, in `unit` ("s", "ms" or "percent"): both ends with their units
    (one unit written once is both's), "and" only after "between". `whole`: the text is the
    range and nothing else (a sheet's cell); else the range starts at its first number (a
    report's cell, "~12-14 ms (2 runs)"). Ends are as written: "40-35%" is low 40, high 35."""
    text = str(text)
    if len(text) > MAX_VALUE_CHARS or unit not in _RANGE_UNITS:
        return None
    if whole:
        found = _MEASURED_RANGE_RE.fullmatch(text.strip().rstrip(".").strip())
    else:   # the range whose low end is the first number, with the words before it ("between")
        first = _NUMBER_RE.search(text)
        found = next((m for m in _MEASURED_RANGE_RE.finditer(text) if m.start("low") == first.start()),
                     None) if first else None
    if found is None or (found["to"].lower() == "and" and not found["between"]):
        return None
    low_unit, high_unit = found["low_unit"], found["high_unit"]
    for written in (low_unit, high_unit):
        if written and _RANGE_UNITS[unit].fullmatch(written.lower()) is None:
            return None
    low = quantity_in(f"{found['low']} {low_unit or high_unit or ''}", unit, mark)
    high = quantity_in(f"{found['high']} {high_unit or low_unit or ''}", unit, mark)
    if low is None or high is None:
        return None
    return MeasuredRange(float(low), float(high), found.group(0).strip(), bool(low_unit or high_unit))
