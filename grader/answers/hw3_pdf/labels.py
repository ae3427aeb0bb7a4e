"""Labelled answers ("Layers per GPU (DEPTH=6, 2 GPUs): 3, 3") in prose or in Question |
Answer tables, a label wrapped inside a narrow cell included.

    read_labels(layout) -> {field: LabelReading}

The text is read twice: line by line (prose, and ruled tables whose cells already hold
their whole wrapped text), then, for what is still missing, with unruled table rows put back
together (a label cell that wraps over three lines beside its answer on the first).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from . import contract
from .layout import Layout, Line, clean, normalise
from .numbers import parse_int_list


@dataclass
class LabelReading:
    value: object = None
    line: Line | None = None
    problems: tuple = ()
    found_label: bool = False


_YES_NO = re.compile(r"^[\s|:=\->]*(yes|no)\b[\s,.;:!\-]*(.*)", re.S)


def _stream(entries: list[tuple[str, Line]]) -> tuple[str, list[tuple[int, Line]]]:
    text, starts = "", []
    for entry, line in entries:
        starts.append((len(text), line))
        text += entry + "\n"
    return text, starts


def _line_at(starts, offset: int) -> Line:
    found = starts[0][1]
    for start, line in starts:
        if start > offset:
            break
        found = line
    return found


def _view_lines(lines: list[Line]) -> list[tuple[str, Line]]:
    return [(" | ".join(c.text for c in line.cells), line) for line in lines]


def _view_rows(lines: list[Line]) -> list[tuple[str, Line]]:
    """Unruled rows put back together: lines under the first cell of a row of two or more
    cells, and left of its second cell, continue that first cell."""
    # The answer column starts where the last cells of several nearby lines start: in a
    # narrow justified cell the gaps between words can be wider than the gap between columns.
    starts = Counter(round(line.cells[-1].x0 / 2) for line in lines if len(line.cells) >= 2 and line.ruled is None)
    out: list[list] = []
    row = None
    for line in lines:
        column_x = next((2 * x for x in (round(c.x0 / 2) for c in reversed(line.cells[1:]))
                         if starts[x] + starts[x - 1] + starts[x + 1] >= 2), None)
        if column_x is not None and line.ruled is None:
            first = [c.text for c in line.cells if c.x0 < column_x - 2]
            rest = [c.text for c in line.cells if c.x0 >= column_x - 2]
            row = [first, rest, line, line, column_x]
            out.append(row)
            continue
        if (row is not None and line.ruled is None and line.page == row[3].page
                and abs(line.x0 - row[2].cells[0].x0) < 3 and line.x1 < row[4] - 2
                and line.top - row[3].bottom < 0.8 * max(line.size, 1)):
            row[0].append(line.text)
            row[3] = line
            continue
        row = None
        out.append([[line.text], [], line, line, 0])
    return [(" ".join(first) + (" | " + " | ".join(rest) if rest else ""), start) for first, rest, start, _, _ in out]


def _match(answer: contract.LabelledAnswer, text: str, starts) -> LabelReading:
    label = re.compile(r"(?m)(?P<start>^[\W_]*)?" + answer.pattern + r"(?:[ \t]*[:=|>\-])*[ \t]*")
    matches = sorted(label.finditer(text), key=lambda m: m.group("start") is None)  # line starts first
    values = []
    for match in matches:
        rest = text[match.end():]
        if answer.kind == "yes_no":
            found = _YES_NO.match(rest)
            value = {"value": found.group(1), "explanation": found.group(2).split("\n")[0].strip()} if found else None
        else:
            value = parse_int_list(rest)
        if value:
            values.append((value, match))
    if not values:
        problems = (f"found '{answer.template_text}' but no "
                    + ("yes or no" if answer.kind == "yes_no" else "number") + " after it",) if matches else ()
        return LabelReading(problems=problems, found_label=bool(matches))
    value, match = values[0]
    problems = []
    if answer.kind == "int":
        if len(value) > 1:
            problems.append(f"'{answer.template_text}' expects one number, found {value}; took {value[0]}")
        value = value[0]
    distinct = {str(v) for v, _ in values}
    if len(distinct) > 1 and all(m.group("start") is not None for _, m in values):
        problems.append(f"'{answer.template_text}' is answered more than once with different values: {sorted(distinct)}")
    return LabelReading(value, _line_at(starts, match.start()), tuple(problems), True)


def _yes_no_explanation(answer, reading: LabelReading, layout: Layout) -> None:
    """The rest of a yes/no answer's paragraph is its explanation, in the student's own case."""
    from .explanations import following_text
    raw = clean(reading.line.raw.replace("\t", " "))
    found = re.search(answer.pattern + r"(?:[ \t]*[:=|>\-])*[ \t]*(?:yes|no)\b[\s,.;:!\-]*(.*)", raw, re.I)
    first = found.group(1).strip() if found else reading.value["explanation"]
    rest = following_text(layout, reading.line.index + 1)
    reading.value["explanation"] = (first + " " + rest).strip()


def read_labels(layout: Layout) -> dict[str, LabelReading]:
    body = layout.body()
    views = [_stream(_view_lines(body)), _stream(_view_rows(body))]
    found = {}
    for answer in contract.LABELLED_ANSWERS:
        reading = LabelReading()
        for text, starts in views:
            attempt = _match(answer, normalise_keep_lines(text), starts)
            if attempt.value is not None:
                reading = attempt
                break
            if attempt.found_label and not reading.found_label:
                reading = attempt
        if answer.kind == "yes_no" and reading.value is not None:
            _yes_no_explanation(answer, reading, layout)
        found[answer.field] = reading
    return found


def normalise_keep_lines(text: str) -> str:
    return "\n".join(normalise(line) if line else "" for line in text.split("\n"))
