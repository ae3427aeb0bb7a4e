"""The counts a HW3 script printed for Task 5: its `.to()` calls and its GPU-to-GPU transfers
in one forward pass, read from its output.

The template prints `to() calls: C, real transfers: T`; students also write the line in their
own words ("x.to(layer_device) was triggered 20 times, moving data 1 time", "real transfers: 1
(out of 20 .to() calls)"). The handout prescribes no format, so a number is read by the word
it stands beside where the line says which is which, and only otherwise by its place (calls
first, as the template prints them): a TA's audit saw "real transfers: 1 (out of 20 .to()
calls)" read as 1 call and 20 transfers, and the report quote a line the script never printed.
"""
from __future__ import annotations

import re
from typing import NamedTuple

# The template's line.
TEMPLATE_LINE = re.compile(r"to\s*\(\s*\)\s*calls?\s*[:=]\s*(\d+)\D{0,40}?transfers?\s*[:=]\s*(\d+)",
                           re.IGNORECASE)
_CALL_WORDS = r"\b(?:calls?|called|triggered)\b|\bto\s*\("
_MOVE_WORDS = r"\b(?:transfers?|mov\w*|cop(?:y|ies|ied))\b"
# A line in the student's own words: it speaks of calls and of moves.
COUNTS_LINE = re.compile(rf"(?=.*(?:{_CALL_WORDS}))(?=.*(?:{_MOVE_WORDS}))", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_CALLS, _MOVES = re.compile(_CALL_WORDS, re.IGNORECASE), re.compile(_MOVE_WORDS, re.IGNORECASE)
_CLAUSE_BREAK, _AFTER_BREAK = re.compile(r"[,;|]"), re.compile(r"[,;:|]")
_SETTINGS = r"gpus?|layers?|depth|dim|cuda|rank|steps?|epochs?|batch(?:_size)?"
_SETTING_BEFORE = re.compile(rf"\b(?:{_SETTINGS})\s*[=:]?\s*$", re.IGNORECASE)
_SETTING_AFTER = re.compile(rf"\s*(?:{_SETTINGS})\b", re.IGNORECASE)
_QUOTED_CHARS = 200


class PrintedCounts(NamedTuple):
    calls: int
    transfers: int
    line: str      # the line as printed (at most 200 characters), for the student's report

    @property
    def pair(self) -> tuple[int, int]:
        return self.calls, self.transfers

    def quoted(self) -> str:
        """What the script printed and how it was read, for a message."""
        calls = f"{self.calls} .to() call" + ("" if self.calls == 1 else "s")
        moves = f"{self.transfers} transfer" + ("" if self.transfers == 1 else "s")
        return f"it printed '{self.line}' (read as {calls} and {moves})"


def printed_counts(output: str) -> list[PrintedCounts]:
    """Every (calls, transfers) the output states: the template's lines where there are any,
    else each line in the student's own words, by its labels where they tell the two numbers
    apart, else each pair of numbers in turn."""
    lines = (output or "").splitlines()
    template = [PrintedCounts(int(a), int(b), _shown(line)) for line in lines
                for a, b in TEMPLATE_LINE.findall(line)]
    if template:
        return template
    found = []
    for line in lines:
        if COUNTS_LINE.match(line):
            found += _own_words(line)
    return found


def _own_words(line: str) -> list[PrintedCounts]:
    numbers = list(_NUMBER.finditer(line))
    labels = _labels(line, numbers)
    calls = [int(n.group()) for n, label in zip(numbers, labels) if label == "calls"]
    moves = [int(n.group()) for n, label in zip(numbers, labels) if label == "moves"]
    unlabelled = [int(n.group()) for n, label in zip(numbers, labels) if label is None]
    # One count labelled and one number left that is no setting: that number is the other
    # count ("Transfers per forward pass (2 GPUs): 1, to() calls: 20").
    if len(unlabelled) == 1 and sorted((len(calls), len(moves))) == [0, 1]:
        calls, moves = (calls or unlabelled), (moves or unlabelled)
    if len(calls) == 1 and len(moves) == 1:
        return [PrintedCounts(calls[0], moves[0], _shown(line))]
    values = [int(n.group()) for n in numbers]
    return [PrintedCounts(a, b, _shown(line)) for a, b in zip(values, values[1:])]


def _labels(line: str, numbers: list[re.Match]) -> list[str | None]:
    """What each number is: "calls" or "moves" by the word just before it ("transfers: 1",
    "triggered 20 times"), else just after it ("20 .to() calls"); "setting" where a setting's
    word stands beside it ("(2 GPUs)", "DEPTH=20"); None where nothing says."""
    labels: list[str | None] = []
    unit_after = False   # the previous number's word after it is its unit ("5 GPUs: 20")
    for i, number in enumerate(numbers):
        before = line[numbers[i - 1].end() if i else 0:number.start()]
        after = line[number.end():numbers[i + 1].start() if i + 1 < len(numbers) else len(line)]
        # Only the words of the number's own clause: "1, to() calls: 20" labels 20, not 1; a
        # label ends with its colon, so a colon closes the clause after a number, not before.
        before, after = _CLAUSE_BREAK.split(before)[-1], _AFTER_BREAK.split(after)[0]
        setting_before = _SETTING_BEFORE.search(before) and not unit_after
        unit_after = bool(_SETTING_AFTER.match(after))
        if setting_before or unit_after:
            labels.append("setting")
            continue
        labels.append(next((label for label in map(_count_word, (before, after)) if label), None))
    return labels


def _count_word(text: str) -> str | None:
    calls, moves = bool(_CALLS.search(text)), bool(_MOVES.search(text))
    return None if calls == moves else "calls" if calls else "moves"


def _shown(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _QUOTED_CHARS else line[:_QUOTED_CHARS - 3] + "..."


def statements(printed: list[PrintedCounts], meant: set[tuple[int, int]]) -> list[PrintedCounts]:
    """What the output states, one pair per line (of a line read several ways, the reading in
    `meant` where there is one, else its first), leaving out counters not yet counted (0 and 0)
    and running totals (a pair a whole multiple of one stated before: the counts after every
    step of a loop). A script that counts states one pair for each configuration it runs; a
    red team's script printed every pair up to DEPTH, one of which had to be right."""
    by_line: dict[str, list[PrintedCounts]] = {}
    for counts in printed:
        by_line.setdefault(counts.line, []).append(counts)
    stated: list[PrintedCounts] = []
    for readings in by_line.values():
        said = next((c for c in readings if c.pair in meant), readings[0])
        if said.pair != (0, 0) and not any(_multiple(said.pair, s.pair) for s in stated):
            stated.append(said)
    return stated


def _multiple(pair: tuple[int, int], base: tuple[int, int]) -> bool:
    """Whether `pair` is k times `base` for a whole k of at least 1."""
    factors = {a // b for a, b in zip(pair, base) if b} | ({0} if any(
        a and not b for a, b in zip(pair, base)) else set())
    return len(factors) == 1 and (k := factors.pop()) >= 1 and \
        all(a == k * b for a, b in zip(pair, base))
