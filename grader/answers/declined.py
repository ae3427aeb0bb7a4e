"""Answers that say the task was not done: "Not done", "N/A", "-", "Skipped", "I did not do
this task (no time)".

    says_not_done(text) -> bool

Such an answer is an empty one: 0, and the student told what they wrote, never held for a
person as "found but could not read" (a TA's audit 30, D4: a report's "Not done" under Tasks 4
and 5 held 4.5 points and told the student its answers might be in a structure of its own).

Only the words of not doing, with at most a short reason after them ("Not done (I ran out of
time before the deadline)."): "none", "no" and "0" are answers ("how many transfers: none"), and
a sentence that starts alike but goes on about the task ("Not done in parallel: the GPUs take
turns", "Skipped layers ...", "N/A, only 2 GPUs") is read as written.
"""

from __future__ import annotations

import re
import unicodedata

_NOT_DONE = re.compile(
    r"""^[\W_]*(?:
        not\s+(?:done|attempted|completed|finished|answered|solved|implemented)(?:\s+yet)?
      | (?:i\s+|we\s+)?(?:did\s*n[o']?t|didnt|have\s*n[o']?t|havent|could\s*n[o']?t|couldnt)\s+
        (?:do|finish|complete|attempt|solve|get\s+to|manage)
        (?:\s+(?:it|this|that|them|the\s+task|this\s+task|this\s+part|the\s+rest|task\s*\d))?
      | skipped | n\s*/\s*a | not\s+applicable | [-\u2013\u2014]+
    )(?=\s*(?:$|[.!:;,(\-\u2013\u2014])|\s+(?:because|since|as|due|for|i|we|no)\b)""",
    re.IGNORECASE | re.VERBOSE,
)
# What a reason after the words of not doing never speaks of: the task's own subject.
_SUBJECT = re.compile(r"\d|gpu|layer|transfer|memory|device|forward|depth|faster|slower|speed|cop(?:y|ies)|\.to\b",
                      re.IGNORECASE)
_MOST_WORDS = 25


def says_not_done(text: str | None) -> bool:
    """Whether `text`, an answer as written, says the task was not done and nothing more than
    why (a short reason that does not speak of the task's subject)."""
    if not isinstance(text, str):
        return False
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").strip()
    found = _NOT_DONE.match(text)
    if not found:
        return False
    reason = text[found.end():]
    return len(text.split()) <= _MOST_WORDS and not _SUBJECT.search(reason)
