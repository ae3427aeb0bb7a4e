"""A yes/no answer as students write it, in a PDF report or an answer sheet.

    read_yes_no("NO, because only one GPU works at a time")
        -> YesNo(value="no", explanation="because only one GPU works at a time")

The first word decides and the rest is the explanation: "No", "no.", "Yes - every GPU holds
four layers", "**No**"; "Yeah", "Yep" are yes, and a no written without the word ("Not
faster", "Not proportional at all", "Nope", "Never") is no, the whole text its explanation.
Nothing else is guessed: a hedged "not" ("Not necessarily", "Not always", "Not sure"), "Partly",
"It depends" are `unclear`, so a person reads them; the template's "yes/no" left as it is (or
"yes or no", "yes and no") and a placeholder ("...", "TODO") are `unanswered`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Marks a student puts before the word: a colon or dash after the label, a table's "|",
# Markdown emphasis left in the PDF, an opening quote or bracket.
_LEAD = r"[\s|:=>\-?*_\"'(\[]*"
_FIRST = re.compile(_LEAD + r"(?P<word>yes|no|yeah|yep|yup|nope)\b(?P<rest>.*)", re.I | re.S)
_WORDS = {"yes": "yes", "yeah": "yes", "yep": "yes", "yup": "yes", "no": "no", "nope": "no"}
# A no without the word: "Not faster", "Never". Followed by a hedge it says neither.
_NOT = re.compile(_LEAD + r"(?:not|never)\b(?P<rest>.*)", re.I | re.S)
_HEDGE = re.compile(r"^\W*(?:only|sure|necessarily|always|quite|exactly|entirely|completely|"
                    r"fully|much|really sure|yet|certain|clear)\b", re.I)
# Both words together: the template's "yes/no" kept, or a student sitting on the fence.
_BOTH = re.compile(r"^\s*(?:/|\\|\||&|\bor\b|\band\b)\s*(?:yes|no)\b", re.I)
_PLACEHOLDER = re.compile(r"^\W*(?:todo|tbd|n/?a|answer|your answer|\.\.\.|…|_+)?\W*$", re.I)
# What separates the word from its explanation: "No, because", "Yes - every", "No. The".
_AFTER_WORD = re.compile(r"^[\s,.;:!\-*_\"')\]]*")


@dataclass(frozen=True)
class YesNo:
    value: str | None = None  # "yes" | "no", None when not read
    explanation: str = ""     # the text after the word, as the student wrote it
    unanswered: bool = False  # nothing, a placeholder, or the template's "yes/no" left
    unclear: bool = False     # text that does not start with a clear yes or no

    @property
    def answered(self) -> bool:
        return self.value is not None


def read_yes_no(text: str) -> YesNo:
    text = (text or "").strip()
    if _PLACEHOLDER.match(text):
        return YesNo(unanswered=True)
    first = _FIRST.match(text)
    if first is None:
        negative = _NOT.match(text)
        if negative and not _HEDGE.match(negative.group("rest")):
            return YesNo("no", text.strip(" *_\"'"))
        return YesNo(unclear=True)
    rest = first.group("rest")
    if _BOTH.match(rest):
        # "yes/no" alone is the template's placeholder; "yes and no, it depends" is a fence.
        if _PLACEHOLDER.match(_BOTH.sub("", rest, count=1)):
            return YesNo(unanswered=True)
        return YesNo(unclear=True)
    return YesNo(_WORDS[first.group("word").lower()], _AFTER_WORD.sub("", rest, count=1).strip())


def starts_with_yes_no(text: str) -> bool:
    """Whether `text` opens with a clear yes or no (an answer on the line under its label)."""
    return read_yes_no(text).answered
