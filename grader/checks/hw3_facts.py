"""HW3's factual answers: the yes/no verdicts a measurement supports, and reading a yes/no.

A verdict is the *set* of answers the measurement supports: one answer where it is clear,
both where the numbers are too close to call (a student measuring on other hardware may see
it either way). The measurements are whatever the probe gives (a wall clock today, the
virtual GPUs' simulated clock later): the rules here do not depend on the clock.
"""
from __future__ import annotations

# "Faster" means clearly faster: more than 1.5x (beyond noise, and beyond anything naive
# model parallelism could give); a gain under 10% is "not faster" read honestly; in between,
# either answer is accepted.
CLEARLY_FASTER = 1.5
BARELY_FASTER = 1.1
# A change of a quantity (a step time, a peak memory) counts as a rise or a fall beyond 10%.
CLEAR_CHANGE = 1.1

YES_WORDS = {"yes", "y", "true", "jah"}  # Estonian too: the course is in Tartu
NO_WORDS = {"no", "n", "false", "ei"}


def faster(before_ms: float, after_ms: float) -> frozenset[bool]:
    """Answers to "is the second configuration faster than the first?" that these medians
    support."""
    if after_ms * CLEARLY_FASTER < before_ms:
        return frozenset({True})
    if after_ms * BARELY_FASTER >= before_ms:
        return frozenset({False})
    return frozenset({True, False})


def change(before: float, after: float, margin: float = CLEAR_CHANGE) -> str | None:
    """"up" or "down" when `after` is clearly above or below `before`; None when too close."""
    if after > before * margin:
        return "up"
    if after * margin < before:
        return "down"
    return None


def direction(before: float, after: float) -> str:
    """How a student's reported numbers move, read literally."""
    return "up" if after > before else "down" if after < before else "same"


def yes_no(value) -> bool | None:
    """A yes/no answer as a bool (the sheet gives bools; the PDF reader gives words, or
    {"value": "no", "explanation": "..."} with the text after them); None when it is neither."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".!").lower()
        if word in YES_WORDS:
            return True
        if word in NO_WORDS:
            return False
    return None


def said(value: bool) -> str:
    return "yes" if value else "no"


def accepted(verdict: frozenset[bool]) -> str:
    return " or ".join(said(v) for v in sorted(verdict, reverse=True))
