"""A cell of Practical 6's comparison table (DataParallel against DDP) as the comparison's word.

    words_for("data split", "By hand (DistributedSampler)")  -> "manual"
    words_for("gpu usage", "Mostly GPU 0")                   -> "imbalanced"
    words_for("gpu usage", "Same on every GPU")               -> "balanced"
    words_for("gpu usage", "GPU 0 first, then the others")    -> None (a person reads it)

The handout's words are 1 / Multiple, Automatic / Manual, Imbalanced / Balanced; students write
them in their own words, as a TA reads them: "by hand", "we split it", "DistributedSampler" are
manual; "by DataParallel", "scatter", "done for you" automatic; "mostly GPU 0", "higher on GPU
0", "skewed" imbalanced; "same on every GPU", "equal", "uniform" balanced. A "not" (or "no",
"never", "isn't", "non-", "without") before a word, with at most one word between, turns it:
"not balanced" is imbalanced, "not manual" automatic, "GPU 0 is not the bottleneck" balanced.
Nothing is guessed: a cell saying both words, or with a "not" that turns none of them, is read
as None, so its check waits for a person instead of marking it wrong.
"""
from __future__ import annotations

import re

from .numbers import whole_number_in

# Each aspect's words, as the feedback names them.
CHOICES = {"processes": "1 or multiple", "data split": "automatic or manual",
           "gpu usage": "balanced or imbalanced"}
_GPU0 = r"(?:gpu\s*(?:0|zero)|cuda\s*:?\s*0|(?:the\s+)?first\s+gpu|rank\s*0)"
_EVERY_GPU = r"(?:every|all|each|both|the\s+two)(?:\s+(?:the\s+)?(?:gpus?|ranks?|devices?|cards?))?"
# Each aspect's words, as regexes over the lower-cased cell.
_WORDS = {
    "data split": {
        "manual": (r"\bmanual(?:ly)?\b", r"\bby\s+hand\b", r"\bhand-?(?:made|written|split)\b",
                   r"\b(?:we|i|you)\s+(?:\w+\s+)?split\b", r"\b(?:myself|ourselves|yourself)\b",
                   r"\buser(?:-defined)?\b", r"\bexplicit(?:ly)?\b", r"\bdistributed\s*sampler\b",
                   r"\bsampler\b"),
        "automatic": (r"\bauto(?:matic(?:ally)?)?\b", r"\bby\s+(?:nn\.)?data\s*parallel\b",
                      r"\bscatter(?:s|ed|ing)?\b", r"\bdone\s+for\s+you\b", r"\bimplicit(?:ly)?\b"),
    },
    "gpu usage": {
        "imbalanced": (r"\bimbalanced?\b", r"\bunbalanced\b", r"\buneven(?:ly)?\b", r"\bunequal(?:ly)?\b",
                       r"\bskewed\b", r"\blopsided\b", r"\bbottleneck\b", r"\bbusier\b", r"\bheavier\b",
                       r"\b(?:more|most|over)\s*-?\s*loaded\b",
                       r"\b(?:mostly|mainly|primarily|largely|only)\s+(?:on\s+)?" + _GPU0,
                       r"\b(?:higher|more|heavier|larger|bigger|most)\s+(?:\w+\s+)?on\s+" + _GPU0,
                       _GPU0 + r"\s+(?:does|has|uses|holds|gets|is|carries|takes|needs|stores|"
                       r"does\s+the)\s+(?:much\s+|far\s+|a\s+lot\s+)?(?:more|most)\b"),
        "balanced": (r"\bbalanced\b", r"\beven(?:ly)?\b", r"\bequal(?:ly)?\b(?!\s+to\b)",
                     r"\bsimilar(?:ly)?\b(?!\s+to\b)", r"\buniform(?:ly)?\b", r"\bsymmetric(?:al)?\b",
                     r"\bsame\s+(?:\w+\s+)?(?:on|for|across|in|at|per)\s+" + _EVERY_GPU,
                     r"\b" + _EVERY_GPU + r"\s+(?:\w+\s+){0,2}(?:the\s+)?same\b(?!\s+as\b)"),
    },
}
_OPPOSITE = {"manual": "automatic", "automatic": "manual",
             "balanced": "imbalanced", "imbalanced": "balanced"}
# A word that turns what follows it, and what counts as "before" a word: right before it, or
# with one word between ("not as balanced", "not split by hand", "not the bottleneck").
_NEGATION = re.compile(r"\bnon-?(?!e\b)\s*|\b(?:not|no|never|without)\b|n['’]t\b")
_TURNS = re.compile(r"(?:\bnon-?\s*|(?:\b(?:not|no|never|without)|n['’]t)\s+(?:[\w.:-]+\s+)?)$")


def words_for(aspect: str, cell) -> str | None:
    """A table cell as the word the comparison uses ("1"/"multiple", "automatic"/"manual",
    "balanced"/"imbalanced"); None when it says none of them, or both. The cell's head (before
    a bracket, comma or dash) decides where it says one: "Balanced (unlike DP, where GPU 0 is
    the bottleneck)", "1 (one process, multiple threads)", "manual (not automatic)" (a probe
    found each read as its remark's word)."""
    text = str(cell).strip().lower() if cell is not None else ""
    head = re.split(r"\s*(?:[(,;:/]|\s[-–—]\s)", text, maxsplit=1)[0]
    for part in (head, text):
        word = aspect_word(aspect, part)
        if word is not None:
            return word
    return None


def aspect_word(aspect: str, text: str) -> str | None:
    """The one word of `aspect` that `text` (lower case) says; None for none or both."""
    if not text:
        return None
    if aspect == "processes":
        return _process_count(text)
    said, turned_at = set(), set()
    for word, patterns in _WORDS[aspect].items():
        for pattern in patterns:
            for found in re.finditer(pattern, text):
                turn = _TURNS.search(text[:found.start()])
                if turn:
                    turned_at.add(turn.start())
                said.add(_OPPOSITE[word] if turn else word)
    # A "not" that turns none of the words ("the user does not split", "no GPU is idle") may
    # turn the cell's meaning: a person reads it.
    unexplained = [n for n in _NEGATION.finditer(text) if n.start() not in turned_at]
    if len(said) != 1 or unexplained:
        return None
    return said.pop()


def _process_count(text: str) -> str | None:
    count = whole_number_in(text)
    if count == 1 or re.search(r"\b(?:single|one)\s+process\b|^(?:single|one)$", text):
        return "1"
    # "Mutiple" is the handout's own table's spelling.
    if text in ("n", "n processes") or any(
            w in text for w in ("multi", "muti", "many", "several", "one per", "per gpu")):
        return "multiple"
    return "multiple" if count is not None and count > 1 else None
