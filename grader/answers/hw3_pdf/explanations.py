"""Written answers: the text under "Task N explanation" (numbered or not, as a heading, inline
after it, or in the answer cell of a Question | Answer table), up to the next heading.

    read_explanations(layout) -> {task: (text, heading line)}

What ends an explanation is judged against the explanation's own text, not the document's
most common font size: a small-font appendix (a log, code) must not make every body line
look like a heading.
"""

from __future__ import annotations

import re

from . import contract
from .layout import _DASHES, Layout, Line, clean

_PLACEHOLDER = re.compile(r"^\W*(?:todo|tbd|tba|your (?:answer|explanation|text)\b.*|write .* here|\.\.\.|…)?\W*$", re.I)
_NUMBERED_OR_PLAIN_SECTION = re.compile(r"^\W*(?:\d+(?:\.\d+)*\.?\s+)?(?:task|part|question|appendix)\s*\d*\s*(?:[:.)\-]|$)")


def is_short_title(text: str) -> bool:
    """Headings and table headers are short and are not sentences; a wrapped paragraph line
    that happens to start with "Task 3" or "DEPTH" is neither."""
    return len(text.split()) <= 12 and not text.rstrip().endswith((".", ",", ";"))


def starts_something_else(line: Line, text_size: float | None, text_bold: bool) -> bool:
    text = line.text
    if line.ruled is not None:
        return True
    if text_size and line.size > text_size * 1.12 and is_short_title(text):
        return True  # a heading, by its size
    if contract.EXPLANATION_HEADING.match(text):
        return True
    if contract.SECTION_START.match(text) and is_short_title(text) and (line.bold or _NUMBERED_OR_PLAIN_SECTION.match(text)):
        return True
    if line.bold and not text_bold and is_short_title(text) and len(text.split()) <= 8:
        return True
    # A line that opens with a label, answered or not ("Faster with 5 GPUs than with 2 (yes/no):"
    # with its answer under it, or "...": the template's placeholder left).
    if any(re.match(r"^[\W_]*" + a.pattern, text) for a in contract.LABELLED_ANSWERS):
        return True
    if len(line.cells) >= 2 and is_short_title(text) and any(
            re.search(t.key.header, text) and any(re.search(v.header, text) for v in t.values) for t in contract.TABLES):
        return True
    return False


def following_text(layout: Layout, start: int, first: str = "") -> str:
    """The paragraph(s) from line `start` on, up to whatever starts the next part."""
    parts = [first] if first.strip() else []
    text_size, text_bold = None, False
    for line in layout.lines[start:]:
        if line.furniture or re.fullmatch(r"\W*\d+\W*", line.text):
            continue  # page numbers, running headers and footers, contents
        size = text_size or layout.body_size
        if starts_something_else(line, size, text_bold):
            break
        if text_size is None:
            text_size, text_bold = line.size, line.bold
        parts.append(clean(" ".join(c.raw for c in line.cells)))
    text = "\n".join(parts)
    return re.sub(r"([a-z])-\n([a-z])", r"\1\2", text).strip()  # undo end-of-line hyphenation


def read_explanations(layout: Layout) -> dict[int, tuple[str, Line]]:
    found: dict[int, tuple[str, Line]] = {}
    for line in layout.body():
        heading = contract.EXPLANATION_HEADING.match(line.text)
        if not heading:
            continue
        task = int(heading.group("a") or heading.group("b"))
        if task in found:
            continue
        if len(line.cells) >= 2 and contract.EXPLANATION_HEADING.fullmatch(line.cells[0].text):
            # A Question | Answer table: the answer is the rest of the row ...
            text = clean(" ".join(c.raw for c in line.cells[1:]))
            if line.ruled is None:  # ... and, unruled, the lines under its answer cell
                text = following_text(layout, line.index + 1, text)
            found[task] = (contract.without_prompt(task, text), line)
            continue
        # Text may follow the heading on its own line ("Task 1 explanation: because ...").
        raw = clean(" ".join(c.raw for c in line.cells)).translate(_DASHES)
        in_raw = contract.EXPLANATION_HEADING.match(raw.lower())
        inline = raw[in_raw.end():] if in_raw else ""
        found[task] = (contract.without_prompt(task, following_text(layout, line.index + 1, inline)), line)
    return found


def placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER.match(text))
