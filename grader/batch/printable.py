"""Text that came from an upload (file, folder and zip entry names, and messages quoting
them) as the console, grades.csv and the gradebook show it: its control characters escaped.

A zip entry named `x\\x1b]52;c;...\\x07` had set the instructor's clipboard through the console
(OSC 52), and a name holding a newline had printed a console line of its own ("[9/9] graded
alice ..."). Each control character (C0, DEL, C1, the Unicode line and paragraph separators,
which `str.splitlines` breaks at, and the bidirectional overrides, which reorder what a
terminal shows) becomes a visible escape: `\\x1b`, `\\n`, `\\u202e`.
"""
from __future__ import annotations

import re

__all__ = ["printable", "middle_shortened"]

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """`text` with every control character escaped (`\\x1b`, `\\n`); other text as it is."""
    return _CONTROLS.sub(_escape, str(text))


def middle_shortened(text: str, most: int) -> str:
    """`text` in at most `most` characters, its middle cut, never its end: a rejection ends
    with what to do, and Moodle's comment and the console's summary had cut it off
    ("...holding data the course", adv45)."""
    if len(text) <= most:
        return text
    advice = text.rsplit("; ", 1)[-1]
    tail = advice if len(advice) <= most * 2 // 3 else text[-(most * 2 // 3):]
    return text[:max(most - len(tail) - 3, 0)].rstrip() + " … " + tail
